//===- TargetInfo.cpp - facts about the GPU we generate code for ----------===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#include "norm/Conversion/NormToGPU/TargetInfo.h"

#include "llvm/ADT/StringSwitch.h"

using namespace mlir::norm;

std::optional<TargetInfo> TargetInfo::get(llvm::StringRef chip) {
  TargetInfo info;
  info.chip = chip.str();
  // sm_80 (A100: 108 SMs) and sm_90 (H100/H200: 132 SMs) share every limit
  // the mapping uses.
  info.multiprocessors = llvm::StringSwitch<int64_t>(chip)
                             .Case("sm_90", 132)
                             .Case("sm_90a", 132)
                             .Case("sm_80", 108)
                             .Case("sm_86", 0)
                             .Case("sm_89", 0)
                             .Default(-1);
  if (info.multiprocessors < 0)
    return std::nullopt;
  return info;
}
