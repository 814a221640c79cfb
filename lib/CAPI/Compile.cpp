//===- Compile.cpp - norm-c/Compile.h ------------------------------------===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#include "norm-c/Compile.h"

#include "norm/Dialect/Norm/IR/NormDialect.h"
#include "norm/Dialect/Norm/Utils/NormFunction.h"
#include "norm/InitNorm.h"
#include "norm/Pipelines/Manifest.h"
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

int normCompile(const char *ir, size_t irSize, const char *options,
                NormCompileResult *result) {
  std::memset(result, 0, sizeof(*result));
  std::string diagnostics;
  llvm::raw_string_ostream diag(diagnostics);
  auto finish = [&](int rc) {
    result->diagnostics = copyString(diagnostics);
    return rc;
  };
  if (!ir) {
    diag << "normCompile: no IR\n";
    return finish(1);
  }

  DialectRegistry registry;
  norm::registerNormDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  context.printOpOnDiagnostic(false);
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
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
    return success();
  });

  norm::NormToGPUBinaryOptions pipelineOptions;
  if (options && *options && failed(pipelineOptions.parseFromString(options))) {
    diag << "normCompile: cannot parse the options '" << options
         << "' (those of norm-to-gpu-binary, e.g. \"chip=sm_90 format=isa\")\n";
    return finish(1);
  }
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(llvm::StringRef(ir, irSize), &context);
  if (!module)
    return finish(1);
  auto roles = norm::manifestArgumentsFromOps(*module);

  PassManager pm(&context);
  norm::buildNormToGPUBinaryPipeline(pm, pipelineOptions);
  if (failed(pm.run(*module)))
    return finish(1);

  SmallVector<func::FuncOp> funcs;
  module->walk([&](func::FuncOp f) {
    if (f->hasAttr("norm.kernels"))
      funcs.push_back(f);
  });
  if (funcs.size() != 1) {
    diag << "normCompile: expected one function with norm ops, got "
         << funcs.size() << "\n";
    return finish(1);
  }
  func::FuncOp fn = funcs.front();
  for (BlockArgument arg : fn.getArguments())
    if (!isa<MemRefType>(arg.getType())) {
      diag << "normCompile: argument #" << arg.getArgNumber() << " of @"
           << fn.getName() << " is " << arg.getType()
           << "; a launchable function takes memref arguments only\n";
      return finish(1);
    }
  gpu::BinaryOp binary = norm::kernelBinaryOf(*module, fn);
  if (!binary) {
    diag << "normCompile: no kernels for @" << fn.getName() << "\n";
    return finish(1);
  }
  auto object = cast<gpu::ObjectAttr>(binary.getObjects().getValue().front());
  llvm::StringRef image = object.getObject().getValue();
  std::string manifest = llvm::formatv(
      "{0:2}", llvm::json::Value(norm::buildManifest(
                   fn, pipelineOptions, roles.lookup(fn.getName()))));
  result->image = copyString(image);
  result->imageSize = image.size();
  result->manifest = copyString(manifest);
  result->functionName = copyString(fn.getName());
  return finish(0);
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
