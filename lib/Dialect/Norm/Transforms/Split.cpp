//===- Split.cpp - NormSplit pass ---------------------------------------===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#include "norm/Dialect/Norm/Transforms/Passes.h"

namespace mlir::norm {
#define GEN_PASS_DEF_NORMSPLIT
#include "norm/Dialect/Norm/Transforms/Passes.h.inc"
} // namespace mlir::norm

using namespace mlir;

namespace {
struct SplitPass : public norm::impl::NormSplitBase<SplitPass> {
  using Base::Base;
  void runOnOperation() override {}
};
} // namespace
