//===- TargetInfo.h - facts about the GPU we generate code for --*- C++ -*-===//
//
// Part of mlir-norm. Every target fact the GPU mapping uses goes through this
// one object, so adding a chip touches one place (TargetInfo.cpp).
//
// What may depend on it: limits (threads per block, shared memory) that a
// kernel must respect, the shape of an access (warp, widest load), and
// whether a row may be split over a thread-block cluster. What must not:
// anything that changes the order of a dweight/dbias sum, so that
// `deterministic` dweight/dbias are identical on every GPU. The geometry reads `warpSize` and `maxVectorBytes`,
// which do fix a sum order; the geometry unit test
// (test/Conversion/NormToGPU/geometry-test.cpp) fails as soon as a chip here
// would give a different geometry than the others.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_CONVERSION_NORMTOGPU_TARGETINFO_H
#define NORM_CONVERSION_NORMTOGPU_TARGETINFO_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>

namespace mlir::norm {

/// Shared memory the CUDA runtime reserves in every resident block (the
/// programming guide, compute capability 8.x and 9.0: 1 KB).
inline constexpr int64_t kSharedBytesReservedPerBlock = 1024;

struct TargetInfo {
  std::string chip;
  int64_t warpSize = 32;
  int64_t maxThreadsPerBlock = 1024;
  /// Static shared memory a block may use without opting in.
  int64_t maxStaticSharedBytes = 48 * 1024;
  /// Shared memory a block may use in all, static plus dynamic, once the
  /// kernel opts in (cuFuncSetAttribute): the CUDA programming guide's
  /// "maximum amount of shared memory per thread block" of the chip.
  int64_t maxOptInSharedBytes = 99 * 1024;
  /// Shared memory of one SM, shared by its resident blocks (each also
  /// holds kSharedBytesReservedPerBlock of it for the system): the
  /// programming guide's "maximum amount of shared memory per SM".
  int64_t sharedBytesPerSM = 100 * 1024;
  /// Widest global access a thread can issue in one instruction.
  int64_t maxVectorBytes = 16;
  /// The oldest PTX ISA version that knows the chip, times ten (78 = 7.8).
  int64_t minPtxVersion = 70;
  /// The most blocks a thread-block cluster may portably have (distributed
  /// shared memory between them); 1 on chips without clusters (before
  /// sm_90). The geometry may split a row over a cluster only where this
  /// is > 1; such a split changes the order of dx's in-row sums only, never
  /// that of dweight/dbias (Geometry.h).
  int64_t maxClusterBlocks = 1;
  /// Whether the chip has cp.async.bulk.prefetch (L2 prefetch of a byte
  /// range from one thread; sm_90, PTX 8.0).
  bool bulkPrefetch = false;
  /// Whether the chip has grid dependency control (griddepcontrol, sm_90,
  /// PTX 7.8): a kernel launched with programmatic stream serialization may
  /// start before the grid before it ends, and waits for it in the kernel.
  bool gridDependencies = false;
  /// SMs of the family's data-center part (A100 108, H100/H200 132; for
  /// sm_86 / sm_89, the A10's 72 and the L40S's 142): what a launch of one
  /// block an SM is measured against, where only latency is at stake (the
  /// forward's held columns, Geometry.h holdColumnsPays), never a sum
  /// order.
  int64_t sms = 108;

  /// The facts for `chip` ("sm_80", "sm_90", ...); none for unknown chips.
  static std::optional<TargetInfo> get(llvm::StringRef chip);
  /// Every chip `get` knows.
  static llvm::ArrayRef<llvm::StringRef> knownChips();
  /// "sm_80, sm_86, ...", for diagnostics.
  static std::string knownChipList();
};

} // namespace mlir::norm

#endif // NORM_CONVERSION_NORMTOGPU_TARGETINFO_H
