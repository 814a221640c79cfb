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
  Value per = arith::DivUIOp::create(b, loc, c(kPartialElements), safeN);
  // groupCap: the largest of kGroupCaps whose G * N fits the budget, each
  // candidate kept (times 1) when per reaches it, else dropped (times 0).
  Value cap = c(kGroupCaps[0]);
  for (int64_t candidate : {kGroupCaps[1], kGroupCaps[2]}) {
    Value reached = arith::MinUIOp::create(
        b, loc, arith::DivUIOp::create(b, loc, per, c(candidate)), one);
    cap = arith::MaxUIOp::create(
        b, loc, cap, arith::MulIOp::create(b, loc, reached, c(candidate)));
  }
  Value r = arith::CeilDivUIOp::create(b, loc, c(kMinProgramElements), safeN);
  Value byRows = arith::CeilDivUIOp::create(b, loc, m, r);
  Value fill = arith::MinUIOp::create(b, loc, m, c(kMinPrograms));
  byRows = arith::MaxUIOp::create(b, loc, byRows, fill);
  Value g = arith::MinUIOp::create(b, loc, cap, byRows);
  // Wide rows, few of them: at most kWidePrograms programs.
  auto cmp = [&](arith::CmpIPredicate p, Value l, int64_t r) {
    return arith::CmpIOp::create(b, loc, p, l, c(r)).getResult();
  };
  Value wide = arith::AndIOp::create(
      b, loc, cmp(arith::CmpIPredicate::ule, per, kMinGroupCap),
      arith::AndIOp::create(
          b, loc, cmp(arith::CmpIPredicate::ugt, m, kMinPrograms),
          cmp(arith::CmpIPredicate::ule, m, kWideRows * kWidePrograms)));
  g = arith::SelectOp::create(
      b, loc, wide, arith::MinUIOp::create(b, loc, g, c(kWidePrograms)), g);
  return arith::MaxUIOp::create(b, loc, g, one);
}
