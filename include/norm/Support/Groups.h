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

/// The partial rows' budget, in f32 elements: G * N stays within it, so
/// the partial traffic (G * N * 4 bytes a row of dweight/dbias, written by
/// the dx kernel and read by the reduce kernel) stays small next to the dx
/// pass once M is large.
constexpr int64_t kPartialElements = int64_t(3) << 20;
/// G is one of these, the largest within the budget (at least the first).
/// Powers of two: a G that is not a multiple of the programs a chip holds at
/// once leaves the last SMs a program short (G = 409 at N = 5120 ran 1.23x
/// slower than G = 512 on the H200's 132 SMs, bench/tune.py).
constexpr int64_t kGroupCaps[] = {128, 256, 512};
constexpr int64_t kMinGroupCap = kGroupCaps[0];
constexpr int64_t kMaxGroupCap = kGroupCaps[2];

/// The cap on G for rows of N columns: 512 up to N = 6144, 256 up to 12288,
/// 128 above.
constexpr int64_t groupCap(int64_t n) {
  int64_t per = kPartialElements / (n > 1 ? n : 1);
  return per >= kGroupCaps[2]   ? kGroupCaps[2]
         : per >= kGroupCaps[1] ? kGroupCaps[1]
                                : kGroupCaps[0];
}

/// Elements of rows a program owns at least (r(N) = ceil(this / N) rows),
/// while that leaves kMinPrograms programs: a block of the small-N kernels
/// holds several rows at once (256 threads x 8 bf16 elements = 2048
/// elements a pass), so a program of fewer rows leaves lanes idle and G
/// partial rows to add for nothing (G = M at N = 64-1000, M = 1024 ran
/// 1.2-1.5x slower than 128 programs, bench/tune.py).
constexpr int64_t kMinProgramElements = 4096;
/// Programs wanted whatever N, while there are rows for them.
constexpr int64_t kMinPrograms = 128;

/// Where the budget holds no more than kMinGroupCap partial rows (N >=
/// 24386: a program's row spans a cluster of several blocks, so fewer
/// programs still fill the chip) and rows are few, kWideRows rows a program
/// at least: G = kWidePrograms for M = 129 to kWideRows x kWidePrograms.
/// At G = 128 and M = 256 the partial rows' traffic (written, then read)
/// outgrew the rows' own (LayerNorm 256 x 49152: 50 MB against 75 MB);
/// G = 64 ran 1.2-1.5x faster at M = 256 and 512 for LayerNorm N =
/// 24576-65536, and at M = 1024 and 4096 G = 128 stayed ahead (H100,
/// bench/tune.py plan wide-g).
constexpr int64_t kWideRows = 8;
constexpr int64_t kWidePrograms = 64;

/// G = max(1, min(cap(N), max(ceil(M / r(N)), min(M, 128)))), r(N) =
/// ceil(4096 / N): a program per row from N = 4096 up until the cap, so
/// every SM has rows in flight at small and medium M (measured on the
/// H200, bench/tune.py: at M = 1024, N = 3072-5120, 512 programs of 2 rows
/// ran 1.3-1.6x faster than 128 programs of 8); a few rows a program below;
/// kWidePrograms where rows are wide and few (above).
/// The same on every chip: it is not the chip's SM count (determinism).
/// For any M, N >= 0 without overflow (N = 0 counts as 1; the ceilings
/// are computed without an M + r - 1 that overflows near INT64_MAX, as
/// the IR's unsigned ceildivui).
constexpr int64_t defaultGroups(int64_t m, int64_t n) {
  int64_t cap = groupCap(n);
  int64_t safeN = n > 1 ? n : 1;
  int64_t r = kMinProgramElements / safeN + (kMinProgramElements % safeN > 0);
  int64_t byRows = m / r + (m % r > 0);
  int64_t fill = m < kMinPrograms ? m : kMinPrograms;
  byRows = byRows > fill ? byRows : fill;
  int64_t g = cap < byRows ? cap : byRows;
  // Wide rows, few of them (above): kWidePrograms programs.
  if (kPartialElements / safeN <= kMinGroupCap && m > kMinPrograms &&
      m <= kWideRows * kWidePrograms)
    g = g < kWidePrograms ? g : kWidePrograms;
  return g > 1 ? g : 1;
}

static_assert(defaultGroups(0, 0) == 1);
static_assert(defaultGroups(INT64_MAX, 1) == kMaxGroupCap);
static_assert(defaultGroups(INT64_MAX, INT64_MAX) == kMinGroupCap);
static_assert(defaultGroups(17, 4096) == 17);
static_assert(defaultGroups(683, 262144) == 128);
static_assert(defaultGroups(512, 262144) == kWidePrograms);
static_assert(defaultGroups(256, 24576) == kWidePrograms);
static_assert(defaultGroups(129, 49152) == kWidePrograms);
static_assert(defaultGroups(128, 49152) == 128);
static_assert(defaultGroups(513, 65536) == 128);
static_assert(defaultGroups(256, 24386) == kWidePrograms);
static_assert(defaultGroups(256, 24385) == 128);
static_assert(defaultGroups(4000, 4096) == 512);
static_assert(defaultGroups(1024, 64) == 128);
static_assert(defaultGroups(16384, 64) == 256);
static_assert(defaultGroups(1024, 3072) == 512);
static_assert(defaultGroups(1 << 20, 6144) == 512);
static_assert(defaultGroups(1 << 20, 6145) == 256);
static_assert(defaultGroups(1 << 20, 12288) == 256);
static_assert(defaultGroups(1 << 20, 12289) == 128);

} // namespace mlir::norm

#endif // NORM_SUPPORT_GROUPS_H
