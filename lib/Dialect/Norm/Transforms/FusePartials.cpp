//===- FusePartials.cpp - partial dw/db sums inside the dx nest ----------===//
//
// Part of mlir-norm.
//
// Per lowered grad op: the partial-sum nest walks the same programs and rows
// as the dx nest (checked structurally), so its row body moves into the dx
// nest's row body and its column loop into the dx nest's first column loop
// (the in-row sums); lock acquire/release, if any, end up around that loop;
// the reduce nest moves after the dx nest. norm-cache-rows then makes that
// loop the only one that reads x and dy.
//
//===----------------------------------------------------------------------===//

#include "StageChecks.h"

#include "norm/Dialect/Norm/IR/StageContract.h"
#include "norm/Dialect/Norm/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
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
  return llvm::all_of(
      llvm::zip(opA->getOperands(), opB->getOperands()), [&](auto p) {
        return sameFunction(std::get<0>(p), std::get<1>(p), ivA, ivB);
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

/// Moves the partial sums of one op into its dx nest.
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

struct FusePartialsPass
    : public norm::impl::NormFusePartialsBase<FusePartialsPass> {
  using Base::Base;

  void runOnOperation() override {
    using norm::Stage;
    // Nests by op id (an ordered map: any int64_t is a valid id).
    std::map<int64_t, DenseMap<Stage, scf::ForOp>> byId;
    // A nest inside another one is no input norm-split makes; fusing the
    // outer would erase the inner while it is still referenced.
    WalkResult nested = getOperation().walk([&](scf::ForOp loop) {
      std::optional<Stage> stage = norm::getStage(loop);
      std::optional<int64_t> id = norm::getNestId(loop);
      if (!stage || !id)
        return WalkResult::advance();
      if (Operation *outer = norm::getEnclosingNest(loop->getParentOp())) {
        InFlightDiagnostic diag =
            loop.emitError()
            << "norm-fuse-partials: a '" << norm::stringifyStage(*stage)
            << "' nest inside another tagged nest; nests are never nested";
        diag.attachNote(outer->getLoc())
            << "the enclosing '"
            << norm::stringifyStage(*norm::getStage(outer)) << "' nest";
        return WalkResult::interrupt();
      }
      byId[*id][*stage] = loop;
      return WalkResult::advance();
    });
    if (nested.wasInterrupted())
      return signalPassFailure();

    for (auto &[id, nests] : byId) {
      scf::ForOp partials = nests.lookup(Stage::Partials);
      if (!partials)
        continue;
      scf::ForOp dx = nests.lookup(Stage::Dx);
      if (!dx) {
        partials.emitError() << "norm-fuse-partials: cannot fuse: op " << id
                             << " has no dx nest";
        return signalPassFailure();
      }
      if (failed(fuse(partials, dx, nests.lookup(Stage::Reduce))))
        return signalPassFailure();
    }
    if (failed(norm::checkNoPartials(getOperation(), "norm-fuse-partials")))
      signalPassFailure();
  }
};
} // namespace
