//===- LoweringUtils.h - shared by the two op lowerings ---------*- C++ -*-===//
//
// Part of mlir-norm. Private to lib/Dialect/Norm/Transforms.
//
// Both passes lower buffer-form norm ops to tagged loop nests: grads
// (norm-split) and forwards (norm-lower-forward). What decides whether an op
// can be lowered, the [rows, N] / [rows] views the nests index, the `norm.id`
// numbering and the driver around the conversion patterns are the same for
// both, so they live here once.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_LIB_DIALECT_NORM_TRANSFORMS_LOWERINGUTILS_H
#define NORM_LIB_DIALECT_NORM_TRANSFORMS_LOWERINGUTILS_H

#include "Emitter.h"
#include "norm/Dialect/Norm/IR/NormOps.h"
#include "norm/Dialect/Norm/IR/StageContract.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>

namespace mlir::norm {

/// The pass that lowers `OpT`, for the messages that name it.
template <typename OpT> constexpr StringLiteral loweringPassName() {
  return isGrad<OpT>() ? StringLiteral("norm-split")
                       : StringLiteral("norm-lower-forward");
}

/// The reassociation that views a rank >= 2 buffer as [rows, N].
inline SmallVector<ReassociationIndices> rowsReassociation(int64_t rank) {
  ReassociationIndices rows;
  for (int64_t d = 0; d + 1 < rank; ++d)
    rows.push_back(d);
  return {rows, {rank - 1}};
}

/// The reassociation that views a buffer as [rows].
inline SmallVector<ReassociationIndices> flatReassociation(int64_t rank) {
  ReassociationIndices all;
  for (int64_t d = 0; d < rank; ++d)
    all.push_back(d);
  return {all};
}

/// A rank-2 [rows, N] view of a rank >= 2 buffer (whyNotLowerable has
/// checked that it exists).
inline Value asRows(ImplicitLocOpBuilder &b, Value v) {
  int64_t rank = cast<MemRefType>(v.getType()).getRank();
  if (rank == 2)
    return v;
  return memref::CollapseShapeOp::create(b, v, rowsReassociation(rank));
}

/// A rank-1 [rows] view of a statistics buffer (checked, as above).
inline Value asFlat(ImplicitLocOpBuilder &b, Value v) {
  int64_t rank = cast<MemRefType>(v.getType()).getRank();
  if (rank == 1)
    return v;
  return memref::CollapseShapeOp::create(b, v, flatReassociation(rank));
}

/// Why `v` has no [rows, N] view (`rows`) or no [rows] view, or nothing.
inline std::optional<std::string> whyNoView(StringRef name, Value v,
                                            bool rows) {
  auto type = cast<MemRefType>(v.getType());
  int64_t rank = type.getRank();
  if (rank == (rows ? 2 : 1))
    return std::nullopt;
  SmallVector<ReassociationIndices> re =
      rows ? rowsReassociation(rank) : flatReassociation(rank);
  if (memref::CollapseShapeOp::isGuaranteedCollapsible(type, re))
    return std::nullopt;
  std::string why;
  llvm::raw_string_ostream os(why);
  os << "cannot view '" << name << "' '" << type << "' as ";
  if (rows)
    os << "[rows, N]: its leading dims are not contiguous; pass a rank-2 "
          "buffer";
  else
    os << "[rows]: it is not contiguous";
  return why;
}

/// Why `op` cannot be lowered to loop nests, or nothing: the lowering takes
/// the buffer form, with every buffer viewable as [rows, N] (activations)
/// or [rows] (statistics). The one place this is decided: the passes report
/// it as an error on the op, the patterns as their match-failure reason.
template <typename OpT> std::optional<std::string> whyNotLowerable(OpT op) {
  if (!op.isBufferForm())
    return (loweringPassName<OpT>() +
            " lowers the buffer form; bufferize first (one-shot-bufferize, "
            "or the norm-lower-to-loops pipeline)")
        .str();
  // (name, buffer or null when absent, viewed as [rows, N]), in the order
  // the lowering takes the views.
  SmallVector<std::tuple<StringRef, Value, bool>> views;
  if constexpr (isGrad<OpT>()) {
    views = {{op.getX() ? "x" : "xhat", op.getInput(), true},
             {"dy", op.getDy(), true},
             {"dx", op.getDxOut(), true},
             {"rstd", op.getRstd(), false},
             {"dresidual", op.getDresidual(), true}};
    if constexpr (isLayerNorm<OpT>())
      views.push_back({"mean", op.getMean(), false});
  } else {
    views = {{"x", op.getX(), true},
             {"y", op.getYOut(), true},
             {"rstd", op.getRstdOut(), false}};
    if constexpr (isLayerNorm<OpT>())
      views.push_back({"mean", op.getMeanOut(), false});
    views.push_back({"xhat", op.getXhatOut(), true});
    views.push_back({"residual", op.getResidual(), true});
    views.push_back({"h", op.getHOut(), true});
  }
  for (auto [name, v, rows] : views)
    if (v)
      if (std::optional<std::string> why = whyNoView(name, v, rows))
        return why;
  return std::nullopt;
}

/// The storage (element) type of a buffer-form op: its activation's.
inline FloatType storageType(Value activation) {
  return cast<FloatType>(
      cast<MemRefType>(activation.getType()).getElementType());
}

/// The emitter of `op`'s nests: they compute in the op's storage type (x's,
/// or the grad's input's) until norm-promote moves them to the op's
/// accumulation type.
template <typename OpT> Emitter emitterFor(OpT op, ImplicitLocOpBuilder &b) {
  Value activation;
  if constexpr (isGrad<OpT>())
    activation = op.getInput();
  else
    activation = op.getX();
  return Emitter(b, storageType(activation), op.getAccumulationElementType());
}

/// The `norm.id` for the next lowered op in `op`'s function: one past the
/// largest already there. The stage contract wants ids unique per function
/// (fusion pairs nests by them), and both passes, run in either order or
/// again, number this way, so neither has to know what the other did.
inline int64_t nextNestId(Operation *op) {
  Operation *root = op->getParentWithTrait<OpTrait::IsIsolatedFromAbove>();
  int64_t next = 0;
  root->walk([&](Operation *nested) {
    if (std::optional<int64_t> id = getNestId(nested))
      next = std::max(next, *id + 1);
  });
  return next;
}

/// The body of every lowering pattern: `lower` emits the nests of `op`
/// (tagged with `id`) before it, then `op` goes. Buffer-form ops have no
/// results, so no operand is ever remapped and `lower` may read the op's
/// own accessors.
template <typename OpT>
LogicalResult
lowerToNests(OpT op, ConversionPatternRewriter &rewriter,
             function_ref<void(int64_t id, ImplicitLocOpBuilder &b)> lower) {
  if (std::optional<std::string> why = whyNotLowerable(op))
    return rewriter.notifyMatchFailure(op, *why);
  // A copy of the rewriter's builder keeps its listener: the conversion
  // sees every op the lowering creates.
  ImplicitLocOpBuilder b(op.getLoc(), static_cast<OpBuilder &>(rewriter));
  b.setInsertionPoint(op);
  lower(nextNestId(op), b);
  rewriter.eraseOp(op);
  return success();
}

/// The driver of both passes: every op of the kinds `OpTs` in `root` that
/// cannot be lowered is an error on that op (the conversion alone would say
/// only "failed to legalize"); then `patterns` lower them all with `OpTs`
/// illegal, so none is left afterwards (the post-condition, by
/// construction). `numOps` counts the ops found.
template <typename... OpTs, typename StatisticT>
LogicalResult lowerAllToNests(Operation *root, RewritePatternSet &&patterns,
                              StatisticT &numOps) {
  bool unlowerable = false;
  root->walk([&](Operation *op) {
    llvm::TypeSwitch<Operation *>(op).template Case<OpTs...>([&](auto norm) {
      ++numOps;
      if (std::optional<std::string> why = whyNotLowerable(norm)) {
        op->emitOpError() << *why;
        unlowerable = true;
      }
    });
  });
  if (unlowerable)
    return failure();

  ConversionTarget target(*root->getContext());
  target.addIllegalOp<OpTs...>();
  target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
  return applyPartialConversion(root, target, std::move(patterns));
}

} // namespace mlir::norm

#endif // NORM_LIB_DIALECT_NORM_TRANSFORMS_LOWERINGUTILS_H
