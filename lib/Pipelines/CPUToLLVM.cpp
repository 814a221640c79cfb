//===- CPUToLLVM.cpp - loop nests -> LLVM dialect for the host CPU --------===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#include "norm/Pipelines/Pipelines.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"

using namespace mlir;

void norm::buildCPUToLLVMPipeline(OpPassManager &pm, const CPUToLLVMOptions &) {
  pm.addPass(memref::createExpandStridedMetadataPass());
  // The strided metadata of a rank-3 view collapsed to rows is affine
  // arithmetic (convert-to-llvm leaves affine.apply alone).
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  arith::ArithExpandOpsPassOptions expand;
  expand.includeBf16 = true;
  pm.addPass(arith::createArithExpandOpsPass(expand));
  pm.addPass(createConvertToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}
