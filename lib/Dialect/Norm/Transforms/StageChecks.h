//===- StageChecks.h - the invariants promised after each stage -*- C++ -*-===//
//
// Part of mlir-norm. Private to lib/Dialect/Norm/Transforms.
//
// Each pass checks its post-condition with these, and norm-check-stage
// checks them at the pipeline's stage boundaries. A failed check is an error
// on the first op that breaks it, prefixed by `who` (the pass).
//
//===----------------------------------------------------------------------===//

#ifndef NORM_LIB_DIALECT_NORM_TRANSFORMS_STAGECHECKS_H
#define NORM_LIB_DIALECT_NORM_TRANSFORMS_STAGECHECKS_H

#include "norm/Dialect/Norm/Transforms/Passes.h"

namespace mlir::norm {

/// No tensor value, except at the function boundary and in the
/// bufferization casts that leaves (so no norm op in value form).
LogicalResult checkBufferized(Operation *root, StringRef who);

/// No norm op; every tagged op is an scf.for with a stage, an id and an
/// accumulation type, inside no other tagged nest.
LogicalResult checkSplit(Operation *root, StringRef who);

/// No `norm.recomputable` buffer and no [M, N] intermediate: a rank-2
/// alloc that only tagged nests use, both storing and loading, and that no
/// `zero` nest fills (the partial workspaces).
LogicalResult checkRecomputed(Operation *root, StringRef who);

/// No value narrower than `acc` in `nest` but loads and the truncations
/// before stores.
LogicalResult checkPromotedNest(Operation *nest, FloatType acc, StringRef who);
/// checkPromotedNest on every tagged nest.
LogicalResult checkPromoted(Operation *root, StringRef who);

/// No `partials` nest.
LogicalResult checkNoPartials(Operation *root, StringRef who);

/// The row body of a dx nest (`for p { for r { body } }`) or of a forward
/// nest (`for r { body }`) and its row, or nothing for other nests.
std::optional<std::pair<Block *, Value>> getRowBody(scf::ForOp nest);

/// In every row body of a dx or forward nest, no buffer's row `[r, ...]`
/// is loaded by more than one column loop.
LogicalResult checkRowsReadOnce(Operation *root, StringRef who);

/// Everything promised after `stage` (and the stages before it).
LogicalResult checkStage(Operation *root, CheckedStage stage, StringRef who);

} // namespace mlir::norm

#endif // NORM_LIB_DIALECT_NORM_TRANSFORMS_STAGECHECKS_H
