/*===- norm-c/Dialects.h - C API of mlir-norm ---------------------*- C -*-===*\
|*                                                                            *|
|* Part of mlir-norm. The C API for embedders that do not link C++: the       *|
|* dialect handle and registration of our passes and pipelines.              *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef NORM_C_DIALECTS_H
#define NORM_C_DIALECTS_H

#include "mlir-c/IR.h"

#ifdef __cplusplus
extern "C" {
#endif

MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(Norm, norm);

/// Registers the norm dialect, the upstream dialects its pipelines produce
/// and the interfaces they need, into `registry`.
MLIR_CAPI_EXPORTED void mlirNormRegisterDialects(MlirDialectRegistry registry);

/// Registers the norm passes and pipelines with the global registry, so
/// `mlirParsePassPipeline` can name them.
MLIR_CAPI_EXPORTED void mlirNormRegisterPasses(void);

#ifdef __cplusplus
}
#endif

#endif // NORM_C_DIALECTS_H
