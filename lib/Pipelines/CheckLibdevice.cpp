//===- CheckLibdevice.cpp - fail early on unresolvable libdevice ----------===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#include "norm/Pipelines/CudaToolkit.h"
#include "norm/Pipelines/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "llvm/ADT/StringExtras.h"

namespace mlir::norm {
#define GEN_PASS_DEF_NORMCHECKLIBDEVICE
#include "norm/Pipelines/Passes.h.inc"
} // namespace mlir::norm

using namespace mlir;

namespace {
struct CheckLibdevicePass
    : public norm::impl::NormCheckLibdeviceBase<CheckLibdevicePass> {
  using Base::Base;

  void runOnOperation() override {
    gpu::GPUModuleOp module = getOperation();
    LLVM::LLVMFuncOp firstCall;
    module.walk([&](LLVM::LLVMFuncOp func) {
      if (func.isExternal() && func.getName().starts_with("__nv_") &&
          !firstCall)
        firstCall = func;
    });
    if (!firstCall)
      return;
    norm::CudaToolkitSearch search = norm::findCudaToolkit(toolkit);
    if (!search.root.empty())
      return;
    firstCall.emitError()
        << "kernel module '" << module.getName()
        << "' calls libdevice function '" << firstCall.getName()
        << "' but no CUDA toolkit with nvvm/libdevice/libdevice.10.bc was "
           "found (tried: "
        << llvm::join(search.tried, ", ")
        << "); pass toolkit=<path> or set CUDA_HOME";
    signalPassFailure();
  }
};
} // namespace
