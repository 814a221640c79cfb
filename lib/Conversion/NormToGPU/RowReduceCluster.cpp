//===- RowReduceCluster.cpp - a row split over a thread-block cluster -----===//
//
// Part of mlir-norm.
//
// With Geometry::cluster = C > 1 (sm_90), a program's C consecutive blocks
// form a cluster and block s = rank owns the columns [s K L V, (s + 1) K L
// V) of every row of the program (one row at a time). A row's sums: the
// block's own (BlockReduction), then thread 0 stores them in its slots (two
// rows' worth, by the row's parity), a cluster barrier (release / acquire),
// and every thread adds the C blocks' slots in rank order through
// distributed shared memory. A row's side effects (none in a dx kernel of
// the strategies that may split; a forward kernel's statistics) are the
// first block's; one more cluster barrier after the last row (a relaxed
// arrival), so no block leaves while its slots may still be read. The chip's emitter (TargetCodegen) emits the barrier and the
// distributed shared memory accesses.
//
//===----------------------------------------------------------------------===//

#include "Launch.h"
#include "RowStrategies.h"

#include "norm/Conversion/NormToGPU/TargetCodegen.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

#include <cassert>

using namespace mlir;
using namespace mlir::norm;

namespace {

class ClusterReduction final : public InRowReduction {
public:
  explicit ClusterReduction(RowContext &ctx)
      : ctx(ctx), block(makeBlockReduction(ctx)) {}

  Value programOf(OpBuilder &kb, Value blockId) override;
  Value columnBase() override;
  void allocate() override { block->allocate(); }
  Value beginRow(Value wave, Value lo, Value laneZero) override;
  SmallVector<Value> reduce(ValueRange partials) override;
  /// The last barrier only keeps this block's slots alive until every
  /// block has read them, which each did before using the sums (before
  /// its outputs' stores): a relaxed arrival, which does not wait for the
  /// block's own stores of the last row to complete (a release arrival
  /// did: ncu showed membar stalls of 3 cycles an issue in the forward).
  void endRows() override {
    ctx.codegen.clusterBarrier(ctx.b, ctx.loc, /*release=*/false);
  }

private:
  RowContext &ctx;
  /// The sums within the block, first.
  std::unique_ptr<InRowReduction> block;
  /// The block's rank in its cluster, whose slice of every row it owns.
  Value slice;
  /// The parity of the current row within the program (its slots).
  Value rowParity;
  /// [2 x kClusterSumSlots] per in-row reduction of a row, and how many of
  /// them the current row has used.
  SmallVector<Value> clusterScratch;
  unsigned clusterReductions = 0;
};

} // namespace

Value ClusterReduction::programOf(OpBuilder &kb, Value blockId) {
  // A cluster of C consecutive blocks per program.
  Value c = cIndex(kb, ctx.loc, ctx.g.cluster);
  slice = arith::RemUIOp::create(kb, ctx.loc, blockId, c);
  return arith::DivUIOp::create(kb, ctx.loc, blockId, c);
}

Value ClusterReduction::columnBase() {
  return arith::MulIOp::create(ctx.b, ctx.loc, slice,
                               ctx.c(ctx.g.sliceColumns));
}

Value ClusterReduction::beginRow(Value wave, Value lo, Value laneZero) {
  OpBuilder &b = ctx.b;
  Location loc = ctx.loc;
  // One row at a time (S = 1): the row's parity picks its cluster slots.
  rowParity = arith::RemUIOp::create(
      b, loc, arith::SubIOp::create(b, loc, wave, lo), ctx.c(2));
  clusterReductions = 0;
  // A per-row side effect is the first block's.
  return arith::AndIOp::create(
      b, loc, laneZero,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, slice,
                            ctx.c(0)));
}

SmallVector<Value> ClusterReduction::reduce(ValueRange partials) {
  SmallVector<Value> vals = block->reduce(partials);
  OpBuilder &b = ctx.b;
  Location loc = ctx.loc;
  auto c = [&](int64_t v) { return ctx.c(v); };
  // Thread 0 puts the block's sums in its slots for this row's parity; after
  // the cluster barrier every thread adds the C blocks' slots in rank order.
  // Two rows' slots: a block writes row r + 2's only after the barrier of
  // row r + 1, which every block passes after reading row r's.
  assert(vals.size() <= size_t(kClusterSumSlots) && "too many in-row sums");
  if (clusterReductions == clusterScratch.size())
    clusterScratch.push_back(addSharedBuffer(
        ctx.launch, {2 * kClusterSumSlots}, b.getF32Type(), loc));
  Value scratch = clusterScratch[clusterReductions++];
  Value first = arith::MulIOp::create(b, loc, rowParity, c(kClusterSumSlots));
  Value leader =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, ctx.tid, c(0));
  scf::IfOp::create(b, loc, leader, [&](OpBuilder &ib, Location) {
    for (auto [i, v] : llvm::enumerate(vals))
      memref::StoreOp::create(
          ib, loc, v, scratch,
          ValueRange{arith::AddIOp::create(ib, loc, first, c(i))});
    scf::YieldOp::create(ib, loc);
  });
  ctx.codegen.clusterBarrier(b, loc);
  // The slots' address in this block's shared memory, mapped to each rank's.
  const TargetCodegen &target = ctx.codegen;
  Value address = arith::IndexCastUIOp::create(
      b, loc, b.getI64Type(),
      memref::ExtractAlignedPointerAsIndexOp::create(b, loc, scratch));
  Value local = target.sharedPointer(b, loc, address);
  SmallVector<Value> sums;
  for (size_t i = 0; i < vals.size(); ++i) {
    Value slot = arith::IndexCastUIOp::create(
        b, loc, b.getI64Type(), arith::AddIOp::create(b, loc, first, c(i)));
    Value at = target.sharedElement(b, loc, local, slot);
    Value sum;
    for (int64_t r = 0; r < ctx.g.cluster; ++r) {
      Value v = target.loadFromClusterRank(b, loc, at, r);
      sum = sum ? arith::AddFOp::create(b, loc, sum, v).getResult() : v;
    }
    sums.push_back(sum);
  }
  return sums;
}

std::unique_ptr<InRowReduction> norm::makeClusterReduction(RowContext &ctx) {
  return std::make_unique<ClusterReduction>(ctx);
}
