//===- norm-compile.cpp - norm ops to PTX / cubin + a launch manifest -----===//
//
// Part of mlir-norm.
//
// Input: an MLIR file with norm ops, or a spec on the command line
// (--op, --n, dtypes, flags; M stays dynamic). Output: the kernels (PTX
// text, cubin or fatbin) and a JSON manifest the runtime (lib/Runtime)
// launches them from: argument order, kernel names and parameter lists,
// launch configuration as a function of M, workspace shapes.
//
//===----------------------------------------------------------------------===//

#include "norm/InitNorm.h"
#include "norm/Pipelines/Pipelines.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory category("norm-compile options");
static cl::opt<std::string> inputFile(cl::Positional,
                                      cl::desc("[input.mlir]"),
                                      cl::init(""), cl::cat(category));
static cl::opt<std::string> outputFile("o", cl::desc("Kernels output file"),
                                       cl::value_desc("file"), cl::init("-"),
                                       cl::cat(category));
static cl::opt<std::string>
    manifestFile("manifest", cl::desc("JSON manifest output file"),
                 cl::init(""), cl::cat(category));
static cl::opt<std::string>
    op("op",
       cl::desc("Spec: layer_norm_grad, rms_norm_grad, layer_norm, rms_norm"),
       cl::init(""), cl::cat(category));
static cl::opt<int64_t> n("n", cl::desc("Spec: hidden size N (static)"),
                          cl::init(0), cl::cat(category));
static cl::opt<std::string> dtype("dtype",
                                  cl::desc("Spec: x dtype (f32, f16, bf16)"),
                                  cl::init("bf16"), cl::cat(category));
static cl::opt<std::string>
    weightDtype("weight-dtype", cl::desc("Spec: weight dtype (default: x's)"),
                cl::init(""), cl::cat(category));
static cl::opt<bool> noWeight("no-weight", cl::desc("Spec: no weight"),
                              cl::cat(category));
static cl::opt<bool> noBias("no-bias",
                            cl::desc("Spec: no bias / no dbias (LayerNorm)"),
                            cl::cat(category));
static cl::opt<bool> dresidual("dresidual",
                               cl::desc("Spec: add a residual gradient"),
                               cl::cat(category));
static cl::opt<bool> zeroCentered("zero-centered",
                                  cl::desc("Spec: weight is w + 1"),
                                  cl::cat(category));
static cl::opt<bool> withXhat("xhat",
                              cl::desc("Spec (forward): also write xhat"),
                              cl::cat(category));
static cl::opt<std::string> strategy("strategy",
                                     cl::desc("Reduction strategy"),
                                     cl::init(""), cl::cat(category));
static cl::opt<int64_t> groups("groups", cl::desc("Fixed partial rows"),
                               cl::init(0), cl::cat(category));
static cl::opt<std::string> name("name", cl::desc("Spec: function name"),
                                 cl::init("norm_kernel"), cl::cat(category));
static cl::opt<std::string> chip("chip", cl::desc("Target chip"),
                                 cl::init("sm_90"), cl::cat(category));
static cl::opt<std::string> format("format",
                                   cl::desc("isa (PTX), bin, fatbin"),
                                   cl::init("isa"), cl::cat(category));
static cl::opt<std::string> toolkit("toolkit", cl::desc("CUDA toolkit root"),
                                    cl::init(""), cl::cat(category));
static cl::opt<int64_t> threads("block-threads",
                                cl::desc("Threads per block"),
                                cl::init(256), cl::cat(category));
static cl::opt<bool> emitMLIR("emit-mlir",
                              cl::desc("Print the generated input IR and "
                                       "stop"),
                              cl::cat(category));

namespace {

/// One function argument of the generated (or given) function.
struct Argument {
  std::string name;
  std::string role; // input / output
};

std::string rowType(StringRef t) {
  return llvm::formatv("memref<?x{0}x{1}, strided<[?, 1], offset: ?>>",
                       n.getValue(), t)
      .str();
}
std::string colType(StringRef t) {
  return llvm::formatv("memref<{0}x{1}, strided<[1], offset: ?>>",
                       n.getValue(), t)
      .str();
}
std::string statType() { return "memref<?xf32, strided<[1], offset: ?>>"; }

/// The IR of the command-line spec, or an error.
FailureOr<std::string> specToIR(SmallVectorImpl<Argument> &args) {
  bool grad = StringRef(op).ends_with("_grad");
  bool layer = StringRef(op).starts_with("layer_norm");
  if (!llvm::is_contained({"layer_norm_grad", "rms_norm_grad", "layer_norm",
                           "rms_norm"},
                          op.getValue())) {
    llvm::errs() << "norm-compile: --op must be layer_norm_grad, "
                    "rms_norm_grad, layer_norm or rms_norm, got '"
                 << op << "'\n";
    return failure();
  }
  if (n <= 0) {
    llvm::errs() << "norm-compile: --n must be a positive hidden size\n";
    return failure();
  }
  for (StringRef t : {StringRef(dtype), StringRef(weightDtype)})
    if (!t.empty() && !llvm::is_contained({"f32", "f16", "bf16"}, t)) {
      llvm::errs() << "norm-compile: dtypes are f32, f16 or bf16, got '" << t
                   << "'\n";
      return failure();
    }
  std::string x = dtype, w = weightDtype.empty() ? dtype : weightDtype;
  bool hasWeight = !noWeight, hasBias = layer && !noBias;

  std::string params, body, attrs;
  auto param = [&](StringRef argName, StringRef type, StringRef role) {
    if (!params.empty())
      params += ", ";
    params += ("%" + argName + ": " + type).str();
    args.push_back({argName.str(), role.str()});
  };
  auto use = [&](StringRef kw, StringRef argName, StringRef type) {
    return (kw + "(%" + argName + " : " + type + ") ").str();
  };
  if (zeroCentered)
    attrs += "zero_centered_weight, ";
  if (grad) {
    param("dy", rowType(x), "input");
    param("x", rowType(x), "input");
    if (layer)
      param("mean", statType(), "input");
    param("rstd", statType(), "input");
    if (hasWeight)
      param("weight", colType(w), "input");
    if (dresidual)
      param("dresidual", rowType(x), "input");
    param("dx", rowType(x), "output");
    if (hasWeight)
      param("dweight", colType(w), "output");
    if (hasBias)
      param("dbias", colType(w), "output");
    std::string opName = layer ? "norm.layer_norm_grad" : "norm.rms_norm_grad";
    body = opName + " " + use("dy", "dy", rowType(x)) +
           use("x", "x", rowType(x));
    if (layer)
      body += use("mean", "mean", statType());
    body += use("rstd", "rstd", statType());
    if (hasWeight)
      body += use("weight", "weight", colType(w));
    if (dresidual)
      body += use("dresidual", "dresidual", rowType(x));
    body += "outs " + use("dx", "dx", rowType(x));
    if (hasWeight)
      body += use("dweight", "dweight", colType(w));
    if (hasBias)
      body += use("dbias", "dbias", colType(w));
    if (!strategy.empty())
      attrs += "strategy = #norm.strategy<" + strategy + ">, ";
    if (groups > 0)
      attrs += "groups = " + std::to_string(groups) + ", ";
  } else {
    param("x", rowType(x), "input");
    if (hasWeight)
      param("weight", colType(w), "input");
    if (hasBias)
      param("bias", colType(w), "input");
    param("y", rowType(x), "output");
    if (layer)
      param("mean", statType(), "output");
    param("rstd", statType(), "output");
    if (withXhat)
      param("xhat", rowType(x), "output");
    std::string opName = layer ? "norm.layer_norm" : "norm.rms_norm";
    body = opName + " " + use("x", "x", rowType(x));
    if (hasWeight)
      body += use("weight", "weight", colType(w));
    if (hasBias)
      body += use("bias", "bias", colType(w));
    body += "outs " + use("y", "y", rowType(x));
    if (layer)
      body += use("mean", "mean", statType());
    body += use("rstd", "rstd", statType());
    if (withXhat)
      body += use("xhat", "xhat", rowType(x));
  }
  if (!attrs.empty())
    body += "{" + attrs.substr(0, attrs.size() - 2) + "}";
  return llvm::formatv("func.func @{0}({1}) {{\n  {2}\n  return\n}\n",
                       name.getValue(), params, body)
      .str();
}

/// The manifest of the compiled host function `func`.
llvm::json::Object manifestOf(func::FuncOp func,
                              ArrayRef<Argument> argsFromSpec) {
  llvm::json::Object m;
  m["format_version"] = 1;
  m["function"] = func.getName().str();
  m["chip"] = chip.getValue();
  m["format"] = format.getValue();
  m["threads"] = threads.getValue();
  if (!op.empty()) {
    llvm::json::Object spec;
    spec["op"] = op.getValue();
    spec["n"] = n.getValue();
    spec["dtype"] = dtype.getValue();
    spec["weight_dtype"] = weightDtype.empty() ? dtype.getValue()
                                               : weightDtype.getValue();
    spec["strategy"] = strategy.empty() ? "deterministic" : strategy.getValue();
    spec["groups"] = groups.getValue();
    m["spec"] = std::move(spec);
  }

  auto dtypeOf = [](Type t) -> std::string {
    if (t.isF32())
      return "f32";
    if (t.isF16())
      return "f16";
    if (t.isBF16())
      return "bf16";
    if (t.isInteger(32))
      return "i32";
    return "unknown";
  };
  auto shapeOf = [](MemRefType t) {
    llvm::json::Array shape;
    for (int64_t d : t.getShape())
      shape.push_back(ShapedType::isDynamic(d) ? llvm::json::Value("?")
                                               : llvm::json::Value(d));
    return shape;
  };

  llvm::json::Array arguments;
  for (auto [i, arg] : llvm::enumerate(func.getArguments())) {
    llvm::json::Object a;
    a["name"] = i < argsFromSpec.size() ? argsFromSpec[i].name
                                        : ("arg" + Twine(i)).str();
    if (i < argsFromSpec.size())
      a["role"] = argsFromSpec[i].role;
    auto t = cast<MemRefType>(arg.getType());
    a["dtype"] = dtypeOf(t.getElementType());
    a["shape"] = shapeOf(t);
    arguments.push_back(std::move(a));
  }
  m["arguments"] = std::move(arguments);

  // Workspaces: the host allocations, in order.
  DenseMap<Value, int64_t> workspaceIndex;
  llvm::json::Array workspaces;
  func.walk([&](memref::AllocOp alloc) {
    llvm::json::Object w;
    auto t = alloc.getType();
    w["dtype"] = dtypeOf(t.getElementType());
    llvm::json::Array shape;
    unsigned dyn = 0;
    for (int64_t d : t.getShape()) {
      if (!ShapedType::isDynamic(d)) {
        shape.push_back(d);
        continue;
      }
      // The only run-time workspace extent is the number of groups.
      (void)alloc.getDynamicSizes()[dyn++];
      shape.push_back("groups");
    }
    w["shape"] = std::move(shape);
    w["zeroed_by_kernels"] = true;
    workspaceIndex[alloc] = workspaces.size();
    workspaces.push_back(std::move(w));
  });
  m["workspaces"] = std::move(workspaces);

  // Kernels, in launch order, with their parameters.
  auto records = func->getAttrOfType<ArrayAttr>("norm.kernels");
  llvm::json::Array kernels;
  func.walk([&](gpu::LaunchFuncOp launch) {
    llvm::json::Object k;
    std::string kname = launch.getKernelName().str();
    k["name"] = kname;
    if (records)
      for (Attribute r : records) {
        auto d = cast<DictionaryAttr>(r);
        if (cast<StringAttr>(d.get("name")).getValue() != kname)
          continue;
        for (NamedAttribute f : d)
          if (auto s = dyn_cast<StringAttr>(f.getValue()))
            k[f.getName().str()] = s.getValue().str();
          else if (auto b = dyn_cast<BoolAttr>(f.getValue()))
            k[f.getName().str()] = b.getValue();
          else if (auto i = dyn_cast<IntegerAttr>(f.getValue()))
            k[f.getName().str()] = i.getInt();
      }
    // The grid: a constant, or the rule the record names.
    if (auto c = getConstantIntValue(launch.getGridSizeX()))
      k["grid"] = *c;
    llvm::json::Array params;
    for (Value v : launch.getKernelOperands()) {
      llvm::json::Object p;
      if (auto arg = dyn_cast<BlockArgument>(v)) {
        p["argument"] = arg.getArgNumber();
      } else if (workspaceIndex.count(v)) {
        p["workspace"] = workspaceIndex[v];
      } else {
        p["unsupported"] = true;
      }
      if (auto t = dyn_cast<MemRefType>(v.getType()))
        p["rank"] = t.getRank();
      params.push_back(std::move(p));
    }
    k["params"] = std::move(params);
    kernels.push_back(std::move(k));
  });
  m["kernels"] = std::move(kernels);
  return m;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "norm-compile: norm ops (an MLIR file or a spec) to GPU kernels and a "
      "launch manifest\n");

  DialectRegistry registry;
  norm::registerNormDialects(registry);
  norm::registerNormPasses();
  MLIRContext context(registry);
  context.loadAllAvailableDialects();

  SmallVector<Argument> specArgs;
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diag(sourceMgr, &context);
  OwningOpRef<ModuleOp> module;
  if (!op.empty()) {
    if (!inputFile.empty()) {
      llvm::errs() << "norm-compile: give an input file or --op, not both\n";
      return 2;
    }
    FailureOr<std::string> ir = specToIR(specArgs);
    if (failed(ir))
      return 2;
    if (emitMLIR) {
      llvm::outs() << *ir;
      return 0;
    }
    module = parseSourceString<ModuleOp>(*ir, &context);
  } else {
    if (inputFile.empty()) {
      llvm::errs() << "norm-compile: no input (an .mlir file or --op=...)\n";
      return 2;
    }
    std::string error;
    auto file = openInputFile(inputFile, &error);
    if (!file) {
      llvm::errs() << "norm-compile: " << error << "\n";
      return 2;
    }
    sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
    module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  }
  if (!module)
    return 1;

  PassManager pm(&context);
  norm::NormToGPUBinaryOptions options;
  options.chip = chip;
  options.format = format;
  options.toolkit = toolkit;
  options.strategy = strategy;
  options.groups = groups;
  options.threads = threads;
  norm::buildNormToGPUBinaryPipeline(pm, options);
  if (failed(pm.run(*module)))
    return 1;

  // The kernels: one gpu.binary per function.
  SmallVector<gpu::BinaryOp> binaries;
  module->walk([&](gpu::BinaryOp b) { binaries.push_back(b); });
  SmallVector<func::FuncOp> funcs;
  module->walk([&](func::FuncOp f) {
    if (f->hasAttr("norm.kernels"))
      funcs.push_back(f);
  });
  if (binaries.size() != 1 || funcs.size() != 1) {
    llvm::errs() << "norm-compile: expected one function with norm ops, got "
                 << funcs.size() << " (and " << binaries.size()
                 << " kernel binaries)\n";
    return 1;
  }
  if (funcs.front().getNumResults() != 0) {
    funcs.front().emitError()
        << "norm-compile: this function returns buffers it allocates; for a "
           "launchable module write the op in buffer form (outputs as "
           "`outs` memref arguments), or use norm-opt --norm-to-gpu-binary";
    return 1;
  }
  auto object =
      cast<gpu::ObjectAttr>(binaries.front().getObjects().getValue().front());
  std::string error;
  auto out = openOutputFile(outputFile, &error);
  if (!out) {
    llvm::errs() << "norm-compile: " << error << "\n";
    return 1;
  }
  out->os() << object.getObject().getValue();
  out->keep();

  if (!manifestFile.empty()) {
    auto mf = openOutputFile(manifestFile, &error);
    if (!mf) {
      llvm::errs() << "norm-compile: " << error << "\n";
      return 1;
    }
    mf->os() << llvm::formatv("{0:2}",
                              llvm::json::Value(manifestOf(funcs.front(),
                                                           specArgs)))
             << "\n";
    mf->keep();
  }
  return 0;
}
