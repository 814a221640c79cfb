//===- NormFunction.cpp - one norm op in a function, from a spec ----------===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#include "norm/Dialect/Norm/Utils/NormFunction.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace mlir::norm;

StringRef norm::stringifyNormOpKind(NormOpKind kind) {
  switch (kind) {
  case NormOpKind::LayerNorm:
    return "layer_norm";
  case NormOpKind::RMSNorm:
    return "rms_norm";
  case NormOpKind::LayerNormGrad:
    return "layer_norm_grad";
  case NormOpKind::RMSNormGrad:
    return "rms_norm_grad";
  }
  llvm_unreachable("unknown NormOpKind");
}

std::optional<NormOpKind> norm::symbolizeNormOpKind(StringRef name) {
  return llvm::StringSwitch<std::optional<NormOpKind>>(name)
      .Case("layer_norm", NormOpKind::LayerNorm)
      .Case("rms_norm", NormOpKind::RMSNorm)
      .Case("layer_norm_grad", NormOpKind::LayerNormGrad)
      .Case("rms_norm_grad", NormOpKind::RMSNormGrad)
      .Default(std::nullopt);
}

StringRef norm::normArgKeyword(NormArgRole role) {
  switch (role) {
  case NormArgRole::Dy:
    return "dy";
  case NormArgRole::X:
    return "x";
  case NormArgRole::Mean:
  case NormArgRole::MeanOut:
    return "mean";
  case NormArgRole::Rstd:
  case NormArgRole::RstdOut:
    return "rstd";
  case NormArgRole::Weight:
    return "weight";
  case NormArgRole::Bias:
    return "bias";
  case NormArgRole::Dresidual:
    return "dresidual";
  case NormArgRole::Dx:
    return "dx";
  case NormArgRole::Dweight:
    return "dweight";
  case NormArgRole::Dbias:
    return "dbias";
  case NormArgRole::Y:
    return "y";
  case NormArgRole::XhatOut:
    return "xhat";
  case NormArgRole::Residual:
    return "residual";
  case NormArgRole::HOut:
    return "h";
  }
  llvm_unreachable("unknown NormArgRole");
}

bool norm::isOutputRole(NormArgRole role) {
  switch (role) {
  case NormArgRole::Dx:
  case NormArgRole::Dweight:
  case NormArgRole::Dbias:
  case NormArgRole::Y:
  case NormArgRole::MeanOut:
  case NormArgRole::RstdOut:
  case NormArgRole::XhatOut:
  case NormArgRole::HOut:
    return true;
  default:
    return false;
  }
}

SmallVector<NormArgRole> norm::normFunctionArguments(const NormOpSpec &spec) {
  using R = NormArgRole;
  bool layer = isLayerNormKind(spec.op);
  bool bias = layer && spec.bias;
  SmallVector<R> roles;
  if (isGradKind(spec.op)) {
    roles = {R::Dy, R::X};
    if (layer)
      roles.push_back(R::Mean);
    roles.push_back(R::Rstd);
    if (spec.weight)
      roles.push_back(R::Weight);
    if (spec.dresidual)
      roles.push_back(R::Dresidual);
    roles.push_back(R::Dx);
    if (spec.weight)
      roles.push_back(R::Dweight);
    if (bias)
      roles.push_back(R::Dbias);
    return roles;
  }
  roles = {R::X};
  if (spec.residual)
    roles.push_back(R::Residual);
  if (spec.weight)
    roles.push_back(R::Weight);
  if (bias)
    roles.push_back(R::Bias);
  roles.push_back(R::Y);
  if (layer)
    roles.push_back(R::MeanOut);
  roles.push_back(R::RstdOut);
  if (spec.xhat)
    roles.push_back(R::XhatOut);
  if (spec.residual)
    roles.push_back(R::HOut);
  return roles;
}

namespace {

/// The three shapes of argument: [M, N] rows, [N] parameters, [M] statistics.
enum class Shape { Rows, Param, Stat };

Shape shapeOf(NormArgRole role) {
  switch (role) {
  case NormArgRole::Weight:
  case NormArgRole::Bias:
  case NormArgRole::Dweight:
  case NormArgRole::Dbias:
    return Shape::Param;
  case NormArgRole::Mean:
  case NormArgRole::Rstd:
  case NormArgRole::MeanOut:
  case NormArgRole::RstdOut:
    return Shape::Stat;
  default:
    return Shape::Rows;
  }
}

} // namespace

MemRefType norm::normArgumentType(MLIRContext *ctx, const NormOpSpec &spec,
                                  NormArgRole role) {
  constexpr int64_t kDyn = ShapedType::kDynamic;
  // The row dims: `rowDims` dynamic extents, unit-free strides.
  int64_t rowDims = std::max<int64_t>(spec.rowDims, 1);
  SmallVector<int64_t> rows(rowDims, kDyn);
  auto strided = [&](int64_t rank) {
    SmallVector<int64_t> strides(rank, kDyn);
    strides.back() = 1;
    return StridedLayoutAttr::get(ctx, kDyn, strides);
  };
  switch (shapeOf(role)) {
  case Shape::Rows: {
    SmallVector<int64_t> shape(rows);
    shape.push_back(spec.n);
    return MemRefType::get(shape, spec.xType,
                           spec.stridedRows
                               ? strided(rowDims + 1)
                               : MemRefLayoutAttrInterface());
  }
  case Shape::Param:
    return MemRefType::get(
        {spec.n}, spec.paramType ? spec.paramType : spec.xType,
        spec.stridedVectors ? StridedLayoutAttr::get(ctx, kDyn, {1})
                            : MemRefLayoutAttrInterface());
  case Shape::Stat:
    // Statistics of rank > 1 are row views too: strided like the rows.
    return MemRefType::get(
        rows, Float32Type::get(ctx),
        rowDims > 1 ? (spec.stridedRows ? strided(rowDims)
                                        : MemRefLayoutAttrInterface())
                    : spec.stridedVectors
                          ? StridedLayoutAttr::get(ctx, kDyn, {1})
                          : MemRefLayoutAttrInterface());
  }
  llvm_unreachable("unknown shape");
}

FailureOr<func::FuncOp> norm::buildNormFunction(OpBuilder &b, Location loc,
                                                StringRef name,
                                                const NormOpSpec &spec) {
  MLIRContext *ctx = b.getContext();
  if (!spec.xType)
    return emitError(loc) << "norm function '" << name
                          << "': no element type for x";
  if (spec.rowDims < 1 || spec.rowDims > 7)
    return emitError(loc) << "norm function '" << name
                          << "': rowDims must be 1 to 7, got " << spec.rowDims;
  SmallVector<NormArgRole> roles = normFunctionArguments(spec);
  SmallVector<Type> argTypes;
  SmallVector<Location> argLocs;
  for (NormArgRole role : roles) {
    argTypes.push_back(normArgumentType(ctx, spec, role));
    argLocs.push_back(
        NameLoc::get(StringAttr::get(ctx, normArgKeyword(role)), loc));
  }
  auto fn = func::FuncOp::create(b, loc, name,
                                   b.getFunctionType(argTypes, {}));
  Block *body = fn.addEntryBlock();
  for (auto [arg, argLoc] : llvm::zip(body->getArguments(), argLocs))
    arg.setLoc(argLoc);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(body);

  // The value each role has in the op: the argument (buffer form) or its
  // tensor (value form). Outputs are always the arguments (destinations).
  llvm::SmallDenseMap<NormArgRole, Value> arg, use;
  for (auto [role, value] : llvm::zip(roles, body->getArguments())) {
    arg[role] = value;
    use[role] = value;
    if (spec.valueForm && !isOutputRole(role)) {
      auto mt = cast<MemRefType>(value.getType());
      auto tt = RankedTensorType::get(mt.getShape(), mt.getElementType());
      use[role] = bufferization::ToTensorOp::create(
          b, loc, tt, value, /*restrict=*/true, /*writable=*/false);
    }
  }
  auto in = [&](NormArgRole r) { return use.lookup(r); };
  // Buffer form: the output operands. Value form: the result types.
  auto out = [&](NormArgRole r) {
    return spec.valueForm ? Value() : arg.lookup(r);
  };
  auto resultType = [&](NormArgRole r) -> Type {
    Value v = arg.lookup(r);
    if (!spec.valueForm || !v)
      return {};
    auto mt = cast<MemRefType>(v.getType());
    return RankedTensorType::get(mt.getShape(), mt.getElementType());
  };

  UnitAttr zeroCentered = spec.zeroCentered ? b.getUnitAttr() : UnitAttr();
  using R = NormArgRole;
  Operation *op = nullptr;
  switch (spec.op) {
  case NormOpKind::LayerNormGrad:
  case NormOpKind::RMSNormGrad: {
    ReductionStrategyAttr strategy =
        spec.strategy ? ReductionStrategyAttr::get(ctx, *spec.strategy)
                      : ReductionStrategyAttr();
    IntegerAttr groups =
        spec.groups > 0 ? b.getI64IntegerAttr(spec.groups) : IntegerAttr();
    if (spec.op == NormOpKind::LayerNormGrad)
      op = LayerNormGradOp::create(
          b, loc, resultType(R::Dx), resultType(R::Dweight),
          resultType(R::Dbias), in(R::Dy), in(R::X), /*xhat=*/Value(),
          in(R::Mean), in(R::Rstd), in(R::Weight), in(R::Dresidual),
          out(R::Dx), out(R::Dweight), out(R::Dbias), strategy, groups,
          zeroCentered, /*accumulation_type=*/TypeAttr());
    else
      op = RMSNormGradOp::create(
          b, loc, resultType(R::Dx), resultType(R::Dweight), in(R::Dy),
          in(R::X), /*xhat=*/Value(), in(R::Rstd), in(R::Weight),
          in(R::Dresidual), out(R::Dx), out(R::Dweight), strategy, groups,
          zeroCentered, /*accumulation_type=*/TypeAttr());
    break;
  }
  case NormOpKind::LayerNorm:
  case NormOpKind::RMSNorm: {
    FloatAttr eps = spec.eps ? b.getF32FloatAttr(*spec.eps) : FloatAttr();
    if (spec.op == NormOpKind::LayerNorm)
      op = LayerNormOp::create(
          b, loc, resultType(R::Y), resultType(R::MeanOut),
          resultType(R::RstdOut), resultType(R::XhatOut), resultType(R::HOut),
          in(R::X), in(R::Residual), in(R::Weight), in(R::Bias), out(R::Y),
          out(R::MeanOut), out(R::RstdOut), out(R::XhatOut), out(R::HOut), eps,
          zeroCentered, /*accumulation_type=*/TypeAttr());
    else
      op = RMSNormOp::create(b, loc, resultType(R::Y), resultType(R::RstdOut),
                             resultType(R::XhatOut), resultType(R::HOut),
                             in(R::X), in(R::Residual), in(R::Weight),
                             out(R::Y), out(R::RstdOut), out(R::XhatOut),
                             out(R::HOut), eps, zeroCentered,
                             /*accumulation_type=*/TypeAttr());
    break;
  }
  }

  // Value form: each result goes to its output argument, in result order
  // (the outputs' order in `roles`).
  if (spec.valueForm) {
    auto results = op->getResults().begin();
    for (NormArgRole role : roles)
      if (isOutputRole(role))
        bufferization::MaterializeInDestinationOp::create(
            b, loc, /*result=*/Type(), *results++, arg.lookup(role),
            /*restrict=*/true, /*writable=*/true);
  }
  func::ReturnOp::create(b, loc);
  if (failed(mlir::verify(op))) {
    fn.erase();
    return failure();
  }
  return fn;
}

SmallVector<std::pair<Value, NormArgRole>> norm::normOperandRoles(Operation *op) {
  SmallVector<std::pair<Value, NormArgRole>> roles;
  auto add = [&](Value v, NormArgRole role) {
    if (v)
      roles.push_back({v, role});
  };
  if (auto g = dyn_cast<LayerNormGradOp>(op)) {
    add(g.getDy(), NormArgRole::Dy);
    add(g.getX(), NormArgRole::X);
    add(g.getMean(), NormArgRole::Mean);
    add(g.getRstd(), NormArgRole::Rstd);
    add(g.getWeight(), NormArgRole::Weight);
    add(g.getDresidual(), NormArgRole::Dresidual);
    add(g.getDxOut(), NormArgRole::Dx);
    add(g.getDweightOut(), NormArgRole::Dweight);
    add(g.getDbiasOut(), NormArgRole::Dbias);
  } else if (auto g = dyn_cast<RMSNormGradOp>(op)) {
    add(g.getDy(), NormArgRole::Dy);
    add(g.getX(), NormArgRole::X);
    add(g.getRstd(), NormArgRole::Rstd);
    add(g.getWeight(), NormArgRole::Weight);
    add(g.getDresidual(), NormArgRole::Dresidual);
    add(g.getDxOut(), NormArgRole::Dx);
    add(g.getDweightOut(), NormArgRole::Dweight);
  } else if (auto f = dyn_cast<LayerNormOp>(op)) {
    add(f.getX(), NormArgRole::X);
    add(f.getResidual(), NormArgRole::Residual);
    add(f.getWeight(), NormArgRole::Weight);
    add(f.getBias(), NormArgRole::Bias);
    add(f.getYOut(), NormArgRole::Y);
    add(f.getMeanOut(), NormArgRole::MeanOut);
    add(f.getRstdOut(), NormArgRole::RstdOut);
    add(f.getXhatOut(), NormArgRole::XhatOut);
    add(f.getHOut(), NormArgRole::HOut);
  } else if (auto f = dyn_cast<RMSNormOp>(op)) {
    add(f.getX(), NormArgRole::X);
    add(f.getResidual(), NormArgRole::Residual);
    add(f.getWeight(), NormArgRole::Weight);
    add(f.getYOut(), NormArgRole::Y);
    add(f.getRstdOut(), NormArgRole::RstdOut);
    add(f.getXhatOut(), NormArgRole::XhatOut);
    add(f.getHOut(), NormArgRole::HOut);
  }
  return roles;
}
