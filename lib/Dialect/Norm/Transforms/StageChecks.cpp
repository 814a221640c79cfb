//===- StageChecks.cpp - the invariants promised after each stage ---------===//
//
// Part of mlir-norm.
//
// The post-conditions of the lowering passes, written once: each pass checks
// its own, and norm-check-stage checks all of a stage's at the pipeline's
// boundaries (as IREE and torch-mlir verify their stage contracts), so a
// pass that breaks the contract fails where it does rather than in a later
// pass that finds its input malformed.
//
//===----------------------------------------------------------------------===//

#include "StageChecks.h"

#include "norm/Dialect/Norm/IR/StageContract.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"

namespace mlir::norm {
#define GEN_PASS_DEF_NORMCHECKSTAGE
#include "norm/Dialect/Norm/Transforms/Passes.h.inc"
} // namespace mlir::norm

using namespace mlir;
using namespace mlir::norm;

LogicalResult norm::checkBufferized(Operation *root, StringRef who) {
  WalkResult result = root->walk([&](Operation *op) {
    // The function boundary may keep tensors when it is not bufferized
    // (bufferize-function-boundaries=0); the casts connect it.
    if (isa<func::FuncOp, func::ReturnOp, func::CallOp,
            bufferization::ToBufferOp, bufferization::ToTensorOp>(op))
      return WalkResult::advance();
    auto isTensor = [](Type t) { return isa<TensorType>(t); };
    if (llvm::any_of(op->getOperandTypes(), isTensor) ||
        llvm::any_of(op->getResultTypes(), isTensor)) {
      op->emitError() << who
                      << ": a tensor value is left after "
                         "bufferization";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

LogicalResult norm::checkSplit(Operation *root, StringRef who) {
  WalkResult result = root->walk([&](Operation *op) {
    if (isa<NormDialect>(op->getDialect())) {
      op->emitError() << who << ": a norm op is left";
      return WalkResult::interrupt();
    }
    if (!getStage(op))
      return WalkResult::advance();
    if (!isa<scf::ForOp>(op) || !getNestId(op) || !getAccumulateType(op)) {
      op->emitError() << who
                      << ": a tagged nest must be an scf.for carrying "
                         "norm.stage, norm.id and norm.accumulate";
      return WalkResult::interrupt();
    }
    if (Operation *parent = op->getParentOp();
        parent && getEnclosingNest(parent)) {
      op->emitError() << who << ": a tagged nest inside another";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

LogicalResult norm::checkRecomputed(Operation *root, StringRef who) {
  WalkResult result = root->walk([&](memref::AllocOp alloc) {
    if (isRecomputable(alloc)) {
      alloc.emitError() << who << ": a norm.recomputable buffer is left";
      return WalkResult::interrupt();
    }
    if (alloc.getType().getRank() != 2)
      return WalkResult::advance();
    bool loaded = false, stored = false, zeroed = false;
    for (Operation *user : alloc->getUsers()) {
      if (isa<memref::DeallocOp>(user))
        continue;
      Operation *nest = getEnclosingNest(user);
      if (!nest)
        return WalkResult::advance(); // used outside the nests: not ours
      loaded |= isa<memref::LoadOp>(user);
      stored |= !isa<memref::LoadOp>(user);
      zeroed |= getStage(nest) == Stage::Zero;
    }
    if (loaded && stored && !zeroed) {
      alloc.emitError() << who
                        << ": an [M, N] intermediate is left (a rank-2 "
                           "buffer the nests write and read that is not a "
                           "partial workspace)";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

LogicalResult norm::checkPromotedNest(Operation *nest, FloatType acc,
                                      StringRef who) {
  auto isNarrow = [&](Type t) {
    auto f = dyn_cast<FloatType>(t);
    return f && f.getWidth() < acc.getWidth();
  };
  WalkResult result = nest->walk([&](Operation *op) {
    for (Region &region : op->getRegions())
      for (BlockArgument arg : region.getArguments())
        if (isNarrow(arg.getType())) {
          op->emitError() << who << ": a " << arg.getType()
                          << " block argument is left in a nest computing "
                             "in "
                          << acc;
          return WalkResult::interrupt();
        }
    if (isa<memref::LoadOp, memref::StoreOp, arith::TruncFOp>(op))
      return WalkResult::advance();
    for (Value r : op->getResults())
      if (isNarrow(r.getType())) {
        op->emitError() << who << ": could not widen this " << r.getType()
                        << " value to " << acc;
        return WalkResult::interrupt();
      }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

LogicalResult norm::checkPromoted(Operation *root, StringRef who) {
  WalkResult result = root->walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (!getStage(op))
      return WalkResult::advance();
    auto acc = dyn_cast_or_null<FloatType>(getAccumulateType(op));
    if (!acc) {
      op->emitError() << who
                      << ": a 'norm.stage' nest needs a float "
                         "'norm.accumulate' attribute";
      return WalkResult::interrupt();
    }
    if (failed(checkPromotedNest(op, acc, who)))
      return WalkResult::interrupt();
    return WalkResult::skip();
  });
  return failure(result.wasInterrupted());
}

LogicalResult norm::checkNoPartials(Operation *root, StringRef who) {
  WalkResult result = root->walk([&](Operation *op) {
    if (getStage(op) != Stage::Partials)
      return WalkResult::advance();
    op->emitError() << who << ": a partials nest is left";
    return WalkResult::interrupt();
  });
  return failure(result.wasInterrupted());
}

std::optional<std::pair<Block *, Value>> norm::getRowBody(scf::ForOp nest) {
  std::optional<Stage> stage = getStage(nest);
  if (stage == Stage::Forward)
    return std::pair{nest.getBody(), nest.getInductionVar()};
  if (stage != Stage::Dx)
    return std::nullopt;
  scf::ForOp rows;
  for (Operation &op : *nest.getBody())
    if (auto loop = dyn_cast<scf::ForOp>(op)) {
      if (rows)
        return std::nullopt;
      rows = loop;
    }
  if (!rows)
    return std::nullopt;
  return std::pair{rows.getBody(), rows.getInductionVar()};
}

LogicalResult norm::checkRowsReadOnce(Operation *root, StringRef who) {
  WalkResult result = root->walk([&](scf::ForOp nest) {
    std::optional<std::pair<Block *, Value>> row = getRowBody(nest);
    if (!row)
      return WalkResult::advance();
    // Named values, not structured bindings: the lambdas below capture r
    // (clang rejects capturing a binding before C++20).
    Block *body = row->first;
    Value r = row->second;
    // Buffers whose row an earlier column loop loaded.
    DenseSet<Value> read;
    for (auto col : body->getOps<scf::ForOp>()) {
      DenseSet<Value> here;
      WalkResult again = col.walk([&](memref::LoadOp load) {
        if (load.getIndices().empty() || load.getIndices()[0] != r)
          return WalkResult::advance();
        if (read.contains(load.getMemRef())) {
          load.emitError() << who
                           << ": this row was loaded from memory by an "
                              "earlier column loop of the row";
          return WalkResult::interrupt();
        }
        here.insert(load.getMemRef());
        return WalkResult::advance();
      });
      if (again.wasInterrupted())
        return WalkResult::interrupt();
      read.insert(here.begin(), here.end());
    }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

LogicalResult norm::checkStage(Operation *root, CheckedStage stage,
                               StringRef who) {
  if (failed(checkBufferized(root, who)))
    return failure();
  if (stage == CheckedStage::Bufferized)
    return success();
  if (failed(checkSplit(root, who)))
    return failure();
  if (stage == CheckedStage::Split)
    return success();
  if (failed(checkRecomputed(root, who)))
    return failure();
  if (stage == CheckedStage::Recomputed)
    return success();
  if (failed(checkPromoted(root, who)))
    return failure();
  if (stage == CheckedStage::Promoted)
    return success();
  if (failed(checkNoPartials(root, who)) ||
      failed(checkRowsReadOnce(root, who)))
    return failure();
  return success();
}

namespace {
struct CheckStagePass : public norm::impl::NormCheckStageBase<CheckStagePass> {
  using Base::Base;

  void runOnOperation() override {
    markAllAnalysesPreserved();
    std::string who;
    llvm::raw_string_ostream os(who);
    os << "norm-check-stage: ";
    switch (stage) {
    case CheckedStage::Bufferized:
      os << "bufferized";
      break;
    case CheckedStage::Split:
      os << "split";
      break;
    case CheckedStage::Recomputed:
      os << "recomputed";
      break;
    case CheckedStage::Promoted:
      os << "promoted";
      break;
    case CheckedStage::Fused:
      os << "fused";
      break;
    }
    if (failed(checkStage(getOperation(), stage, who)))
      signalPassFailure();
  }
};
} // namespace
