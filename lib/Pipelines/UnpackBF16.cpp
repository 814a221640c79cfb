//===- UnpackBF16.cpp - bf16 -> f32 of a vector's lanes as integer ops ----===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#include "norm/Pipelines/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::norm {
#define GEN_PASS_DEF_NORMUNPACKBF16
#include "norm/Pipelines/Passes.h.inc"
} // namespace mlir::norm

using namespace mlir;

namespace {

/// arith.extf(vector.extract %v[i]) : bf16 -> f32, %v a 1-D vector of an
/// even number of bf16: the 32-bit word that holds lane i, shifted (even i,
/// the low half) or masked (odd i, the high half), as f32.
struct ExtendLane : OpRewritePattern<arith::ExtFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::ExtFOp ext,
                                PatternRewriter &rewriter) const override {
    if (!ext.getIn().getType().isBF16() || !ext.getType().isF32())
      return failure();
    auto lane = ext.getIn().getDefiningOp<vector::ExtractOp>();
    if (!lane || !lane.getDynamicPosition().empty())
      return failure();
    auto vecType = dyn_cast<VectorType>(lane.getSource().getType());
    if (!vecType || vecType.getRank() != 1 || vecType.isScalable() ||
        vecType.getNumElements() % 2 != 0)
      return failure();
    int64_t i = lane.getStaticPosition()[0];
    Location loc = ext.getLoc();
    Type i32 = rewriter.getI32Type();
    auto words = vector::BitCastOp::create(
        rewriter, loc, VectorType::get({vecType.getNumElements() / 2}, i32),
        lane.getSource());
    Value word = vector::ExtractOp::create(rewriter, loc, words, i / 2);
    Value bits =
        i % 2 == 0
            ? Value(arith::ShLIOp::create(
                  rewriter, loc, word,
                  arith::ConstantIntOp::create(rewriter, loc, i32, 16)))
            : Value(arith::AndIOp::create(
                  rewriter, loc, word,
                  arith::ConstantIntOp::create(rewriter, loc, i32,
                                               0xffff0000)));
    rewriter.replaceOpWithNewOp<arith::BitcastOp>(ext, ext.getType(), bits);
    return success();
  }
};

struct UnpackBF16Pass : public norm::impl::NormUnpackBF16Base<UnpackBF16Pass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ExtendLane>(&getContext());
    (void)applyPatternsGreedily(getOperation(), std::move(patterns));
  }
};

} // namespace
