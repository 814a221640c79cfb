//===- Kernels.h - the kernel builders of norm-map-to-gpu -------*- C++ -*-===//
//
// Part of mlir-norm. Private to lib/Conversion/NormToGPU: what the pass
// (NormToGPU.cpp) calls, one builder per kernel kind. Each launches the
// kernel in place of its nest; the pass records it and erases the nest.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_LIB_CONVERSION_NORMTOGPU_KERNELS_H
#define NORM_LIB_CONVERSION_NORMTOGPU_KERNELS_H

#include "norm/Conversion/NormToGPU/Geometry.h"
#include "norm/Conversion/NormToGPU/TargetInfo.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace mlir::norm {

struct TargetInfo;
class TargetCodegen;

/// `zero` (ZeroKernel.cpp): a block per partial row, threads over columns.
void buildZeroKernel(scf::ForOp nest, StringRef name, int64_t threads);

/// `reduce` (ReduceKernel.cpp): a block per `columns` columns, whose
/// kReduceSlices slices of threads take the partial rows w = slice,
/// slice + 8, ... . The slices fix the order of the sums, and with it every
/// bit of dweight / dbias; the columns a block and the rows a batch do not.
inline constexpr int64_t kReduceSlices = 8;
/// The kernel is bound by the loads it keeps in flight, not by bandwidth:
/// N x 8 threads each hold a batch of partial rows (LayerNorm bf16
/// 16384 x 2048, G = 512: 12.4 us at 14-20% of DRAM, ncu, H100, with 8
/// rows a batch, all loaded, then added, the next batch's loads only after
/// the adds; ptxas kept 7-8 of them in flight). The batches are now
/// software-pipelined (the next one's loads go out before this one's
/// adds), kReduceUnroll rows a batch: A/B against the kernel before, every
/// bit equal (H100, plans reduce / reduce-holdout, 264 backward kernels):
/// 16 rows 1.021x / 1.020x, 8 for LayerNorm's two sums (16 loads a
/// batch) 1.017x / 1.015x; up to 1.11x where N <= 4096 and G = 512.
inline constexpr int64_t kReduceUnroll = 16;
/// Batches a thread of `reduce` carries: a step adds the batch loaded
/// this many steps before, so the later ones stay in flight meanwhile.
inline constexpr int64_t kReduceDepth = 2;
/// The batches of a reduce kernel summing at most `largestGroups` partial
/// rows (0: unknown): where a thread has at most kReduceUnroll rows (G <=
/// 128), nothing is left to overlap, so 8 rows a batch added in the step
/// that loads them (depth 0: the kernel before the pipeline, at 32-46
/// registers where the pipeline takes 96-114; few-row wide launches have
/// up to thousands of blocks, so the registers decide their waves: the
/// cross-section put them at 0.63-0.94x with the pipeline); else
/// kReduceUnroll rows a batch, kReduceDepth deep. `unroll` (the option;
/// 0: the rule's) sets the rows a batch either way.
struct ReduceBatches {
  int64_t unroll;
  int64_t depth;
};
inline ReduceBatches reduceBatches(int64_t largestGroups, int64_t unroll) {
  int64_t rows = (largestGroups + kReduceSlices - 1) / kReduceSlices;
  if (largestGroups > 0 && rows <= kReduceUnroll)
    return {unroll ? unroll : 8, 0};
  return {unroll ? unroll : kReduceUnroll, kReduceDepth};
}
/// Columns a block: the most of 32, 16 and 8 whose blocks still number the
/// chip's SMs (N = 2048 on 132 SMs: 16, 128 blocks where 32 gave 64, half
/// the chip idle), 8 below that (a slice then reads a 32-byte sector a
/// row). 32 where N is not known.
inline int64_t reduceColumns(std::optional<int64_t> n,
                             const TargetInfo &target) {
  if (!n)
    return 32;
  for (int64_t c : {32, 16})
    if ((*n + c - 1) / c >= target.sms)
      return c;
  return 8;
}
/// `sum` is the nest's sum over partial rows (checkReduceNestShape).
void buildReduceKernel(scf::ForOp nest, scf::ForOp sum, StringRef name,
                       int64_t columns, ReduceBatches batches);
/// Where G = 1 (M = 1 with the default groups), the dx kernel `dx`, which
/// writes the partial rows the reduce nest `nest` sums, finishes dweight /
/// dbias itself: at its end, where the partial rows' leading extent is 1,
/// its blocks (one program: `cluster` blocks, or one) meet at a barrier and
/// its threads do the reduce kernel's arithmetic for G = 1 on row 0 column
/// by column (the same operations in the same order: the same bits) and
/// the nest's stores. The runtime then skips the reduce launch (the
/// manifest's `skip_at_one_group`). Returns false, changing nothing, where
/// G is a constant other than 1 or the nest uses a value the launch cannot
/// have.
/// With `forwarded`, where every write of the partial rows in `dx` is a
/// column's final store (kFinalPartialAttr), each column is finished right
/// after its store from the stored value instead (no barrier, no load).
/// norm-map-to-gpu asks for it over a cluster by default (forward-finish =
/// 1): there it spares the cluster barrier and gained 1.07-1.13x at M = 1
/// on the H200, where in one block it was 1.00x on average and lost up to
/// 0.76x at N = 12288 (docs/NOTES.md, twenty-seventh session).
bool finishOneGroup(gpu::LaunchOp dx, scf::ForOp nest, scf::ForOp sum,
                    int64_t cluster, const TargetCodegen &codegen,
                    bool forwarded);
/// The partial rows the sum of a reduce nest loads (its first load's
/// memref); null if it loads none.
Value partialRowsOf(scf::ForOp sum);
/// A unit attribute a Partials home (RowStrategies.h) puts on the store
/// that writes a column of its program's partial row for the last time,
/// with its final value (the write-back's stores; not the running sums of
/// partial rows kept in global memory, stored again every row). Where
/// every write of the partial rows in the dx kernel carries it,
/// finishOneGroup finishes each column from the stored value, right after
/// its store, by the thread that stored it: no barrier, no load back.
/// norm-map-to-gpu removes every mark at its end.
inline constexpr llvm::StringLiteral kFinalPartialAttr = "norm.final_partial";
/// Marks `op` (a store of the write-back) with kFinalPartialAttr.
inline void markFinalPartial(Operation *op) {
  op->setAttr(kFinalPartialAttr, UnitAttr::get(op->getContext()));
}
/// Loads a thread of finishOneGroup has in flight a step: columns a step
/// times the partial rows a column sums (dweight's, dbias'), as many
/// columns as cover the thread's share of the row where that fits.
inline constexpr int64_t kFinishLoads = 32;
/// Columns a step where N or the block is not known.
inline constexpr int64_t kFinishColumns = 8;

/// The shapes the kernel builders accept (NestShapes.cpp): each returns an
/// error naming the nest for anything else. The row nest's check returns
/// its row loop, the reduce nest's its sum loop.
FailureOr<scf::ForOp> checkRowNestShape(scf::ForOp nest, bool forward);
LogicalResult checkZeroNestShape(scf::ForOp nest);
FailureOr<scf::ForOp> checkReduceNestShape(scf::ForOp nest);

/// Everything the row kernel (`dx`, `forward`) knows about one nest.
struct RowNest {
  scf::ForOp nest; // the tagged outer loop
  scf::ForOp rows; // the row loop (== nest for forward)
  Value programIV; // p (null for forward)
  bool forward = false;
  Geometry geometry;
  /// The chip's emitter (cluster barrier, distributed shared memory, fences).
  const TargetCodegen *codegen = nullptr;
  /// norm-map-to-gpu's `row-barriers` (RowReduceBlock.cpp): 0, 1 or 2.
  int64_t rowBarriers = 2;
  /// norm-map-to-gpu's `reread-fallback` (RowEmitter::emit): a forward
  /// kernel's interleaved body reads its row again instead of its cache.
  bool rereadFallback = true;
  /// norm-map-to-gpu's `async-rows` (RowPipeline.cpp): 0 to 4, cleared
  /// where the ring does not fit (ringFit).
  int64_t asyncRows = 0;
  /// Dynamic shared memory a block may give the ring past the geometry's
  /// own (ringFit's dynamicBudget; 0: the ring stays in static memory).
  int64_t ringDynamicBudget = 0;
};

/// Finds the row loop of a `dx` / `forward` nest (checkRowNestShape) and
/// checks that it accumulates in f32; changes nothing. Fails (with an error
/// on the nest) otherwise. The geometry is left for the caller to set.
FailureOr<RowNest> analyzeRowNest(scf::ForOp nest, bool forward);

/// The stores of the row body into the deterministic partial rows
/// (`ws[p, j]`, p the program), one per workspace, in body order.
SmallVector<memref::StoreOp> partialRowStores(RowNest &rn);

/// Every load of a row cache (`norm.row_cache`) in `rows` whose allocation
/// `which` selects becomes the load (and extension) the cache was filled
/// from, at the loading loop's column; the caches, and fills nothing else
/// uses, are erased (RowChunksLooped.cpp). The looped regime rereads every
/// row; the register regime the early rows dxEarlyRows reads late. With
/// `keepCaches`, only the accesses inside `rows` change, and the caches
/// stay for their other users (a copy of the row loop: the interleaved
/// body of a forward kernel, RowEmitter::emit).
void rereadRowCaches(scf::ForOp rows,
                     function_ref<bool(memref::AllocOp)> which,
                     bool keepCaches = false);

/// Launches the row kernel of `rn` with `rn.geometry` (RowKernel.cpp picks
/// its strategies; the looped chunk walk first turns the nest's row caches
/// back into loads of the row), and returns the launch.
gpu::LaunchOp buildRowKernel(RowNest &rn, StringRef name);

} // namespace mlir::norm

#endif // NORM_LIB_CONVERSION_NORMTOGPU_KERNELS_H
