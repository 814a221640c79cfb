//===- RowChunksUnrolled.cpp - the unrolled chunk walk --------------------===//
//
// Part of mlir-norm.
//
// The register regime (Geometry::registers): N is static and a lane's share
// of the row (K chunks of V) is at most `max-register-elements`, so the K
// chunks of every column loop are unrolled and the per-lane row caches of
// x and dy are private arrays with constant indices, which LLVM keeps in
// registers.
//
//===----------------------------------------------------------------------===//

#include "Launch.h"
#include "RowStrategies.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/ADT/MapVector.h"

using namespace mlir;
using namespace mlir::norm;

namespace {

class UnrolledChunks final : public ChunkWalk {
public:
  explicit UnrolledChunks(RowContext &ctx) : ctx(ctx) {}

  void allocate() override;
  void walk(OpBuilder &rb, Value chunks, int64_t rowsPerChunk,
            SmallVector<Value> &carried, ChunkBody chunkBody) override;
  bool load(OpBuilder &rb, memref::LoadOp load, std::optional<int64_t> k,
            int64_t e, IRMapping &m) override;
  bool store(OpBuilder &rb, memref::StoreOp store, std::optional<int64_t> k,
             int64_t e, IRMapping &m) override;

private:
  RowContext &ctx;
  // Ordered: kernel code follows its order, and the output must be the
  // same on every run.
  llvm::MapVector<Value, Value> privateArrays; // row cache -> private array
};

} // namespace

void UnrolledChunks::allocate() {
  const Geometry &g = ctx.g;
  int64_t size = g.chunksPerLane * g.vec;
  // The element type of each row cache: the stored (f32) value's, or,
  // with Geometry::narrowCache, the loaded 16-bit type of a row memref's
  // value (half the registers; each use extends again, exactly).
  llvm::MapVector<Value, Type> types;
  ctx.nest.rows.getBody()->walk([&](memref::StoreOp store) {
    if (!isRowCacheBuffer(store.getMemRef()))
      return;
    Type t = store.getValue().getType();
    auto ext = store.getValue().getDefiningOp<arith::ExtFOp>();
    auto load = ext ? ext.getIn().getDefiningOp<memref::LoadOp>() : nullptr;
    if (ctx.g.narrowCache && load && load.getIndices().size() == 2 &&
        !isRowCacheBuffer(load.getMemRef()))
      t = ext.getIn().getType();
    auto [it, inserted] = types.try_emplace(store.getMemRef(), t);
    if (!inserted && it->second != t)
      it->second = store.getValue().getType(); // stores of both kinds
  });
  for (auto [cache, t] : types)
    privateArrays[cache] =
        memref::AllocaOp::create(ctx.b, ctx.loc, MemRefType::get({size}, t));
}

void UnrolledChunks::walk(OpBuilder &rb, Value chunks, int64_t rowsPerChunk,
                          SmallVector<Value> &carried, ChunkBody chunkBody) {
  const Geometry &g = ctx.g;
  Location loc = ctx.loc;
  // K chunks per lane, unrolled, so private arrays use constant indices.
  // In the vector layout a chunk past the last one is skipped whole; in the
  // interleaved layout such a lane still owns columns below N, which the
  // chunk bounds element by element.
  // With a cluster, `chunk` counts from the block's slice; a chunk is in
  // the row when its place in the row is (every block's, for the static
  // test).
  for (int64_t k = 0; k < g.chunksPerLane; ++k) {
    Value chunk =
        arith::AddIOp::create(rb, loc, ctx.lane, cIndex(rb, loc, k * g.lanes));
    if (ctx.layout == Layout::Interleaved || ctx.chunkAlwaysInRow(k)) {
      chunkBody(rb, chunk, k, carried);
      continue;
    }
    Value inRange = arith::CmpIOp::create(rb, loc, arith::CmpIPredicate::ult,
                                          ctx.rowChunk(rb, chunk), chunks);
    auto ifOp = scf::IfOp::create(rb, loc, TypeRange(ValueRange(carried)),
                                  inRange, /*withElseRegion=*/true);
    OpBuilder tb = ifOp.getThenBodyBuilder();
    SmallVector<Value> next = carried;
    chunkBody(tb, chunk, k, next);
    yieldFrom(tb, loc, next);
    OpBuilder eb = ifOp.getElseBodyBuilder();
    yieldFrom(eb, loc, carried);
    carried.assign(ifOp.getResults().begin(), ifOp.getResults().end());
  }
}

bool UnrolledChunks::load(OpBuilder &rb, memref::LoadOp load,
                          std::optional<int64_t> k, int64_t e, IRMapping &m) {
  return ctx.loadPrivate(rb, privateArrays.lookup(load.getMemRef()), load, k, e,
                         m);
}

bool UnrolledChunks::store(OpBuilder &rb, memref::StoreOp store,
                           std::optional<int64_t> k, int64_t e, IRMapping &m) {
  return ctx.storePrivate(rb, privateArrays.lookup(store.getMemRef()), store, k,
                          e, m);
}

std::unique_ptr<ChunkWalk> norm::makeUnrolledChunks(RowContext &ctx) {
  return std::make_unique<UnrolledChunks>(ctx);
}
