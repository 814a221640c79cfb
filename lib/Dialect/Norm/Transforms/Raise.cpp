//===- Raise.cpp - decomposed LayerNorm / RMSNorm -> norm ops -------------===//
//
// Part of mlir-norm.
//
// norm-raise: the rewrites of what RaiseMatch.cpp recognises, the patterns
// and the pass's driver. A forward becomes one op (and replaces the mean
// and rstd the program computes, reshaped and cast as it keeps them); a
// backward becomes one op taking dx, dweight and dbias of the same inputs
// together; what the raised computation leaves unused is erased.
//
//===----------------------------------------------------------------------===//

#include "RaiseMatch.h"
#include "norm/Dialect/Norm/IR/NormOps.h"
#include "norm/Dialect/Norm/Transforms/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::norm {
#define GEN_PASS_DEF_NORMRAISE
#include "norm/Dialect/Norm/Transforms/Passes.h.inc"
} // namespace mlir::norm

using namespace mlir;
using namespace mlir::norm;
using namespace mlir::norm::raise;

namespace {

//===----------------------------------------------------------------------===//
// Rewriting
//===----------------------------------------------------------------------===//

/// Right after the last op of `block` that defines one of `values` (block
/// start if none).
void setInsertionAfterDefs(OpBuilder &b, Block *block, ArrayRef<Value> values) {
  Operation *last = nullptr;
  for (Value v : values) {
    Operation *d = v ? v.getDefiningOp() : nullptr;
    if (!d)
      continue;
    Operation *inBlock = block->findAncestorOpInBlock(*d);
    if (!inBlock)
      continue;
    if (!last || last->isBeforeInBlock(inBlock))
      last = inBlock;
  }
  if (last)
    b.setInsertionPointAfter(last);
  else
    b.setInsertionPointToStart(block);
}

/// `v` with every element cast to `elt` (linalg.map), or `v` itself.
Value castElements(OpBuilder &b, Location loc, Value v, Type elt) {
  auto t = cast<RankedTensorType>(v.getType());
  if (t.getElementType() == elt)
    return v;
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, v);
  Value init = tensor::EmptyOp::create(b, loc, sizes, elt);
  bool widen = cast<FloatType>(elt).getWidth() >
               cast<FloatType>(t.getElementType()).getWidth();
  auto map = linalg::MapOp::create(
      b, loc, ValueRange{v}, init,
      [&](OpBuilder &nb, Location l, ValueRange args) {
        Value c = widen ? Value(arith::ExtFOp::create(nb, l, elt, args[0]))
                        : Value(arith::TruncFOp::create(nb, l, elt, args[0]));
        linalg::YieldOp::create(nb, l, c);
      });
  return map->getResult(0);
}

/// A row statistic (f32, [rows...]) in the type `want` ([rows...] or
/// [rows..., 1], any float), and back.
Value statTo(OpBuilder &b, Location loc, Value stat, RankedTensorType want) {
  auto t = cast<RankedTensorType>(stat.getType());
  if (want.getRank() == t.getRank() + 1) {
    SmallVector<ReassociationIndices> groups;
    for (int64_t i = 0; i + 1 < t.getRank(); ++i)
      groups.push_back({i});
    groups.push_back({t.getRank() - 1, t.getRank()});
    auto type = RankedTensorType::get(want.getShape(), t.getElementType());
    stat = tensor::ExpandShapeOp::create(b, loc, type, stat, groups);
  }
  return castElements(b, loc, stat, want.getElementType());
}

Value statFrom(OpBuilder &b, Location loc, Value leaf, const Geometry &g) {
  auto t = cast<RankedTensorType>(leaf.getType());
  if (t.getRank() == static_cast<int64_t>(g.rows.size()) + 1) {
    SmallVector<ReassociationIndices> groups;
    for (int64_t i = 0; i + 2 < t.getRank(); ++i)
      groups.push_back({i});
    groups.push_back({t.getRank() - 2, t.getRank() - 1});
    leaf = tensor::CollapseShapeOp::create(b, loc, leaf, groups);
  }
  return castElements(b, loc, leaf, b.getF32Type());
}

TypeAttr accAttr(const Match &match) {
  return match.acc.isF32() ? TypeAttr() : TypeAttr::get(match.acc);
}

void rewriteForward(Match &match, RewriterBase &rewriter) {
  const Hypothesis &h = match.h;
  Value root = match.outputs.front().first;
  Location loc = root.getLoc();
  setInsertionAfterDefs(rewriter, root.getParentBlock(),
                        {h.get(X), h.get(W), h.get(B)});
  auto xType = cast<RankedTensorType>(h.get(X).getType());
  auto statType = RankedTensorType::get(match.g.rows, rewriter.getF32Type());
  UnitAttr zc = h.zeroCentered ? rewriter.getUnitAttr() : UnitAttr();
  FloatAttr eps = rewriter.getF32FloatAttr(static_cast<float>(h.eps));
  Value y, mean, rstd;
  if (h.layer) {
    auto op = LayerNormOp::create(
        rewriter, loc, xType, statType, statType, Type(), /*h=*/Type(),
        h.get(X), /*residual=*/Value(), h.get(W), h.get(B), Value(), Value(),
        Value(), Value(), /*h_out=*/Value(), eps, zc, accAttr(match));
    y = op.getY(), mean = op.getMean(), rstd = op.getRstd();
  } else {
    auto op = RMSNormOp::create(rewriter, loc, xType, statType, Type(),
                                /*h=*/Type(), h.get(X), /*residual=*/Value(),
                                h.get(W), Value(), Value(), Value(),
                                /*h_out=*/Value(), eps, zc, accAttr(match));
    y = op.getY(), rstd = op.getRstd();
  }
  Value yOut = y;
  if (y.getType() != root.getType())
    yOut = tensor::CastOp::create(rewriter, loc, root.getType(), y);
  for (auto [v, role] : match.stats) {
    // Read only inside the computation, which goes away.
    if (llvm::all_of(v.getUsers(),
                     [&](Operation *u) { return match.slice.ops.contains(u); }))
      continue;
    Value s = statTo(rewriter, loc, role == Mean ? mean : rstd,
                     cast<RankedTensorType>(v.getType()));
    if (s.getType() != v.getType())
      s = tensor::CastOp::create(rewriter, loc, v.getType(), s);
    rewriter.replaceAllUsesWith(v, s);
  }
  rewriter.replaceAllUsesWith(root, yOut);
}

void rewriteGrad(Match &match, RewriterBase &rewriter) {
  const Hypothesis &h = match.h;
  Value root = match.outputs.front().first;
  Location loc = root.getLoc();
  Value dx, dw;
  for (auto [v, target] : match.outputs)
    (target == Target::Dx ? dx : dw) = v;
  SmallVector<Value> leaves(h.leaf.begin(), h.leaf.end());
  // A recomputed mean: the mean of a forward op of the same x (raised
  // before), else of a forward op made for it.
  Value xMean;
  if (h.meanFromX) {
    for (Operation &op : *root.getParentBlock())
      if (auto fwd = dyn_cast<LayerNormOp>(op);
          fwd && fwd.getX() == h.get(X) && fwd.getMean())
        xMean = fwd.getMean();
    if (xMean)
      leaves.push_back(xMean);
  }
  setInsertionAfterDefs(rewriter, root.getParentBlock(), leaves);
  if (h.meanFromX && !xMean) {
    auto t = cast<RankedTensorType>(h.get(X).getType());
    auto statType = RankedTensorType::get(match.g.rows, rewriter.getF32Type());
    xMean = LayerNormOp::create(rewriter, loc, t, statType, statType, Type(),
                                /*h=*/Type(), h.get(X), /*residual=*/Value(),
                                Value(), Value(), Value(), Value(), Value(),
                                Value(), /*h_out=*/Value(), FloatAttr(),
                                UnitAttr(), accAttr(match))
                .getMean();
  }

  Value in = h.get(X) ? h.get(X) : h.get(Xhat);
  auto xType = cast<RankedTensorType>(in.getType());
  Value weight = h.get(W);
  if (!weight && dw) {
    // dweight without a weight in the program: the op needs one to type
    // dweight; ones leave dx as the program's.
    auto wType = RankedTensorType::get({match.g.n}, elementType(dw));
    Value one = arith::ConstantOp::create(
        rewriter, loc, rewriter.getFloatAttr(wType.getElementType(), 1.0));
    SmallVector<OpFoldResult> sizes = {
        tensor::getMixedSize(rewriter, loc, in, xType.getRank() - 1)};
    Value empty =
        tensor::EmptyOp::create(rewriter, loc, sizes, wType.getElementType());
    weight = linalg::FillOp::create(rewriter, loc, one, empty).getResult(0);
    if (weight.getType() != wType)
      weight = tensor::CastOp::create(rewriter, loc, wType, weight);
  }
  Value rstd = statFrom(rewriter, loc, h.get(Rstd), match.g);
  Value mean =
      h.get(Mean) ? statFrom(rewriter, loc, h.get(Mean), match.g) : xMean;
  Type dwType =
      dw ? RankedTensorType::get({match.g.n}, elementType(weight)) : Type();
  Type dbType = match.dbias ? match.dbias.getType() : Type();
  if (dbType)
    dbType = RankedTensorType::get({match.g.n}, elementType(match.dbias));
  UnitAttr zc = h.zeroCentered ? rewriter.getUnitAttr() : UnitAttr();
  Value rdx, rdw, rdb;
  if (h.layer) {
    auto op = LayerNormGradOp::create(
        rewriter, loc, xType, dwType, dbType, h.get(Dy), h.get(X), h.get(Xhat),
        mean, rstd, weight, h.get(Dres), Value(), Value(), Value(),
        ReductionStrategyAttr(), IntegerAttr(), zc, accAttr(match));
    rdx = op.getDx(), rdw = op.getDweight(), rdb = op.getDbias();
  } else {
    auto op = RMSNormGradOp::create(
        rewriter, loc, xType, dwType, h.get(Dy), h.get(X), h.get(Xhat), rstd,
        weight, h.get(Dres), Value(), Value(), ReductionStrategyAttr(),
        IntegerAttr(), zc, accAttr(match));
    rdx = op.getDx(), rdw = op.getDweight();
  }
  auto replace = [&](Value old, Value now) {
    if (!old)
      return;
    if (now.getType() != old.getType())
      now = tensor::CastOp::create(rewriter, loc, old.getType(), now);
    rewriter.replaceAllUsesWith(old, now);
  };
  replace(dx, rdx);
  replace(dw, rdw);
  replace(match.dbias, rdb);
}

/// Erases the ops of a matched computation that nothing uses any more.
void eraseDead(const Slice &slice, RewriterBase &rewriter) {
  SmallVector<Operation *> left(slice.ops.begin(), slice.ops.end());
  for (bool erased = true; erased;) {
    erased = false;
    for (Operation *&op : left) {
      if (op && op->use_empty() && isPure(op)) {
        rewriter.eraseOp(op);
        op = nullptr;
        erased = true;
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// Patterns
//===----------------------------------------------------------------------===//

/// Whether a user of `v` is itself a candidate that `matches`: the larger
/// expression is raised instead.
bool userMatches(Value v, function_ref<bool(Value)> matches) {
  for (Operation *user : v.getUsers()) {
    auto lop = dyn_cast<linalg::LinalgOp>(user);
    if (!lop || lop->getNumResults() != 1 ||
        cast<ShapedType>(lop->getResult(0).getType()).getShape() !=
            cast<ShapedType>(v.getType()).getShape())
      continue;
    if (matches(lop->getResult(0)))
      return true;
  }
  return false;
}

/// Whether `v` ends an expression (a remark is worth giving there).
bool endsExpression(Value v) {
  return llvm::any_of(v.getUsers(),
                      [](Operation *u) { return !isExpressionOp(u); });
}

/// Raises the forward whose y `op` computes, if it is one.
LogicalResult raiseForwardAt(Operation *op, RewriterBase &rewriter,
                             const RaiseOptions &options, Why &why) {
  Value root = candidate(op);
  if (!root || cast<ShapedType>(root.getType()).getRank() < 2)
    return why.fail("not a [rows, N] result");
  FailureOr<Match> match = matchForward(root, why, options);
  if (failed(match))
    return failure();
  if (userMatches(root, [](Value v) {
        Why w;
        return succeeded(matchForward(v, w));
      }))
    return why.fail("a user is a larger match");
  rewriteForward(*match, rewriter);
  eraseDead(match->slice, rewriter);
  return success();
}

/// Raises the backward whose dx or dweight `op` computes (with the other
/// outputs of the same inputs), if it is one.
LogicalResult raiseGradAt(Operation *op, RewriterBase &rewriter,
                          const RaiseOptions &options, Why &why) {
  Value root = candidate(op);
  if (!root)
    return why.fail("not a single tensor result");
  FailureOr<Match> match = matchGrad(root, why);
  if (succeeded(match) && match->target == Target::Dweight) {
    // A dx of the same inputs carries the weight: it is the root then.
    if (FailureOr<Match> dx = findDxFor(*match, root); succeeded(dx)) {
      root = dx->outputs.front().first;
      match = std::move(dx);
    }
  }
  if (succeeded(match)) {
    findGradSiblings(*match, root);
    if (failed(checkTypes(*match, options, why)))
      match = failure();
  }
  if (failed(match))
    return failure();
  if (match->target == Target::Dx && userMatches(root, [](Value v) {
        Why w;
        return succeeded(matchGrad(v, w));
      }))
    return why.fail("a user is a larger match");
  rewriteGrad(*match, rewriter);
  eraseDead(match->slice, rewriter);
  return success();
}

/// A pattern raising what `raiseAt` (raiseForwardAt or raiseGradAt) finds
/// at an op, its refusal as the match failure's reason.
template <LogicalResult (*raiseAt)(Operation *, RewriterBase &,
                                   const RaiseOptions &, Why &)>
struct RaisePattern : public RewritePattern {
  RaisePattern(MLIRContext *ctx, RaiseOptions options)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx),
        options(options) {}

  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    Why why;
    if (failed(raiseAt(op, rewriter, options, why)))
      return rewriter.notifyMatchFailure(op, why.text);
    return success();
  }

  RaiseOptions options;
};

/// Records the ops a rewriter erases.
struct ErasedOps : public RewriterBase::Listener {
  void notifyOperationErased(Operation *op) override { ops.insert(op); }
  DenseSet<Operation *> ops;
};

} // namespace

void mlir::norm::populateNormRaisePatterns(RewritePatternSet &patterns,
                                           const RaiseOptions &options) {
  patterns.add<RaisePattern<raiseForwardAt>>(patterns.getContext(), options);
  patterns.add<RaisePattern<raiseGradAt>>(patterns.getContext(), options);
}

namespace {
struct RaisePass : public norm::impl::NormRaiseBase<RaisePass> {
  using Base::Base;

  void runOnOperation() override {
    int64_t before = 0;
    DenseSet<Operation *> existing;
    getOperation().walk([&](Operation *op) {
      before += isa<NormDialect>(op->getDialect());
      existing.insert(op);
    });
    RaiseOptions options;
    options.f32Accumulation = f32Accumulation;
    // Forward ops first: a backward in the same function then reads the
    // forward's statistics as leaves. Within each, later ops first: the
    // largest expression is tried before its parts (a part of a backward
    // can be a backward of other values, and would break the whole).
    ErasedOps erased;
    IRRewriter rewriter(&getContext(), &erased);
    // Backward: dx candidates before dweight ones (a dx match takes its
    // dweight and dbias along; a dweight alone is ambiguous between
    // LayerNorm and RMSNorm of centred x).
    for (int phase : {0, 1, 2}) {
      bool grad = phase > 0;
      SmallVector<Operation *> ops;
      getOperation().walk([&](Operation *op) {
        Value r = candidate(op);
        if (r && (phase != 1 || cast<ShapedType>(r.getType()).getRank() > 1))
          ops.push_back(op);
      });
      for (Operation *op : llvm::reverse(ops)) {
        if (erased.ops.contains(op))
          continue;
        rewriter.setInsertionPoint(op);
        Why why;
        (void)(grad ? raiseGradAt(op, rewriter, options, why)
                    : raiseForwardAt(op, rewriter, options, why));
      }
    }
    // What the rewrites made and nothing came to use (a reshape of a
    // statistic whose only reader was raised later).
    for (bool erased = true; erased;) {
      erased = false;
      SmallVector<Operation *> dead;
      getOperation().walk([&](Operation *op) {
        if (!existing.contains(op) && op->getNumResults() > 0 &&
            op->use_empty() && isPure(op) &&
            !isa<NormDialect>(op->getDialect()))
          dead.push_back(op);
      });
      for (Operation *op : dead)
        op->erase();
      erased = !dead.empty();
    }
    int64_t raised = 0;
    getOperation().walk(
        [&](Operation *op) { raised += isa<NormDialect>(op->getDialect()); });
    numRaised = raised - before;
    if (reportNearMisses)
      reportLeft();
  }

  /// One remark per expression left that ends in a [rows, N] or [N] result
  /// computed through a reduction: why neither matcher took it.
  void reportLeft() {
    getOperation().walk([&](linalg::LinalgOp op) {
      Value root = candidate(op.getOperation());
      if (!root || !endsExpression(root))
        return;
      FailureOr<Slice> slice = collectSlice(root);
      if (failed(slice) || slice->reductionTypes.empty())
        return;
      RaiseOptions options;
      Why fwd, bwd;
      FailureOr<Match> f = failure();
      if (cast<ShapedType>(root.getType()).getRank() >= 2) {
        f = matchForward(root, fwd);
        if (succeeded(f))
          (void)checkTypes(*f, options, fwd);
      } else {
        fwd.text = "not a [rows, N] result";
      }
      FailureOr<Match> b = matchGrad(root, bwd);
      if (succeeded(b)) {
        findGradSiblings(*b, root);
        (void)checkTypes(*b, options, bwd);
      }
      op->emitRemark() << "norm-raise: not raised: as a forward: " << fwd.text
                       << "; as a backward: " << bwd.text;
    });
  }
};
} // namespace
