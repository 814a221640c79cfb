//===- RowChunksLooped.cpp - the chunk loop of the looped regime ----------===//
//
// Part of mlir-norm.
//
// When N is not static, or a lane's share of the row is more than
// `max-register-elements` (N = 65536), the lanes walk the row's chunks in a
// loop, unrolled by four. Nothing is cached: before the kernel is emitted,
// the row caches of the nest go back to re-reading the row (x and dy are
// re-read in the dx loop).
//
//===----------------------------------------------------------------------===//

#include "Launch.h"
#include "RowStrategies.h"

#include "norm/Dialect/Norm/IR/StageContract.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"

using namespace mlir;
using namespace mlir::norm;

namespace {

class LoopedChunks final : public ChunkWalk {
public:
  explicit LoopedChunks(RowContext &ctx) : ctx(ctx) {}

  void prepare() override;
  void walk(OpBuilder &rb, Value chunks, int64_t rowsPerChunk,
            SmallVector<Value> &carried, ChunkBody chunkBody) override;

private:
  RowContext &ctx;
};

} // namespace

void LoopedChunks::walk(OpBuilder &rb, Value chunks, int64_t rowsPerChunk,
                        SmallVector<Value> &carried, ChunkBody chunkBody) {
  const Geometry &g = ctx.g;
  Location loc = ctx.loc;
  // Whole groups of L chunks: in the interleaved layout (rows not 16-byte
  // aligned) a lane whose chunk index is past the last chunk still owns
  // columns below N; the chunk bounds its elements itself.
  Value ub = chunks;
  if (g.vec > 1 && ctx.layout == Layout::Interleaved) {
    Value l = cIndex(rb, loc, g.lanes);
    ub = arith::MulIOp::create(
        rb, loc, arith::CeilDivUIOp::create(rb, loc, chunks, l), l);
  }
  auto forOp = scf::ForOp::create(
      rb, loc, ctx.lane, ub, cIndex(rb, loc, g.lanes), carried,
      [&](OpBuilder &fb, Location, Value chunk, ValueRange iter) {
        SmallVector<Value> vals(iter.begin(), iter.end());
        chunkBody(fb, chunk, std::nullopt, vals);
        scf::YieldOp::create(fb, loc, vals);
      });
  // Four chunks per iteration (one row): their loads do not depend on each
  // other's sums, so they are in flight together (the sums keep their
  // order). With a trip count unknown here, unrolling adds an epilogue
  // loop, whose results are then the final ones.
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

void norm::rereadRowCaches(scf::ForOp rows,
                           function_ref<bool(memref::AllocOp)> which,
                           bool keepCaches) {
  SmallVector<memref::AllocOp> caches;
  // Loads that filled a cache and may have no other use left.
  SmallVector<Operation *> fills;
  rows.walk([&](memref::StoreOp store) {
    auto alloc = store.getMemRef().getDefiningOp<memref::AllocOp>();
    if (!alloc || !norm::isRowCache(alloc) || !which(alloc))
      return;
    // value = extf(load src[r, j]) or load src[r, j]; or a value the
    // column loop also stores to a row (h = x + residual): then it is
    // read back from that row, which the same thread wrote.
    Value v = store.getValue();
    auto ext = v.getDefiningOp<arith::ExtFOp>();
    Value narrow = ext ? ext.getIn() : v;
    Operation *src = narrow.getDefiningOp<memref::LoadOp>();
    Value column;
    if (src) {
      column = cast<memref::LoadOp>(src).getIndices()[1];
    } else {
      for (Operation *user : narrow.getUsers()) {
        auto rowStore = dyn_cast<memref::StoreOp>(user);
        if (!rowStore || rowStore.getValue() != narrow ||
            rowStore->getBlock() != store->getBlock() ||
            rowStore.getIndices().size() != 2 ||
            isRowCacheBuffer(rowStore.getMemRef()))
          continue;
        OpBuilder lb(rowStore.getContext()); // a detached template
        src = memref::LoadOp::create(
            lb, rowStore.getLoc(), rowStore.getMemRef(), rowStore.getIndices());
        column = rowStore.getIndices()[1];
        break;
      }
      if (!src)
        return;
    }
    for (Operation *user : llvm::make_early_inc_range(alloc->getUsers())) {
      auto load = dyn_cast<memref::LoadOp>(user);
      if (!load || (keepCaches && !rows->isAncestor(load)))
        continue;
      OpBuilder b(load);
      IRMapping m;
      m.map(column, load.getIndices()[0]);
      Value re = b.clone(*src, m)->getResult(0);
      if (ext)
        re = arith::ExtFOp::create(b, load.getLoc(), ext.getType(), re);
      load.replaceAllUsesWith(re);
      load.erase();
    }
    store.erase();
    // The template load made for a stored row is not part of the body.
    if (!src->getBlock())
      src->erase();
    else
      fills.push_back(ext ? ext.getOperation() : src);
    if (!keepCaches && !llvm::is_contained(caches, alloc))
      caches.push_back(alloc);
  });
  for (memref::AllocOp alloc : caches) {
    for (Operation *user : llvm::make_early_inc_range(alloc->getUsers()))
      user->erase();
    alloc.erase();
  }
  // A fill only the cache used (an early row's load in the first loop).
  for (Operation *op : fills) {
    if (!op->use_empty())
      continue;
    Operation *load = isa<arith::ExtFOp>(op)
                          ? op->getOperand(0).getDefiningOp()
                          : nullptr;
    op->erase();
    if (load && load->use_empty())
      load->erase();
  }
}

/// Every cache load of the nest's row body becomes the load (and
/// extension) the cache was filled from.
void LoopedChunks::prepare() {
  norm::rereadRowCaches(ctx.nest.rows, [](memref::AllocOp) { return true; });
}

std::unique_ptr<ChunkWalk> norm::makeLoopedChunks(RowContext &ctx) {
  return std::make_unique<LoopedChunks>(ctx);
}
