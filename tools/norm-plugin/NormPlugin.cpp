//===- NormPlugin.cpp - norm as an mlir-opt plugin ------------------------===//
//
// Part of mlir-norm.
//
// Loaded by the stock mlir-opt with --load-dialect-plugin=<this library>
// (adds the norm dialect) and --load-pass-plugin=<this library> (adds the
// norm passes and pipelines).
//
//===----------------------------------------------------------------------===//

#include "norm/Dialect/Norm/Transforms/BufferizableOpInterfaceImpl.h"
#include "norm/InitNorm.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/Compiler.h"

extern "C" LLVM_ATTRIBUTE_WEAK mlir::DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "Norm", LLVM_VERSION_STRING,
          [](mlir::DialectRegistry *registry) {
            // The host tool registers every upstream dialect and interface;
            // ours are the dialect and its One-Shot Bufferize model (without
            // it, tensor-form input stops at "op was not bufferized").
            mlir::norm::registerNormDialect(*registry);
            mlir::norm::registerBufferizableOpInterfaceExternalModels(
                *registry);
          }};
}

extern "C" LLVM_ATTRIBUTE_WEAK mlir::PassPluginLibraryInfo
mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "NormPasses", LLVM_VERSION_STRING,
          []() { mlir::norm::registerNormPasses(); }};
}
