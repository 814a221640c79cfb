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

/// Buffer form: each grad op (norm.layer_norm_grad, norm.rms_norm_grad)
/// becomes its tagged loop nests (docs/Lowering.md): materialised xhat and
/// g, the grouped dweight/dbias reduction, the per-row dx nest. One
/// OpConversionPattern per op kind, for a conversion with those ops illegal.
/// Each lowered op is numbered (`norm.id`) one past the largest id already
/// in its function, so ids stay unique whatever ran before. An op in value
/// form, or with a buffer that has no [rows, N] / [rows] view, does not
/// match (the reason is the match failure's).
void populateNormSplitPatterns(RewritePatternSet &patterns,
                               const SplitOptions &options);

/// Buffer form: each forward op (norm.layer_norm, norm.rms_norm) becomes one
/// row loop nest tagged `#norm.stage<forward>`. Patterns, numbering and
/// match failures as populateNormSplitPatterns', for a conversion with the
/// forward ops illegal.
void populateNormLowerForwardPatterns(RewritePatternSet &patterns);

/// What norm-raise may do.
struct RaiseOptions {
  /// Give the raised ops f32 accumulation even where the program
  /// accumulates in f16 / bf16 (or f64): what the GPU kernels run.
  bool f32Accumulation = false;
};

/// Value form: LayerNorm / RMSNorm, forward and backward, written as linalg
/// on tensors (named ops, linalg.map / reduce / broadcast, linalg.generic,
/// tensor reshapes) become norm ops; what the program computes besides is
/// kept. Each pattern is rooted at a linalg op whose one result may be y,
/// dx or dweight; it recognises the math, not the op sequence: the
/// computation of that result must equal the op's definition on random
/// inputs (docs/NOTES.md, "Raising"). The forward pattern also replaces the
/// mean and rstd the program computes; the backward pattern takes dx,
/// dweight and dbias of the same inputs together, and raises whichever of
/// them the program has. norm-raise applies them in its own order (forward
/// before backward, later ops before earlier, dx before dweight), which a
/// greedy driver does not keep: a part of a backward can itself be a
/// backward of other values, and raised first it would split the whole.
void populateNormRaisePatterns(RewritePatternSet &patterns,
                               const RaiseOptions &options = {});

} // namespace norm
} // namespace mlir

#endif // NORM_DIALECT_NORM_TRANSFORMS_TRANSFORMS_H
