//===- LowerForward.cpp - forward norm ops -> one row loop nest each ------===//
//
// Part of mlir-norm.
//
// norm-lower-forward: a buffer-form norm.layer_norm / norm.rms_norm becomes
// one row loop nest (`#norm.stage<forward>`): the row sums, the statistics,
// then y (and xhat when requested), in the storage type like norm-split's
// faithful form, so that norm-promote and norm-cache-rows treat both alike.
// A forward has no cross-row reduction, so nothing here is split.
//
// With a `residual`, the nest's first column loop forms h = x + residual
// and stores it to `h`; the loops after it read the row from `h`, as
// stored (rounded to the storage type), where they read x otherwise. The
// faithful form does say "read h back": norm-cache-rows serves those reads
// from the value the first loop stored, so the kernel reads x and residual
// once and writes h once, and the statistics still see h as rounded.
//
// One conversion pattern per forward op kind
// (populateNormLowerForwardPatterns); the pass applies them with the forward
// ops illegal, so "no forward op is left" holds by construction. Whether an
// op can be lowered is decided in one place, whyNotLowerable
// (LoweringUtils.h).
//
//===----------------------------------------------------------------------===//

#include "LoweringUtils.h"
#include "norm/Dialect/Norm/Transforms/Passes.h"
#include "norm/Dialect/Norm/Transforms/Transforms.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace mlir::norm {
#define GEN_PASS_DEF_NORMLOWERFORWARD
#include "norm/Dialect/Norm/Transforms/Passes.h.inc"
} // namespace mlir::norm

using namespace mlir;
using namespace mlir::norm;

namespace {

/// Lowers a forward op that whyNotLowerable accepts, at the builder's place,
/// tagging its nest with `id`; the op itself stays (the caller erases it).
template <typename OpT>
void lowerForward(OpT op, int64_t id, ImplicitLocOpBuilder &b) {
  constexpr bool kLayer = isLayerNorm<OpT>();
  Emitter e = emitterFor(op, b);

  Value x = asRows(b, op.getX());
  Value residual, hOut;
  if (op.getResidual()) {
    residual = asRows(b, op.getResidual());
    hOut = asRows(b, op.getHOut());
  }
  Value y = asRows(b, op.getYOut());
  Value rstdOut = asFlat(b, op.getRstdOut());
  Value meanOut, xhatOut, bias;
  if constexpr (kLayer) {
    meanOut = asFlat(b, op.getMeanOut());
    bias = op.getBias();
  }
  if (op.getXhatOut())
    xhatOut = asRows(b, op.getXhatOut());
  Value weight = op.getWeight();

  Value m = getValueOrCreateConstantIndexOp(
      b, b.getLoc(), memref::getMixedSize(b, b.getLoc(), x, 0));
  Value n = getValueOrCreateConstantIndexOp(
      b, b.getLoc(), memref::getMixedSize(b, b.getLoc(), x, 1));
  Value zero = e.index(0);

  scf::ForOp nest = e.loop(zero, m, [&](Value r) {
    // Inside the nest, so that norm-promote sees the exact f32 values.
    Value nf = e.indexToStorage(n);
    Value eps = e.storageConstant(op.getEps().convertToDouble());
    Value z = e.storageConstant(0.0);
    // The rows the norm reads: x, or h = x + residual once it is stored.
    Value src = x;
    if (residual) {
      e.loop(zero, n, [&](Value j) {
        e.store(arith::AddFOp::create(b, e.load(x, {r, j}),
                                      e.load(residual, {r, j})),
                hOut, {r, j});
      });
      src = hOut;
    }
    Value mu;
    Value sq;
    if (kLayer) {
      scf::ForOp s = e.reduction(zero, n, {z}, [&](Value j, ValueRange c) {
        return SmallVector<Value>{
            arith::AddFOp::create(b, c[0], e.load(src, {r, j}))};
      });
      mu = arith::DivFOp::create(b, s.getResult(0), nf);
    }
    // Two-pass variance: sum((x - mean)^2), RMSNorm: sum(x^2).
    scf::ForOp s = e.reduction(zero, n, {z}, [&](Value j, ValueRange c) {
      Value v = e.load(src, {r, j});
      if (mu)
        v = arith::SubFOp::create(b, v, mu);
      return SmallVector<Value>{math::FmaOp::create(b, v, v, c[0])};
    });
    sq = arith::DivFOp::create(b, s.getResult(0), nf);
    Value rs = math::RsqrtOp::create(b, arith::AddFOp::create(b, sq, eps));
    Type f32 = b.getF32Type();
    if (meanOut)
      e.store(e.convert(mu, f32), meanOut, {r});
    e.store(e.convert(rs, f32), rstdOut, {r});
    e.loop(zero, n, [&](Value j) {
      Value v = e.load(src, {r, j});
      if (mu)
        v = arith::SubFOp::create(b, v, mu);
      Value h = arith::MulFOp::create(b, v, rs);
      if (xhatOut)
        e.store(
            e.convert(h, cast<MemRefType>(xhatOut.getType()).getElementType()),
            xhatOut, {r, j});
      // y = xhat w + b, one fused multiply-add an element with both.
      Value w;
      if (weight) {
        w = e.convert(e.load(weight, {j}), e.storage);
        if (op.getZeroCenteredWeight())
          w = arith::AddFOp::create(b, w, e.storageConstant(1.0));
      }
      Value bv;
      if (bias)
        bv = e.convert(e.load(bias, {j}), e.storage);
      Value out = h;
      if (w && bv)
        out = math::FmaOp::create(b, h, w, bv);
      else if (w)
        out = arith::MulFOp::create(b, h, w);
      else if (bv)
        out = arith::AddFOp::create(b, h, bv);
      e.store(out, y, {r, j});
    });
  });
  setStage(nest, Stage::Forward, id, e.acc);
  copyGeometry(op, nest);
}

/// Lowers one forward op kind.
template <typename OpT>
struct LowerForwardPattern : public OpConversionPattern<OpT> {
  using OpConversionPattern<OpT>::OpConversionPattern;

  LogicalResult
  matchAndRewrite(OpT op, typename OpT::Adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    return lowerToNests(op, rewriter, [&](int64_t id, ImplicitLocOpBuilder &b) {
      lowerForward(op, id, b);
    });
  }
};

struct LowerForwardPass
    : public norm::impl::NormLowerForwardBase<LowerForwardPass> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateNormLowerForwardPatterns(patterns);
    if (failed(lowerAllToNests<LayerNormOp, RMSNormOp>(
            getOperation(), std::move(patterns), numForwardOps)))
      signalPassFailure();
  }
};

} // namespace

void mlir::norm::populateNormLowerForwardPatterns(RewritePatternSet &patterns) {
  patterns
      .add<LowerForwardPattern<LayerNormOp>, LowerForwardPattern<RMSNormOp>>(
          patterns.getContext());
}
