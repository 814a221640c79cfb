//===- FuseMultiplyAdd.cpp - explicit f32 fma in the kernels -------------===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#include "norm/Pipelines/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::norm {
#define GEN_PASS_DEF_NORMFUSEMULTIPLYADD
#include "norm/Pipelines/Passes.h.inc"
} // namespace mlir::norm

using namespace mlir;

namespace {

bool plain(arith::ArithFastMathInterface op) {
  return op.getFastMathFlagsAttr().getValue() == arith::FastMathFlags::none;
}

/// The f32 multiply that `v` is, if it has no other use and no flags.
arith::MulFOp fusableProduct(Value v) {
  auto mul = v.getDefiningOp<arith::MulFOp>();
  if (!mul || !mul.getType().isF32() || !mul->hasOneUse() || !plain(mul))
    return {};
  return mul;
}

/// Replaces `op` (the add or subtract) by fma(a, b, c) and erases `mul`,
/// its only user gone.
void replaceByFma(PatternRewriter &rewriter, Operation *op, arith::MulFOp mul,
                  Value a, Value b, Value c) {
  rewriter.replaceOpWithNewOp<LLVM::FMAOp>(op, a, b, c);
  rewriter.eraseOp(mul);
}

struct FuseAdd : OpRewritePattern<arith::AddFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::AddFOp add,
                                PatternRewriter &rewriter) const override {
    if (!add.getType().isF32() || !plain(add))
      return failure();
    // The left operand first: a running sum `acc + a * b` is written with
    // the product on the right, and either way the result is the same.
    Value other = add.getLhs();
    arith::MulFOp mul = fusableProduct(add.getRhs());
    if (!mul) {
      mul = fusableProduct(add.getLhs());
      other = add.getRhs();
    }
    if (!mul)
      return failure();
    replaceByFma(rewriter, add, mul, mul.getLhs(), mul.getRhs(), other);
    return success();
  }
};

struct FuseSub : OpRewritePattern<arith::SubFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::SubFOp sub,
                                PatternRewriter &rewriter) const override {
    if (!sub.getType().isF32() || !plain(sub))
      return failure();
    Location loc = sub.getLoc();
    // c - a * b = fma(-a, b, c); negation is exact.
    if (arith::MulFOp mul = fusableProduct(sub.getRhs())) {
      Value negA = arith::NegFOp::create(rewriter, loc, mul.getLhs());
      replaceByFma(rewriter, sub, mul, negA, mul.getRhs(), sub.getLhs());
      return success();
    }
    // a * b - c = fma(a, b, -c).
    if (arith::MulFOp mul = fusableProduct(sub.getLhs())) {
      Value negC = arith::NegFOp::create(rewriter, loc, sub.getRhs());
      replaceByFma(rewriter, sub, mul, mul.getLhs(), mul.getRhs(), negC);
      return success();
    }
    return failure();
  }
};

struct FuseMultiplyAddPass
    : public norm::impl::NormFuseMultiplyAddBase<FuseMultiplyAddPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseAdd, FuseSub>(&getContext());
    // Rewrites only: the driver converges or leaves the rest unfused, and
    // either is a correct kernel.
    (void)applyPatternsGreedily(getOperation(), std::move(patterns));
  }
};

} // namespace
