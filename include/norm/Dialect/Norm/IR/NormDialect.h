//===- NormDialect.h - norm dialect -----------------------------*- C++ -*-===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_DIALECT_NORM_IR_NORMDIALECT_H
#define NORM_DIALECT_NORM_IR_NORMDIALECT_H

#include "mlir/IR/Dialect.h"

#include "norm/Dialect/Norm/IR/NormDialect.h.inc"

#endif // NORM_DIALECT_NORM_IR_NORMDIALECT_H
