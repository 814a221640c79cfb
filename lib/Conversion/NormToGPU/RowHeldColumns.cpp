//===- RowHeldColumns.cpp - the column vectors held in registers ----------===//
//
// Part of mlir-norm.
//
// Geometry::holdColumns. A row body reads its column vectors (the weight,
// LayerNorm's bias) at [j] in the column loop that uses them: a forward
// row's last loop, after the in-row sums. Its loads then start only when
// the sums are done, one more memory round trip on the row's latency
// chain (a DRAM one on a cold weight, an L1/L2 one otherwise), and a
// block of several waves loads them again each row. Held, a lane's whole
// chunks of them are loaded into registers once, at the top of the vector
// layout's body, before the first row's loads of x: they are in flight
// together, and every row takes them from registers.
//
// What is held: the memrefs the row body loads at [j] in a column loop,
// the lane's chunks of groups whose columns all lie below N (a group that
// may reach past N keeps its loads, under their whole-chunk test). The
// values, and so every result bit, are the same as without it; it costs a
// lane K vectors of registers per held memref.
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

void RowContext::allocateHeldColumns() {
  if (!g.holdColumns || !g.registers || !g.n || g.vec == 1 ||
      g.layouts == RowLayouts::Interleaved)
    return;
  // A row body writes rows ([r, j]), partial rows and workspaces ([g, j],
  // stores or atomics), never a column vector: every rank-1 load of a
  // column loop reads what no row changes.
  Block *rowBody = nest.rows.getBody();
  for (Operation &op : rowBody->without_terminator()) {
    auto loop = dyn_cast<scf::ForOp>(op);
    if (!loop)
      continue;
    for (Operation &inner : loop.getBody()->without_terminator()) {
      auto load = dyn_cast<memref::LoadOp>(inner);
      if (!load || load.getIndices().size() != 1 ||
          !isRowAccess(load, loop, load.getMemRef(), load.getIndices()) ||
          heldColumns.count(load.getMemRef()))
        continue;
      heldColumns[load.getMemRef()] = memref::AllocaOp::create(
          b, loc,
          MemRefType::get({g.chunksPerLane},
                          VectorType::get({g.vec}, load.getType())));
    }
  }
}

bool RowContext::holds(Value mem, std::optional<int64_t> k) const {
  return layout == Layout::Vector && k && groupInRange(k) &&
         heldColumns.count(mem);
}

Value RowContext::heldChunk(OpBuilder &rb, Value mem, int64_t k) {
  Value buf = heldColumns.lookup(mem);
  assert(buf && "a column memref that is not held");
  Value v =
      memref::LoadOp::create(rb, loc, buf, ValueRange{cIndex(rb, loc, k)});
  auto type = cast<VectorType>(v.getType());
  int64_t bits = type.getElementTypeBitWidth();
  if (bits >= 32 || (g.vec * bits) % 32 != 0)
    return v;
  // A 16-bit chunk goes through a pinned move a 32-bit word at each use:
  // the held value is loop-invariant, and LLVM would otherwise hoist its
  // extension to f32 out of the rows' loop, keeping twice the registers
  // live (ptxas -v, LayerNorm bf16 N = 7168: 96 -> 247 registers).
  auto words = VectorType::get({g.vec * bits / 32}, rb.getI32Type());
  Value w = vector::BitCastOp::create(rb, loc, words, v);
  SmallVector<Value> pinned;
  for (int64_t i = 0; i < words.getNumElements(); ++i)
    pinned.push_back(codegen.pin(
        rb, loc, vector::ExtractOp::create(rb, loc, w, i)));
  return vector::BitCastOp::create(
      rb, loc, type, vector::FromElementsOp::create(rb, loc, words, pinned));
}

void RowContext::loadHeldColumns(OpBuilder &rb) {
  if (heldColumns.empty() || layout != Layout::Vector)
    return;
  // Under the alignment test where the body has none of its own (layout =
  // vector: each chunk tests it; the held values are used on its true
  // side only).
  Value when = knownAligned ? Value() : aligned;
  auto loadAll = [&](OpBuilder &ib) {
    forEachChunkInRow(ib, [&](OpBuilder &cb, int64_t k, Value j0) {
      for (auto [mem, buf] : heldColumns)
        memref::StoreOp::create(cb, loc, loadChunk(cb, mem, ValueRange{j0}),
                                buf, ValueRange{cIndex(cb, loc, k)});
    });
  };
  if (!when) {
    loadAll(rb);
    return;
  }
  scf::IfOp::create(rb, loc, when, [&](OpBuilder &ib, Location) {
    loadAll(ib);
    scf::YieldOp::create(ib, loc);
  });
}
