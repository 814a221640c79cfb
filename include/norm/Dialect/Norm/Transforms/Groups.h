//===- Groups.h - how many partial rows the dw/db reduction uses -*- C++ -*-===//
//
// Part of mlir-norm.
//
// The number of partial rows G of the cross-row reduction is a function of
// (M, N) alone, never of the device, so `deterministic` results are bitwise
// identical across GPU models. The compiler emits the same formula as IR
// (M is usually only known at run time) and the runtime calls this one to
// size the workspace; a test keeps the two equal.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_DIALECT_NORM_TRANSFORMS_GROUPS_H
#define NORM_DIALECT_NORM_TRANSFORMS_GROUPS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Value.h"

#include <cstdint>

namespace mlir::norm {

/// Rows a program must own at least, so partial traffic (G * N * 8 bytes)
/// stays small next to the 3 * M * N * s bytes of the dx pass.
constexpr int64_t kMinRowsPerGroup = 8;
/// Cap on G as a function of N: about 2^21 partial elements, between 128 and
/// 512 rows (512 programs for N <= 4096, fewer above: several per SM,
/// for 4% extra traffic).
constexpr int64_t kPartialElements = int64_t(1) << 21;
constexpr int64_t kMinGroupCap = 128;
constexpr int64_t kMaxGroupCap = 512;

/// G = max(1, min(clamp(2^21 / N, 128, 512), ceil(M / 8))).
int64_t defaultGroups(int64_t m, int64_t n);

/// The same formula as IR on index values.
Value emitDefaultGroups(OpBuilder &b, Location loc, Value m, Value n);

} // namespace mlir::norm

#endif // NORM_DIALECT_NORM_TRANSFORMS_GROUPS_H
