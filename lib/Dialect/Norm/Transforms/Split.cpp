//===- Split.cpp - norm ops -> row loop nests + grouped reduction ---------===//
//
// Part of mlir-norm.
//
// The faithful lowering: every intermediate is materialised and computed in
// the storage type, exactly as the formulas read. Later passes
// (norm-recompute-loops, norm-promote, norm-fuse-partials, norm-cache-rows)
// turn it into the fast form; each of them finds its work by the tags of
// norm/Dialect/Norm/IR/StageContract.h.
//
// One conversion pattern per op kind (populateNormSplitPatterns); the pass
// applies them with the norm dialect illegal, so "no norm op is left" holds
// by construction. Whether an op can be lowered (buffer form, [rows, N]
// views) is decided in one place, whyNotSplittable: the pass reports it as
// an error on the op, a pattern as its match-failure reason.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"
#include "norm/Dialect/Norm/IR/NormOps.h"
#include "norm/Dialect/Norm/IR/StageContract.h"
#include "norm/Dialect/Norm/Transforms/Groups.h"
#include "norm/Dialect/Norm/Transforms/Passes.h"
#include "norm/Dialect/Norm/Transforms/Transforms.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/ADT/TypeSwitch.h"

#include <memory>

namespace mlir::norm {
#define GEN_PASS_DEF_NORMSPLIT
#include "norm/Dialect/Norm/Transforms/Passes.h.inc"
} // namespace mlir::norm

using namespace mlir;
using namespace mlir::norm;

namespace {

template <typename OpT> constexpr bool isLayerNorm() {
  return std::is_same_v<OpT, LayerNormOp> ||
         std::is_same_v<OpT, LayerNormGradOp>;
}

template <typename OpT> constexpr bool isGrad() {
  return std::is_same_v<OpT, LayerNormGradOp> ||
         std::is_same_v<OpT, RMSNormGradOp>;
}

/// The reassociation that views a rank >= 2 buffer as [rows, N].
SmallVector<ReassociationIndices> rowsReassociation(int64_t rank) {
  ReassociationIndices rows;
  for (int64_t d = 0; d + 1 < rank; ++d)
    rows.push_back(d);
  return {rows, {rank - 1}};
}

/// The reassociation that views a buffer as [rows].
SmallVector<ReassociationIndices> flatReassociation(int64_t rank) {
  ReassociationIndices all;
  for (int64_t d = 0; d < rank; ++d)
    all.push_back(d);
  return {all};
}

/// A rank-2 [rows, N] view of a rank >= 2 buffer (whyNotSplittable has
/// checked that it exists).
Value asRows(ImplicitLocOpBuilder &b, Value v) {
  int64_t rank = cast<MemRefType>(v.getType()).getRank();
  if (rank == 2)
    return v;
  return memref::CollapseShapeOp::create(b, v, rowsReassociation(rank));
}

/// A rank-1 [rows] view of a statistics buffer (checked, as above).
Value asFlat(ImplicitLocOpBuilder &b, Value v) {
  int64_t rank = cast<MemRefType>(v.getType()).getRank();
  if (rank == 1)
    return v;
  return memref::CollapseShapeOp::create(b, v, flatReassociation(rank));
}

/// Why `v` has no [rows, N] view (`rows`) or no [rows] view, or nothing.
std::optional<std::string> whyNoView(StringRef name, Value v, bool rows) {
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

/// Why norm-split cannot lower `op`, or nothing: it lowers the buffer form,
/// with every buffer viewable as [rows, N] (activations) or [rows]
/// (statistics).
template <typename OpT> std::optional<std::string> whyNotSplittable(OpT op) {
  if (!op.isBufferForm())
    return std::string("norm-split lowers the buffer form; bufferize first "
                       "(one-shot-bufferize, or the norm-lower-to-loops "
                       "pipeline)");
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
  }
  for (auto [name, v, rows] : views)
    if (v)
      if (std::optional<std::string> why = whyNoView(name, v, rows))
        return why;
  return std::nullopt;
}

/// The storage (element) type of a buffer-form op: its activation's.
FloatType storageType(Value activation) {
  return cast<FloatType>(
      cast<MemRefType>(activation.getType()).getElementType());
}

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

/// Lowers a grad op that whyNotSplittable accepts, at the builder's place,
/// tagging its nests with `id`; the op itself stays (the caller erases it).
template <typename OpT>
void lowerGrad(OpT op, const SplitOptions &options, int64_t id,
               ImplicitLocOpBuilder &b) {
  constexpr bool kLayer = isLayerNorm<OpT>();
  FloatType acc = op.getAccumulationElementType();
  Emitter e(b, storageType(op.getInput()), acc);

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
        Value v =
            arith::MulFOp::create(b, e.load(dy, {i, j}), effectiveWeight(j));
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
          Value sumGX = arith::AddFOp::create(b, carried[1],
                                              arith::MulFOp::create(b, gv, hv));
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
      e.store(out, dx, {r, j});
    });
  });
  setStage(dxNest, Stage::Dx, id, acc);
  if (wantDw || wantDb)
    setNestStrategy(dxNest, strategy);

  for (Value v : llvm::concat<Value>(workspaces, scratch))
    memref::DeallocOp::create(b, v);
}

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

/// Lowers a forward op that whyNotSplittable accepts, as lowerGrad does.
template <typename OpT>
void lowerForward(OpT op, int64_t id, ImplicitLocOpBuilder &b) {
  constexpr bool kLayer = isLayerNorm<OpT>();
  FloatType acc = op.getAccumulationElementType();
  Emitter e(b, storageType(op.getX()), acc);

  Value x = asRows(b, op.getX());
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
    Value mu;
    Value sq;
    if (kLayer) {
      scf::ForOp s = e.reduction(zero, n, {z}, [&](Value j, ValueRange c) {
        return SmallVector<Value>{
            arith::AddFOp::create(b, c[0], e.load(x, {r, j}))};
      });
      mu = arith::DivFOp::create(b, s.getResult(0), nf);
    }
    // Two-pass variance: sum((x - mean)^2), RMSNorm: sum(x^2).
    scf::ForOp s = e.reduction(zero, n, {z}, [&](Value j, ValueRange c) {
      Value v = e.load(x, {r, j});
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
    e.store(e.convert(rs, f32), rstdOut, {r});
    e.loop(zero, n, [&](Value j) {
      Value v = e.load(x, {r, j});
      if (mu)
        v = arith::SubFOp::create(b, v, mu);
      Value h = arith::MulFOp::create(b, v, rs);
      if (xhatOut)
        e.store(
            e.convert(h, cast<MemRefType>(xhatOut.getType()).getElementType()),
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
      e.store(out, y, {r, j});
    });
  });
  setStage(nest, Stage::Forward, id, acc);
}

/// Lowers one op kind; `nextId` numbers the lowered ops in the order the
/// conversion visits them (program order), shared by the patterns of one
/// populateNormSplitPatterns call.
template <typename OpT>
struct SplitOpPattern : public OpConversionPattern<OpT> {
  SplitOpPattern(MLIRContext *context, const SplitOptions &options,
                 std::shared_ptr<int64_t> nextId)
      : OpConversionPattern<OpT>(context), options(options),
        nextId(std::move(nextId)) {}

  // Buffer-form ops have no results, so no operand is ever remapped: the
  // op's own accessors read the same values as the adaptor's.
  LogicalResult
  matchAndRewrite(OpT op, typename OpT::Adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (std::optional<std::string> why = whyNotSplittable(op))
      return rewriter.notifyMatchFailure(op, *why);
    // A copy of the rewriter's builder keeps its listener: the conversion
    // sees every op the lowering creates.
    ImplicitLocOpBuilder b(op.getLoc(), static_cast<OpBuilder &>(rewriter));
    b.setInsertionPoint(op);
    int64_t id = (*nextId)++;
    if constexpr (isGrad<OpT>())
      lowerGrad(op, options, id, b);
    else
      lowerForward(op, id, b);
    rewriter.eraseOp(op);
    return success();
  }

private:
  SplitOptions options;
  std::shared_ptr<int64_t> nextId;
};

struct SplitPass : public norm::impl::NormSplitBase<SplitPass> {
  using Base::Base;

  void runOnOperation() override {
    if (groups < 0) {
      getOperation().emitError()
          << "norm-split: groups must be >= 0, got " << groups;
      return signalPassFailure();
    }

    // What the patterns would only report as a match failure (and the
    // conversion as "failed to legalize") is an error on the op here.
    bool unsplittable = false;
    getOperation().walk([&](Operation *op) {
      std::optional<std::string> why =
          TypeSwitch<Operation *, std::optional<std::string>>(op)
              .Case<LayerNormGradOp, RMSNormGradOp>([&](auto grad) {
                ++numGradOps;
                return whyNotSplittable(grad);
              })
              .Case<LayerNormOp, RMSNormOp>([&](auto fwd) {
                ++numForwardOps;
                return whyNotSplittable(fwd);
              })
              .Default([](Operation *) { return std::nullopt; });
      if (why) {
        op->emitOpError() << *why;
        unsplittable = true;
      }
    });
    if (unsplittable)
      return signalPassFailure();

    RewritePatternSet patterns(&getContext());
    populateNormSplitPatterns(
        patterns, SplitOptions{groups, toReductionStrategy(strategy)});
    // The post-condition, by construction: no norm op is left, or the
    // conversion fails naming the op it could not lower.
    ConversionTarget target(getContext());
    target.addIllegalDialect<NormDialect>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

void mlir::norm::populateNormSplitPatterns(RewritePatternSet &patterns,
                                           const SplitOptions &options) {
  auto nextId = std::make_shared<int64_t>(0);
  patterns.add<SplitOpPattern<LayerNormGradOp>, SplitOpPattern<RMSNormGradOp>,
               SplitOpPattern<LayerNormOp>, SplitOpPattern<RMSNormOp>>(
      patterns.getContext(), options, nextId);
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
