//===- Registration.cpp - register what mlir-norm uses --------------------===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#include "norm/InitNorm.h"
#include "norm/Conversion/Passes.h"
#include "norm/Dialect/Norm/IR/NormDialect.h"
#include "norm/Dialect/Norm/Transforms/BufferizableOpInterfaceImpl.h"
#include "norm/Dialect/Norm/Transforms/Passes.h"
#include "norm/Pipelines/Passes.h"
#include "norm/Pipelines/Pipelines.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVM.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"

using namespace mlir;

void norm::registerNormDialect(DialectRegistry &registry) {
  registry.insert<norm::NormDialect>();
}

void norm::registerNormDialects(DialectRegistry &registry) {
  registerNormDialect(registry);
  registry.insert<arith::ArithDialect, bufferization::BufferizationDialect,
                  cf::ControlFlowDialect, func::FuncDialect, gpu::GPUDialect,
                  index::IndexDialect, linalg::LinalgDialect,
                  LLVM::LLVMDialect, math::MathDialect,
                  memref::MemRefDialect, NVVM::NVVMDialect, scf::SCFDialect,
                  tensor::TensorDialect, ub::UBDialect,
                  vector::VectorDialect>();

  // convert-to-llvm / convert-gpu-to-nvvm find their patterns through these.
  arith::registerConvertArithToLLVMInterface(registry);
  cf::registerConvertControlFlowToLLVMInterface(registry);
  registerConvertFuncToLLVMInterface(registry);
  index::registerConvertIndexToLLVMInterface(registry);
  registerConvertMathToLLVMInterface(registry);
  registerConvertMemRefToLLVMInterface(registry);
  registerConvertNVVMToLLVMInterface(registry);
  ub::registerConvertUBToLLVMInterface(registry);
  vector::registerConvertVectorToLLVMInterface(registry);

  // One-Shot Bufferize: our ops, and the upstream ops around them.
  registerBufferizableOpInterfaceExternalModels(registry);
  arith::registerBufferizableOpInterfaceExternalModels(registry);
  bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(
      registry);
  // Linalg on tensors: norm-raise's input, and what it leaves.
  linalg::registerBufferizableOpInterfaceExternalModels(registry);
  scf::registerBufferizableOpInterfaceExternalModels(registry);
  tensor::registerBufferizableOpInterfaceExternalModels(registry);

  // gpu-module-to-binary: the NVVM target and the LLVM IR translations.
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  registerBuiltinDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
}

void norm::registerNormPasses() {
  registerNormTransformsPasses();
  registerNormConversionPasses();
  registerNormPipelinePasses();
  registerNormPipelines();
}

void norm::registerNormAndUpstreamPasses() {
  registerNormPasses();
  // Core transforms.
  registerCanonicalizer();
  registerCSE();
  registerLoopInvariantCodeMotion();
  registerSymbolDCE();
  // The GPU tail.
  registerGpuNVVMAttachTarget();
  registerGpuModuleToBinaryPass();
  registerGpuKernelOutliningPass();
  registerGpuLaunchSinkIndexComputationsPass();
  registerConvertGpuOpsToNVVMOps();
  registerSCFToControlFlowPass();
  registerReconcileUnrealizedCastsPass();
  // CPU execution of the loop nests (and of the linalg norm-raise leaves).
  registerConvertLinalgToLoopsPass();
  registerConvertToLLVMPass();
  registerArithToLLVMConversionPass();
  registerConvertControlFlowToLLVMPass();
  registerConvertFuncToLLVMPass();
  registerConvertMathToLLVMPass();
  registerFinalizeMemRefToLLVMConversionPass();
  registerLowerAffinePass();
  registerSCFToControlFlowPass();
  memref::registerExpandStridedMetadataPass();
  arith::registerArithExpandOpsPass();
  bufferization::registerOneShotBufferizePass();
  bufferization::registerBufferizationPipelines();
}
