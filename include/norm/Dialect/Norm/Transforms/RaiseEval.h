//===- RaiseEval.h - evaluate linalg-on-tensors programs in f64 -*- C++ -*-===//
//
// Part of mlir-norm.
//
// The expression layer of norm-raise. A value computed by linalg ops on
// tensors (named elementwise ops, linalg.map / reduce / broadcast / fill,
// linalg.generic with projected-permutation maps) and the tensor.* shape
// ops between them is evaluated element by element in f64 from arrays
// bound to its leaves (the values it is computed from that are not such
// ops). Casts are exact (the recognisers check dtypes on the IR), so the
// result is the program's value in real arithmetic: two programs that agree
// on random inputs compute the same function, whatever their operand order,
// broadcast shapes or algebraic arrangement.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_DIALECT_NORM_TRANSFORMS_RAISEEVAL_H
#define NORM_DIALECT_NORM_TRANSFORMS_RAISEEVAL_H

#include "mlir/IR/BuiltinTypeInterfaces.h"
#include "mlir/IR/Value.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallVector.h"

#include <memory>
#include <vector>

namespace mlir::norm::raise {

/// A dense row-major f64 array; rank 0 is a scalar.
struct Array {
  SmallVector<int64_t> shape;
  std::vector<double> data;

  int64_t size() const { return ShapedType::getNumElements(shape); }
};

/// The computation of a value: the ops that compute it (in program order)
/// and the leaves it reads.
struct Slice {
  SetVector<Operation *> ops;
  SetVector<Value> leaves;
  /// Element types the reductions among `ops` accumulate in.
  SmallVector<Type> reductionTypes;
};

/// Collects the computation of `root`, stopping at values no op of the
/// expression layer computes and at the values of `cut`; past `maxOps` ops
/// (breadth first from the root), the values still to visit are leaves.
FailureOr<Slice> collectSlice(Value root, ArrayRef<Value> cut = {},
                              unsigned maxOps = 96);

/// The float constants of a slice (scalars, splats, constants inside
/// bodies), as f64, without duplicates: where eps can come from.
SmallVector<double> sliceConstants(const Slice &slice);

/// Evaluates values of a slice from bound leaves; memoised, so one
/// Evaluator serves one binding of the leaves.
class Evaluator {
public:
  /// `workLimit` bounds the element operations of one evaluation.
  explicit Evaluator(int64_t workLimit = int64_t(1) << 26)
      : workLeft(workLimit) {}

  void bind(Value leaf, Array a) { set(leaf, std::move(a)); }

  /// Evaluates on fewer rows than the types say: every static shape that
  /// starts with `rows` (rank >= rows.size()) starts with `shrunk` instead
  /// (tensor.empty, tensor.expand_shape results, splat constants). The
  /// leaves must be bound with the shrunk shapes.
  void shrinkRows(ArrayRef<int64_t> rows, ArrayRef<int64_t> shrunk) {
    rowsFrom.assign(rows.begin(), rows.end());
    rowsTo.assign(shrunk.begin(), shrunk.end());
  }

  /// Also evaluates what the expression layer leaves out: contractions
  /// (matmul) and tensor constants; for running a whole program in f64.
  void evaluateWholePrograms() { wholePrograms = true; }

  /// The value of `v`, or failure (an op outside the expression layer that
  /// is not bound, inconsistent shapes, or the work limit).
  FailureOr<const Array *> eval(Value v);

private:
  LogicalResult evalOp(Operation *op);
  bool evaluable(Operation *op) const;
  /// A static shape of the program, with the rows shrunk.
  SmallVector<int64_t> concrete(ArrayRef<int64_t> shape) const;

  void set(Value v, Array a) {
    values[v] = std::make_unique<Array>(std::move(a));
  }

  /// Each array stays where it is while others are added (operands are
  /// held by pointer during an op's evaluation).
  DenseMap<Value, std::unique_ptr<Array>> values;
  SmallVector<int64_t> rowsFrom, rowsTo;
  bool wholePrograms = false;
  int64_t workLeft;
};

/// True when `op` belongs to the expression layer.
bool isExpressionOp(Operation *op);

} // namespace mlir::norm::raise

#endif // NORM_DIALECT_NORM_TRANSFORMS_RAISEEVAL_H
