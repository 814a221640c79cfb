//===- RowLooped.cpp - row kernels of the looped regime ------------------===//
//
// Part of mlir-norm.
//
// When N is not static, or a lane's share of the row is more than
// `max-register-elements` (N = 65536), a block takes one row at a time and
// its lanes walk the row's chunks in a loop. Nothing is cached: x and dy are
// re-read in the dx loop, and the program's partial rows are updated in
// global memory by the one thread that owns each column, once per batch of
// Geometry::batch rows whose reduction loops share the column walk
// (RowKernel::emitBatchedRows).
//
//===----------------------------------------------------------------------===//

#include "Launch.h"
#include "RowKernel.h"

#include "norm/Dialect/Norm/IR/StageContract.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"

using namespace mlir;
using namespace mlir::norm;

namespace {

class LoopedRowKernel : public RowKernel {
public:
  using RowKernel::RowKernel;

private:
  void walkChunks(OpBuilder &rb, Value chunks, SmallVector<Value> &carried,
                  ChunkBody chunkBody) override;
};

} // namespace

void LoopedRowKernel::walkChunks(OpBuilder &rb, Value chunks,
                                 SmallVector<Value> &carried,
                                 ChunkBody chunkBody) {
  // Whole groups of L chunks: in the interleaved layout (rows not 16-byte
  // aligned) a lane whose chunk index is past the last chunk still owns
  // columns below N; the chunk bounds its elements itself.
  Value ub = chunks;
  if (g.vec > 1 && layout == Layout::Interleaved) {
    Value l = cIndex(rb, loc, g.lanes);
    ub = arith::MulIOp::create(
        rb, loc, arith::CeilDivUIOp::create(rb, loc, chunks, l), l);
  }
  auto forOp = scf::ForOp::create(
      rb, loc, lane, ub, cIndex(rb, loc, g.lanes), carried,
      [&](OpBuilder &fb, Location, Value chunk, ValueRange iter) {
        SmallVector<Value> vals(iter.begin(), iter.end());
        chunkBody(fb, chunk, std::nullopt, vals);
        scf::YieldOp::create(fb, loc, vals);
      });
  // Four chunks per iteration (one row): their loads do not depend on each other's
  // sums, so they are in flight together (the sums keep their order). With
  // a trip count unknown here, unrolling adds an epilogue loop, whose
  // results are then the final ones.
  // With a batch of rows sharing each chunk, their loads are in flight
  // together already.
  int64_t factor = std::max<int64_t>(1, 4 / rowsPerChunk);
  if (factor == 1)
    return carried.assign(forOp.getResults().begin(),
                          forOp.getResults().end());
  FailureOr<UnrolledLoopInfo> unrolled = loopUnrollByFactor(forOp, factor);
  scf::ForOp last = forOp;
  if (succeeded(unrolled) && unrolled->epilogueLoopOp)
    last = *unrolled->epilogueLoopOp;
  carried.assign(last.getResults().begin(), last.getResults().end());
}

std::unique_ptr<RowKernel> norm::makeLoopedRowKernel(OpBuilder &b, Location loc,
                                                     RowNest &nest,
                                                     gpu::LaunchOp launch) {
  return std::make_unique<LoopedRowKernel>(b, loc, nest, launch);
}

/// Every cache load becomes the load (and extension) the cache was filled
/// from.
void norm::uncacheRows(scf::ForOp rows) {
  SmallVector<memref::AllocOp> caches;
  rows.walk([&](memref::StoreOp store) {
    auto alloc = store.getMemRef().getDefiningOp<memref::AllocOp>();
    if (!alloc || !norm::isRowCache(alloc))
      return;
    // value = extf(load src[r, j]) or load src[r, j]
    Value v = store.getValue();
    auto ext = v.getDefiningOp<arith::ExtFOp>();
    auto src = (ext ? ext.getIn() : v).getDefiningOp<memref::LoadOp>();
    if (!src)
      return;
    for (Operation *user : llvm::make_early_inc_range(alloc->getUsers())) {
      auto load = dyn_cast<memref::LoadOp>(user);
      if (!load)
        continue;
      OpBuilder b(load);
      IRMapping m;
      m.map(src.getIndices()[1], load.getIndices()[0]);
      Value re = b.clone(*src, m)->getResult(0);
      if (ext)
        re = arith::ExtFOp::create(b, load.getLoc(), ext.getType(), re);
      load.replaceAllUsesWith(re);
      load.erase();
    }
    store.erase();
    if (!llvm::is_contained(caches, alloc))
      caches.push_back(alloc);
  });
  for (memref::AllocOp alloc : caches) {
    for (Operation *user : llvm::make_early_inc_range(alloc->getUsers()))
      user->erase();
    alloc.erase();
  }
}
