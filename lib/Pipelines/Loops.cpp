//===- Loops.cpp - norm ops -> loop nests, and loop nests -> LLVM (CPU) ---===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#include "norm/Dialect/Norm/Transforms/Passes.h"
#include "norm/Pipelines/Pipelines.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void norm::buildLowerToLoopsPipeline(OpPassManager &pm,
                                     const LowerToLoopsOptions &options) {
  // Graph level first: a grad op fed a stored xhat takes x + stats.
  pm.addNestedPass<func::FuncOp>(createNormRecompute());

  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = options.bufferizeFunctionBoundaries;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  bufferize.unknownTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));

  OpPassManager &fn = pm.nest<func::FuncOp>();
  NormSplitOptions split;
  split.groups = options.groups;
  split.strategy = options.strategy;
  fn.addPass(createNormSplit(split));
  fn.addPass(createNormRecompute());
  fn.addPass(createNormPromote());
  fn.addPass(createNormFusePartials());
  // No canonicalize here: it folds single-iteration loops (N = 1, one
  // group) together with their norm.stage tags, which norm-map-to-gpu
  // needs. norm-to-nvvm cleans up after the mapping.
}

void norm::buildCPUToLLVMPipeline(OpPassManager &pm,
                                  const CPUToLLVMOptions &) {
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createSCFToControlFlowPass());
  arith::ArithExpandOpsPassOptions expand;
  expand.includeBf16 = true;
  pm.addPass(arith::createArithExpandOpsPass(expand));
  pm.addPass(createConvertToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}
