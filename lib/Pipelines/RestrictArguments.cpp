//===- RestrictArguments.cpp - noalias / readonly kernel pointers ---------===//
//
// Part of mlir-norm.
//
// The launch contract keeps every output of a norm op apart from every
// other argument (dx may be dy itself). Two passes carry that to the
// kernels: one marks the host function's arguments while the op is still
// there to name their roles, the other, once the kernels are LLVM
// functions, puts llvm.noalias / llvm.readonly on the pointers the marked
// arguments reach.
//
//===----------------------------------------------------------------------===//

#include "norm/Conversion/NormToGPU/Geometry.h"
#include "norm/Conversion/NormToGPU/TargetInfo.h"
#include "norm/Dialect/Norm/IR/NormDialect.h"
#include "norm/Dialect/Norm/Utils/NormFunction.h"
#include "norm/Pipelines/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace mlir::norm {
#define GEN_PASS_DEF_NORMMARKRESTRICTARGUMENTS
#define GEN_PASS_DEF_NORMRESTRICTKERNELARGUMENTS
#include "norm/Pipelines/Passes.h.inc"
} // namespace mlir::norm

using namespace mlir;

namespace {
constexpr StringLiteral kNoAlias = "norm.noalias";
constexpr StringLiteral kReadOnly = "norm.readonly";

struct MarkRestrictArgumentsPass
    : public norm::impl::NormMarkRestrictArgumentsBase<
          MarkRestrictArgumentsPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    SmallVector<Operation *> ops;
    func.walk([&](Operation *op) {
      if (isa<norm::NormDialect>(op->getDialect()))
        ops.push_back(op);
    });
    // The manifest and libnormrt's checks describe functions of one op.
    if (ops.size() != 1)
      return;
    auto roles = norm::normOperandRoles(ops.front());
    if (roles.empty())
      return;
    Block &entry = func.getBody().front();
    // Per argument: the roles it is an operand in.
    DenseMap<BlockArgument, SmallVector<norm::NormArgRole>> uses;
    for (auto &[value, role] : roles) {
      auto arg = dyn_cast<BlockArgument>(value);
      if (!arg || arg.getOwner() != &entry ||
          !isa<BaseMemRefType>(arg.getType()))
        continue;
      uses[arg].push_back(role);
    }
    Builder b(&getContext());
    for (auto &[arg, argRoles] : uses) {
      bool writes = llvm::any_of(argRoles, norm::isOutputRole);
      bool inPlace = llvm::any_of(argRoles, [](norm::NormArgRole r) {
        return r == norm::NormArgRole::Dy || r == norm::NormArgRole::Dx;
      });
      if (inPlace || (writes && argRoles.size() > 1))
        continue;
      func.setArgAttr(arg.getArgNumber(), kNoAlias, b.getUnitAttr());
      if (!writes)
        func.setArgAttr(arg.getArgNumber(), kReadOnly, b.getUnitAttr());
    }
  }
};

/// The LLVM parameters a kernel operand of type `t` becomes (the
/// default, non-bare memref calling convention): a descriptor's allocated
/// and aligned pointers, offset, sizes and strides; one for anything else.
int64_t loweredParameters(Type t) {
  if (auto m = dyn_cast<MemRefType>(t))
    return 3 + 2 * m.getRank();
  return 1;
}

struct RestrictKernelArgumentsPass
    : public norm::impl::NormRestrictKernelArgumentsBase<
          RestrictKernelArgumentsPass> {
  using Base::Base;

  /// What every launch seen so far allows on one LLVM parameter.
  struct Allowed {
    bool noAlias = true;
    bool readOnly = true;
  };

  /// The blocks an SM the cost rule wants resident for the kernel `launch`
  /// launches, by its record in the caller's `norm.kernels`; 0 where the
  /// rule does not restrict it.
  int64_t pays(gpu::LaunchFuncOp launch, FunctionOpInterface caller,
               const std::optional<norm::TargetInfo> &target) {
    auto list = caller ? caller->getAttrOfType<ArrayAttr>("norm.kernels")
                       : ArrayAttr();
    if (!list || !target)
      return 0;
    for (Attribute a : list) {
      auto k = dyn_cast<norm::KernelAttr>(a);
      if (!k || k.getRecord().name != launch.getKernelName().getValue())
        continue;
      const auto &r = k.getRecord();
      if (r.kind != norm::manifest::KernelKind::Forward)
        return 0;
      return norm::restrictBlocksPerSM(r.block, r.rows, r.cluster, rows,
                                       *target);
    }
    return 0;
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<norm::TargetInfo> target = norm::TargetInfo::get(chip);
    // Per kernel: the aligned pointer parameters' allowances, what every
    // launch allows (the cost rule's and the marks'); kernels whose
    // parameters do not match the descriptor layout are dropped.
    DenseMap<Operation *, DenseMap<int64_t, Allowed>> kernels;
    DenseSet<Operation *> mismatched;
    // Per kernel: the most blocks an SM any of its launches wants resident
    // (a launch the rule does not restrict clears every noalias, so its
    // kernel gets none of them).
    DenseMap<Operation *, int64_t> resident;
    module.walk([&](gpu::LaunchFuncOp launch) {
      auto kernel = SymbolTable::lookupNearestSymbolFrom<LLVM::LLVMFuncOp>(
          launch, launch.getKernel());
      if (!apply || !kernel || mismatched.contains(kernel))
        return;
      auto caller = launch->getParentOfType<FunctionOpInterface>();
      ValueRange operands = launch.getKernelOperands();
      int64_t total = 0;
      for (Value v : operands)
        total += loweredParameters(v.getType());
      if (total != int64_t(kernel.getNumArguments())) {
        mismatched.insert(kernel);
        return;
      }
      DenseMap<int64_t, Allowed> &params = kernels[kernel];
      // A memref operand that is neither an argument nor an allocation
      // (a view) may overlap an argument: then no pointer of this launch
      // is known apart from the others.
      bool views = llvm::any_of(operands, [](Value v) {
        return isa<MemRefType>(v.getType()) && !isa<BlockArgument>(v) &&
               !v.getDefiningOp<memref::AllocOp>();
      });
      int64_t blocksPerSM = views ? 0 : pays(launch, caller, target);
      bool restricted = blocksPerSM > 0;
      int64_t &wanted = resident[kernel];
      wanted = std::max(wanted, blocksPerSM);
      int64_t at = 0;
      for (Value v : operands) {
        int64_t count = loweredParameters(v.getType());
        if (isa<MemRefType>(v.getType())) {
          int64_t aligned = at + 1;
          if (!isa<LLVM::LLVMPointerType>(
                  kernel.getArgument(at).getType()) ||
              !isa<LLVM::LLVMPointerType>(
                  kernel.getArgument(aligned).getType())) {
            mismatched.insert(kernel);
            return;
          }
          Allowed &a = params[aligned];
          auto arg = dyn_cast<BlockArgument>(v);
          bool marked = restricted && arg &&
                        arg.getOwner()->getParentOp() == caller &&
                        caller.getArgAttr(arg.getArgNumber(), kNoAlias) &&
                        llvm::count(operands, v) == 1;
          a.noAlias &= marked;
          a.readOnly &= marked &&
                        caller.getArgAttr(arg.getArgNumber(), kReadOnly);
        }
        at += count;
      }
    });
    UnitAttr unit = UnitAttr::get(&getContext());
    for (auto &[op, params] : kernels) {
      if (mismatched.contains(op))
        continue;
      auto kernel = cast<LLVM::LLVMFuncOp>(op);
      bool any = false;
      for (auto &[index, a] : params) {
        if (!a.noAlias)
          continue;
        any = true;
        kernel.setArgAttr(index, LLVM::LLVMDialect::getNoAliasAttrName(),
                          unit);
        if (a.readOnly)
          kernel.setArgAttr(index, LLVM::LLVMDialect::getReadonlyAttrName(),
                            unit);
      }
      // The wave the rule counted on: ptxas fits the registers to these
      // blocks an SM (.minnctapersm), spilling if it must.
      int64_t blocksPerSM = resident.lookup(op);
      if (any && residentBlocks && blocksPerSM > 0)
        kernel->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                        IntegerAttr::get(IntegerType::get(&getContext(), 32),
                                         blocksPerSM));
    }
    module.walk([](FunctionOpInterface f) {
      for (unsigned i = 0, e = f.getNumArguments(); i < e; ++i) {
        f.removeArgAttr(i, kNoAlias);
        f.removeArgAttr(i, kReadOnly);
      }
    });
  }
};
} // namespace
