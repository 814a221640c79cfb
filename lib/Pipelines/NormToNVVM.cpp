//===- NormToNVVM.cpp - norm ops -> PTX / cubin ---------------------------===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#include "norm/Conversion/Passes.h"
#include "norm/Pipelines/Pipelines.h"

#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void norm::buildNormToNVVMPipeline(OpPassManager &pm,
                                   const NormToNVVMOptions &options) {
  LowerToLoopsOptions loops;
  loops.groups = options.groups;
  loops.strategy = options.strategy;
  buildLowerToLoopsPipeline(pm, loops);

  NormMapToGPUOptions map;
  map.threads = options.threads;
  map.chip = options.chip;
  pm.addNestedPass<func::FuncOp>(createNormMapToGPU(map));
  pm.addPass(createGpuKernelOutliningPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());

  GPUToBinaryOptions binary;
  binary.chip = options.chip;
  binary.features = options.features;
  binary.optLevel = options.optLevel;
  binary.format = options.format;
  binary.toolkit = options.toolkit;
  buildGPUToBinaryPipeline(pm, binary);
}
