//===- RowReduceCluster.cpp - a row split over a thread-block cluster -----===//
//
// Part of mlir-norm.
//
// With Geometry::cluster = C > 1 (sm_90), a program's C consecutive blocks
// form a cluster and block s = rank owns the columns [s K L V, (s + 1) K L
// V) of every row of the program (one row at a time). A row's sums: the
// block's own (BlockReduction), then a push: the block's thread 0 stores
// them into every block's receive slots (its own included) with st.async,
// each store completing its bytes on the receiver's mbarrier, and every
// thread of a block waits on its own mbarrier until the C blocks' sums are
// there, then adds them in rank order (the bits of any exchange that adds
// in that order). No cluster barrier a row and no remote load: the only
// cluster barrier is the one that makes the mbarriers' initialisation
// visible, arrived at before the first row and waited on before the first
// push. Two rows' slots and mbarriers, by the row's parity: a block pushes
// row r + 2 only after it received every block's row r + 1, which each
// pushed after it had taken its row r sums. A row's side effects (none in
// a dx kernel of the strategies that may split; a forward kernel's
// statistics) are the first block's. No barrier after the last row: every
// block receives all its pushes before it leaves. The chip's emitter
// (TargetCodegen) emits the mbarriers, the stores and the barrier.
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
  void allocate() override;
  Value beginRow(Value wave, Value lo, int64_t waveRows,
                 Value laneZero) override;
  void endRows() override { block->endRows(); }
  SmallVector<Value> reduce(ValueRange partials) override;

private:
  RowContext &ctx;
  /// The sums within the block, first.
  std::unique_ptr<InRowReduction> block;
  /// The block's rank in its cluster, whose slice of every row it owns.
  Value slice;
  /// The row's index within the program (rows from 0), its parity (its
  /// slots and mbarrier) and the parity of that mbarrier's phase.
  Value rowParity, phaseParity, firstRow;
  /// Per in-row reduction of a row: the receive slots [2 parities x C
  /// ranks x kClusterSumSlots] and the two mbarriers; how many of them the
  /// current row has used.
  SmallVector<Value> slots, barriers;
  unsigned clusterReductions = 0;
  /// Where thread 0 initialises the mbarriers (before the first row).
  OpBuilder::InsertPoint initAt;
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

void ClusterReduction::allocate() {
  block->allocate();
  OpBuilder &b = ctx.b;
  Location loc = ctx.loc;
  // Thread 0's initialisations, filled in as reduce() adds mbarriers, then
  // every thread's arrival at the cluster barrier (waited on in the first
  // row, before the first push).
  Value leader = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                       ctx.tid, ctx.c(0));
  auto init = scf::IfOp::create(b, loc, leader, /*withElseRegion=*/false);
  initAt = OpBuilder::InsertPoint(init.thenBlock(),
                                  init.thenBlock()->getTerminator()
                                      ->getIterator());
  ctx.codegen.clusterArriveAfterInit(b, loc);
}

Value ClusterReduction::beginRow(Value wave, Value lo, int64_t waveRows,
                                 Value laneZero) {
  OpBuilder &b = ctx.b;
  Location loc = ctx.loc;
  // One row at a time (S = 1): the row's parity picks its slots and
  // mbarrier, and its use of that mbarrier (row / 2) the phase's parity.
  Value row = arith::SubIOp::create(b, loc, wave, lo);
  rowParity = arith::RemUIOp::create(b, loc, row, ctx.c(2));
  phaseParity = arith::IndexCastUIOp::create(
      b, loc, b.getI32Type(),
      arith::RemUIOp::create(
          b, loc, arith::DivUIOp::create(b, loc, row, ctx.c(2)), ctx.c(2)));
  firstRow =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, row, ctx.c(0));
  clusterReductions = 0;
  // The block's own step (its scratch's buffer by the row's parity).
  block->beginRow(wave, lo, waveRows, laneZero);
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
  const TargetCodegen &target = ctx.codegen;
  auto c = [&](int64_t v) { return ctx.c(v); };
  int64_t clusterBlocks = ctx.g.cluster;
  assert(vals.size() <= size_t(kClusterSumSlots) && "too many in-row sums");
  unsigned r = clusterReductions++;
  if (r == slots.size()) {
    slots.push_back(addSharedBuffer(ctx.launch,
                                    {2 * clusterBlocks * kClusterSumSlots},
                                    b.getF32Type(), loc));
    barriers.push_back(
        addSharedBuffer(ctx.launch, {2}, b.getI64Type(), loc));
    // Both mbarriers initialised by thread 0 before the first row.
    OpBuilder::InsertionGuard guard(b);
    b.restoreInsertionPoint(initAt);
    for (int64_t p = 0; p < 2; ++p)
      target.initBarrier(b, loc,
                         ctx.sharedElement(b, barriers[r], c(p), 8));
  }
  // The first push of the program waits for every block's mbarriers.
  if (r == 0)
    scf::IfOp::create(b, loc, firstRow, [&](OpBuilder &ib, Location) {
      target.clusterWait(ib, loc);
      scf::YieldOp::create(ib, loc);
    });
  Value bar = ctx.sharedElement(b, barriers[r], rowParity, 8);
  // This row's slots: [parity][rank][sum].
  Value rowSlots = arith::MulIOp::create(b, loc, rowParity,
                                         c(clusterBlocks * kClusterSumSlots));
  auto slotOf = [&](OpBuilder &ib, Value rank, int64_t i) {
    return arith::AddIOp::create(
        ib, loc, rowSlots,
        arith::AddIOp::create(
            ib, loc, arith::MulIOp::create(ib, loc, rank, c(kClusterSumSlots)),
            c(i)));
  };
  Value leader =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, ctx.tid, c(0));
  scf::IfOp::create(b, loc, leader, [&](OpBuilder &ib, Location) {
    target.arriveExpectingBytes(
        ib, loc, bar,
        clusterBlocks * int64_t(vals.size()) * int64_t(sizeof(float)));
    // This block's sums, into slot [parity][slice] of every block.
    Value at = ctx.sharedElement(ib, slots[r], slotOf(ib, slice, 0), 4);
    // st.async stores 1, 2 or 4 words at once.
    SmallVector<SmallVector<Value>> pieces;
    for (size_t i = 0; i < vals.size();) {
      size_t n = vals.size() - i >= 4 ? 4 : vals.size() - i >= 2 ? 2 : 1;
      pieces.push_back(SmallVector<Value>(vals.begin() + i,
                                          vals.begin() + i + n));
      i += n;
    }
    for (int64_t rank = 0; rank < clusterBlocks; ++rank) {
      int64_t first = 0;
      for (auto &piece : pieces) {
        Value to = first ? ctx.sharedElement(ib, slots[r],
                                          slotOf(ib, slice, first), 4)
                         : at;
        target.pushToClusterRank(ib, loc, to, piece, bar, rank);
        first += int64_t(piece.size());
      }
    }
    scf::YieldOp::create(ib, loc);
  });
  // Every block's sums here: added in rank order.
  target.waitBarrierPhase(b, loc, bar, phaseParity);
  SmallVector<Value> sums;
  for (size_t i = 0; i < vals.size(); ++i) {
    Value sum;
    for (int64_t rank = 0; rank < clusterBlocks; ++rank) {
      Value v = memref::LoadOp::create(b, loc, slots[r],
                                       ValueRange{slotOf(b, c(rank), i)});
      sum = sum ? arith::AddFOp::create(b, loc, sum, v).getResult() : v;
    }
    sums.push_back(sum);
  }
  return sums;
}

std::unique_ptr<InRowReduction> norm::makeClusterReduction(RowContext &ctx) {
  return std::make_unique<ClusterReduction>(ctx);
}
