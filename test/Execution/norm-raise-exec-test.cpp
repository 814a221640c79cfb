//===- norm-raise-exec-test.cpp - raised vs unraised, on the CPU ----------===//
//
// Part of mlir-norm.
//
// Runs the one function of a linalg-on-tensors module twice on the same
// fresh random inputs: as written (its linalg lowered to loops) and after
// norm-raise (the norm ops lowered by norm-lower-to-loops), both JIT-
// compiled for the host; and evaluates it a third time in float64 (the
// interpreter of norm/Dialect/Norm/Transforms/RaiseEval.h on the unraised
// function, from the inputs as rounded to their storage types). Each
// output of both runs must be within the dtype's bound of the float64
// reference (relative 2-norm error: f32 1e-5, f16/bf16 1.5 unit
// roundoffs), and the raised run must contain the expected number of norm
// ops. `--perturb` changes the raised ops (eps x 1000 in a forward,
// zero_centered_weight toggled in a backward): the negative control, which
// must fail. Last line: "N passed, M failed" (one per output).
//
//===----------------------------------------------------------------------===//

#include "HostBuffer.h"
#include "StorageTypes.h"

#include "norm/Dialect/Norm/IR/NormOps.h"
#include "norm/Dialect/Norm/Transforms/RaiseEval.h"
#include "norm/InitNorm.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/TargetSelect.h"

#include <cmath>
#include <random>

using namespace mlir;
using namespace norm_exec;

namespace {

llvm::cl::opt<std::string> inputFile(llvm::cl::Positional,
                                     llvm::cl::desc("<input .mlir>"),
                                     llvm::cl::Required);
llvm::cl::opt<int64_t> rows("rows", llvm::cl::init(5),
                            llvm::cl::desc("Extent of each dynamic dim"));
llvm::cl::opt<unsigned> seed("seed", llvm::cl::init(1),
                             llvm::cl::desc("Seed of the random inputs"));
llvm::cl::opt<int>
    expectRaised("expect-raised", llvm::cl::init(-1),
                 llvm::cl::desc("Number of norm ops norm-raise must create"));
llvm::cl::opt<bool>
    perturb("perturb",
            llvm::cl::desc("Negative control: change the raised ops"));
llvm::cl::opt<std::string> raisePipeline(
    "raise", llvm::cl::init("func.func(norm-raise)"),
    llvm::cl::desc("The raising passes (a pipeline in builtin.module)"));

const char *kLower = "builtin.module(norm-lower-to-loops{bufferize-function-"
                     "boundaries},func.func(convert-linalg-to-loops),"
                     "norm-cpu-to-llvm)";

std::optional<DType> dtypeOf(Type t) {
  if (t.isF32())
    return DType::F32;
  if (t.isF16())
    return DType::F16;
  if (t.isBF16())
    return DType::BF16;
  return std::nullopt;
}

/// A buffer for a tensor type of rank 1 to 3 with concrete dims.
struct Buffer {
  HostBuffer host;
  SmallVector<int64_t> shape;
};

Buffer makeBuffer(RankedTensorType t) {
  Buffer b;
  for (int64_t d : t.getShape())
    b.shape.push_back(ShapedType::isDynamic(d) ? rows.getValue() : d);
  DType dt = *dtypeOf(t.getElementType());
  if (b.shape.size() == 1) {
    b.host = HostBuffer::vector(dt, b.shape[0]);
  } else {
    int64_t lead = 1;
    for (int64_t d : ArrayRef<int64_t>(b.shape).drop_back())
      lead *= d;
    b.host = HostBuffer::matrix(dt, lead, b.shape.back());
    if (b.shape.size() == 3)
      b.host.splitRows(b.shape[0]);
  }
  return b;
}

std::vector<double> values(const HostBuffer &h) {
  std::vector<double> v;
  int64_t r = h.rows() ? h.rows() : 1;
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < h.cols(); ++j)
      v.push_back(h.get(i, j));
  return v;
}

/// Adds `@kernel(inputs..., outputs...)` (memrefs, C interface) that calls
/// `f` between to_tensor and materialize_in_destination.
void addKernel(ModuleOp module, func::FuncOp f) {
  OpBuilder b(module.getContext());
  b.setInsertionPointToEnd(module.getBody());
  Location loc = f.getLoc();
  FunctionType ft = f.getFunctionType();
  SmallVector<Type> args;
  auto memref = [](Type t) {
    auto rt = cast<RankedTensorType>(t);
    return MemRefType::get(rt.getShape(), rt.getElementType());
  };
  for (Type t : ft.getInputs())
    args.push_back(memref(t));
  for (Type t : ft.getResults())
    args.push_back(memref(t));
  auto k = func::FuncOp::create(b, loc, "kernel",
                                FunctionType::get(b.getContext(), args, {}));
  k->setAttr("llvm.emit_c_interface", b.getUnitAttr());
  Block *block = k.addEntryBlock();
  b.setInsertionPointToStart(block);
  SmallVector<Value> tensors;
  for (auto [i, t] : llvm::enumerate(ft.getInputs()))
    tensors.push_back(bufferization::ToTensorOp::create(
        b, loc, t, block->getArgument(i), /*restrict=*/true));
  auto call = func::CallOp::create(b, loc, f, tensors);
  for (auto [j, r] : llvm::enumerate(call.getResults()))
    bufferization::MaterializeInDestinationOp::create(
        b, loc, Type(), r, block->getArgument(ft.getNumInputs() + j),
        b.getUnitAttr(), b.getUnitAttr());
  func::ReturnOp::create(b, loc);
}

LogicalResult runPipeline(ModuleOp module, StringRef text) {
  std::string err;
  llvm::raw_string_ostream os(err);
  FailureOr<OpPassManager> parsed = parsePassPipeline(text, os);
  if (failed(parsed)) {
    llvm::errs() << err << "\n";
    return failure();
  }
  PassManager pm(module.getContext(), parsed->getOpAnchorName());
  static_cast<OpPassManager &>(pm) = std::move(*parsed);
  return pm.run(module);
}

/// Lowers and runs a clone of `module`'s function on `inputs`, writing
/// `outputs` (poisoned first).
LogicalResult execute(ModuleOp module, StringRef fname,
                      SmallVectorImpl<Buffer> &inputs,
                      SmallVectorImpl<Buffer> &outputs) {
  auto f = module.lookupSymbol<func::FuncOp>(fname);
  addKernel(module, f);
  if (failed(runPipeline(module, kLower)))
    return failure();
  auto transformer = makeOptimizingTransformer(2, 0, nullptr);
  ExecutionEngineOptions options;
  options.transformer = transformer;
  SmallVector<StringRef> libs = {NORM_RUNNER_UTILS_LIB};
  options.sharedLibPaths = libs;
  auto engine = ExecutionEngine::create(module, options);
  if (!engine) {
    llvm::errs() << "jit: " << llvm::toString(engine.takeError()) << "\n";
    return failure();
  }
  (*engine)->initialize();
  auto entry = (*engine)->lookupPacked("_mlir_ciface_kernel");
  if (!entry) {
    llvm::errs() << "jit lookup: " << llvm::toString(entry.takeError()) << "\n";
    return failure();
  }
  SmallVector<void *> descriptors;
  for (Buffer &b : inputs)
    descriptors.push_back(b.host.descriptor());
  for (Buffer &b : outputs) {
    b.host.poison();
    descriptors.push_back(b.host.descriptor());
  }
  SmallVector<void *> args;
  for (void *&d : descriptors)
    args.push_back(&d);
  (*entry)(args.data());
  return success();
}

double relErr(ArrayRef<double> got, ArrayRef<double> ref) {
  double num = 0.0, den = 0.0;
  for (auto [g, r] : llvm::zip(got, ref)) {
    if (!std::isfinite(g))
      return INFINITY;
    num += (g - r) * (g - r);
    den += r * r;
  }
  return std::sqrt(num) / std::max(std::sqrt(den), 1e-30);
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  llvm::cl::ParseCommandLineOptions(argc, argv,
                                    "norm-raise, executed on the CPU\n");
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  norm::registerNormAndUpstreamPasses();

  DialectRegistry registry;
  norm::registerNormDialects(registry);
  MLIRContext context(registry, MLIRContext::Threading::DISABLED);
  context.loadAllAvailableDialects();
  OwningOpRef<ModuleOp> source = parseSourceFile<ModuleOp>(inputFile, &context);
  if (!source)
    return 2;
  func::FuncOp f;
  source->walk([&](func::FuncOp fn) {
    if (!f && !fn.isDeclaration())
      f = fn;
  });
  if (!f) {
    llvm::errs() << "no function\n";
    return 2;
  }
  for (Type t : llvm::concat<const Type>(f.getFunctionType().getInputs(),
                                         f.getFunctionType().getResults())) {
    auto rt = dyn_cast<RankedTensorType>(t);
    if (!rt || rt.getRank() < 1 || rt.getRank() > 3 ||
        !dtypeOf(rt.getElementType())) {
      llvm::errs() << "unsupported argument or result type " << t << "\n";
      return 2;
    }
  }

  // The inputs, and the float64 reference from them.
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  SmallVector<Buffer> inputs;
  norm::raise::Evaluator ev(int64_t(1) << 30);
  ev.evaluateWholePrograms();
  for (auto [i, t] : llvm::enumerate(f.getFunctionType().getInputs())) {
    Buffer b = makeBuffer(cast<RankedTensorType>(t));
    std::vector<double> v(b.host.size());
    for (double &x : v)
      x = 0.3 + 1.5 * u(gen);
    b.host.setValues(v);
    norm::raise::Array a;
    a.shape = b.shape;
    a.data = values(b.host);
    ev.bind(f.getArgument(i), std::move(a));
    inputs.push_back(std::move(b));
  }
  auto ret = cast<func::ReturnOp>(f.getBody().front().getTerminator());
  std::vector<std::vector<double>> reference;
  for (Value r : ret.getOperands()) {
    FailureOr<const norm::raise::Array *> a = ev.eval(r);
    if (failed(a)) {
      llvm::errs() << "the float64 evaluation does not reach a result\n";
      return 2;
    }
    reference.push_back((*a)->data);
  }

  // The two runs.
  auto outputsFor = [&] {
    SmallVector<Buffer> outs;
    for (Type t : f.getFunctionType().getResults())
      outs.push_back(makeBuffer(cast<RankedTensorType>(t)));
    return outs;
  };
  StringRef fname = f.getSymName();
  OwningOpRef<ModuleOp> plain = source->clone();
  SmallVector<Buffer> plainOut = outputsFor();
  if (failed(execute(*plain, fname, inputs, plainOut)))
    return 2;

  OwningOpRef<ModuleOp> raised = source->clone();
  if (failed(runPipeline(*raised, "builtin.module(" + raisePipeline + ")")))
    return 2;
  int numRaised = 0;
  raised->walk([&](Operation *op) {
    if (!isa<norm::NormDialect>(op->getDialect()))
      return;
    ++numRaised;
    if (!perturb)
      return;
    if (auto fwd = dyn_cast<norm::LayerNormOp>(op))
      fwd.setEps(APFloat(fwd.getEps().convertToFloat() * 1000.0f));
    else if (auto fwd = dyn_cast<norm::RMSNormOp>(op))
      fwd.setEps(APFloat(fwd.getEps().convertToFloat() * 1000.0f));
    else
      op->setAttr("zero_centered_weight",
                  op->hasAttr("zero_centered_weight")
                      ? Attribute()
                      : UnitAttr::get(op->getContext()));
  });
  llvm::outs() << "raised: " << numRaised << " norm ops\n";
  if (expectRaised >= 0 && numRaised != expectRaised) {
    llvm::outs() << "FAIL: expected " << expectRaised << " norm ops\n";
    return 1;
  }
  SmallVector<Buffer> raisedOut = outputsFor();
  if (failed(execute(*raised, fname, inputs, raisedOut)))
    return 2;

  int passed = 0, failedCount = 0;
  for (auto [j, t] : llvm::enumerate(f.getFunctionType().getResults())) {
    DType dt = *dtypeOf(cast<RankedTensorType>(t).getElementType());
    double bound = dt == DType::F32 ? 1e-5 : 1.5 * unitRoundoff(dt);
    double ePlain = relErr(values(plainOut[j].host), reference[j]);
    double eRaised = relErr(values(raisedOut[j].host), reference[j]);
    bool ok = ePlain <= bound && eRaised <= bound;
    (ok ? passed : failedCount)++;
    llvm::outs() << (ok ? "PASS" : "FAIL") << ": result " << j << " (" << t
                 << "): error vs float64 unraised "
                 << llvm::format("%.3g", ePlain) << ", raised "
                 << llvm::format("%.3g", eRaised) << " (bound "
                 << llvm::format("%.3g", bound) << ")\n";
  }
  llvm::outs() << passed << " passed, " << failedCount << " failed\n";
  return failedCount ? 1 : 0;
}
