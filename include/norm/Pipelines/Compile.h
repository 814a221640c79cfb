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

#include "norm/Dialect/Norm/Utils/NormFunction.h"
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

/// One op described as norm-compile's spec flags are (the C API takes the
/// same names as "key=value" words: `normCompileSpec`).
struct NormSpecText {
  std::string op;           // layer_norm_grad, rms_norm_grad, layer_norm, rms_norm
  std::string n;            // the hidden size, decimal
  std::string dtype = "bf16";
  std::string weightDtype;  // empty: dtype
  std::string eps;          // forward only; empty: the op's default
  std::string name = "norm_kernel";
  bool noWeight = false, noBias = false, dresidual = false;
  bool zeroCentered = false, xhat = false;
  /// Forward: the fused residual add (`residual` in, `h` = x + residual out).
  bool residual = false;
};

/// Reads "op=rms_norm_grad n=4096 dtype=bf16 no-bias ..." (the flag names
/// of norm-compile without dashes; a flag alone or as flag=1/0) into
/// `text`. On failure `error` names the word.
LogicalResult parseNormSpecText(StringRef words, NormSpecText &text,
                                std::string &error);

/// The NormOpSpec of `text` under the pipeline's strategy and groups, with
/// strided layouts (any view is launchable). On failure `error` says which
/// field is wrong; `flagPrefix` is put before field names in it ("--" for
/// norm-compile's flags).
FailureOr<NormOpSpec> makeNormOpSpec(MLIRContext *ctx, const NormSpecText &text,
                                     const NormToGPUBinaryOptions &options,
                                     std::string &error,
                                     StringRef flagPrefix = "");

/// Builds the function of `text` (makeNormOpSpec, then buildNormFunction)
/// at the end of `module`; `args` gets its arguments named by role and
/// `spec` what the manifest records of it. On failure `error` says why
/// (empty if the builder emitted a diagnostic instead).
FailureOr<func::FuncOp>
buildSpecFunction(ModuleOp module, const NormSpecText &text,
                  const NormToGPUBinaryOptions &options,
                  SmallVectorImpl<ManifestArgument> &args, ManifestSpec &spec,
                  std::string &error, StringRef flagPrefix = "");

/// buildSpecFunction, then compileLaunchable with the manifest's "spec"
/// filled in.
FailureOr<CompiledFunction> compileSpec(ModuleOp module, const NormSpecText &text,
                                        const NormToGPUBinaryOptions &options,
                                        std::string &error);

} // namespace mlir::norm

#endif // NORM_PIPELINES_COMPILE_H
