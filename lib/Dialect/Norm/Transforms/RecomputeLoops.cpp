//===- RecomputeLoops.cpp - recompute xhat and g instead of storing them --===//
//
// Part of mlir-norm.
//
// A buffer tagged `norm.recomputable` is written by exactly one
// perfect two-deep nest, `buf[i, j] = f(i, j)`, where f only reads buffers
// the nest does not write. Every load `buf[a, b]` becomes a copy of f(a, b)
// and the buffer disappears. The tag is norm-split's promise that f's
// inputs are not modified between the nest and any load of the buffer.
// (The graph-level counterpart, on tensors, is RecomputeGraph.cpp.)
//
//===----------------------------------------------------------------------===//

#include "StageChecks.h"

#include "norm/Dialect/Norm/IR/StageContract.h"
#include "norm/Dialect/Norm/Transforms/Passes.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Analysis/TopologicalSortUtils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::norm {
#define GEN_PASS_DEF_NORMRECOMPUTELOOPS
#include "norm/Dialect/Norm/Transforms/Passes.h.inc"
} // namespace mlir::norm

using namespace mlir;

namespace {

/// The producer of a recomputable buffer: the nest, its two induction
/// variables and the stored value.
struct Producer {
  scf::ForOp outer, inner;
  memref::StoreOp store;
};

FailureOr<Producer> findProducer(memref::AllocOp alloc) {
  memref::StoreOp store;
  for (Operation *user : alloc->getUsers()) {
    if (isa<memref::LoadOp, memref::DeallocOp>(user))
      continue;
    auto s = dyn_cast<memref::StoreOp>(user);
    if (!s || store)
      return alloc.emitError()
             << "norm-recompute-loops: a recomputable buffer must have exactly "
                "one "
                "store and otherwise only loads, but it is used by "
             << user->getName();
    store = s;
  }
  if (!store)
    return alloc.emitError()
           << "norm-recompute-loops: recomputable buffer is never "
              "written";
  auto inner = dyn_cast<scf::ForOp>(store->getParentOp());
  auto outer = inner ? dyn_cast<scf::ForOp>(inner->getParentOp()) : nullptr;
  if (!outer || store.getIndices().size() != 2 ||
      store.getIndices()[0] != outer.getInductionVar() ||
      store.getIndices()[1] != inner.getInductionVar())
    return alloc.emitError()
           << "norm-recompute-loops: the store into a recomputable buffer must "
              "be "
              "buf[i, j] directly inside its two-deep loop nest over (i, j)";
  // Nothing else in the nest may write memory.
  WalkResult writes = outer.walk([&](Operation *op) {
    if (op == store.getOperation())
      return WalkResult::advance();
    auto effects = dyn_cast<MemoryEffectOpInterface>(op);
    if (effects && effects.hasEffect<MemoryEffects::Write>())
      return WalkResult::interrupt();
    return WalkResult::advance();
  });
  if (writes.wasInterrupted())
    return alloc.emitError() << "norm-recompute-loops: the producer nest of a "
                                "recomputable buffer writes other memory";
  return Producer{outer, inner, store};
}

/// Replaces `load` (of the produced buffer) by a copy of the producer's
/// computation at the load's indices.
LogicalResult recomputeAt(Producer p, memref::LoadOp load, DominanceInfo &dom) {
  // The ops the stored value depends on inside the nest, in order.
  BackwardSliceOptions options;
  // The loops themselves are not part of it: their induction variables map
  // to the load's indices.
  options.filter = [&](Operation *op) {
    return op != p.inner && p.outer->isProperAncestor(op);
  };
  options.inclusive = true;
  SetVector<Operation *> slice;
  Operation *def = p.store.getValue().getDefiningOp();
  if (def && p.outer->isProperAncestor(def))
    (void)getBackwardSlice(def, &slice, options);
  SetVector<Operation *> sorted = topologicalSort(slice);

  IRMapping map;
  map.map(p.outer.getInductionVar(), load.getIndices()[0]);
  map.map(p.inner.getInductionVar(), load.getIndices()[1]);
  for (Operation *op : sorted)
    for (Value operand : op->getOperands())
      if (!p.outer->isAncestor(operand.getParentRegion()->getParentOp()) &&
          !dom.properlyDominates(operand, load))
        return load.emitError() << "norm-recompute-loops: cannot recompute "
                                   "here, an input of the "
                                   "producer does not dominate this load";

  OpBuilder b(load);
  for (Operation *op : sorted) {
    if (op->getNumRegions() != 0)
      return op->emitError()
             << "norm-recompute-loops: producer computation with "
                "regions cannot be recomputed";
    b.clone(*op, map);
  }
  Value v = map.lookupOrDefault(p.store.getValue());
  load.replaceAllUsesWith(v);
  load.erase();
  return success();
}

struct RecomputeLoopsPass
    : public norm::impl::NormRecomputeLoopsBase<RecomputeLoopsPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    SmallVector<memref::AllocOp> buffers;
    func.walk([&](memref::AllocOp alloc) {
      if (norm::isRecomputable(alloc))
        buffers.push_back(alloc);
    });
    DominanceInfo dom(func);
    for (memref::AllocOp alloc : buffers) {
      FailureOr<Producer> producer = findProducer(alloc);
      if (failed(producer))
        return signalPassFailure();
      SmallVector<memref::LoadOp> loads;
      for (Operation *user : alloc->getUsers())
        if (auto load = dyn_cast<memref::LoadOp>(user))
          loads.push_back(load);
      for (memref::LoadOp load : loads) {
        if (failed(recomputeAt(*producer, load, dom)))
          return signalPassFailure();
        ++numLoads;
      }
      producer->outer.erase();
      for (Operation *user : llvm::make_early_inc_range(alloc->getUsers()))
        user->erase(); // the deallocs
      alloc.erase();
      ++numBuffers;
    }
    if (failed(norm::checkRecomputed(func, "norm-recompute-loops")))
      signalPassFailure();
  }
};

} // namespace
