//===- ReciprocalDivide.cpp - f32 division by a constant as a multiply ----===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#include "norm/Pipelines/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::norm {
#define GEN_PASS_DEF_NORMRECIPROCALDIVIDE
#include "norm/Pipelines/Passes.h.inc"
} // namespace mlir::norm

using namespace mlir;

namespace {

/// 1 / c rounded to f32, if c is an f32 constant whose reciprocal is a
/// finite normal number.
std::optional<APFloat> reciprocal(Value c) {
  FloatAttr attr;
  if (!matchPattern(c, m_Constant(&attr)) || !attr.getType().isF32())
    return std::nullopt;
  const APFloat &v = attr.getValue();
  if (!v.isFiniteNonZero())
    return std::nullopt;
  APFloat r(v.getSemantics(), 1);
  if (r.divide(v, APFloat::rmNearestTiesToEven) & APFloat::opOverflow)
    return std::nullopt;
  if (!r.isNormal())
    return std::nullopt;
  return r;
}

struct DivideByConstant : OpRewritePattern<arith::DivFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::DivFOp div,
                                PatternRewriter &rewriter) const override {
    if (!div.getType().isF32() ||
        div.getFastMathFlagsAttr().getValue() != arith::FastMathFlags::none)
      return failure();
    std::optional<APFloat> r = reciprocal(div.getRhs());
    if (!r)
      return failure();
    Value k = arith::ConstantOp::create(rewriter, div.getLoc(),
                                        rewriter.getF32FloatAttr(
                                            r->convertToFloat()));
    rewriter.replaceOpWithNewOp<arith::MulFOp>(div, div.getLhs(), k);
    return success();
  }
};

struct ReciprocalDividePass
    : public norm::impl::NormReciprocalDivideBase<ReciprocalDividePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<DivideByConstant>(&getContext());
    (void)applyPatternsGreedily(getOperation(), std::move(patterns));
  }
};

} // namespace
