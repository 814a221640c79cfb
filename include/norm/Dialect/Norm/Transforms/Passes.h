//===- Passes.h - norm dialect transformations ------------------*- C++ -*-===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_DIALECT_NORM_TRANSFORMS_PASSES_H
#define NORM_DIALECT_NORM_TRANSFORMS_PASSES_H

#include "norm/Dialect/Norm/IR/NormDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"
#include "llvm/Support/CommandLine.h"

#include <optional>

namespace mlir::norm {

/// The `strategy` option of norm-split and of the pipelines: one reduction
/// strategy for every grad op, or `keep` each op's own.
enum class StrategyOverride {
  Keep,
  Deterministic,
  GroupedAtomic,
  Atomic,
  Locked,
};

/// The strategy `choice` imposes; none for `keep`.
std::optional<ReductionStrategy> toReductionStrategy(StrategyOverride choice);

/// The spellings of StrategyOverride, for `llvm::cl` options.
llvm::cl::ValuesClass strategyOverrideValues();

/// The stages `norm-check-stage` checks: the points of the lowering after
/// which the pipelines promise an invariant (docs/Lowering.md).
enum class CheckedStage {
  Bufferized,
  Split,
  Recomputed,
  Promoted,
  Fused,
};

#define GEN_PASS_DECL
#include "norm/Dialect/Norm/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "norm/Dialect/Norm/Transforms/Passes.h.inc"

} // namespace mlir::norm

#endif // NORM_DIALECT_NORM_TRANSFORMS_PASSES_H
