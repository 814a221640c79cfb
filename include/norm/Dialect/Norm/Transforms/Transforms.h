//===- Transforms.h - norm rewrite patterns ---------------------*- C++ -*-===//
//
// Part of mlir-norm. Pattern sets behind the passes, for embedders that run
// them in their own drivers.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_DIALECT_NORM_TRANSFORMS_TRANSFORMS_H
#define NORM_DIALECT_NORM_TRANSFORMS_TRANSFORMS_H

#include "norm/Dialect/Norm/IR/NormDialect.h"

#include <cstdint>
#include <optional>

namespace mlir {
class RewritePatternSet;

namespace norm {

/// Value form: a grad op that reads a stored `xhat` produced by a forward op
/// (whose `rstd` the grad also reads) is rewritten to read the forward's `x`
/// (and `mean`); a forward op whose `xhat` result has no use left is rebuilt
/// without it.
void populateStoredXhatToRecomputePatterns(RewritePatternSet &patterns);

/// What norm-split does where an op does not say.
struct SplitOptions {
  /// Partial rows G of grad ops without a `groups` attribute; 0: chosen from
  /// M and N (Groups.h).
  int64_t groups = 0;
  /// Replaces every grad op's reduction strategy; none keeps each op's.
  std::optional<ReductionStrategy> strategy;
};

/// Buffer form: each norm op (forward or grad) becomes its tagged loop
/// nests (docs/Lowering.md), one OpConversionPattern per op kind, for a
/// conversion with the norm dialect illegal. The lowered ops are numbered
/// (`norm.id`) in the order the conversion visits them, counting on across
/// every application of this pattern set: populate a fresh set per function
/// for ids from 0. An op in value form, or with a buffer that has no
/// [rows, N] / [rows] view, does not match (the reason is the match
/// failure's).
void populateNormSplitPatterns(RewritePatternSet &patterns,
                               const SplitOptions &options);

} // namespace norm
} // namespace mlir

#endif // NORM_DIALECT_NORM_TRANSFORMS_TRANSFORMS_H
