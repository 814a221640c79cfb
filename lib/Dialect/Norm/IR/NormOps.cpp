//===- NormOps.cpp - norm dialect ops ---------------------------*- C++ -*-===//
//
// Part of mlir-norm.
//
// Verifiers of the forward and backward ops. One checker serves all four ops
// so that LayerNorm and RMSNorm apply the same rules with the same wording:
// every message names the operand and the expected vs actual shape or type.
//
//===----------------------------------------------------------------------===//

#include "norm/Dialect/Norm/IR/NormOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::norm;

namespace {

/// Renders a shape as `[?, 4096]`.
std::string formatShape(ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << '[';
  llvm::interleaveComma(shape, os, [&](int64_t d) {
    if (ShapedType::isDynamic(d))
      os << '?';
    else
      os << d;
  });
  os << ']';
  return s;
}

bool dimsCompatible(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

bool shapesCompatible(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  return a.size() == b.size() &&
         llvm::all_of(llvm::zip(a, b), [](auto p) {
           return dimsCompatible(std::get<0>(p), std::get<1>(p));
         });
}

/// The element types activations and weights may have.
bool isStorageFloat(Type t) {
  return isa<Float32Type, Float16Type, BFloat16Type>(t);
}

/// Checks the operands and results of one norm op against the reference
/// activation (`x`, or `xhat` for a grad op fed a stored xhat).
class NormChecker {
public:
  NormChecker(Operation *op, StringRef refName, Value ref)
      : op(op), refName(refName), refType(cast<ShapedType>(ref.getType())),
        bufferForm(isa<MemRefType>(ref.getType())) {}

  /// The reference activation: rank >= 2, a storage float type, strided.
  LogicalResult checkReference() {
    if (failed(checkKind(refName, refType)))
      return failure();
    if (refType.getRank() < 2)
      return op->emitOpError()
             << "'" << refName << "' must have rank >= 2 (rows x N), got "
             << refType;
    if (!isStorageFloat(refType.getElementType()))
      return op->emitOpError()
             << "'" << refName
             << "' element type must be f32, f16 or bf16, got "
             << refType.getElementType();
    // A row of no elements has no mean and no variance (0 / 0).
    if (refType.getShape().back() == 0)
      return op->emitOpError() << "'" << refName
                               << "' must have a non-empty trailing dim (N "
                                  "> 0), got "
                               << refType;
    return success();
  }

  /// A tensor or memref with the reference's shape; with `elementType` set,
  /// also that element type.
  LogicalResult checkLikeReference(StringRef name, Type type,
                                   Type elementType = {}) {
    auto t = cast<ShapedType>(type);
    if (failed(checkKind(name, t)))
      return failure();
    if (!shapesCompatible(t.getShape(), refType.getShape()))
      return op->emitOpError()
             << "'" << name << "' must have the shape of '" << refName
             << "' " << formatShape(refType.getShape()) << ", got "
             << formatShape(t.getShape());
    if (elementType && t.getElementType() != elementType)
      return op->emitOpError()
             << "'" << name << "' must have element type " << elementType
             << ", got " << t.getElementType();
    if (!elementType && !isStorageFloat(t.getElementType()))
      return op->emitOpError()
             << "'" << name << "' element type must be f32, f16 or bf16, got "
             << t.getElementType();
    return success();
  }

  /// A row statistic: f32, shaped like the leading (row) dims of the input.
  LogicalResult checkStatistic(StringRef name, Type type) {
    auto t = cast<ShapedType>(type);
    if (failed(checkKind(name, t)))
      return failure();
    ArrayRef<int64_t> rows = refType.getShape().drop_back();
    if (!shapesCompatible(t.getShape(), rows))
      return op->emitOpError()
             << "'" << name << "' must have shape " << formatShape(rows)
             << " (the row dims of '" << refName << "'), got "
             << formatShape(t.getShape());
    if (!t.getElementType().isF32())
      return op->emitOpError() << "'" << name
                               << "' must have element type f32, got "
                               << t.getElementType();
    return success();
  }

  /// A per-feature vector: `[N]` of a storage float type (with
  /// `elementType` set, exactly that type).
  LogicalResult checkFeature(StringRef name, Type type,
                             Type elementType = {}) {
    auto t = cast<ShapedType>(type);
    if (failed(checkKind(name, t)))
      return failure();
    int64_t n = refType.getShape().back();
    if (t.getRank() != 1 || !dimsCompatible(t.getDimSize(0), n))
      return op->emitOpError()
             << "'" << name << "' must have shape " << formatShape({n})
             << " (the trailing dim of '" << refName << "'), got "
             << formatShape(t.getShape());
    if (elementType && t.getElementType() != elementType)
      return op->emitOpError()
             << "'" << name << "' must have element type " << elementType
             << ", got " << t.getElementType();
    if (!isStorageFloat(t.getElementType()))
      return op->emitOpError()
             << "'" << name << "' element type must be f32, f16 or bf16, got "
             << t.getElementType();
    return success();
  }

  /// Exactly one of the value-form result and the buffer-form operand of an
  /// output may be present, matching the op's form. Returns the type of the
  /// present one (null if neither).
  FailureOr<Type> checkOutput(StringRef name, Value result, Value out) {
    if (bufferForm && result)
      return op->emitOpError()
             << "buffer form (memref operands) returns no results, but '"
             << name << "' is a result";
    if (!bufferForm && out)
      return op->emitOpError()
             << "'" << name << "' is a buffer operand (outs), but the op is "
             << "in value form (tensor operands): return it as a result";
    if (result)
      return result.getType();
    if (out)
      return out.getType();
    return Type();
  }

  LogicalResult checkAccumulationType(std::optional<Type> acc) {
    // A 16-bit accumulation is the storage type's own (what a frontend's
    // decomposition did, kept by norm-raise): the faithful form unpromoted.
    Type xElt = refType.getElementType();
    if (acc && !isa<Float32Type, Float64Type>(*acc) && *acc != xElt)
      return op->emitOpError()
             << "'accumulation_type' must be f32, f64 or the element type of '"
             << refName << "' (" << xElt << "), got " << *acc;
    return success();
  }

  bool isBufferForm() const { return bufferForm; }

private:
  /// All operands are tensors (value form) or all are memrefs (buffer form);
  /// memrefs must have a strided layout.
  LogicalResult checkKind(StringRef name, ShapedType t) {
    if (isa<MemRefType>(t) != bufferForm)
      return op->emitOpError()
             << "'" << name << "' is a " << (bufferForm ? "tensor" : "memref")
             << " but '" << refName << "' is a "
             << (bufferForm ? "memref" : "tensor")
             << ": use all tensors (value form) or all memrefs (buffer form)";
    if (auto m = dyn_cast<MemRefType>(t); m && !m.isStrided())
      return op->emitOpError() << "'" << name
                               << "' must have a strided layout, got " << m;
    return success();
  }

  Operation *op;
  StringRef refName;
  ShapedType refType;
  bool bufferForm;
};

/// Adds read effects for the memref operands in `reads` and write effects
/// for those in `writes`.
void addBufferEffects(
    Operation *op, ValueRange reads, ValueRange writes,
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  for (OpOperand &operand : op->getOpOperands()) {
    if (!isa<MemRefType>(operand.get().getType()))
      continue;
    if (llvm::is_contained(reads, operand.get()))
      effects.emplace_back(MemoryEffects::Read::get(), &operand,
                           SideEffects::DefaultResource::get());
    if (llvm::is_contained(writes, operand.get()))
      effects.emplace_back(MemoryEffects::Write::get(), &operand,
                           SideEffects::DefaultResource::get());
  }
}

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

template <typename OpT>
LogicalResult verifyForward(OpT op) {
  NormChecker c(op, "x", op.getX());
  if (failed(c.checkReference()) ||
      failed(c.checkAccumulationType(op.getAccumulationType())))
    return failure();
  if (!(op.getEps().convertToFloat() > 0.0f))
    return op.emitOpError() << "'eps' must be positive, got "
                            << op.getEps().convertToFloat();
  Type xElt = cast<ShapedType>(op.getX().getType()).getElementType();

  if (Value w = op.getWeight(); w && failed(c.checkFeature("weight", w.getType())))
    return failure();
  if (!op.getWeight() && op.getZeroCenteredWeight())
    return op.emitOpError() << "'zero_centered_weight' needs a 'weight'";
  if constexpr (isLayerNorm<OpT>()) {
    if (Value b = op.getBias(); b && failed(c.checkFeature("bias", b.getType())))
      return failure();
  }

  FailureOr<Type> y = c.checkOutput("y", op.getY(), op.getYOut());
  if (failed(y))
    return failure();
  if (!*y)
    return op.emitOpError() << (c.isBufferForm()
                                    ? "buffer form needs a 'y' outs operand"
                                    : "value form needs a 'y' result");
  if (failed(c.checkLikeReference("y", *y, xElt)))
    return failure();

  if constexpr (isLayerNorm<OpT>()) {
    FailureOr<Type> mean = c.checkOutput("mean", op.getMean(), op.getMeanOut());
    if (failed(mean))
      return failure();
    if (!*mean)
      return op.emitOpError() << "'mean' output is required (the backward "
                                 "reads it)";
    if (failed(c.checkStatistic("mean", *mean)))
      return failure();
  }
  FailureOr<Type> rstd = c.checkOutput("rstd", op.getRstd(), op.getRstdOut());
  if (failed(rstd))
    return failure();
  if (!*rstd)
    return op.emitOpError() << "'rstd' output is required (the backward "
                               "reads it)";
  if (failed(c.checkStatistic("rstd", *rstd)))
    return failure();

  FailureOr<Type> xhat = c.checkOutput("xhat", op.getXhat(), op.getXhatOut());
  if (failed(xhat))
    return failure();
  if (*xhat && failed(c.checkLikeReference("xhat", *xhat)))
    return failure();

  // The fused residual add: `h = x + residual` in x's type, both or neither.
  Value residual = op.getResidual();
  if (residual &&
      failed(c.checkLikeReference("residual", residual.getType(), xElt)))
    return failure();
  FailureOr<Type> h = c.checkOutput("h", op.getH(), op.getHOut());
  if (failed(h))
    return failure();
  if (residual && !*h)
    return op.emitOpError()
           << "a 'residual' needs the sum 'h' as an output ("
           << (c.isBufferForm() ? "an 'h' outs operand" : "an 'h' result")
           << ")";
  if (!residual && *h)
    return op.emitOpError() << "'h' (x + residual) is an output but no "
                               "'residual' is given";
  if (*h && failed(c.checkLikeReference("h", *h, xElt)))
    return failure();
  return success();
}

template <typename OpT>
void forwardEffects(
    OpT op,
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  SmallVector<Value> reads = {op.getX()};
  SmallVector<Value> writes = {op.getYOut(), op.getRstdOut(), op.getXhatOut(),
                               op.getHOut()};
  if (op.getResidual())
    reads.push_back(op.getResidual());
  if (op.getWeight())
    reads.push_back(op.getWeight());
  if constexpr (isLayerNorm<OpT>()) {
    if (op.getBias())
      reads.push_back(op.getBias());
    writes.push_back(op.getMeanOut());
  }
  addBufferEffects(op, reads, writes, effects);
}

//===----------------------------------------------------------------------===//
// Backward
//===----------------------------------------------------------------------===//

template <typename OpT>
LogicalResult verifyGrad(OpT op) {
  if (!op.getX() == !op.getXhat())
    return op.emitOpError() << "expects exactly one of 'x' and 'xhat'";
  StringRef refName = op.getX() ? "x" : "xhat";
  NormChecker c(op, refName, op.getInput());
  if (failed(c.checkReference()) ||
      failed(c.checkAccumulationType(op.getAccumulationType())))
    return failure();
  Type xElt = cast<ShapedType>(op.getInput().getType()).getElementType();

  if (failed(c.checkLikeReference("dy", op.getDy().getType(), xElt)))
    return failure();
  if constexpr (isLayerNorm<OpT>()) {
    if (op.getX() && !op.getMean())
      return op.emitOpError()
             << "'mean' is required with 'x' (xhat = (x - mean) * rstd)";
    if (op.getXhat() && op.getMean())
      return op.emitOpError()
             << "'mean' is not used when a stored 'xhat' is given";
    if (Value m = op.getMean(); m && failed(c.checkStatistic("mean", m.getType())))
      return failure();
  }
  if (failed(c.checkStatistic("rstd", op.getRstd().getType())))
    return failure();
  if (Value w = op.getWeight(); w && failed(c.checkFeature("weight", w.getType())))
    return failure();
  if (!op.getWeight() && op.getZeroCenteredWeight())
    return op.emitOpError() << "'zero_centered_weight' needs a 'weight'";

  FailureOr<Type> dx = c.checkOutput("dx", op.getDx(), op.getDxOut());
  if (failed(dx))
    return failure();
  if (!*dx)
    return op.emitOpError() << (c.isBufferForm()
                                    ? "buffer form needs a 'dx' outs operand"
                                    : "value form needs a 'dx' result");
  if (failed(c.checkLikeReference("dx", *dx, xElt)))
    return failure();
  if (Value r = op.getDresidual();
      r && failed(c.checkLikeReference("dresidual", r.getType(), xElt)))
    return failure();

  FailureOr<Type> dw =
      c.checkOutput("dweight", op.getDweight(), op.getDweightOut());
  if (failed(dw))
    return failure();
  if (*dw) {
    if (!op.getWeight())
      return op.emitOpError() << "'dweight' is requested but no 'weight' is "
                                 "given";
    Type wElt = cast<ShapedType>(op.getWeight().getType()).getElementType();
    if (failed(c.checkFeature("dweight", *dw, wElt)))
      return failure();
  }
  bool hasColumnSums = static_cast<bool>(*dw);
  if constexpr (isLayerNorm<OpT>()) {
    FailureOr<Type> db = c.checkOutput("dbias", op.getDbias(), op.getDbiasOut());
    if (failed(db))
      return failure();
    if (*db && failed(c.checkFeature("dbias", *db)))
      return failure();
    hasColumnSums |= static_cast<bool>(*db);
  }

  ReductionStrategy s = op.getStrategy();
  if (op.getGroups() && s == ReductionStrategy::Atomic)
    return op.emitOpError()
           << "'groups' has no meaning with strategy 'atomic' (rows add "
              "straight into [N])";
  if (op.getGroups() && !hasColumnSums)
    return op.emitOpError()
           << "'groups' is set but neither dweight nor dbias is requested";
  return success();
}

template <typename OpT>
void gradEffects(
    OpT op,
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  SmallVector<Value> reads = {op.getDy(), op.getInput(), op.getRstd()};
  SmallVector<Value> writes = {op.getDxOut(), op.getDweightOut()};
  if (op.getWeight())
    reads.push_back(op.getWeight());
  if (op.getDresidual())
    reads.push_back(op.getDresidual());
  if constexpr (isLayerNorm<OpT>()) {
    if (op.getMean())
      reads.push_back(op.getMean());
    writes.push_back(op.getDbiasOut());
  }
  addBufferEffects(op, reads, writes, effects);
}

} // namespace

LogicalResult LayerNormOp::verify() { return verifyForward(*this); }
LogicalResult RMSNormOp::verify() { return verifyForward(*this); }
LogicalResult LayerNormGradOp::verify() { return verifyGrad(*this); }
LogicalResult RMSNormGradOp::verify() { return verifyGrad(*this); }

void LayerNormOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>> &e) {
  forwardEffects(*this, e);
}
void RMSNormOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>> &e) {
  forwardEffects(*this, e);
}
void LayerNormGradOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>> &e) {
  gradEffects(*this, e);
}
void RMSNormGradOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>> &e) {
  gradEffects(*this, e);
}

#define GET_OP_CLASSES
#include "norm/Dialect/Norm/IR/NormOps.cpp.inc"
