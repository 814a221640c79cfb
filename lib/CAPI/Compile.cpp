//===- Compile.cpp - norm-c/Compile.h ------------------------------------===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#include "norm-c/Compile.h"

#include "norm/Dialect/Norm/IR/NormDialect.h"
#include "norm/Dialect/Norm/Utils/NormFunction.h"
#include "norm/InitNorm.h"
#include "norm/Pipelines/Compile.h"
#include "norm/Pipelines/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <cstring>

using namespace mlir;

namespace {

char *copyString(llvm::StringRef s) {
  char *p = static_cast<char *>(std::malloc(s.size() + 1));
  if (!p)
    return nullptr;
  std::memcpy(p, s.data(), s.size());
  p[s.size()] = 0;
  return p;
}

} // namespace

namespace {

/// The frame both entry points share: a context with our dialects whose
/// diagnostics are collected as text, the pipeline options parsed, then
/// `compile`, whose result fills `result`.
int compileWith(
    const char *who, const char *options, NormCompileResult *result,
    llvm::function_ref<FailureOr<norm::CompiledFunction>(
        MLIRContext &, const norm::NormToGPUBinaryOptions &, llvm::raw_ostream &)>
        compile) {
  std::memset(result, 0, sizeof(*result));
  std::string diagnostics;
  llvm::raw_string_ostream diag(diagnostics);
  auto finish = [&](int rc) {
    result->diagnostics = copyString(diagnostics);
    return rc;
  };

  // The word "print-ir" is ours, not the pipeline's: it asks for the IR
  // of the operation each diagnostic is about (MLIR's "see current
  // operation" note). Without it, messages only.
  bool printIR = false;
  std::string pipelineText;
  for (llvm::StringRef rest = options ? options : ""; !rest.empty();) {
    auto [word, tail] = rest.ltrim().split(' ');
    rest = tail;
    if (word == "print-ir") {
      printIR = true;
      continue;
    }
    if (!word.empty())
      pipelineText += (pipelineText.empty() ? "" : " ") + word.str();
  }

  DialectRegistry registry;
  norm::registerNormDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  context.printOpOnDiagnostic(printIR);
  auto print = [&](Diagnostic &d) {
    d.getLocation().print(diag);
    diag << ": ";
    switch (d.getSeverity()) {
    case DiagnosticSeverity::Error:
      diag << "error: ";
      break;
    case DiagnosticSeverity::Warning:
      diag << "warning: ";
      break;
    default:
      diag << "note: ";
      break;
    }
    diag << d << "\n";
  };
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
    print(d);
    for (Diagnostic &note : d.getNotes())
      print(note);
    return success();
  });

  norm::NormToGPUBinaryOptions pipelineOptions;
  if (!pipelineText.empty() &&
      failed(pipelineOptions.parseFromString(pipelineText))) {
    diag << who << ": cannot parse the options '" << options
         << "' (those of norm-to-gpu-binary, e.g. \"chip=sm_90 format=isa\", "
            "and print-ir)\n";
    return finish(1);
  }
  FailureOr<norm::CompiledFunction> compiled =
      compile(context, pipelineOptions, diag);
  if (failed(compiled))
    return finish(1);
  llvm::StringRef image = compiled->image;
  std::string manifest = llvm::formatv(
      "{0:2}", llvm::json::Value(std::move(compiled->manifest)));
  result->image = copyString(image);
  result->imageSize = image.size();
  result->manifest = copyString(manifest);
  result->functionName = copyString(compiled->name);
  return finish(0);
}

} // namespace

int normCompile(const char *ir, size_t irSize, const char *options,
                NormCompileResult *result) {
  return compileWith(
      "normCompile", options, result,
      [&](MLIRContext &context, const norm::NormToGPUBinaryOptions &opts,
          llvm::raw_ostream &diag) -> FailureOr<norm::CompiledFunction> {
        if (!ir) {
          diag << "normCompile: no IR\n";
          return failure();
        }
        OwningOpRef<ModuleOp> module =
            parseSourceString<ModuleOp>(llvm::StringRef(ir, irSize), &context);
        if (!module)
          return failure();
        return norm::compileLaunchable(*module, opts);
      });
}

int normCompileSpec(const char *spec, const char *options,
                    NormCompileResult *result) {
  return compileWith(
      "normCompileSpec", options, result,
      [&](MLIRContext &context, const norm::NormToGPUBinaryOptions &opts,
          llvm::raw_ostream &diag) -> FailureOr<norm::CompiledFunction> {
        norm::NormSpecText text;
        std::string error;
        OwningOpRef<ModuleOp> module =
            ModuleOp::create(UnknownLoc::get(&context));
        FailureOr<norm::CompiledFunction> compiled = failure();
        if (succeeded(norm::parseNormSpecText(spec ? spec : "", text, error)))
          compiled = norm::compileSpec(*module, text, opts, error);
        if (!error.empty())
          diag << "normCompileSpec: " << error << "\n";
        return compiled;
      });
}

void normCompileResultDestroy(NormCompileResult *result) {
  if (!result)
    return;
  std::free(result->image);
  std::free(result->manifest);
  std::free(result->diagnostics);
  std::free(result->functionName);
  std::memset(result, 0, sizeof(*result));
}
