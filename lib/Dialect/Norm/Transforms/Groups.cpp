//===- Groups.cpp - how many partial rows the dw/db reduction uses --------===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#include "norm/Dialect/Norm/Transforms/Groups.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;

Value norm::emitDefaultGroups(OpBuilder &b, Location loc, Value m, Value n) {
  auto c = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v).getResult();
  };
  Value one = c(1);
  Value safeN = arith::MaxUIOp::create(b, loc, n, one);
  Value cap = arith::DivUIOp::create(b, loc, c(kPartialElements), safeN);
  cap = arith::MaxUIOp::create(b, loc, cap, c(kMinGroupCap));
  cap = arith::MinUIOp::create(b, loc, cap, c(kMaxGroupCap));
  Value byRows = arith::CeilDivUIOp::create(b, loc, m, c(kMinRowsPerGroup));
  Value fill = arith::MinUIOp::create(b, loc, m, c(kMinPrograms));
  byRows = arith::MaxUIOp::create(b, loc, byRows, fill);
  Value g = arith::MinUIOp::create(b, loc, cap, byRows);
  return arith::MaxUIOp::create(b, loc, g, one);
}
