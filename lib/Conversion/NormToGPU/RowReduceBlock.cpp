//===- RowReduceBlock.cpp - in-row sums within a block --------------------===//
//
// Part of mlir-norm.
//
// A row's sums over its L lanes: butterfly `gpu.shuffle xor` within a warp
// (every lane gets the bitwise same sum: IEEE addition commutes), then, for
// L > 32, one shared-memory step in a fixed order: each warp's lane 0 writes
// its sum, a barrier, every thread adds its row's warps in order
// 0..L/32-1, a barrier.
//
//===----------------------------------------------------------------------===//

#include "Launch.h"
#include "RowStrategies.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::norm;

namespace {

class BlockReduction final : public InRowReduction {
public:
  explicit BlockReduction(RowContext &ctx) : ctx(ctx) {}

  void allocate() override;
  SmallVector<Value> reduce(ValueRange partials) override;

private:
  RowContext &ctx;
  SmallVector<Value> crossWarpScratch; // one slot per warp, per sum
};

} // namespace

void BlockReduction::allocate() {
  const Geometry &g = ctx.g;
  // Two sums a row (LayerNorm's dx), for each row of a batch.
  if (g.lanes > g.warp)
    for (int64_t i = 0; i < 2 * g.batch; ++i)
      crossWarpScratch.push_back(addSharedBuffer(
          ctx.launch, {g.threads / g.warp}, ctx.b.getF32Type(), ctx.loc));
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
  Value warp = arith::DivUIOp::create(b, loc, ctx.tid, c(g.warp));
  Value laneInWarp = arith::RemUIOp::create(b, loc, ctx.tid, c(g.warp));
  Value leader =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, laneInWarp, c(0));
  for (auto [i, sum] : llvm::enumerate(vals)) {
    // Lambdas do not capture structured bindings before C++20 (clang).
    Value v = sum, scratch = crossWarpScratch[i];
    scf::IfOp::create(b, loc, leader, [&](OpBuilder &ib, Location) {
      memref::StoreOp::create(ib, loc, v, scratch, ValueRange{warp});
      scf::YieldOp::create(ib, loc);
    });
  }
  gpu::BarrierOp::create(b, loc);
  Value first = arith::MulIOp::create(b, loc, ctx.subgroup, c(warpsPerRow));
  for (auto [i, v] : llvm::enumerate(vals)) {
    Value s =
        memref::LoadOp::create(b, loc, crossWarpScratch[i], ValueRange{first});
    for (int64_t w = 1; w < warpsPerRow; ++w) {
      Value idx = arith::AddIOp::create(b, loc, first, c(w));
      s = arith::AddFOp::create(
          b, loc, s,
          memref::LoadOp::create(b, loc, crossWarpScratch[i], ValueRange{idx}));
    }
    v = s;
  }
  gpu::BarrierOp::create(b, loc);
  return vals;
}

std::unique_ptr<InRowReduction> norm::makeBlockReduction(RowContext &ctx) {
  return std::make_unique<BlockReduction>(ctx);
}
