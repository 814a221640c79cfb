//===- Groups.h - how many partial rows the dw/db reduction uses -*- C++ -*-===//
//
// Part of mlir-norm.
//
// The formula and its constants live in norm/Support/Groups.h, which the
// runtime includes too (defaultGroups and the k* constants are reexported
// from there); this header adds its IR form for the compiler, where M is
// usually only known at run time. normrt-groups-test keeps the two equal.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_DIALECT_NORM_TRANSFORMS_GROUPS_H
#define NORM_DIALECT_NORM_TRANSFORMS_GROUPS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Value.h"
#include "norm/Support/Groups.h"

namespace mlir::norm {

/// defaultGroups(m, n) as IR on index values (unsigned arith ops), from
/// the constants of norm/Support/Groups.h.
Value emitDefaultGroups(OpBuilder &b, Location loc, Value m, Value n);

} // namespace mlir::norm

#endif // NORM_DIALECT_NORM_TRANSFORMS_GROUPS_H
