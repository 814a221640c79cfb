//===- Promote.cpp - compute in f32, extend at loads, truncate at stores --===//
//
// Part of mlir-norm.
//
// Inside each tagged nest every float value narrower than the accumulation
// type is retyped to it in place: loads get an extf right after them, stores
// a truncf right before them, constants are rebuilt, and the extf/truncf the
// faithful form used to move between f32 statistics and the storage type
// become no-ops and disappear (which keeps the statistics' exact f32 values).
//
//===----------------------------------------------------------------------===//

#include "StageChecks.h"

#include "norm/Dialect/Norm/IR/StageContract.h"
#include "norm/Dialect/Norm/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace mlir::norm {
#define GEN_PASS_DEF_NORMPROMOTE
#include "norm/Dialect/Norm/Transforms/Passes.h.inc"
} // namespace mlir::norm

using namespace mlir;

namespace {

/// A float narrower than `acc`: what promotion widens.
bool isNarrow(Type t, FloatType acc) {
  auto f = dyn_cast<FloatType>(t);
  return f && f.getWidth() < acc.getWidth();
}

/// `v` (a narrow value defined outside the nest) as an `acc` value: the
/// f32 source of a truncation, a rebuilt constant, or an extension.
Value widenOutsideValue(OpBuilder &b, Value v, FloatType acc) {
  if (auto trunc = v.getDefiningOp<arith::TruncFOp>();
      trunc && trunc.getIn().getType() == acc)
    return trunc.getIn();
  if (auto cst = v.getDefiningOp<arith::ConstantOp>()) {
    APFloat value = cast<FloatAttr>(cst.getValue()).getValue();
    bool lost;
    value.convert(acc.getFloatSemantics(), APFloat::rmNearestTiesToEven,
                  &lost);
    return arith::ConstantOp::create(b, cst.getLoc(), acc,
                                     b.getFloatAttr(acc, value));
  }
  return arith::ExtFOp::create(b, v.getLoc(), acc, v);
}

void promoteNest(Operation *nest, FloatType acc) {
  OpBuilder b(nest);

  // Narrow values from outside the nest enter it widened.
  DenseMap<Value, Value> widened;
  nest->walk([&](Operation *op) {
    for (OpOperand &use : op->getOpOperands()) {
      Value v = use.get();
      if (!isNarrow(v.getType(), acc) ||
          nest->isAncestor(v.getParentRegion()->getParentOp()))
        continue;
      // Stores of an outside value keep it narrow.
      if (isa<memref::StoreOp>(op) && use.getOperandNumber() == 0)
        continue;
      Value &w = widened[v];
      if (!w)
        w = widenOutsideValue(b, v, acc);
      use.set(w);
    }
  });

  SmallVector<Operation *> ops;
  nest->walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (op != nest)
      ops.push_back(op);
    for (Region &region : op->getRegions())
      for (BlockArgument arg : region.getArguments())
        if (isNarrow(arg.getType(), acc))
          arg.setType(acc);
  });

  // Retype every narrow result; loads keep their type and gain an extf.
  for (Operation *op : ops) {
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      if (!isNarrow(load.getType(), acc))
        continue;
      b.setInsertionPointAfter(load);
      auto ext = arith::ExtFOp::create(b, load.getLoc(), acc, load.getResult());
      load.getResult().replaceAllUsesExcept(ext, ext);
      continue;
    }
    if (auto cst = dyn_cast<arith::ConstantOp>(op)) {
      if (!isNarrow(cst.getType(), acc))
        continue;
      b.setInsertionPoint(cst);
      cst.replaceAllUsesWith(widenOutsideValue(b, cst, acc));
      continue;
    }
    for (Value result : op->getResults())
      if (isNarrow(result.getType(), acc))
        result.setType(acc);
  }

  // Conversions that became no-ops go; stores of widened values truncate.
  nest->walk([&](Operation *op) {
    if (isa<arith::ExtFOp, arith::TruncFOp>(op) &&
        op->getOperand(0).getType() == op->getResult(0).getType()) {
      op->getResult(0).replaceAllUsesWith(op->getOperand(0));
      op->erase();
      return;
    }
    auto narrowStore = [&](Value value, Value memref) -> Value {
      Type elt = cast<MemRefType>(memref.getType()).getElementType();
      if (value.getType() == elt)
        return value;
      b.setInsertionPoint(op);
      return arith::TruncFOp::create(b, op->getLoc(), elt, value);
    };
    if (auto store = dyn_cast<memref::StoreOp>(op))
      store.getValueMutable().assign(
          narrowStore(store.getValue(), store.getMemRef()));
    else if (auto rmw = dyn_cast<memref::AtomicRMWOp>(op))
      rmw.getValueMutable().assign(
          narrowStore(rmw.getValue(), rmw.getMemref()));
  });

  // Dead constants left behind by the rebuild.
  nest->walk([&](arith::ConstantOp cst) {
    if (cst.use_empty())
      cst.erase();
  });
}

struct PromotePass : public norm::impl::NormPromoteBase<PromotePass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<Operation *> nests;
    getOperation().walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (!norm::getStage(op))
        return WalkResult::advance();
      nests.push_back(op);
      return WalkResult::skip();
    });
    for (Operation *nest : nests) {
      auto accType = dyn_cast_or_null<FloatType>(norm::getAccumulateType(nest));
      if (!accType) {
        nest->emitError() << "norm-promote: a 'norm.stage' nest needs a "
                             "float 'norm.accumulate' attribute";
        return signalPassFailure();
      }
      promoteNest(nest, accType);
      // The post-condition: no narrow arithmetic is left.
      if (failed(norm::checkPromotedNest(nest, accType, "norm-promote")))
        return signalPassFailure();
    }
  }
};

} // namespace
