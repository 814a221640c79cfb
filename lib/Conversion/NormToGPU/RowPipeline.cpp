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

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::norm;

void RowContext::allocatePipeline() {
  if (!g.pipeline || !g.registers || !g.n || g.vec == 1)
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
  for (Operation &op : rowBody->without_terminator()) {
    auto loop = dyn_cast<scf::ForOp>(op);
    if (!loop)
      continue;
    for (Operation &inner : loop.getBody()->without_terminator()) {
      auto load = dyn_cast<memref::LoadOp>(inner);
      if (!load || load.getIndices().size() != 2 ||
          written.contains(load.getMemRef()) ||
          !isRowAccess(load, loop, load.getMemRef(), load.getIndices()) ||
          pipeRows.count(load.getMemRef()))
        continue;
      pipeRows[load.getMemRef()] = memref::AllocaOp::create(
          b, loc,
          MemRefType::get({g.chunksPerLane},
                          VectorType::get({g.vec}, load.getType())));
    }
    if (!pipeRows.empty()) {
      pipeLoop = loop;
      break;
    }
  }
  if (!pipeLoop)
    return;
  for (Operation &op : rowBody->without_terminator()) {
    auto load = dyn_cast<memref::LoadOp>(op);
    if (!load || load.getIndices().size() != 1 ||
        load.getIndices()[0] != row || isRowCacheBuffer(load.getMemRef()) ||
        written.contains(load.getMemRef()))
      continue;
    pipeStats[load] = memref::AllocaOp::create(
        b, loc, MemRefType::get({1}, load.getType()));
  }
}

bool RowContext::pipelining() const {
  return g.pipeline && pipeLoop && layout == Layout::Vector;
}

bool RowContext::pipelined(scf::ForOp loop, std::optional<int64_t> k) const {
  return pipelining() && loop == pipeLoop && k && groupInRange(k);
}

Value RowContext::preloaded(OpBuilder &rb, Value mem, int64_t k) {
  Value buf = pipeRows.lookup(mem);
  assert(buf && "a row memref that is not loaded ahead");
  return memref::LoadOp::create(rb, loc, buf, ValueRange{cIndex(rb, loc, k)});
}

void RowContext::preloadRow(OpBuilder &rb, Value row, Value when) {
  if (!pipelining())
    return;
  if (!knownAligned)
    when = arith::AndIOp::create(rb, loc, when, aligned);
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

void RowContext::takePreloaded(OpBuilder &rb) {
  if (!pipelining())
    return;
  Value zero = cIndex(rb, loc, 0);
  for (auto [op, buf] : pipeStats)
    base.map(op->getResult(0),
             memref::LoadOp::create(rb, loc, buf, ValueRange{zero}));
}
