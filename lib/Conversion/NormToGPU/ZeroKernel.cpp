//===- ZeroKernel.cpp - the kernel that zeroes the partial rows ---===//
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

/// `for w { ...; for j { stores } }`: a block per w, threads over j.
void norm::buildZeroKernel(scf::ForOp nest, StringRef name, int64_t threads) {
  OpBuilder b(nest);
  Location loc = nest.getLoc();
  createLaunch(
      b, loc, nest.getUpperBound(), threads, name,
      [&](OpBuilder &kb, gpu::LaunchOp launch) {
        Value tid = launch.getThreadIds().x;
        IRMapping m;
        m.map(nest.getInductionVar(), launch.getBlockIds().x);
        for (Operation &op : nest.getBody()->without_terminator()) {
          auto loop = dyn_cast<scf::ForOp>(op);
          if (!loop && isMemoryEffectFree(&op)) {
            kb.clone(op, m);
            continue;
          }
          if (!loop) {
            // Per-row ops (the lock reset): thread 0.
            Value first = arith::CmpIOp::create(
                kb, loc, arith::CmpIPredicate::eq, tid, cIndex(kb, loc, 0));
            scf::IfOp::create(kb, loc, first, [&](OpBuilder &ib, Location) {
              ib.clone(op, m);
              scf::YieldOp::create(ib, loc);
            });
            continue;
          }
          auto strided = scf::ForOp::create(
              kb, loc, tid, m.lookupOrDefault(loop.getUpperBound()),
              cIndex(kb, loc, threads));
          m.map(loop.getInductionVar(), strided.getInductionVar());
          OpBuilder ib(strided.getBody()->getTerminator());
          for (Operation &inner : loop.getBody()->without_terminator())
            ib.clone(inner, m);
        }
      });
}
