//===- Stages.h - attributes the lowering stages communicate by -*- C++ -*-===//
//
// Part of mlir-norm. Private to lib/Dialect/Norm/Transforms.
//
// norm-split tags what it creates; the later passes find their work by these
// tags instead of by guessing at loop shapes.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_LIB_DIALECT_NORM_TRANSFORMS_STAGES_H
#define NORM_LIB_DIALECT_NORM_TRANSFORMS_STAGES_H

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/StringRef.h"

namespace mlir::norm::stage {

/// On the outermost scf.for of a nest: which stage it is.
constexpr llvm::StringLiteral kStageAttr = "norm.stage";
/// On the same loops: which lowered op it belongs to (unique per function).
constexpr llvm::StringLiteral kIdAttr = "norm.id";
/// On the same loops: the type arithmetic is promoted to.
constexpr llvm::StringLiteral kAccumulateAttr = "norm.accumulate";
/// On a memref.alloc: a row cache each program owns (norm-fuse-partials).
constexpr llvm::StringLiteral kPrivateAttr = "norm.private";
/// On a memref.alloc: every element may be recomputed at any use.
constexpr llvm::StringLiteral kRecomputableAttr = "norm.recomputable";

constexpr llvm::StringLiteral kXhat = "xhat";
constexpr llvm::StringLiteral kG = "g";
constexpr llvm::StringLiteral kZero = "zero";
constexpr llvm::StringLiteral kPartials = "partials";
constexpr llvm::StringLiteral kReduce = "reduce";
constexpr llvm::StringLiteral kDx = "dx";
constexpr llvm::StringLiteral kForward = "forward";

/// The stage of `op` if it is a tagged nest, else "".
inline llvm::StringRef getStage(Operation *op) {
  if (auto s = op->getAttrOfType<StringAttr>(kStageAttr))
    return s.getValue();
  return {};
}

/// The outermost tagged loop enclosing `op` (or `op` itself), or null.
inline Operation *getEnclosingNest(Operation *op) {
  Operation *nest = nullptr;
  for (Operation *p = op; p; p = p->getParentOp())
    if (!getStage(p).empty())
      nest = p;
  return nest;
}

} // namespace mlir::norm::stage

#endif // NORM_LIB_DIALECT_NORM_TRANSFORMS_STAGES_H
