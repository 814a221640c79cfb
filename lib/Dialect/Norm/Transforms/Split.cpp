//===- Split.cpp - norm ops -> row loop nests + grouped reduction ---------===//
//
// Part of mlir-norm.
//
// The faithful lowering: every intermediate is materialised and computed in
// the storage type, exactly as the formulas read. Later passes
// (norm-recompute, norm-promote, norm-fuse-partials) turn it into the fast
// form; each of them finds its work by the tags of
// norm/Dialect/Norm/IR/StageContract.h.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"
#include "norm/Dialect/Norm/IR/NormOps.h"
#include "norm/Dialect/Norm/IR/StageContract.h"
#include "norm/Dialect/Norm/Transforms/Groups.h"
#include "norm/Dialect/Norm/Transforms/Passes.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir::norm {
#define GEN_PASS_DEF_NORMSPLIT
#include "norm/Dialect/Norm/Transforms/Passes.h.inc"
} // namespace mlir::norm

using namespace mlir;
using namespace mlir::norm;

namespace {

/// What the pass options say, resolved.
struct SplitConfig {
  int64_t groups = 0;
  std::optional<ReductionStrategy> strategy;
};

template <typename OpT>
constexpr bool isLayerNorm() {
  return std::is_same_v<OpT, LayerNormOp> ||
         std::is_same_v<OpT, LayerNormGradOp>;
}

/// A rank-2 [rows, N] view of a rank >= 2 buffer.
FailureOr<Value> asRows(ImplicitLocOpBuilder &b, Operation *op,
                        StringRef name, Value v) {
  auto type = cast<MemRefType>(v.getType());
  int64_t rank = type.getRank();
  if (rank == 2)
    return v;
  ReassociationIndices rows;
  for (int64_t d = 0; d + 1 < rank; ++d)
    rows.push_back(d);
  SmallVector<ReassociationIndices> re = {rows, {rank - 1}};
  if (!memref::CollapseShapeOp::isGuaranteedCollapsible(type, re))
    return op->emitOpError()
           << "cannot view '" << name << "' " << type
           << " as [rows, N]: its leading dims are not contiguous; pass a "
              "rank-2 buffer";
  return memref::CollapseShapeOp::create(b, v, re).getResult();
}

/// A rank-1 [rows] view of a statistics buffer.
FailureOr<Value> asFlat(ImplicitLocOpBuilder &b, Operation *op, StringRef name,
                        Value v) {
  auto type = cast<MemRefType>(v.getType());
  if (type.getRank() == 1)
    return v;
  ReassociationIndices all;
  for (int64_t d = 0; d < type.getRank(); ++d)
    all.push_back(d);
  SmallVector<ReassociationIndices> re = {all};
  if (!memref::CollapseShapeOp::isGuaranteedCollapsible(type, re))
    return op->emitOpError() << "cannot view '" << name << "' " << type
                             << " as [rows]: it is not contiguous";
  return memref::CollapseShapeOp::create(b, v, re).getResult();
}

/// The storage (element) type of a buffer-form op's reference activation;
/// an error for the value form.
template <typename OpT>
FailureOr<FloatType> bufferFormStorage(OpT op, Value reference) {
  if (!op.isBufferForm())
    return op.emitOpError()
           << "norm-split lowers the buffer form; bufferize first "
              "(one-shot-bufferize, or the norm-lower-to-loops pipeline)";
  return cast<FloatType>(cast<MemRefType>(reference.getType()).getElementType());
}

/// A [rows, N] scratch buffer of the storage type, tagged recomputable.
Value allocRecomputable(Emitter &e, OpFoldResult m, OpFoldResult n) {
  auto alloc = memref::AllocOp::create(e.b, ArrayRef<OpFoldResult>{m, n},
                                       e.storage);
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

//===----------------------------------------------------------------------===//
// Backward
//===----------------------------------------------------------------------===//

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
          Value old = memref::AtomicRMWOp::create(
              nb, loc, arith::AtomicRMWKind::assign, one, locks,
              ValueRange{row});
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

template <typename OpT>
LogicalResult lowerGrad(OpT op, const SplitConfig &config, int64_t id) {
  ImplicitLocOpBuilder b(op.getLoc(), op);
  FailureOr<FloatType> storage = bufferFormStorage(op, op.getInput());
  if (failed(storage))
    return failure();
  constexpr bool kLayer = isLayerNorm<OpT>();
  FloatType acc = op.getAccumulationElementType();
  Emitter e(b, *storage, acc);

  FailureOr<Value> in = asRows(b, op, op.getX() ? "x" : "xhat", op.getInput());
  if (failed(in))
    return failure();
  FailureOr<Value> dy = asRows(b, op, "dy", op.getDy());
  if (failed(dy))
    return failure();
  FailureOr<Value> dx = asRows(b, op, "dx", op.getDxOut());
  if (failed(dx))
    return failure();
  FailureOr<Value> rstd = asFlat(b, op, "rstd", op.getRstd());
  if (failed(rstd))
    return failure();
  Value dres, mean;
  if (op.getDresidual()) {
    FailureOr<Value> v = asRows(b, op, "dresidual", op.getDresidual());
    if (failed(v))
      return failure();
    dres = *v;
  }
  if constexpr (kLayer) {
    if (op.getMean()) {
      FailureOr<Value> v = asFlat(b, op, "mean", op.getMean());
      if (failed(v))
        return failure();
      mean = *v;
    }
  }
  Value weight = op.getWeight();
  Value dwOut = op.getDweightOut();
  Value dbOut;
  if constexpr (kLayer)
    dbOut = op.getDbiasOut();

  OpFoldResult mOfr = memref::getMixedSize(b, b.getLoc(), *in, 0);
  OpFoldResult nOfr = memref::getMixedSize(b, b.getLoc(), *in, 1);
  Value m = getValueOrCreateConstantIndexOp(b, b.getLoc(), mOfr);
  Value n = getValueOrCreateConstantIndexOp(b, b.getLoc(), nOfr);
  Value zero = e.index(0);

  SmallVector<Value> scratch;

  // 1. xhat, materialised (unless the op was given a stored one).
  Value xhat = *in;
  if (op.getX()) {
    xhat = allocRecomputable(e, mOfr, nOfr);
    scratch.push_back(xhat);
    scf::ForOp nest = e.loop(zero, m, [&](Value i) {
      Value r = e.convert(e.load(*rstd, {i}), e.storage);
      Value mu = mean ? e.convert(e.load(mean, {i}), e.storage) : Value();
      e.loop(zero, n, [&](Value j) {
        Value v = e.load(*in, {i, j});
        if (mu)
          v = arith::SubFOp::create(b, v, mu);
        e.store(arith::MulFOp::create(b, v, r), xhat, {i, j});
      });
    });
    setStage(nest, Stage::Xhat, id, acc);
  }

  // 2. g = dy * w (w + 1 when zero-centred), materialised.
  Value g = *dy;
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
        Value v = arith::MulFOp::create(b, e.load(*dy, {i, j}),
                                        effectiveWeight(j));
        e.store(v, g, {i, j});
      });
    });
    setStage(nest, Stage::G, id, acc);
  }

  // 3. Programs and partial rows.
  ReductionStrategy strategy = config.strategy.value_or(op.getStrategy());
  Value groups;
  if (int64_t fixed = op.getGroupsOrZero())
    groups = e.index(fixed);
  else if (config.groups > 0)
    groups = e.index(config.groups);
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
          b, ArrayRef<OpFoldResult>{getAsOpFoldResult(scheme.workspaceRows), nOfr},
          acc);
      workspaces.push_back(ws);
      return ws;
    };
    Value wsDw = wantDw ? newWorkspace() : Value();
    Value wsDb = wantDb ? newWorkspace() : Value();
    if (strategy == ReductionStrategy::Locked) {
      scheme.locks = memref::AllocOp::create(
          b, ArrayRef<OpFoldResult>{getAsOpFoldResult(scheme.workspaceRows)},
          b.getI32Type());
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
        Value dyv = e.load(*dy, {r, j});
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
          zero, scheme.workspaceRows, inits,
          [&](Value w, ValueRange carried) {
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
    Value rs = e.convert(e.load(*rstd, {r}), e.storage);
    Value z = e.storageConstant(0.0);
    scf::ForOp sums =
        e.reduction(zero, n, {z, z}, [&](Value j, ValueRange carried) {
          Value gv = e.load(g, {r, j});
          Value hv = e.load(xhat, {r, j});
          Value sumG = kLayer ? Value(arith::AddFOp::create(b, carried[0], gv))
                              : carried[0];
          Value sumGX = arith::AddFOp::create(
              b, carried[1], arith::MulFOp::create(b, gv, hv));
          return SmallVector<Value>{sumG, sumGX};
        });
    Value meanG = arith::DivFOp::create(b, sums.getResult(0), nf);
    Value meanGX = arith::DivFOp::create(b, sums.getResult(1), nf);
    e.loop(zero, n, [&](Value j) {
      Value gv = e.load(g, {r, j});
      Value hv = e.load(xhat, {r, j});
      Value d = kLayer ? Value(arith::SubFOp::create(b, gv, meanG)) : gv;
      d = arith::SubFOp::create(b, d, arith::MulFOp::create(b, hv, meanGX));
      Value out = arith::MulFOp::create(b, rs, d);
      if (dres)
        out = arith::AddFOp::create(b, out, e.load(dres, {r, j}));
      e.store(out, *dx, {r, j});
    });
  });
  setStage(dxNest, Stage::Dx, id, acc);
  if (wantDw || wantDb)
    setNestStrategy(dxNest, strategy);

  for (Value v : llvm::concat<Value>(workspaces, scratch))
    memref::DeallocOp::create(b, v);
  op.erase();
  return success();
}

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

template <typename OpT>
LogicalResult lowerForward(OpT op, int64_t id) {
  ImplicitLocOpBuilder b(op.getLoc(), op);
  FailureOr<FloatType> storage = bufferFormStorage(op, op.getX());
  if (failed(storage))
    return failure();
  constexpr bool kLayer = isLayerNorm<OpT>();
  FloatType acc = op.getAccumulationElementType();
  Emitter e(b, *storage, acc);

  FailureOr<Value> x = asRows(b, op, "x", op.getX());
  if (failed(x))
    return failure();
  FailureOr<Value> y = asRows(b, op, "y", op.getYOut());
  if (failed(y))
    return failure();
  FailureOr<Value> rstdOut = asFlat(b, op, "rstd", op.getRstdOut());
  if (failed(rstdOut))
    return failure();
  Value meanOut, xhatOut, bias;
  if constexpr (kLayer) {
    FailureOr<Value> v = asFlat(b, op, "mean", op.getMeanOut());
    if (failed(v))
      return failure();
    meanOut = *v;
    bias = op.getBias();
  }
  if (op.getXhatOut()) {
    FailureOr<Value> v = asRows(b, op, "xhat", op.getXhatOut());
    if (failed(v))
      return failure();
    xhatOut = *v;
  }
  Value weight = op.getWeight();

  Value m = getValueOrCreateConstantIndexOp(
      b, b.getLoc(), memref::getMixedSize(b, b.getLoc(), *x, 0));
  Value n = getValueOrCreateConstantIndexOp(
      b, b.getLoc(), memref::getMixedSize(b, b.getLoc(), *x, 1));
  Value zero = e.index(0);

  scf::ForOp nest = e.loop(zero, m, [&](Value r) {
    // Inside the nest, so that norm-promote sees the exact f32 values.
    Value nf = e.indexToStorage(n);
    Value eps = e.storageConstant(op.getEps().convertToDouble());
    Value z = e.storageConstant(0.0);
    Value mu;
    Value sq;
    if (kLayer) {
      scf::ForOp s = e.reduction(zero, n, {z}, [&](Value j, ValueRange c) {
        return SmallVector<Value>{
            arith::AddFOp::create(b, c[0], e.load(*x, {r, j}))};
      });
      mu = arith::DivFOp::create(b, s.getResult(0), nf);
    }
    // Two-pass variance: sum((x - mean)^2), RMSNorm: sum(x^2).
    scf::ForOp s = e.reduction(zero, n, {z}, [&](Value j, ValueRange c) {
      Value v = e.load(*x, {r, j});
      if (mu)
        v = arith::SubFOp::create(b, v, mu);
      return SmallVector<Value>{
          arith::AddFOp::create(b, c[0], arith::MulFOp::create(b, v, v))};
    });
    sq = arith::DivFOp::create(b, s.getResult(0), nf);
    Value rs = math::RsqrtOp::create(b, arith::AddFOp::create(b, sq, eps));
    Type f32 = b.getF32Type();
    if (meanOut)
      e.store(e.convert(mu, f32), meanOut, {r});
    e.store(e.convert(rs, f32), *rstdOut, {r});
    e.loop(zero, n, [&](Value j) {
      Value v = e.load(*x, {r, j});
      if (mu)
        v = arith::SubFOp::create(b, v, mu);
      Value h = arith::MulFOp::create(b, v, rs);
      if (xhatOut)
        e.store(e.convert(h, cast<MemRefType>(xhatOut.getType()).getElementType()),
                xhatOut, {r, j});
      Value out = h;
      if (weight) {
        Value w = e.convert(e.load(weight, {j}), e.storage);
        if (op.getZeroCenteredWeight())
          w = arith::AddFOp::create(b, w, e.storageConstant(1.0));
        out = arith::MulFOp::create(b, out, w);
      }
      if (bias)
        out = arith::AddFOp::create(b, out,
                                    e.convert(e.load(bias, {j}), e.storage));
      e.store(out, *y, {r, j});
    });
  });
  setStage(nest, Stage::Forward, id, acc);
  op.erase();
  return success();
}

struct SplitPass : public norm::impl::NormSplitBase<SplitPass> {
  using Base::Base;

  void runOnOperation() override {
    SplitConfig config;
    config.groups = groups;
    if (!strategy.empty()) {
      config.strategy = symbolizeReductionStrategy(strategy);
      if (!config.strategy) {
        getOperation().emitError()
            << "norm-split: unknown strategy '" << strategy
            << "' (expected deterministic, grouped_atomic, atomic or locked)";
        return signalPassFailure();
      }
    }
    if (groups < 0) {
      getOperation().emitError() << "norm-split: groups must be >= 0, got "
                                 << groups;
      return signalPassFailure();
    }

    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (isa<LayerNormOp, RMSNormOp, LayerNormGradOp, RMSNormGradOp>(op))
        ops.push_back(op);
    });
    int64_t id = 0;
    for (Operation *op : ops) {
      LogicalResult result =
          TypeSwitch<Operation *, LogicalResult>(op)
              .Case<LayerNormGradOp, RMSNormGradOp>([&](auto grad) {
                ++numGradOps;
                return lowerGrad(grad, config, id);
              })
              .Case<LayerNormOp, RMSNormOp>([&](auto fwd) {
                ++numForwardOps;
                return lowerForward(fwd, id);
              });
      if (failed(result))
        return signalPassFailure();
      ++id;
    }
  }
};

} // namespace
