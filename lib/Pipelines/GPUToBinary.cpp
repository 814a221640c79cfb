//===- GPUToBinary.cpp - gpu.module -> PTX / cubin pipeline ---------------===//
//
// Part of mlir-norm.
//
// Wraps the upstream NVVM tail with the prerequisites it needs (scf -> cf
// inside the kernel module) and a libdevice check, so users do not have to
// know them.
//
//===----------------------------------------------------------------------===//

#include "norm/Pipelines/CudaToolkit.h"
#include "norm/Pipelines/Passes.h"
#include "norm/Pipelines/Pipelines.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

void norm::buildGPUToBinaryPipeline(OpPassManager &pm,
                                    const GPUToBinaryOptions &options) {
  CudaToolkitSearch toolkit = findCudaToolkit(options.toolkit);

  GpuNVVMAttachTargetOptions target;
  target.chip = options.chip;
  target.features = options.features;
  target.optLevel = options.optLevel;
  pm.addPass(createGpuNVVMAttachTarget(target));

  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  kernels.addPass(createNormAlignWorkgroupMemory());
  kernels.addPass(createSCFToControlFlowPass());
  kernels.addPass(createConvertGpuOpsToNVVMOps());
  NormCheckLibdeviceOptions check;
  check.toolkit = options.toolkit;
  kernels.addPass(createNormCheckLibdevice(check));
  pm.addPass(createReconcileUnrealizedCastsPass());

  GpuModuleToBinaryPassOptions binary;
  // An unresolved toolkit is reported by norm-check-libdevice when a kernel
  // needs it; kernels without libdevice calls still compile to PTX.
  binary.toolkitPath = toolkit.root;
  binary.compilationTarget = options.format;
  pm.addPass(createGpuModuleToBinaryPass(binary));
}

void norm::registerNormPipelines() {
  PassPipelineRegistration<GPUToBinaryOptions>(
      "norm-gpu-to-binary",
      "Lower gpu.module kernels to NVVM and serialise them to PTX, cubin or "
      "fatbin (chip, features, opt-level, format, toolkit)",
      buildGPUToBinaryPipeline);
  PassPipelineRegistration<LowerToLoopsOptions>(
      "norm-lower-to-loops",
      "Bufferize norm ops and lower them to fused f32 loop nests "
      "(split, recompute, promote, fuse-partials)",
      buildLowerToLoopsPipeline);
  PassPipelineRegistration<NormToNVVMOptions>(
      "norm-to-nvvm",
      "Compile norm ops to GPU kernels: lower to loops, map to the GPU, "
      "outline, and serialise to PTX / cubin / fatbin",
      buildNormToNVVMPipeline);
  PassPipelineRegistration<CPUToLLVMOptions>(
      "norm-cpu-to-llvm",
      "Lower loop nests to the LLVM dialect for execution on the host CPU",
      buildCPUToLLVMPipeline);
}
