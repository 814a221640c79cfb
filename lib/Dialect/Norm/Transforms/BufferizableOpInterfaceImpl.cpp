//===- BufferizableOpInterfaceImpl.cpp - bufferization of norm ops --------===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#include "norm/Dialect/Norm/Transforms/BufferizableOpInterfaceImpl.h"

#include "mlir/IR/DialectRegistry.h"

void mlir::norm::registerBufferizableOpInterfaceExternalModels(
    DialectRegistry &registry) {}
