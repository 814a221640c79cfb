//===- LowerToLoops.cpp - norm ops -> tagged f32 loop nests ---------------===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#include "norm/Dialect/Norm/Transforms/Passes.h"
#include "norm/Pipelines/Pipelines.h"

#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;

void norm::buildLowerToLoopsPipeline(OpPassManager &pm,
                                     const LowerToLoopsOptions &options) {
  // Graph level first: a grad op fed a stored xhat takes x + stats.
  pm.addNestedPass<func::FuncOp>(createNormRecomputeGraph());

  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = options.bufferizeFunctionBoundaries;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  bufferize.unknownTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));

  // Each stage, then the check of what the pipeline promises after it.
  OpPassManager &fn = pm.nest<func::FuncOp>();
  auto check = [&](CheckedStage stage) {
    NormCheckStageOptions options;
    options.stage = stage;
    fn.addPass(createNormCheckStage(options));
  };
  check(CheckedStage::Bufferized);
  NormSplitOptions split;
  split.groups = options.groups;
  split.strategy = options.strategy;
  fn.addPass(createNormSplit(split));
  fn.addPass(createNormLowerForward());
  // The split stage: every norm op, grad and forward, is a tagged nest.
  check(CheckedStage::Split);
  fn.addPass(createNormRecomputeLoops());
  check(CheckedStage::Recomputed);
  fn.addPass(createNormPromote());
  check(CheckedStage::Promoted);
  fn.addPass(createNormFusePartials());
  NormCacheRowsOptions cache;
  cache.earlyRows = options.earlyRows;
  fn.addPass(createNormCacheRows(cache));
  check(CheckedStage::Fused);
  // No canonicalize here: it folds single-iteration loops (N = 1, one
  // group) together with their norm.stage tags, which norm-map-to-gpu
  // needs. norm-to-gpu-binary cleans up after the mapping.
}
