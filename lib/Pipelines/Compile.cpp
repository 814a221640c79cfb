//===- Compile.cpp - a module of norm ops to kernels + manifest ----------===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#include "norm/Pipelines/Compile.h"
#include "norm/Dialect/Norm/IR/NormDialect.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringSwitch.h"

#include <cmath>

using namespace mlir;

namespace {

bool takesTensors(func::FuncOp f) {
  auto isTensor = [](Type t) { return isa<TensorType>(t); };
  return llvm::any_of(f.getArgumentTypes(), isTensor) ||
         llvm::any_of(f.getResultTypes(), isTensor);
}

/// Replaces each returned allocation of `f` (bufferized) by an output
/// argument appended to its arguments.
LogicalResult returnedAllocsToArguments(func::FuncOp f) {
  if (f.isExternal() || f.getNumResults() == 0)
    return success();
  if (!f.getBody().hasOneBlock())
    return f.emitError() << "norm-compile: a value-form function must have a "
                            "single block to become launchable";
  auto ret = cast<func::ReturnOp>(f.getBody().front().getTerminator());
  SmallVector<memref::AllocOp> allocs;
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    auto alloc = v.getDefiningOp<memref::AllocOp>();
    bool onlyNormWrites =
        alloc && llvm::all_of(alloc->getUsers(), [&](Operation *u) {
          return u == ret.getOperation() || isa<norm::NormDialect>(u->getDialect());
        });
    if (!onlyNormWrites || llvm::is_contained(allocs, alloc))
      return ret.emitError()
             << "norm-compile: result #" << i
             << " is not a tensor a norm op writes (a launchable function "
                "returns only the outputs of its norm ops; write the function "
                "in buffer form for anything else)";
    allocs.push_back(alloc);
  }
  Block &body = f.getBody().front();
  SmallVector<Type> inputs(f.getArgumentTypes());
  for (memref::AllocOp alloc : allocs) {
    BlockArgument arg = body.addArgument(alloc.getType(), alloc.getLoc());
    inputs.push_back(alloc.getType());
    alloc.getResult().replaceUsesWithIf(
        arg, [&](OpOperand &use) { return use.getOwner() != ret; });
  }
  OpBuilder b(ret);
  func::ReturnOp::create(b, ret.getLoc());
  ret.erase();
  for (memref::AllocOp alloc : allocs)
    alloc.erase();
  f.setType(FunctionType::get(f.getContext(), inputs, {}));
  f.setAllResultAttrs(ArrayRef<DictionaryAttr>{});
  return success();
}

} // namespace

LogicalResult norm::outputsToArguments(ModuleOp module) {
  if (llvm::none_of(module.getOps<func::FuncOp>(), takesTensors))
    return success();
  PassManager pm(module.getContext());
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  if (failed(pm.run(module)))
    return failure();
  for (func::FuncOp f : module.getOps<func::FuncOp>())
    if (failed(returnedAllocsToArguments(f)))
      return failure();
  return success();
}

FailureOr<norm::CompiledFunction>
norm::compileLaunchable(ModuleOp module, const NormToGPUBinaryOptions &options,
                        ArrayRef<ManifestArgument> arguments,
                        const std::optional<ManifestSpec> &spec) {
  if (failed(outputsToArguments(module)))
    return failure();
  // Named before the pipeline lowers the ops away.
  llvm::StringMap<SmallVector<ManifestArgument>> named =
      manifestArgumentsFromOps(module);

  PassManager pm(module.getContext());
  buildNormToGPUBinaryPipeline(pm, options);
  if (failed(pm.run(module)))
    return failure();

  SmallVector<func::FuncOp> funcs;
  module.walk([&](func::FuncOp f) {
    if (f->hasAttr("norm.kernels"))
      funcs.push_back(f);
  });
  if (funcs.size() != 1)
    return module.emitError()
           << "norm-compile: expected one function with norm ops, got "
           << funcs.size();
  func::FuncOp fn = funcs.front();
  if (fn.getNumResults() != 0)
    return fn.emitError()
           << "norm-compile: this function returns buffers it allocates; for "
              "a launchable module write the op in buffer form (outputs as "
              "`outs` memref arguments) or in tensor form returning the "
              "op's results";
  // Launchable means: every argument is a buffer the runtime can describe.
  // The runtime passes each tensor as its data pointer with offset 0: a
  // layout with a static offset other than 0 would read elsewhere.
  for (BlockArgument arg : fn.getArguments()) {
    auto type = dyn_cast<MemRefType>(arg.getType());
    if (!type)
      return fn.emitError()
             << "norm-compile: argument #" << arg.getArgNumber() << " is "
             << arg.getType()
             << "; a launchable function takes memref arguments only";
    SmallVector<int64_t> strides;
    int64_t offset = 0;
    if (failed(type.getStridesAndOffset(strides, offset)) ||
        (!ShapedType::isDynamic(offset) && offset != 0))
      return fn.emitError()
             << "norm-compile: argument #" << arg.getArgNumber() << " is "
             << type
             << "; a launchable argument has a strided layout with offset 0 "
                "or a dynamic one ('offset: ?')";
  }
  gpu::BinaryOp binary = kernelBinaryOf(module, fn);
  if (!binary)
    return fn.emitError() << "norm-compile: no kernels for @" << fn.getName();

  CompiledFunction result;
  result.name = fn.getName().str();
  auto object = cast<gpu::ObjectAttr>(binary.getObjects().getValue().front());
  result.image = object.getObject().getValue().str();
  result.manifest = buildManifest(
      fn, options, arguments.empty() ? ArrayRef(named.lookup(fn.getName()))
                                     : arguments,
      spec);
  return result;
}

LogicalResult norm::parseNormSpecText(StringRef words, NormSpecText &text,
                                      std::string &error) {
  SmallVector<StringRef> list;
  words.split(list, ' ', -1, /*KeepEmpty=*/false);
  for (StringRef word : list) {
    std::pair<StringRef, StringRef> kv = word.split('=');
    StringRef key = kv.first, value = kv.second;
    bool hasValue = word.contains('=');
    std::string k = key.str();
    std::replace(k.begin(), k.end(), '_', '-');
    auto flag = [&](bool &out) {
      if (!hasValue || value == "1" || value == "true")
        out = true;
      else if (value == "0" || value == "false")
        out = false;
      else
        return false;
      return true;
    };
    std::string *field = llvm::StringSwitch<std::string *>(k)
                             .Case("op", &text.op)
                             .Case("n", &text.n)
                             .Case("dtype", &text.dtype)
                             .Case("weight-dtype", &text.weightDtype)
                             .Case("eps", &text.eps)
                             .Case("name", &text.name)
                             .Default(nullptr);
    bool *boolean = llvm::StringSwitch<bool *>(k)
                        .Case("no-weight", &text.noWeight)
                        .Case("no-bias", &text.noBias)
                        .Case("dresidual", &text.dresidual)
                        .Case("zero-centered", &text.zeroCentered)
                        .Case("xhat", &text.xhat)
                        .Case("residual", &text.residual)
                        .Default(nullptr);
    if (field && hasValue) {
      *field = value.str();
      continue;
    }
    if (boolean && flag(*boolean))
      continue;
    error = "cannot read '" + word.str() +
            "' (known: op=, n=, dtype=, weight-dtype=, eps=, name=, "
            "no-weight, no-bias, dresidual, zero-centered, xhat, residual)";
    return failure();
  }
  return success();
}

FailureOr<norm::NormOpSpec>
norm::makeNormOpSpec(MLIRContext *ctx, const NormSpecText &text,
                     const NormToGPUBinaryOptions &options, std::string &error,
                     StringRef flagPrefix) {
  std::string p = flagPrefix.str();
  auto fail = [&](std::string message) -> FailureOr<NormOpSpec> {
    error = std::move(message);
    return failure();
  };
  std::optional<NormOpKind> kind = symbolizeNormOpKind(text.op);
  if (!kind)
    return fail(p + "op must be layer_norm_grad, rms_norm_grad, layer_norm "
                    "or rms_norm, got '" +
                text.op + "'");
  int64_t n = 0;
  if (StringRef(text.n).getAsInteger(10, n) || n <= 0)
    return fail(p + "n must be a positive hidden size (a decimal number), "
                    "got '" +
                text.n + "'");
  auto floatTypeNamed = [&](StringRef name) {
    return llvm::StringSwitch<FloatType>(name)
        .Case("f32", Float32Type::get(ctx))
        .Case("f16", Float16Type::get(ctx))
        .Case("bf16", BFloat16Type::get(ctx))
        .Default(FloatType());
  };
  NormOpSpec spec;
  spec.op = *kind;
  spec.n = n;
  spec.xType = floatTypeNamed(text.dtype);
  spec.paramType = text.weightDtype.empty() ? spec.xType
                                            : floatTypeNamed(text.weightDtype);
  if (!spec.xType || !spec.paramType)
    return fail("dtypes are f32, f16 or bf16, got '" +
                (spec.xType ? text.weightDtype : text.dtype) + "'");
  spec.strategy = toReductionStrategy(options.strategy);
  spec.weight = !text.noWeight;
  spec.bias = !text.noBias;
  spec.dresidual = text.dresidual;
  spec.zeroCentered = text.zeroCentered;
  spec.xhat = text.xhat;
  spec.residual = text.residual;
  if (spec.residual && isGradKind(spec.op))
    return fail(p +
                "residual is for the forward ops (the backward takes "
                "its gradient as " +
                p + "dresidual)");
  if (!text.eps.empty()) {
    double eps = 0;
    if (isGradKind(spec.op))
      return fail(p + "eps is for the forward ops (the backward reads the "
                      "saved rstd)");
    if (StringRef(text.eps).getAsDouble(eps) || !(eps > 0) ||
        !std::isfinite(eps))
      return fail(p + "eps must be a positive number, got '" + text.eps +
                  "'");
    spec.eps = eps;
  }
  spec.groups = isGradKind(spec.op) ? int64_t(options.groups) : 0;
  // Any strided layout is launchable: the runtime passes each tensor's
  // offset and strides.
  spec.stridedRows = spec.stridedVectors = true;
  return spec;
}

FailureOr<func::FuncOp> norm::buildSpecFunction(
    ModuleOp module, const NormSpecText &text,
    const NormToGPUBinaryOptions &options,
    SmallVectorImpl<ManifestArgument> &args, ManifestSpec &manifestSpec,
    std::string &error, StringRef flagPrefix) {
  FailureOr<NormOpSpec> spec =
      makeNormOpSpec(module.getContext(), text, options, error, flagPrefix);
  if (failed(spec))
    return failure();
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  FailureOr<func::FuncOp> fn = buildNormFunction(
      b, UnknownLoc::get(module.getContext()), text.name, *spec);
  if (failed(fn))
    return failure();
  for (NormArgRole role : normFunctionArguments(*spec))
    args.push_back(manifestArgumentOf(role));
  manifestSpec = ManifestSpec{text.op, spec->n, text.dtype, text.weightDtype};
  return fn;
}

FailureOr<norm::CompiledFunction>
norm::compileSpec(ModuleOp module, const NormSpecText &text,
                  const NormToGPUBinaryOptions &options, std::string &error) {
  SmallVector<ManifestArgument> args;
  ManifestSpec spec;
  if (failed(buildSpecFunction(module, text, options, args, spec, error)))
    return failure();
  return compileLaunchable(module, options, args, spec);
}
