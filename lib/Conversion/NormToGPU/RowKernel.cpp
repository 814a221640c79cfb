//===- RowKernel.cpp - the row machinery of the dx and forward kernels ----===//
//
// Part of mlir-norm.
//
// What every row kernel shares, whatever its regime: the program's rows in
// waves of S, the row body materialised per element of a chunk (one 16-byte
// access per row memref when aligned), in-row sums by butterfly shuffles and
// one fixed-order shared-memory step across warps, the lock protocol of
// `locked`. Everything that decides the order of a floating-point sum comes
// from the Geometry, a function of N alone.
//
//===----------------------------------------------------------------------===//

#include "RowKernel.h"
#include "Launch.h"

#include "norm/Conversion/NormToGPU/TargetCodegen.h"
#include "norm/Dialect/Norm/IR/StageContract.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/MathExtras.h"

#include <cassert>

using namespace mlir;
using namespace mlir::norm;

bool norm::isRowCacheBuffer(Value memref) {
  Operation *def = memref.getDefiningOp();
  return def && norm::isRowCache(def);
}

SmallVector<memref::StoreOp> norm::partialRowStores(RowNest &rn) {
  SmallVector<memref::StoreOp> partialStores;
  rn.rows.getBody()->walk([&](memref::StoreOp store) {
    if (store.getIndices().size() == 2 &&
        store.getIndices()[0] == rn.programIV &&
        !llvm::any_of(partialStores, [&](memref::StoreOp s) {
          return s.getMemRef() == store.getMemRef();
        }))
      partialStores.push_back(store);
  });
  return partialStores;
}

FailureOr<RowNest> norm::analyzeRowNest(scf::ForOp nest, bool forward) {
  FailureOr<scf::ForOp> rows = checkRowNestShape(nest, forward);
  if (failed(rows))
    return failure();
  // The row kernels' sums, partial rows and shared-memory scratch are f32
  // (and sized so by the geometry); an f64 accumulation is for the CPU
  // reference runs.
  if (Type acc = getAccumulateType(nest); acc && !acc.isF32())
    return nest.emitError()
           << "norm-map-to-gpu: the GPU kernels accumulate in f32, this nest "
              "in "
           << acc << " (accumulation_type other than f32 is for CPU runs)";
  RowNest rn;
  rn.nest = nest;
  rn.forward = forward;
  rn.rows = *rows;
  if (!forward)
    rn.programIV = nest.getInductionVar();
  return rn;
}

void norm::buildRowKernel(RowNest &rn, StringRef name) {
  scf::ForOp nest = rn.nest;
  bool forward = rn.forward;
  OpBuilder b(nest);
  Location loc = nest.getLoc();
  const Geometry &g = rn.geometry;
  if (!g.registers)
    uncacheRows(rn.rows);
  Value grid;
  Value m;
  if (forward) {
    m = nest.getUpperBound();
    grid = arith::CeilDivUIOp::create(b, loc, m, cIndex(b, loc, g.rows));
  } else {
    grid = nest.getUpperBound();
    // A cluster of C consecutive blocks per program.
    if (g.cluster > 1)
      grid = arith::MulIOp::create(b, loc, grid, cIndex(b, loc, g.cluster));
  }
  createLaunch(
      b, loc, grid, g.threads, name,
      [&](OpBuilder &kb, gpu::LaunchOp launch) {
        std::unique_ptr<RowKernel> kernel =
            g.registers ? makeRegisterRowKernel(kb, loc, rn, launch)
                        : makeLoopedRowKernel(kb, loc, rn, launch);
        Value p = launch.getBlockIds().x;
        if (g.cluster > 1) {
          Value c = cIndex(kb, loc, g.cluster);
          kernel->slice = arith::RemUIOp::create(kb, loc, p, c);
          p = arith::DivUIOp::create(kb, loc, p, c);
        }
        Value lo, hi;
        IRMapping pm;
        if (forward) {
          lo = arith::MulIOp::create(kb, loc, p, cIndex(kb, loc, g.rows));
          hi = arith::MinUIOp::create(
              kb, loc,
              arith::AddIOp::create(kb, loc, lo, cIndex(kb, loc, g.rows)), m);
        } else {
          // The program's row range, as the nest computes it.
          pm.map(rn.programIV, p);
          for (Operation &op : nest.getBody()->without_terminator())
            if (&op != rn.rows.getOperation())
              kb.clone(op, pm);
          lo = pm.lookupOrDefault(rn.rows.getLowerBound());
          hi = pm.lookupOrDefault(rn.rows.getUpperBound());
        }
        kernel->emit(lo, hi, pm);
      },
      g.cluster);
}

Value RowKernel::c(int64_t v) { return cIndex(b, loc, v); }

Value RowKernel::columnOf(OpBuilder &rb, Value chunk, int64_t e) {
  auto ci = [&](int64_t v) { return cIndex(rb, loc, v); };
  auto inRow = [&](Value j) {
    return colBase ? arith::AddIOp::create(rb, loc, colBase, j) : j;
  };
  if (layout == Layout::Vector || g.vec == 1)
    return inRow(arith::AddIOp::create(
        rb, loc, arith::MulIOp::create(rb, loc, chunk, ci(g.vec)), ci(e)));
  // (chunk - lane) V + lane = k L V + lane.
  Value first = arith::AddIOp::create(
      rb, loc,
      arith::MulIOp::create(rb, loc,
                            arith::SubIOp::create(rb, loc, chunk, lane),
                            ci(g.vec)),
      lane);
  return inRow(arith::AddIOp::create(rb, loc, first, ci(e * g.lanes)));
}

bool RowKernel::groupWhole(int64_t k) const {
  int64_t before = g.cluster > 1 ? (g.cluster - 1) * g.sliceColumns : 0;
  return before + (k + 1) * g.lanes * g.vec <= *g.n;
}

Value RowKernel::rowChunk(OpBuilder &rb, Value chunk) {
  if (!colBase)
    return chunk;
  return arith::AddIOp::create(
      rb, loc, chunk,
      arith::DivUIOp::create(rb, loc, colBase, cIndex(rb, loc, g.vec)));
}

bool RowKernel::groupInRange(std::optional<int64_t> k) const {
  if (!g.n)
    return false;
  // Vector layout: the chunk walk only visits chunks < ceil(N / V), so
  // only the last chunk of an N that is not a multiple of V is partial.
  if (layout == Layout::Vector && *g.n % g.vec == 0)
    return true;
  if (k)
    return groupWhole(*k);
  // A chunk loop: every group is whole when N is a multiple of L V.
  return *g.n % (g.lanes * g.vec) == 0;
}

void RowKernel::onLeader(function_ref<void(OpBuilder &, IRMapping &)> body) {
  Value first =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid, c(0));
  scf::IfOp::create(b, loc, arith::AndIOp::create(b, loc, rowActive, first),
                    [&](OpBuilder &ib, Location) {
                      IRMapping m = base;
                      body(ib, m);
                      scf::YieldOp::create(ib, loc);
                    });
}

/// Materialises `v` (of the original row body) in the region built by `rb`:
/// mapped values as mapped, reduced loop results as reduced, pure ops and
/// loads of the row body cloned again (they are cheap and their inputs are
/// not modified), everything else as the kernel-level value.
Value RowKernel::materialize(OpBuilder &rb, Value v, IRMapping &m) {
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
bool RowKernel::isRowAccess(Operation *op, scf::ForOp loop, Value memref,
                            ValueRange indices) {
  auto type = dyn_cast<MemRefType>(memref.getType());
  if (!type || isThreadLocal(memref))
    return false;
  if (isRowCacheBuffer(memref))
    return false;
  if (type.getRank() == 2 && indices.size() == 2)
    return indices[0] == nest.rows.getInductionVar() &&
           indices[1] == loop.getInductionVar();
  return type.getRank() == 1 && indices.size() == 1 &&
         indices[0] == loop.getInductionVar();
}

void RowKernel::emitElement(OpBuilder &rb, scf::ForOp loop, IRMapping m,
                            Value j, std::optional<int64_t> k, int64_t e,
                            const DenseMap<Value, Value> *vectors,
                            DenseMap<Value, SmallVector<Value>> *stores,
                            SmallVector<Value> &carried) {
  m.map(loop.getInductionVar(), j);
  for (auto [arg, value] : llvm::zip(loop.getRegionIterArgs(), carried))
    m.map(arg, value);
  for (Operation &op : loop.getBody()->without_terminator()) {
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      if (vectors && vectors->count(load.getMemRef()) &&
          isRowAccess(&op, loop, load.getMemRef(), load.getIndices())) {
        m.map(load.getResult(), vector::ExtractOp::create(
                                    rb, loc, vectors->lookup(load.getMemRef()), e));
        continue;
      }
      if (batchRowActive &&
          llvm::is_contained(partialWorkspaces, load.getMemRef())) {
        m.map(load.getResult(), batchAcc[load.getMemRef()][e]);
        continue;
      }
      if (emitLocalLoad(rb, load, k, e, m))
        continue;
    }
    if (auto store = dyn_cast<memref::StoreOp>(op)) {
      if (stores &&
          isRowAccess(&op, loop, store.getMemRef(), store.getIndices())) {
        (*stores)[store.getMemRef()].push_back(
            materialize(rb, store.getValue(), m));
        continue;
      }
      if (batchRowActive &&
          llvm::is_contained(partialWorkspaces, store.getMemRef())) {
        // A row past the program's last adds nothing (the first row of a
        // batch never is).
        Value &acc = batchAcc[store.getMemRef()][e];
        Value v = materialize(rb, store.getValue(), m);
        acc = matchPattern(batchRowActive, m_One())
                  ? v
                  : arith::SelectOp::create(rb, loc, batchRowActive, v, acc)
                        .getResult();
        continue;
      }
      if (emitLocalStore(rb, store, k, e, m))
        continue;
      if (batchRowActive) {
        // Any other store of a batched row: only for the program's rows.
        for (Value operand : op.getOperands())
          materialize(rb, operand, m);
        scf::IfOp::create(rb, loc, batchRowActive, [&](OpBuilder &ib, Location) {
          ib.clone(op, m);
          scf::YieldOp::create(ib, loc);
        });
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

/// `mem` with a static unit innermost stride. A 16-byte access runs only
/// when the block's `aligned` check found every innermost stride to be 1,
/// so a memref whose type leaves it dynamic is viewed as one that says so
/// (vector.load and vector.store require it in the type). A
/// reinterpret_cast, not a memref.cast: canonicalisation folds a cast into
/// the vector access and brings the dynamic stride back.
Value RowKernel::unitInnerStride(OpBuilder &rb, Value mem) {
  auto type = cast<MemRefType>(mem.getType());
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) || strides.empty() ||
      strides.back() == 1)
    return mem;
  strides.back() = 1;
  auto layout = StridedLayoutAttr::get(rb.getContext(), offset, strides);
  auto unit = MemRefType::get(type.getShape(), type.getElementType(), layout,
                              type.getMemorySpace());
  auto meta = memref::ExtractStridedMetadataOp::create(rb, loc, mem);
  auto mixed = [&](int64_t v, Value dynamic) -> OpFoldResult {
    if (ShapedType::isDynamic(v))
      return dynamic;
    return rb.getIndexAttr(v);
  };
  SmallVector<OpFoldResult> sizes, unitStrides;
  for (auto [i, d] : llvm::enumerate(type.getShape()))
    sizes.push_back(mixed(d, meta.getSizes()[i]));
  for (auto [i, st] : llvm::enumerate(strides))
    unitStrides.push_back(mixed(st, meta.getStrides()[i]));
  return memref::ReinterpretCastOp::create(
      rb, loc, unit, mem, mixed(offset, meta.getOffset()), sizes,
      unitStrides);
}

void RowKernel::emitRowsElement(
    OpBuilder &rb, scf::ForOp loop, MutableArrayRef<IRMapping> ms, Value j,
    std::optional<int64_t> k, int64_t e,
    ArrayRef<DenseMap<Value, Value>> vectors,
    SmallVector<DenseMap<Value, SmallVector<Value>>> *stores,
    SmallVector<Value> &carried) {
  size_t perRow = carried.size() / ms.size();
  bool batched = !batchActive.empty();
  // The batch's running partial sums of column j: read once, the rows'
  // terms added in row order, written once.
  Value p = batched ? base.lookup(nest.programIV) : Value();
  // The program's first batch starts from zero (no kernel clears the
  // partial rows before this one: it writes them whole), the others from
  // what the batches before left.
  if (batched)
    for (Value ws : partialWorkspaces) {
      SmallVector<Value> &accs = batchAcc[ws];
      accs.resize(g.vec);
      Type t = cast<MemRefType>(ws.getType()).getElementType();
      auto ifOp = scf::IfOp::create(rb, loc, TypeRange{t}, firstBatch,
                                    /*withElseRegion=*/true);
      OpBuilder tb = ifOp.getThenBodyBuilder();
      scf::YieldOp::create(tb, loc,
                           ValueRange{arith::ConstantOp::create(
                               tb, loc, tb.getZeroAttr(t))});
      OpBuilder eb = ifOp.getElseBodyBuilder();
      scf::YieldOp::create(
          eb, loc,
          ValueRange{memref::LoadOp::create(eb, loc, base.lookupOrDefault(ws),
                                            ValueRange{p, j})});
      accs[e] = ifOp.getResult(0);
    }
  for (size_t i = 0; i < ms.size(); ++i) {
    batchRowActive = batched ? batchActive[i] : Value();
    SmallVector<Value> rowVals(carried.begin() + i * perRow,
                               carried.begin() + (i + 1) * perRow);
    emitElement(rb, loop, ms[i], j, k, e,
                vectors.empty() ? nullptr : &vectors[i],
                stores ? &(*stores)[i] : nullptr, rowVals);
    llvm::copy(rowVals, carried.begin() + i * perRow);
  }
  batchRowActive = Value();
  if (batched)
    for (Value ws : partialWorkspaces)
      memref::StoreOp::create(rb, loc, batchAcc[ws][e],
                              base.lookupOrDefault(ws), ValueRange{p, j});
}

void RowKernel::emitChunk(OpBuilder &rb, scf::ForOp loop,
                          MutableArrayRef<IRMapping> ms, Value chunk,
                          std::optional<int64_t> k, bool vectorized,
                          SmallVector<Value> &carried) {
  Value n = materialize(rb, loop.getUpperBound(), ms.front());
  // A dynamic N has V = 1 and a chunk loop bounded by N: always in range.
  bool tail = g.n ? !groupInRange(k) : false;
  if (!vectorized) {
    for (int64_t e = 0; e < g.vec; ++e) {
      Value j = columnOf(rb, chunk, e);
      if (!tail) {
        emitRowsElement(rb, loop, ms, j, k, e, {}, nullptr, carried);
        continue;
      }
      Value inRange =
          arith::CmpIOp::create(rb, loc, arith::CmpIPredicate::ult, j, n);
      auto ifOp = scf::IfOp::create(rb, loc, TypeRange(ValueRange(carried)),
                                    inRange, /*withElseRegion=*/true);
      OpBuilder tb = ifOp.getThenBodyBuilder();
      SmallVector<Value> next = carried;
      emitRowsElement(tb, loop, ms, j, k, e, {}, nullptr, next);
      yieldFrom(tb, loc, next);
      OpBuilder eb = ifOp.getElseBodyBuilder();
      yieldFrom(eb, loc, carried);
      carried.assign(ifOp.getResults().begin(), ifOp.getResults().end());
    }
    return;
  }
  // One 16-byte access per row memref the body reads, V elements, one
  // access per row memref it writes; with several rows, every row's loads
  // first (a column vector's once), so they are in flight together.
  Value j0 = arith::MulIOp::create(rb, loc, rowChunk(rb, chunk),
                                   cIndex(rb, loc, g.vec));
  size_t rows = ms.size();
  SmallVector<DenseMap<Value, Value>> vectors(rows);
  SmallVector<DenseMap<Value, SmallVector<Value>>> stores(rows);
  SmallVector<Value> storeOrder, rowIVs;
  DenseMap<Value, Value> columnVectors;
  for (size_t i = 0; i < rows; ++i) {
    Value r = materialize(rb, nest.rows.getInductionVar(), ms[i]);
    rowIVs.push_back(r);
    for (Operation &op : loop.getBody()->without_terminator()) {
      if (auto load = dyn_cast<memref::LoadOp>(op);
          load &&
          isRowAccess(&op, loop, load.getMemRef(), load.getIndices()) &&
          !vectors[i].count(load.getMemRef())) {
        bool column = load.getIndices().size() == 1;
        if (column && columnVectors.count(load.getMemRef())) {
          vectors[i][load.getMemRef()] = columnVectors[load.getMemRef()];
          continue;
        }
        Value mem =
            unitInnerStride(rb, base.lookupOrDefault(load.getMemRef()));
        auto vt = VectorType::get({g.vec}, load.getType());
        SmallVector<Value> at =
            column ? SmallVector<Value>{j0} : SmallVector<Value>{r, j0};
        Value v =
            vector::LoadOp::create(rb, loc, vt, mem, at, /*nontemporal=*/false,
                                   llvm::MaybeAlign(g.vectorBytes));
        vectors[i][load.getMemRef()] = v;
        if (column)
          columnVectors[load.getMemRef()] = v;
      }
      if (auto store = dyn_cast<memref::StoreOp>(op);
          i == 0 && store &&
          isRowAccess(&op, loop, store.getMemRef(), store.getIndices()) &&
          !llvm::is_contained(storeOrder, store.getMemRef()))
        storeOrder.push_back(store.getMemRef());
    }
  }
  for (int64_t e = 0; e < g.vec; ++e) {
    Value j = arith::AddIOp::create(rb, loc, j0, cIndex(rb, loc, e));
    emitRowsElement(rb, loop, ms, j, k, e, vectors, &stores, carried);
  }
  for (size_t i = 0; i < rows; ++i)
    for (Value mem : storeOrder) {
      SmallVector<Value> &elems = stores[i][mem];
      auto vt = VectorType::get({g.vec}, elems.front().getType());
      auto store = [&](OpBuilder &sb) {
        Value v = vector::FromElementsOp::create(sb, loc, vt, elems);
        SmallVector<Value> at = cast<MemRefType>(mem.getType()).getRank() == 2
                                    ? SmallVector<Value>{rowIVs[i], j0}
                                    : SmallVector<Value>{j0};
        vector::StoreOp::create(sb, loc, v,
                                unitInnerStride(sb, base.lookupOrDefault(mem)),
                                at, /*nontemporal=*/false,
                                llvm::MaybeAlign(g.vectorBytes));
      };
      if (batchActive.empty()) {
        store(rb);
        continue;
      }
      scf::IfOp::create(rb, loc, batchActive[i], [&](OpBuilder &ib, Location) {
        store(ib);
        scf::YieldOp::create(ib, loc);
      });
    }
}

void RowKernel::emitColumnLoop(OpBuilder &rb, scf::ForOp loop,
                               MutableArrayRef<IRMapping> ms,
                               SmallVector<Value> &carried) {
  for (IRMapping &m : ms)
    for (Value init : loop.getInitArgs())
      carried.push_back(materialize(rb, init, m));
  // Row-level values the body uses, once per row rather than per element.
  for (IRMapping &m : ms)
    loop.walk([&](Operation *op) {
      for (Value operand : op->getOperands())
        if (!loop->isAncestor(operand.getParentRegion()->getParentOp()))
          materialize(rb, operand, m);
    });
  Value n = materialize(rb, loop.getUpperBound(), ms.front());
  Value chunks = arith::CeilDivUIOp::create(rb, loc, n, cIndex(rb, loc, g.vec));
  // Vector accesses need, at run time, 16-byte aligned rows and a whole
  // chunk inside the row (a chunk of a group that reaches past N may be
  // partial or wholly outside: it takes the element path, whose bound
  // checks drop what is past N).
  bool mayVectorize = g.n && g.vec > 1 && layout == Layout::Vector;
  auto chunkBody = [&](OpBuilder &cb, Value chunk, std::optional<int64_t> k,
                       SmallVector<Value> &vals) {
    if (!mayVectorize) {
      emitChunk(cb, loop, ms, chunk, k, /*vectorized=*/false, vals);
      return;
    }
    Value useVector = knownAligned ? Value() : aligned;
    if (!groupInRange(k)) {
      Value end = arith::AddIOp::create(
          cb, loc,
          arith::MulIOp::create(cb, loc, rowChunk(cb, chunk),
                                cIndex(cb, loc, g.vec)),
          cIndex(cb, loc, g.vec));
      Value whole =
          arith::CmpIOp::create(cb, loc, arith::CmpIPredicate::ule, end, n);
      useVector =
          useVector ? arith::AndIOp::create(cb, loc, useVector, whole) : whole;
    }
    if (!useVector) {
      emitChunk(cb, loop, ms, chunk, k, /*vectorized=*/true, vals);
      return;
    }
    auto ifOp = scf::IfOp::create(cb, loc, TypeRange(ValueRange(vals)),
                                  useVector, /*withElseRegion=*/true);
    OpBuilder tb = ifOp.getThenBodyBuilder();
    SmallVector<Value> v1 = vals;
    emitChunk(tb, loop, ms, chunk, k, /*vectorized=*/true, v1);
    yieldFrom(tb, loc, v1);
    OpBuilder eb = ifOp.getElseBodyBuilder();
    SmallVector<Value> v2 = vals;
    emitChunk(eb, loop, ms, chunk, k, /*vectorized=*/false, v2);
    yieldFrom(eb, loc, v2);
    vals.assign(ifOp.getResults().begin(), ifOp.getResults().end());
  };

  rowsPerChunk = ms.size();
  walkChunks(rb, chunks, carried, chunkBody);
  rowsPerChunk = 1;
}

SmallVector<Value> RowKernel::crossLaneReduce(ValueRange partials) {
  SmallVector<Value> vals(partials.begin(), partials.end());
  int64_t inWarp = std::min(g.lanes, g.warp);
  for (Value &v : vals)
    for (int64_t off = inWarp / 2; off >= 1; off /= 2) {
      auto shfl =
          gpu::ShuffleOp::create(b, loc, v, off, g.warp, gpu::ShuffleMode::XOR);
      v = arith::AddFOp::create(b, loc, v, shfl.getShuffleResult());
    }
  if (g.lanes <= g.warp)
    return vals;
  // Across the warps of a row: one shared-memory step, fixed order.
  int64_t warpsPerRow = g.lanes / g.warp;
  Value warp = arith::DivUIOp::create(b, loc, tid, c(g.warp));
  Value laneInWarp = arith::RemUIOp::create(b, loc, tid, c(g.warp));
  Value leader =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, laneInWarp, c(0));
  for (auto [i, sum] : llvm::enumerate(vals)) {
    // Lambdas do not capture structured bindings before C++20 (clang).
    Value v = sum, scratch = crossWarpScratch[i];
    scf::IfOp::create(b, loc, leader, [&](OpBuilder &ib, Location) {
      memref::StoreOp::create(ib, loc, v, scratch, ValueRange{warp});
      scf::YieldOp::create(ib, loc);
    });
  }
  gpu::BarrierOp::create(b, loc);
  Value first = arith::MulIOp::create(b, loc, subgroup, c(warpsPerRow));
  for (auto [i, v] : llvm::enumerate(vals)) {
    Value s =
        memref::LoadOp::create(b, loc, crossWarpScratch[i], ValueRange{first});
    for (int64_t w = 1; w < warpsPerRow; ++w) {
      Value idx = arith::AddIOp::create(b, loc, first, c(w));
      s = arith::AddFOp::create(
          b, loc, s,
          memref::LoadOp::create(b, loc, crossWarpScratch[i], ValueRange{idx}));
    }
    v = s;
  }
  gpu::BarrierOp::create(b, loc);
  if (g.cluster > 1)
    return crossClusterReduce(vals);
  return vals;
}

void RowKernel::clusterBarrier() { nest.codegen->clusterBarrier(b, loc); }

SmallVector<Value> RowKernel::crossClusterReduce(ValueRange vals) {
  // Thread 0 puts the block's sums in its slots for this row's parity; after
  // the cluster barrier every thread adds the C blocks' slots in rank order.
  // Two rows' slots: a block writes row r + 2's only after the barrier of
  // row r + 1, which every block passes after reading row r's.
  assert(vals.size() <= size_t(kClusterSumSlots) && "too many in-row sums");
  if (clusterReductions == clusterScratch.size())
    clusterScratch.push_back(addSharedBuffer(
        launch, {2 * kClusterSumSlots}, b.getF32Type(), loc));
  Value scratch = clusterScratch[clusterReductions++];
  Value first = arith::MulIOp::create(b, loc, rowParity, c(kClusterSumSlots));
  Value leader =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid, c(0));
  scf::IfOp::create(b, loc, leader, [&](OpBuilder &ib, Location) {
    for (auto [i, v] : llvm::enumerate(vals))
      memref::StoreOp::create(
          ib, loc, v, scratch,
          ValueRange{arith::AddIOp::create(ib, loc, first, c(i))});
    scf::YieldOp::create(ib, loc);
  });
  clusterBarrier();
  // The slots' address in this block's shared memory, mapped to each rank's.
  const TargetCodegen &target = *nest.codegen;
  Value address = arith::IndexCastUIOp::create(
      b, loc, b.getI64Type(),
      memref::ExtractAlignedPointerAsIndexOp::create(b, loc, scratch));
  Value local = target.sharedPointer(b, loc, address);
  SmallVector<Value> sums;
  for (size_t i = 0; i < vals.size(); ++i) {
    Value slot = arith::IndexCastUIOp::create(
        b, loc, b.getI64Type(), arith::AddIOp::create(b, loc, first, c(i)));
    Value at = target.sharedElement(b, loc, local, slot);
    Value sum;
    for (int64_t r = 0; r < g.cluster; ++r) {
      Value v = target.loadFromClusterRank(b, loc, at, r);
      sum = sum ? arith::AddFOp::create(b, loc, sum, v).getResult() : v;
    }
    sums.push_back(sum);
  }
  return sums;
}

void RowKernel::emit(Value lo, Value hi, const IRMapping &programMap) {
  base = programMap;
  tid = launch.getThreadIds().x;
  if (g.cluster > 1)
    colBase = arith::MulIOp::create(b, loc, slice, c(g.sliceColumns));
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
    Value unitInner = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                            meta.getStrides().back(), c(1));
    Value ok = arith::AndIOp::create(
        b, loc,
        arith::CmpIOp::create(
            b, loc, arith::CmpIPredicate::eq,
            arith::RemUIOp::create(b, loc, bits, c(g.vectorBytes)), c(0)),
        unitInner);
    aligned = arith::AndIOp::create(b, loc, aligned, ok);
  }

  // Row caches and partial sums of the register regime.
  allocateThreadStorage();
  if (g.lanes > g.warp)
    for (int64_t i = 0; i < 2 * g.batch; ++i)
      crossWarpScratch.push_back(
          addSharedBuffer(launch, {g.threads / g.warp}, b.getF32Type(), loc));

  if (g.layouts != RowLayouts::Both) {
    layout = g.layouts == RowLayouts::Interleaved ? Layout::Interleaved
                                                  : Layout::Vector;
    emitRows(lo, hi);
    return;
  }
  // One body per layout; `aligned` is the same in every block.
  auto ifOp = scf::IfOp::create(b, loc, aligned, /*withElseRegion=*/true);
  IRMapping saved = base;
  for (Layout l : {Layout::Vector, Layout::Interleaved}) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(l == Layout::Vector
                            ? ifOp.thenBlock()->getTerminator()
                            : ifOp.elseBlock()->getTerminator());
    layout = l;
    knownAligned = l == Layout::Vector;
    base = saved;
    reduced.clear();
    emitRows(lo, hi);
  }
  knownAligned = false;
}

void RowKernel::emitBatchedRows(Value lo, Value hi) {
  Block *rowBody = nest.rows.getBody();
  int64_t batch = g.batch;
  for (memref::StoreOp store : partialRowStores(nest))
    partialWorkspaces.push_back(store.getMemRef());
  auto waves = scf::ForOp::create(b, loc, lo, hi, c(batch));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(waves.getBody()->getTerminator());
  // Row i of the batch; a row past the program's last re-reads the last
  // one (a valid row: its loads need no guard, so all are in flight
  // together) and neither stores nor adds anything.
  Value last = arith::SubIOp::create(b, loc, hi, c(1));
  firstBatch = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                     waves.getInductionVar(), lo);
  SmallVector<IRMapping> ms;
  batchActive.clear();
  for (int64_t i = 0; i < batch; ++i) {
    Value r = arith::AddIOp::create(b, loc, waves.getInductionVar(), c(i));
    // Row 0 of a batch is the loop's own condition.
    batchActive.push_back(
        i == 0 ? arith::ConstantIntOp::create(b, loc, 1, 1).getResult()
               : arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, r,
                                       hi)
                     .getResult());
    IRMapping m = base;
    m.map(nest.rows.getInductionVar(),
          arith::MinUIOp::create(b, loc, r, last).getResult());
    ms.push_back(m);
  }
  // Mapped per row, never through the row-independent `reduced`.
  reduced.clear();
  Value laneZero =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane, c(0));
  for (Operation &op : rowBody->without_terminator()) {
    auto loop = dyn_cast<scf::ForOp>(op);
    if (loop && loop.getNumResults()) {
      // The batch's rows in one column walk, their sums in one cross-warp
      // step.
      SmallVector<Value> carried;
      emitColumnLoop(b, loop, ms, carried);
      SmallVector<Value> sums = crossLaneReduce(carried);
      size_t perRow = loop.getNumResults();
      for (int64_t i = 0; i < batch; ++i)
        for (auto [r, res] : llvm::enumerate(loop.getResults()))
          ms[i].map(res, sums[i * perRow + r]);
      continue;
    }
    if (loop) {
      // Row by row: whatever the loop writes is the row's own.
      SmallVector<Value> active = batchActive;
      batchActive.clear();
      for (int64_t i = 0; i < batch; ++i)
        scf::IfOp::create(b, loc, active[i], [&](OpBuilder &ib, Location) {
          IRMapping m = ms[i];
          SmallVector<Value> none;
          emitColumnLoop(ib, loop, m, none);
          scf::YieldOp::create(ib, loc);
        });
      batchActive = active;
      continue;
    }
    assert((!isa<scf::WhileOp, memref::AtomicRMWOp>(op)) &&
           "batched rows are the deterministic strategy's");
    if (isMemoryEffectFree(&op) || isa<memref::LoadOp>(op))
      continue; // materialised where used
    // A per-row side effect: lane 0, for each of the program's rows.
    for (int64_t i = 0; i < batch; ++i)
      scf::IfOp::create(b, loc,
                        arith::AndIOp::create(b, loc, batchActive[i], laneZero),
                        [&](OpBuilder &ib, Location) {
                          IRMapping m = ms[i];
                          for (Value operand : op.getOperands())
                            materialize(ib, operand, m);
                          ib.clone(op, m);
                          scf::YieldOp::create(ib, loc);
                        });
  }
  batchActive.clear();
  b.setInsertionPointAfter(waves);
  // A program without rows (p R >= M) still writes its partial rows whole:
  // zeros, each column by its owner thread.
  Value empty =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, lo, hi);
  Value p = base.lookup(nest.programIV);
  scf::IfOp::create(b, loc, empty, [&](OpBuilder &ib, Location) {
    for (Value ws : partialWorkspaces) {
      Value wsK = base.lookupOrDefault(ws);
      Type t = cast<MemRefType>(ws.getType()).getElementType();
      Value zero = arith::ConstantOp::create(ib, loc, ib.getZeroAttr(t));
      Value n = memref::DimOp::create(ib, loc, wsK, 1);
      scf::ForOp::create(ib, loc, tid, n, cIndex(ib, loc, g.threads),
                         ValueRange{},
                         [&](OpBuilder &fb, Location, Value j, ValueRange) {
                           memref::StoreOp::create(fb, loc, zero, wsK,
                                                   ValueRange{p, j});
                           scf::YieldOp::create(fb, loc);
                         });
    }
    scf::YieldOp::create(ib, loc);
  });
}

void RowKernel::emitRows(Value lo, Value hi) {
  if (g.partials == PartialsHome::Global) {
    emitBatchedRows(lo, hi);
    writePartialRows();
    return;
  }
  Block *rowBody = nest.rows.getBody();
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
  if (g.cluster > 1) {
    // One row at a time (S = 1): the row's parity picks its cluster slots.
    rowParity = arith::RemUIOp::create(
        b, loc, arith::SubIOp::create(b, loc, waves.getInductionVar(), lo),
        c(2));
    clusterReductions = 0;
    // A per-row side effect is the first block's.
    laneZero = arith::AndIOp::create(
        b, loc, laneZero,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, slice, c(0)));
  }

  for (Operation &op : rowBody->without_terminator()) {
    if (auto loop = dyn_cast<scf::ForOp>(op)) {
      if (loop.getNumResults()) {
        auto ifOp = scf::IfOp::create(b, loc, loop.getResultTypes(), rowActive,
                                      /*withElseRegion=*/true);
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
        nest.codegen->deviceFence(ib, loc);
      });
      gpu::BarrierOp::create(b, loc);
      continue;
    }
    if (auto rmw = dyn_cast<memref::AtomicRMWOp>(op);
        rmw && rmw.getKind() == arith::AtomicRMWKind::assign) {
      // Lock release: the block's writes first, then one thread releases.
      gpu::BarrierOp::create(b, loc);
      onLeader([&](OpBuilder &ib, IRMapping &m) {
        nest.codegen->deviceFence(ib, loc);
        for (Value operand : op.getOperands())
          materialize(ib, operand, m);
        ib.clone(op, m);
      });
      continue;
    }
    if (isMemoryEffectFree(&op) || isa<memref::LoadOp>(op))
      continue; // materialised where used
    // A per-row side effect (the forward's mean / rstd stores): lane 0.
    scf::IfOp::create(b, loc,
                      arith::AndIOp::create(b, loc, rowActive, laneZero),
                      [&](OpBuilder &ib, Location) {
                        IRMapping m = base;
                        for (Value operand : op.getOperands())
                          materialize(ib, operand, m);
                        ib.clone(op, m);
                        scf::YieldOp::create(ib, loc);
                      });
  }
  b.setInsertionPointAfter(waves);
  // No block may leave while another can still read its slots.
  if (g.cluster > 1)
    clusterBarrier();
  writePartialRows();
}
