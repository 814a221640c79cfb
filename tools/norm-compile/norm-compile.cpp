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

#include "norm/Dialect/Norm/IR/NormDialect.h"
#include "norm/Dialect/Norm/IR/NormOps.h"
#include "norm/Dialect/Norm/Utils/NormFunction.h"
#include "norm/InitNorm.h"
#include "norm/Support/ManifestSchema.h"
#include "norm/Pipelines/Compile.h"
#include "norm/Pipelines/Manifest.h"
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
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

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
// A string, read as a decimal number below: cl's integer parser would take
// 0x10 as 16 and 010 as 8.
static cl::opt<std::string> nText("n",
                                  cl::desc("Spec: hidden size N (static)"),
                                  cl::init(""), cl::cat(category));
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
static cl::opt<bool>
    withResidual("residual",
                 cl::desc("Spec (forward): add a residual to x first; the "
                          "kernel also writes h = x + residual"),
                 cl::cat(category));
static cl::opt<std::string>
    epsText("eps",
            cl::desc("Spec (forward): the epsilon added to the variance "
                     "(a positive number; default: the op's, 1e-5)"),
            cl::cat(category));
static cl::opt<std::string> name("name", cl::desc("Spec: function name"),
                                 cl::init("norm_kernel"), cl::cat(category));
static cl::opt<bool> emitMLIR("emit-mlir",
                              cl::desc("Print the generated input IR and "
                                       "stop"),
                              cl::cat(category));

namespace {

using Argument = norm::ManifestArgument;

/// The command line's spec flags, as the shared spec reader takes them.
norm::NormSpecText specText() {
  norm::NormSpecText t;
  t.op = op;
  t.n = nText;
  t.dtype = dtype;
  t.weightDtype = weightDtype;
  t.eps = epsText;
  t.name = name;
  t.noWeight = noWeight;
  t.noBias = noBias;
  t.dresidual = dresidual;
  t.zeroCentered = zeroCentered;
  t.xhat = withXhat;
  t.residual = withResidual;
  return t;
}

/// The names of the compiler pipeline's options (NormToGPUBinaryOptions),
/// read off the struct itself so that they are declared only there.
llvm::StringSet<> pipelineOptionNames() {
  std::string text;
  llvm::raw_string_ostream os(text);
  norm::NormToGPUBinaryOptions().print(os); // {a=1 b=x ...}
  llvm::StringSet<> names;
  SmallVector<StringRef> fields;
  StringRef(text).trim("{} ").split(fields, ' ', -1, /*KeepEmpty=*/false);
  for (StringRef f : fields)
    names.insert(f.split('=').first);
  return names;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // `--chip=sm_80`, `--threads=128`, ...: an option of the pipeline goes to
  // the pipeline's own parser (as norm-opt's --norm-to-gpu-binary="..."
  // would take it); the rest to norm-compile's.
  llvm::StringSet<> pipelineNames = pipelineOptionNames();
  SmallVector<const char *> ownArgs = {argv[0]};
  std::string pipelineText;
  for (int i = 1; i < argc; ++i) {
    StringRef arg(argv[i]);
    auto [key, value] = arg.ltrim('-').split('=');
    if (!arg.starts_with("-") || !pipelineNames.contains(key)) {
      ownArgs.push_back(argv[i]);
      continue;
    }
    bool hasValue = arg.contains('=');
    pipelineText += (key + "=" +
                     (!hasValue ? StringRef("true")
                                : value.contains(' ') ? ("\"" + value + "\"").str()
                                                      : value) +
                     " ")
                        .str();
  }
  std::string overview =
      "norm-compile: norm ops (an MLIR file or a spec) to GPU kernels and a "
      "launch manifest\n\nIt also takes every option of norm-opt's "
      "--norm-to-gpu-binary pipeline as --NAME=VALUE:";
  SmallVector<StringRef> sorted(pipelineNames.keys());
  llvm::sort(sorted);
  for (StringRef name : sorted)
    overview += (" --" + name).str();
  overview += "\n";
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(int(ownArgs.size()), ownArgs.data(), overview);
  std::unique_ptr<norm::NormToGPUBinaryOptions> options =
      norm::NormToGPUBinaryOptions::createFromString(pipelineText);
  if (!options) {
    llvm::errs() << "norm-compile: invalid pipeline options '" << pipelineText
                 << "'\n";
    return 2;
  }

  DialectRegistry registry;
  norm::registerNormDialects(registry);
  norm::registerNormPasses();
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // Diagnostics name the op; a dump of the whole function after each would
  // bury them.
  context.printOpOnDiagnostic(false);

  SmallVector<Argument> specArgs;
  norm::ManifestSpec specManifest;
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diag(sourceMgr, &context);
  OwningOpRef<ModuleOp> module;
  if (!op.empty()) {
    if (!inputFile.empty()) {
      llvm::errs() << "norm-compile: give an input file or --op, not both\n";
      return 2;
    }
    module = ModuleOp::create(UnknownLoc::get(&context));
    std::string error;
    FailureOr<func::FuncOp> fn = norm::buildSpecFunction(
        *module, specText(), *options, specArgs, specManifest, error, "--");
    if (failed(fn)) {
      if (!error.empty())
        llvm::errs() << "norm-compile: " << error << "\n";
      return 2;
    }
    if (emitMLIR) {
      fn->print(llvm::outs(), OpPrintingFlags().printNameLocAsPrefix());
      llvm::outs() << "\n";
      return 0;
    }
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
  // A file: the arguments take the names and roles of the norm op's
  // operands they are (dy, x, ..., dx), so the runtime can address them;
  // tensor input becomes buffer form with its results as output arguments.
  std::optional<norm::ManifestSpec> spec;
  if (!op.empty())
    spec = specManifest;
  FailureOr<norm::CompiledFunction> compiled =
      norm::compileLaunchable(*module, *options, specArgs, spec);
  if (failed(compiled))
    return 1;

  // Both files or neither: each is written to a temporary and renamed into
  // place (ToolOutputFile::keep) only when both were written without error.
  std::string error;
  auto out = openOutputFile(outputFile, &error);
  if (!out) {
    llvm::errs() << "norm-compile: " << error << "\n";
    return 1;
  }
  std::unique_ptr<llvm::ToolOutputFile> mf;
  if (!manifestFile.empty()) {
    mf = openOutputFile(manifestFile, &error);
    if (!mf) {
      llvm::errs() << "norm-compile: " << error << "\n";
      return 1;
    }
  }
  auto written = [&](llvm::ToolOutputFile &file, StringRef what) {
    file.os().flush();
    if (!file.os().has_error())
      return true;
    llvm::errs() << "norm-compile: cannot write the " << what << ": "
                 << file.os().error().message() << "\n";
    file.os().clear_error(); // else raw_fd_ostream aborts on close
    return false;
  };
  out->os() << compiled->image;
  bool ok = written(*out, "kernels");
  if (mf) {
    mf->os() << llvm::formatv("{0:2}",
                              llvm::json::Value(std::move(compiled->manifest)))
             << "\n";
    ok = written(*mf, "manifest") && ok;
  }
  if (!ok)
    return 1;
  out->keep();
  if (mf)
    mf->keep();
  return 0;
}
