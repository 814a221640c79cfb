//===- Emitter.h - small IR-building helpers for the loop nests -*- C++ -*-===//
//
// Part of mlir-norm. Private to lib/Dialect/Norm/Transforms.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_LIB_DIALECT_NORM_TRANSFORMS_EMITTER_H
#define NORM_LIB_DIALECT_NORM_TRANSFORMS_EMITTER_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::norm {

/// Builds the loop nests of one lowered op. `storage` is the type the
/// faithful form computes in (x's element type); `acc` the accumulation type
/// that norm-promote later moves the arithmetic to.
class Emitter {
public:
  Emitter(ImplicitLocOpBuilder &b, FloatType storage, FloatType acc)
      : b(b), storage(storage), acc(acc) {}

  ImplicitLocOpBuilder &b;
  FloatType storage;
  FloatType acc;

  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, v); }

  /// extf / truncf / nothing, whichever turns `v` into `to`.
  Value convert(Value v, Type to) {
    Type from = v.getType();
    if (from == to)
      return v;
    unsigned fromWidth = llvm::cast<FloatType>(from).getWidth();
    unsigned toWidth = llvm::cast<FloatType>(to).getWidth();
    if (fromWidth == toWidth) // f16 <-> bf16: through the accumulation type
      return arith::TruncFOp::create(b, to,
                                     arith::ExtFOp::create(b, acc, v));
    if (fromWidth < toWidth)
      return arith::ExtFOp::create(b, to, v);
    return arith::TruncFOp::create(b, to, v);
  }

  /// A constant in the storage type, written as an `acc` constant cast to
  /// storage: after promotion the cast folds away and the exact value stays.
  Value storageConstant(double v) {
    Value c = arith::ConstantOp::create(b, acc, b.getFloatAttr(acc, v));
    return convert(c, storage);
  }

  /// An index as a storage-type float (via i64 and `acc`, as above).
  Value indexToStorage(Value i) {
    Value i64 = arith::IndexCastUIOp::create(b, b.getI64Type(), i);
    return convert(arith::UIToFPOp::create(b, acc, i64), storage);
  }

  Value load(Value memref, ValueRange indices) {
    return memref::LoadOp::create(b, memref, indices);
  }
  void store(Value v, Value memref, ValueRange indices) {
    memref::StoreOp::create(b, v, memref, indices);
  }

  /// `for iv in [lb, ub)` with a body that yields nothing.
  scf::ForOp loop(Value lb, Value ub, function_ref<void(Value)> body) {
    return scf::ForOp::create(
        b, lb, ub, index(1), ValueRange{},
        [&](OpBuilder &nested, Location loc, Value iv, ValueRange) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(scf::YieldOp::create(nested, loc));
          body(iv);
        });
  }

  /// `for iv in [lb, ub)` carrying `inits`; `body` returns the next values.
  scf::ForOp
  reduction(Value lb, Value ub, ValueRange inits,
            function_ref<SmallVector<Value>(Value, ValueRange)> body) {
    return scf::ForOp::create(
        b, lb, ub, index(1), inits,
        [&](OpBuilder &nested, Location loc, Value iv, ValueRange carried) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToEnd(nested.getInsertionBlock());
          SmallVector<Value> next = body(iv, carried);
          scf::YieldOp::create(b, next);
        });
  }
};

} // namespace mlir::norm

#endif // NORM_LIB_DIALECT_NORM_TRANSFORMS_EMITTER_H
