//===- Passes.h - norm dialect transformations ------------------*- C++ -*-===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_DIALECT_NORM_TRANSFORMS_PASSES_H
#define NORM_DIALECT_NORM_TRANSFORMS_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/Pass.h"

namespace mlir::norm {

#define GEN_PASS_DECL
#include "norm/Dialect/Norm/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "norm/Dialect/Norm/Transforms/Passes.h.inc"

} // namespace mlir::norm

#endif // NORM_DIALECT_NORM_TRANSFORMS_PASSES_H
