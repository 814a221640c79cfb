//===- GeometryAttr.cpp - the row geometry in the IR ----------------------===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#include "GeometryAttr.h"

#include "norm/Dialect/Norm/IR/NormOps.h"
#include "norm/Dialect/Norm/IR/StageContract.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::norm;

/// The narrowest element type among the row memrefs sets the chunk width.
static int64_t rowElementBytes(scf::ForOp rows) {
  int64_t bytes = 4;
  rows.walk([&](Operation *op) {
    Value mem;
    if (auto l = dyn_cast<memref::LoadOp>(op))
      mem = l.getMemRef();
    else if (auto s = dyn_cast<memref::StoreOp>(op))
      mem = s.getMemRef();
    auto t = mem ? dyn_cast<MemRefType>(mem.getType()) : MemRefType();
    if (t && t.getRank() == 2 && t.getElementType().isIntOrFloat())
      bytes = std::min<int64_t>(bytes, t.getElementTypeBitWidth() / 8);
  });
  return bytes;
}

static PartialSums partialSumsOf(std::optional<ReductionStrategy> strategy) {
  if (!strategy)
    return PartialSums::None;
  switch (*strategy) {
  case ReductionStrategy::Deterministic:
    return PartialSums::Deterministic;
  case ReductionStrategy::Locked:
    return PartialSums::Locked;
  default:
    return PartialSums::Atomic;
  }
}

/// The shape's parts every source shares: the knobs, and whether the row may
/// be split over a cluster.
static void finishShape(RowShape &shape, bool forward,
                        const GeometryKnobs &knobs) {
  shape.threads = knobs.threads;
  shape.maxRegisterElements = knobs.maxRegisterElements;
  shape.cluster = knobs.cluster;
  shape.batchRows = knobs.batchRows;
  shape.maxLanes = knobs.maxLanes;
  shape.trimIdleWarps = knobs.trimIdleWarps;
  shape.twoChunkRows = knobs.twoChunkRows;
  shape.registerPartials = knobs.registerPartials;
  shape.forward = forward;
  // A forward kernel has no partial rows (PartialSums::None): its row sums
  // (mean, the second moment) split like a dx kernel's, and each row's
  // statistics are the first block's.
  shape.splittable = shape.partials == PartialSums::Deterministic ||
                     shape.partials == PartialSums::None;
}

llvm::SmallPtrSet<Operation *, 4> norm::earlyRowCaches(RowNest &rn) {
  llvm::SmallPtrSet<Operation *, 4> early;
  rn.rows.walk([&](memref::StoreOp store) {
    if (auto alloc = store.getMemRef().getDefiningOp<memref::AllocOp>())
      if (isRowCache(alloc) && isEarlyRow(alloc))
        early.insert(alloc);
  });
  return early;
}

RowShape norm::rowShapeOf(RowNest &rn, const GeometryKnobs &knobs) {
  RowShape shape;
  // N: the column loops' bound (one, checked by checkRowNestShape).
  for (Operation &op : *rn.rows.getBody())
    if (auto loop = dyn_cast<scf::ForOp>(op)) {
      shape.n = getConstantIntValue(loop.getUpperBound());
      break;
    }
  shape.elementBytes = rowElementBytes(rn.rows);
  // Column vectors: rank-1 memrefs a column loop loads at its index.
  llvm::SmallPtrSet<Value, 2> columns;
  for (Operation &op : *rn.rows.getBody())
    if (auto loop = dyn_cast<scf::ForOp>(op))
      loop.walk([&](memref::LoadOp l) {
        Operation *def = l.getMemRef().getDefiningOp();
        if (l.getIndices().size() == 1 &&
            l.getIndices()[0] == loop.getInductionVar() &&
            !(def && isRowCache(def)))
          columns.insert(l.getMemRef());
      });
  shape.columnVectors = columns.size();
  shape.earlyRows = earlyRowCaches(rn).size();
  // A forward kernel's in-row sums: its column loops with results.
  if (rn.forward)
    for (Operation &op : *rn.rows.getBody())
      if (auto loop = dyn_cast<scf::ForOp>(op))
        shape.rowSums += loop.getNumResults() ? 1 : 0;
  // The strategy, as norm-split recorded it on the nest (never inferred
  // from the loops).
  shape.partials =
      rn.forward ? PartialSums::None : partialSumsOf(getNestStrategy(rn.nest));
  if (shape.partials == PartialSums::Deterministic)
    shape.partialRows = partialRowStores(rn).size();
  finishShape(shape, rn.forward, knobs);
  return shape;
}

std::optional<RowShape> norm::rowShapeOfOp(Operation *op,
                                           const GeometryKnobs &knobs) {
  // Partial rows: dweight and dbias, where the op has them.
  std::optional<int64_t> partialRows =
      llvm::TypeSwitch<Operation *, std::optional<int64_t>>(op)
          .Case([](LayerNormGradOp g) {
            return int64_t(g.hasDWeight()) +
                   int64_t(g.getDbias() || g.getDbiasOut());
          })
          .Case([](RMSNormGradOp g) { return int64_t(g.hasDWeight()); })
          .Case<LayerNormOp, RMSNormOp>([](Operation *) { return 0; })
          .Default([](Operation *) { return std::nullopt; });
  if (!partialRows)
    return std::nullopt;
  bool forward = isa<LayerNormOp, RMSNormOp>(op);
  RowShape shape;
  shape.columnVectors =
      llvm::TypeSwitch<Operation *, int64_t>(op)
          .Case([](LayerNormOp f) {
            return int64_t(bool(f.getWeight())) + int64_t(bool(f.getBias()));
          })
          .Case([](RMSNormOp f) { return int64_t(bool(f.getWeight())); })
          .Case<LayerNormGradOp, RMSNormGradOp>(
              [](auto g) { return int64_t(bool(g.getWeight())); })
          .Default([](Operation *) { return int64_t(0); });
  shape.rowSums = isa<LayerNormOp>(op) ? 2 : isa<RMSNormOp>(op) ? 1 : 0;
  // The rows the kernel reads and writes are the op's values of rank 2 and
  // more (rows collapse to M); the statistics are f32 and never narrower.
  for (Value v : llvm::concat<Value>(op->getOperands(), op->getResults())) {
    auto t = dyn_cast<ShapedType>(v.getType());
    if (!t || !t.hasRank() || t.getRank() < 2 ||
        !t.getElementType().isIntOrFloat())
      continue;
    shape.elementBytes =
        std::min<int64_t>(shape.elementBytes, t.getElementTypeBitWidth() / 8);
    if (!shape.n && !t.isDynamicDim(t.getRank() - 1))
      shape.n = t.getDimSize(t.getRank() - 1);
  }
  if (!forward && *partialRows > 0) {
    ReductionStrategy strategy =
        llvm::TypeSwitch<Operation *, ReductionStrategy>(op)
            .Case<LayerNormGradOp, RMSNormGradOp>(
                [](auto g) { return g.getStrategy(); })
            .Default([](Operation *) { return ReductionStrategy::Deterministic; });
    shape.partials = partialSumsOf(strategy);
    if (shape.partials == PartialSums::Deterministic)
      shape.partialRows = *partialRows;
  }
  finishShape(shape, forward, knobs);
  return shape;
}

static RowLayout toAttrLayout(RowLayouts l) {
  switch (l) {
  case RowLayouts::Vector:
    return RowLayout::Vector;
  case RowLayouts::Interleaved:
    return RowLayout::Interleaved;
  case RowLayouts::Both:
    return RowLayout::Both;
  }
  llvm_unreachable("unknown layout");
}

static RowPartials toAttrPartials(PartialsHome h) {
  switch (h) {
  case PartialsHome::None:
    return RowPartials::None;
  case PartialsHome::Registers:
    return RowPartials::Registers;
  case PartialsHome::Shared:
    return RowPartials::Shared;
  case PartialsHome::Global:
    return RowPartials::Global;
  }
  llvm_unreachable("unknown partials home");
}

RowGeometryAttr norm::toAttr(MLIRContext *context, const Geometry &g) {
  return RowGeometryAttr::get(
      context, g.registers ? RowRegime::Registers : RowRegime::Looped,
      g.threads, g.lanes, g.rows, g.vec,
      // A looped row split over a cluster keeps its slice's chunks a lane.
      g.registers || g.cluster > 1 ? g.chunksPerLane : 0,
      toAttrLayout(g.layouts), toAttrPartials(g.partials), g.cluster, g.batch,
      g.prefetch, g.partialVector, g.pipeline, g.narrowCache, g.holdColumns,
      g.sharedBytes,
      g.dynamicSharedBytes);
}

Geometry norm::fromAttr(RowGeometryAttr attr, const RowShape &s,
                        const TargetInfo &target) {
  Geometry g;
  g.registers = attr.getRegime() == RowRegime::Registers;
  g.threads = attr.getThreads();
  g.lanes = attr.getLanes();
  g.rows = attr.getRows();
  g.vec = attr.getVector();
  g.chunksPerLane = attr.getChunks();
  switch (attr.getLayout()) {
  case RowLayout::Vector:
    g.layouts = RowLayouts::Vector;
    break;
  case RowLayout::Interleaved:
    g.layouts = RowLayouts::Interleaved;
    break;
  case RowLayout::Both:
    g.layouts = RowLayouts::Both;
    break;
  }
  switch (attr.getPartials()) {
  case RowPartials::None:
    g.partials = PartialsHome::None;
    break;
  case RowPartials::Registers:
    g.partials = PartialsHome::Registers;
    break;
  case RowPartials::Shared:
    g.partials = PartialsHome::Shared;
    break;
  case RowPartials::Global:
    g.partials = PartialsHome::Global;
    break;
  }
  g.cluster = attr.getCluster();
  g.batch = attr.getBatch();
  g.prefetch = attr.getPrefetch();
  g.partialVector = attr.getPartialVector();
  g.pipeline = attr.getPipeline();
  g.narrowCache = attr.getNarrowCache();
  g.holdColumns = attr.getHoldColumns();
  completeGeometry(g, s, target);
  return g;
}
