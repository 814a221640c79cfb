//===- NormOps.h - norm dialect ops -----------------------------*- C++ -*-===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_DIALECT_NORM_IR_NORMOPS_H
#define NORM_DIALECT_NORM_IR_NORMOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "norm/Dialect/Norm/IR/NormDialect.h"

#define GET_OP_CLASSES
#include "norm/Dialect/Norm/IR/NormOps.h.inc"

#include <type_traits>

namespace mlir::norm {

/// norm.layer_norm or norm.layer_norm_grad (else an RMSNorm op).
template <typename OpT>
constexpr bool isLayerNorm() {
  return std::is_same_v<OpT, LayerNormOp> ||
         std::is_same_v<OpT, LayerNormGradOp>;
}

/// A backward op (else a forward one).
template <typename OpT>
constexpr bool isGrad() {
  return std::is_same_v<OpT, LayerNormGradOp> ||
         std::is_same_v<OpT, RMSNormGradOp>;
}

} // namespace mlir::norm

#endif // NORM_DIALECT_NORM_IR_NORMOPS_H
