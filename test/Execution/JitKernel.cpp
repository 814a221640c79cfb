//===- JitKernel.cpp - test kernels lowered and JIT-compiled by MLIR ------===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#include "Kernel.h"

#include "norm/InitNorm.h"

#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

using namespace norm_exec;

Kernel::~Kernel() = default;

void norm_exec::initializeJit() {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  mlir::norm::registerNormAndUpstreamPasses();
}

namespace {

/// A compiled `_mlir_ciface_kernel`, called through its packed wrapper.
class JitKernel : public Kernel {
public:
  JitKernel(std::unique_ptr<mlir::ExecutionEngine> engine,
            void (*entry)(void **), std::vector<Operand> operands)
      : engine(std::move(engine)), entry(entry), operands(std::move(operands)) {
  }

  void run(Bindings &buffers) override {
    // The C interface takes a pointer to each descriptor; the packed
    // wrapper takes a pointer to each argument.
    llvm::SmallVector<void *> descriptors;
    for (Operand o : operands)
      descriptors.push_back(bound(buffers, o)->descriptor());
    llvm::SmallVector<void *> args;
    for (void *&d : descriptors)
      args.push_back(&d);
    entry(args.data());
  }

private:
  std::unique_ptr<mlir::ExecutionEngine> engine;
  void (*entry)(void **);
  std::vector<Operand> operands;
};

llvm::Error failure(llvm::StringRef stage, const std::string &diagnostics) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 stage + ": " + diagnostics);
}

/// Parses and lowers the kernel; diagnostics go to `diag`.
mlir::OwningOpRef<mlir::ModuleOp> lowerKernel(mlir::MLIRContext &context,
                                              const std::string &source,
                                              const JitOptions &options,
                                              llvm::raw_ostream &diag,
                                              llvm::StringRef &stage) {
  stage = "parse";
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(source, &context, "kernel.mlir");
  if (!module)
    return nullptr;

  stage = "pipeline";
  mlir::FailureOr<mlir::OpPassManager> parsed =
      mlir::parsePassPipeline(options.pipeline, diag);
  if (mlir::failed(parsed))
    return nullptr;
  mlir::PassManager pm(&context, parsed->getOpAnchorName());
  static_cast<mlir::OpPassManager &>(pm) = std::move(*parsed);
  if (mlir::failed(pm.run(*module)))
    return nullptr;
  if (options.printLowered)
    module->print(llvm::errs());
  return module;
}

} // namespace

llvm::Expected<std::unique_ptr<Kernel>>
norm_exec::compileJitKernel(const KernelSpec &spec, const JitOptions &options) {
  mlir::DialectRegistry registry;
  mlir::norm::registerNormDialects(registry);
  mlir::MLIRContext context(registry, mlir::MLIRContext::Threading::DISABLED);

  std::string diagnostics;
  llvm::raw_string_ostream diag(diagnostics);
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    diag << d.getLocation() << ": " << d << "\n";
    for (mlir::Diagnostic &note : d.getNotes())
      diag << "  note: " << note << "\n";
    return mlir::success();
  });

  llvm::StringRef stage;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      lowerKernel(context, kernelSource(spec), options, diag, stage);
  if (!module)
    return failure(stage, diagnostics);

  // The transformer is called when the module is compiled, at the lookup
  // below: it must live until then.
  auto transformer =
      mlir::makeOptimizingTransformer(options.optLevel, 0, nullptr);
  llvm::SmallVector<llvm::StringRef> libs(options.sharedLibs.begin(),
                                          options.sharedLibs.end());
  mlir::ExecutionEngineOptions engineOptions;
  engineOptions.transformer = transformer;
  engineOptions.jitCodeGenOptLevel =
      static_cast<llvm::CodeGenOptLevel>(std::min(options.optLevel, 3u));
  engineOptions.sharedLibPaths = libs;
  engineOptions.enableGDBNotificationListener = false;
  engineOptions.enablePerfNotificationListener = false;

  auto engine = mlir::ExecutionEngine::create(*module, engineOptions);
  if (!engine)
    return failure("jit",
                   llvm::toString(engine.takeError()) + "\n" + diagnostics);
  (*engine)->initialize();
  auto entry = (*engine)->lookupPacked("_mlir_ciface_kernel");
  if (!entry)
    return failure("jit lookup", llvm::toString(entry.takeError()));
  return std::make_unique<JitKernel>(std::move(*engine), *entry,
                                     kernelOperands(spec));
}
