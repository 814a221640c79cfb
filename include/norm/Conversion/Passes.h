//===- Passes.h - norm conversions ------------------------------*- C++ -*-===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_CONVERSION_PASSES_H
#define NORM_CONVERSION_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::norm {

#define GEN_PASS_DECL
#include "norm/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "norm/Conversion/Passes.h.inc"

} // namespace mlir::norm

#endif // NORM_CONVERSION_PASSES_H
