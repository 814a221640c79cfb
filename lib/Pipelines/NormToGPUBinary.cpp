//===- NormToGPUBinary.cpp - norm ops -> gpu.binary (PTX / cubin) ---------===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#include "norm/Conversion/Passes.h"
#include "norm/Pipelines/Pipelines.h"

#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void norm::buildNormToGPUBinaryPipeline(OpPassManager &pm,
                                        const NormToGPUBinaryOptions &options) {
  buildLowerToLoopsPipeline(pm, options);

  NormMapToGPUOptions map;
  map.threads = options.threads;
  map.maxRegisterElements = options.maxRegisterElements;
  map.cluster = options.cluster;
  map.batchRows = options.batchRows;
  map.maxLanes = options.maxLanes;
  map.chip = options.chip;
  pm.addNestedPass<func::FuncOp>(createNormMapToGPU(map));
  pm.addPass(createGpuKernelOutliningPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());

  buildGPUToBinaryPipeline(pm, options);
}
