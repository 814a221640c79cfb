//===- NormFunction.h - one norm op in a function, from a spec --*- C++ -*-===//
//
// Part of mlir-norm.
//
// Builds, with the C++ builders, a `func.func` whose memref arguments are the
// operands of one norm op and whose body applies it. This is how every tool
// that starts from a description rather than from IR makes its input:
// norm-compile's spec mode, the CPU execution tests, the C API and Python.
// The argument order is fixed: inputs, then outputs, each in the order of
// the op's syntax (normFunctionArguments).
//
//===----------------------------------------------------------------------===//

#ifndef NORM_DIALECT_NORM_UTILS_NORMFUNCTION_H
#define NORM_DIALECT_NORM_UTILS_NORMFUNCTION_H

#include "norm/Dialect/Norm/IR/NormOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <optional>

namespace mlir::norm {

/// The four ops.
enum class NormOpKind { LayerNorm, RMSNorm, LayerNormGrad, RMSNormGrad };

/// "layer_norm", "rms_norm", "layer_norm_grad", "rms_norm_grad".
StringRef stringifyNormOpKind(NormOpKind kind);
std::optional<NormOpKind> symbolizeNormOpKind(StringRef name);

inline bool isGradKind(NormOpKind kind) {
  return kind == NormOpKind::LayerNormGrad || kind == NormOpKind::RMSNormGrad;
}
inline bool isLayerNormKind(NormOpKind kind) {
  return kind == NormOpKind::LayerNorm || kind == NormOpKind::LayerNormGrad;
}

/// What an argument of the built function is to the op.
enum class NormArgRole {
  // Backward inputs.
  Dy,
  X,
  Mean,
  Rstd,
  Weight,
  Bias,
  Dresidual,
  // Forward input: the residual of the fused add (h = x + residual).
  Residual,
  // Backward outputs.
  Dx,
  Dweight,
  Dbias,
  // Forward outputs.
  Y,
  MeanOut,
  RstdOut,
  XhatOut,
  // The fused residual add of a forward: its output h = x + residual.
  HOut,
};

/// The op's keyword for the role ("dy", "mean", "dweight", ...), also the
/// argument's name.
StringRef normArgKeyword(NormArgRole role);
bool isOutputRole(NormArgRole role);

/// Everything that changes the built function.
struct NormOpSpec {
  NormOpKind op = NormOpKind::LayerNormGrad;
  /// The hidden size N; ShapedType::kDynamic for `?`.
  int64_t n = ShapedType::kDynamic;
  /// Element type of x, dy, dx, dresidual, y, xhat, residual, h (f32, f16,
  /// bf16).
  FloatType xType;
  /// Element type of weight, bias, dweight, dbias; null: xType.
  FloatType paramType;
  /// A weight (and, for the backward, a dweight output).
  bool weight = true;
  /// LayerNorm only: a bias (forward) / a dbias output (backward).
  bool bias = true;
  /// Backward: a residual gradient added into dx.
  bool dresidual = false;
  /// `zero_centered_weight`: the weight is w + 1.
  bool zeroCentered = false;
  /// Forward: also write the normalised rows.
  bool xhat = false;
  /// Forward: add a `residual` to x first and write the sum `h`.
  bool residual = false;
  /// Backward: the `strategy` attribute; none: absent (the op's default).
  std::optional<ReductionStrategy> strategy;
  /// Backward: the `groups` attribute; 0: absent.
  int64_t groups = 0;
  /// Forward: the `eps` attribute; none: absent (the op's default).
  std::optional<double> eps;
  /// The number of leading (row) dims of x, dy, dx, ...: 1 gives [M, N],
  /// 2 gives [B, S, N] with [B, S] statistics; all of them dynamic.
  int64_t rowDims = 1;
  /// Row arguments ([M, N]) are `strided<[?, 1], offset: ?>` (and rank-3
  /// rows and statistics `strided<[?, ?, 1]>`, `strided<[?, 1]>`).
  bool stridedRows = false;
  /// Weight, bias and statistics arguments are `strided<[1], offset: ?>`.
  bool stridedVectors = false;
  /// Value form: the tensor op between `bufferization.to_tensor` and
  /// `bufferization.materialize_in_destination`; else the buffer form.
  bool valueForm = false;
};

/// The function's arguments in order: inputs, then outputs.
SmallVector<NormArgRole> normFunctionArguments(const NormOpSpec &spec);

/// The operands of a norm op with the role each plays (the inverse of the
/// builder: which value is dy, x, ..., dx). Operands without a role here
/// (a backward op's stored `xhat`) are left out; empty for another op.
SmallVector<std::pair<Value, NormArgRole>> normOperandRoles(Operation *op);

/// The memref type of the argument `role` (the row dims are dynamic).
MemRefType normArgumentType(MLIRContext *ctx, const NormOpSpec &spec,
                            NormArgRole role);

/// Builds `func.func @name(...)` at `b`'s insertion point (the func, memref
/// and bufferization dialects must be loadable in its context). Each block
/// argument is located at a NameLoc of its keyword, so printing with
/// OpPrintingFlags::printNameLocAsPrefix names it `%dy`, `%rstd`, ...
/// Fails (emitting at `loc`) on a spec the op's verifier would reject.
FailureOr<func::FuncOp> buildNormFunction(OpBuilder &b, Location loc,
                                          StringRef name,
                                          const NormOpSpec &spec);

} // namespace mlir::norm

#endif // NORM_DIALECT_NORM_UTILS_NORMFUNCTION_H
