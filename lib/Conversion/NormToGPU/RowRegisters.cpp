//===- RowRegisters.cpp - row kernels of the register regime -------------===//
//
// Part of mlir-norm.
//
// When N is static and a lane's share of the row (K chunks of V) is at most
// `max-register-elements`, the K chunk loops are unrolled, so the per-lane
// row caches of x and dy are private arrays with constant indices, which
// LLVM keeps in registers. The `deterministic` partial sums are private
// arrays too (combined across the S sub-groups through shared memory [S, N]
// in a fixed order), or, with one row in flight, lane-major slots in shared
// memory: slot (k V + e) L + lane holds element e of the lane's k-th chunk,
// so the lanes of a warp touch consecutive words (no bank conflicts).
//
//===----------------------------------------------------------------------===//

#include "Launch.h"
#include "RowKernel.h"

#include "norm/Dialect/Norm/IR/StageContract.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::norm;

namespace {

class RegisterRowKernel : public RowKernel {
public:
  using RowKernel::RowKernel;

private:
  void allocateThreadStorage() override;
  void walkChunks(OpBuilder &rb, Value chunks, SmallVector<Value> &carried,
                  ChunkBody chunkBody) override;
  bool isThreadLocal(Value memref) const override {
    return privateArrays.count(memref) || partialArrays.count(memref);
  }
  bool emitLocalLoad(OpBuilder &rb, memref::LoadOp load,
                     std::optional<int64_t> k, int64_t e,
                     IRMapping &m) override;
  bool emitLocalStore(OpBuilder &rb, memref::StoreOp store,
                      std::optional<int64_t> k, int64_t e,
                      IRMapping &m) override;
  void writePartialRows() override;

  bool partialsInShared() const { return g.partials == PartialsHome::Shared; }
  /// The shared-memory slot of element e of the lane's chunk k.
  Value partialSlot(OpBuilder &rb, int64_t k, int64_t e) {
    return arith::AddIOp::create(
        rb, loc, cIndex(rb, loc, (k * g.vec + e) * g.lanes), lane);
  }

  // Ordered maps: kernel parameters and code follow their order, and the
  // output must be the same on every run.
  llvm::MapVector<Value, Value> privateArrays; // row cache -> private array
  llvm::MapVector<Value, Value> partialArrays; // workspace -> accumulator
  DenseMap<Value, Value> combineBuffers;       // workspace -> [S, N] (S > 1)
};

} // namespace

void RegisterRowKernel::allocateThreadStorage() {
  int64_t size = g.chunksPerLane * g.vec;
  nest.rows.getBody()->walk([&](memref::StoreOp store) {
    if (isRowCacheBuffer(store.getMemRef()) &&
        !privateArrays.count(store.getMemRef()))
      privateArrays[store.getMemRef()] = memref::AllocaOp::create(
          b, loc, MemRefType::get({size}, store.getValue().getType()));
  });
  SmallVector<memref::StoreOp> partialStores;
  if (g.partials != PartialsHome::None)
    partialStores = partialRowStores(nest);
  // Where they live is the geometry's choice (Geometry.cpp): static
  // shared buffers, or views of the dynamic shared memory one after the
  // other (g.dynamicSharedBytes, the launch's dynamic size).
  int64_t slots = g.chunksPerLane * g.vec * g.lanes;
  int64_t dynamicOffset = 0;
  for (memref::StoreOp store : partialStores) {
    Type t = store.getValue().getType();
    Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(t));
    if (partialsInShared()) {
      Value acc;
      if (g.dynamicSharedBytes) {
        acc = addDynamicSharedView(launch, b, dynamicOffset, {slots}, t, loc);
        dynamicOffset += slots * int64_t(t.getIntOrFloatBitWidth() / 8);
      } else {
        acc = addSharedBuffer(launch, {slots}, t, loc);
      }
      scf::ForOp::create(b, loc, tid, c(slots), c(g.threads), ValueRange{},
                         [&](OpBuilder &fb, Location, Value j, ValueRange) {
                           memref::StoreOp::create(fb, loc, zero, acc,
                                                   ValueRange{j});
                           scf::YieldOp::create(fb, loc);
                         });
      partialArrays[store.getMemRef()] = acc;
      continue;
    }
    Value acc = memref::AllocaOp::create(b, loc, MemRefType::get({size}, t));
    for (int64_t i = 0; i < size; ++i)
      memref::StoreOp::create(b, loc, zero, acc, ValueRange{c(i)});
    partialArrays[store.getMemRef()] = acc;
  }
  assert(dynamicOffset <= g.dynamicSharedBytes &&
         "partial rows past the geometry's dynamic shared memory");
  if (partialsInShared())
    gpu::BarrierOp::create(b, loc);
}

void RegisterRowKernel::walkChunks(OpBuilder &rb, Value chunks,
                                   SmallVector<Value> &carried,
                                   ChunkBody chunkBody) {
  // K chunks per lane, unrolled, so private arrays use constant indices.
  // In the vector layout a chunk past the last one is skipped whole; in the
  // interleaved layout such a lane still owns columns below N, which the
  // chunk bounds element by element.
  // With a cluster, `chunk` counts from the block's slice; a chunk is in
  // the row when its place in the row is (every block's, for the static
  // test).
  int64_t numChunks = llvm::divideCeil(*g.n, g.vec);
  int64_t before = g.cluster > 1 ? (g.cluster - 1) * g.sliceColumns / g.vec : 0;
  for (int64_t k = 0; k < g.chunksPerLane; ++k) {
    Value chunk =
        arith::AddIOp::create(rb, loc, lane, cIndex(rb, loc, k * g.lanes));
    if (layout == Layout::Interleaved ||
        before + (k + 1) * g.lanes <= numChunks) {
      chunkBody(rb, chunk, k, carried);
      continue;
    }
    Value inRange = arith::CmpIOp::create(rb, loc, arith::CmpIPredicate::ult,
                                          rowChunk(rb, chunk), chunks);
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

bool RegisterRowKernel::emitLocalLoad(OpBuilder &rb, memref::LoadOp load,
                                      std::optional<int64_t> k, int64_t e,
                                      IRMapping &m) {
  if (Value acc = partialArrays.lookup(load.getMemRef());
      acc && partialsInShared()) {
    m.map(load.getResult(),
          memref::LoadOp::create(rb, loc, acc,
                                 ValueRange{partialSlot(rb, *k, e)}));
    return true;
  }
  Value arr = privateArrays.lookup(load.getMemRef());
  if (!arr)
    arr = partialArrays.lookup(load.getMemRef());
  if (arr && k) {
    m.map(load.getResult(),
          memref::LoadOp::create(rb, loc, arr,
                                 ValueRange{cIndex(rb, loc, *k * g.vec + e)}));
    return true;
  }
  return false;
}

bool RegisterRowKernel::emitLocalStore(OpBuilder &rb, memref::StoreOp store,
                                       std::optional<int64_t> k, int64_t e,
                                       IRMapping &m) {
  if (Value acc = partialArrays.lookup(store.getMemRef());
      acc && partialsInShared()) {
    memref::StoreOp::create(rb, loc, materialize(rb, store.getValue(), m), acc,
                            ValueRange{partialSlot(rb, *k, e)});
    return true;
  }
  Value arr = privateArrays.lookup(store.getMemRef());
  if (!arr)
    arr = partialArrays.lookup(store.getMemRef());
  if (arr && k) {
    memref::StoreOp::create(rb, loc, materialize(rb, store.getValue(), m), arr,
                            ValueRange{cIndex(rb, loc, *k * g.vec + e)});
    return true;
  }
  return false;
}

void RegisterRowKernel::writePartialRows() {
  if (partialArrays.empty())
    return;
  // Partial sums in shared memory: each column has one owner thread, which
  // stores it. In registers with one row in flight: each thread stores its
  // columns. With S > 1: every sub-group's partial row goes to shared
  // memory, then thread t sums column j = t, t + T, ... over the sub-groups
  // in order 0..S-1.
  int64_t n = *g.n;
  Value p = base.lookup(nest.programIV);
  if (partialsInShared())
    gpu::BarrierOp::create(b, loc);
  // With a cluster, the block's slice of columns: local column jl is row
  // column colBase + jl.
  int64_t span = g.cluster > 1 ? g.sliceColumns : n;
  bool sliceInRow = g.cluster == 1 || g.cluster * g.sliceColumns == n;
  for (auto [ws, accumulator] : partialArrays) {
    // Lambdas do not capture structured bindings before C++20 (clang).
    Value acc = accumulator;
    Value wsK = base.lookupOrDefault(ws);
    if (partialsInShared()) {
      scf::ForOp::create(
          b, loc, tid, c(span), c(g.threads), ValueRange{},
          [&](OpBuilder &fb, Location, Value j, ValueRange) {
            // Vector layout: column j is element e of chunk c = j / V, which
            // lane c % L holds as its chunk k = c / L. Interleaved layout:
            // slot (k V + e) L + lane is column k L V + e L + lane = j.
            // (j counts from the block's slice.)
            auto ci = [&](int64_t v) { return cIndex(fb, loc, v); };
            Value slot = j;
            if (layout == Layout::Vector) {
              Value chunk = arith::DivUIOp::create(fb, loc, j, ci(g.vec));
              Value e = arith::RemUIOp::create(fb, loc, j, ci(g.vec));
              Value owner =
                  arith::RemUIOp::create(fb, loc, chunk, ci(g.lanes));
              Value k = arith::DivUIOp::create(fb, loc, chunk, ci(g.lanes));
              slot = arith::AddIOp::create(
                  fb, loc,
                  arith::MulIOp::create(
                      fb, loc,
                      arith::AddIOp::create(
                          fb, loc,
                          arith::MulIOp::create(fb, loc, k, ci(g.vec)), e),
                      ci(g.lanes)),
                  owner);
            }
            Value v = memref::LoadOp::create(fb, loc, acc, ValueRange{slot});
            if (sliceInRow) {
              Value col = colBase ? arith::AddIOp::create(fb, loc, colBase, j)
                                  : j;
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
      continue;
    }
    if (g.rows == 1) {
      // One row in flight: each thread owns its columns of the partial row.
      for (int64_t k = 0; k < g.chunksPerLane; ++k)
        for (int64_t e = 0; e < g.vec; ++e) {
          Value chunk = arith::AddIOp::create(b, loc, lane, c(k * g.lanes));
          Value j = columnOf(b, chunk, e);
          Value v =
              memref::LoadOp::create(b, loc, acc, ValueRange{c(k * g.vec + e)});
          if (groupWhole(k)) {
            memref::StoreOp::create(b, loc, v, wsK, ValueRange{p, j});
            continue;
          }
          Value inRange =
              arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, j, c(n));
          scf::IfOp::create(b, loc, inRange, [&](OpBuilder &ib, Location) {
            memref::StoreOp::create(ib, loc, v, wsK, ValueRange{p, j});
            scf::YieldOp::create(ib, loc);
          });
        }
      continue;
    }
    // One combine buffer per partial row, shared by the two layouts' bodies.
    Value &buffer = combineBuffers[ws];
    if (!buffer)
      buffer = addSharedBuffer(launch, {g.rows, n}, b.getF32Type(), loc);
    Value smem = buffer;
    for (int64_t k = 0; k < g.chunksPerLane; ++k)
      for (int64_t e = 0; e < g.vec; ++e) {
        Value chunk = arith::AddIOp::create(b, loc, lane, c(k * g.lanes));
        Value j = columnOf(b, chunk, e);
        bool certain = (k + 1) * g.lanes * g.vec <= n;
        Value v =
            memref::LoadOp::create(b, loc, acc, ValueRange{c(k * g.vec + e)});
        auto store = [&](OpBuilder &sb) {
          memref::StoreOp::create(sb, loc, v, smem, ValueRange{subgroup, j});
        };
        if (certain) {
          store(b);
          continue;
        }
        Value inRange =
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, j, c(n));
        scf::IfOp::create(b, loc, inRange, [&](OpBuilder &ib, Location) {
          store(ib);
          scf::YieldOp::create(ib, loc);
        });
      }
    gpu::BarrierOp::create(b, loc);
    scf::ForOp::create(
        b, loc, tid, c(n), c(g.threads), ValueRange{},
        [&](OpBuilder &fb, Location, Value j, ValueRange) {
          Value s = memref::LoadOp::create(fb, loc, smem,
                                           ValueRange{cIndex(fb, loc, 0), j});
          for (int64_t q = 1; q < g.rows; ++q)
            s = arith::AddFOp::create(
                fb, loc, s,
                memref::LoadOp::create(fb, loc, smem,
                                       ValueRange{cIndex(fb, loc, q), j}));
          memref::StoreOp::create(fb, loc, s, wsK, ValueRange{p, j});
          scf::YieldOp::create(fb, loc);
        });
    gpu::BarrierOp::create(b, loc);
  }
}

std::unique_ptr<RowKernel> norm::makeRegisterRowKernel(OpBuilder &b,
                                                       Location loc,
                                                       RowNest &nest,
                                                       gpu::LaunchOp launch) {
  return std::make_unique<RegisterRowKernel>(b, loc, nest, launch);
}
