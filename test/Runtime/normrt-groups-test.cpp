//===- normrt-groups-test.cpp - the runtime's G against the compiler's ----===//
//
// Part of mlir-norm.
//
// The runtime sizes workspaces and grids with its own copy of the groups
// formula (it cannot link MLIR); the dx kernels recompute G from the IR
// version. A mismatch would launch too few programs and skip rows, so this
// compares normrt_default_groups with norm::defaultGroups over a grid of
// (M, N) that covers every branch: M around multiples of 16 and every cap
// boundary, N around the powers of two where 2^21 / N crosses 128 and 512.
//
//===----------------------------------------------------------------------===//

#include "norm-c/Runtime.h"
#include "norm/Dialect/Norm/Transforms/Groups.h"

#include <cinttypes>
#include <cstdio>
#include <set>

int main() {
  std::set<int64_t> ms, ns;
  for (int64_t m = 0; m <= 4096; ++m)
    ms.insert(m);
  for (int shift = 12; shift < 62; ++shift)
    for (int64_t d = -17; d <= 17; ++d)
      ms.insert((int64_t(1) << shift) + d);
  for (int64_t n = 1; n <= 20000; n += (n < 1100 ? 1 : 7))
    ns.insert(n);
  for (int shift = 0; shift < 40; ++shift)
    for (int64_t d = -3; d <= 3; ++d)
      if ((int64_t(1) << shift) + d > 0)
        ns.insert((int64_t(1) << shift) + d);

  uint64_t checked = 0, mismatches = 0;
  std::set<int64_t> seen;
  for (int64_t n : ns)
    for (int64_t m : ms) {
      int64_t expected = mlir::norm::defaultGroups(m, n);
      int64_t got = normrt_default_groups(m, n);
      ++checked;
      seen.insert(got);
      if (got != expected && ++mismatches <= 20)
        std::printf("mismatch: M = %" PRId64 ", N = %" PRId64
                    ": runtime %" PRId64 ", compiler %" PRId64 "\n",
                    m, n, got, expected);
    }
  // The grid reaches both caps and the M-bound branch.
  std::printf("checked %" PRIu64 " (M, N) pairs, %" PRIu64
              " mismatches; G from %" PRId64 " to %" PRId64 "\n",
              checked, mismatches, *seen.begin(), *seen.rbegin());
  return mismatches ? 1 : 0;
}
