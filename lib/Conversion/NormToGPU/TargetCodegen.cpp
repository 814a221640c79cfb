//===- TargetCodegen.cpp - what a chip emits differently ------------------===//
//
// Part of mlir-norm. The NVVM emitter, for every chip TargetInfo knows
// (sm_80 to sm_90a): clusters and distributed shared memory through the
// NVVM dialect's cluster barrier and `mapa` (sm_90; the geometry splits a
// row over a cluster only where TargetInfo::maxClusterBlocks > 1).
//
//===----------------------------------------------------------------------===//

#include "norm/Conversion/NormToGPU/TargetCodegen.h"
#include "norm/Conversion/NormToGPU/TargetInfo.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;
using namespace mlir::norm;

namespace {

/// NVVM's address spaces: shared memory, and the cluster's shared window.
constexpr unsigned kGlobalAddressSpace = 1;
constexpr unsigned kSharedAddressSpace = 3;
constexpr unsigned kClusterSharedAddressSpace = 7;

class NVVMCodegen : public TargetCodegen {
public:
  void clusterBarrier(OpBuilder &b, Location loc,
                      bool release) const override {
    UnitAttr aligned = b.getUnitAttr();
    if (release)
      NVVM::ClusterArriveOp::create(b, loc, aligned);
    else
      NVVM::ClusterArriveRelaxedOp::create(b, loc, aligned);
    NVVM::ClusterWaitOp::create(b, loc, aligned);
  }

  Value sharedPointer(OpBuilder &b, Location loc,
                      Value address) const override {
    auto shared = LLVM::LLVMPointerType::get(b.getContext(),
                                             kSharedAddressSpace);
    return LLVM::IntToPtrOp::create(b, loc, shared, address);
  }

  Value sharedElement(OpBuilder &b, Location loc, Value base,
                      Value index) const override {
    auto shared = LLVM::LLVMPointerType::get(b.getContext(),
                                             kSharedAddressSpace);
    return LLVM::GEPOp::create(b, loc, shared, b.getF32Type(), base,
                               ArrayRef<LLVM::GEPArg>{index});
  }

  Value loadFromClusterRank(OpBuilder &b, Location loc, Value at,
                            int64_t rank) const override {
    auto cluster = LLVM::LLVMPointerType::get(b.getContext(),
                                              kClusterSharedAddressSpace);
    Value r = arith::ConstantIntOp::create(b, loc, rank, 32);
    Value remote = NVVM::MapaOp::create(b, loc, cluster, at, r);
    return LLVM::LoadOp::create(b, loc, b.getF32Type(), remote);
  }

  void deviceFence(OpBuilder &b, Location loc) const override {
    NVVM::MembarOp::create(b, loc, NVVM::MemScopeKind::GPU);
  }

  void prefetchL2(OpBuilder &b, Location loc, Value address,
                  Value bytes) const override {
    // cp.async.bulk.prefetch.L2.global: the generic address of a global
    // buffer converted to the global space (cvta.to.global).
    auto generic = LLVM::LLVMPointerType::get(b.getContext());
    auto global =
        LLVM::LLVMPointerType::get(b.getContext(), kGlobalAddressSpace);
    Value p = LLVM::IntToPtrOp::create(b, loc, generic, address);
    Value g = LLVM::AddrSpaceCastOp::create(b, loc, global, p);
    NVVM::CpAsyncBulkPrefetchOp::create(b, loc, g, bytes,
                                        /*l2CacheHint=*/Value());
  }

  Value pin(OpBuilder &b, Location loc, Value value) const override {
    // A register move in inline PTX with side effects: LLVM keeps it in
    // the loop, and the conversions of its result after it.
    auto asmOp = LLVM::InlineAsmOp::create(
        b, loc, value.getType(), ValueRange{value},
        b.getStringAttr("mov.b32 $0, $1;"), b.getStringAttr("=r,r"),
        /*has_side_effects=*/b.getUnitAttr(), /*is_align_stack=*/nullptr,
        LLVM::TailCallKindAttr::get(b.getContext(),
                                    LLVM::tailcallkind::TailCallKind::None),
        /*asm_dialect=*/nullptr, /*operand_attrs=*/nullptr);
    return asmOp.getResult(0);
  }
};

} // namespace

const TargetCodegen &TargetCodegen::forTarget(const TargetInfo &target) {
  // Every chip TargetInfo knows is NVIDIA's (TargetInfo::knownChips).
  (void)target;
  static const NVVMCodegen nvvm;
  return nvvm;
}
