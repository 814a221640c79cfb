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
