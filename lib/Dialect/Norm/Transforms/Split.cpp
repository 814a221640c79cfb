//===- Split.cpp - grad ops -> row loop nests + grouped reduction ---------===//
//
// Part of mlir-norm.
//
// norm-split: the faithful lowering of the backward ops. Every intermediate
// is materialised and computed in the storage type, exactly as the formulas
// read; the per-row dx nest is split from the grouped dweight/dbias
// reduction. Later passes (norm-recompute-loops, norm-promote,
// norm-fuse-partials, norm-cache-rows) turn it into the fast form; each of
// them finds its work by the tags of norm/Dialect/Norm/IR/StageContract.h.
// The forward ops are norm-lower-forward's (LowerForward.cpp).
//
// One conversion pattern per grad op kind (populateNormSplitPatterns); the
// pass applies them with the grad ops illegal, so "no grad op is left" holds
// by construction. Whether an op can be lowered is decided in one place,
// whyNotLowerable (LoweringUtils.h).
//
//===----------------------------------------------------------------------===//

#include "LoweringUtils.h"
#include "norm/Dialect/Norm/Transforms/Groups.h"
#include "norm/Dialect/Norm/Transforms/Passes.h"
#include "norm/Dialect/Norm/Transforms/Transforms.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

namespace mlir::norm {
#define GEN_PASS_DEF_NORMSPLIT
#include "norm/Dialect/Norm/Transforms/Passes.h.inc"
} // namespace mlir::norm

using namespace mlir;
using namespace mlir::norm;

namespace {

/// A [rows, N] scratch buffer of the storage type, tagged recomputable.
Value allocRecomputable(Emitter &e, OpFoldResult m, OpFoldResult n) {
  auto alloc =
      memref::AllocOp::create(e.b, ArrayRef<OpFoldResult>{m, n}, e.storage);
  setRecomputable(alloc);
  return alloc;
}

/// The programs of the row loops: `numPrograms` contiguous blocks of
/// `rowsPerProgram` rows.
struct Programs {
  Value count;
  Value rowsPerProgram;
  Value numRows;

  /// `for p in programs: for r in block(p): body(p, r)`; returns the
  /// outer loop.
  scf::ForOp forEachRow(Emitter &e,
                        function_ref<void(Value p, Value r)> body) const {
    return e.loop(e.index(0), count, [&](Value p) {
      Value lo = arith::MulIOp::create(e.b, p, rowsPerProgram);
      Value end = arith::AddIOp::create(e.b, lo, rowsPerProgram);
      Value hi = arith::MinUIOp::create(e.b, end, numRows);
      e.loop(lo, hi, [&](Value r) { body(p, r); });
    });
  }
};

/// How the partial rows of one strategy are addressed and updated.
struct PartialScheme {
  ReductionStrategy strategy;
  Value workspaceRows; // W: rows of each [W, N] workspace
  Value locks;         // [W] i32, `locked` only

  /// The workspace row that row `r` of program `p` adds into.
  Value target(Emitter &e, Value p, Value r) const {
    switch (strategy) {
    case ReductionStrategy::Deterministic:
      return p;
    case ReductionStrategy::GroupedAtomic:
    case ReductionStrategy::Locked:
      return arith::RemUIOp::create(e.b, r, workspaceRows);
    case ReductionStrategy::Atomic:
      return e.index(0);
    }
    llvm_unreachable("unknown strategy");
  }

  void add(Emitter &e, Value v, Value ws, Value row, Value col) const {
    if (strategy == ReductionStrategy::GroupedAtomic ||
        strategy == ReductionStrategy::Atomic) {
      memref::AtomicRMWOp::create(e.b, arith::AtomicRMWKind::addf, v, ws,
                                  ValueRange{row, col});
      return;
    }
    Value old = e.load(ws, {row, col});
    e.store(arith::AddFOp::create(e.b, old, v), ws, {row, col});
  }

  /// Spin until the lock of `row` is ours (atomic exchange 1 -> lock).
  void acquire(Emitter &e, Value row) const {
    if (strategy != ReductionStrategy::Locked)
      return;
    scf::WhileOp::create(
        e.b, TypeRange{}, ValueRange{},
        [&](OpBuilder &nb, Location loc, ValueRange) {
          Value one = arith::ConstantIntOp::create(nb, loc, 1, 32);
          Value old =
              memref::AtomicRMWOp::create(nb, loc, arith::AtomicRMWKind::assign,
                                          one, locks, ValueRange{row});
          Value busy = arith::CmpIOp::create(nb, loc, arith::CmpIPredicate::eq,
                                             old, one);
          scf::ConditionOp::create(nb, loc, busy, ValueRange{});
        },
        [&](OpBuilder &nb, Location loc, ValueRange) {
          scf::YieldOp::create(nb, loc);
        });
  }

  void release(Emitter &e, Value row) const {
    if (strategy != ReductionStrategy::Locked)
      return;
    Value zero = arith::ConstantIntOp::create(e.b, 0, 32);
    memref::AtomicRMWOp::create(e.b, arith::AtomicRMWKind::assign, zero, locks,
                                ValueRange{row});
  }
};

/// Lowers a grad op that whyNotLowerable accepts, at the builder's place,
/// tagging its nests with `id`; the op itself stays (the caller erases it).
template <typename OpT>
void lowerGrad(OpT op, const SplitOptions &options, int64_t id,
               ImplicitLocOpBuilder &b) {
  constexpr bool kLayer = isLayerNorm<OpT>();
  Emitter e = emitterFor(op, b);
  FloatType acc = e.acc;

  Value in = asRows(b, op.getInput());
  Value dy = asRows(b, op.getDy());
  Value dx = asRows(b, op.getDxOut());
  Value rstd = asFlat(b, op.getRstd());
  Value dres, mean;
  if (op.getDresidual())
    dres = asRows(b, op.getDresidual());
  if constexpr (kLayer) {
    if (op.getMean())
      mean = asFlat(b, op.getMean());
  }
  Value weight = op.getWeight();
  Value dwOut = op.getDweightOut();
  Value dbOut;
  if constexpr (kLayer)
    dbOut = op.getDbiasOut();

  OpFoldResult mOfr = memref::getMixedSize(b, b.getLoc(), in, 0);
  OpFoldResult nOfr = memref::getMixedSize(b, b.getLoc(), in, 1);
  Value m = getValueOrCreateConstantIndexOp(b, b.getLoc(), mOfr);
  Value n = getValueOrCreateConstantIndexOp(b, b.getLoc(), nOfr);
  Value zero = e.index(0);

  SmallVector<Value> scratch;

  // 1. xhat, materialised (unless the op was given a stored one).
  Value xhat = in;
  if (op.getX()) {
    xhat = allocRecomputable(e, mOfr, nOfr);
    scratch.push_back(xhat);
    scf::ForOp nest = e.loop(zero, m, [&](Value i) {
      Value r = e.convert(e.load(rstd, {i}), e.storage);
      Value mu = mean ? e.convert(e.load(mean, {i}), e.storage) : Value();
      e.loop(zero, n, [&](Value j) {
        Value v = e.load(in, {i, j});
        if (mu)
          v = arith::SubFOp::create(b, v, mu);
        e.store(arith::MulFOp::create(b, v, r), xhat, {i, j});
      });
    });
    setStage(nest, Stage::Xhat, id, acc);
  }

  // 2. g = dy * w (w + 1 when zero-centred), materialised.
  Value g = dy;
  auto effectiveWeight = [&](Value j) {
    Value w = e.convert(e.load(weight, {j}), e.storage);
    if (op.getZeroCenteredWeight())
      w = arith::AddFOp::create(b, w, e.storageConstant(1.0));
    return w;
  };
  if (weight) {
    g = allocRecomputable(e, mOfr, nOfr);
    scratch.push_back(g);
    scf::ForOp nest = e.loop(zero, m, [&](Value i) {
      e.loop(zero, n, [&](Value j) {
        // One statement per op: the order of evaluation of call arguments
        // is the host compiler's, and the IR must not depend on it.
        Value wv = effectiveWeight(j);
        Value v = arith::MulFOp::create(b, e.load(dy, {i, j}), wv);
        e.store(v, g, {i, j});
      });
    });
    setStage(nest, Stage::G, id, acc);
  }

  // 3. Programs and partial rows.
  ReductionStrategy strategy = options.strategy.value_or(op.getStrategy());
  Value groups;
  if (int64_t fixed = op.getGroupsOrZero())
    groups = e.index(fixed);
  else if (options.groups > 0)
    groups = e.index(options.groups);
  else
    groups = emitDefaultGroups(b, b.getLoc(), m, n);
  Programs programs{groups, arith::CeilDivUIOp::create(b, m, groups), m};

  SmallVector<Value> workspaces;
  bool wantDw = static_cast<bool>(dwOut), wantDb = static_cast<bool>(dbOut);
  if (wantDw || wantDb) {
    PartialScheme scheme{strategy, groups, Value()};
    if (strategy == ReductionStrategy::Atomic)
      scheme.workspaceRows = e.index(1);
    auto newWorkspace = [&]() {
      Value ws = memref::AllocOp::create(
          b,
          ArrayRef<OpFoldResult>{getAsOpFoldResult(scheme.workspaceRows), nOfr},
          acc);
      setWorkspace(ws.getDefiningOp());
      workspaces.push_back(ws);
      return ws;
    };
    Value wsDw = wantDw ? newWorkspace() : Value();
    Value wsDb = wantDb ? newWorkspace() : Value();
    if (strategy == ReductionStrategy::Locked) {
      scheme.locks = memref::AllocOp::create(
          b, ArrayRef<OpFoldResult>{getAsOpFoldResult(scheme.workspaceRows)},
          b.getI32Type());
      setWorkspace(scheme.locks.getDefiningOp());
      workspaces.push_back(scheme.locks);
    }

    // Zero the partial rows (and the locks).
    scf::ForOp zeroNest = e.loop(zero, scheme.workspaceRows, [&](Value w) {
      if (scheme.locks)
        e.store(arith::ConstantIntOp::create(b, 0, 32), scheme.locks, {w});
      e.loop(zero, n, [&](Value j) {
        Value z = arith::ConstantOp::create(b, acc, b.getFloatAttr(acc, 0.0));
        for (Value ws : {wsDw, wsDb})
          if (ws)
            e.store(z, ws, {w, j});
      });
    });
    setStage(zeroNest, Stage::Zero, id, acc);
    setNestStrategy(zeroNest, strategy);

    // The partial sums, program by program, row by row.
    scf::ForOp partials = programs.forEachRow(e, [&](Value p, Value r) {
      Value t = scheme.target(e, p, r);
      scheme.acquire(e, t);
      e.loop(zero, n, [&](Value j) {
        Value dyv = e.load(dy, {r, j});
        if (wsDw) {
          Value prod = arith::MulFOp::create(b, dyv, e.load(xhat, {r, j}));
          scheme.add(e, e.convert(prod, acc), wsDw, t, j);
        }
        if (wsDb)
          scheme.add(e, e.convert(dyv, acc), wsDb, t, j);
      });
      scheme.release(e, t);
    });
    setStage(partials, Stage::Partials, id, acc);
    setNestStrategy(partials, strategy);

    // The fixed-order reduce over the partial rows.
    scf::ForOp reduce = e.loop(zero, n, [&](Value j) {
      SmallVector<Value> sources, outs;
      for (auto [ws, out] : {std::pair{wsDw, dwOut}, std::pair{wsDb, dbOut}})
        if (ws) {
          sources.push_back(ws);
          outs.push_back(out);
        }
      Value z = arith::ConstantOp::create(b, acc, b.getFloatAttr(acc, 0.0));
      SmallVector<Value> inits(sources.size(), z);
      scf::ForOp sum = e.reduction(
          zero, scheme.workspaceRows, inits, [&](Value w, ValueRange carried) {
            SmallVector<Value> next;
            for (auto [ws, c] : llvm::zip(sources, carried))
              next.push_back(arith::AddFOp::create(b, c, e.load(ws, {w, j})));
            return next;
          });
      for (auto [s, out] : llvm::zip(sum.getResults(), outs))
        e.store(e.convert(s, cast<MemRefType>(out.getType()).getElementType()),
                out, {j});
    });
    setStage(reduce, Stage::Reduce, id, acc);
    setNestStrategy(reduce, strategy);
  }

  // 4. dx, program by program, row by row: two in-row sums, then the row.
  scf::ForOp dxNest = programs.forEachRow(e, [&](Value, Value r) {
    Value nf = e.indexToStorage(n);
    Value rs = e.convert(e.load(rstd, {r}), e.storage);
    Value z = e.storageConstant(0.0);
    scf::ForOp sums =
        e.reduction(zero, n, {z, z}, [&](Value j, ValueRange carried) {
          Value gv = e.load(g, {r, j});
          Value hv = e.load(xhat, {r, j});
          Value sumG = kLayer ? Value(arith::AddFOp::create(b, carried[0], gv))
                              : carried[0];
          Value sumGX = math::FmaOp::create(b, gv, hv, carried[1]);
          return SmallVector<Value>{sumG, sumGX};
        });
    Value meanG = arith::DivFOp::create(b, sums.getResult(0), nf);
    Value meanGX = arith::DivFOp::create(b, sums.getResult(1), nf);
    // dx = rstd (g - mean(g) - xhat mean(g xhat)), distributed so that an
    // element costs two fused multiply-adds after g and xhat:
    // fma(rstd, g, fma(xhat, -rstd mean(g xhat), -rstd mean(g))). dx only:
    // the partial rows above keep their own products and sums.
    Value kX = arith::NegFOp::create(b, arith::MulFOp::create(b, rs, meanGX));
    Value kC = kLayer ? Value(arith::NegFOp::create(
                            b, arith::MulFOp::create(b, rs, meanG)))
                      : Value();
    e.loop(zero, n, [&](Value j) {
      Value gv = e.load(g, {r, j});
      Value hv = e.load(xhat, {r, j});
      Value t = kLayer ? Value(math::FmaOp::create(b, hv, kX, kC))
                       : Value(arith::MulFOp::create(b, hv, kX));
      Value out = math::FmaOp::create(b, rs, gv, t);
      if (dres)
        out = arith::AddFOp::create(b, out, e.load(dres, {r, j}));
      e.store(out, dx, {r, j});
    });
  });
  setStage(dxNest, Stage::Dx, id, acc);
  copyGeometry(op, dxNest);
  if (wantDw || wantDb)
    setNestStrategy(dxNest, strategy);

  for (Value v : llvm::concat<Value>(workspaces, scratch))
    memref::DeallocOp::create(b, v);
}

/// Lowers one grad op kind.
template <typename OpT> struct SplitPattern : public OpConversionPattern<OpT> {
  SplitPattern(MLIRContext *context, const SplitOptions &options)
      : OpConversionPattern<OpT>(context), options(options) {}

  LogicalResult
  matchAndRewrite(OpT op, typename OpT::Adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    return lowerToNests(op, rewriter, [&](int64_t id, ImplicitLocOpBuilder &b) {
      lowerGrad(op, options, id, b);
    });
  }

private:
  SplitOptions options;
};

struct SplitPass : public norm::impl::NormSplitBase<SplitPass> {
  using Base::Base;

  void runOnOperation() override {
    if (groups < 0) {
      getOperation().emitError()
          << "norm-split: groups must be >= 0, got "
          << static_cast<int64_t>(groups);
      return signalPassFailure();
    }
    RewritePatternSet patterns(&getContext());
    populateNormSplitPatterns(
        patterns, SplitOptions{groups, toReductionStrategy(strategy)});
    if (failed(lowerAllToNests<LayerNormGradOp, RMSNormGradOp>(
            getOperation(), std::move(patterns), numGradOps)))
      signalPassFailure();
  }
};

} // namespace

void mlir::norm::populateNormSplitPatterns(RewritePatternSet &patterns,
                                           const SplitOptions &options) {
  patterns.add<SplitPattern<LayerNormGradOp>, SplitPattern<RMSNormGradOp>>(
      patterns.getContext(), options);
}

std::optional<ReductionStrategy>
mlir::norm::toReductionStrategy(StrategyOverride choice) {
  switch (choice) {
  case StrategyOverride::Keep:
    return std::nullopt;
  case StrategyOverride::Deterministic:
    return ReductionStrategy::Deterministic;
  case StrategyOverride::GroupedAtomic:
    return ReductionStrategy::GroupedAtomic;
  case StrategyOverride::Atomic:
    return ReductionStrategy::Atomic;
  case StrategyOverride::Locked:
    return ReductionStrategy::Locked;
  }
  llvm_unreachable("unknown strategy override");
}

llvm::cl::ValuesClass mlir::norm::strategyOverrideValues() {
  return llvm::cl::values(
      clEnumValN(StrategyOverride::Keep, "keep", "each op's own strategy"),
      clEnumValN(StrategyOverride::Deterministic, "deterministic",
                 "partial row p per program, fixed-order reduce"),
      clEnumValN(StrategyOverride::GroupedAtomic, "grouped_atomic",
                 "partial row r mod G, atomic adds"),
      clEnumValN(StrategyOverride::Atomic, "atomic",
                 "one partial row, atomic adds"),
      clEnumValN(StrategyOverride::Locked, "locked",
                 "partial row r mod G under a spin lock"));
}
