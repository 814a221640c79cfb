//===- RecomputeGraph.cpp - stored xhat -> x + statistics -----------------===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#include "norm/Dialect/Norm/Transforms/Transforms.h"

#include "mlir/IR/PatternMatch.h"

void mlir::norm::populateStoredXhatToRecomputePatterns(
    RewritePatternSet &patterns) {}
