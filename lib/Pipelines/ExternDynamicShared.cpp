//===- ExternDynamicShared.cpp - the dynamic shared memory, extern ---------===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#include "norm/Pipelines/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

namespace mlir::norm {
#define GEN_PASS_DEF_NORMEXTERNDYNAMICSHARED
#include "norm/Pipelines/Passes.h.inc"
} // namespace mlir::norm

using namespace mlir;

namespace {
/// The NVVM address space of shared (workgroup) memory.
constexpr unsigned kSharedAddressSpace = 3;

struct ExternDynamicSharedPass
    : public norm::impl::NormExternDynamicSharedBase<ExternDynamicSharedPass> {
  void runOnOperation() override {
    getOperation().walk([](LLVM::GlobalOp global) {
      auto array = dyn_cast<LLVM::LLVMArrayType>(global.getGlobalType());
      if (global.getAddrSpace() != kSharedAddressSpace || !array ||
          array.getNumElements() != 0)
        return;
      global.setLinkage(LLVM::Linkage::External);
    });
  }
};
} // namespace
