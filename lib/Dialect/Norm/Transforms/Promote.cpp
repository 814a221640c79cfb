//===- Promote.cpp - NormPromote pass ---------------------------------------===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#include "norm/Dialect/Norm/Transforms/Passes.h"

namespace mlir::norm {
#define GEN_PASS_DEF_NORMPROMOTE
#include "norm/Dialect/Norm/Transforms/Passes.h.inc"
} // namespace mlir::norm

using namespace mlir;

namespace {
struct PromotePass : public norm::impl::NormPromoteBase<PromotePass> {
  using Base::Base;
  void runOnOperation() override {}
};
} // namespace
