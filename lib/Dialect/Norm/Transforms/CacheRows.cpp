//===- CacheRows.cpp - each row of x and dy read from memory once ---------===//
//
// Part of mlir-norm.
//
// In every row body of the dx and forward nests, each row of x / dy that the
// first column loop loads is kept in a per-program buffer, and the later
// column loops read it from there. After norm-fuse-partials the first column
// loop of a dx nest also feeds the partial sums, so the row crosses the
// memory bus once for everything.
//
// A row the first column loop stores (the sum h = x + residual of a fused
// forward) is served the same way: later loads of it read the value the
// first loop stored, widened as the load would be, so h is written once and
// never read back, and what the later loops see is still h as rounded to
// its storage type.
//
//===----------------------------------------------------------------------===//

#include "StageChecks.h"

#include "norm/Dialect/Norm/IR/StageContract.h"
#include "norm/Dialect/Norm/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

#include <map>

namespace mlir::norm {
#define GEN_PASS_DEF_NORMCACHEROWS
#include "norm/Dialect/Norm/Transforms/Passes.h.inc"
} // namespace mlir::norm

using namespace mlir;

namespace {

/// Whether `op` may write its operand `operand`, a memref (an op that does
/// not say what it does with its operands is taken to write them all).
bool mayWrite(Operation *op, Value operand) {
  if (!isa<MemRefType>(operand.getType()))
    return false;
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  return !effects || effects.getEffectOnValue<MemoryEffects::Write>(operand);
}

/// The memrefs some op in `block` (nested ones too) may write.
DenseSet<Value> writtenIn(Block &block) {
  DenseSet<Value> written;
  block.walk([&](Operation *op) {
    for (Value operand : op->getOperands())
      if (mayWrite(op, operand))
        written.insert(operand);
  });
  return written;
}

/// Loads of `block`'s rows that repeat (same memref, same indices) with no
/// write to that memref in between are replaced by the first one.
void dedupeLoads(Block &block) {
  SmallVector<memref::LoadOp> seen; // column bodies are small: linear search
  SmallVector<memref::LoadOp> dead;
  for (Operation &op : block) {
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      auto same = llvm::find_if(seen, [&](memref::LoadOp prev) {
        return prev.getMemRef() == load.getMemRef() &&
               llvm::equal(prev.getIndices(), load.getIndices());
      });
      if (same != seen.end()) {
        load.replaceAllUsesWith(same->getResult());
        dead.push_back(load);
      } else {
        seen.push_back(load);
      }
      continue;
    }
    // A write to a memref forgets what was loaded from it.
    for (Value operand : op.getOperands())
      if (mayWrite(&op, operand))
        llvm::erase_if(seen, [&](memref::LoadOp prev) {
          return prev.getMemRef() == operand;
        });
  }
  for (memref::LoadOp load : dead)
    load.erase();
  // Identical extensions of one load become one.
  for (memref::LoadOp load : seen) {
    arith::ExtFOp first;
    for (Operation *user : llvm::make_early_inc_range(load->getUsers())) {
      auto ext = dyn_cast<arith::ExtFOp>(user);
      if (!ext)
        continue;
      if (!first || first.getType() != ext.getType()) {
        if (!first)
          first = ext;
        continue;
      }
      // The one extension must dominate every use: right after the load
      // when the two are in different blocks (a hoisted row statistic used
      // by several column loops; isBeforeInBlock compares within one block
      // only), else the earlier of the two.
      if (ext->getBlock() != first->getBlock())
        first->moveAfter(load);
      else if (ext->isBeforeInBlock(first))
        first->moveBefore(ext);
      ext.replaceAllUsesWith(first.getResult());
      ext.erase();
    }
  }
}

/// Loads in `loop`'s body whose indices are loop-invariant, from memrefs
/// nothing in the loop writes, move before the loop (the per-row statistics
/// the recomputation reloads per element).
void hoistInvariantLoads(scf::ForOp loop) {
  DenseSet<Value> written = writtenIn(*loop.getBody());
  for (Operation &op : llvm::make_early_inc_range(*loop.getBody())) {
    auto load = dyn_cast<memref::LoadOp>(op);
    if (!load || written.contains(load.getMemRef()) ||
        !llvm::all_of(load.getIndices(),
                      [&](Value i) { return loop.isDefinedOutsideOfLoop(i); }))
      continue;
    load->moveBefore(loop);
  }
}

/// The value a load stands for once promoted: its only extf, or itself.
Value promotedValue(memref::LoadOp load) {
  if (load->hasOneUse())
    if (auto ext = dyn_cast<arith::ExtFOp>(*load->user_begin()))
      return ext;
  return load;
}

/// Rows only a later column loop of `cols` loads at [r, j], from memrefs
/// nothing in `rowBody` writes: loaded by the first loop at the top of its
/// body (extended as the later load is used) and added to `firstValue`, so
/// that cacheRows serves the later loads from a row cache. Returns those
/// memrefs.
DenseSet<Value> readLateRowsFirst(Value r, Block &rowBody,
                                  ArrayRef<scf::ForOp> cols,
                                  DenseMap<Value, Value> &firstValue,
                                  const DenseMap<Value, Value> &storedValue) {
  DenseSet<Value> read;
  DenseSet<Value> written = writtenIn(rowBody);
  scf::ForOp first = cols.front();
  Value j0 = first.getInductionVar();
  for (scf::ForOp later : cols.drop_front()) {
    Value j = later.getInductionVar();
    for (auto load : later.getBody()->getOps<memref::LoadOp>()) {
      Value mem = load.getMemRef();
      if (load.getIndices().size() != 2 || load.getIndices()[0] != r ||
          load.getIndices()[1] != j || firstValue.count(mem) ||
          storedValue.count(mem) || written.contains(mem))
        continue;
      OpBuilder fb = OpBuilder::atBlockBegin(first.getBody());
      auto early =
          memref::LoadOp::create(fb, load.getLoc(), mem, ValueRange{r, j0});
      Value v = early;
      if (Value used = promotedValue(load); used != load.getResult())
        v = arith::ExtFOp::create(fb, load.getLoc(), used.getType(),
                                  early.getResult());
      firstValue[mem] = v;
      read.insert(mem);
    }
  }
  return read;
}

/// One row body (row `r`): later column loops read the row from
/// a cache filled by the first column loop. The caches are allocated right
/// before `nest` and freed after it; they are tagged `norm.private`: each
/// program needs its own copy when programs run in parallel (GPU mapping
/// keeps them in registers).
LogicalResult cacheRows(Value r, Block &rowBody, Operation *nest,
                        bool earlyRows) {
  SmallVector<scf::ForOp> cols = llvm::to_vector(rowBody.getOps<scf::ForOp>());
  if (cols.size() < 2)
    return success();
  scf::ForOp first = cols.front();
  Location loc = first.getLoc();
  Value j0 = first.getInductionVar();
  for (scf::ForOp col : cols)
    hoistInvariantLoads(col);
  dedupeLoads(rowBody);
  dedupeLoads(*first.getBody());

  // Rows loaded at [r, j] by the first loop.
  DenseMap<Value, Value> firstValue; // memref -> promoted value in `first`
  for (Operation &op : *first.getBody())
    if (auto load = dyn_cast<memref::LoadOp>(op))
      if (load.getIndices().size() == 2 && load.getIndices()[0] == r &&
          load.getIndices()[1] == j0)
        firstValue.try_emplace(load.getMemRef(), promotedValue(load));
  // Rows stored at [r, j] by the first loop (and not loaded by it): the
  // stored value, in its memref's element type.
  DenseMap<Value, Value> storedValue; // memref -> stored value in `first`
  for (Operation &op : *first.getBody())
    if (auto store = dyn_cast<memref::StoreOp>(op))
      if (store.getIndices().size() == 2 && store.getIndices()[0] == r &&
          store.getIndices()[1] == j0 && !firstValue.count(store.getMemRef()))
        storedValue.try_emplace(store.getMemRef(), store.getValue());
  // What a later load of a stored row stands for, `type` being how it is
  // used (extended or not): the stored value, extended right after it.
  auto fromStore = [&](Value memref, Type type) -> Value {
    Value v = storedValue.lookup(memref);
    if (v.getType() == type)
      return v;
    OpBuilder fb(first.getContext());
    fb.setInsertionPointAfterValue(v);
    return arith::ExtFOp::create(fb, loc, type, v);
  };
  // early-rows: rows only a later column loop reads (dresidual, read
  // where dx is formed), of memrefs the row body never writes, read by the
  // first loop too, so their loads are in flight with x's and dy's instead
  // of a memory round trip after the row's sums (LayerNorm backward bf16
  // 65536 x 768 on the H200: 124 us, 238 with dresidual read late).
  DenseSet<Value> early; // memrefs read early
  if (earlyRows)
    early = readLateRowsFirst(r, rowBody, cols, firstValue, storedValue);
  if (firstValue.empty() && storedValue.empty())
    return success();

  DenseMap<Value, Value> caches; // memref -> cache
  auto cacheFor = [&](Value memref) {
    Value &cache = caches[memref];
    if (cache)
      return cache;
    Value v = firstValue.lookup(memref);
    OpBuilder pb(nest);
    // Static when N is (canonicalisation would otherwise rebuild the alloc
    // and drop the tag).
    OpFoldResult n = getAsOpFoldResult(first.getUpperBound());
    auto alloc = memref::AllocOp::create(pb, loc, ArrayRef<OpFoldResult>{n},
                                         v.getType());
    norm::setRowCache(alloc);
    if (early.contains(memref))
      norm::setEarlyRow(alloc);
    cache = alloc;
    pb.setInsertionPointAfter(nest);
    memref::DeallocOp::create(pb, loc, cache);
    OpBuilder fb(first.getContext());
    fb.setInsertionPointAfterValue(v);
    memref::StoreOp::create(fb, loc, v, cache, ValueRange{j0});
    return cache;
  };

  for (scf::ForOp later : ArrayRef(cols).drop_front()) {
    Value j = later.getInductionVar();
    SmallVector<memref::LoadOp> loads;
    later.walk([&](memref::LoadOp load) {
      if (load.getIndices().size() == 2 && load.getIndices()[0] == r &&
          load.getIndices()[1] == j &&
          (firstValue.count(load.getMemRef()) ||
           storedValue.count(load.getMemRef())))
        loads.push_back(load);
    });
    for (memref::LoadOp load : loads) {
      Value old = promotedValue(load);
      // A row the first loop stored: its value, as this load uses it.
      if (storedValue.count(load.getMemRef()) &&
          !firstValue.count(load.getMemRef()))
        firstValue[load.getMemRef()] =
            fromStore(load.getMemRef(), old.getType());
      if (old.getType() != firstValue.lookup(load.getMemRef()).getType())
        return load.emitError()
               << "norm-cache-rows: this load is used as " << old.getType()
               << " but the row cache holds the first column loop's "
               << firstValue.lookup(load.getMemRef()).getType()
               << "; run norm-promote on both or neither";
      Value cache = cacheFor(load.getMemRef());
      OpBuilder b(load);
      Value cached =
          memref::LoadOp::create(b, load.getLoc(), cache, ValueRange{j});
      old.replaceAllUsesWith(cached);
      if (old != load.getResult())
        old.getDefiningOp()->erase();
      load.erase();
    }
  }
  return success();
}

struct CacheRowsPass : public norm::impl::NormCacheRowsBase<CacheRowsPass> {
  using Base::Base;

  void runOnOperation() override {
    using norm::Stage;
    // The dx nests by op id (the order the pass always took them in), then
    // the forward nests (a program per row) in program order.
    std::map<int64_t, scf::ForOp> dxById;
    SmallVector<scf::ForOp> forwards;
    getOperation().walk([&](scf::ForOp loop) {
      std::optional<Stage> stage = norm::getStage(loop);
      std::optional<int64_t> id = norm::getNestId(loop);
      if (!stage || !id)
        return;
      if (*stage == Stage::Forward)
        forwards.push_back(loop);
      else if (*stage == Stage::Dx)
        dxById[*id] = loop;
    });

    for (auto &[id, dx] : dxById) {
      std::optional<std::pair<Block *, Value>> row = norm::getRowBody(dx);
      if (!row) {
        dx.emitError() << "norm-cache-rows: a dx nest must be "
                          "`for p { for r { row } }`";
        return signalPassFailure();
      }
      if (failed(cacheRows(row->second, *row->first, dx, earlyRows)))
        return signalPassFailure();
    }
    for (scf::ForOp fwd : forwards)
      if (failed(cacheRows(fwd.getInductionVar(), *fwd.getBody(), fwd,
                           earlyRows)))
        return signalPassFailure();

    if (failed(norm::checkRowsReadOnce(getOperation(), "norm-cache-rows")))
      signalPassFailure();
  }
};
} // namespace
