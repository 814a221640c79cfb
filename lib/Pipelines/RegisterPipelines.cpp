//===- RegisterPipelines.cpp - the pipelines of norm-opt ------------------===//
//
// Part of mlir-norm. Every pipeline is registered here, and only here.
//
//===----------------------------------------------------------------------===//

#include "norm/Pipelines/Pipelines.h"

#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

void norm::registerNormPipelines() {
  PassPipelineRegistration<LowerToLoopsOptions>(
      "norm-lower-to-loops",
      "Bufferize norm ops and lower them to fused f32 loop nests "
      "(recompute-graph, bufferize, split, recompute-loops, promote, "
      "fuse-partials, cache-rows; norm-check-stage after each stage)",
      buildLowerToLoopsPipeline);
  PassPipelineRegistration<GPUToBinaryOptions>(
      "norm-gpu-to-binary",
      "Lower gpu.module kernels to NVVM and serialise them to PTX, cubin or "
      "fatbin (chip, features, opt-level, format, toolkit)",
      [](OpPassManager &pm, const GPUToBinaryOptions &options) {
        buildGPUToBinaryPipeline(pm, options);
      });
  PassPipelineRegistration<NormToGPUBinaryOptions>(
      "norm-to-gpu-binary",
      "Compile norm ops to GPU kernels: lower to loops, map to the GPU, "
      "outline, and serialise to a gpu.binary of PTX / cubin / fatbin",
      buildNormToGPUBinaryPipeline);
  PassPipelineRegistration<CPUToLLVMOptions>(
      "norm-cpu-to-llvm",
      "Lower loop nests to the LLVM dialect for execution on the host CPU",
      buildCPUToLLVMPipeline);
}
