//===- TargetInfo.h - facts about the GPU we generate code for --*- C++ -*-===//
//
// Part of mlir-norm. Every target fact the GPU mapping and the runtime use
// goes through this one object, so adding a chip touches one place.
//
// What may depend on it: limits (threads per block, shared memory) that a
// kernel must respect. What must not: anything that changes the order of a
// floating-point sum (rows per program, lanes per row, groups), so that
// `deterministic` results are identical on every GPU.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_CONVERSION_NORMTOGPU_TARGETINFO_H
#define NORM_CONVERSION_NORMTOGPU_TARGETINFO_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>

namespace mlir::norm {

struct TargetInfo {
  std::string chip;
  int64_t warpSize = 32;
  int64_t maxThreadsPerBlock = 1024;
  /// Static shared memory a block may use without opting in.
  int64_t maxStaticSharedBytes = 48 * 1024;
  /// Widest global access a thread can issue in one instruction.
  int64_t maxVectorBytes = 16;
  /// Multiprocessors, for reporting only (never for sum order).
  int64_t multiprocessors = 0;

  /// The facts for `chip` ("sm_80", "sm_90", ...); none for unknown chips.
  static std::optional<TargetInfo> get(llvm::StringRef chip);
};

} // namespace mlir::norm

#endif // NORM_CONVERSION_NORMTOGPU_TARGETINFO_H
