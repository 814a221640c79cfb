//===- FusePartials.cpp - NormFusePartials pass ---------------------------------------===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#include "norm/Dialect/Norm/Transforms/Passes.h"

namespace mlir::norm {
#define GEN_PASS_DEF_NORMFUSEPARTIALS
#include "norm/Dialect/Norm/Transforms/Passes.h.inc"
} // namespace mlir::norm

using namespace mlir;

namespace {
struct FusePartialsPass : public norm::impl::NormFusePartialsBase<FusePartialsPass> {
  using Base::Base;
  void runOnOperation() override {}
};
} // namespace
