//===- RowKernel.h - the row kernels (dx, forward) --------------*- C++ -*-===//
//
// Part of mlir-norm. Private to lib/Conversion/NormToGPU.
//
// A row kernel is a block per program (dx) or per S rows (forward); its rows
// go to sub-groups of L lanes, columns to lanes in chunks of V elements. The
// machinery every row kernel shares (RowKernel.cpp): materialising the row
// body, chunk accesses, in-row sums. What depends on the regime is behind
// the hooks of RowKernel: RowRegisters.cpp (K unrolled chunks per lane, row
// caches and partial sums in private arrays or shared memory) and
// RowLooped.cpp (a chunk loop, rows re-read, partial rows in global memory).
//
//===----------------------------------------------------------------------===//

#ifndef NORM_LIB_CONVERSION_NORMTOGPU_ROWKERNEL_H
#define NORM_LIB_CONVERSION_NORMTOGPU_ROWKERNEL_H

#include "Kernels.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/MapVector.h"

#include <memory>

namespace mlir::norm {

/// The stores of the row body into the deterministic partial rows
/// (`ws[p, j]`, p the program), one per workspace, in body order.
SmallVector<memref::StoreOp> partialRowStores(RowNest &rn);

/// A per-program row cache (norm.row_cache), by the value of the buffer.
bool isRowCacheBuffer(Value memref);

/// In the looped regime, row caches go back to re-reading the row.
void uncacheRows(scf::ForOp rows);

class RowKernel {
public:
  RowKernel(OpBuilder &b, Location loc, RowNest &nest, gpu::LaunchOp launch)
      : b(b), loc(loc), nest(nest), g(nest.geometry), launch(launch) {}
  virtual ~RowKernel() = default;

  /// Emits the kernel body for rows [lo, hi); `programMap` maps the
  /// program loop's values to the kernel's.
  void emit(Value lo, Value hi, const IRMapping &programMap);

  /// With a cluster (Geometry::cluster > 1): the block's rank in its
  /// cluster, whose slice of every row it owns (set before `emit`).
  Value slice;

protected:
  using ChunkBody =
      function_ref<void(OpBuilder &, Value chunk, std::optional<int64_t> k,
                        SmallVector<Value> &carried)>;

  //===--- Regime hooks ---------------------------------------------------===//

  /// Before the first wave: the thread's own storage (row caches, partial
  /// sums).
  virtual void allocateThreadStorage() {}
  /// Runs `body` on each of the lane's chunks of a column loop (`chunks`
  /// of them in the row), threading `carried` through. `rowsPerChunk`
  /// rows of a batch share each chunk.
  virtual void walkChunks(OpBuilder &rb, Value chunks,
                          SmallVector<Value> &carried, ChunkBody body) = 0;
  /// Whether `memref` (of the row body) is served from the thread's storage.
  virtual bool isThreadLocal(Value memref) const { return false; }
  /// A load / store of element e of chunk k in the thread's storage, if it
  /// is one; false otherwise.
  virtual bool emitLocalLoad(OpBuilder &rb, memref::LoadOp load,
                             std::optional<int64_t> k, int64_t e,
                             IRMapping &m) {
    return false;
  }
  virtual bool emitLocalStore(OpBuilder &rb, memref::StoreOp store,
                              std::optional<int64_t> k, int64_t e,
                              IRMapping &m) {
    return false;
  }
  /// After the last wave: the program's partial rows to the workspace.
  virtual void writePartialRows() {}

  //===--- Shared machinery -----------------------------------------------===//

  Value c(int64_t v);
  Value materialize(OpBuilder &rb, Value v, IRMapping &m);
  /// How a lane's chunks map to columns (the geometry's RowLayouts says
  /// which bodies a kernel has; with two, they sit under `scf.if` on the
  /// run-time `aligned`, the same for every block of a launch):
  ///   Vector:      j = chunk V + e          (V consecutive columns per
  ///                                          lane: one 16-byte access)
  ///   Interleaved: j = k L V + e L + lane   (element e of the L lanes is
  ///                                          L consecutive columns: each
  ///                                          warp access is coalesced)
  /// Rows that are not 16-byte aligned (odd N, odd strides, offsets) take
  /// the interleaved layout in every row, so a thread owns the same columns
  /// in every row (its row cache and partial sums stay in registers). Both
  /// cover group k's columns [k L V, (k + 1) L V) once. With V = 1 they
  /// are the same.
  enum class Layout { Vector, Interleaved };
  Layout layout = Layout::Vector;
  /// In the vector body of a two-body kernel the rows are known aligned:
  /// whole groups issue their loads together, with no per-chunk check.
  bool knownAligned = false;
  /// The column of element e of the lane's chunk `chunk` (= k L + lane),
  /// in the block's slice of the row (from colBase).
  Value columnOf(OpBuilder &rb, Value chunk, int64_t e);
  /// Whether group k of every block of a cluster lies below N (with no
  /// cluster: (k + 1) L V <= N).
  bool groupWhole(int64_t k) const;
  /// `chunk` of the block's slice as a chunk of the whole row.
  Value rowChunk(OpBuilder &rb, Value chunk);
  /// `mem`, cast to a static unit innermost stride if its type leaves it
  /// dynamic (for 16-byte accesses, which run only when it is 1).
  Value unitInnerStride(OpBuilder &rb, Value mem);
  /// Whether every column the lane's chunk of group k (nullopt: any chunk
  /// of a chunk loop) touches is < N in the current layout: no per-element
  /// bound check, and a vector access needs no whole-chunk check.
  bool groupInRange(std::optional<int64_t> k) const;
  bool isRowAccess(Operation *op, scf::ForOp loop, Value memref,
                   ValueRange indices);

  // Kernel-wide state.
  OpBuilder &b;
  Location loc;
  RowNest &nest;
  Geometry g;
  gpu::LaunchOp launch;
  Value tid, lane, subgroup, rowIV, rowActive, aligned;
  /// First column of the block's slice (null without a cluster), and the
  /// parity of the current row within the program (its cluster slots).
  Value colBase, rowParity;
  IRMapping base; // program-level values -> kernel values
  /// Rows a column loop's chunk covers (the looped regime's batch in its
  /// reduction loop, else 1).
  int64_t rowsPerChunk = 1;

private:
  /// The waves of rows, then the partial rows, in the current layout.
  void emitRows(Value lo, Value hi);
  /// The batches of B rows of the looped regime (Geometry::batch): the
  /// reduction loops of the B rows share one column walk and one update
  /// of the partial rows; the other column loops run row by row.
  void emitBatchedRows(Value lo, Value hi);
  /// A column loop for the rows of `ms` (one mapping per row; `carried`
  /// holds the loop's values row after row).
  void emitColumnLoop(OpBuilder &rb, scf::ForOp loop,
                      MutableArrayRef<IRMapping> ms,
                      SmallVector<Value> &carried);
  void emitChunk(OpBuilder &rb, scf::ForOp loop, MutableArrayRef<IRMapping> ms,
                 Value chunk, std::optional<int64_t> k, bool vectorized,
                 SmallVector<Value> &carried);
  /// Element e (column j) of every row of `ms`, with the batch's partial
  /// sums read before and written after.
  void emitRowsElement(OpBuilder &rb, scf::ForOp loop,
                       MutableArrayRef<IRMapping> ms, Value j,
                       std::optional<int64_t> k, int64_t e,
                       ArrayRef<DenseMap<Value, Value>> vectors,
                       SmallVector<DenseMap<Value, SmallVector<Value>>> *stores,
                       SmallVector<Value> &carried);
  void emitElement(OpBuilder &rb, scf::ForOp loop, IRMapping m, Value j,
                   std::optional<int64_t> k, int64_t e,
                   const DenseMap<Value, Value> *vectors,
                   DenseMap<Value, SmallVector<Value>> *stores,
                   SmallVector<Value> &carried);
  SmallVector<Value> crossLaneReduce(ValueRange partials);
  /// The block sums `vals` of every block of the cluster, added in rank
  /// order through distributed shared memory.
  SmallVector<Value> crossClusterReduce(ValueRange vals);
  /// barrier.cluster.arrive (release) + wait (acquire), every thread.
  void clusterBarrier();
  /// `if (row active && thread 0) { body }`: the block's one lock holder.
  void onLeader(function_ref<void(OpBuilder &, IRMapping &)> body);

  DenseMap<Value, Value> reduced;      // loop results -> reduced sums
  /// Batched rows: whether each row of the batch is one of the program's
  /// (rows past the last re-read the last row and are dropped), the
  /// workspaces of the partial rows, and the running partial sums of the
  /// element being emitted (workspace -> value per element of a chunk).
  SmallVector<Value> batchActive;
  SmallVector<Value> partialWorkspaces;
  llvm::MapVector<Value, SmallVector<Value>> batchAcc;
  /// The row whose element emitElement emits is active (batched rows).
  Value batchRowActive;
  /// Whether the current batch is the program's first (its partial sums
  /// start from zero).
  Value firstBatch;
  SmallVector<Value> crossWarpScratch; // one slot per warp, per sum
  /// [2 x kClusterSumSlots] per in-row reduction of a row (cluster only),
  /// and how many of them the current row has used.
  SmallVector<Value> clusterScratch;
  unsigned clusterReductions = 0;
};

/// The register regime (RowRegisters.cpp) and the looped one (RowLooped.cpp).
std::unique_ptr<RowKernel> makeRegisterRowKernel(OpBuilder &b, Location loc,
                                                 RowNest &nest,
                                                 gpu::LaunchOp launch);
std::unique_ptr<RowKernel> makeLoopedRowKernel(OpBuilder &b, Location loc,
                                               RowNest &nest,
                                               gpu::LaunchOp launch);

} // namespace mlir::norm

#endif // NORM_LIB_CONVERSION_NORMTOGPU_ROWKERNEL_H
