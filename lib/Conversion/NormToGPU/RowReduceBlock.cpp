//===- RowReduceBlock.cpp - in-row sums within a block --------------------===//
//
// Part of mlir-norm.
//
// A row's sums over its L lanes: butterfly `gpu.shuffle xor` within a warp
// (every lane gets the bitwise same sum: IEEE addition commutes), then, for
// L > 32, one shared-memory step in a fixed order: each warp's lane 0 writes
// its sum, a barrier, every thread adds its row's warps in order
// 0..L/32-1.
//
// The barriers (norm-map-to-gpu `row-barriers`; no result bit depends on
// them):
// * 0: a block barrier after the writes and another after the reads (the
//   next sum's writes reuse the scratch).
// * 1: a block of S = 2-15 rows syncs each row's warps alone, on named
//   barrier s + 1 with L threads (`bar.sync s + 1, L`): a row no longer
//   waits for the block's other rows, whose loads may still be in
//   flight. One row a block (or 16 and more) keeps the block barrier.
// * 2: as 1, and no barrier after the reads: the scratch is two buffers,
//   and consecutive sums of a row use different ones. Sum c of the walk
//   writes buffer c mod 2 of its own; the warps of a row write sum c + 2's
//   buffer only after sum c + 1's barrier, which each of them reaches only
//   after it read sum c. The walk's sums a wave R: with R even the
//   buffers alternate within the wave; with R odd (a backward: one) they
//   alternate with the wave's parity too ((wave - lo) / waveRows mod 2,
//   from beginRow). A sum outside a walk that called beginRow keeps the
//   barrier after its reads.
//
//===----------------------------------------------------------------------===//

#include "Launch.h"
#include "RowStrategies.h"

#include "norm/Conversion/NormToGPU/TargetCodegen.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::norm;

namespace {

class BlockReduction final : public InRowReduction {
public:
  explicit BlockReduction(RowContext &ctx) : ctx(ctx) {}

  void allocate() override;
  Value beginRow(Value wave, Value lo, int64_t waveRows,
                 Value laneZero) override;
  SmallVector<Value> reduce(ValueRange partials) override;
  void endRows() override;

private:
  /// Whether the barriers are the row's warps' alone (named barriers).
  bool rowOwnBarriers() const;
  /// Waits for the row's warps (or the block's).
  void barrier();

  RowContext &ctx;
  SmallVector<Value> crossWarpScratch; // per sum: one slot per warp, twice
                                       // with row-barriers = 2
  /// row-barriers = 2, in a walk: the wave's parity (index 0 or 1), a zero
  /// to replace it with if the walk's sums a wave turn out even, and the
  /// sums so far this wave.
  Value parity, zero;
  int64_t sums = 0;
};

} // namespace

bool BlockReduction::rowOwnBarriers() const {
  const Geometry &g = ctx.g;
  return ctx.nest.rowBarriers >= 1 && g.rows >= 2 && g.rows <= 15 &&
         g.threads == g.rows * g.lanes && g.lanes % g.warp == 0;
}

void BlockReduction::barrier() {
  OpBuilder &b = ctx.b;
  if (!rowOwnBarriers()) {
    gpu::BarrierOp::create(b, ctx.loc);
    return;
  }
  ctx.codegen.groupBarrier(
      b, ctx.loc, arith::AddIOp::create(b, ctx.loc, ctx.subgroup, ctx.c(1)),
      ctx.g.lanes);
}

void BlockReduction::allocate() {
  const Geometry &g = ctx.g;
  // Two sums a row (LayerNorm's dx), for each row of a batch.
  int64_t buffers = ctx.nest.rowBarriers == 2 ? 2 : 1;
  if (g.lanes > g.warp)
    for (int64_t i = 0; i < 2 * g.batch; ++i)
      crossWarpScratch.push_back(
          addSharedBuffer(ctx.launch, {buffers * (g.threads / g.warp)},
                          ctx.b.getF32Type(), ctx.loc));
}

Value BlockReduction::beginRow(Value wave, Value lo, int64_t waveRows,
                               Value laneZero) {
  sums = 0;
  parity = zero = Value();
  if (ctx.nest.rowBarriers != 2 || ctx.g.lanes <= ctx.g.warp)
    return laneZero;
  OpBuilder &b = ctx.b;
  Location loc = ctx.loc;
  Value index = arith::DivUIOp::create(
      b, loc, arith::SubIOp::create(b, loc, wave, lo), ctx.c(waveRows));
  parity = arith::AndIOp::create(b, loc, index, ctx.c(1));
  zero = ctx.c(0);
  return laneZero;
}

void BlockReduction::endRows() {
  // An even number of sums a wave: the buffers alternate within it.
  if (parity && sums % 2 == 0)
    parity.replaceAllUsesWith(zero);
  parity = zero = Value();
}

SmallVector<Value> BlockReduction::reduce(ValueRange partials) {
  OpBuilder &b = ctx.b;
  Location loc = ctx.loc;
  const Geometry &g = ctx.g;
  auto c = [&](int64_t v) { return ctx.c(v); };
  SmallVector<Value> vals(partials.begin(), partials.end());
  int64_t inWarp = std::min(g.lanes, g.warp);
  for (Value &v : vals)
    for (int64_t off = inWarp / 2; off >= 1; off /= 2) {
      auto shfl =
          gpu::ShuffleOp::create(b, loc, v, off, g.warp, gpu::ShuffleMode::XOR);
      v = arith::AddFOp::create(b, loc, v, shfl.getShuffleResult());
    }
  if (g.lanes <= g.warp)
    return vals;
  // Across the warps of a row: one shared-memory step, fixed order.
  int64_t warpsPerRow = g.lanes / g.warp;
  int64_t warps = g.threads / g.warp;
  // row-barriers = 2 in a walk: this sum's buffer, (sum + parity) mod 2.
  Value buffer;
  if (parity) {
    buffer = sums % 2 == 0 ? parity
                           : arith::SubIOp::create(b, loc, c(1), parity)
                                 .getResult();
    buffer = arith::MulIOp::create(b, loc, buffer, c(warps));
  }
  ++sums;
  auto slot = [&](Value warpIndex) -> Value {
    return buffer ? arith::AddIOp::create(b, loc, buffer, warpIndex)
                        .getResult()
                  : warpIndex;
  };
  Value warp = arith::DivUIOp::create(b, loc, ctx.tid, c(g.warp));
  Value laneInWarp = arith::RemUIOp::create(b, loc, ctx.tid, c(g.warp));
  Value leader =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, laneInWarp, c(0));
  for (auto [i, sum] : llvm::enumerate(vals)) {
    // Lambdas do not capture structured bindings before C++20 (clang).
    Value v = sum, scratch = crossWarpScratch[i];
    scf::IfOp::create(b, loc, leader, [&](OpBuilder &ib, Location) {
      memref::StoreOp::create(ib, loc, v, scratch, ValueRange{slot(warp)});
      scf::YieldOp::create(ib, loc);
    });
  }
  barrier();
  Value first = arith::MulIOp::create(b, loc, ctx.subgroup, c(warpsPerRow));
  for (auto [i, v] : llvm::enumerate(vals)) {
    Value s = memref::LoadOp::create(b, loc, crossWarpScratch[i],
                                     ValueRange{slot(first)});
    for (int64_t w = 1; w < warpsPerRow; ++w) {
      Value idx = arith::AddIOp::create(b, loc, first, c(w));
      s = arith::AddFOp::create(
          b, loc, s,
          memref::LoadOp::create(b, loc, crossWarpScratch[i],
                                 ValueRange{slot(idx)}));
    }
    v = s;
  }
  if (!buffer)
    barrier();
  return vals;
}

std::unique_ptr<InRowReduction> norm::makeBlockReduction(RowContext &ctx) {
  return std::make_unique<BlockReduction>(ctx);
}
