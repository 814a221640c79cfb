//===- NormToGPU.cpp - fused row loop nests -> gpu.launch kernels ---------===//
//
// Part of mlir-norm.
//
// Maps the tagged nests of norm-lower-to-loops (docs/Lowering.md) to GPU
// kernels. The row nests (`dx`, `forward`) share one mapper: a block per
// program, rows to sub-groups of L lanes, columns to lanes in chunks of V
// elements (one 16-byte access), in-row sums by butterfly shuffles and one
// fixed-order shared-memory step across warps. Everything that decides the
// order of a floating-point sum is a function of N alone.
//
//===----------------------------------------------------------------------===//

#include "norm/Conversion/NormToGPU/TargetInfo.h"
#include "norm/Conversion/Passes.h"
#include "norm/Dialect/Norm/IR/NormOps.h"
#include "norm/Dialect/Norm/IR/StageContract.h"
#include "norm/Support/ManifestSchema.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

namespace mlir::norm {
#define GEN_PASS_DEF_NORMMAPTOGPU
#include "norm/Conversion/Passes.h.inc"
} // namespace mlir::norm

using namespace mlir;

namespace {

constexpr int64_t kWarp = 32;
constexpr int64_t kVectorBytes = 16;

/// A per-program row cache (norm.row_cache), by the value of the buffer.
bool isRowCacheBuffer(Value memref) {
  Operation *def = memref.getDefiningOp();
  return def && norm::isRowCache(def);
}

/// Terminates an scf.if branch built by `getThenBodyBuilder` /
/// `getElseBodyBuilder`: an if without results already has its yield.
void yieldFrom(OpBuilder &b, Location loc, ValueRange values) {
  Block *block = b.getInsertionBlock();
  if (!block->empty() && block->back().hasTrait<OpTrait::IsTerminator>())
    return;
  scf::YieldOp::create(b, loc, values);
}

Value cIndex(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

/// How a row nest is spread over a block.
struct Geometry {
  int64_t threads = 256; // T
  int64_t lanes = 256;   // L: lanes per row, a power of two dividing T
  int64_t rows = 1;      // S = T / L: rows in flight per block
  int64_t vec = 1;       // V: elements per chunk (one 16-byte access)
  bool registers = false;
  int64_t chunksPerLane = 0; // K, register regime
  std::optional<int64_t> n;
};

Geometry chooseGeometry(std::optional<int64_t> n, int64_t eltBytes,
                        int64_t threads, int64_t maxRegisterElements,
                        bool wholeBlockRows) {
  Geometry g;
  g.threads = threads;
  g.vec = std::max<int64_t>(1, kVectorBytes / eltBytes);
  g.n = n;
  g.lanes = threads;
  g.rows = 1;
  if (!n) {
    g.vec = 1; // no 16-byte chunks without a static N: coalesced elements
    return g;
  }
  int64_t chunks = llvm::divideCeil(*n, g.vec);
  int64_t lanes = std::min<int64_t>(threads, llvm::PowerOf2Ceil(chunks));
  if (wholeBlockRows)
    lanes = threads;
  int64_t k = llvm::divideCeil(chunks, lanes);
  if (k * g.vec > maxRegisterElements)
    return g; // looped regime: whole block per row, re-read from L2
  g.registers = true;
  g.lanes = lanes;
  g.rows = threads / lanes;
  g.chunksPerLane = k;
  return g;
}

/// Clones into `launch` every memory-effect-free, region-free op defined
/// outside it whose result the body uses, so kernels compute their index
/// arithmetic from the memref descriptors instead of taking it as
/// arguments.
void sinkIntoLaunch(gpu::LaunchOp launch) {
  Block &body = launch.getBody().front();
  DenseMap<Value, Value> sunk;
  OpBuilder b = OpBuilder::atBlockBegin(&body);
  std::function<Value(Value)> sink = [&](Value v) -> Value {
    if (Value s = sunk.lookup(v))
      return s;
    Operation *def = v.getDefiningOp();
    if (!def || def->getNumRegions() || !isMemoryEffectFree(def) ||
        launch->isAncestor(def))
      return v;
    IRMapping map;
    for (Value operand : def->getOperands())
      map.map(operand, sink(operand));
    Operation *copy = b.clone(*def, map);
    for (auto [from, to] : llvm::zip(def->getResults(), copy->getResults()))
      sunk[from] = to;
    return sunk[v];
  };
  launch.getBody().walk([&](Operation *op) {
    for (OpOperand &use : op->getOpOperands()) {
      Value v = use.get();
      if (v.getParentRegion() &&
          launch->isAncestor(v.getParentRegion()->getParentOp()))
        continue;
      Value s = sink(v);
      if (s != v)
        use.set(s);
    }
  });
}

/// A `gpu.launch` of `grid` blocks of `threads` threads whose body `build`
/// fills (given block id x and thread id x); the kernel is named `name`.
gpu::LaunchOp
createLaunch(OpBuilder &b, Location loc, Value grid, int64_t threads,
             StringRef name,
             function_ref<void(OpBuilder &, gpu::LaunchOp)> build) {
  Value one = cIndex(b, loc, 1);
  auto launch = gpu::LaunchOp::create(b, loc, grid, one, one,
                                      cIndex(b, loc, threads), one, one);
  // All kernels of a function go to one gpu.module (one PTX file).
  auto func = launch->getParentOfType<func::FuncOp>();
  launch.setModuleAttr(FlatSymbolRefAttr::get(
      b.getContext(), (func.getName() + "_kernels").str()));
  launch.setFunctionAttr(FlatSymbolRefAttr::get(b.getContext(), name));
  OpBuilder inner = OpBuilder::atBlockBegin(&launch.getBody().front());
  gpu::TerminatorOp::create(inner, loc);
  inner.setInsertionPointToStart(&launch.getBody().front());
  build(inner, launch);
  return launch;
}

//===----------------------------------------------------------------------===//
// Row nests
//===----------------------------------------------------------------------===//

/// Everything the row mapper knows about one nest.
struct RowNest {
  scf::ForOp nest;      // the tagged outer loop
  scf::ForOp rows;      // the row loop (== nest for forward)
  Value programIV;      // p (null for forward)
  Geometry geometry;
  bool deterministicPartials = false;
  bool locked = false;
  /// Limits of the target (shared memory); never the sum order.
  const norm::TargetInfo *target = nullptr;
};

class RowMapper {
public:
  RowMapper(OpBuilder &b, Location loc, RowNest &nest, gpu::LaunchOp launch)
      : b(b), loc(loc), nest(nest), g(nest.geometry), launch(launch) {}

  /// Emits the kernel body for rows [lo, hi); `programMap` maps the
  /// program loop's values to the kernel's.
  LogicalResult emit(Value lo, Value hi, const IRMapping &programMap);

private:
  // Kernel-wide state.
  OpBuilder &b;
  Location loc;
  RowNest &nest;
  Geometry g;
  gpu::LaunchOp launch;
  Value tid, lane, subgroup, rowIV, rowActive, aligned;
  IRMapping base; // program-level values -> kernel values
  DenseMap<Value, Value> reduced;           // loop results -> reduced sums
  // Ordered maps: kernel parameters and code follow their order, and the
  // output must be the same on every run.
  llvm::MapVector<Value, Value> privateArrays; // cache memref -> private array
  llvm::MapVector<Value, Value> partialArrays; // workspace -> accumulator
  /// Accumulators in shared memory (one row in flight: each column has one
  /// owner thread) instead of registers. Slot (k * V + e) * L + lane holds
  /// element e of the lane's k-th chunk, so the lanes of a warp touch
  /// consecutive words: no bank conflicts.
  bool partialsByColumn = false;
  Value partialSlot(OpBuilder &rb, int64_t k, int64_t e) {
    return arith::AddIOp::create(
        rb, loc, cIndex(rb, loc, (k * g.vec + e) * g.lanes), lane);
  }
  SmallVector<Value> shuffleScratch;        // cross-warp reduce buffers

  Value c(int64_t v) { return cIndex(b, loc, v); }

  Value materialize(OpBuilder &rb, Value v, IRMapping &m);
  void emitColumnLoop(OpBuilder &rb, scf::ForOp loop, IRMapping &m,
                      SmallVector<Value> &carried);
  void emitChunk(OpBuilder &rb, scf::ForOp loop, IRMapping &m, Value chunk,
                 std::optional<int64_t> k, bool vectorized,
                 SmallVector<Value> &carried);
  void emitElement(OpBuilder &rb, scf::ForOp loop, IRMapping m, Value j,
                   std::optional<int64_t> k, int64_t e,
                   DenseMap<Value, Value> *vectors,
                   DenseMap<Value, SmallVector<Value>> *stores,
                   SmallVector<Value> &carried);
  SmallVector<Value> crossLaneReduce(ValueRange partials);
  /// `if (row active && thread 0) { body }`: the block's one lock holder.
  void onLeader(function_ref<void(OpBuilder &, IRMapping &)> body) {
    Value first =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid, c(0));
    scf::IfOp::create(b, loc, arith::AndIOp::create(b, loc, rowActive, first),
                      [&](OpBuilder &ib, Location) {
                        IRMapping m = base;
                        body(ib, m);
                        scf::YieldOp::create(ib, loc);
                      });
  }
  bool isRowAccess(Operation *op, scf::ForOp loop, Value memref,
                   ValueRange indices);
  void combinePartials();
};

/// Materialises `v` (of the original row body) in the region built by `rb`:
/// mapped values as mapped, reduced loop results as reduced, pure ops and
/// loads of the row body cloned again (they are cheap and their inputs are
/// not modified), everything else as the kernel-level value.
Value RowMapper::materialize(OpBuilder &rb, Value v, IRMapping &m) {
  if (Value mapped = m.lookupOrNull(v))
    return mapped;
  if (Value r = reduced.lookup(v)) {
    m.map(v, r);
    return r;
  }
  Operation *def = v.getDefiningOp();
  Block *rowBody = nest.rows.getBody();
  if (!def || !rowBody->getParentOp()->isAncestor(def) ||
      def == nest.rows.getOperation()) {
    Value outer = base.lookupOrDefault(v);
    m.map(v, outer);
    return outer;
  }
  for (Value operand : def->getOperands())
    materialize(rb, operand, m);
  Operation *copy = rb.clone(*def, m);
  (void)copy;
  return m.lookup(v);
}

/// A chunkable access: a row memref at [r, j] or a column vector (weight,
/// bias) at [j], j the column loop's induction variable.
bool RowMapper::isRowAccess(Operation *op, scf::ForOp loop, Value memref,
                            ValueRange indices) {
  auto type = dyn_cast<MemRefType>(memref.getType());
  if (!type || privateArrays.count(memref) || partialArrays.count(memref))
    return false;
  if (isRowCacheBuffer(memref))
    return false;
  if (type.getRank() == 2 && indices.size() == 2)
    return indices[0] == nest.rows.getInductionVar() &&
           indices[1] == loop.getInductionVar();
  return type.getRank() == 1 && indices.size() == 1 &&
         indices[0] == loop.getInductionVar();
}

void RowMapper::emitElement(OpBuilder &rb, scf::ForOp loop, IRMapping m,
                            Value j, std::optional<int64_t> k, int64_t e,
                            DenseMap<Value, Value> *vectors,
                            DenseMap<Value, SmallVector<Value>> *stores,
                            SmallVector<Value> &carried) {
  m.map(loop.getInductionVar(), j);
  for (auto [arg, value] : llvm::zip(loop.getRegionIterArgs(), carried))
    m.map(arg, value);
  auto privateIndex = [&]() {
    return cIndex(rb, loc, *k * g.vec + e);
  };
  for (Operation &op : loop.getBody()->without_terminator()) {
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      if (vectors && vectors->count(load.getMemRef()) &&
          isRowAccess(&op, loop, load.getMemRef(), load.getIndices())) {
        m.map(load.getResult(),
              vector::ExtractOp::create(rb, loc,
                                        (*vectors)[load.getMemRef()], e));
        continue;
      }
      if (Value acc = partialArrays.lookup(load.getMemRef());
          acc && partialsByColumn) {
        m.map(load.getResult(),
              memref::LoadOp::create(rb, loc, acc,
                                     ValueRange{partialSlot(rb, *k, e)}));
        continue;
      }
      Value arr = privateArrays.lookup(load.getMemRef());
      if (!arr)
        arr = partialArrays.lookup(load.getMemRef());
      if (arr && k) {
        m.map(load.getResult(),
              memref::LoadOp::create(rb, loc, arr, ValueRange{privateIndex()}));
        continue;
      }
    }
    if (auto store = dyn_cast<memref::StoreOp>(op)) {
      if (stores && isRowAccess(&op, loop, store.getMemRef(),
                                store.getIndices())) {
        (*stores)[store.getMemRef()].push_back(
            materialize(rb, store.getValue(), m));
        continue;
      }
      if (Value acc = partialArrays.lookup(store.getMemRef());
          acc && partialsByColumn) {
        memref::StoreOp::create(rb, loc, materialize(rb, store.getValue(), m),
                                acc, ValueRange{partialSlot(rb, *k, e)});
        continue;
      }
      Value arr = privateArrays.lookup(store.getMemRef());
      if (!arr)
        arr = partialArrays.lookup(store.getMemRef());
      if (arr && k) {
        memref::StoreOp::create(rb, loc, materialize(rb, store.getValue(), m),
                                arr, ValueRange{privateIndex()});
        continue;
      }
    }
    for (Value operand : op.getOperands())
      materialize(rb, operand, m);
    rb.clone(op, m);
  }
  auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
  for (auto [i, v] : llvm::enumerate(yield.getOperands()))
    carried[i] = materialize(rb, v, m);
}

void RowMapper::emitChunk(OpBuilder &rb, scf::ForOp loop, IRMapping &m,
                          Value chunk, std::optional<int64_t> k,
                          bool vectorized, SmallVector<Value> &carried) {
  Value n = materialize(rb, loop.getUpperBound(), m);
  Value j0 = arith::MulIOp::create(rb, loc, chunk, cIndex(rb, loc, g.vec));
  bool tail = !g.n || *g.n % g.vec != 0;
  if (!vectorized) {
    for (int64_t e = 0; e < g.vec; ++e) {
      Value j = arith::AddIOp::create(rb, loc, j0, cIndex(rb, loc, e));
      if (!tail) {
        emitElement(rb, loop, m, j, k, e, nullptr, nullptr, carried);
        continue;
      }
      Value inRange =
          arith::CmpIOp::create(rb, loc, arith::CmpIPredicate::ult, j, n);
      auto ifOp = scf::IfOp::create(rb, loc, TypeRange(ValueRange(carried)),
                                    inRange, /*withElseRegion=*/true);
      OpBuilder tb = ifOp.getThenBodyBuilder();
      SmallVector<Value> next = carried;
      emitElement(tb, loop, m, j, k, e, nullptr, nullptr, next);
      yieldFrom(tb, loc, next);
      OpBuilder eb = ifOp.getElseBodyBuilder();
      yieldFrom(eb, loc, carried);
      carried.assign(ifOp.getResults().begin(), ifOp.getResults().end());
    }
    return;
  }
  // One 16-byte access per row memref the body reads, V elements, one
  // access per row memref it writes.
  DenseMap<Value, Value> vectors;
  DenseMap<Value, SmallVector<Value>> stores;
  SmallVector<Value> storeOrder;
  Value r = materialize(rb, nest.rows.getInductionVar(), m);
  for (Operation &op : loop.getBody()->without_terminator()) {
    if (auto load = dyn_cast<memref::LoadOp>(op);
        load && isRowAccess(&op, loop, load.getMemRef(), load.getIndices()) &&
        !vectors.count(load.getMemRef())) {
      Value mem = base.lookupOrDefault(load.getMemRef());
      auto vt = VectorType::get({g.vec}, load.getType());
      SmallVector<Value> at = load.getIndices().size() == 2
                                  ? SmallVector<Value>{r, j0}
                                  : SmallVector<Value>{j0};
      vectors[load.getMemRef()] = vector::LoadOp::create(
          rb, loc, vt, mem, at, /*nontemporal=*/false,
          llvm::MaybeAlign(kVectorBytes));
    }
    if (auto store = dyn_cast<memref::StoreOp>(op);
        store &&
        isRowAccess(&op, loop, store.getMemRef(), store.getIndices()) &&
        !llvm::is_contained(storeOrder, store.getMemRef()))
      storeOrder.push_back(store.getMemRef());
  }
  for (int64_t e = 0; e < g.vec; ++e) {
    Value j = arith::AddIOp::create(rb, loc, j0, cIndex(rb, loc, e));
    emitElement(rb, loop, m, j, k, e, &vectors, &stores, carried);
  }
  for (Value mem : storeOrder) {
    SmallVector<Value> &elems = stores[mem];
    auto vt = VectorType::get({g.vec}, elems.front().getType());
    Value v = vector::FromElementsOp::create(rb, loc, vt, elems);
    SmallVector<Value> at = cast<MemRefType>(mem.getType()).getRank() == 2
                                ? SmallVector<Value>{r, j0}
                                : SmallVector<Value>{j0};
    vector::StoreOp::create(rb, loc, v, base.lookupOrDefault(mem), at,
                            /*nontemporal=*/false,
                            llvm::MaybeAlign(kVectorBytes));
  }
}

void RowMapper::emitColumnLoop(OpBuilder &rb, scf::ForOp loop, IRMapping &m,
                               SmallVector<Value> &carried) {
  for (Value init : loop.getInitArgs())
    carried.push_back(materialize(rb, init, m));
  // Row-level values the body uses, once per row rather than per element.
  loop.walk([&](Operation *op) {
    for (Value operand : op->getOperands())
      if (!loop->isAncestor(operand.getParentRegion()->getParentOp()))
        materialize(rb, operand, m);
  });
  Value n = materialize(rb, loop.getUpperBound(), m);
  Value chunks = arith::CeilDivUIOp::create(rb, loc, n,
                                            cIndex(rb, loc, g.vec));
  // Vector accesses need, at run time, 16-byte aligned rows and a whole
  // chunk (only the last chunk of a row whose N is not a multiple of V is
  // partial: it takes the element path).
  bool mayVectorize = g.n && g.vec > 1;
  bool partialLast = g.n && *g.n % g.vec != 0;
  auto chunkBody = [&](OpBuilder &cb, Value chunk, std::optional<int64_t> k,
                       SmallVector<Value> &vals) {
    if (!mayVectorize) {
      emitChunk(cb, loop, m, chunk, k, /*vectorized=*/false, vals);
      return;
    }
    Value useVector = aligned;
    if (partialLast) {
      Value end = arith::AddIOp::create(
          cb, loc,
          arith::MulIOp::create(cb, loc, chunk, cIndex(cb, loc, g.vec)),
          cIndex(cb, loc, g.vec));
      useVector = arith::AndIOp::create(
          cb, loc, useVector,
          arith::CmpIOp::create(cb, loc, arith::CmpIPredicate::ule, end, n));
    }
    auto ifOp = scf::IfOp::create(cb, loc, TypeRange(ValueRange(vals)),
                                  useVector, /*withElseRegion=*/true);
    OpBuilder tb = ifOp.getThenBodyBuilder();
    SmallVector<Value> v1 = vals;
    emitChunk(tb, loop, m, chunk, k, /*vectorized=*/true, v1);
    yieldFrom(tb, loc, v1);
    OpBuilder eb = ifOp.getElseBodyBuilder();
    SmallVector<Value> v2 = vals;
    emitChunk(eb, loop, m, chunk, k, /*vectorized=*/false, v2);
    yieldFrom(eb, loc, v2);
    vals.assign(ifOp.getResults().begin(), ifOp.getResults().end());
  };

  if (g.registers) {
    // K chunks per lane, unrolled, so private arrays use constant indices.
    int64_t numChunks = llvm::divideCeil(*g.n, g.vec);
    for (int64_t k = 0; k < g.chunksPerLane; ++k) {
      Value chunk = arith::AddIOp::create(
          rb, loc, lane, cIndex(rb, loc, k * g.lanes));
      if ((k + 1) * g.lanes <= numChunks) {
        chunkBody(rb, chunk, k, carried);
        continue;
      }
      Value inRange = arith::CmpIOp::create(rb, loc, arith::CmpIPredicate::ult,
                                            chunk, chunks);
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
    return;
  }
  auto forOp = scf::ForOp::create(
      rb, loc, lane, chunks, cIndex(rb, loc, g.lanes), carried,
      [&](OpBuilder &fb, Location, Value chunk, ValueRange iter) {
        SmallVector<Value> vals(iter.begin(), iter.end());
        chunkBody(fb, chunk, std::nullopt, vals);
        scf::YieldOp::create(fb, loc, vals);
      });
  // Four chunks per iteration: their loads do not depend on each other's
  // sums, so they are in flight together (the sums keep their order). With
  // a trip count unknown here, unrolling adds an epilogue loop, whose
  // results are then the final ones.
  FailureOr<UnrolledLoopInfo> unrolled = loopUnrollByFactor(forOp, 4);
  scf::ForOp last = forOp;
  if (succeeded(unrolled) && unrolled->epilogueLoopOp)
    last = *unrolled->epilogueLoopOp;
  carried.assign(last.getResults().begin(), last.getResults().end());
}

SmallVector<Value> RowMapper::crossLaneReduce(ValueRange partials) {
  SmallVector<Value> vals(partials.begin(), partials.end());
  int64_t inWarp = std::min(g.lanes, kWarp);
  for (Value &v : vals)
    for (int64_t off = inWarp / 2; off >= 1; off /= 2) {
      auto shfl = gpu::ShuffleOp::create(b, loc, v, off, kWarp,
                                         gpu::ShuffleMode::XOR);
      v = arith::AddFOp::create(b, loc, v, shfl.getShuffleResult());
    }
  if (g.lanes <= kWarp)
    return vals;
  // Across the warps of a row: one shared-memory step, fixed order.
  int64_t warpsPerRow = g.lanes / kWarp;
  Value warp = arith::DivUIOp::create(b, loc, tid, c(kWarp));
  Value laneInWarp = arith::RemUIOp::create(b, loc, tid, c(kWarp));
  Value leader = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                       laneInWarp, c(0));
  for (auto [i, v] : llvm::enumerate(vals)) {
    Value scratch = shuffleScratch[i];
    scf::IfOp::create(b, loc, leader, [&](OpBuilder &ib, Location) {
      memref::StoreOp::create(ib, loc, v, scratch, ValueRange{warp});
      scf::YieldOp::create(ib, loc);
    });
  }
  gpu::BarrierOp::create(b, loc);
  Value first = arith::MulIOp::create(b, loc, subgroup, c(warpsPerRow));
  for (auto [i, v] : llvm::enumerate(vals)) {
    Value s = memref::LoadOp::create(b, loc, shuffleScratch[i],
                                     ValueRange{first});
    for (int64_t w = 1; w < warpsPerRow; ++w) {
      Value idx = arith::AddIOp::create(b, loc, first, c(w));
      s = arith::AddFOp::create(
          b, loc, s,
          memref::LoadOp::create(b, loc, shuffleScratch[i], ValueRange{idx}));
    }
    v = s;
  }
  gpu::BarrierOp::create(b, loc);
  return vals;
}

void RowMapper::combinePartials() {
  if (partialArrays.empty())
    return;
  // Every sub-group's partial row goes to shared memory, then thread t sums
  // column j = t, t + T, ... over the sub-groups in order 0..S-1.
  int64_t n = *g.n;
  Value p = base.lookup(nest.programIV);
  if (partialsByColumn)
    gpu::BarrierOp::create(b, loc);
  for (auto [ws, acc] : partialArrays) {
    Value wsK = base.lookupOrDefault(ws);
    int64_t numChunks = llvm::divideCeil(n, g.vec);
    if (partialsByColumn) {
      scf::ForOp::create(
          b, loc, tid, c(n), c(g.threads), ValueRange{},
          [&](OpBuilder &fb, Location, Value j, ValueRange) {
            // Column j is element e of chunk c = j / V, which lane c % L
            // holds as its chunk k = c / L.
            auto ci = [&](int64_t v) { return cIndex(fb, loc, v); };
            Value chunk = arith::DivUIOp::create(fb, loc, j, ci(g.vec));
            Value e = arith::RemUIOp::create(fb, loc, j, ci(g.vec));
            Value owner = arith::RemUIOp::create(fb, loc, chunk, ci(g.lanes));
            Value k = arith::DivUIOp::create(fb, loc, chunk, ci(g.lanes));
            Value slot = arith::AddIOp::create(
                fb, loc,
                arith::MulIOp::create(
                    fb, loc,
                    arith::AddIOp::create(
                        fb, loc, arith::MulIOp::create(fb, loc, k, ci(g.vec)),
                        e),
                    ci(g.lanes)),
                owner);
            Value v = memref::LoadOp::create(fb, loc, acc, ValueRange{slot});
            memref::StoreOp::create(fb, loc, v, wsK, ValueRange{p, j});
            scf::YieldOp::create(fb, loc);
          });
      continue;
    }
    if (g.rows == 1) {
      // One row in flight: each thread owns its columns of the partial row.
      for (int64_t k = 0; k < g.chunksPerLane; ++k)
        for (int64_t e = 0; e < g.vec; ++e) {
          Value chunk = arith::AddIOp::create(b, loc, lane, c(k * g.lanes));
          Value j = arith::AddIOp::create(
              b, loc, arith::MulIOp::create(b, loc, chunk, c(g.vec)), c(e));
          Value v = memref::LoadOp::create(b, loc, acc,
                                           ValueRange{c(k * g.vec + e)});
          if ((k + 1) * g.lanes <= numChunks && n % g.vec == 0) {
            memref::StoreOp::create(b, loc, v, wsK, ValueRange{p, j});
            continue;
          }
          Value inRange = arith::CmpIOp::create(
              b, loc, arith::CmpIPredicate::ult, j, c(n));
          scf::IfOp::create(b, loc, inRange, [&](OpBuilder &ib, Location) {
            memref::StoreOp::create(ib, loc, v, wsK, ValueRange{p, j});
            scf::YieldOp::create(ib, loc);
          });
        }
      continue;
    }
    auto smemType = MemRefType::get(
        {g.rows, n}, b.getF32Type(), AffineMap(),
        gpu::AddressSpaceAttr::get(b.getContext(),
                                   gpu::AddressSpace::Workgroup));
    Value smem = launch.addWorkgroupAttribution(smemType, loc);
    for (int64_t k = 0; k < g.chunksPerLane; ++k)
      for (int64_t e = 0; e < g.vec; ++e) {
        Value chunk = arith::AddIOp::create(b, loc, lane, c(k * g.lanes));
        Value j = arith::AddIOp::create(
            b, loc, arith::MulIOp::create(b, loc, chunk, c(g.vec)), c(e));
        bool certain = (k + 1) * g.lanes <= numChunks && n % g.vec == 0;
        Value v = memref::LoadOp::create(b, loc, acc,
                                         ValueRange{c(k * g.vec + e)});
        auto store = [&](OpBuilder &sb) {
          memref::StoreOp::create(sb, loc, v, smem,
                                  ValueRange{subgroup, j});
        };
        if (certain) {
          store(b);
          continue;
        }
        Value inRange = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                              j, c(n));
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

LogicalResult RowMapper::emit(Value lo, Value hi,
                              const IRMapping &programMap) {
  base = programMap;
  tid = launch.getThreadIds().x;
  lane = arith::RemUIOp::create(b, loc, tid, c(g.lanes));
  subgroup = arith::DivUIOp::create(b, loc, tid, c(g.lanes));
  Block *rowBody = nest.rows.getBody();

  // Row memrefs (read or written at [r, j]) and their 16-byte alignment.
  SetVector<Value> rowMemrefs;
  rowBody->walk([&](Operation *op) {
    auto loop = op->getParentOfType<scf::ForOp>();
    if (!loop || loop == nest.rows)
      return;
    if (auto l = dyn_cast<memref::LoadOp>(op);
        l && isRowAccess(op, loop, l.getMemRef(), l.getIndices()))
      rowMemrefs.insert(l.getMemRef());
    if (auto s = dyn_cast<memref::StoreOp>(op);
        s && isRowAccess(op, loop, s.getMemRef(), s.getIndices()))
      rowMemrefs.insert(s.getMemRef());
  });
  aligned = arith::ConstantIntOp::create(b, loc, 1, 1);
  for (Value mem : rowMemrefs) {
    if (isRowCacheBuffer(mem))
      continue;
    Value km = base.lookupOrDefault(mem);
    auto type = cast<MemRefType>(mem.getType());
    int64_t eltBytes = type.getElementTypeBitWidth() / 8;
    auto meta = memref::ExtractStridedMetadataOp::create(b, loc, km);
    Value ptr = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, km);
    Value off = arith::MulIOp::create(b, loc, meta.getOffset(), c(eltBytes));
    Value bits = arith::AddIOp::create(b, loc, ptr, off);
    if (type.getRank() == 2)
      bits = arith::OrIOp::create(
          b, loc, bits,
          arith::MulIOp::create(b, loc, meta.getStrides()[0], c(eltBytes)));
    Value unitInner =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                              meta.getStrides().back(), c(1));
    Value ok = arith::AndIOp::create(
        b, loc,
        arith::CmpIOp::create(
            b, loc, arith::CmpIPredicate::eq,
            arith::RemUIOp::create(b, loc, bits, c(kVectorBytes)), c(0)),
        unitInner);
    aligned = arith::AndIOp::create(b, loc, aligned, ok);
  }

  // Private arrays: row caches and deterministic partial rows.
  if (g.registers) {
    int64_t size = g.chunksPerLane * g.vec;
    rowBody->walk([&](memref::StoreOp store) {
      if (isRowCacheBuffer(store.getMemRef()) &&
          !privateArrays.count(store.getMemRef()))
        privateArrays[store.getMemRef()] = memref::AllocaOp::create(
            b, loc,
            MemRefType::get({size}, store.getValue().getType()));
    });
    SmallVector<memref::StoreOp> partialStores;
    if (nest.deterministicPartials)
      rowBody->walk([&](memref::StoreOp store) {
        if (store.getIndices().size() == 2 &&
            store.getIndices()[0] == nest.programIV &&
            !llvm::any_of(partialStores, [&](memref::StoreOp s) {
              return s.getMemRef() == store.getMemRef();
            }))
          partialStores.push_back(store);
      });
    // One row in flight: the partial rows live in shared memory (registers
    // are better spent on the row cache, so more rows are in flight per SM).
    int64_t slots = g.chunksPerLane * g.vec * g.lanes;
    // Shared memory for the partial rows, leaving 16 KB of the static
    // budget to the reductions' scratch.
    int64_t budget = nest.target->maxStaticSharedBytes - 16 * 1024;
    partialsByColumn = g.rows == 1 && !partialStores.empty() &&
                       int64_t(partialStores.size()) * slots * 4 <= budget;
    for (memref::StoreOp store : partialStores) {
      Type t = store.getValue().getType();
      Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(t));
      if (partialsByColumn) {
        Value acc = launch.addWorkgroupAttribution(
            MemRefType::get({slots}, t, AffineMap(),
                            gpu::AddressSpaceAttr::get(
                                b.getContext(), gpu::AddressSpace::Workgroup)),
            loc);
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
    if (partialsByColumn)
      gpu::BarrierOp::create(b, loc);
  }
  if (g.lanes > kWarp)
    for (int i = 0; i < 2; ++i)
      shuffleScratch.push_back(launch.addWorkgroupAttribution(
          MemRefType::get({g.threads / kWarp}, b.getF32Type(), AffineMap(),
                          gpu::AddressSpaceAttr::get(
                              b.getContext(), gpu::AddressSpace::Workgroup)),
          loc));

  // Waves of S rows: every thread runs the same number of iterations, so
  // barriers and shuffles are uniform; sub-groups past `hi` idle.
  auto waves = scf::ForOp::create(b, loc, lo, hi, c(g.rows));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(waves.getBody()->getTerminator());
  rowIV = arith::AddIOp::create(b, loc, waves.getInductionVar(), subgroup);
  rowActive =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, rowIV, hi);
  base.map(nest.rows.getInductionVar(), rowIV);
  Value laneZero =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane, c(0));

  for (Operation &op : rowBody->without_terminator()) {
    if (auto loop = dyn_cast<scf::ForOp>(op)) {
      if (loop.getNumResults()) {
        auto ifOp = scf::IfOp::create(b, loc, loop.getResultTypes(),
                                      rowActive, /*withElseRegion=*/true);
        OpBuilder tb = ifOp.getThenBodyBuilder();
        IRMapping m = base;
        SmallVector<Value> carried;
        emitColumnLoop(tb, loop, m, carried);
        yieldFrom(tb, loc, carried);
        OpBuilder eb = ifOp.getElseBodyBuilder();
        IRMapping m2 = base;
        SmallVector<Value> inits;
        for (Value init : loop.getInitArgs())
          inits.push_back(materialize(eb, init, m2));
        yieldFrom(eb, loc, inits);
        SmallVector<Value> sums = crossLaneReduce(ifOp.getResults());
        for (auto [res, s] : llvm::zip(loop.getResults(), sums))
          reduced[res] = s;
        continue;
      }
      scf::IfOp::create(b, loc, rowActive, [&](OpBuilder &ib, Location) {
        IRMapping m = base;
        SmallVector<Value> none;
        emitColumnLoop(ib, loop, m, none);
        scf::YieldOp::create(ib, loc);
      });
      continue;
    }
    if (isa<scf::WhileOp>(op)) {
      // Lock acquire: one thread spins, then the block may proceed.
      onLeader([&](OpBuilder &ib, IRMapping &m) {
        op.walk([&](Operation *inner) {
          for (Value operand : inner->getOperands())
            if (!op.isAncestor(operand.getParentRegion()->getParentOp()))
              materialize(ib, operand, m);
        });
        ib.clone(op, m);
        NVVM::MembarOp::create(ib, loc, NVVM::MemScopeKind::GPU);
      });
      gpu::BarrierOp::create(b, loc);
      continue;
    }
    if (auto rmw = dyn_cast<memref::AtomicRMWOp>(op);
        rmw && rmw.getKind() == arith::AtomicRMWKind::assign) {
      // Lock release: the block's writes first, then one thread releases.
      gpu::BarrierOp::create(b, loc);
      onLeader([&](OpBuilder &ib, IRMapping &m) {
        NVVM::MembarOp::create(ib, loc, NVVM::MemScopeKind::GPU);
        for (Value operand : op.getOperands())
          materialize(ib, operand, m);
        ib.clone(op, m);
      });
      continue;
    }
    if (isMemoryEffectFree(&op) || isa<memref::LoadOp>(op))
      continue; // materialised where used
    // A per-row side effect (the forward's mean / rstd stores): lane 0.
    scf::IfOp::create(
        b, loc, arith::AndIOp::create(b, loc, rowActive, laneZero),
        [&](OpBuilder &ib, Location) {
          IRMapping m = base;
          for (Value operand : op.getOperands())
            materialize(ib, operand, m);
          ib.clone(op, m);
          scf::YieldOp::create(ib, loc);
        });
  }
  b.setInsertionPointAfter(waves);
  combinePartials();
  return success();
}

/// Lanes per row, for the row nests: the smallest element type among the
/// row memrefs sets the chunk width.
int64_t rowElementBytes(scf::ForOp rows) {
  int64_t bytes = 4;
  rows.walk([&](Operation *op) {
    Value mem;
    if (auto l = dyn_cast<memref::LoadOp>(op))
      mem = l.getMemRef();
    else if (auto s = dyn_cast<memref::StoreOp>(op))
      mem = s.getMemRef();
    auto t = mem ? dyn_cast<MemRefType>(mem.getType()) : MemRefType();
    if (t && t.getRank() == 2 && t.getElementType().isIntOrFloat())
      bytes = std::min<int64_t>(bytes, t.getElementTypeBitWidth() / 8);
  });
  return bytes;
}

/// In the looped regime, row caches go back to re-reading the row: every
/// cache load becomes the load (and extension) the cache was filled from.
void uncacheRows(scf::ForOp rows) {
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

/// Removes the host-side row caches once every kernel has its own.
void eraseHostCaches(func::FuncOp func) {
  SmallVector<memref::AllocOp> caches;
  func.walk([&](memref::AllocOp alloc) {
    if (norm::isRowCache(alloc))
      caches.push_back(alloc);
  });
  for (memref::AllocOp alloc : caches) {
    if (!llvm::all_of(alloc->getUsers(), [](Operation *u) {
          return isa<memref::DeallocOp>(u);
        }))
      continue;
    for (Operation *user : llvm::make_early_inc_range(alloc->getUsers()))
      user->erase();
    alloc.erase();
  }
}

struct MapToGPUPass : public norm::impl::NormMapToGPUBase<MapToGPUPass> {
  using Base::Base;

  /// The chip's facts, set at the start of runOnOperation.
  std::optional<norm::TargetInfo> target;

  SmallVector<Attribute> kernels;

  void record(OpBuilder &b, StringRef name, StringRef kind, int64_t threads,
              StringRef grid, const Geometry *g = nullptr) {
    // In the manifest's terms (norm/Support/ManifestSchema.h): "columnsC"
    // is the `columns` rule with C columns per block.
    int64_t columns = 0;
    if (grid.consume_front("columns") && !grid.empty()) {
      bool bad = grid.getAsInteger(10, columns);
      assert(!bad && "columns per block");
      (void)bad;
      grid = "columns";
    }
    std::optional<norm::manifest::KernelKind> k =
        norm::manifest::parseKernelKind({kind.data(), kind.size()});
    std::optional<norm::manifest::GridRule> rule =
        norm::manifest::parseGridRule({grid.data(), grid.size()});
    assert(k && rule && "kinds and grid rules of the manifest schema");
    kernels.push_back(norm::KernelAttr::get(
        b.getContext(), name, *k, threads, *rule, columns, g ? g->lanes : 0,
        g ? g->rows : 0, g ? g->vec : 0,
        g ? std::optional<bool>(g->registers) : std::nullopt));
  }

  /// `for w { ...; for j { stores } }`: a block per w, threads over j.
  LogicalResult mapZero(scf::ForOp nest, StringRef name) {
    OpBuilder b(nest);
    Location loc = nest.getLoc();
    createLaunch(b, loc, nest.getUpperBound(), threads, name,
                 [&](OpBuilder &kb, gpu::LaunchOp launch) {
                   Value tid = launch.getThreadIds().x;
                   IRMapping m;
                   m.map(nest.getInductionVar(), launch.getBlockIds().x);
                   for (Operation &op : nest.getBody()->without_terminator()) {
                     auto loop = dyn_cast<scf::ForOp>(op);
                     if (!loop && isMemoryEffectFree(&op)) {
                       kb.clone(op, m);
                       continue;
                     }
                     if (!loop) {
                       // Per-row ops (the lock reset): thread 0.
                       Value first = arith::CmpIOp::create(
                           kb, loc, arith::CmpIPredicate::eq, tid,
                           cIndex(kb, loc, 0));
                       scf::IfOp::create(kb, loc, first,
                                         [&](OpBuilder &ib, Location) {
                                           ib.clone(op, m);
                                           scf::YieldOp::create(ib, loc);
                                         });
                       continue;
                     }
                     auto strided = scf::ForOp::create(
                         kb, loc, tid, m.lookupOrDefault(loop.getUpperBound()),
                         cIndex(kb, loc, threads));
                     m.map(loop.getInductionVar(), strided.getInductionVar());
                     OpBuilder ib(strided.getBody()->getTerminator());
                     for (Operation &inner :
                          loop.getBody()->without_terminator())
                       ib.clone(inner, m);
                   }
                 });
    record(b, name, "zero", threads, "workspace_rows");
    nest.erase();
    return success();
  }

  /// `for j { s = sum over w of ws[w, j]; stores }`: a block per 32
  /// columns; its 8 warps take the partial rows w = warp, warp + 8, ...
  /// (loads unrolled by 4, the sum still in row order), then warp 0 adds the
  /// 8 slices in order. A fixed order, so a fixed result.
  LogicalResult mapReduce(scf::ForOp nest, StringRef name) {
    constexpr int64_t kCols = 32, kSlices = 8;
    OpBuilder b(nest);
    Location loc = nest.getLoc();
    scf::ForOp sum;
    for (Operation &op : nest.getBody()->without_terminator())
      if (auto loop = dyn_cast<scf::ForOp>(op); loop && loop.getNumResults())
        sum = loop;
    if (!sum)
      return nest.emitError() << "norm-map-to-gpu: reduce nest without a sum";
    Value n = nest.getUpperBound();
    Value grid = arith::CeilDivUIOp::create(b, loc, n, cIndex(b, loc, kCols));
    LogicalResult result = success();
    createLaunch(
        b, loc, grid, kCols * kSlices, name,
        [&](OpBuilder &kb, gpu::LaunchOp launch) {
          Value tid = launch.getThreadIds().x;
          Value lane = arith::RemUIOp::create(kb, loc, tid, cIndex(kb, loc, kCols));
          Value slice =
              arith::DivUIOp::create(kb, loc, tid, cIndex(kb, loc, kCols));
          Value j = arith::AddIOp::create(
              kb, loc,
              arith::MulIOp::create(kb, loc, launch.getBlockIds().x,
                                    cIndex(kb, loc, kCols)),
              lane);
          Value inRange =
              arith::CmpIOp::create(kb, loc, arith::CmpIPredicate::ult, j, n);
          IRMapping m;
          m.map(nest.getInductionVar(), j);
          // Ops before the sum (its initial values) are pure: clone them.
          for (Operation &op : nest.getBody()->without_terminator()) {
            if (&op == sum.getOperation())
              break;
            kb.clone(op, m);
          }
          SmallVector<Value> inits;
          for (Value v : sum.getInitArgs())
            inits.push_back(m.lookupOrDefault(v));
          auto ifOp = scf::IfOp::create(kb, loc, sum.getResultTypes(), inRange,
                                        /*withElseRegion=*/true);
          {
            OpBuilder tb = ifOp.getThenBodyBuilder();
            auto slices = scf::ForOp::create(
                tb, loc, slice, m.lookupOrDefault(sum.getUpperBound()),
                cIndex(tb, loc, kSlices), inits,
                [&](OpBuilder &fb, Location, Value w, ValueRange carried) {
                  IRMapping bm = m;
                  bm.map(sum.getInductionVar(), w);
                  for (auto [arg, v] :
                       llvm::zip(sum.getRegionIterArgs(), carried))
                    bm.map(arg, v);
                  for (Operation &op : sum.getBody()->without_terminator())
                    fb.clone(op, bm);
                  SmallVector<Value> next;
                  for (Value v : sum.getBody()->getTerminator()->getOperands())
                    next.push_back(bm.lookupOrDefault(v));
                  scf::YieldOp::create(fb, loc, next);
                });
            // Yield first: unrolling a loop of unknown trip count adds an
            // epilogue loop and moves the uses of the results to it.
            scf::YieldOp::create(tb, loc, slices.getResults());
            (void)loopUnrollByFactor(slices, 4);
            OpBuilder eb = ifOp.getElseBodyBuilder();
            scf::YieldOp::create(eb, loc, inits);
          }
          // The 8 slices of each column meet in shared memory.
          SmallVector<Value> scratch;
          for (Type t : sum.getResultTypes()) {
            Value buf = launch.addWorkgroupAttribution(
                MemRefType::get({kSlices, kCols}, t, AffineMap(),
                                gpu::AddressSpaceAttr::get(
                                    kb.getContext(),
                                    gpu::AddressSpace::Workgroup)),
                loc);
            scratch.push_back(buf);
          }
          for (auto [buf, v] : llvm::zip(scratch, ifOp.getResults()))
            memref::StoreOp::create(kb, loc, v, buf, ValueRange{slice, lane});
          gpu::BarrierOp::create(kb, loc);
          Value first = arith::AndIOp::create(
              kb, loc, inRange,
              arith::CmpIOp::create(kb, loc, arith::CmpIPredicate::eq, slice,
                                    cIndex(kb, loc, 0)));
          scf::IfOp::create(kb, loc, first, [&](OpBuilder &ib, Location) {
            for (auto [res, buf] : llvm::zip(sum.getResults(), scratch)) {
              Value total = memref::LoadOp::create(
                  ib, loc, buf, ValueRange{cIndex(ib, loc, 0), lane});
              for (int64_t q = 1; q < kSlices; ++q)
                total = arith::AddFOp::create(
                    ib, loc, total,
                    memref::LoadOp::create(ib, loc, buf,
                                           ValueRange{cIndex(ib, loc, q), lane}));
              m.map(res, total);
            }
            bool after = false;
            for (Operation &op : nest.getBody()->without_terminator()) {
              if (&op == sum.getOperation()) {
                after = true;
                continue;
              }
              if (after)
                ib.clone(op, m);
            }
            scf::YieldOp::create(ib, loc);
          });
        });
    record(b, name, "reduce", kCols * kSlices, "columns32");
    nest.erase();
    return result;
  }

  LogicalResult mapRows(scf::ForOp nest, StringRef name, bool forward) {
    RowNest rn;
    rn.nest = nest;
    rn.target = &*target;
    if (forward) {
      rn.rows = nest;
    } else {
      for (Operation &op : *nest.getBody())
        if (auto loop = dyn_cast<scf::ForOp>(op))
          rn.rows = loop;
      rn.programIV = nest.getInductionVar();
    }
    if (!rn.rows)
      return nest.emitError() << "norm-map-to-gpu: no row loop in this nest";

    // The strategy, as norm-split recorded it on the nest.
    std::optional<norm::ReductionStrategy> strategy =
        norm::getNestStrategy(nest);
    rn.locked = strategy == norm::ReductionStrategy::Locked;
    rn.deterministicPartials =
        !forward && strategy == norm::ReductionStrategy::Deterministic;

    // N: the column loops' bound.
    std::optional<int64_t> n;
    for (Operation &op : *rn.rows.getBody())
      if (auto loop = dyn_cast<scf::ForOp>(op)) {
        n = getConstantIntValue(loop.getUpperBound());
        break;
      }
    rn.geometry = chooseGeometry(n, rowElementBytes(rn.rows), threads,
                                 maxRegisterElements, rn.locked);
    if (rn.deterministicPartials && rn.geometry.registers && n &&
        rn.geometry.rows * *n * 4 * 2 > target->maxStaticSharedBytes)
      rn.geometry = chooseGeometry(n, rowElementBytes(rn.rows), threads,
                                   maxRegisterElements, /*whole=*/true);
    if (!rn.geometry.registers)
      uncacheRows(rn.rows);

    OpBuilder b(nest);
    Location loc = nest.getLoc();
    Geometry &g = rn.geometry;
    Value grid;
    Value m;
    if (forward) {
      m = nest.getUpperBound();
      grid = arith::CeilDivUIOp::create(b, loc, m, cIndex(b, loc, g.rows));
    } else {
      grid = nest.getUpperBound();
    }
    LogicalResult result = success();
    createLaunch(b, loc, grid, threads, name,
                 [&](OpBuilder &kb, gpu::LaunchOp launch) {
                   RowMapper mapper(kb, loc, rn, launch);
                   Value p = launch.getBlockIds().x;
                   Value lo, hi;
                   IRMapping pm;
                   if (forward) {
                     lo = arith::MulIOp::create(kb, loc, p,
                                                cIndex(kb, loc, g.rows));
                     hi = arith::MinUIOp::create(
                         kb, loc,
                         arith::AddIOp::create(kb, loc, lo,
                                               cIndex(kb, loc, g.rows)),
                         m);
                   } else {
                     // The program's row range, as the nest computes it.
                     pm.map(rn.programIV, p);
                     for (Operation &op : nest.getBody()->without_terminator())
                       if (&op != rn.rows.getOperation())
                         kb.clone(op, pm);
                     lo = pm.lookupOrDefault(rn.rows.getLowerBound());
                     hi = pm.lookupOrDefault(rn.rows.getUpperBound());
                   }
                   result = mapper.emit(lo, hi, pm);
                 });
    record(b, name, forward ? "forward" : "dx", threads,
           forward ? "row_blocks" : "programs", &g);
    nest.erase();
    return result;
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    target = norm::TargetInfo::get(chip);
    if (!target) {
      func.emitError() << "norm-map-to-gpu: unknown chip '" << chip << "'";
      return signalPassFailure();
    }
    if (threads % kWarp || threads > target->maxThreadsPerBlock ||
        !llvm::isPowerOf2_64(threads)) {
      func.emitError() << "norm-map-to-gpu: threads must be a power of two, "
                          "a multiple of 32 and at most "
                       << target->maxThreadsPerBlock << ", got "
                       << static_cast<int64_t>(threads);
      return signalPassFailure();
    }
    SmallVector<scf::ForOp> nests;
    func.walk<WalkOrder::PreOrder>([&](scf::ForOp loop) {
      if (!norm::getStage(loop))
        return WalkResult::advance();
      nests.push_back(loop);
      return WalkResult::skip();
    });
    OpBuilder b(func);
    int counter = 0;
    for (scf::ForOp nest : nests) {
      norm::Stage stage = *norm::getStage(nest);
      std::string name = (func.getName() + "_" + norm::stringifyStage(stage) +
                          "_" + Twine(counter++))
                             .str();
      LogicalResult r = success();
      if (stage == norm::Stage::Zero)
        r = mapZero(nest, name);
      else if (stage == norm::Stage::Reduce)
        r = mapReduce(nest, name);
      else if (stage == norm::Stage::Dx)
        r = mapRows(nest, name, /*forward=*/false);
      else if (stage == norm::Stage::Forward)
        r = mapRows(nest, name, /*forward=*/true);
      else
        r = nest.emitError()
            << "norm-map-to-gpu: stage '" << norm::stringifyStage(stage)
            << "' cannot be mapped; run norm-lower-to-loops fully first";
      if (failed(r))
        return signalPassFailure();
    }
    eraseHostCaches(func);
    // Post-condition: the host only allocates and launches. A loop left
    // outside the launches lost its tag on the way here.
    WalkResult leftover = func.walk([&](scf::ForOp loop) {
      if (loop->getParentOfType<gpu::LaunchOp>())
        return WalkResult::advance();
      loop.emitError()
          << "norm-map-to-gpu: this loop is not a tagged norm nest and would "
             "run on the host; was it canonicalised after "
             "norm-lower-to-loops (single-iteration loops are folded with "
             "their norm.stage tag)? Run canonicalize after the mapping";
      return WalkResult::interrupt();
    });
    if (leftover.wasInterrupted())
      return signalPassFailure();
    func.walk([](gpu::LaunchOp launch) { sinkIntoLaunch(launch); });
    func->setAttr("norm.kernels", b.getArrayAttr(kernels));
  }
};

} // namespace
