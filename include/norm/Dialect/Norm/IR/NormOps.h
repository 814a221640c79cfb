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
#include "norm/Support/ManifestSchema.h"

#include "norm/Dialect/Norm/IR/NormEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "norm/Dialect/Norm/IR/NormAttrs.h.inc"

#define GET_OP_CLASSES
#include "norm/Dialect/Norm/IR/NormOps.h.inc"

#endif // NORM_DIALECT_NORM_IR_NORMOPS_H
