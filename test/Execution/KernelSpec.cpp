//===- KernelSpec.cpp - the execution tests' kernels, built and printed ---===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#include "KernelSpec.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/raw_ostream.h"

using namespace norm_exec;

const char *norm_exec::operandName(Operand o) {
  switch (o) {
  case Operand::Dy:
    return "dy";
  case Operand::X:
    return "x";
  case Operand::Mean:
    return "mean";
  case Operand::Rstd:
    return "rstd";
  case Operand::Weight:
    return "w";
  case Operand::Bias:
    return "b";
  case Operand::Dresidual:
    return "dres";
  case Operand::Dx:
    return "dx";
  case Operand::Dweight:
    return "dw";
  case Operand::Dbias:
    return "db";
  case Operand::Y:
    return "y";
  case Operand::MeanOut:
    return "mean";
  case Operand::RstdOut:
    return "rstd";
  case Operand::XhatOut:
    return "xhat";
  case Operand::Residual:
    return "res";
  case Operand::HOut:
    return "h";
  }
  return "?";
}

std::string KernelSpec::opName() const {
  std::string name = isLayerNorm() ? "layer_norm" : "rms_norm";
  return isGrad() ? name + "_grad" : name;
}

namespace {

/// The builder's spec for one test kernel.
mlir::norm::NormOpSpec toNormOpSpec(mlir::MLIRContext &ctx,
                                    const KernelSpec &spec) {
  auto floatType = [&](DType t) -> mlir::FloatType {
    switch (t) {
    case DType::F32:
      return mlir::Float32Type::get(&ctx);
    case DType::F16:
      return mlir::Float16Type::get(&ctx);
    case DType::BF16:
      return mlir::BFloat16Type::get(&ctx);
    }
    return {};
  };
  using mlir::norm::NormOpKind;
  mlir::norm::NormOpSpec s;
  s.op = spec.isGrad()
             ? (spec.isLayerNorm() ? NormOpKind::LayerNormGrad
                                   : NormOpKind::RMSNormGrad)
             : (spec.isLayerNorm() ? NormOpKind::LayerNorm : NormOpKind::RMSNorm);
  s.n = spec.staticN ? spec.staticN : mlir::ShapedType::kDynamic;
  s.xType = floatType(spec.xType);
  s.paramType = floatType(spec.paramType);
  s.weight = spec.weight;
  s.bias = spec.bias;
  s.dresidual = spec.dresidual;
  s.zeroCentered = spec.zeroCentered;
  s.xhat = spec.xhatOut;
  s.residual = spec.residual;
  if (spec.isGrad())
    s.strategy = mlir::norm::symbolizeReductionStrategy(spec.strategy);
  s.groups = spec.groups;
  s.stridedRows = spec.strided;
  s.rowDims = spec.batch ? 2 : 1;
  s.valueForm = spec.valueForm;
  return s;
}

} // namespace

std::vector<Operand> norm_exec::kernelOperands(const KernelSpec &spec) {
  mlir::MLIRContext ctx;
  auto roles = mlir::norm::normFunctionArguments(toNormOpSpec(ctx, spec));
  return std::vector<Operand>(roles.begin(), roles.end());
}

std::string norm_exec::kernelSource(const KernelSpec &spec) {
  if (spec.isGrad() && !mlir::norm::symbolizeReductionStrategy(spec.strategy))
    return "error: unknown strategy '" + spec.strategy + "'\n";
  mlir::MLIRContext ctx;
  ctx.loadDialect<mlir::func::FuncDialect, mlir::memref::MemRefDialect,
                  mlir::bufferization::BufferizationDialect,
                  mlir::norm::NormDialect>();
  std::string text;
  llvm::raw_string_ostream os(text);
  // A spec the op rejects: its diagnostic is the source, which the parser
  // then reports.
  mlir::ScopedDiagnosticHandler diag(&ctx, [&](mlir::Diagnostic &d) {
    os << "error: " << d.str() << "\n";
    return mlir::success();
  });
  mlir::Location loc = mlir::UnknownLoc::get(&ctx);
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::ModuleOp::create(loc);
  mlir::OpBuilder b = mlir::OpBuilder::atBlockEnd(module->getBody());
  mlir::FailureOr<mlir::func::FuncOp> fn = mlir::norm::buildNormFunction(
      b, loc, "kernel", toNormOpSpec(ctx, spec));
  if (mlir::failed(fn))
    return text;
  (*fn)->setAttr("llvm.emit_c_interface", b.getUnitAttr());
  fn->print(os, mlir::OpPrintingFlags().printNameLocAsPrefix());
  os << "\n";
  return text;
}
