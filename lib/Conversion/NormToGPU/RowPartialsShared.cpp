//===- RowPartialsShared.cpp - partial rows in shared memory --------------===//
//
// Part of mlir-norm.
//
// PartialsHome::Shared (register regime, one row in flight): the running
// `deterministic` partial sums live in lane-major slots of shared memory:
// slot (k V + e) L + lane holds element e of the lane's k-th chunk, so the
// lanes of a warp touch consecutive words (no bank conflicts). Static
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
#include "llvm/ADT/MapVector.h"

#include <cassert>

using namespace mlir;
using namespace mlir::norm;

namespace {

class SharedPartials final : public Partials {
public:
  explicit SharedPartials(RowContext &ctx) : ctx(ctx) {}

  void allocate() override;
  bool load(OpBuilder &rb, memref::LoadOp load, std::optional<int64_t> k,
            int64_t e, IRMapping &m, Value active) override;
  bool store(OpBuilder &rb, memref::StoreOp store, std::optional<int64_t> k,
             int64_t e, IRMapping &m, Value active) override;
  void writeBack() override;

private:
  /// The shared-memory slot of element e of the lane's chunk k.
  Value partialSlot(OpBuilder &rb, int64_t k, int64_t e) {
    return arith::AddIOp::create(
        rb, ctx.loc, cIndex(rb, ctx.loc, (k * ctx.g.vec + e) * ctx.g.lanes),
        ctx.lane);
  }

  RowContext &ctx;
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
  memref::StoreOp::create(rb, ctx.loc, ctx.materialize(rb, store.getValue(), m),
                          acc, ValueRange{partialSlot(rb, *k, e)});
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
  for (auto [ws, accumulator] : partialArrays) {
    // Lambdas do not capture structured bindings before C++20 (clang).
    Value acc = accumulator;
    Value wsK = ctx.base.lookupOrDefault(ws);
    scf::ForOp::create(
        b, loc, ctx.tid, ctx.c(span), ctx.c(g.threads), ValueRange{},
        [&](OpBuilder &fb, Location, Value j, ValueRange) {
          // Vector layout: column j is element e of chunk c = j / V, which
          // lane c % L holds as its chunk k = c / L. Interleaved layout:
          // slot (k V + e) L + lane is column k L V + e L + lane = j.
          // (j counts from the block's slice.)
          auto ci = [&](int64_t v) { return cIndex(fb, loc, v); };
          Value slot = j;
          if (ctx.layout == Layout::Vector) {
            Value chunk = arith::DivUIOp::create(fb, loc, j, ci(g.vec));
            Value e = arith::RemUIOp::create(fb, loc, j, ci(g.vec));
            Value owner = arith::RemUIOp::create(fb, loc, chunk, ci(g.lanes));
            Value k = arith::DivUIOp::create(fb, loc, chunk, ci(g.lanes));
            slot = arith::AddIOp::create(
                fb, loc,
                arith::MulIOp::create(
                    fb, loc,
                    arith::AddIOp::create(
                        fb, loc, arith::MulIOp::create(fb, loc, k, ci(g.vec)),
                        e),
                    ci(g.lanes)),
                owner);
          }
          Value v = memref::LoadOp::create(fb, loc, acc, ValueRange{slot});
          if (sliceInRow) {
            Value col =
                colBase ? arith::AddIOp::create(fb, loc, colBase, j) : j;
            memref::StoreOp::create(fb, loc, v, wsK, ValueRange{p, col});
          } else {
            Value col = arith::AddIOp::create(fb, loc, colBase, j);
            Value inRow = arith::CmpIOp::create(
                fb, loc, arith::CmpIPredicate::ult, col, ci(n));
            scf::IfOp::create(fb, loc, inRow, [&](OpBuilder &ib, Location) {
              memref::StoreOp::create(ib, loc, v, wsK, ValueRange{p, col});
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
