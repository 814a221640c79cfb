//===- AttachResidentBlocks.cpp - resident blocks into the kernels --------===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#include "norm/Pipelines/Passes.h"

#include "norm/Dialect/Norm/IR/NormDialect.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

namespace mlir::norm {
#define GEN_PASS_DEF_NORMATTACHRESIDENTBLOCKS
#include "norm/Pipelines/Passes.h.inc"
} // namespace mlir::norm

using namespace mlir;

namespace {
struct AttachResidentBlocksPass
    : public norm::impl::NormAttachResidentBlocksBase<
          AttachResidentBlocksPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Per kernel: the most blocks an SM any record of it asks for.
    DenseMap<Operation *, int64_t> wanted;
    module.walk([&](gpu::LaunchFuncOp launch) {
      auto func = SymbolTable::lookupNearestSymbolFrom<gpu::GPUFuncOp>(
          launch, launch.getKernel());
      auto caller = launch->getParentOfType<FunctionOpInterface>();
      auto list = caller ? caller->getAttrOfType<ArrayAttr>("norm.kernels")
                         : ArrayAttr();
      if (!func || !list)
        return;
      for (Attribute a : list) {
        auto k = dyn_cast<norm::KernelAttr>(a);
        if (!k || k.getRecord().name != launch.getKernelName().getValue() ||
            k.getRecord().resident <= 0)
          continue;
        int64_t &w = wanted[func];
        w = std::max(w, k.getRecord().resident);
      }
    });
    auto i32 = IntegerType::get(&getContext(), 32);
    for (auto &[op, blocks] : wanted)
      op->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                  IntegerAttr::get(i32, blocks));
  }
};
} // namespace
