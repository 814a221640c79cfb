//===- RowChunksUnrolled.cpp - the unrolled chunk walk --------------------===//
//
// Part of mlir-norm.
//
// The register regime (Geometry::registers): N is static and a lane's share
// of the row (K chunks of V) is at most `max-register-elements`, so the K
// chunks of every column loop are unrolled and the per-lane row caches of
// x and dy are private arrays with constant indices, which LLVM keeps in
// registers. With Geometry::narrowCache = 2, a cache of 16-bit rows is an
// array of 32-bit words, two elements a word (packedArrays).
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
  // Row caches held two 16-bit elements a 32-bit word (narrowCache = 2):
  // row cache -> the element type the words hold.
  llvm::DenseMap<Value, Type> packedArrays;

  Value loadPacked(OpBuilder &rb, Value arr, Type narrow, Type want,
                   int64_t at);
  void storePacked(OpBuilder &rb, Value arr, Value v, int64_t at);
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
  Type i32 = ctx.b.getI32Type();
  for (auto [cache, t] : types) {
    // Packed: element i in the low (i even) or high half of word i / 2.
    // Every word starts at 0, so that each store's read-modify-write of a
    // word reads a defined value (LLVM folds the zeros away).
    if (ctx.g.narrowCache == 2 && isa<FloatType>(t) &&
        t.getIntOrFloatBitWidth() == 16) {
      int64_t words = (size + 1) / 2;
      Value arr =
          memref::AllocaOp::create(ctx.b, ctx.loc, MemRefType::get({words}, i32));
      Value zero = arith::ConstantIntOp::create(ctx.b, ctx.loc, i32, 0);
      for (int64_t w = 0; w < words; ++w)
        memref::StoreOp::create(ctx.b, ctx.loc, zero, arr,
                                ValueRange{cIndex(ctx.b, ctx.loc, w)});
      privateArrays[cache] = arr;
      packedArrays[cache] = t;
      continue;
    }
    privateArrays[cache] =
        memref::AllocaOp::create(ctx.b, ctx.loc, MemRefType::get({size}, t));
  }
}

// An i32 constant.
static Value ci32(OpBuilder &rb, Location loc, int64_t v) {
  return arith::ConstantIntOp::create(rb, loc, rb.getI32Type(), v);
}

// Element `at` of a packed cache, as `want` (its 16-bit type, or f32).
// bf16 to f32 by its bits: the element's 16 bits moved (or masked) into
// the high half of the word, which is the f32 of the same value.
Value UnrolledChunks::loadPacked(OpBuilder &rb, Value arr, Type narrow,
                                 Type want, int64_t at) {
  Location loc = ctx.loc;
  Value word = memref::LoadOp::create(rb, loc, arr,
                                      ValueRange{cIndex(rb, loc, at / 2)});
  bool high = at % 2;
  if (narrow.isBF16() && want.isF32()) {
    Value bits =
        high ? arith::AndIOp::create(rb, loc, word,
                                     ci32(rb, loc, int64_t(0xffff0000)))
                   .getResult()
             : arith::ShLIOp::create(rb, loc, word, ci32(rb, loc, 16))
                   .getResult();
    return arith::BitcastOp::create(rb, loc, want, bits);
  }
  if (high)
    word = arith::ShRUIOp::create(rb, loc, word, ci32(rb, loc, 16));
  Value v = arith::BitcastOp::create(
      rb, loc, narrow,
      arith::TruncIOp::create(rb, loc, rb.getI16Type(), word));
  return v.getType() == want ? v : arith::ExtFOp::create(rb, loc, want, v);
}

// Element `at` of a packed cache set to the 16-bit value v: the word's
// other half kept.
void UnrolledChunks::storePacked(OpBuilder &rb, Value arr, Value v,
                                 int64_t at) {
  Location loc = ctx.loc;
  Type i32 = rb.getI32Type();
  Value idx = cIndex(rb, loc, at / 2);
  bool high = at % 2;
  Value bits = arith::ExtUIOp::create(
      rb, loc, i32, arith::BitcastOp::create(rb, loc, rb.getI16Type(), v));
  if (high)
    bits = arith::ShLIOp::create(rb, loc, bits, ci32(rb, loc, 16));
  Value word = memref::LoadOp::create(rb, loc, arr, ValueRange{idx});
  Value kept = arith::AndIOp::create(
      rb, loc, word, ci32(rb, loc, high ? 0xffff : int64_t(0xffff0000)));
  memref::StoreOp::create(rb, loc, arith::OrIOp::create(rb, loc, kept, bits),
                          arr, ValueRange{idx});
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
  if (auto it = packedArrays.find(load.getMemRef());
      it != packedArrays.end() && k) {
    m.map(load.getResult(),
          loadPacked(rb, privateArrays.lookup(load.getMemRef()), it->second,
                     load.getType(), *k * ctx.g.vec + e));
    return true;
  }
  return ctx.loadPrivate(rb, privateArrays.lookup(load.getMemRef()), load, k, e,
                         m);
}

bool UnrolledChunks::store(OpBuilder &rb, memref::StoreOp store,
                           std::optional<int64_t> k, int64_t e, IRMapping &m) {
  if (auto it = packedArrays.find(store.getMemRef());
      it != packedArrays.end() && k) {
    // The value before its (exact) extension, as storePrivate keeps it.
    Value value = store.getValue();
    if (value.getType() != it->second)
      value = value.getDefiningOp<arith::ExtFOp>().getIn();
    storePacked(rb, privateArrays.lookup(store.getMemRef()),
                ctx.materialize(rb, value, m), *k * ctx.g.vec + e);
    return true;
  }
  return ctx.storePrivate(rb, privateArrays.lookup(store.getMemRef()), store, k,
                          e, m);
}

std::unique_ptr<ChunkWalk> norm::makeUnrolledChunks(RowContext &ctx) {
  return std::make_unique<UnrolledChunks>(ctx);
}
