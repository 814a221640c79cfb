//===- StageContract.cpp - what the lowering stages tell each other -------===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#include "norm/Dialect/Norm/IR/StageContract.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/MLIRContext.h"

using namespace mlir;
using namespace mlir::norm;

namespace {
/// The norm dialect, loaded whenever one of its attributes exists: an op
/// can only carry a norm attribute once the dialect is loaded.
NormDialect *dialectOf(Operation *op) {
  return op->getContext()->getLoadedDialect<NormDialect>();
}
NormDialect &loadedDialect(Operation *op) {
  return *op->getContext()->getOrLoadDialect<NormDialect>();
}
} // namespace

std::optional<Stage> norm::getStage(Operation *op) {
  NormDialect *d = dialectOf(op);
  if (!d)
    return std::nullopt;
  if (StageAttr s = d->getStageAttrHelper().getAttr(op))
    return s.getValue();
  return std::nullopt;
}

void norm::setStage(Operation *nest, Stage stage, int64_t id, Type accumulate) {
  NormDialect &d = loadedDialect(nest);
  MLIRContext *ctx = nest->getContext();
  d.getStageAttrHelper().setAttr(nest, StageAttr::get(ctx, stage));
  d.getIdAttrHelper().setAttr(nest, Builder(ctx).getI64IntegerAttr(id));
  d.getAccumulateAttrHelper().setAttr(nest, TypeAttr::get(accumulate));
}

std::optional<int64_t> norm::getNestId(Operation *nest) {
  NormDialect *d = dialectOf(nest);
  if (!d)
    return std::nullopt;
  if (IntegerAttr id = d->getIdAttrHelper().getAttr(nest))
    return id.getInt();
  return std::nullopt;
}

Type norm::getAccumulateType(Operation *nest) {
  NormDialect *d = dialectOf(nest);
  if (!d)
    return {};
  if (TypeAttr t = d->getAccumulateAttrHelper().getAttr(nest))
    return t.getValue();
  return {};
}

std::optional<ReductionStrategy> norm::getNestStrategy(Operation *nest) {
  NormDialect *d = dialectOf(nest);
  if (!d)
    return std::nullopt;
  if (ReductionStrategyAttr s = d->getStrategyAttrHelper().getAttr(nest))
    return s.getValue();
  return std::nullopt;
}

void norm::setNestStrategy(Operation *nest, ReductionStrategy strategy) {
  loadedDialect(nest).getStrategyAttrHelper().setAttr(
      nest, ReductionStrategyAttr::get(nest->getContext(), strategy));
}

RowGeometryAttr norm::getGeometry(Operation *op) {
  NormDialect *d = dialectOf(op);
  return d ? d->getGeometryAttrHelper().getAttr(op) : RowGeometryAttr();
}

void norm::setGeometry(Operation *op, RowGeometryAttr geometry) {
  loadedDialect(op).getGeometryAttrHelper().setAttr(op, geometry);
}

void norm::copyGeometry(Operation *from, Operation *to) {
  if (RowGeometryAttr g = getGeometry(from))
    setGeometry(to, g);
}

bool norm::isRecomputable(Operation *alloc) {
  NormDialect *d = dialectOf(alloc);
  return d && d->getRecomputableAttrHelper().isAttrPresent(alloc);
}

void norm::setRecomputable(Operation *alloc) {
  loadedDialect(alloc).getRecomputableAttrHelper().setAttr(
      alloc, UnitAttr::get(alloc->getContext()));
}

bool norm::isRowCache(Operation *alloc) {
  NormDialect *d = dialectOf(alloc);
  return d && d->getRowCacheAttrHelper().isAttrPresent(alloc);
}

void norm::setRowCache(Operation *alloc) {
  loadedDialect(alloc).getRowCacheAttrHelper().setAttr(
      alloc, UnitAttr::get(alloc->getContext()));
}

bool norm::isEarlyRow(Operation *alloc) {
  NormDialect *d = dialectOf(alloc);
  return d && d->getEarlyRowAttrHelper().isAttrPresent(alloc);
}

void norm::setEarlyRow(Operation *alloc) {
  loadedDialect(alloc).getEarlyRowAttrHelper().setAttr(
      alloc, UnitAttr::get(alloc->getContext()));
}

bool norm::isWorkspace(Operation *alloc) {
  NormDialect *d = dialectOf(alloc);
  return d && d->getWorkspaceAttrHelper().isAttrPresent(alloc);
}

void norm::setWorkspace(Operation *alloc) {
  loadedDialect(alloc).getWorkspaceAttrHelper().setAttr(
      alloc, UnitAttr::get(alloc->getContext()));
}

bool norm::isWrittenWhole(Operation *alloc) {
  NormDialect *d = dialectOf(alloc);
  return d && d->getWrittenAttrHelper().isAttrPresent(alloc);
}

void norm::setWrittenWhole(Operation *alloc) {
  loadedDialect(alloc).getWrittenAttrHelper().setAttr(
      alloc, UnitAttr::get(alloc->getContext()));
}

bool norm::isLoweringBuffer(Value value) {
  Operation *def = value.getDefiningOp();
  return def && (isRowCache(def) || isRecomputable(def) || isWorkspace(def));
}

Operation *norm::getEnclosingNest(Operation *op) {
  Operation *nest = nullptr;
  for (Operation *p = op; p; p = p->getParentOp())
    if (getStage(p))
      nest = p;
  return nest;
}

Operation *norm::findUnlowered(Operation *root, bool taggedNests) {
  Operation *found = nullptr;
  root->walk([&](Operation *op) {
    if (isa<NormDialect>(op->getDialect()) || (taggedNests && getStage(op))) {
      found = op;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return found;
}
