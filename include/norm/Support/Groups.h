//===- Groups.h - the number of partial rows G, for compiler and runtime --===//
//
// Part of mlir-norm.
//
// The number of partial rows G of the cross-row dweight/dbias reduction is a
// function of (M, N) alone, never of the device, so `deterministic` results
// are bitwise identical across GPU models. This header is the one source of
// the formula: the compiler emits it as IR from these constants
// (norm::emitDefaultGroups, Transforms/Groups.h; M is usually only known at
// run time) and the runtime (libnormrt, which links no LLVM) sizes
// workspaces and grids with defaultGroups below. normrt-groups-test checks
// the emitted IR against the runtime.
//
// No MLIR or LLVM dependency: the runtime includes it.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_SUPPORT_GROUPS_H
#define NORM_SUPPORT_GROUPS_H

#include <cstdint>

namespace mlir::norm {

/// Rows a program owns at least once there are enough rows to fill a chip,
/// so partial traffic (G * N * 8 bytes) stays small next to the
/// 3 * M * N * s bytes of the dx pass.
constexpr int64_t kMinRowsPerGroup = 8;
/// Cap on G as a function of N: about 2^21 partial elements, between 128 and
/// 512 rows (512 programs for N <= 4096, fewer above: several per SM,
/// for 4% extra traffic).
constexpr int64_t kPartialElements = int64_t(1) << 21;
constexpr int64_t kMinGroupCap = 128;
constexpr int64_t kMaxGroupCap = 512;
/// Programs wanted whatever M, while there are rows for them: one block
/// per program, and fewer blocks than SMs leave the chip idle (M = 64 at
/// 8 rows per program ran 8 blocks: 0.06-0.5x the best peer). The same on
/// every chip (the count is not the chip's SM count: determinism).
constexpr int64_t kMinPrograms = 128;

/// G = max(1, min(clamp(2^21 / N, 128, 512), max(ceil(M / 8), min(M, 128)))),
/// for any M, N >= 0 without overflow (N = 0 counts as 1; ceil(M / 8) is
/// computed without the M + 7 that overflows near INT64_MAX, as the IR's
/// unsigned ceildivui).
constexpr int64_t defaultGroups(int64_t m, int64_t n) {
  int64_t cap = kPartialElements / (n > 1 ? n : 1);
  cap = cap < kMinGroupCap ? kMinGroupCap : cap;
  cap = cap > kMaxGroupCap ? kMaxGroupCap : cap;
  int64_t byRows = m / kMinRowsPerGroup + (m % kMinRowsPerGroup > 0);
  int64_t fill = m < kMinPrograms ? m : kMinPrograms;
  byRows = byRows > fill ? byRows : fill;
  int64_t g = cap < byRows ? cap : byRows;
  return g > 1 ? g : 1;
}

static_assert(defaultGroups(0, 0) == 1);
static_assert(defaultGroups(INT64_MAX, 1) == kMaxGroupCap);
static_assert(defaultGroups(INT64_MAX, INT64_MAX) == kMinGroupCap);
static_assert(defaultGroups(17, 4096) == 17);
static_assert(defaultGroups(683, 262144) == 128);
static_assert(defaultGroups(4000, 4096) == 500);

} // namespace mlir::norm

#endif // NORM_SUPPORT_GROUPS_H
