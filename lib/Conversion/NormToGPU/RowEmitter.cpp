//===- RowEmitter.cpp - the core of a row kernel --------------------------===//
//
// Part of mlir-norm.
//
// What every row kernel does, whatever its strategies: the row body
// materialised per element of a chunk (one 16-byte access per row memref
// when aligned), column loops whose chunks the chunk walk visits, the
// bodies of the layouts under the run-time alignment check. Everything that
// decides the order of a floating-point sum comes from the Geometry.
//
//===----------------------------------------------------------------------===//

#include "RowEmitter.h"
#include "Launch.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::norm;

void RowEmitter::emitElement(OpBuilder &rb, scf::ForOp loop, IRMapping m,
                             Value active, Value j, std::optional<int64_t> k,
                             int64_t e, const DenseMap<Value, Value> *vectors,
                             DenseMap<Value, SmallVector<Value>> *stores,
                             SmallVector<Value> &carried) {
  Location loc = ctx.loc;
  m.map(loop.getInductionVar(), j);
  for (auto [arg, value] : llvm::zip(loop.getRegionIterArgs(), carried))
    m.map(arg, value);
  for (Operation &op : loop.getBody()->without_terminator()) {
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      if (vectors && vectors->count(load.getMemRef()) &&
          ctx.isRowAccess(&op, loop, load.getMemRef(), load.getIndices())) {
        m.map(load.getResult(),
              vector::ExtractOp::create(rb, loc,
                                        vectors->lookup(load.getMemRef()), e));
        continue;
      }
      if (s.home->load(rb, load, k, e, m, active))
        continue;
      if (s.chunks->load(rb, load, k, e, m))
        continue;
    }
    if (auto store = dyn_cast<memref::StoreOp>(op)) {
      if (stores &&
          ctx.isRowAccess(&op, loop, store.getMemRef(), store.getIndices())) {
        (*stores)[store.getMemRef()].push_back(
            ctx.materialize(rb, store.getValue(), m));
        continue;
      }
      if (s.home->store(rb, store, k, e, m, active))
        continue;
      if (s.chunks->store(rb, store, k, e, m))
        continue;
      if (active) {
        // Any other store of a guarded row: only for the program's rows.
        for (Value operand : op.getOperands())
          ctx.materialize(rb, operand, m);
        scf::IfOp::create(rb, loc, active, [&](OpBuilder &ib, Location) {
          ib.clone(op, m);
          scf::YieldOp::create(ib, loc);
        });
        continue;
      }
    }
    for (Value operand : op.getOperands())
      ctx.materialize(rb, operand, m);
    rb.clone(op, m);
  }
  auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
  for (auto [i, v] : llvm::enumerate(yield.getOperands()))
    carried[i] = ctx.materialize(rb, v, m);
}

void RowEmitter::emitRowsElement(
    OpBuilder &rb, scf::ForOp loop, MutableArrayRef<IRMapping> ms,
    ArrayRef<Value> active, Value j, std::optional<int64_t> k, int64_t e,
    ArrayRef<DenseMap<Value, Value>> vectors,
    SmallVector<DenseMap<Value, SmallVector<Value>>> *stores,
    SmallVector<Value> &carried) {
  size_t perRow = carried.size() / ms.size();
  s.home->beginElement(rb, j, e, active);
  for (size_t i = 0; i < ms.size(); ++i) {
    SmallVector<Value> rowVals(carried.begin() + i * perRow,
                               carried.begin() + (i + 1) * perRow);
    emitElement(rb, loop, ms[i], active.empty() ? Value() : active[i], j, k, e,
                vectors.empty() ? nullptr : &vectors[i],
                stores ? &(*stores)[i] : nullptr, rowVals);
    llvm::copy(rowVals, carried.begin() + i * perRow);
  }
  s.home->endElement(rb, j, e, active);
}

void RowEmitter::emitChunk(OpBuilder &rb, scf::ForOp loop,
                           MutableArrayRef<IRMapping> ms,
                           ArrayRef<Value> active, Value chunk,
                           std::optional<int64_t> k, bool vectorized,
                           SmallVector<Value> &carried) {
  const Geometry &g = ctx.g;
  Location loc = ctx.loc;
  Value n = ctx.materialize(rb, loop.getUpperBound(), ms.front());
  // A dynamic N has V = 1 and a chunk loop bounded by N: always in range.
  bool tail = g.n ? !ctx.groupInRange(k) : false;
  if (!vectorized) {
    for (int64_t e = 0; e < g.vec; ++e) {
      Value j = ctx.columnOf(rb, chunk, e);
      if (!tail) {
        emitRowsElement(rb, loop, ms, active, j, k, e, {}, nullptr, carried);
        continue;
      }
      Value inRange =
          arith::CmpIOp::create(rb, loc, arith::CmpIPredicate::ult, j, n);
      auto ifOp = scf::IfOp::create(rb, loc, TypeRange(ValueRange(carried)),
                                    inRange, /*withElseRegion=*/true);
      OpBuilder tb = ifOp.getThenBodyBuilder();
      SmallVector<Value> next = carried;
      emitRowsElement(tb, loop, ms, active, j, k, e, {}, nullptr, next);
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
  Value j0 = arith::MulIOp::create(rb, loc, ctx.rowChunk(rb, chunk),
                                   cIndex(rb, loc, g.vec));
  size_t rows = ms.size();
  SmallVector<DenseMap<Value, Value>> vectors(rows);
  SmallVector<DenseMap<Value, SmallVector<Value>>> stores(rows);
  SmallVector<Value> storeOrder, rowIVs;
  DenseMap<Value, Value> columnVectors;
  for (size_t i = 0; i < rows; ++i) {
    Value r = ctx.materialize(rb, ctx.nest.rows.getInductionVar(), ms[i]);
    rowIVs.push_back(r);
    for (Operation &op : loop.getBody()->without_terminator()) {
      if (auto load = dyn_cast<memref::LoadOp>(op);
          load &&
          ctx.isRowAccess(&op, loop, load.getMemRef(), load.getIndices()) &&
          !vectors[i].count(load.getMemRef())) {
        bool column = load.getIndices().size() == 1;
        if (column && columnVectors.count(load.getMemRef())) {
          vectors[i][load.getMemRef()] = columnVectors[load.getMemRef()];
          continue;
        }
        if (column && ctx.holds(load.getMemRef(), k)) {
          // Loaded once, at the top of the body (RowHeldColumns.cpp).
          Value v = ctx.heldChunk(rb, load.getMemRef(), *k);
          vectors[i][load.getMemRef()] = v;
          columnVectors[load.getMemRef()] = v;
          continue;
        }
        if (!column && rows == 1 && ctx.pipelined(loop, k) &&
            (ctx.pipeRows.count(load.getMemRef()) ||
             ctx.ringRows.count(load.getMemRef()))) {
          // Loaded a wave ahead, into registers or the ring
          // (RowPipeline.cpp).
          vectors[i][load.getMemRef()] =
              ctx.preloaded(rb, load.getMemRef(), *k);
          continue;
        }
        SmallVector<Value> at =
            column ? SmallVector<Value>{j0} : SmallVector<Value>{r, j0};
        Value v = ctx.loadChunk(rb, load.getMemRef(), at);
        vectors[i][load.getMemRef()] = v;
        if (column)
          columnVectors[load.getMemRef()] = v;
      }
      if (auto store = dyn_cast<memref::StoreOp>(op);
          i == 0 && store &&
          ctx.isRowAccess(&op, loop, store.getMemRef(), store.getIndices()) &&
          !llvm::is_contained(storeOrder, store.getMemRef()))
        storeOrder.push_back(store.getMemRef());
    }
  }
  s.home->beginChunk(rb, j0, active);
  for (int64_t e = 0; e < g.vec; ++e) {
    Value j = arith::AddIOp::create(rb, loc, j0, cIndex(rb, loc, e));
    emitRowsElement(rb, loop, ms, active, j, k, e, vectors, &stores, carried);
  }
  s.home->endChunk(rb, j0, active);
  for (size_t i = 0; i < rows; ++i)
    for (Value mem : storeOrder) {
      SmallVector<Value> &elems = stores[i][mem];
      auto vt = VectorType::get({g.vec}, elems.front().getType());
      auto store = [&](OpBuilder &sb) {
        Value v = vector::FromElementsOp::create(sb, loc, vt, elems);
        SmallVector<Value> at = cast<MemRefType>(mem.getType()).getRank() == 2
                                    ? SmallVector<Value>{rowIVs[i], j0}
                                    : SmallVector<Value>{j0};
        vector::StoreOp::create(
            sb, loc, v, ctx.unitInnerStride(sb, ctx.base.lookupOrDefault(mem)),
            at, /*nontemporal=*/false, llvm::MaybeAlign(g.vectorBytes));
      };
      if (active.empty()) {
        store(rb);
        continue;
      }
      scf::IfOp::create(rb, loc, active[i], [&](OpBuilder &ib, Location) {
        store(ib);
        scf::YieldOp::create(ib, loc);
      });
    }
}

void RowEmitter::emitColumnLoop(OpBuilder &rb, scf::ForOp loop,
                                MutableArrayRef<IRMapping> ms,
                                ArrayRef<Value> active,
                                SmallVector<Value> &carried) {
  const Geometry &g = ctx.g;
  Location loc = ctx.loc;
  for (IRMapping &m : ms)
    for (Value init : loop.getInitArgs())
      carried.push_back(ctx.materialize(rb, init, m));
  // Row-level values the body uses, once per row rather than per element.
  for (IRMapping &m : ms)
    loop.walk([&](Operation *op) {
      for (Value operand : op->getOperands())
        if (!loop->isAncestor(operand.getParentRegion()->getParentOp()))
          ctx.materialize(rb, operand, m);
    });
  Value n = ctx.materialize(rb, loop.getUpperBound(), ms.front());
  // A looped block of a cluster walks its slice of the row (the last
  // slice may be short); columnOf puts it at colBase.
  Value span = n;
  if (ctx.colBase && !g.registers)
    span = arith::MinUIOp::create(
        rb, loc, arith::SubIOp::create(rb, loc, n, ctx.colBase),
        cIndex(rb, loc, g.sliceColumns));
  Value chunks =
      arith::CeilDivUIOp::create(rb, loc, span, cIndex(rb, loc, g.vec));
  // Vector accesses need, at run time, 16-byte aligned rows and a whole
  // chunk inside the row (a chunk of a group that reaches past N may be
  // partial or wholly outside: it takes the element path, whose bound
  // checks drop what is past N).
  bool mayVectorize = g.n && g.vec > 1 && ctx.layout == Layout::Vector;
  auto chunkBody = [&](OpBuilder &cb, Value chunk, std::optional<int64_t> k,
                       SmallVector<Value> &vals) {
    if (!mayVectorize) {
      emitChunk(cb, loop, ms, active, chunk, k, /*vectorized=*/false, vals);
      return;
    }
    Value useVector = ctx.knownAligned ? Value() : ctx.aligned;
    if (!ctx.groupInRange(k)) {
      Value end = arith::AddIOp::create(
          cb, loc,
          arith::MulIOp::create(cb, loc, ctx.rowChunk(cb, chunk),
                                cIndex(cb, loc, g.vec)),
          cIndex(cb, loc, g.vec));
      Value whole =
          arith::CmpIOp::create(cb, loc, arith::CmpIPredicate::ule, end, n);
      useVector =
          useVector ? arith::AndIOp::create(cb, loc, useVector, whole) : whole;
    }
    if (!useVector) {
      emitChunk(cb, loop, ms, active, chunk, k, /*vectorized=*/true, vals);
      return;
    }
    auto ifOp = scf::IfOp::create(cb, loc, TypeRange(ValueRange(vals)),
                                  useVector, /*withElseRegion=*/true);
    OpBuilder tb = ifOp.getThenBodyBuilder();
    SmallVector<Value> v1 = vals;
    emitChunk(tb, loop, ms, active, chunk, k, /*vectorized=*/true, v1);
    yieldFrom(tb, loc, v1);
    OpBuilder eb = ifOp.getElseBodyBuilder();
    SmallVector<Value> v2 = vals;
    emitChunk(eb, loop, ms, active, chunk, k, /*vectorized=*/false, v2);
    yieldFrom(eb, loc, v2);
    vals.assign(ifOp.getResults().begin(), ifOp.getResults().end());
  };
  s.chunks->walk(rb, chunks, ms.size(), carried, chunkBody);
}

Value RowEmitter::emitAlignmentCheck() {
  OpBuilder &b = ctx.b;
  Location loc = ctx.loc;
  auto c = [&](int64_t v) { return ctx.c(v); };
  RowNest &nest = ctx.nest;
  Block *rowBody = nest.rows.getBody();
  // Row memrefs (read or written at [r, j]) and their 16-byte alignment.
  SetVector<Value> rowMemrefs;
  rowBody->walk([&](Operation *op) {
    auto loop = op->getParentOfType<scf::ForOp>();
    if (!loop || loop == nest.rows)
      return;
    if (auto l = dyn_cast<memref::LoadOp>(op);
        l && ctx.isRowAccess(op, loop, l.getMemRef(), l.getIndices())) {
      rowMemrefs.insert(l.getMemRef());
      if (l.getIndices().size() == 2 && !isRowCacheBuffer(l.getMemRef()) &&
          !llvm::is_contained(ctx.readRowMemrefs, l.getMemRef()))
        ctx.readRowMemrefs.push_back(l.getMemRef());
    }
    if (auto st = dyn_cast<memref::StoreOp>(op);
        st && ctx.isRowAccess(op, loop, st.getMemRef(), st.getIndices()))
      rowMemrefs.insert(st.getMemRef());
  });
  Value aligned = arith::ConstantIntOp::create(b, loc, 1, 1);
  for (Value mem : rowMemrefs) {
    if (isRowCacheBuffer(mem))
      continue;
    Value km = ctx.base.lookupOrDefault(mem);
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
            arith::RemUIOp::create(b, loc, bits, c(ctx.g.vectorBytes)), c(0)),
        unitInner);
    aligned = arith::AndIOp::create(b, loc, aligned, ok);
  }
  return aligned;
}

void RowEmitter::emitBody(Value lo, Value hi) {
  ctx.loadHeldColumns(ctx.b);
  s.rows->emitRows(*this, lo, hi);
  s.home->writeBack();
}

void RowEmitter::emit(Value lo, Value hi, const IRMapping &programMap) {
  OpBuilder &b = ctx.b;
  const Geometry &g = ctx.g;
  ctx.begin(programMap, s.reduction->columnBase());
  ctx.aligned = emitAlignmentCheck();

  // The thread's storage: the buffers of the rows loaded ahead, row
  // caches, partial rows, the sums' scratch. (Private arrays first: LLVM
  // keeps an alloca in registers only in the kernel's entry block.)
  ctx.allocatePipeline();
  ctx.allocateHeldColumns();
  s.chunks->allocate();
  s.home->allocate();
  s.reduction->allocate();

  if (g.layouts != RowLayouts::Both) {
    ctx.layout = g.layouts == RowLayouts::Interleaved ? Layout::Interleaved
                                                      : Layout::Vector;
    emitBody(lo, hi);
    return;
  }
  // One body per layout; `aligned` is the same in every block.
  auto ifOp = scf::IfOp::create(b, ctx.loc, ctx.aligned,
                                /*withElseRegion=*/true);
  IRMapping saved = ctx.base;
  for (Layout l : {Layout::Vector, Layout::Interleaved}) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(l == Layout::Vector
                            ? ifOp.thenBlock()->getTerminator()
                            : ifOp.elseBlock()->getTerminator());
    ctx.layout = l;
    ctx.knownAligned = l == Layout::Vector;
    ctx.base = saved;
    ctx.reduced.clear();
    // A forward kernel's interleaved body (the launch's rows not 16-byte
    // aligned: offset or strided views) reads its row again where the
    // aligned body reads its row cache: a body of many element loads with
    // the cache live across the in-row sums set the kernel's registers
    // (ptxas takes the larger body's), RMSNorm bf16 4096 80 against the
    // aligned body's 62. It is emitted from a copy of the row loop whose
    // cache loads are the loads that filled them (the looped regime's
    // rewrite), then the copy goes.
    scf::ForOp rows = ctx.nest.rows;
    scf::ForOp reread;
    if (l == Layout::Interleaved && ctx.nest.forward &&
        ctx.nest.rereadFallback) {
      OpBuilder cb(rows);
      reread = cast<scf::ForOp>(cb.clone(*rows.getOperation()));
      rereadRowCaches(
          reread, [](memref::AllocOp) { return true; }, /*keepCaches=*/true);
      ctx.nest.rows = reread;
    }
    emitBody(lo, hi);
    if (reread) {
      ctx.nest.rows = rows;
      reread.erase();
    }
  }
  ctx.knownAligned = false;
}
