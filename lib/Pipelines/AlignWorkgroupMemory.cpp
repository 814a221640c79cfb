//===- AlignWorkgroupMemory.cpp - 16-byte aligned shared buffers ----------===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#include "norm/Pipelines/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

namespace mlir::norm {
#define GEN_PASS_DEF_NORMALIGNWORKGROUPMEMORY
#include "norm/Pipelines/Passes.h.inc"
} // namespace mlir::norm

using namespace mlir;

namespace {
struct AlignWorkgroupMemoryPass
    : public norm::impl::NormAlignWorkgroupMemoryBase<
          AlignWorkgroupMemoryPass> {
  void runOnOperation() override {
    StringRef name = LLVM::LLVMDialect::getAlignAttrName();
    getOperation().walk([&](gpu::GPUFuncOp func) {
      for (unsigned i = 0, e = func.getNumWorkgroupAttributions(); i < e;
           ++i) {
        auto align = dyn_cast_or_null<IntegerAttr>(
            func.getWorkgroupAttributionAttr(i, name));
        if (align && align.getInt() >= 16)
          continue;
        func.setWorkgroupAttributionAttr(
            i, name, IntegerAttr::get(IntegerType::get(&getContext(), 64), 16));
      }
    });
  }
};
} // namespace
