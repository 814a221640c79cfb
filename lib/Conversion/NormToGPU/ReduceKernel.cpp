//===- ReduceKernel.cpp - the fixed-order sum over the partial rows ---===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"
#include "Launch.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace mlir::norm;

/// `for j { s = sum over w of ws[w, j]; stores }`: a block per 32
/// columns; its 8 warps take the partial rows w = warp, warp + 8, ...
/// (kReduceUnroll of them loaded at once, the last step's rows past G
/// clamped and not added: the sum still in row order), then warp 0 adds
/// the 8 slices in order. A fixed order, so a fixed result.
void norm::buildReduceKernel(scf::ForOp nest, scf::ForOp sum,
                             StringRef name) {
  OpBuilder b(nest);
  Location loc = nest.getLoc();
  Value n = nest.getUpperBound();
  Value grid =
      arith::CeilDivUIOp::create(b, loc, n, cIndex(b, loc, kReduceColumns));
  createLaunch(
      b, loc, grid, kReduceColumns * kReduceSlices, name,
      [&](OpBuilder &kb, gpu::LaunchOp launch) {
        Value tid = launch.getThreadIds().x;
        Value lane = arith::RemUIOp::create(kb, loc, tid,
                                            cIndex(kb, loc, kReduceColumns));
        Value slice = arith::DivUIOp::create(kb, loc, tid,
                                             cIndex(kb, loc, kReduceColumns));
        Value j = arith::AddIOp::create(
            kb, loc,
            arith::MulIOp::create(kb, loc, launch.getBlockIds().x,
                                  cIndex(kb, loc, kReduceColumns)),
            lane);
        Value inRange =
            arith::CmpIOp::create(kb, loc, arith::CmpIPredicate::ult, j, n);
        IRMapping m;
        m.map(nest.getInductionVar(), j);
        // Ops before the sum (its initial values) are pure: clone them.
        for (Operation &op : nest.getBody()->without_terminator()) {
          if (&op == sum.getOperation())
            break;
          kb.clone(op, m);
        }
        SmallVector<Value> inits;
        for (Value v : sum.getInitArgs())
          inits.push_back(m.lookupOrDefault(v));
        auto ifOp = scf::IfOp::create(kb, loc, sum.getResultTypes(), inRange,
                                      /*withElseRegion=*/true);
        {
          OpBuilder tb = ifOp.getThenBodyBuilder();
          // kReduceUnroll partial rows a step, every load issued before
          // the adds: rows past the last are loaded clamped to it and not
          // added (the sum stays in row order, so no bit changes).
          Value ub = m.lookupOrDefault(sum.getUpperBound());
          Value lastRow =
              arith::SubIOp::create(tb, loc, ub, cIndex(tb, loc, 1));
          auto slices = scf::ForOp::create(
              tb, loc, slice, ub,
              cIndex(tb, loc, kReduceSlices * kReduceUnroll), inits,
              [&](OpBuilder &fb, Location, Value w0, ValueRange carried) {
                // The row's loads (every op of the sum's body that does not
                // need the running sums) for all kReduceUnroll rows first,
                // then the adds in row order: ptxas issues loads in the
                // order it is given them where their addresses are
                // clamped (seen: each add waited for its load before the
                // next load went out, 1.1-1.4x slower than the rolled 8).
                DenseSet<Operation *> chain;
                for (Operation &op : sum.getBody()->without_terminator())
                  if (llvm::any_of(op.getOperands(), [&](Value v) {
                        return llvm::is_contained(sum.getRegionIterArgs(),
                                                  v) ||
                               (v.getDefiningOp() &&
                                chain.contains(v.getDefiningOp()));
                      }))
                    chain.insert(&op);
                SmallVector<IRMapping> rowMaps;
                SmallVector<Value> valid;
                for (int64_t k = 0; k < kReduceUnroll; ++k) {
                  Value w = w0, ok;
                  if (k > 0) {
                    w = arith::AddIOp::create(
                        fb, loc, w0, cIndex(fb, loc, k * kReduceSlices));
                    ok = arith::CmpIOp::create(
                        fb, loc, arith::CmpIPredicate::ult, w, ub);
                    w = arith::MinUIOp::create(fb, loc, w, lastRow);
                  }
                  IRMapping bm = m;
                  bm.map(sum.getInductionVar(), w);
                  for (Operation &op : sum.getBody()->without_terminator())
                    if (!chain.contains(&op))
                      fb.clone(op, bm);
                  rowMaps.push_back(std::move(bm));
                  valid.push_back(ok);
                }
                SmallVector<Value> acc(carried.begin(), carried.end());
                for (int64_t k = 0; k < kReduceUnroll; ++k) {
                  IRMapping &bm = rowMaps[k];
                  for (auto [arg, v] : llvm::zip(sum.getRegionIterArgs(), acc))
                    bm.map(arg, v);
                  for (Operation &op : sum.getBody()->without_terminator())
                    if (chain.contains(&op))
                      fb.clone(op, bm);
                  for (auto [i, v] : llvm::enumerate(
                           sum.getBody()->getTerminator()->getOperands())) {
                    Value next = bm.lookupOrDefault(v);
                    acc[i] = valid[k] ? arith::SelectOp::create(
                                            fb, loc, valid[k], next, acc[i])
                                            .getResult()
                                      : next;
                  }
                }
                scf::YieldOp::create(fb, loc, acc);
              });
          scf::YieldOp::create(tb, loc, slices.getResults());
          OpBuilder eb = ifOp.getElseBodyBuilder();
          scf::YieldOp::create(eb, loc, inits);
        }
        // The 8 slices of each column meet in shared memory.
        SmallVector<Value> scratch;
        for (Type t : sum.getResultTypes()) {
          Value buf =
              addSharedBuffer(launch, {kReduceSlices, kReduceColumns}, t, loc);
          scratch.push_back(buf);
        }
        for (auto [buf, v] : llvm::zip(scratch, ifOp.getResults()))
          memref::StoreOp::create(kb, loc, v, buf, ValueRange{slice, lane});
        gpu::BarrierOp::create(kb, loc);
        Value first = arith::AndIOp::create(
            kb, loc, inRange,
            arith::CmpIOp::create(kb, loc, arith::CmpIPredicate::eq, slice,
                                  cIndex(kb, loc, 0)));
        scf::IfOp::create(kb, loc, first, [&](OpBuilder &ib, Location) {
          for (auto [res, buf] : llvm::zip(sum.getResults(), scratch)) {
            Value total = memref::LoadOp::create(
                ib, loc, buf, ValueRange{cIndex(ib, loc, 0), lane});
            for (int64_t q = 1; q < kReduceSlices; ++q)
              total = arith::AddFOp::create(
                  ib, loc, total,
                  memref::LoadOp::create(ib, loc, buf,
                                         ValueRange{cIndex(ib, loc, q), lane}));
            m.map(res, total);
          }
          bool after = false;
          for (Operation &op : nest.getBody()->without_terminator()) {
            if (&op == sum.getOperation()) {
              after = true;
              continue;
            }
            if (after)
              ib.clone(op, m);
          }
          scf::YieldOp::create(ib, loc);
        });
      });
}
