//===- RecomputeGraph.cpp - stored xhat -> x + statistics -----------------===//
//
// Part of mlir-norm.
//
// Graph-level half of norm-recompute, on the value form. A grad op that reads
// the `xhat` a forward op stored, together with that forward's `rstd`, can
// as well read the forward's `x` (and `mean`) and recompute xhat per row:
// that saves writing and reading an [M, N] tensor. Once no grad reads the
// stored xhat any more, the forward stops producing it.
//
//===----------------------------------------------------------------------===//

#include "norm/Dialect/Norm/Transforms/Transforms.h"

#include "norm/Dialect/Norm/IR/NormOps.h"

#include "mlir/IR/PatternMatch.h"

#include <type_traits>

using namespace mlir;
using namespace mlir::norm;

namespace {

/// The forward op whose results a grad op of type `GradOpTy` consumes.
template <typename GradOpTy>
struct ForwardOf;
template <>
struct ForwardOf<LayerNormGradOp> {
  using type = LayerNormOp;
};
template <>
struct ForwardOf<RMSNormGradOp> {
  using type = RMSNormOp;
};

/// Rewrites a value-form grad op reading `xhat` (and `rstd`) from a forward
/// op of its family to read that forward's `x` (and, for LayerNorm, `mean`)
/// instead; every other operand and attribute stays.
///
/// The forward's `x` must have the type of the stored `xhat`: the grad's
/// `dy`, `dx` and `dresidual` were checked against xhat's element type,
/// which an f32 xhat of a bf16 x would not keep.
template <typename GradOpTy>
struct GradReadsXInsteadOfXhat : public OpRewritePattern<GradOpTy> {
  using OpRewritePattern<GradOpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(GradOpTy op,
                                PatternRewriter &rewriter) const override {
    using ForwardOpTy = typename ForwardOf<GradOpTy>::type;
    if (op.isBufferForm())
      return rewriter.notifyMatchFailure(op, "buffer form");
    Value xhat = op.getXhat();
    if (!xhat)
      return rewriter.notifyMatchFailure(op, "reads x, not a stored xhat");
    auto forward = xhat.template getDefiningOp<ForwardOpTy>();
    if (!forward || forward.getXhat() != xhat)
      return rewriter.notifyMatchFailure(
          op, "xhat is not the xhat result of a forward op of this family");
    if (op.getRstd() != forward.getRstd())
      return rewriter.notifyMatchFailure(op, "rstd is not the forward's rstd");
    if (forward.getX().getType() != xhat.getType())
      return rewriter.notifyMatchFailure(
          op, "the forward's x has another type than the stored xhat");

    rewriter.modifyOpInPlace(op, [&] {
      op.getXMutable().assign(forward.getX());
      op.getXhatMutable().clear();
      if constexpr (std::is_same_v<GradOpTy, LayerNormGradOp>)
        op.getMeanMutable().assign(forward.getMean());
    });
    return success();
  }
};

/// Rebuilds a value-form forward op whose `xhat` result has no use without
/// that result; every operand and attribute stays.
template <typename ForwardOpTy>
struct DropUnusedXhat : public OpRewritePattern<ForwardOpTy> {
  using OpRewritePattern<ForwardOpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(ForwardOpTy op,
                                PatternRewriter &rewriter) const override {
    Value xhat = op.getXhat();
    if (!xhat)
      return rewriter.notifyMatchFailure(op, "produces no xhat");
    if (!xhat.use_empty())
      return rewriter.notifyMatchFailure(op, "xhat is used");

    // xhat is the last result segment (and so the last result).
    assert(xhat == op->getResults().back() && "xhat must be the last result");
    typename ForwardOpTy::Properties properties = op.getProperties();
    properties.resultSegmentSizes.back() = 0;
    ValueRange kept = op->getResults().drop_back();
    auto newOp = ForwardOpTy::create(
        rewriter, op.getLoc(), kept.getTypes(), op->getOperands(), properties,
        llvm::to_vector(op->getDiscardableAttrs()));
    rewriter.replaceAllUsesWith(kept, newOp->getResults());
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void mlir::norm::populateStoredXhatToRecomputePatterns(
    RewritePatternSet &patterns) {
  patterns.add<GradReadsXInsteadOfXhat<LayerNormGradOp>,
               GradReadsXInsteadOfXhat<RMSNormGradOp>,
               DropUnusedXhat<LayerNormOp>, DropUnusedXhat<RMSNormOp>>(
      patterns.getContext());
}
