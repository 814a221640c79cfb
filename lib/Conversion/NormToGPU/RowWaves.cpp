//===- RowWaves.cpp - the program's rows in waves of S --------------------===//
//
// Part of mlir-norm.
//
// The row walk of every kernel whose partial rows are not updated in global
// memory: the program's rows in waves of S (Geometry::rows), sub-group s of
// the block on row `wave + s`. Every thread runs the same number of
// iterations, so barriers and shuffles are uniform; sub-groups past the last
// row idle (their column loops are skipped, their sums are the loops'
// initial values). For each op of the row body: a column loop under the
// row's guard (with results: then the in-row reduction of them), the lock
// protocol's ops, and a per-row side effect (the forward's mean / rstd) on
// the row's lane 0 (the reduction may narrow that to one block).
//
//===----------------------------------------------------------------------===//

#include "Launch.h"
#include "RowStrategies.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace mlir::norm;

namespace {

class Waves final : public RowWalk {
public:
  Waves(RowContext &ctx, InRowReduction &reduction, LockProtocol &lock)
      : ctx(ctx), reduction(reduction), lock(lock) {}

  void emitRows(ColumnLoops &loops, Value lo, Value hi) override;

private:
  RowContext &ctx;
  InRowReduction &reduction;
  LockProtocol &lock;
};

} // namespace

void Waves::emitRows(ColumnLoops &loops, Value lo, Value hi) {
  OpBuilder &b = ctx.b;
  Location loc = ctx.loc;
  RowNest &nest = ctx.nest;
  Block *rowBody = nest.rows.getBody();
  // Geometry::pipeline: the first wave's rows loaded before the walk.
  // The ring (async-rows): the first D waves' rows copied into shared
  // memory before the walk.
  if (ctx.pipelining() && ctx.asyncStages) {
    ctx.issueFirstWaves(b, lo, hi);
  } else if (ctx.pipelining()) {
    Value first = arith::AddIOp::create(b, loc, lo, ctx.subgroup);
    ctx.preloadRow(b, first,
                   arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                         first, hi));
  }
  // Waves of S rows: every thread runs the same number of iterations, so
  // barriers and shuffles are uniform; sub-groups past `hi` idle.
  auto waves = scf::ForOp::create(b, loc, lo, hi, ctx.c(ctx.g.rows));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(waves.getBody()->getTerminator());
  Value rowIV =
      arith::AddIOp::create(b, loc, waves.getInductionVar(), ctx.subgroup);
  Value rowActive =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, rowIV, hi);
  ctx.base.map(nest.rows.getInductionVar(), rowIV);
  Value laneZero = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                         ctx.lane, ctx.c(0));
  Value sideEffects = reduction.beginRow(waves.getInductionVar(), lo,
                                          ctx.g.rows, laneZero);
  ctx.takePreloaded(b, waves.getInductionVar(), lo);
  // The next wave's row, loaded ahead right after this row's first column
  // loop has taken its values (before the in-row sums).
  auto preloadNext = [&](scf::ForOp loop) {
    if (!ctx.pipelining() || loop != ctx.pipeLoop)
      return;
    if (ctx.asyncStages) {
      ctx.issueAhead(b, rowIV, hi);
      return;
    }
    Value next = arith::AddIOp::create(b, loc, rowIV, ctx.c(ctx.g.rows));
    ctx.preloadRow(b, next,
                   arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                         next, hi));
  };
  if (ctx.g.prefetch) {
    // The row `prefetch` waves ahead, by its sub-group's lane 0.
    Value ahead = arith::AddIOp::create(
        b, loc, rowIV, ctx.c(ctx.g.prefetch * ctx.g.rows));
    ctx.prefetchRow(
        b, ahead,
        arith::AndIOp::create(b, loc, laneZero,
                              arith::CmpIOp::create(
                                  b, loc, arith::CmpIPredicate::ult, ahead, hi)));
  }

  for (Operation &op : rowBody->without_terminator()) {
    if (auto loop = dyn_cast<scf::ForOp>(op)) {
      if (loop.getNumResults()) {
        auto ifOp = scf::IfOp::create(b, loc, loop.getResultTypes(), rowActive,
                                      /*withElseRegion=*/true);
        OpBuilder tb = ifOp.getThenBodyBuilder();
        IRMapping m = ctx.base;
        SmallVector<Value> carried;
        loops.emitColumnLoop(tb, loop, m, /*active=*/{}, carried);
        yieldFrom(tb, loc, carried);
        OpBuilder eb = ifOp.getElseBodyBuilder();
        IRMapping m2 = ctx.base;
        SmallVector<Value> inits;
        for (Value init : loop.getInitArgs())
          inits.push_back(ctx.materialize(eb, init, m2));
        yieldFrom(eb, loc, inits);
        preloadNext(loop);
        SmallVector<Value> sums = reduction.reduce(ifOp.getResults());
        for (auto [res, s] : llvm::zip(loop.getResults(), sums))
          ctx.reduced[res] = s;
        continue;
      }
      scf::IfOp::create(b, loc, rowActive, [&](OpBuilder &ib, Location) {
        IRMapping m = ctx.base;
        SmallVector<Value> none;
        loops.emitColumnLoop(ib, loop, m, /*active=*/{}, none);
        scf::YieldOp::create(ib, loc);
      });
      preloadNext(loop);
      continue;
    }
    if (lock.emit(op, rowActive))
      continue;
    if (isMemoryEffectFree(&op) || isa<memref::LoadOp>(op))
      continue; // materialised where used
    // A per-row side effect (the forward's mean / rstd stores): lane 0.
    scf::IfOp::create(b, loc,
                      arith::AndIOp::create(b, loc, rowActive, sideEffects),
                      [&](OpBuilder &ib, Location) {
                        IRMapping m = ctx.base;
                        for (Value operand : op.getOperands())
                          ctx.materialize(ib, operand, m);
                        ib.clone(op, m);
                        scf::YieldOp::create(ib, loc);
                      });
  }
  b.setInsertionPointAfter(waves);
  reduction.endRows();
}

std::unique_ptr<RowWalk> norm::makeWaves(RowContext &ctx,
                                         InRowReduction &reduction,
                                         LockProtocol &lock) {
  return std::make_unique<Waves>(ctx, reduction, lock);
}
