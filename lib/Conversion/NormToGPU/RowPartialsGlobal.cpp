//===- RowPartialsGlobal.cpp - partial rows in global memory, batched -----===//
//
// Part of mlir-norm.
//
// PartialsHome::Global (looped regime): the program's `deterministic`
// partial rows are updated in place in global memory, each column by the
// one thread that owns it. The block takes its rows in batches of B
// (Geometry::batch): the reduction loops of the B rows share one column
// walk, whose chunk issues the B rows' loads together, reads the thread's
// columns of the partial rows once, adds the B rows' terms in row order and
// writes them back once; their in-row sums meet in one cross-warp step;
// then each row's other column loops, under its own check. So this home
// walks the rows itself (RowWalk) instead of the waves.
//
//===----------------------------------------------------------------------===//

#include "Launch.h"
#include "RowStrategies.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/MapVector.h"

#include <cassert>

using namespace mlir;
using namespace mlir::norm;

namespace {

class GlobalPartials final : public Partials, public RowWalk {
public:
  GlobalPartials(RowContext &ctx, InRowReduction &reduction)
      : ctx(ctx), reduction(reduction) {}

  // Partials.
  void allocate() override;
  RowWalk *rowWalk() override { return this; }
  void beginElement(OpBuilder &rb, Value j, int64_t e,
                    ArrayRef<Value> active) override;
  void endElement(OpBuilder &rb, Value j, int64_t e,
                  ArrayRef<Value> active) override;
  void beginChunk(OpBuilder &rb, Value j0, ArrayRef<Value> active) override;
  void endChunk(OpBuilder &rb, Value j0, ArrayRef<Value> active) override;
  bool load(OpBuilder &rb, memref::LoadOp load, std::optional<int64_t> k,
            int64_t e, IRMapping &m, Value active) override;
  bool store(OpBuilder &rb, memref::StoreOp store, std::optional<int64_t> k,
             int64_t e, IRMapping &m, Value active) override;
  void writeBack() override;

  // RowWalk: the batches of B rows.
  void emitRows(ColumnLoops &loops, Value lo, Value hi) override;

private:
  RowContext &ctx;
  InRowReduction &reduction;
  /// The workspaces of the partial rows, in body order.
  SmallVector<Value> partialWorkspaces;
  /// The running partial sums of the element being emitted (workspace ->
  /// value per element of a chunk).
  llvm::MapVector<Value, SmallVector<Value>> batchAcc;
  /// Whether the current batch is the program's first (its partial sums
  /// start from zero).
  Value firstBatch;
  /// The program's rows [lo, hi).
  Value lo, hi;
  /// Elements a vector access of the partial rows moves inside the chunk
  /// being emitted on the vector path; 0 outside one (element accesses).
  int64_t chunkWidth = 0;
  /// The elements of one 16-byte access of a partial row, 0 where the
  /// geometry's chunks cannot take them.
  int64_t vectorWidth() const;
};

} // namespace

void GlobalPartials::allocate() {
  for (memref::StoreOp store : partialRowStores(ctx.nest))
    partialWorkspaces.push_back(store.getMemRef());
}

// The batch's running partial sums of column j: read once, the rows' terms
// added in row order, written once.
void GlobalPartials::beginElement(OpBuilder &rb, Value j, int64_t e,
                                  ArrayRef<Value> active) {
  if (active.empty() || chunkWidth)
    return;
  Location loc = ctx.loc;
  Value p = ctx.base.lookup(ctx.nest.programIV);
  // The program's first batch starts from zero (no kernel clears the
  // partial rows before this one: it writes them whole), the others from
  // what the batches before left.
  for (Value ws : partialWorkspaces) {
    SmallVector<Value> &accs = batchAcc[ws];
    accs.resize(ctx.g.vec);
    Type t = cast<MemRefType>(ws.getType()).getElementType();
    auto ifOp = scf::IfOp::create(rb, loc, TypeRange{t}, firstBatch,
                                  /*withElseRegion=*/true);
    OpBuilder tb = ifOp.getThenBodyBuilder();
    scf::YieldOp::create(tb, loc,
                         ValueRange{arith::ConstantOp::create(
                             tb, loc, tb.getZeroAttr(t))});
    OpBuilder eb = ifOp.getElseBodyBuilder();
    scf::YieldOp::create(
        eb, loc,
        ValueRange{memref::LoadOp::create(eb, loc, ctx.base.lookupOrDefault(ws),
                                          ValueRange{p, j})});
    accs[e] = ifOp.getResult(0);
  }
}

void GlobalPartials::endElement(OpBuilder &rb, Value j, int64_t e,
                                ArrayRef<Value> active) {
  if (active.empty() || chunkWidth)
    return;
  Value p = ctx.base.lookup(ctx.nest.programIV);
  for (Value ws : partialWorkspaces)
    memref::StoreOp::create(rb, ctx.loc, batchAcc[ws][e],
                            ctx.base.lookupOrDefault(ws), ValueRange{p, j});
}

// In the vector layout a lane's V columns are consecutive: an element
// access a lane put lanes V columns apart, so each warp access touched 8x
// the sectors of a 16-byte one (the register home's write-back measured
// that: LayerNorm bf16 64 x 65536's dx kernel 113 us against 30). On the
// vector path (the chunk inside the row) a chunk's partial sums move as
// 16-byte vectors.
int64_t GlobalPartials::vectorWidth() const {
  if (partialWorkspaces.empty())
    return 0;
  for (Value ws : partialWorkspaces)
    if (!cast<MemRefType>(ws.getType()).getElementType().isF32())
      return 0;
  return ctx.partialVectorWidth(Float32Type::get(ctx.b.getContext()));
}

void GlobalPartials::beginChunk(OpBuilder &rb, Value j0,
                                ArrayRef<Value> active) {
  chunkWidth = 0;
  int64_t width = vectorWidth();
  if (active.empty() || !width)
    return;
  Location loc = ctx.loc;
  Value p = ctx.base.lookup(ctx.nest.programIV);
  auto vt = VectorType::get({width}, rb.getF32Type());
  for (Value ws : partialWorkspaces) {
    SmallVector<Value> &accs = batchAcc[ws];
    accs.resize(ctx.g.vec);
    for (int64_t e0 = 0; e0 < ctx.g.vec; e0 += width) {
      Value j = arith::AddIOp::create(rb, loc, j0, cIndex(rb, loc, e0));
      // The program's first batch starts from zero, as beginElement's.
      auto ifOp = scf::IfOp::create(rb, loc, TypeRange{vt}, firstBatch,
                                    /*withElseRegion=*/true);
      OpBuilder tb = ifOp.getThenBodyBuilder();
      scf::YieldOp::create(
          tb, loc,
          ValueRange{arith::ConstantOp::create(tb, loc, tb.getZeroAttr(vt))});
      OpBuilder eb = ifOp.getElseBodyBuilder();
      Value mem = ctx.unitInnerStride(eb, ctx.base.lookupOrDefault(ws));
      scf::YieldOp::create(
          eb, loc,
          ValueRange{vector::LoadOp::create(eb, loc, vt, mem, ValueRange{p, j},
                                            /*nontemporal=*/false,
                                            llvm::MaybeAlign(width * 4))});
      for (int64_t e = 0; e < width; ++e)
        accs[e0 + e] =
            vector::ExtractOp::create(rb, loc, ifOp.getResult(0), e);
    }
  }
  chunkWidth = width;
}

void GlobalPartials::endChunk(OpBuilder &rb, Value j0,
                              ArrayRef<Value> active) {
  if (!chunkWidth)
    return;
  int64_t width = chunkWidth;
  chunkWidth = 0;
  Value p = ctx.base.lookup(ctx.nest.programIV);
  for (Value ws : partialWorkspaces)
    ctx.storePartialChunk(rb, ctx.base.lookupOrDefault(ws), p, j0,
                          batchAcc[ws], width);
}

bool GlobalPartials::load(OpBuilder &rb, memref::LoadOp load,
                          std::optional<int64_t> k, int64_t e, IRMapping &m,
                          Value active) {
  if (!active || !llvm::is_contained(partialWorkspaces, load.getMemRef()))
    return false;
  m.map(load.getResult(), batchAcc[load.getMemRef()][e]);
  return true;
}

bool GlobalPartials::store(OpBuilder &rb, memref::StoreOp store,
                           std::optional<int64_t> k, int64_t e, IRMapping &m,
                           Value active) {
  if (!active || !llvm::is_contained(partialWorkspaces, store.getMemRef()))
    return false;
  // A row past the program's last adds nothing (the first row of a batch
  // never is).
  Value &acc = batchAcc[store.getMemRef()][e];
  Value v = ctx.materialize(rb, store.getValue(), m);
  acc = matchPattern(active, m_One())
            ? v
            : arith::SelectOp::create(rb, ctx.loc, active, v, acc).getResult();
  return true;
}

void GlobalPartials::emitRows(ColumnLoops &loops, Value lo, Value hi) {
  OpBuilder &b = ctx.b;
  Location loc = ctx.loc;
  RowNest &nest = ctx.nest;
  auto c = [&](int64_t v) { return ctx.c(v); };
  this->lo = lo;
  this->hi = hi;
  Block *rowBody = nest.rows.getBody();
  int64_t batch = ctx.g.batch;
  auto waves = scf::ForOp::create(b, loc, lo, hi, c(batch));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(waves.getBody()->getTerminator());
  // Row i of the batch; a row past the program's last re-reads the last
  // one (a valid row: its loads need no guard, so all are in flight
  // together) and neither stores nor adds anything.
  Value last = arith::SubIOp::create(b, loc, hi, c(1));
  firstBatch = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                     waves.getInductionVar(), lo);
  SmallVector<IRMapping> ms;
  SmallVector<Value> batchActive;
  for (int64_t i = 0; i < batch; ++i) {
    Value r = arith::AddIOp::create(b, loc, waves.getInductionVar(), c(i));
    // Row 0 of a batch is the loop's own condition.
    batchActive.push_back(
        i == 0 ? arith::ConstantIntOp::create(b, loc, 1, 1).getResult()
               : arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, r,
                                       hi)
                     .getResult());
    IRMapping m = ctx.base;
    m.map(nest.rows.getInductionVar(),
          arith::MinUIOp::create(b, loc, r, last).getResult());
    ms.push_back(m);
  }
  // Mapped per row, never through the row-independent `reduced`.
  ctx.reduced.clear();
  Value laneZero =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, ctx.lane, c(0));
  // With a cluster (batch 1): the row's slots, and its side effects the
  // first block's.
  Value sideEffects =
      reduction.beginRow(waves.getInductionVar(), lo, batch, laneZero);
  // The batch `prefetch` batches ahead: its row i by lane i.
  for (int64_t i = 0; ctx.g.prefetch && i < batch; ++i) {
    Value ahead = arith::AddIOp::create(
        b, loc, waves.getInductionVar(), c(ctx.g.prefetch * batch + i));
    ctx.prefetchRow(
        b, ahead,
        arith::AndIOp::create(
            b, loc,
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, ctx.lane,
                                  c(i)),
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, ahead,
                                  hi)));
  }
  for (Operation &op : rowBody->without_terminator()) {
    auto loop = dyn_cast<scf::ForOp>(op);
    if (loop && loop.getNumResults()) {
      // The batch's rows in one column walk, their sums in one cross-warp
      // step.
      SmallVector<Value> carried;
      loops.emitColumnLoop(b, loop, ms, batchActive, carried);
      SmallVector<Value> sums = reduction.reduce(carried);
      size_t perRow = loop.getNumResults();
      for (int64_t i = 0; i < batch; ++i)
        for (auto [r, res] : llvm::enumerate(loop.getResults()))
          ms[i].map(res, sums[i * perRow + r]);
      continue;
    }
    if (loop) {
      // Row by row: whatever the loop writes is the row's own.
      for (int64_t i = 0; i < batch; ++i)
        scf::IfOp::create(b, loc, batchActive[i], [&](OpBuilder &ib, Location) {
          IRMapping m = ms[i];
          SmallVector<Value> none;
          loops.emitColumnLoop(ib, loop, m, /*active=*/{}, none);
          scf::YieldOp::create(ib, loc);
        });
      continue;
    }
    assert((!isa<scf::WhileOp, memref::AtomicRMWOp>(op)) &&
           "batched rows are the deterministic strategy's");
    if (isMemoryEffectFree(&op) || isa<memref::LoadOp>(op))
      continue; // materialised where used
    // A per-row side effect: lane 0, for each of the program's rows.
    for (int64_t i = 0; i < batch; ++i)
      scf::IfOp::create(b, loc,
                        arith::AndIOp::create(b, loc, batchActive[i],
                                              sideEffects),
                        [&](OpBuilder &ib, Location) {
                          IRMapping m = ms[i];
                          for (Value operand : op.getOperands())
                            ctx.materialize(ib, operand, m);
                          ib.clone(op, m);
                          scf::YieldOp::create(ib, loc);
                        });
  }
  b.setInsertionPointAfter(waves);
  reduction.endRows();
}

void GlobalPartials::writeBack() {
  OpBuilder &b = ctx.b;
  Location loc = ctx.loc;
  // A program without rows (p R >= M) still writes its partial rows whole:
  // zeros, each column by its owner thread (with a cluster, each block its
  // slice's columns).
  Value empty =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, lo, hi);
  Value p = ctx.base.lookup(ctx.nest.programIV);
  scf::IfOp::create(b, loc, empty, [&](OpBuilder &ib, Location) {
    for (Value ws : partialWorkspaces) {
      Value wsK = ctx.base.lookupOrDefault(ws);
      Type t = cast<MemRefType>(ws.getType()).getElementType();
      Value zero = arith::ConstantOp::create(ib, loc, ib.getZeroAttr(t));
      Value n = memref::DimOp::create(ib, loc, wsK, 1);
      Value first = ctx.tid;
      if (ctx.colBase) {
        first = arith::AddIOp::create(ib, loc, ctx.colBase, ctx.tid);
        n = arith::MinUIOp::create(
            ib, loc, n,
            arith::AddIOp::create(ib, loc, ctx.colBase,
                                  cIndex(ib, loc, ctx.g.sliceColumns)));
      }
      scf::ForOp::create(ib, loc, first, n, cIndex(ib, loc, ctx.g.threads),
                         ValueRange{},
                         [&](OpBuilder &fb, Location, Value j, ValueRange) {
                           memref::StoreOp::create(fb, loc, zero, wsK,
                                                   ValueRange{p, j});
                           scf::YieldOp::create(fb, loc);
                         });
    }
    scf::YieldOp::create(ib, loc);
  });
}

std::unique_ptr<Partials>
norm::makeGlobalPartials(RowContext &ctx, InRowReduction &reduction) {
  return std::make_unique<GlobalPartials>(ctx, reduction);
}
