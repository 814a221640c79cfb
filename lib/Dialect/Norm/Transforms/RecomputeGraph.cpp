//===- RecomputeGraph.cpp - stored xhat -> x + statistics -----------------===//
//
// Part of mlir-norm.
//
// norm-recompute-graph, on the value form. A grad op that reads
// the `xhat` a forward op stored, together with that forward's `rstd`, can
// as well read the forward's `x` (and `mean`) and recompute xhat per row:
// that saves writing and reading an [M, N] tensor. Once no grad reads the
// stored xhat any more, the forward stops producing it.
//
//===----------------------------------------------------------------------===//

#include "norm/Dialect/Norm/Transforms/Transforms.h"

#include "norm/Dialect/Norm/IR/NormOps.h"
#include "norm/Dialect/Norm/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/TypeSwitch.h"

#include <type_traits>

namespace mlir::norm {
#define GEN_PASS_DEF_NORMRECOMPUTEGRAPH
#include "norm/Dialect/Norm/Transforms/Passes.h.inc"
} // namespace mlir::norm

using namespace mlir;
using namespace mlir::norm;

namespace {

/// The forward op whose results a grad op of type `GradOpTy` consumes.
template <typename GradOpTy> struct ForwardOf;
template <> struct ForwardOf<LayerNormGradOp> { using type = LayerNormOp; };
template <> struct ForwardOf<RMSNormGradOp> { using type = RMSNormOp; };

/// Rewrites a value-form grad op reading `xhat` (and `rstd`) from a forward
/// op of its family to read that forward's `x` (and, for LayerNorm, `mean`)
/// instead; every other operand and attribute stays.
///
/// The forward's `x` must have the type of the stored `xhat`: the grad's
/// `dy`, `dx` and `dresidual` were checked against xhat's element type,
/// which an f32 xhat of a bf16 x would not keep.
///
/// Returns the forward op, or why the grad does not qualify.
template <typename GradOpTy>
FailureOr<typename ForwardOf<GradOpTy>::type>
matchStoredXhat(GradOpTy op, function_ref<void(const char *)> reason) {
  using ForwardOpTy = typename ForwardOf<GradOpTy>::type;
  auto fail = [&](const char *why) {
    reason(why);
    return failure();
  };
  if (op.isBufferForm())
    return fail("buffer form");
  Value xhat = op.getXhat();
  if (!xhat)
    return fail("reads x, not a stored xhat");
  auto forward = xhat.template getDefiningOp<ForwardOpTy>();
  if (!forward || forward.getXhat() != xhat)
    return fail("xhat is not the xhat result of a forward op of this family");
  if (op.getRstd() != forward.getRstd())
    return fail("rstd is not the forward's rstd");
  if (forward.getX().getType() != xhat.getType())
    return fail("the forward's x has another type than the stored xhat");
  return forward;
}

template <typename GradOpTy>
struct GradReadsXInsteadOfXhat : public OpRewritePattern<GradOpTy> {
  using OpRewritePattern<GradOpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(GradOpTy op,
                                PatternRewriter &rewriter) const override {
    LogicalResult why = success();
    auto forward = matchStoredXhat(op, [&](const char *reason) {
      why = rewriter.notifyMatchFailure(op, reason);
    });
    if (failed(forward))
      return why;

    rewriter.modifyOpInPlace(op, [&] {
      op.getXMutable().assign(forward->getX());
      op.getXhatMutable().clear();
      if constexpr (std::is_same_v<GradOpTy, LayerNormGradOp>)
        op.getMeanMutable().assign(forward->getMean());
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

    // xhat is the result segment before the last (`h`, the sum of a fused
    // residual add, comes after it).
    typename ForwardOpTy::Properties properties = op.getProperties();
    auto &segments = properties.resultSegmentSizes;
    assert(segments[segments.size() - 2] == 1 && "xhat is the one before h");
    segments[segments.size() - 2] = 0;
    SmallVector<Value> kept;
    for (Value r : op->getResults())
      if (r != xhat)
        kept.push_back(r);
    auto newOp = ForwardOpTy::create(
        rewriter, op.getLoc(), ValueRange(kept).getTypes(), op->getOperands(),
        properties, llvm::to_vector(op->getDiscardableAttrs()));
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

namespace {
struct RecomputeGraphPass
    : public norm::impl::NormRecomputeGraphBase<RecomputeGraphPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    // On the norm ops alone: no folding or clean-up of the user's code
    // around them.
    SmallVector<Operation *> normOps;
    int64_t before = 0;
    func.walk([&](Operation *op) {
      if (!isa<NormDialect>(op->getDialect()))
        return;
      normOps.push_back(op);
      before += readsStoredXhat(op);
    });
    if (normOps.empty())
      return;
    RewritePatternSet patterns(&getContext());
    populateStoredXhatToRecomputePatterns(patterns);
    GreedyRewriteConfig config;
    config.enableFolding(false).enableConstantCSE(false);
    config.setStrictness(GreedyRewriteStrictness::ExistingAndNewOps);
    (void)applyOpPatternsGreedily(normOps, std::move(patterns), config);

    // The post-condition: no grad op is left that the patterns would
    // still rewrite, no forward op stores an xhat nobody reads.
    int64_t after = 0;
    WalkResult check = func.walk([&](Operation *op) {
      after += readsStoredXhat(op);
      auto ignore = [](const char *) {};
      bool left = TypeSwitch<Operation *, bool>(op)
                      .Case<LayerNormGradOp, RMSNormGradOp>([&](auto grad) {
                        return succeeded(matchStoredXhat(grad, ignore));
                      })
                      .Case<LayerNormOp, RMSNormOp>([](auto fwd) {
                        return fwd.getXhat() && fwd.getXhat().use_empty();
                      })
                      .Default([](Operation *) { return false; });
      if (!left)
        return WalkResult::advance();
      op->emitError() << "norm-recompute-graph: this op still reads or "
                         "stores an xhat it could recompute";
      return WalkResult::interrupt();
    });
    if (check.wasInterrupted())
      return signalPassFailure();
    numGraphRewrites += before - after;
  }

  static bool readsStoredXhat(Operation *op) {
    if (auto g = dyn_cast<LayerNormGradOp>(op))
      return static_cast<bool>(g.getXhat());
    if (auto g = dyn_cast<RMSNormGradOp>(op))
      return static_cast<bool>(g.getXhat());
    return false;
  }
};
} // namespace
