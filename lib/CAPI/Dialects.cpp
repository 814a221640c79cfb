//===- Dialects.cpp - C API of mlir-norm ----------------------------------===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#include "norm-c/Dialects.h"
#include "norm/Dialect/Norm/IR/NormDialect.h"
#include "norm/InitNorm.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Registration.h"

MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(Norm, norm, mlir::norm::NormDialect)

void mlirNormRegisterDialects(MlirDialectRegistry registry) {
  mlir::norm::registerNormDialects(*unwrap(registry));
}

void mlirNormRegisterPasses(void) { mlir::norm::registerNormPasses(); }
