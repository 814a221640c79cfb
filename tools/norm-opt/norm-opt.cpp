//===- norm-opt.cpp - mlir-opt for the norm dialect -----------------------===//
//
// Part of mlir-norm.
//
// Registers the norm dialect, its passes and pipelines, and the upstream
// dialects and passes those pipelines use: nothing else.
//
//===----------------------------------------------------------------------===//

#include "norm/InitNorm.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::norm::registerNormDialects(registry);
  mlir::norm::registerNormAndUpstreamPasses();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "mlir-norm optimizer driver\n", registry));
}
