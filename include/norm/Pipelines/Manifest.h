//===- Manifest.h - the launch manifest of a compiled function --*- C++ -*-===//
//
// Part of mlir-norm. The JSON manifest libnormrt launches compiled kernels
// from (its fields: norm/Support/ManifestSchema.def; docs/Runtime.md),
// built from a host function after norm-to-gpu-binary: its arguments, its
// workspaces (host allocations), and each gpu.launch_func with its
// operands, named by the `norm.kernels` records of norm-map-to-gpu.
// norm-compile writes it; so can any compiler that runs the pipeline
// itself (examples/embed).
//
//===----------------------------------------------------------------------===//

#ifndef NORM_PIPELINES_MANIFEST_H
#define NORM_PIPELINES_MANIFEST_H

#include "norm/Dialect/Norm/Utils/NormFunction.h"
#include "norm/Pipelines/Pipelines.h"
#include "norm/Support/ManifestSchema.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/JSON.h"

#include <optional>
#include <string>

namespace mlir::norm {

/// A function argument as the runtime addresses it.
struct ManifestArgument {
  std::string name; // dy, x, ..., or any name the caller gives
  std::string role; // "input" / "output"; empty: not recorded
  /// What it is to the op (the manifest's "kind"): Other for an argument
  /// the op does not take directly.
  manifest::ArgumentKind kind = manifest::ArgumentKind::Other;
};

/// The argument that plays `role` in a norm op: named by the op's keyword
/// for it, with its kind and role.
ManifestArgument manifestArgumentOf(NormArgRole role);

/// The spec a function was built from (norm-compile's spec mode).
struct ManifestSpec {
  std::string op; // layer_norm_grad, rms_norm_grad, layer_norm, rms_norm
  int64_t n = 0;
  std::string dtype; // f32, f16, bf16
  std::string weightDtype;
};

/// For each function of `module` with exactly one norm op: its arguments
/// in order, those the op takes directly named and given roles by it (dy,
/// x, ..., dx), any other (used by the author's own code) named argN with
/// no role. Call it before the pipeline, which lowers the op away.
llvm::StringMap<SmallVector<ManifestArgument>>
manifestArgumentsFromOps(ModuleOp module);

/// The gpu.binary holding the kernels `func` launches (after the pipeline:
/// one per function), or null.
gpu::BinaryOp kernelBinaryOf(ModuleOp module, func::FuncOp func);

/// The manifest of `func`, compiled with `options`: the arguments its
/// kernels take (in the function's order; `arguments` names them by their
/// position in the function, those past it are argN with no role), the
/// allocations its kernels take as workspaces, and the launches. Every
/// argument must be a memref (the caller checks: compileLaunchable refuses
/// other functions).
llvm::json::Object buildManifest(func::FuncOp func,
                                 const NormToGPUBinaryOptions &options,
                                 ArrayRef<ManifestArgument> arguments,
                                 const std::optional<ManifestSpec> &spec = {});

} // namespace mlir::norm

#endif // NORM_PIPELINES_MANIFEST_H
