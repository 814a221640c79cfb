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
#include "mlir/Dialect/MemRef/Transforms/Passes.h"

using namespace mlir;

void norm::buildGPUToBinaryPipeline(OpPassManager &pm,
                                    const GPUToBinaryOptions &options,
                                    int64_t rows) {
  CudaToolkitSearch toolkit = findCudaToolkit(options.toolkit);

  // What the upstream tail would abort on (or silently accept) is an error
  // here.
  NormCheckTargetOptions check;
  check.chip = options.chip;
  check.features = options.features;
  check.format = options.format;
  pm.addPass(createNormCheckTarget(check));

  pm.addPass(createNormAttachClusterDims());
  pm.addPass(createNormAttachResidentBlocks());

  GpuNVVMAttachTargetOptions target;
  target.chip = options.chip;
  target.features = options.features;
  target.optLevel = options.optLevel;
  pm.addPass(createGpuNVVMAttachTarget(target));

  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  kernels.addPass(createNormAlignWorkgroupMemory());
  kernels.addPass(createNormUnpackBF16());
  if (options.reciprocalDivide)
    kernels.addPass(createNormReciprocalDivide());
  if (options.fuseMultiplyAdd)
    kernels.addPass(createNormFuseMultiplyAdd());
  // Reshapes of rank-3 (and higher) arguments that moved into a kernel
  // (memref.collapse_shape) become plain metadata arithmetic here; the
  // NVVM lowering has no pattern for them.
  kernels.addPass(memref::createExpandStridedMetadataPass());
  kernels.addPass(createLowerAffinePass());
  kernels.addPass(createSCFToControlFlowPass());
  kernels.addPass(createConvertGpuOpsToNVVMOps());
  // NVVM ops with no LLVM intrinsic (the cluster exchange's
  // mbarrier.try_wait.parity loop) become inline PTX here.
  kernels.addPass(createConvertNVVMToLLVMPass());
  kernels.addPass(createNormExternDynamicShared());
  NormCheckLibdeviceOptions libdevice;
  libdevice.toolkit = options.toolkit;
  kernels.addPass(createNormCheckLibdevice(libdevice));
  pm.addPass(createReconcileUnrealizedCastsPass());
  // The kernels are LLVM functions now, still launched with memrefs.
  NormRestrictKernelArgumentsOptions restrict;
  restrict.apply = options.restrictArguments;
  restrict.rows = rows;
  restrict.chip = options.chip;
  restrict.residentBlocks = options.restrictResident;
  pm.addPass(createNormRestrictKernelArguments(restrict));

  GpuModuleToBinaryPassOptions binary;
  // An unresolved toolkit is reported by norm-check-libdevice when a kernel
  // needs it; kernels without libdevice calls still compile to PTX.
  binary.toolkitPath = toolkit.root;
  binary.compilationTarget = options.format;
  pm.addPass(createGpuModuleToBinaryPass(binary));
}
