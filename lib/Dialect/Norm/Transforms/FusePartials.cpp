//===- FusePartials.cpp - partial dw/db inside the dx pass, rows read once ===//
//
// Part of mlir-norm.
//
// Two steps per lowered grad op:
//  1. fusion: the partial-sum nest walks the same programs and rows as the
//     dx nest (checked structurally), so its row body moves into the dx
//     nest's row body and its column loop into the dx nest's first column
//     loop (the in-row sums); lock acquire/release, if any, end up around
//     that loop; the reduce nest moves after the dx nest.
//  2. row cache: in every row body of the dx (and forward) nests, each row
//     of x / dy that the first column loop loads is kept in a per-program
//     buffer, and the later column loops read it from there.
//
//===----------------------------------------------------------------------===//

#include "norm/Dialect/Norm/IR/StageContract.h"
#include "norm/Dialect/Norm/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"

#include <map>

namespace mlir::norm {
#define GEN_PASS_DEF_NORMFUSEPARTIALS
#include "norm/Dialect/Norm/Transforms/Passes.h.inc"
} // namespace mlir::norm

using namespace mlir;

namespace {

/// True when `a` (under induction variable `ivA`) and `b` (under `ivB`)
/// compute the same function of their induction variables.
bool sameFunction(Value a, Value b, Value ivA, Value ivB) {
  if (a == ivA || b == ivB)
    return a == ivA && b == ivB;
  if (a == b)
    return true;
  if (isEqualConstantIntOrValue(getAsOpFoldResult(a), getAsOpFoldResult(b)))
    return true;
  Operation *opA = a.getDefiningOp(), *opB = b.getDefiningOp();
  if (!opA || !opB || opA->getName() != opB->getName() ||
      opA->getAttrDictionary() != opB->getAttrDictionary() ||
      opA->getNumOperands() != opB->getNumOperands() ||
      opA->getNumRegions() != 0 || !isPure(opA))
    return false;
  return llvm::all_of(llvm::zip(opA->getOperands(), opB->getOperands()),
                      [&](auto p) {
                        return sameFunction(std::get<0>(p), std::get<1>(p),
                                            ivA, ivB);
                      });
}

bool sameBounds(scf::ForOp a, scf::ForOp b, Value ivA, Value ivB) {
  return sameFunction(a.getLowerBound(), b.getLowerBound(), ivA, ivB) &&
         sameFunction(a.getUpperBound(), b.getUpperBound(), ivA, ivB) &&
         sameFunction(a.getStep(), b.getStep(), ivA, ivB);
}

/// The single scf.for directly in `block` that is a row loop (for nests of
/// the shape `for p { ...; for r { ... } }`).
scf::ForOp soleLoop(Block &block) {
  scf::ForOp found;
  for (Operation &op : block)
    if (auto loop = dyn_cast<scf::ForOp>(op)) {
      if (found)
        return {};
      found = loop;
    }
  return found;
}

SmallVector<scf::ForOp> loopsIn(Block &block) {
  SmallVector<scf::ForOp> loops;
  for (Operation &op : block)
    if (auto loop = dyn_cast<scf::ForOp>(op))
      loops.push_back(loop);
  return loops;
}

/// Step 1 for one op: moves the partial sums into the dx nest.
LogicalResult fuse(scf::ForOp partials, scf::ForOp dx, scf::ForOp reduce) {
  auto fail = [&](const Twine &why) {
    return partials.emitError() << "norm-fuse-partials: cannot fuse: " << why;
  };
  if (partials->getBlock() != dx->getBlock() ||
      !partials->isBeforeInBlock(dx) ||
      !sameBounds(partials, dx, Value(), Value()))
    return fail("the partial and dx nests do not walk the same programs");
  scf::ForOp pRows = soleLoop(*partials.getBody());
  scf::ForOp dRows = soleLoop(*dx.getBody());
  if (!pRows || !dRows ||
      !sameBounds(pRows, dRows, partials.getInductionVar(),
                  dx.getInductionVar()))
    return fail("the partial and dx nests do not walk the same rows");

  // The first column loop of the dx row body: the in-row sums.
  SmallVector<scf::ForOp> dCols = loopsIn(*dRows.getBody());
  SmallVector<scf::ForOp> pCols = loopsIn(*pRows.getBody());
  if (dCols.empty() || pCols.size() != 1)
    return fail("unexpected row body");
  scf::ForOp sums = dCols.front(), pCol = pCols.front();
  if (!sameBounds(pCol, sums, Value(), Value()))
    return fail("the column loops have different bounds");

  IRMapping map;
  map.map(partials.getInductionVar(), dx.getInductionVar());
  map.map(pRows.getInductionVar(), dRows.getInductionVar());
  map.map(pCol.getInductionVar(), sums.getInductionVar());

  // Row-level ops before the column loop go before the sums; its body goes
  // into the sums' body; ops after it (a lock release) go after the sums.
  OpBuilder b(sums);
  bool after = false;
  for (Operation &op : pRows.getBody()->without_terminator()) {
    if (&op == pCol.getOperation()) {
      OpBuilder inner = OpBuilder::atBlockTerminator(sums.getBody());
      for (Operation &colOp : pCol.getBody()->without_terminator())
        inner.clone(colOp, map);
      after = true;
      b.setInsertionPointAfter(sums);
      continue;
    }
    Operation *copy = b.clone(op, map);
    if (after)
      b.setInsertionPointAfter(copy);
  }
  partials.erase();
  if (reduce)
    reduce->moveAfter(dx);
  return success();
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
    auto effects = dyn_cast<MemoryEffectOpInterface>(op);
    for (Value operand : op.getOperands())
      if (isa<MemRefType>(operand.getType()) &&
          (!effects ||
           effects.getEffectOnValue<MemoryEffects::Write>(operand)))
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
      if (ext->isBeforeInBlock(first)) {
        first->moveBefore(ext);
      }
      ext.replaceAllUsesWith(first.getResult());
      ext.erase();
    }
  }
}

/// Loads in `loop`'s body whose indices are loop-invariant, from memrefs
/// nothing in the loop writes, move before the loop (the per-row statistics
/// the recomputation reloads per element).
void hoistInvariantLoads(scf::ForOp loop) {
  DenseSet<Value> written;
  loop.walk([&](Operation *op) {
    auto effects = dyn_cast<MemoryEffectOpInterface>(op);
    for (Value operand : op->getOperands())
      if (isa<MemRefType>(operand.getType()) &&
          (!effects ||
           effects.getEffectOnValue<MemoryEffects::Write>(operand)))
        written.insert(operand);
  });
  for (Operation &op : llvm::make_early_inc_range(*loop.getBody())) {
    auto load = dyn_cast<memref::LoadOp>(op);
    if (!load || written.contains(load.getMemRef()) ||
        !llvm::all_of(load.getIndices(), [&](Value i) {
          return loop.isDefinedOutsideOfLoop(i);
        }))
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

/// Step 2 for one row body (row `r`): later column loops read the row from
/// a cache filled by the first column loop. The caches are allocated right
/// before `nest` and freed after it; they are tagged `norm.private`: each
/// program needs its own copy when programs run in parallel (GPU mapping
/// keeps them in registers).
void cacheRows(Value r, Block &rowBody, Operation *nest) {
  SmallVector<scf::ForOp> cols = loopsIn(rowBody);
  if (cols.size() < 2)
    return;
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
  if (firstValue.empty())
    return;

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
          load.getIndices()[1] == j && firstValue.count(load.getMemRef()))
        loads.push_back(load);
    });
    for (memref::LoadOp load : loads) {
      Value old = promotedValue(load);
      if (old.getType() != firstValue.lookup(load.getMemRef()).getType())
        continue; // promoted differently: leave this load alone
      Value cache = cacheFor(load.getMemRef());
      OpBuilder b(load);
      Value cached = memref::LoadOp::create(b, load.getLoc(), cache,
                                            ValueRange{j});
      old.replaceAllUsesWith(cached);
      if (old != load.getResult())
        old.getDefiningOp()->erase();
      load.erase();
    }
  }
}

struct FusePartialsPass
    : public norm::impl::NormFusePartialsBase<FusePartialsPass> {
  using Base::Base;

  void runOnOperation() override {
    using norm::Stage;
    // Nests by op id (an ordered map: any int64_t is a valid id).
    std::map<int64_t, DenseMap<Stage, scf::ForOp>> byId;
    SmallVector<scf::ForOp> forwards;
    getOperation().walk([&](scf::ForOp loop) {
      std::optional<Stage> stage = norm::getStage(loop);
      std::optional<int64_t> id = norm::getNestId(loop);
      if (!stage || !id)
        return;
      if (*stage == Stage::Forward)
        forwards.push_back(loop);
      byId[*id][*stage] = loop;
    });

    for (auto &[id, nests] : byId) {
      scf::ForOp dx = nests.lookup(Stage::Dx);
      if (!dx)
        continue;
      if (scf::ForOp partials = nests.lookup(Stage::Partials))
        if (failed(fuse(partials, dx, nests.lookup(Stage::Reduce))))
          return signalPassFailure();
      if (scf::ForOp rows = soleLoop(*dx.getBody()))
        cacheRows(rows.getInductionVar(), *rows.getBody(), dx);
    }
    // Forward nests: `for r { sums; y }`, a program per row.
    for (scf::ForOp fwd : forwards)
      cacheRows(fwd.getInductionVar(), *fwd.getBody(), fwd);
  }
};
} // namespace
