//===- Passes.h - norm pipeline support passes ------------------*- C++ -*-===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_PIPELINES_PASSES_H
#define NORM_PIPELINES_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Pass/Pass.h"

namespace mlir::norm {

#define GEN_PASS_DECL
#include "norm/Pipelines/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "norm/Pipelines/Passes.h.inc"

} // namespace mlir::norm

#endif // NORM_PIPELINES_PASSES_H
