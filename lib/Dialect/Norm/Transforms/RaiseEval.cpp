//===- RaiseEval.cpp - evaluate linalg-on-tensors programs in f64 ---------===//
//
// Part of mlir-norm.
//
// The interpreter behind norm-raise (RaiseEval.h): the body of a linalg op
// is compiled once per evaluation into a few slot instructions and run at
// every point of the op's iteration space; reductions accumulate into the
// output like linalg's semantics say.
//
//===----------------------------------------------------------------------===//

#include "norm/Dialect/Norm/Transforms/RaiseEval.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Transforms/RegionUtils.h"

#include <cmath>
#include <limits>
#include <optional>

using namespace mlir;
using namespace mlir::norm;
using namespace mlir::norm::raise;

namespace {

/// The scalar operations of the expression layer. Casts are exact copies.
enum class Opc {
  Add,
  Sub,
  Mul,
  Div,
  Neg,
  Copy,
  Rsqrt,
  Sqrt,
  Pow,
  Exp,
  Max,
  Select, // c ? a : b
  Cmp,    // the predicate of the instruction
};

std::optional<Opc> classify(Operation *op) {
  if (isa<arith::AddFOp, arith::AddIOp>(op))
    return Opc::Add;
  if (isa<arith::SubFOp, arith::SubIOp>(op))
    return Opc::Sub;
  if (isa<arith::MulFOp, arith::MulIOp>(op))
    return Opc::Mul;
  if (isa<arith::DivFOp>(op))
    return Opc::Div;
  if (isa<arith::NegFOp>(op))
    return Opc::Neg;
  if (isa<arith::ExtFOp, arith::TruncFOp, arith::SIToFPOp, arith::UIToFPOp,
          arith::IndexCastOp>(op))
    return Opc::Copy;
  if (isa<math::RsqrtOp>(op))
    return Opc::Rsqrt;
  if (isa<math::SqrtOp>(op))
    return Opc::Sqrt;
  if (isa<math::PowFOp, math::FPowIOp>(op))
    return Opc::Pow;
  if (isa<math::ExpOp>(op))
    return Opc::Exp;
  if (isa<arith::MaximumFOp, arith::MaxNumFOp>(op))
    return Opc::Max;
  if (isa<arith::SelectOp>(op))
    return Opc::Select;
  if (isa<arith::CmpFOp>(op))
    return Opc::Cmp;
  return std::nullopt;
}

/// A comparison (no probe has NaNs, so ordered and unordered agree).
double compare(arith::CmpFPredicate p, double a, double b) {
  using P = arith::CmpFPredicate;
  switch (p) {
  case P::OGT:
  case P::UGT:
    return a > b;
  case P::OGE:
  case P::UGE:
    return a >= b;
  case P::OLT:
  case P::ULT:
    return a < b;
  case P::OLE:
  case P::ULE:
    return a <= b;
  case P::OEQ:
  case P::UEQ:
    return a == b;
  case P::ONE:
  case P::UNE:
    return a != b;
  default:
    return std::numeric_limits<double>::quiet_NaN();
  }
}

double apply(Opc opc, double a, double b, double c = 0.0,
             arith::CmpFPredicate pred = arith::CmpFPredicate::OEQ) {
  switch (opc) {
  case Opc::Select:
    return c != 0.0 ? a : b;
  case Opc::Cmp:
    return compare(pred, a, b);
  case Opc::Add:
    return a + b;
  case Opc::Sub:
    return a - b;
  case Opc::Mul:
    return a * b;
  case Opc::Div:
    return a / b;
  case Opc::Neg:
    return -a;
  case Opc::Copy:
    return a;
  case Opc::Rsqrt:
    return 1.0 / std::sqrt(a);
  case Opc::Sqrt:
    return std::sqrt(a);
  case Opc::Pow:
    return b == 2.0 ? a * a : std::pow(a, b);
  case Opc::Exp:
    return std::exp(a);
  case Opc::Max:
    return std::max(a, b);
  }
  return std::numeric_limits<double>::quiet_NaN();
}

/// A scalar constant's value, if `attr` is one.
std::optional<double> scalarValue(Attribute attr) {
  if (auto f = dyn_cast<FloatAttr>(attr))
    return f.getValueAsDouble();
  if (auto i = dyn_cast<IntegerAttr>(attr))
    return static_cast<double>(i.getValue().getSExtValue());
  return std::nullopt;
}

/// Each result of `map` a loop dim or a constant.
bool isProjection(AffineMap map) {
  return llvm::all_of(map.getResults(), [](AffineExpr e) {
    return isa<AffineDimExpr, AffineConstantExpr>(e);
  });
}

/// Whether every op of the body is a scalar op of the layer (or a constant
/// or the yield).
bool isSupportedBody(Block &body) {
  for (Operation &op : body) {
    if (isa<linalg::YieldOp>(op))
      continue;
    if (auto c = dyn_cast<arith::ConstantOp>(op)) {
      if (!scalarValue(c.getValue()))
        return false;
      continue;
    }
    if (!classify(&op) || op.getNumResults() != 1)
      return false;
  }
  return true;
}

/// A constant the expression layer computes: a scalar or a float splat.
/// Other tensors (a model's parameters) are leaves, operands a norm op can
/// take; the evaluator computes them when they are not bound.
bool isSupportedConstant(arith::ConstantOp c, bool splatOnly = true) {
  if (scalarValue(c.getValue()))
    return true;
  if (isa<DenseF32ResourceElementsAttr>(c.getValue()))
    return !splatOnly;
  auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
  return dense && dense.getType().hasStaticShape() &&
         isa<FloatType>(dense.getElementType()) &&
         (dense.isSplat() || !splatOnly);
}

} // namespace

bool raise::isExpressionOp(Operation *op) {
  if (auto lop = dyn_cast<linalg::LinalgOp>(op)) {
    if (!lop.hasPureTensorSemantics() || op->getNumRegions() != 1 ||
        op->getRegion(0).empty())
      return false;
    if (!llvm::all_of(lop.getIndexingMapsArray(), isProjection))
      return false;
    // A reduction reads one input at every point of its loops (a row or
    // column sum), not a contraction (matmul reads none so).
    if (lop.getNumReductionLoops() > 0 &&
        llvm::none_of(lop.getDpsInputOperands(), [&](OpOperand *in) {
          return lop.getMatchingIndexingMap(in).isPermutation();
        }))
      return false;
    return isSupportedBody(*lop.getBlock());
  }
  if (isa<tensor::EmptyOp, tensor::ExpandShapeOp, tensor::CollapseShapeOp,
          tensor::DimOp, tensor::CastOp>(op))
    return true;
  if (auto c = dyn_cast<arith::ConstantOp>(op))
    return isSupportedConstant(c);
  // Scalar arithmetic outside bodies (N from tensor.dim, eps casts).
  return classify(op) && op->getNumResults() == 1 &&
         !isa<ShapedType>(op->getResult(0).getType());
}

FailureOr<Slice> raise::collectSlice(Value root, ArrayRef<Value> cut,
                                     unsigned maxOps) {
  Slice slice;
  // Breadth first: past the budget, what is farthest from the root becomes
  // a leaf.
  SmallVector<Value> work = {root};
  DenseSet<Value> seen;
  for (size_t next = 0; next < work.size(); ++next) {
    Value v = work[next];
    if (!seen.insert(v).second)
      continue;
    Operation *def = v.getDefiningOp();
    if (!def || !isExpressionOp(def) || llvm::is_contained(cut, v) ||
        (!slice.ops.contains(def) && slice.ops.size() >= maxOps)) {
      slice.leaves.insert(v);
      continue;
    }
    if (!slice.ops.insert(def))
      continue;
    for (Value operand : def->getOperands())
      work.push_back(operand);
    if (auto lop = dyn_cast<linalg::LinalgOp>(def)) {
      SetVector<Value> captured;
      getUsedValuesDefinedAbove(def->getRegion(0), captured);
      for (Value c : captured)
        work.push_back(c);
      if (lop.getNumReductionLoops() > 0)
        slice.reductionTypes.push_back(
            getElementTypeOrSelf(def->getResult(0).getType()));
    }
  }
  // Program order, for the reader and for deterministic output.
  SmallVector<Operation *> ordered(slice.ops.begin(), slice.ops.end());
  llvm::sort(ordered, [](Operation *a, Operation *b) {
    if (a->getBlock() == b->getBlock())
      return a->isBeforeInBlock(b);
    return a < b;
  });
  slice.ops = SetVector<Operation *>(ordered.begin(), ordered.end());
  return slice;
}

SmallVector<double> raise::sliceConstants(const Slice &slice) {
  SmallVector<double> out;
  auto add = [&](double v) {
    if (!llvm::is_contained(out, v))
      out.push_back(v);
  };
  auto visit = [&](arith::ConstantOp c) {
    if (auto v = scalarValue(c.getValue()); v && isa<FloatAttr>(c.getValue()))
      add(*v);
    if (auto d = dyn_cast<DenseElementsAttr>(c.getValue());
        d && d.isSplat() && isa<FloatType>(d.getElementType()))
      add(d.getSplatValue<APFloat>().convertToDouble());
  };
  for (Operation *op : slice.ops)
    op->walk([&](arith::ConstantOp c) { visit(c); });
  return out;
}

SmallVector<int64_t> Evaluator::concrete(ArrayRef<int64_t> shape) const {
  SmallVector<int64_t> out(shape.begin(), shape.end());
  if (rowsFrom.empty() || shape.size() < rowsFrom.size() ||
      shape.take_front(rowsFrom.size()) != ArrayRef<int64_t>(rowsFrom))
    return out;
  llvm::copy(rowsTo, out.begin());
  return out;
}

bool Evaluator::evaluable(Operation *op) const {
  if (!wholePrograms)
    return false;
  if (auto c = dyn_cast<arith::ConstantOp>(op))
    return isSupportedConstant(c, /*splatOnly=*/false);
  auto lop = dyn_cast<linalg::LinalgOp>(op);
  return lop && lop.hasPureTensorSemantics() && op->getNumRegions() == 1 &&
         !op->getRegion(0).empty() &&
         llvm::all_of(lop.getIndexingMapsArray(), isProjection) &&
         isSupportedBody(*lop.getBlock());
}

FailureOr<const Array *> Evaluator::eval(Value v) {
  auto it = values.find(v);
  if (it != values.end())
    return it->second.get();
  Operation *def = v.getDefiningOp();
  if (!def || !(isExpressionOp(def) || evaluable(def)) || failed(evalOp(def)))
    return failure();
  it = values.find(v);
  if (it == values.end())
    return failure();
  return it->second.get();
}

LogicalResult Evaluator::evalOp(Operation *op) {
  auto scalar = [](double v) {
    Array a;
    a.data = {v};
    return a;
  };
  auto operand = [&](Value v) -> const Array * {
    FailureOr<const Array *> a = eval(v);
    return failed(a) ? nullptr : *a;
  };

  if (auto c = dyn_cast<arith::ConstantOp>(op)) {
    if (auto s = scalarValue(c.getValue())) {
      set(c.getResult(), scalar(*s));
      return success();
    }
    if (auto blob = dyn_cast<DenseF32ResourceElementsAttr>(c.getValue())) {
      // A frontend's parameters (torch-mlir's dense_resource blobs).
      std::optional<ArrayRef<float>> data = blob.tryGetAsArrayRef();
      if (!data)
        return failure();
      Array a;
      a.shape.assign(blob.getType().getShape().begin(),
                     blob.getType().getShape().end());
      a.data.assign(data->begin(), data->end());
      if (a.size() != static_cast<int64_t>(a.data.size()))
        return failure();
      set(c.getResult(), std::move(a));
      return success();
    }
    auto dense = cast<DenseElementsAttr>(c.getValue());
    Array a;
    a.shape = concrete(dense.getType().getShape());
    if (dense.isSplat()) {
      a.data.assign(a.size(), dense.getSplatValue<APFloat>().convertToDouble());
    } else {
      if (a.shape != llvm::to_vector(dense.getType().getShape()))
        return failure(); // a row-shaped table cannot shrink
      for (APFloat f : dense.getValues<APFloat>())
        a.data.push_back(f.convertToDouble());
    }
    set(c.getResult(), std::move(a));
    return success();
  }

  if (auto empty = dyn_cast<tensor::EmptyOp>(op)) {
    Array a;
    unsigned dyn = 0;
    for (int64_t d : concrete(empty.getType().getShape())) {
      if (ShapedType::isDynamic(d)) {
        const Array *s = operand(empty.getDynamicSizes()[dyn++]);
        if (!s || s->data.size() != 1)
          return failure();
        d = static_cast<int64_t>(s->data[0]);
      }
      a.shape.push_back(d);
    }
    a.data.assign(a.size(), std::numeric_limits<double>::quiet_NaN());
    set(empty.getResult(), std::move(a));
    return success();
  }

  if (auto dim = dyn_cast<tensor::DimOp>(op)) {
    const Array *src = operand(dim.getSource());
    const Array *idx = operand(dim.getIndex());
    if (!src || !idx || idx->data.size() != 1)
      return failure();
    auto i = static_cast<size_t>(idx->data[0]);
    if (i >= src->shape.size())
      return failure();
    set(dim.getResult(), scalar(static_cast<double>(src->shape[i])));
    return success();
  }

  if (auto cast = dyn_cast<tensor::CastOp>(op)) {
    const Array *src = operand(cast.getSource());
    if (!src)
      return failure();
    set(cast.getResult(), *src);
    return success();
  }

  if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(op)) {
    const Array *src = operand(op->getOperand(0));
    if (!src)
      return failure();
    auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
    SmallVector<ReassociationIndices> groups =
        isa<tensor::ExpandShapeOp>(op)
            ? cast<tensor::ExpandShapeOp>(op).getReassociationIndices()
            : cast<tensor::CollapseShapeOp>(op).getReassociationIndices();
    Array a;
    a.data = src->data;
    if (isa<tensor::CollapseShapeOp>(op)) {
      for (const ReassociationIndices &g : groups) {
        int64_t p = 1;
        for (int64_t i : g)
          p *= src->shape[i];
        a.shape.push_back(p);
      }
    } else {
      a.shape = concrete(resultType.getShape());
      for (auto [srcDim, g] : llvm::enumerate(groups)) {
        int64_t known = 1, dynPos = -1;
        for (int64_t i : g) {
          if (ShapedType::isDynamic(a.shape[i])) {
            if (dynPos >= 0)
              return failure();
            dynPos = i;
          } else {
            known *= a.shape[i];
          }
        }
        if (dynPos >= 0)
          a.shape[dynPos] = src->shape[srcDim] / known;
      }
    }
    if (a.size() != static_cast<int64_t>(a.data.size()))
      return failure();
    set(op->getResult(0), std::move(a));
    return success();
  }

  if (std::optional<Opc> opc = classify(op);
      opc && !isa<linalg::LinalgOp>(op)) {
    SmallVector<double, 3> in;
    for (Value v : op->getOperands()) {
      const Array *a = operand(v);
      if (!a || a->data.size() != 1)
        return failure();
      in.push_back(a->data[0]);
    }
    if (*opc == Opc::Select) // (cond, a, b) -> (a, b, cond)
      in = {in[1], in[2], in[0]};
    in.resize(3, in[0]);
    auto pred = arith::CmpFPredicate::OEQ;
    if (auto c = dyn_cast<arith::CmpFOp>(op))
      pred = c.getPredicate();
    set(op->getResult(0), scalar(apply(*opc, in[0], in[1], in[2], pred)));
    return success();
  }

  auto lop = dyn_cast<linalg::LinalgOp>(op);
  if (!lop)
    return failure();

  // Operands, in operand order (inputs, then inits); one map each.
  SmallVector<const Array *> arrays;
  for (Value v : op->getOperands()) {
    const Array *a = operand(v);
    if (!a)
      return failure();
    arrays.push_back(a);
  }
  SmallVector<AffineMap> maps = lop.getIndexingMapsArray();
  if (maps.size() != arrays.size())
    return failure();
  unsigned numLoops = lop.getNumLoops();
  SmallVector<int64_t> extents(numLoops, -1);
  for (auto [k, map] : llvm::enumerate(maps)) {
    if (map.getNumResults() != arrays[k]->shape.size())
      return failure();
    for (auto [j, e] : llvm::enumerate(map.getResults())) {
      auto d = dyn_cast<AffineDimExpr>(e);
      if (!d)
        continue;
      int64_t &ext = extents[d.getPosition()];
      if (ext >= 0 && ext != arrays[k]->shape[j])
        return failure();
      ext = arrays[k]->shape[j];
    }
  }
  if (llvm::is_contained(extents, -1))
    return failure();

  // Linear index of operand k at a point: sum(coef[k][d] * iv[d]) + off[k].
  SmallVector<SmallVector<int64_t>> coef(maps.size(),
                                         SmallVector<int64_t>(numLoops, 0));
  SmallVector<int64_t> off(maps.size(), 0);
  for (auto [k, map] : llvm::enumerate(maps)) {
    int64_t stride = 1;
    for (int64_t j = static_cast<int64_t>(map.getNumResults()) - 1; j >= 0;
         --j) {
      AffineExpr e = map.getResult(j);
      if (auto d = dyn_cast<AffineDimExpr>(e)) {
        coef[k][d.getPosition()] += stride;
      } else {
        int64_t c = cast<AffineConstantExpr>(e).getValue();
        if (c < 0 || c >= arrays[k]->shape[j])
          return failure();
        off[k] += c * stride;
      }
      stride *= arrays[k]->shape[j];
    }
  }

  // Compile the body: slots for block arguments, captured values,
  // constants and op results.
  Block &body = *lop.getBlock();
  unsigned numInputs = lop.getNumDpsInputs();
  unsigned numInits = lop.getNumDpsInits();
  bool argsForInits = body.getNumArguments() == numInputs + numInits;
  if (!argsForInits && body.getNumArguments() != numInputs)
    return failure();
  DenseMap<Value, unsigned> slot;
  SmallVector<double> init; // slot values fixed for the whole op
  for (BlockArgument arg : body.getArguments())
    slot[arg] = slot.size(), init.push_back(0.0);
  struct Instr {
    Opc opc;
    unsigned a, b, c, dst;
    arith::CmpFPredicate pred;
  };
  SmallVector<Instr> code;
  auto slotOf = [&](Value v) -> std::optional<unsigned> {
    if (auto it = slot.find(v); it != slot.end())
      return it->second;
    // Captured from above: a scalar computed outside.
    const Array *a = operand(v);
    if (!a || a->data.size() != 1)
      return std::nullopt;
    slot[v] = init.size();
    init.push_back(a->data[0]);
    return slot[v];
  };
  SmallVector<unsigned> yields;
  for (Operation &bop : body) {
    if (auto y = dyn_cast<linalg::YieldOp>(bop)) {
      for (Value v : y.getValues()) {
        std::optional<unsigned> s = slotOf(v);
        if (!s)
          return failure();
        yields.push_back(*s);
      }
      continue;
    }
    if (auto c = dyn_cast<arith::ConstantOp>(bop)) {
      slot[c.getResult()] = init.size();
      init.push_back(*scalarValue(c.getValue()));
      continue;
    }
    SmallVector<unsigned, 3> in;
    for (Value v : bop.getOperands()) {
      std::optional<unsigned> sl = slotOf(v);
      if (!sl)
        return failure();
      in.push_back(*sl);
    }
    Opc opc = *classify(&bop);
    if (opc == Opc::Select) // (cond, a, b) -> (a, b, cond)
      in = {in[1], in[2], in[0]};
    in.resize(3, in[0]);
    auto pred = arith::CmpFPredicate::OEQ;
    if (auto c = dyn_cast<arith::CmpFOp>(bop))
      pred = c.getPredicate();
    unsigned dst = init.size();
    init.push_back(0.0);
    slot[bop.getResult(0)] = dst;
    code.push_back({opc, in[0], in[1], in[2], dst, pred});
  }
  if (yields.size() != numInits)
    return failure();

  SmallVector<Array> outs;
  for (unsigned i = 0; i < numInits; ++i)
    outs.push_back(*arrays[numInputs + i]);

  int64_t points = 1;
  for (int64_t e : extents)
    points *= e;
  workLeft -= points * static_cast<int64_t>(code.size() + maps.size() + 1);
  if (workLeft < 0)
    return failure();

  SmallVector<int64_t> iv(numLoops, 0);
  SmallVector<double> s(init.begin(), init.end());
  auto linear = [&](unsigned k) {
    int64_t l = off[k];
    for (unsigned d = 0; d < numLoops; ++d)
      l += coef[k][d] * iv[d];
    return l;
  };
  for (int64_t p = 0; p < points; ++p) {
    for (unsigned k = 0; k < numInputs; ++k)
      s[k] = arrays[k]->data[linear(k)];
    if (argsForInits)
      for (unsigned i = 0; i < numInits; ++i)
        s[numInputs + i] = outs[i].data[linear(numInputs + i)];
    for (const Instr &in : code)
      s[in.dst] = apply(in.opc, s[in.a], s[in.b], s[in.c], in.pred);
    for (unsigned i = 0; i < numInits; ++i)
      outs[i].data[linear(numInputs + i)] = s[yields[i]];
    // Next point (row-major over the loops).
    for (int64_t d = numLoops - 1; d >= 0; --d) {
      if (++iv[d] < extents[d])
        break;
      iv[d] = 0;
    }
  }
  for (unsigned i = 0; i < numInits; ++i)
    set(op->getResult(i), std::move(outs[i]));
  return success();
}
