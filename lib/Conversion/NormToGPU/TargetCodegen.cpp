//===- TargetCodegen.cpp - what a chip emits differently ------------------===//
//
// Part of mlir-norm. The NVVM emitter, for every chip TargetInfo knows
// (sm_80 to sm_90a): clusters and distributed shared memory through the
// NVVM dialect's cluster barrier, mbarriers and `mapa`, and `st.async` in
// inline PTX (sm_90; the geometry splits a row over a cluster only where
// TargetInfo::maxClusterBlocks > 1).
//
//===----------------------------------------------------------------------===//

#include "norm/Conversion/NormToGPU/TargetCodegen.h"
#include "norm/Conversion/NormToGPU/TargetInfo.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

#include <cassert>
#include <string>

using namespace mlir;
using namespace mlir::norm;

namespace {

/// NVVM's address spaces: shared memory, and the cluster's shared window.
constexpr unsigned kGlobalAddressSpace = 1;
constexpr unsigned kSharedAddressSpace = 3;
constexpr unsigned kClusterSharedAddressSpace = 7;

/// Inline PTX `text` with side effects (LLVM neither removes nor moves it),
/// LLVM's `constraints` ("~{memory}" orders it against memory accesses).
LLVM::InlineAsmOp sideEffectAsm(OpBuilder &b, Location loc,
                                TypeRange results, ValueRange operands,
                                StringRef text, StringRef constraints) {
  return LLVM::InlineAsmOp::create(
      b, loc, results, operands, b.getStringAttr(text),
      b.getStringAttr(constraints),
      /*has_side_effects=*/b.getUnitAttr(), /*is_align_stack=*/nullptr,
      LLVM::TailCallKindAttr::get(b.getContext(),
                                  LLVM::tailcallkind::TailCallKind::None),
      /*asm_dialect=*/nullptr, /*operand_attrs=*/nullptr);
}

class NVVMCodegen : public TargetCodegen {
public:
  Value sharedPointer(OpBuilder &b, Location loc,
                      Value address) const override {
    auto shared = LLVM::LLVMPointerType::get(b.getContext(),
                                             kSharedAddressSpace);
    return LLVM::IntToPtrOp::create(b, loc, shared, address);
  }

  void initBarrier(OpBuilder &b, Location loc, Value bar) const override {
    NVVM::MBarrierInitOp::create(
        b, loc, bar, arith::ConstantIntOp::create(b, loc, 1, 32),
        /*predicate=*/Value());
  }

  void clusterArriveAfterInit(OpBuilder &b, Location loc) const override {
    // fence.mbarrier_init.release.cluster, then a relaxed arrival: the
    // fence is the release the other blocks' wait (acquire) pairs with.
    NVVM::FenceMbarrierInitOp::create(b, loc);
    NVVM::ClusterArriveRelaxedOp::create(b, loc, b.getUnitAttr());
  }

  void clusterWait(OpBuilder &b, Location loc) const override {
    NVVM::ClusterWaitOp::create(b, loc, b.getUnitAttr());
  }

  void clusterBarrier(OpBuilder &b, Location loc) const override {
    // barrier.cluster.arrive (.release by default), then
    // barrier.cluster.wait (.acquire by default).
    NVVM::ClusterArriveOp::create(b, loc, b.getUnitAttr());
    NVVM::ClusterWaitOp::create(b, loc, b.getUnitAttr());
  }

  void arriveExpectingBytes(OpBuilder &b, Location loc, Value bar,
                            int64_t bytes) const override {
    NVVM::MBarrierArriveExpectTxOp::create(
        b, loc, /*res=*/Type(), bar,
        arith::ConstantIntOp::create(b, loc, bytes, 32),
        /*scope=*/NVVM::MemScopeKindAttr(), /*relaxed=*/BoolAttr(),
        /*predicate=*/Value());
  }

  void pushToClusterRank(OpBuilder &b, Location loc, Value at,
                         ValueRange values, Value bar,
                         int64_t rank) const override {
    // st.async (MLIR 22's NVVM dialect has no op for it): 32-bit
    // shared::cluster addresses of the slot and of the mbarrier in block
    // `rank` (mapa), one store of every value.
    auto cluster = LLVM::LLVMPointerType::get(b.getContext(),
                                              kClusterSharedAddressSpace);
    Value r = arith::ConstantIntOp::create(b, loc, rank, 32);
    auto address32 = [&](Value local) -> Value {
      Value remote = NVVM::MapaOp::create(b, loc, cluster, local, r);
      return LLVM::PtrToIntOp::create(b, loc, b.getI32Type(), remote);
    };
    SmallVector<Value> operands{address32(at), address32(bar)};
    std::string vals;
    for (auto [i, v] : llvm::enumerate(values)) {
      operands.push_back(v);
      vals += (i ? ", $" : "$") + std::to_string(i + 2);
    }
    std::string type = values.size() == 1 ? ".f32"
                                          : ".v" + std::to_string(values.size()) + ".f32";
    std::string constraints = "r,r";
    for (size_t i = 0; i < values.size(); ++i)
      constraints += ",f";
    assert((values.size() == 1 || values.size() == 2 || values.size() == 4) &&
           "st.async stores 1, 2 or 4 words");
    sideEffectAsm(b, loc, TypeRange{}, operands,
                  "st.async.shared::cluster.mbarrier::complete_tx::bytes" +
                      type + " [$0], " +
                      (values.size() == 1 ? vals : "{" + vals + "}") +
                      ", [$1];",
                  constraints + ",~{memory}");
  }

  void waitBarrierPhase(OpBuilder &b, Location loc, Value bar,
                        Value parity) const override {
    // A loop of mbarrier.try_wait.parity (acquire); the suspend hint is
    // the time limit CUTLASS's waits give.
    NVVM::MBarrierTryWaitParityOp::create(
        b, loc, bar, parity,
        arith::ConstantIntOp::create(b, loc, 0x989680, 32));
  }

  void groupBarrier(OpBuilder &b, Location loc, Value id,
                    int64_t threads) const override {
    // bar.sync id, threads (barrier.sync.aligned with a thread count).
    Value id32 = arith::IndexCastUIOp::create(b, loc, b.getI32Type(), id);
    NVVM::BarrierOp::create(
        b, loc, /*res=*/Type(), id32,
        arith::ConstantIntOp::create(b, loc, threads, 32),
        /*reductionOp=*/nullptr, /*reductionPredicate=*/Value());
  }

  void asyncCopy(OpBuilder &b, Location loc, Value to, Value from,
                 int64_t bytes) const override {
    auto generic = LLVM::LLVMPointerType::get(b.getContext());
    auto global =
        LLVM::LLVMPointerType::get(b.getContext(), kGlobalAddressSpace);
    Value src = LLVM::AddrSpaceCastOp::create(
        b, loc, global, LLVM::IntToPtrOp::create(b, loc, generic, from));
    // cp.async.cg (L2 only) takes 16 bytes alone; smaller copies .ca.
    NVVM::CpAsyncOp::create(
        b, loc, to, src, b.getI32IntegerAttr(bytes),
        NVVM::LoadCacheModifierKindAttr::get(
            b.getContext(), bytes == 16 ? NVVM::LoadCacheModifierKind::CG
                                        : NVVM::LoadCacheModifierKind::CA),
        /*cpSize=*/Value());
  }

  void asyncCommit(OpBuilder &b, Location loc) const override {
    NVVM::CpAsyncCommitGroupOp::create(b, loc);
  }

  void asyncWait(OpBuilder &b, Location loc, int64_t pending) const override {
    NVVM::CpAsyncWaitGroupOp::create(b, loc, pending);
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

  void waitForPriorGrids(OpBuilder &b, Location loc) const override {
    // Inline PTX with a memory clobber, not nvvm.griddepcontrol: LLVM's
    // intrinsics are IntrNoMem, so nothing would keep a load of the prior
    // grid's output from being scheduled above the wait.
    for (StringRef text :
         {"griddepcontrol.wait;", "griddepcontrol.launch_dependents;"})
      sideEffectAsm(b, loc, TypeRange{}, ValueRange{}, text, "~{memory}");
  }

  Value pin(OpBuilder &b, Location loc, Value value) const override {
    // A register move in inline PTX with side effects: LLVM keeps it in
    // the loop, and the conversions of its result after it.
    return sideEffectAsm(b, loc, value.getType(), ValueRange{value},
                         "mov.b32 $0, $1;", "=r,r")
        .getResult(0);
  }
};

} // namespace

const TargetCodegen &TargetCodegen::forTarget(const TargetInfo &target) {
  // Every chip TargetInfo knows is NVIDIA's (TargetInfo::knownChips).
  (void)target;
  static const NVVMCodegen nvvm;
  return nvvm;
}
