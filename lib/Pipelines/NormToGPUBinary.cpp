//===- NormToGPUBinary.cpp - norm ops -> gpu.binary (PTX / cubin) ---------===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#include "norm/Conversion/Passes.h"
#include "norm/Pipelines/Passes.h"
#include "norm/Pipelines/Pipelines.h"

#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void norm::buildNormToGPUBinaryPipeline(OpPassManager &pm,
                                        const NormToGPUBinaryOptions &options) {
  // While the op still names its operands' roles (buffer form: the
  // arguments are the op's operands); norm-restrict-kernel-arguments, in
  // the GPU tail, uses and removes the marks.
  pm.addNestedPass<func::FuncOp>(createNormMarkRestrictArguments());
  buildLowerToLoopsPipeline(pm, options);

  NormChooseGeometryOptions choose;
  choose.threads = options.threads;
  choose.maxRegisterElements = options.maxRegisterElements;
  choose.cluster = options.cluster;
  choose.batchRows = options.batchRows;
  choose.maxLanes = options.maxLanes;
  choose.trimIdleWarps = options.trimIdleWarps;
  choose.twoChunkRows = options.twoChunkRows;
  choose.registerPartials = options.registerPartials;
  choose.prefetch = options.prefetch;
  choose.partialVector = options.partialVector;
  choose.pipeline = options.pipeline;
  choose.narrowCache = options.narrowCache;
  choose.holdColumns = options.holdColumns;
  choose.chip = options.chip;
  choose.rows = options.rows;
  choose.tuning = options.tuning;
  choose.tuningFile = options.tuningFile;
  pm.addNestedPass<func::FuncOp>(createNormChooseGeometry(choose));
  NormMapToGPUOptions map;
  map.chip = options.chip;
  map.rows = options.rows;
  map.rowBarriers = options.rowBarriers;
  map.rereadFallback = options.rereadFallback;
  map.forwardFinish = options.forwardFinish;
  map.asyncRows = options.asyncRows;
  map.ringDynamic = options.ringDynamic;
  map.reduceColumns = options.reduceColumns;
  map.reduceUnroll = options.reduceUnroll;
  map.waveResident = options.waveResident;
  map.dependentLaunch = options.dependentLaunch;
  pm.addNestedPass<func::FuncOp>(createNormMapToGPU(map));
  pm.addPass(createGpuKernelOutliningPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());

  buildGPUToBinaryPipeline(pm, options, options.rows);
}
