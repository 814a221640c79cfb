//===- RowKernel.cpp - the dx and forward kernels -------------------------===//
//
// Part of mlir-norm.
//
// The analysis of a row nest, and the one place where a row kernel's
// strategies are picked from its geometry (#norm.row_geometry, set by
// norm-choose-geometry) and its strategy: the chunk walk from the regime,
// the home of the partial rows from Geometry::partials (which may bring its
// own walk over the rows), the in-row reduction from Geometry::cluster, the
// lock protocol from the nest's norm.strategy. The core emitter
// (RowEmitter.cpp) builds the kernel with them.
//
//===----------------------------------------------------------------------===//

#include "Launch.h"
#include "RowEmitter.h"

#include "norm/Dialect/Norm/IR/StageContract.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::norm;

SmallVector<memref::StoreOp> norm::partialRowStores(RowNest &rn) {
  SmallVector<memref::StoreOp> partialStores;
  rn.rows.getBody()->walk([&](memref::StoreOp store) {
    if (store.getIndices().size() == 2 &&
        store.getIndices()[0] == rn.programIV &&
        !llvm::any_of(partialStores, [&](memref::StoreOp s) {
          return s.getMemRef() == store.getMemRef();
        }))
      partialStores.push_back(store);
  });
  return partialStores;
}

FailureOr<RowNest> norm::analyzeRowNest(scf::ForOp nest, bool forward) {
  FailureOr<scf::ForOp> rows = checkRowNestShape(nest, forward);
  if (failed(rows))
    return failure();
  // The row kernels' sums, partial rows and shared-memory scratch are f32
  // (and sized so by the geometry); an f64 accumulation is for the CPU
  // reference runs.
  if (Type acc = getAccumulateType(nest); acc && !acc.isF32())
    return nest.emitError()
           << "norm-map-to-gpu: the GPU kernels accumulate in f32, this nest "
              "in "
           << acc << " (accumulation_type other than f32 is for CPU runs)";
  RowNest rn;
  rn.nest = nest;
  rn.forward = forward;
  rn.rows = *rows;
  if (!forward)
    rn.programIV = nest.getInductionVar();
  return rn;
}

/// The strategies of the kernel `ctx` builds, from its geometry (the
/// attribute's verifier and checkGeometry have made sure they go
/// together: the looped regime keeps its partial rows, if any, in global
/// memory, and split over a cluster takes one row at a time (batch 1)).
static RowStrategies chooseStrategies(RowContext &ctx) {
  const Geometry &g = ctx.g;
  RowStrategies s;
  s.chunks = g.registers ? makeUnrolledChunks(ctx) : makeLoopedChunks(ctx);
  s.reduction =
      g.cluster > 1 ? makeClusterReduction(ctx) : makeBlockReduction(ctx);
  switch (g.partials) {
  case PartialsHome::None:
    s.home = std::make_unique<NoPartials>();
    break;
  case PartialsHome::Registers:
    s.home = makeRegisterPartials(ctx);
    break;
  case PartialsHome::Shared:
    s.home = makeSharedPartials(ctx);
    break;
  case PartialsHome::Global:
    s.home = makeGlobalPartials(ctx, *s.reduction);
    break;
  }
  if (getNestStrategy(ctx.nest.nest) == ReductionStrategy::Locked)
    s.lock = makeLockedProtocol(ctx);
  else
    s.lock = std::make_unique<NoLock>();
  s.rows = s.home->rowWalk();
  if (!s.rows) {
    s.waves = makeWaves(ctx, *s.reduction, *s.lock);
    s.rows = s.waves.get();
  }
  return s;
}

gpu::LaunchOp norm::buildRowKernel(RowNest &rn, StringRef name) {
  scf::ForOp nest = rn.nest;
  bool forward = rn.forward;
  OpBuilder b(nest);
  Location loc = nest.getLoc();
  const Geometry &g = rn.geometry;
  Value grid;
  Value m;
  if (forward) {
    m = nest.getUpperBound();
    grid = arith::CeilDivUIOp::create(b, loc, m, cIndex(b, loc, g.rows));
  } else {
    grid = nest.getUpperBound();
  }
  // A cluster of C consecutive blocks per program (a dx program's group of
  // rows, a forward block's row).
  if (g.cluster > 1)
    grid = arith::MulIOp::create(b, loc, grid, cIndex(b, loc, g.cluster));
  return createLaunch(
      b, loc, grid, g.threads, name,
      [&](OpBuilder &kb, gpu::LaunchOp launch) {
        RowContext ctx(kb, loc, rn, launch);
        RowStrategies strategies = chooseStrategies(ctx);
        strategies.chunks->prepare();
        Value p = strategies.reduction->programOf(kb, launch.getBlockIds().x);
        Value lo, hi;
        IRMapping pm;
        if (forward) {
          lo = arith::MulIOp::create(kb, loc, p, cIndex(kb, loc, g.rows));
          hi = arith::MinUIOp::create(
              kb, loc,
              arith::AddIOp::create(kb, loc, lo, cIndex(kb, loc, g.rows)), m);
        } else {
          // The program's row range, as the nest computes it.
          pm.map(rn.programIV, p);
          for (Operation &op : nest.getBody()->without_terminator())
            if (&op != rn.rows.getOperation())
              kb.clone(op, pm);
          lo = pm.lookupOrDefault(rn.rows.getLowerBound());
          hi = pm.lookupOrDefault(rn.rows.getUpperBound());
        }
        RowEmitter(ctx, strategies).emit(lo, hi, pm);
      },
      g.cluster);
}
