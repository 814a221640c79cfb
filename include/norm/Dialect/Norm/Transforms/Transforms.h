//===- Transforms.h - norm rewrite patterns ---------------------*- C++ -*-===//
//
// Part of mlir-norm. Pattern sets behind the passes, for embedders that run
// them in their own drivers.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_DIALECT_NORM_TRANSFORMS_TRANSFORMS_H
#define NORM_DIALECT_NORM_TRANSFORMS_TRANSFORMS_H

namespace mlir {
class RewritePatternSet;

namespace norm {

/// Value form: a grad op that reads a stored `xhat` produced by a forward op
/// (whose `rstd` the grad also reads) is rewritten to read the forward's `x`
/// (and `mean`); a forward op whose `xhat` result has no use left is rebuilt
/// without it.
void populateStoredXhatToRecomputePatterns(RewritePatternSet &patterns);

} // namespace norm
} // namespace mlir

#endif // NORM_DIALECT_NORM_TRANSFORMS_TRANSFORMS_H
