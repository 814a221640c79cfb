//===- RowPipeline.cpp - the next wave's loads issued ahead ---------------===//
//
// Part of mlir-norm.
//
// Geometry::pipeline. A register-regime block walks its rows a wave at a
// time: it loads the row, reduces it across the block (barriers), then
// computes and stores dx. Its loads of a row are in flight only in the
// first of those phases, so an SM's bytes in flight drop between rows
// (bench/RESULTS.md: the LayerNorm backward at 53-67% of copy with few
// stalls a warp). Here the loads of the next wave's row are issued right
// after the current row's first column loop has taken its values, before
// the in-row sums: they land while the block reduces and writes the
// current row, and the next wave's first column loop reads them from a
// lane's registers.
//
// What is loaded ahead: the lane's 16-byte chunks of the row memrefs the
// row body's first reading column loop reads at [r, j] (x, dy, a
// residual: K vectors each), and the row body's loads at [r] (mean, rstd),
// of memrefs the row body never writes. Only the vector layout's body
// does this; chunks of a group that may reach past N keep their own loads.
// The values, and so every result bit, are the same as without it; it
// costs a lane K vectors of registers per buffered row memref.
//
//===----------------------------------------------------------------------===//

#include "Launch.h"
#include "RowContext.h"

#include "norm/Conversion/NormToGPU/TargetCodegen.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::norm;

void RowContext::allocatePipeline() {
  // The ring (a dx kernel norm-map-to-gpu's ringFit gave it: never the
  // forward, whose block takes one wave, nor a cluster) takes the place
  // of the geometry's pipeline into registers.
  bool ring = nest.asyncRows > 0;
  if ((!g.pipeline && !ring) || !g.registers || !g.n || g.vec == 1)
    return;
  Block *rowBody = nest.rows.getBody();
  Value row = nest.rows.getInductionVar();
  // Memrefs the row body writes are never loaded ahead (an in-place dx
  // over dy is another memref: rows differ, so the next row is never
  // one this row writes).
  llvm::SmallPtrSet<Value, 8> written;
  rowBody->walk([&](memref::StoreOp store) {
    written.insert(store.getMemRef());
  });
  llvm::MapVector<Value, Type> rows;
  for (Operation &op : rowBody->without_terminator()) {
    auto loop = dyn_cast<scf::ForOp>(op);
    if (!loop)
      continue;
    for (Operation &inner : loop.getBody()->without_terminator()) {
      auto load = dyn_cast<memref::LoadOp>(inner);
      if (!load || load.getIndices().size() != 2 ||
          written.contains(load.getMemRef()) ||
          !isRowAccess(load, loop, load.getMemRef(), load.getIndices()) ||
          rows.count(load.getMemRef()))
        continue;
      rows[load.getMemRef()] = load.getType();
    }
    if (!rows.empty()) {
      pipeLoop = loop;
      break;
    }
  }
  if (!pipeLoop)
    return;
  SmallVector<memref::LoadOp> stats;
  for (Operation &op : rowBody->without_terminator()) {
    auto load = dyn_cast<memref::LoadOp>(op);
    if (!load || load.getIndices().size() != 1 ||
        load.getIndices()[0] != row || isRowCacheBuffer(load.getMemRef()) ||
        written.contains(load.getMemRef()))
      continue;
    stats.push_back(load);
  }
  if (ring) {
    // D waves of the lane's chunks and statistics, as many as fit the
    // static shared memory every chip has next to the kernel's own.
    int64_t perWave =
        int64_t(rows.size()) * g.chunksPerLane * g.threads * g.vectorBytes;
    for (memref::LoadOp load : stats)
      perWave += g.threads * load.getType().getIntOrFloatBitWidth() / 8;
    // Next to the kernel's own static shared memory (the in-row sums'
    // second buffers, RowReduceBlock.cpp, are within the slack); where
    // fewer than asyncRows waves fit there, in dynamic shared memory after
    // the kernel's own, within ringFit's budget.
    int64_t room = kGuaranteedStaticSharedBytes - g.sharedBytes -
                   kRingStaticSlack;
    asyncStages = std::min<int64_t>(nest.asyncRows,
                                    perWave ? room / perWave : 0);
    int64_t dynamicStages = std::min<int64_t>(
        nest.asyncRows, perWave ? nest.ringDynamicBudget / perWave : 0);
    bool dynamic = dynamicStages > asyncStages;
    if (dynamic)
      asyncStages = dynamicStages;
    if (asyncStages <= 0) {
      asyncStages = 0;
      pipeLoop = scf::ForOp();
      return;
    }
    int64_t offset = llvm::alignTo(g.dynamicSharedBytes, g.vectorBytes);
    auto ring = [&](int64_t elements, Type type) {
      if (!dynamic)
        return addSharedBuffer(launch, {elements}, type, loc);
      Value view = addDynamicSharedView(launch, b, offset, {elements}, type,
                                        loc);
      offset = llvm::alignTo(
          offset + elements * int64_t(type.getIntOrFloatBitWidth() / 8),
          g.vectorBytes);
      return view;
    };
    for (auto [mem, type] : rows)
      ringRows[mem] =
          ring(asyncStages * g.chunksPerLane * g.threads * g.vec, type);
    for (memref::LoadOp load : stats)
      ringStats[load] = ring(asyncStages * g.threads, load.getType());
    return;
  }
  for (auto [mem, type] : rows)
    pipeRows[mem] = memref::AllocaOp::create(
        b, loc,
        MemRefType::get({g.chunksPerLane}, VectorType::get({g.vec}, type)));
  for (memref::LoadOp load : stats)
    pipeStats[load] = memref::AllocaOp::create(
        b, loc, MemRefType::get({1}, load.getType()));
}

Value RowContext::ringIndex(OpBuilder &rb, Value slot, int64_t groups,
                            int64_t k) {
  Value group =
      groups == 1 && k == 0
          ? slot
          : arith::AddIOp::create(
                rb, loc,
                arith::MulIOp::create(rb, loc, slot, cIndex(rb, loc, groups)),
                cIndex(rb, loc, k))
                .getResult();
  return arith::AddIOp::create(
      rb, loc,
      arith::MulIOp::create(rb, loc, group, cIndex(rb, loc, g.threads)), tid);
}

bool RowContext::pipelining() const {
  // Only a body that knows the launch's rows aligned: what is loaded ahead
  // (16-byte chunks, and the statistics with them) is loaded only where
  // they are, so a body that also serves unaligned rows would read
  // buffers nothing filled. A pipeline makes the layout `both`
  // (checkGeometry), and so does the ring (norm-map-to-gpu's fitRing).
  return (g.pipeline || asyncStages) && pipeLoop &&
         layout == Layout::Vector && knownAligned;
}

bool RowContext::pipelined(scf::ForOp loop, std::optional<int64_t> k) const {
  return pipelining() && loop == pipeLoop && k && groupInRange(k);
}

Value RowContext::preloaded(OpBuilder &rb, Value mem, int64_t k) {
  if (asyncStages) {
    // This thread's own chunk of the wave's slot: [slot][k][tid].
    Value ring = ringRows.lookup(mem);
    assert(ring && waveSlot && "a row memref that is not copied ahead");
    Value at = arith::MulIOp::create(
        rb, loc, ringIndex(rb, waveSlot, g.chunksPerLane, k),
        cIndex(rb, loc, g.vec));
    auto type = VectorType::get(
        {g.vec}, cast<MemRefType>(ring.getType()).getElementType());
    return vector::LoadOp::create(rb, loc, type, ring, ValueRange{at},
                                  /*nontemporal=*/false,
                                  llvm::MaybeAlign(g.vectorBytes));
  }
  Value buf = pipeRows.lookup(mem);
  assert(buf && "a row memref that is not loaded ahead");
  return memref::LoadOp::create(rb, loc, buf, ValueRange{cIndex(rb, loc, k)});
}

void RowContext::preloadRow(OpBuilder &rb, Value row, Value when) {
  if (!pipelining())
    return;
  scf::IfOp::create(rb, loc, when, [&](OpBuilder &ib, Location) {
    Value zero = cIndex(ib, loc, 0);
    // The statistics first: the first column loop needs them before any
    // element of the row.
    for (auto [op, buf] : pipeStats) {
      auto load = cast<memref::LoadOp>(op);
      Value v = memref::LoadOp::create(
          ib, loc, base.lookupOrDefault(load.getMemRef()), ValueRange{row});
      memref::StoreOp::create(ib, loc, v, buf, ValueRange{zero});
    }
    forEachChunkInRow(ib, [&](OpBuilder &cb, int64_t k, Value j0) {
      for (auto [mem, buf] : pipeRows)
        memref::StoreOp::create(cb, loc,
                                loadChunk(cb, mem, ValueRange{row, j0}), buf,
                                ValueRange{cIndex(cb, loc, k)});
    });
    scf::YieldOp::create(ib, loc);
  });
}

void RowContext::forEachChunkInRow(
    OpBuilder &rb, function_ref<void(OpBuilder &, int64_t, Value)> body) {
  int64_t numChunks = llvm::divideCeil(*g.n, g.vec);
  for (int64_t k = 0; k < g.chunksPerLane; ++k) {
    if (!groupInRange(k))
      continue;
    Value chunk =
        arith::AddIOp::create(rb, loc, lane, cIndex(rb, loc, k * g.lanes));
    Value j0 = arith::MulIOp::create(rb, loc, rowChunk(rb, chunk),
                                     cIndex(rb, loc, g.vec));
    if (chunkAlwaysInRow(k)) {
      body(rb, k, j0);
      continue;
    }
    // The walk visits this chunk only where it is in the row.
    Value inRow = arith::CmpIOp::create(rb, loc, arith::CmpIPredicate::ult,
                                        rowChunk(rb, chunk),
                                        cIndex(rb, loc, numChunks));
    scf::IfOp::create(rb, loc, inRow, [&](OpBuilder &cb, Location) {
      body(cb, k, j0);
      scf::YieldOp::create(cb, loc);
    });
  }
}

void RowContext::takePreloaded(OpBuilder &rb, Value wave, Value lo) {
  if (!pipelining())
    return;
  Value zero = cIndex(rb, loc, 0);
  if (!asyncStages) {
    for (auto [op, buf] : pipeStats)
      base.map(op->getResult(0),
               memref::LoadOp::create(rb, loc, buf, ValueRange{zero}));
    return;
  }
  // Groups committed so far: D before the walk and one a wave before
  // this one; at most D - 1 in flight leaves this wave's done.
  codegen.asyncWait(rb, loc, asyncStages - 1);
  Value index = arith::DivUIOp::create(
      rb, loc, arith::SubIOp::create(rb, loc, wave, lo), cIndex(rb, loc, g.rows));
  waveSlot =
      arith::RemUIOp::create(rb, loc, index, cIndex(rb, loc, asyncStages));
  Value at = ringIndex(rb, waveSlot, 1, 0);
  for (auto [op, ring] : ringStats)
    base.map(op->getResult(0),
             memref::LoadOp::create(rb, loc, ring, ValueRange{at}));
}

/// The copies of row `row` of the ring's memrefs into slot `slot`, where
/// `when` holds (in a body that knows the rows aligned: pipelining()); then
/// the group's commit.
static void issueRow(RowContext &ctx, OpBuilder &rb, Value row, Value slot,
                     Value when) {
  Location loc = ctx.loc;
  const Geometry &g = ctx.g;
  assert(ctx.pipelining() && "the ring's copies outside an aligned body");
  scf::IfOp::create(rb, loc, when, [&](OpBuilder &ib, Location) {
    // The statistics first: the first column loop needs them before any
    // element of the row.
    Value statAt = ctx.ringIndex(ib, slot, 1, 0);
    for (auto [op, ring] : ctx.ringStats) {
      auto load = cast<memref::LoadOp>(op);
      int64_t bytes = load.getType().getIntOrFloatBitWidth() / 8;
      ctx.codegen.asyncCopy(
          ib, loc, ctx.sharedElement(ib, ring, statAt, bytes),
          ctx.byteAddress(ib, load.getMemRef(), ValueRange{row}), bytes);
    }
    ctx.forEachChunkInRow(ib, [&](OpBuilder &cb, int64_t k, Value j0) {
      Value at = ctx.ringIndex(cb, slot, g.chunksPerLane, k);
      for (auto [mem, ring] : ctx.ringRows)
        ctx.codegen.asyncCopy(
            cb, loc, ctx.sharedElement(cb, ring, at, g.vectorBytes),
            ctx.byteAddress(cb, mem, ValueRange{row, j0}), g.vectorBytes);
    });
    scf::YieldOp::create(ib, loc);
  });
  ctx.codegen.asyncCommit(rb, loc);
}

void RowContext::issueFirstWaves(OpBuilder &rb, Value lo, Value hi) {
  for (int64_t i = 0; i < asyncStages; ++i) {
    Value row = arith::AddIOp::create(
        rb, loc, arith::AddIOp::create(rb, loc, lo, cIndex(rb, loc, i * g.rows)),
        subgroup);
    issueRow(*this, rb, row, cIndex(rb, loc, i),
             arith::CmpIOp::create(rb, loc, arith::CmpIPredicate::ult, row,
                                   hi));
  }
}

void RowContext::issueAhead(OpBuilder &rb, Value row, Value hi) {
  Value ahead =
      arith::AddIOp::create(rb, loc, row, cIndex(rb, loc, asyncStages * g.rows));
  issueRow(*this, rb, ahead, waveSlot,
           arith::CmpIOp::create(rb, loc, arith::CmpIPredicate::ult, ahead,
                                 hi));
}
