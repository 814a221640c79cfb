//===- CheckTarget.cpp - reject what the NVVM tail would abort on ---------===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#include "norm/Conversion/NormToGPU/TargetInfo.h"
#include "norm/Dialect/Norm/IR/StageContract.h"
#include "norm/Pipelines/Passes.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringExtras.h"

namespace mlir::norm {
#define GEN_PASS_DEF_NORMCHECKTARGET
#include "norm/Pipelines/Passes.h.inc"
} // namespace mlir::norm

using namespace mlir;

namespace {
struct CheckTargetPass
    : public norm::impl::NormCheckTargetBase<CheckTargetPass> {
  using Base::Base;

  /// An error at the first `OpT` of `module` when the PTX `version` is
  /// below `minimum`, the version that `what` needs.
  template <typename OpT>
  LogicalResult needsPtx(ModuleOp module, int64_t version, int64_t minimum,
                         StringRef what) {
    if (version >= minimum)
      return success();
    Operation *found = nullptr;
    module.walk([&](OpT op) {
      found = op;
      return WalkResult::interrupt();
    });
    if (!found)
      return success();
    return emitError(found->getLoc())
           << "norm-gpu-to-binary: features '" << features << "': " << what
           << " needs +ptx" << minimum << " or later";
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<norm::TargetInfo> target = norm::TargetInfo::get(chip);
    if (!target) {
      emitError(module.getLoc())
          << "norm-gpu-to-binary: unknown chip '" << chip
          << "' (known: " << norm::TargetInfo::knownChipList() << ")";
      return signalPassFailure();
    }
    // The PTX version is the +ptxNN feature; without one LLVM picks the
    // chip's own minimum.
    SmallVector<StringRef> parts;
    StringRef(features).split(parts, ',', -1, /*KeepEmpty=*/false);
    for (StringRef f : parts) {
      f = f.trim();
      int64_t version = 0;
      if (!f.consume_front("+ptx"))
        continue;
      if (f.getAsInteger(10, version)) {
        emitError(module.getLoc())
            << "norm-gpu-to-binary: features '" << features << "': '+ptx" << f
            << "' is not a PTX version (e.g. +ptx80)";
        return signalPassFailure();
      }
      if (version < target->minPtxVersion) {
        emitError(module.getLoc())
            << "norm-gpu-to-binary: features '" << features
            << "' are too old for " << chip << ", which needs +ptx"
            << target->minPtxVersion << " or later";
        return signalPassFailure();
      }
      // The rows' L2 prefetch (a geometry's `prefetch`) is PTX 8.0's
      // cp.async.bulk.prefetch, which NVPTX cannot select below; the
      // cluster's exchange of a row's sums (a row split over a cluster)
      // stores with PTX 8.1's st.async, which ptxas refuses below.
      if (failed(needsPtx<NVVM::CpAsyncBulkPrefetchOp>(
              module, version, 80,
              "the rows' L2 prefetch (a row geometry's prefetch)")) ||
          failed(needsPtx<NVVM::MBarrierInitOp>(
              module, version, 81,
              "the cluster's exchange of a row's sums (a row split over a "
              "cluster)")))
        return signalPassFailure();
    }
    if (!llvm::is_contained({"isa", "bin", "fatbin"}, StringRef(format))) {
      emitError(module.getLoc()) << "norm-gpu-to-binary: format '" << format
                                 << "' is not one of isa, bin, fatbin";
      return signalPassFailure();
    }
    // The wrong stage: norm ops or tagged nests have no kernels yet, and
    // this tail would pass them through untouched.
    if (Operation *early = norm::findUnlowered(module, /*taggedNests=*/true)) {
      emitError(early->getLoc())
          << "norm-gpu-to-binary: '" << early->getName()
          << (norm::getStage(early) ? "' (a tagged norm nest)" : "'")
          << " is not lowered to kernels yet; run norm-lower-to-loops and "
             "norm-map-to-gpu first, or the whole pipeline, "
             "norm-to-gpu-binary";
      return signalPassFailure();
    }
  }
};
} // namespace
