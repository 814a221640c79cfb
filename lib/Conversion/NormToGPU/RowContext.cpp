//===- RowContext.cpp - what the parts of a row kernel share --------------===//
//
// Part of mlir-norm.
//
// The helpers every part of a row kernel uses: the columns of a lane's
// chunks in either layout, the row body cloned into the kernel, the unit
// stride view of a row memref for 16-byte accesses.
//
//===----------------------------------------------------------------------===//

#include "RowContext.h"
#include "Launch.h"

#include "norm/Conversion/NormToGPU/TargetCodegen.h"
#include "norm/Dialect/Norm/IR/StageContract.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::norm;

bool norm::isRowCacheBuffer(Value memref) {
  Operation *def = memref.getDefiningOp();
  return def && norm::isRowCache(def);
}

RowContext::RowContext(OpBuilder &b, Location loc, RowNest &nest,
                       gpu::LaunchOp launch)
    : b(b), loc(loc), nest(nest), g(nest.geometry), launch(launch),
      codegen(*nest.codegen), tid(launch.getThreadIds().x) {}

void RowContext::begin(const IRMapping &programMap, Value columnBase) {
  base = programMap;
  colBase = columnBase;
  lane = arith::RemUIOp::create(b, loc, tid, c(g.lanes));
  subgroup = arith::DivUIOp::create(b, loc, tid, c(g.lanes));
}

Value RowContext::c(int64_t v) { return cIndex(b, loc, v); }

bool RowContext::loadPrivate(OpBuilder &rb, Value arr, memref::LoadOp load,
                             std::optional<int64_t> k, int64_t e,
                             IRMapping &m) {
  if (!arr || !k)
    return false;
  Value at = cIndex(rb, loc, *k * g.vec + e);
  Value v = memref::LoadOp::create(rb, loc, arr, ValueRange{at});
  // A cache kept in the loaded type (storePrivate): extended at each use.
  // bf16 by its bits (the high half of the f32), which LLVM does not take
  // for the first column loop's fpext of the same value: with one fpext
  // for both it would keep that f32 value live across the row instead.
  if (v.getType() != load.getType()) {
    if (v.getType().isBF16() && load.getType().isF32()) {
      Value bits = arith::ExtUIOp::create(
          rb, loc, rb.getI32Type(),
          arith::BitcastOp::create(rb, loc, rb.getI16Type(), v));
      bits = arith::ShLIOp::create(
          rb, loc, bits,
          arith::ConstantIntOp::create(rb, loc, rb.getI32Type(), 16));
      v = arith::BitcastOp::create(rb, loc, rb.getF32Type(), bits);
    } else {
      v = arith::ExtFOp::create(rb, loc, load.getType(), v);
    }
  }
  m.map(load.getResult(), v);
  return true;
}

bool RowContext::storePrivate(OpBuilder &rb, Value arr, memref::StoreOp store,
                              std::optional<int64_t> k, int64_t e,
                              IRMapping &m) {
  if (!arr || !k)
    return false;
  Value value = store.getValue();
  // A cache kept in the loaded type holds the value before its (exact)
  // extension.
  if (cast<MemRefType>(arr.getType()).getElementType() != value.getType())
    value = value.getDefiningOp<arith::ExtFOp>().getIn();
  Value v = materialize(rb, value, m);
  Value at = cIndex(rb, loc, *k * g.vec + e);
  memref::StoreOp::create(rb, loc, v, arr, ValueRange{at});
  return true;
}

Value RowContext::columnOf(OpBuilder &rb, Value chunk, int64_t e) {
  auto ci = [&](int64_t v) { return cIndex(rb, loc, v); };
  auto inRow = [&](Value j) {
    return colBase ? arith::AddIOp::create(rb, loc, colBase, j) : j;
  };
  if (layout == Layout::Vector || g.vec == 1)
    return inRow(arith::AddIOp::create(
        rb, loc, arith::MulIOp::create(rb, loc, chunk, ci(g.vec)), ci(e)));
  // (chunk - lane) V + lane = k L V + lane.
  Value first = arith::AddIOp::create(
      rb, loc,
      arith::MulIOp::create(rb, loc,
                            arith::SubIOp::create(rb, loc, chunk, lane),
                            ci(g.vec)),
      lane);
  return inRow(arith::AddIOp::create(rb, loc, first, ci(e * g.lanes)));
}

bool RowContext::groupWhole(int64_t k) const {
  int64_t before = g.cluster > 1 ? (g.cluster - 1) * g.sliceColumns : 0;
  return before + (k + 1) * g.lanes * g.vec <= *g.n;
}

bool RowContext::chunkAlwaysInRow(int64_t k) const {
  int64_t numChunks = llvm::divideCeil(*g.n, g.vec);
  int64_t before =
      g.cluster > 1 ? (g.cluster - 1) * g.sliceColumns / g.vec : 0;
  return before + (k + 1) * g.lanes <= numChunks;
}

Value RowContext::rowChunk(OpBuilder &rb, Value chunk) {
  if (!colBase)
    return chunk;
  return arith::AddIOp::create(
      rb, loc, chunk,
      arith::DivUIOp::create(rb, loc, colBase, cIndex(rb, loc, g.vec)));
}

bool RowContext::groupInRange(std::optional<int64_t> k) const {
  if (!g.n)
    return false;
  // Vector layout: the chunk walk only visits chunks < ceil(N / V), so
  // only the last chunk of an N that is not a multiple of V is partial.
  if (layout == Layout::Vector && *g.n % g.vec == 0)
    return true;
  if (k)
    return groupWhole(*k);
  // A chunk loop: every group is whole when N is a multiple of L V.
  return *g.n % (g.lanes * g.vec) == 0;
}

Value RowContext::materialize(OpBuilder &rb, Value v, IRMapping &m) {
  if (Value mapped = m.lookupOrNull(v))
    return mapped;
  if (Value r = reduced.lookup(v)) {
    m.map(v, r);
    return r;
  }
  Operation *def = v.getDefiningOp();
  Block *rowBody = nest.rows.getBody();
  if (!def || !rowBody->getParentOp()->isAncestor(def) ||
      def == nest.rows.getOperation()) {
    Value outer = base.lookupOrDefault(v);
    m.map(v, outer);
    return outer;
  }
  for (Value operand : def->getOperands())
    materialize(rb, operand, m);
  Operation *copy = rb.clone(*def, m);
  (void)copy;
  return m.lookup(v);
}

bool RowContext::isRowAccess(Operation *op, scf::ForOp loop, Value memref,
                             ValueRange indices) {
  // (A thread's own storage, row caches and partial rows, is never at
  // [r, j] or a row cache's [j].)
  auto type = dyn_cast<MemRefType>(memref.getType());
  if (!type)
    return false;
  if (isRowCacheBuffer(memref))
    return false;
  if (type.getRank() == 2 && indices.size() == 2)
    return indices[0] == nest.rows.getInductionVar() &&
           indices[1] == loop.getInductionVar();
  return type.getRank() == 1 && indices.size() == 1 &&
         indices[0] == loop.getInductionVar();
}

Value RowContext::loadChunk(OpBuilder &rb, Value mem, ValueRange at) {
  auto type = cast<MemRefType>(mem.getType());
  return vector::LoadOp::create(
      rb, loc, VectorType::get({g.vec}, type.getElementType()),
      unitInnerStride(rb, base.lookupOrDefault(mem)), at,
      /*nontemporal=*/false, llvm::MaybeAlign(g.vectorBytes));
}

/// `mem` with a static unit innermost stride. A 16-byte access runs only
/// when the block's `aligned` check found every innermost stride to be 1,
/// so a memref whose type leaves it dynamic is viewed as one that says so
/// (vector.load and vector.store require it in the type). A
/// reinterpret_cast, not a memref.cast: canonicalisation folds a cast into
/// the vector access and brings the dynamic stride back.
Value RowContext::unitInnerStride(OpBuilder &rb, Value mem) {
  auto type = cast<MemRefType>(mem.getType());
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) || strides.empty() ||
      strides.back() == 1)
    return mem;
  strides.back() = 1;
  auto layout = StridedLayoutAttr::get(rb.getContext(), offset, strides);
  auto unit = MemRefType::get(type.getShape(), type.getElementType(), layout,
                              type.getMemorySpace());
  auto meta = memref::ExtractStridedMetadataOp::create(rb, loc, mem);
  auto mixed = [&](int64_t v, Value dynamic) -> OpFoldResult {
    if (ShapedType::isDynamic(v))
      return dynamic;
    return rb.getIndexAttr(v);
  };
  SmallVector<OpFoldResult> sizes, unitStrides;
  for (auto [i, d] : llvm::enumerate(type.getShape()))
    sizes.push_back(mixed(d, meta.getSizes()[i]));
  for (auto [i, st] : llvm::enumerate(strides))
    unitStrides.push_back(mixed(st, meta.getStrides()[i]));
  return memref::ReinterpretCastOp::create(
      rb, loc, unit, mem, mixed(offset, meta.getOffset()), sizes,
      unitStrides);
}

Value RowContext::byteAddress(OpBuilder &rb, Value mem, ValueRange indices) {
  Value km = base.lookupOrDefault(mem);
  auto type = cast<MemRefType>(km.getType());
  auto meta = memref::ExtractStridedMetadataOp::create(rb, loc, km);
  Value elem = meta.getOffset();
  for (auto [i, index] : llvm::enumerate(indices))
    elem = arith::AddIOp::create(
        rb, loc, elem,
        arith::MulIOp::create(rb, loc, index, meta.getStrides()[i]));
  Value ptr = memref::ExtractAlignedPointerAsIndexOp::create(rb, loc, km);
  Value address = arith::AddIOp::create(
      rb, loc, ptr,
      arith::MulIOp::create(
          rb, loc, elem,
          cIndex(rb, loc, type.getElementTypeBitWidth() / 8)));
  return arith::IndexCastUIOp::create(rb, loc, rb.getI64Type(), address);
}

Value RowContext::sharedElement(OpBuilder &rb, Value buffer, Value index,
                                int64_t bytes) {
  Value start = arith::IndexCastUIOp::create(
      rb, loc, rb.getI64Type(),
      memref::ExtractAlignedPointerAsIndexOp::create(rb, loc, buffer));
  Value offset = arith::MulIOp::create(
      rb, loc, arith::IndexCastUIOp::create(rb, loc, rb.getI64Type(), index),
      arith::ConstantIntOp::create(rb, loc, bytes, 64));
  return codegen.sharedPointer(rb, loc,
                               arith::AddIOp::create(rb, loc, start, offset));
}

// Prefetching rows ahead keeps DRAM busy while the block reduces and writes
// the row it works on: a register-regime block issues its loads for one
// row (or S) at a time, so its bytes in flight drop to nothing between
// rows. One thread asks for a whole row (the block's slice with a
// cluster), a 16-byte aligned range: the vector layout with aligned rows.
void RowContext::prefetchRow(OpBuilder &rb, Value row, Value issue) {
  if (!g.prefetch || layout != Layout::Vector || !g.n ||
      readRowMemrefs.empty())
    return;
  Value when = knownAligned ? issue
                            : arith::AndIOp::create(rb, loc, issue, aligned);
  scf::IfOp::create(rb, loc, when, [&](OpBuilder &ib, Location) {
    Value n = cIndex(ib, loc, *g.n);
    Value first = colBase ? colBase : cIndex(ib, loc, 0);
    Value span = n;
    if (colBase)
      span = arith::MinUIOp::create(
          ib, loc, arith::SubIOp::create(ib, loc, n, colBase),
          cIndex(ib, loc, g.sliceColumns));
    for (Value mem : readRowMemrefs) {
      auto type = cast<MemRefType>(mem.getType());
      Value eltBytes = cIndex(ib, loc, type.getElementTypeBitWidth() / 8);
      Value address = byteAddress(ib, mem, ValueRange{row, first});
      Value bytes = arith::MulIOp::create(ib, loc, span, eltBytes);
      codegen.prefetchL2(
          ib, loc, address,
          arith::IndexCastUIOp::create(ib, loc, ib.getI32Type(), bytes));
    }
    scf::YieldOp::create(ib, loc);
  });
}

int64_t RowContext::partialVectorWidth(Type element) const {
  if (layout != Layout::Vector || g.vec == 1 || !g.n)
    return 0;
  int64_t width = std::min<int64_t>(
      g.vec, g.vectorBytes / (element.getIntOrFloatBitWidth() / 8));
  if (width < 2 || g.vec % width != 0 || *g.n % g.vec != 0)
    return 0;
  return width;
}

void RowContext::storePartialChunk(OpBuilder &rb, Value ws, Value program,
                                   Value j0, ArrayRef<Value> sums,
                                   int64_t width, bool final) {
  Type t = sums.front().getType();
  auto vt = VectorType::get({width}, t);
  Value mem = unitInnerStride(rb, ws);
  for (int64_t e0 = 0; e0 < int64_t(sums.size()); e0 += width) {
    Value v = vector::FromElementsOp::create(rb, loc, vt,
                                             sums.slice(e0, width));
    Value j = arith::AddIOp::create(rb, loc, j0, cIndex(rb, loc, e0));
    auto store = vector::StoreOp::create(
        rb, loc, v, mem, ValueRange{program, j},
        /*nontemporal=*/false,
        llvm::MaybeAlign(width * t.getIntOrFloatBitWidth() / 8));
    if (final)
      markFinalPartial(store);
  }
}
