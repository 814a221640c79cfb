//===- TargetInfo.cpp - facts about the GPU we generate code for ----------===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#include "norm/Conversion/NormToGPU/TargetInfo.h"

#include "llvm/ADT/StringSwitch.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir::norm;

llvm::ArrayRef<llvm::StringRef> TargetInfo::knownChips() {
  // sm_80 (A100), sm_86/sm_89 (consumer Ampere/Ada) and sm_90 (H100/H200)
  // share the limits the mapping's choices read (warp, access width, block
  // size, static shared memory); they differ in PTX version, clusters and
  // opt-in shared memory, which only bounds what a kernel may use.
  static const llvm::StringRef chips[] = {"sm_80", "sm_86", "sm_89", "sm_90",
                                          "sm_90a"};
  return chips;
}

std::optional<TargetInfo> TargetInfo::get(llvm::StringRef chip) {
  if (!llvm::is_contained(knownChips(), chip))
    return std::nullopt;
  TargetInfo info;
  info.chip = chip.str();
  // PTX ISA release notes: sm_86 came with PTX 7.1, sm_89 and sm_90 with
  // 7.8, sm_90a with 8.0.
  info.minPtxVersion = llvm::StringSwitch<int64_t>(chip)
                           .Case("sm_80", 70)
                           .Case("sm_86", 71)
                           .Cases({"sm_89", "sm_90"}, 78)
                           .Case("sm_90a", 80)
                           .Default(80);
  // Thread-block clusters (and distributed shared memory) came with sm_90;
  // 8 blocks is the portable cluster size.
  if (chip.starts_with("sm_90")) {
    info.maxClusterBlocks = 8;
    info.bulkPrefetch = true;
    info.gridDependencies = true;
  }
  info.sms = llvm::StringSwitch<int64_t>(chip)
                 .Case("sm_80", 108)
                 .Case("sm_86", 72)
                 .Case("sm_89", 142)
                 .Default(132);
  // Opt-in shared memory per block (the programming guide's table by
  // compute capability): 163 KB on 8.0, 99 KB on 8.6 and 8.9, 227 KB on 9.0.
  info.maxOptInSharedBytes = llvm::StringSwitch<int64_t>(chip)
                                 .Case("sm_80", 163 * 1024)
                                 .Cases({"sm_90", "sm_90a"}, 227 * 1024)
                                 .Default(99 * 1024);
  // Shared memory an SM has for its blocks: 164 KB on 8.0, 100 KB on 8.6
  // and 8.9, 228 KB on 9.0.
  info.sharedBytesPerSM = llvm::StringSwitch<int64_t>(chip)
                              .Case("sm_80", 164 * 1024)
                              .Cases({"sm_90", "sm_90a"}, 228 * 1024)
                              .Default(100 * 1024);
  return info;
}

std::string TargetInfo::knownChipList() {
  std::string list;
  for (llvm::StringRef chip : knownChips())
    list += (list.empty() ? "" : ", ") + chip.str();
  return list;
}
