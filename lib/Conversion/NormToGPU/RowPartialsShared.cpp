//===- RowPartialsShared.cpp - partial rows in shared memory --------------===//
//
// Part of mlir-norm.
//
// PartialsHome::Shared (register regime, one row in flight): the running
// `deterministic` partial sums live in lane-major groups of W slots of
// shared memory: with q = k V + e, slot ((q / W) L + lane) W + q % W holds
// element e of the lane's k-th chunk. In the vector layout's body W is the
// geometry's partial_vector (1, 2 or 4, at most V) and a chunk's W sums
// are one load and one store a group on the vector path (16 bytes at W =
// 4), the lanes of a warp 4 W bytes apart (no bank conflicts); a chunk
// past N there goes a word at a time. W = 4 takes a quarter of the shared
// accesses and more live registers: a tuning knob. In the
// interleaved layout's body (its own slots: the two bodies are branches of
// the whole kernel) W = 1, slot q L + lane, a word a lane, the lanes of a
// warp on consecutive words. Static
// shared buffers, or, past kPartialsSharedBytes, views of the dynamic
// shared memory one after the other (Geometry::dynamicSharedBytes, the
// launch's dynamic size): the geometry's choice (Geometry.cpp). At the end
// each column has one owner thread, which stores it (with a cluster: the
// block's slice of the columns).
//
//===----------------------------------------------------------------------===//

#include "Launch.h"
#include "RowStrategies.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/ADT/MapVector.h"

#include <algorithm>
#include <cassert>

using namespace mlir;
using namespace mlir::norm;

namespace {

/// Columns a thread of SharedPartials::writeBack stores a step (their
/// shared-memory loads issued together).
constexpr int64_t kWriteBackColumns = 8;

class SharedPartials final : public Partials {
public:
  explicit SharedPartials(RowContext &ctx) : ctx(ctx) {}

  void allocate() override;
  void beginChunk(OpBuilder &rb, Value j0, ArrayRef<Value> active) override {
    inVectorChunk = width() > 1;
    groups.clear();
  }
  void endChunk(OpBuilder &rb, Value j0, ArrayRef<Value> active) override {
    // A group the chunk's elements stored only in part (no body does that
    // today: each element reads, adds and writes its sum) goes out a word
    // at a time, so that no sum is lost whatever the body.
    for (auto &[key, group] : groups)
      for (auto [i, v] : llvm::enumerate(group.stored))
        if (v)
          memref::StoreOp::create(
              rb, ctx.loc, v, key.first,
              ValueRange{arith::AddIOp::create(rb, ctx.loc, group.base,
                                               cIndex(rb, ctx.loc, i))});
    inVectorChunk = false;
    groups.clear();
  }
  bool load(OpBuilder &rb, memref::LoadOp load, std::optional<int64_t> k,
            int64_t e, IRMapping &m, Value active) override;
  bool store(OpBuilder &rb, memref::StoreOp store, std::optional<int64_t> k,
             int64_t e, IRMapping &m, Value active) override;
  void writeBack() override;

private:
  /// W: the sums a lane keeps side by side in the vector layout's body
  /// (Geometry::partialVector); one in the interleaved layout's, whose
  /// accesses are a word each (its own body, its own slots).
  int64_t width() const {
    return ctx.layout == Layout::Vector ? ctx.g.partialVector : 1;
  }
  /// The slot of q = k V + e of lane `lane` (any builder, any lane).
  Value slotOf(OpBuilder &rb, Value q, Value lane) {
    Location loc = ctx.loc;
    int64_t w = width();
    auto ci = [&](int64_t v) { return cIndex(rb, loc, v); };
    if (w == 1)
      return arith::AddIOp::create(
          rb, loc, arith::MulIOp::create(rb, loc, q, ci(ctx.g.lanes)), lane);
    Value group = arith::AddIOp::create(
        rb, loc,
        arith::MulIOp::create(rb, loc, arith::DivUIOp::create(rb, loc, q, ci(w)),
                              ci(ctx.g.lanes)),
        lane);
    return arith::AddIOp::create(rb, loc,
                                 arith::MulIOp::create(rb, loc, group, ci(w)),
                                 arith::RemUIOp::create(rb, loc, q, ci(w)));
  }
  /// The shared-memory slot of element e of the lane's chunk k.
  Value partialSlot(OpBuilder &rb, int64_t k, int64_t e) {
    int64_t q = k * ctx.g.vec + e, w = width();
    return arith::AddIOp::create(
        rb, ctx.loc, cIndex(rb, ctx.loc, (q / w) * ctx.g.lanes * w + q % w),
        arith::MulIOp::create(rb, ctx.loc, ctx.lane, cIndex(rb, ctx.loc, w)));
  }
  /// A group of W sums of the chunk on the vector path (slots base ..
  /// base + W - 1): loaded as one vector at the first load, stored as one
  /// once all W are written; a load after a store of its element reads
  /// the stored value.
  struct Group {
    Value base;
    Value loaded;
    SmallVector<Value> stored; // W entries; null: not written yet
  };
  Group &groupOf(OpBuilder &rb, Value acc, int64_t k, int64_t e) {
    Group &group = groups[{acc, e / width()}];
    if (!group.base) {
      group.base = partialSlot(rb, k, e - e % width());
      group.stored.assign(width(), Value());
    }
    return group;
  }

  RowContext &ctx;
  bool inVectorChunk = false;
  llvm::MapVector<std::pair<Value, int64_t>, Group> groups;
  // Ordered: kernel parameters and code follow its order, and the output
  // must be the same on every run.
  llvm::MapVector<Value, Value> partialArrays; // workspace -> slots
};

} // namespace

void SharedPartials::allocate() {
  OpBuilder &b = ctx.b;
  Location loc = ctx.loc;
  const Geometry &g = ctx.g;
  int64_t slots = g.chunksPerLane * g.vec * g.lanes;
  int64_t dynamicOffset = 0;
  for (memref::StoreOp store : partialRowStores(ctx.nest)) {
    Type t = store.getValue().getType();
    Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(t));
    Value acc;
    if (g.dynamicSharedBytes) {
      acc =
          addDynamicSharedView(ctx.launch, b, dynamicOffset, {slots}, t, loc);
      dynamicOffset += slots * int64_t(t.getIntOrFloatBitWidth() / 8);
    } else {
      acc = addSharedBuffer(ctx.launch, {slots}, t, loc);
    }
    scf::ForOp::create(b, loc, ctx.tid, ctx.c(slots), ctx.c(g.threads),
                       ValueRange{},
                       [&](OpBuilder &fb, Location, Value j, ValueRange) {
                         memref::StoreOp::create(fb, loc, zero, acc,
                                                 ValueRange{j});
                         scf::YieldOp::create(fb, loc);
                       });
    partialArrays[store.getMemRef()] = acc;
  }
  assert(dynamicOffset <= g.dynamicSharedBytes &&
         "partial rows past the geometry's dynamic shared memory");
  gpu::BarrierOp::create(b, loc);
}

bool SharedPartials::load(OpBuilder &rb, memref::LoadOp load,
                          std::optional<int64_t> k, int64_t e, IRMapping &m,
                          Value active) {
  Value acc = partialArrays.lookup(load.getMemRef());
  if (!acc)
    return false;
  if (inVectorChunk) {
    int64_t w = width();
    Group &group = groupOf(rb, acc, *k, e);
    if (Value v = group.stored[e % w]) {
      m.map(load.getResult(), v);
      return true;
    }
    if (!group.loaded)
      group.loaded = vector::LoadOp::create(
          rb, ctx.loc, VectorType::get({w}, load.getType()), acc,
          ValueRange{group.base}, /*nontemporal=*/false,
          llvm::MaybeAlign(w * int64_t(sizeof(float))));
    m.map(load.getResult(),
          vector::ExtractOp::create(rb, ctx.loc, group.loaded, e % w));
    return true;
  }
  m.map(load.getResult(),
        memref::LoadOp::create(rb, ctx.loc, acc,
                               ValueRange{partialSlot(rb, *k, e)}));
  return true;
}

bool SharedPartials::store(OpBuilder &rb, memref::StoreOp store,
                           std::optional<int64_t> k, int64_t e, IRMapping &m,
                           Value active) {
  Value acc = partialArrays.lookup(store.getMemRef());
  if (!acc)
    return false;
  Value value = ctx.materialize(rb, store.getValue(), m);
  if (inVectorChunk) {
    // Once all W of the group are written, one vector store; it is also
    // what a later load of the group reads.
    int64_t w = width();
    Group &group = groupOf(rb, acc, *k, e);
    group.stored[e % w] = value;
    if (llvm::all_of(group.stored, [](Value v) { return bool(v); })) {
      Value v = vector::FromElementsOp::create(
          rb, ctx.loc, VectorType::get({w}, value.getType()), group.stored);
      vector::StoreOp::create(rb, ctx.loc, v, acc, ValueRange{group.base},
                              /*nontemporal=*/false,
                              llvm::MaybeAlign(w * int64_t(sizeof(float))));
      group.loaded = v;
      group.stored.assign(w, Value());
    }
    return true;
  }
  memref::StoreOp::create(rb, ctx.loc, value, acc,
                          ValueRange{partialSlot(rb, *k, e)});
  return true;
}

void SharedPartials::writeBack() {
  if (partialArrays.empty())
    return;
  OpBuilder &b = ctx.b;
  Location loc = ctx.loc;
  const Geometry &g = ctx.g;
  // Each column has one owner thread, which stores it.
  int64_t n = *g.n;
  Value p = ctx.base.lookup(ctx.nest.programIV);
  gpu::BarrierOp::create(b, loc);
  // With a cluster, the block's slice of columns: local column jl is row
  // column colBase + jl.
  int64_t span = g.cluster > 1 ? g.sliceColumns : n;
  bool sliceInRow = g.cluster == 1 || g.cluster * g.sliceColumns == n;
  Value colBase = ctx.colBase;
  // Thread t stores columns t, t + T, ... (T threads), kWriteBackColumns
  // of them a step: their shared-memory loads go out together, then the
  // stores. One column a step waited for each load before its store (40
  // in a row at N = 5120 on one block of 128 threads: about a microsecond
  // of a launch that does one row). A column past the span loads the last
  // one and stores nothing.
  int64_t unroll = std::min<int64_t>(kWriteBackColumns,
                                     llvm::divideCeil(span, g.threads));
  bool ragged = span % (g.threads * unroll) != 0;
  for (auto [ws, accumulator] : partialArrays) {
    // Lambdas do not capture structured bindings before C++20 (clang).
    Value acc = accumulator;
    Value wsK = ctx.base.lookupOrDefault(ws);
    scf::ForOp::create(
        b, loc, ctx.tid, ctx.c(span), ctx.c(g.threads * unroll), ValueRange{},
        [&](OpBuilder &fb, Location, Value j0, ValueRange) {
          auto ci = [&](int64_t v) { return cIndex(fb, loc, v); };
          SmallVector<Value> columns, values;
          for (int64_t u = 0; u < unroll; ++u) {
            Value j = u ? arith::AddIOp::create(fb, loc, j0,
                                                ci(u * g.threads))
                        : j0;
            columns.push_back(j);
            if (ragged)
              j = arith::MinUIOp::create(fb, loc, j, ci(span - 1));
            // Vector layout: column j is element e of chunk c = j / V,
            // which lane c % L holds as its chunk k = c / L (q = k V + e).
            // Interleaved layout: column k L V + e L + lane = q L + lane.
            // (j counts from the block's slice.)
            Value q, owner;
            if (ctx.layout == Layout::Vector) {
              Value chunk = arith::DivUIOp::create(fb, loc, j, ci(g.vec));
              Value e = arith::RemUIOp::create(fb, loc, j, ci(g.vec));
              owner = arith::RemUIOp::create(fb, loc, chunk, ci(g.lanes));
              Value k = arith::DivUIOp::create(fb, loc, chunk, ci(g.lanes));
              q = arith::AddIOp::create(
                  fb, loc, arith::MulIOp::create(fb, loc, k, ci(g.vec)), e);
            } else {
              q = arith::DivUIOp::create(fb, loc, j, ci(g.lanes));
              owner = arith::RemUIOp::create(fb, loc, j, ci(g.lanes));
            }
            Value slot = slotOf(fb, q, owner);
            values.push_back(
                memref::LoadOp::create(fb, loc, acc, ValueRange{slot}));
          }
          for (auto [column, value] : llvm::zip(columns, values)) {
            // (Lambdas do not capture structured bindings before C++20.)
            Value j = column, v = value;
            Value col = colBase ? arith::AddIOp::create(fb, loc, colBase, j)
                                : j;
            // In the span (a ragged last step), and in the row (the last
            // block of a cluster whose slices pass N).
            Value keep;
            if (ragged)
              keep = arith::CmpIOp::create(fb, loc, arith::CmpIPredicate::ult,
                                           j, ci(span));
            if (!sliceInRow) {
              Value inRow = arith::CmpIOp::create(
                  fb, loc, arith::CmpIPredicate::ult, col, ci(n));
              keep = keep ? arith::AndIOp::create(fb, loc, keep, inRow)
                          : inRow;
            }
            if (!keep) {
              markFinalPartial(
                  memref::StoreOp::create(fb, loc, v, wsK, ValueRange{p, col}));
              continue;
            }
            scf::IfOp::create(fb, loc, keep, [&](OpBuilder &ib, Location) {
              markFinalPartial(
                  memref::StoreOp::create(ib, loc, v, wsK, ValueRange{p, col}));
              scf::YieldOp::create(ib, loc);
            });
          }
          scf::YieldOp::create(fb, loc);
        });
  }
}

std::unique_ptr<Partials> norm::makeSharedPartials(RowContext &ctx) {
  return std::make_unique<SharedPartials>(ctx);
}
