//===- AttachClusterDims.cpp - cluster sizes into the kernels -------------===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#include "norm/Pipelines/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

namespace mlir::norm {
#define GEN_PASS_DEF_NORMATTACHCLUSTERDIMS
#include "norm/Pipelines/Passes.h.inc"
} // namespace mlir::norm

using namespace mlir;

namespace {
struct AttachClusterDimsPass
    : public norm::impl::NormAttachClusterDimsBase<AttachClusterDimsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    StringRef name = NVVM::NVVMDialect::getClusterDimAttrName();
    // The size each kernel is launched with (empty: without clusters).
    DenseMap<Operation *, SmallVector<int32_t>> sizes;
    WalkResult result = module.walk([&](gpu::LaunchFuncOp launch) {
      auto func = SymbolTable::lookupNearestSymbolFrom<gpu::GPUFuncOp>(
          launch, launch.getKernel());
      if (!func)
        return WalkResult::advance();
      SmallVector<int32_t> size;
      if (launch.hasClusterSize()) {
        for (Value v : {launch.getClusterSizeX(), launch.getClusterSizeY(),
                        launch.getClusterSizeZ()}) {
          std::optional<int64_t> c = getConstantIntValue(v);
          if (!c || *c < 1 || *c > INT32_MAX) {
            launch.emitError()
                << "norm-attach-cluster-dims: the cluster size of a launch "
                   "of '"
                << func.getName() << "' is not a positive constant";
            return WalkResult::interrupt();
          }
          size.push_back(int32_t(*c));
        }
      }
      auto [it, inserted] = sizes.try_emplace(func, size);
      if (!inserted && it->second != size) {
        launch.emitError() << "norm-attach-cluster-dims: '" << func.getName()
                           << "' is launched with two different cluster "
                              "sizes; it can be compiled for one";
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      return signalPassFailure();
    for (auto &[op, size] : sizes)
      if (!size.empty())
        op->setAttr(name, DenseI32ArrayAttr::get(&getContext(), size));
  }
};
} // namespace
