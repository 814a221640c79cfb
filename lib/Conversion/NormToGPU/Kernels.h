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

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace mlir::norm {

struct TargetInfo;
class TargetCodegen;

/// `zero` (ZeroKernel.cpp): a block per partial row, threads over columns.
void buildZeroKernel(scf::ForOp nest, StringRef name, int64_t threads);

/// `reduce` (ReduceKernel.cpp): a block per kReduceColumns columns, whose
/// kReduceSlices warps take the partial rows w = slice, slice + 8, ...
inline constexpr int64_t kReduceColumns = 32;
inline constexpr int64_t kReduceSlices = 8;
/// Partial rows a thread of `reduce` loads before it adds them (in row
/// order: unrolling changes no bit). The kernel is latency-bound where
/// N / kReduceColumns blocks do not fill the chip: LayerNorm bf16 1024 x
/// 3072 (G = 512, 96 blocks, 64 rows a thread) took 15.3 us at 4, longer
/// than its dx kernel (11.9; ncu, long-scoreboard stalls, 11% of DRAM).
/// Every step is a full batch, its rows past G clamped and not added (an
/// unrolled loop with a rolled epilogue made up to 7 dependent round trips
/// more). ptxas keeps the kernel at 32 registers, 7-8 loads in flight a
/// thread whatever the batch: 16 a step, interleaved load / add in the
/// IR, issued each add before the next load (1.1-1.4x slower, LayerNorm
/// backward at G = 342-512, H200).
inline constexpr int64_t kReduceUnroll = 8;
/// `sum` is the nest's sum over partial rows (checkReduceNestShape).
void buildReduceKernel(scf::ForOp nest, scf::ForOp sum, StringRef name);

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
/// row; the register regime the early rows dxEarlyRows reads late.
void rereadRowCaches(scf::ForOp rows,
                     function_ref<bool(memref::AllocOp)> which);

/// Launches the row kernel of `rn` with `rn.geometry` (RowKernel.cpp picks
/// its strategies; the looped chunk walk first turns the nest's row caches
/// back into loads of the row), and returns the launch.
gpu::LaunchOp buildRowKernel(RowNest &rn, StringRef name);

} // namespace mlir::norm

#endif // NORM_LIB_CONVERSION_NORMTOGPU_KERNELS_H
