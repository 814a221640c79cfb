//===- Compile.h - a module of norm ops to kernels + manifest ---*- C++ -*-===//
//
// Part of mlir-norm. The one compile that norm-compile, the C API
// (normCompile) and the Python package run: a module whose one function
// holds norm ops (tensor or buffer form) to the bytes of its kernels and the
// launch manifest the runtime reads (docs/Embedding.md).
//
//===----------------------------------------------------------------------===//

#ifndef NORM_PIPELINES_COMPILE_H
#define NORM_PIPELINES_COMPILE_H

#include "norm/Pipelines/Manifest.h"

#include <optional>
#include <string>

namespace mlir::norm {

/// What a launchable compile produces.
struct CompiledFunction {
  std::string name;  // the host function (the manifest's "function")
  std::string image; // PTX text, cubin or fatbin bytes (options.format)
  llvm::json::Object manifest;
};

/// Rewrites each function of `module` that takes or returns tensors into
/// the launchable buffer form: tensor arguments become memrefs (identity
/// layout), and each returned tensor becomes an output argument appended
/// after the inputs, which the norm op writing it now writes in place
/// (one-shot bufferization across function boundaries, then each returned
/// allocation replaced by the argument). A function returning anything
/// else (an input, a view, a value no norm op writes) is an error at its
/// location. Functions without tensors are left as they are.
LogicalResult outputsToArguments(ModuleOp module);

/// Compiles `module` for a launch: outputsToArguments, the arguments named
/// by the norm op's operands (manifestArgumentsFromOps) unless `arguments`
/// names them, the norm-to-gpu-binary pipeline with `options`, then the
/// checks that exactly one function launches kernels and takes only
/// memrefs. Every error is a diagnostic in the module's context.
FailureOr<CompiledFunction>
compileLaunchable(ModuleOp module, const NormToGPUBinaryOptions &options,
                  ArrayRef<ManifestArgument> arguments = {},
                  const std::optional<ManifestSpec> &spec = {});

} // namespace mlir::norm

#endif // NORM_PIPELINES_COMPILE_H
