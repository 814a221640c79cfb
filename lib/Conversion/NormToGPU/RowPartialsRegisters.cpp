//===- RowPartialsRegisters.cpp - partial rows in registers ---------------===//
//
// Part of mlir-norm.
//
// PartialsHome::Registers (register regime): a thread's running
// `deterministic` partial sums of its columns are private arrays with
// constant indices (k V + e), which LLVM keeps in registers. With one row in
// flight each thread stores its columns to the program's partial rows at
// the end; with S > 1 every sub-group's partial row goes to shared memory
// [S, N] and thread t sums column j = t, t + T, ... over the sub-groups in
// order 0..S-1.
//
//===----------------------------------------------------------------------===//

#include "Launch.h"
#include "RowStrategies.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/ADT/MapVector.h"

using namespace mlir;
using namespace mlir::norm;

namespace {

class RegisterPartials final : public Partials {
public:
  explicit RegisterPartials(RowContext &ctx) : ctx(ctx) {}

  void allocate() override;
  bool load(OpBuilder &rb, memref::LoadOp load, std::optional<int64_t> k,
            int64_t e, IRMapping &m, Value active) override;
  bool store(OpBuilder &rb, memref::StoreOp store, std::optional<int64_t> k,
             int64_t e, IRMapping &m, Value active) override;
  void writeBack() override;

private:
  /// One row in flight, vector layout: a lane's chunk is V consecutive
  /// columns of the partial row, stored as 16-byte vectors (false, nothing
  /// emitted, where the row cannot take them).
  bool writeBackVectors(Value acc, Value ws, Value program);


  RowContext &ctx;
  // Ordered: kernel code follows its order, and the output must be the
  // same on every run.
  llvm::MapVector<Value, Value> partialArrays; // workspace -> accumulator
  DenseMap<Value, Value> combineBuffers;       // workspace -> [S, N] (S > 1)
};

} // namespace

void RegisterPartials::allocate() {
  OpBuilder &b = ctx.b;
  Location loc = ctx.loc;
  int64_t size = ctx.g.chunksPerLane * ctx.g.vec;
  for (memref::StoreOp store : partialRowStores(ctx.nest)) {
    Type t = store.getValue().getType();
    Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(t));
    Value acc = memref::AllocaOp::create(b, loc, MemRefType::get({size}, t));
    for (int64_t i = 0; i < size; ++i)
      memref::StoreOp::create(b, loc, zero, acc, ValueRange{ctx.c(i)});
    partialArrays[store.getMemRef()] = acc;
  }
}

bool RegisterPartials::load(OpBuilder &rb, memref::LoadOp load,
                            std::optional<int64_t> k, int64_t e, IRMapping &m,
                            Value active) {
  return ctx.loadPrivate(rb, partialArrays.lookup(load.getMemRef()), load, k, e,
                         m);
}

bool RegisterPartials::store(OpBuilder &rb, memref::StoreOp store,
                             std::optional<int64_t> k, int64_t e, IRMapping &m,
                             Value active) {
  return ctx.storePrivate(rb, partialArrays.lookup(store.getMemRef()), store, k,
                          e, m);
}

void RegisterPartials::writeBack() {
  if (partialArrays.empty())
    return;
  OpBuilder &b = ctx.b;
  Location loc = ctx.loc;
  const Geometry &g = ctx.g;
  auto c = [&](int64_t v) { return ctx.c(v); };
  int64_t n = *g.n;
  Value p = ctx.base.lookup(ctx.nest.programIV);
  for (auto [ws, accumulator] : partialArrays) {
    // Lambdas do not capture structured bindings before C++20 (clang).
    Value acc = accumulator;
    Value wsK = ctx.base.lookupOrDefault(ws);
    if (g.rows == 1 && writeBackVectors(acc, wsK, p))
      continue;
    if (g.rows == 1) {
      // One row in flight: each thread owns its columns of the partial row.
      for (int64_t k = 0; k < g.chunksPerLane; ++k)
        for (int64_t e = 0; e < g.vec; ++e) {
          Value chunk = arith::AddIOp::create(b, loc, ctx.lane, c(k * g.lanes));
          Value j = ctx.columnOf(b, chunk, e);
          Value v =
              memref::LoadOp::create(b, loc, acc, ValueRange{c(k * g.vec + e)});
          if (ctx.groupWhole(k)) {
            markFinalPartial(
                memref::StoreOp::create(b, loc, v, wsK, ValueRange{p, j}));
            continue;
          }
          Value inRange =
              arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, j, c(n));
          scf::IfOp::create(b, loc, inRange, [&](OpBuilder &ib, Location) {
            markFinalPartial(
                memref::StoreOp::create(ib, loc, v, wsK, ValueRange{p, j}));
            scf::YieldOp::create(ib, loc);
          });
        }
      continue;
    }
    // One combine buffer per partial row, shared by the two layouts' bodies.
    Value &buffer = combineBuffers[ws];
    if (!buffer)
      buffer = addSharedBuffer(ctx.launch, {g.rows, n}, b.getF32Type(), loc);
    Value smem = buffer;
    for (int64_t k = 0; k < g.chunksPerLane; ++k)
      for (int64_t e = 0; e < g.vec; ++e) {
        Value chunk = arith::AddIOp::create(b, loc, ctx.lane, c(k * g.lanes));
        Value j = ctx.columnOf(b, chunk, e);
        bool certain = (k + 1) * g.lanes * g.vec <= n;
        Value v =
            memref::LoadOp::create(b, loc, acc, ValueRange{c(k * g.vec + e)});
        auto store = [&](OpBuilder &sb) {
          memref::StoreOp::create(sb, loc, v, smem,
                                  ValueRange{ctx.subgroup, j});
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
        b, loc, ctx.tid, c(n), c(g.threads), ValueRange{},
        [&](OpBuilder &fb, Location, Value j, ValueRange) {
          Value s = memref::LoadOp::create(fb, loc, smem,
                                           ValueRange{cIndex(fb, loc, 0), j});
          for (int64_t q = 1; q < g.rows; ++q)
            s = arith::AddFOp::create(
                fb, loc, s,
                memref::LoadOp::create(fb, loc, smem,
                                       ValueRange{cIndex(fb, loc, q), j}));
          markFinalPartial(
              memref::StoreOp::create(fb, loc, s, wsK, ValueRange{p, j}));
          scf::YieldOp::create(fb, loc);
        });
    gpu::BarrierOp::create(b, loc);
  }
}

// An element a store, lanes V columns apart, touched 8x the sectors a
// 16-byte store does and kept the load/store unit busy: LayerNorm bf16
// 64 x 65536 (cluster 8, two partial rows in registers) ran its dx kernel in
// 113 us against 30 for RMSNorm, whose one partial row lived in shared
// memory (ncu: long-scoreboard and lg-throttle stalls, 6% of DRAM).
bool RegisterPartials::writeBackVectors(Value acc, Value ws, Value program) {
  const Geometry &g = ctx.g;
  int64_t width =
      ctx.partialVectorWidth(cast<MemRefType>(acc.getType()).getElementType());
  if (!width)
    return false;
  OpBuilder &b = ctx.b;
  Location loc = ctx.loc;
  auto c = [&](int64_t v) { return ctx.c(v); };
  for (int64_t k = 0; k < g.chunksPerLane; ++k) {
    Value chunk = arith::AddIOp::create(b, loc, ctx.lane, c(k * g.lanes));
    Value j0 = ctx.columnOf(b, chunk, 0);
    auto emit = [&](OpBuilder &sb) {
      SmallVector<Value> sums;
      for (int64_t e = 0; e < g.vec; ++e)
        sums.push_back(memref::LoadOp::create(
            sb, loc, acc, ValueRange{cIndex(sb, loc, k * g.vec + e)}));
      ctx.storePartialChunk(sb, ws, program, j0, sums, width,
                            /*final=*/true);
    };
    if (ctx.groupWhole(k)) {
      emit(b);
      continue;
    }
    // N is a multiple of V: a chunk is all in the row or all past it.
    Value inRange =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, j0, c(*g.n));
    scf::IfOp::create(b, loc, inRange, [&](OpBuilder &ib, Location) {
      emit(ib);
      scf::YieldOp::create(ib, loc);
    });
  }
  return true;
}

std::unique_ptr<Partials> norm::makeRegisterPartials(RowContext &ctx) {
  return std::make_unique<RegisterPartials>(ctx);
}
