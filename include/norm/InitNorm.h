//===- InitNorm.h - register what mlir-norm uses ----------------*- C++ -*-===//
//
// Part of mlir-norm.
//
// norm-opt, the plugin and embedders register exactly the dialects, external
// models and passes our pipelines use, not all of MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_INITNORM_H
#define NORM_INITNORM_H

namespace mlir {
class DialectRegistry;

namespace norm {

/// The norm dialect alone (what the dialect plugin adds to mlir-opt).
void registerNormDialect(DialectRegistry &registry);

/// The norm dialect, the upstream dialects our pipelines produce, and the
/// interfaces (LLVM translation, NVVM target, convert-to-llvm, bufferization)
/// they rely on.
void registerNormDialects(DialectRegistry &registry);

/// Our passes and pipelines.
void registerNormPasses();

/// Our passes and pipelines, plus the upstream passes that appear in them or
/// that tests of their output use (canonicalize, cse, the LLVM conversions).
void registerNormAndUpstreamPasses();

} // namespace norm
} // namespace mlir

#endif // NORM_INITNORM_H
