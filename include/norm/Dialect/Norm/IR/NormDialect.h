//===- NormDialect.h - norm dialect -----------------------------*- C++ -*-===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_DIALECT_NORM_IR_NORMDIALECT_H
#define NORM_DIALECT_NORM_IR_NORMDIALECT_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/Operation.h"
#include "norm/Support/ManifestSchema.h"

// The enums and attributes come first: the dialect's discardable-attribute
// helpers (the stage contract) are typed by them.
#include "norm/Dialect/Norm/IR/NormEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "norm/Dialect/Norm/IR/NormAttrs.h.inc"

#include "norm/Dialect/Norm/IR/NormDialect.h.inc"

#endif // NORM_DIALECT_NORM_IR_NORMDIALECT_H
