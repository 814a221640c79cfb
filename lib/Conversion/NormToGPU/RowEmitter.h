//===- RowEmitter.h - the core of a row kernel ------------------*- C++ -*-===//
//
// Part of mlir-norm. Private to lib/Conversion/NormToGPU.
//
// The core emitter of a row kernel: the run-time alignment check and the
// bodies of the layouts it selects, the column loops of the row body, each
// chunk's 16-byte or element accesses, the row body materialised per
// element. Everything that differs between kernels is one of the
// strategies it is given (RowStrategies.h); it has no regime of its own.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_LIB_CONVERSION_NORMTOGPU_ROWEMITTER_H
#define NORM_LIB_CONVERSION_NORMTOGPU_ROWEMITTER_H

#include "RowStrategies.h"

namespace mlir::norm {

class RowEmitter final : public ColumnLoops {
public:
  RowEmitter(RowContext &ctx, RowStrategies &strategies)
      : ctx(ctx), s(strategies) {}

  /// Emits the kernel body for the program's rows [lo, hi); `programMap`
  /// maps the program loop's values to the kernel's.
  void emit(Value lo, Value hi, const IRMapping &programMap);

  void emitColumnLoop(OpBuilder &rb, scf::ForOp loop,
                      MutableArrayRef<IRMapping> ms, ArrayRef<Value> active,
                      SmallVector<Value> &carried) override;

private:
  /// Whether every row memref of the body is 16-byte aligned with a unit
  /// inner stride, checked at run time (the same in every block).
  Value emitAlignmentCheck();
  /// The rows, then the partial rows, in the current layout.
  void emitBody(Value lo, Value hi);
  void emitChunk(OpBuilder &rb, scf::ForOp loop, MutableArrayRef<IRMapping> ms,
                 ArrayRef<Value> active, Value chunk, std::optional<int64_t> k,
                 bool vectorized, SmallVector<Value> &carried);
  /// Element e (column j) of every row of `ms`, between the partials
  /// home's beginElement and endElement.
  void emitRowsElement(OpBuilder &rb, scf::ForOp loop,
                       MutableArrayRef<IRMapping> ms, ArrayRef<Value> active,
                       Value j, std::optional<int64_t> k, int64_t e,
                       ArrayRef<DenseMap<Value, Value>> vectors,
                       SmallVector<DenseMap<Value, SmallVector<Value>>> *stores,
                       SmallVector<Value> &carried);
  /// Element e of one row (`active`: its guard, or null).
  void emitElement(OpBuilder &rb, scf::ForOp loop, IRMapping m, Value active,
                   Value j, std::optional<int64_t> k, int64_t e,
                   const DenseMap<Value, Value> *vectors,
                   DenseMap<Value, SmallVector<Value>> *stores,
                   SmallVector<Value> &carried);

  RowContext &ctx;
  RowStrategies &s;
};

} // namespace mlir::norm

#endif // NORM_LIB_CONVERSION_NORMTOGPU_ROWEMITTER_H
