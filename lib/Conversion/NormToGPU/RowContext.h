//===- RowContext.h - what the parts of a row kernel share ------*- C++ -*-===//
//
// Part of mlir-norm. Private to lib/Conversion/NormToGPU.
//
// A row kernel (`dx`, `forward`) is a block per program (dx) or per S rows
// (forward); its rows go to sub-groups of L lanes, columns to lanes in
// chunks of V elements. It is built in layers:
//
//   RowContext (this file)   the nest, its geometry, the launch, the builder
//                            at the current point, the kernel-level values,
//                            and the helpers that map a lane's chunks to
//                            columns and clone the row body;
//   strategies               one per axis along which kernels differ
//   (RowStrategies.h)        (chunk walk, home of the partial rows, in-row
//                            reduction, lock protocol, walk over the rows);
//   core emitter             the kernel body: the row body materialised
//   (RowEmitter.cpp)         per element of a chunk, column loops, the
//                            bodies of the two layouts; it talks to the
//                            strategies through their interfaces only;
//   buildRowKernel           picks the strategies from the geometry, in one
//   (RowKernel.cpp)          place, and launches the kernel.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_LIB_CONVERSION_NORMTOGPU_ROWCONTEXT_H
#define NORM_LIB_CONVERSION_NORMTOGPU_ROWCONTEXT_H

#include "Kernels.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/MapVector.h"

namespace mlir::norm {

class TargetCodegen;

/// A per-program row cache (norm.row_cache), by the value of the buffer.
bool isRowCacheBuffer(Value memref);

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

/// The state every part of one row kernel reads, and the helpers they
/// share. Who writes what: `begin` the kernel-level values (once); the
/// core emitter the body's layout and alignment; the row walk the row
/// mapping of the wave it emits (`base`) and the in-row sums (`reduced`).
struct RowContext {
  RowContext(OpBuilder &b, Location loc, RowNest &nest, gpu::LaunchOp launch);

  /// Emits the thread's lane and sub-group. `programMap` maps the program
  /// loop's values to the kernel's; `columnBase` is the first column of the
  /// block's slice of every row (null: the whole row).
  void begin(const IRMapping &programMap, Value columnBase);

  Value c(int64_t v);
  /// Materialises `v` (of the original row body) in the region built by
  /// `rb`: mapped values as mapped, reduced loop results as reduced, pure
  /// ops and loads of the row body cloned again (they are cheap and their
  /// inputs are not modified), everything else as the kernel-level value.
  Value materialize(OpBuilder &rb, Value v, IRMapping &m);
  /// `load` / `store` of the row body served from `arr`, a lane's private
  /// array of K V elements (a row cache, or partial sums in registers), at
  /// element e of the lane's chunk k; false (nothing emitted) when `arr` is
  /// null or the chunk is not a constant one.
  bool loadPrivate(OpBuilder &rb, Value arr, memref::LoadOp load,
                   std::optional<int64_t> k, int64_t e, IRMapping &m);
  bool storePrivate(OpBuilder &rb, Value arr, memref::StoreOp store,
                    std::optional<int64_t> k, int64_t e, IRMapping &m);
  /// The column of element e of the lane's chunk `chunk` (= k L + lane),
  /// in the block's slice of the row (from colBase).
  Value columnOf(OpBuilder &rb, Value chunk, int64_t e);
  /// Whether group k of every block of a cluster lies below N (with no
  /// cluster: (k + 1) L V <= N).
  bool groupWhole(int64_t k) const;
  /// Register regime: whether the lane's chunk of group k is in the row
  /// for every lane of every block of a cluster (no run-time check).
  bool chunkAlwaysInRow(int64_t k) const;
  /// `chunk` of the block's slice as a chunk of the whole row.
  Value rowChunk(OpBuilder &rb, Value chunk);
  /// The 16-byte access of V elements of row memref `mem` (of the row
  /// body) at `at` ([r, j0], or [j0] for a column vector): the vector
  /// body's one load of a chunk.
  Value loadChunk(OpBuilder &rb, Value mem, ValueRange at);
  /// `mem`, cast to a static unit innermost stride if its type leaves it
  /// dynamic (for 16-byte accesses, which run only when it is 1).
  Value unitInnerStride(OpBuilder &rb, Value mem);
  /// Whether every column the lane's chunk of group k (nullopt: any chunk
  /// of a chunk loop) touches is < N in the current layout: no per-element
  /// bound check, and a vector access needs no whole-chunk check.
  bool groupInRange(std::optional<int64_t> k) const;
  /// A chunkable access: a row memref at [r, j] or a column vector
  /// (weight, bias) at [j], j the column loop's induction variable.
  bool isRowAccess(Operation *op, scf::ForOp loop, Value memref,
                   ValueRange indices);

  // The kernel.
  OpBuilder &b;
  Location loc;
  RowNest &nest;
  const Geometry &g;
  gpu::LaunchOp launch;
  /// The chip's emitter (cluster barrier, distributed shared memory, fences).
  const TargetCodegen &codegen;

  // Kernel-level values (begin).
  Value tid, lane, subgroup;
  /// First column of the block's slice (null without a cluster).
  Value colBase;

  // The body being emitted (the core emitter).
  /// Whether every row memref is 16-byte aligned with a unit inner stride
  /// (the same in every block of a launch).
  Value aligned;
  Layout layout = Layout::Vector;
  /// In the vector body of a two-body kernel the rows are known aligned:
  /// whole groups issue their loads together, with no per-chunk check.
  bool knownAligned = false;
  /// The row memrefs the body reads at [r, j] (x, dy, residual...): what
  /// prefetchRow brings into L2.
  SmallVector<Value> readRowMemrefs;

  /// Elements of `element` that one 16-byte access of a partial row [G, N]
  /// moves when a chunk's V partial sums go as vectors: the vector layout,
  /// N a multiple of V (the partial rows are then aligned to them: the
  /// workspace is 16-byte aligned, the runtime checks it); 0 otherwise.
  int64_t partialVectorWidth(Type element) const;
  /// The V partial sums `sums` of the chunk from column j0 stored into row
  /// `program` of the partial row `ws`, `width` elements a store; `final`:
  /// the columns' last stores (markFinalPartial).
  void storePartialChunk(OpBuilder &rb, Value ws, Value program, Value j0,
                         ArrayRef<Value> sums, int64_t width,
                         bool final = false);

  /// The byte address (i64) of element `indices` of `mem` (a memref of
  /// the row body, through `base`).
  Value byteAddress(OpBuilder &rb, Value mem, ValueRange indices);
  /// A pointer to element `index` of the shared buffer `buffer` (a
  /// workgroup attribution) whose elements are `bytes` wide.
  Value sharedElement(OpBuilder &rb, Value buffer, Value index,
                      int64_t bytes);

  /// Geometry::prefetch: where `issue` holds (one thread of the row's) and
  /// the rows are 16-byte aligned, the block's columns of row `row` of
  /// every read row memref, prefetched into L2 (one bulk prefetch each).
  /// Nothing on the interleaved layout or without g.prefetch.
  void prefetchRow(OpBuilder &rb, Value row, Value issue);

  /// Geometry::pipeline (RowPipeline.cpp): the next wave's global loads
  /// issued into a lane's registers before the current row's in-row sums.
  /// What is loaded ahead: the 16-byte chunks of the row memrefs that the
  /// row body's first reading column loop (`pipeLoop`) reads at [r, j],
  /// and the row body's loads at [r] (the statistics), of memrefs the row
  /// body never writes. `allocatePipeline` finds them and makes the
  /// buffers (before the first row).
  void allocatePipeline();
  /// Whether this body loads ahead (the vector layout's body of a kernel
  /// with two, g.pipeline or the ring).
  bool pipelining() const;
  /// Whether chunk k of `loop` takes its 16-byte loads of the buffered
  /// row memrefs from the buffers: pipelining, `loop` is pipeLoop, and the
  /// chunk of group k is whole wherever it is in the row.
  bool pipelined(scf::ForOp loop, std::optional<int64_t> k) const;
  /// The buffered chunk k of row memref `mem` (of the row body).
  Value preloaded(OpBuilder &rb, Value mem, int64_t k);
  /// Row `row`'s buffered values loaded where `when` holds (in a body that
  /// knows the rows aligned: pipelining()): the statistics, then chunk by
  /// chunk.
  void preloadRow(OpBuilder &rb, Value row, Value when);
  /// At the top of a wave (`wave`, the first row of the program's
  /// [lo, ...)): the current row's buffered statistics, mapped in `base`
  /// for the wave's row body. With the ring, first the wait for the
  /// wave's copies.
  void takePreloaded(OpBuilder &rb, Value wave, Value lo);

  /// The ring (norm-map-to-gpu async-rows, RowPipeline.cpp): what the
  /// pipeline loads ahead goes to shared memory instead of registers,
  /// with cp.async, `asyncStages` waves ahead. 0: the registers' pipeline
  /// (Geometry::pipeline) or none.
  int64_t asyncStages = 0;
  /// Before the walk: the copies of the program's first `asyncStages`
  /// waves (row `lo + i S + subgroup` into slot i), one group a wave.
  void issueFirstWaves(OpBuilder &rb, Value lo, Value hi);
  /// After the wave's first column loop (which read its slot): the copies
  /// of the row `asyncStages` waves ahead of `row` into the same slot, one
  /// group (empty past `hi`).
  void issueAhead(OpBuilder &rb, Value row, Value hi);
  /// Row memref / statistic -> its ring in shared memory: [D][K][T] 16-byte
  /// chunks (memref<D K T V x T>), [D][T] statistics.
  llvm::MapVector<Value, Value> ringRows;
  llvm::MapVector<Operation *, Value> ringStats;
  /// The current wave's slot (index), set by takePreloaded.
  Value waveSlot;
  /// This thread's entry of group k of ring slot `slot`, `groups` groups
  /// a slot: [slot][k][tid] (chunks: K groups; statistics: 1).
  Value ringIndex(OpBuilder &rb, Value slot, int64_t groups, int64_t k);

  /// For each of the lane's groups k whose columns all lie below N: `body`
  /// with the chunk's first column j0, under the test that the chunk is in
  /// the row where some lane's may not be (the chunk walk's own test).
  void forEachChunkInRow(
      OpBuilder &rb,
      function_ref<void(OpBuilder &, int64_t k, Value j0)> body);

  scf::ForOp pipeLoop;
  /// Row memref -> the lane's K chunks of its next row
  /// (memref<K x vector<V x T>>); ordered, so the kernel text is stable.
  llvm::MapVector<Value, Value> pipeRows;
  /// A row-level load of the row body at [r] -> the next row's value
  /// (memref<1 x T>).
  llvm::MapVector<Operation *, Value> pipeStats;

  /// Geometry::holdColumns (RowHeldColumns.cpp): the column vectors the
  /// row body reads (weight, bias), a lane's whole chunks of them loaded
  /// into registers once, at the top of the vector layout's body.
  /// `allocateHeldColumns` finds them and makes the buffers (before the
  /// first row).
  void allocateHeldColumns();
  /// The held chunks loaded (the vector layout's body, before its rows).
  void loadHeldColumns(OpBuilder &rb);
  /// Whether chunk k of column memref `mem` comes from registers: held,
  /// the vector layout, and group k's columns all below N.
  bool holds(Value mem, std::optional<int64_t> k) const;
  /// The held chunk k of column memref `mem` (of the row body).
  Value heldChunk(OpBuilder &rb, Value mem, int64_t k);

  /// Column memref -> the lane's K chunks of it
  /// (memref<K x vector<V x T>>); ordered, so the kernel text is stable.
  llvm::MapVector<Value, Value> heldColumns;

  // The rows being emitted (the row walk).
  IRMapping base;                 // program-level values -> kernel values
  DenseMap<Value, Value> reduced; // loop results -> reduced sums
};

} // namespace mlir::norm

#endif // NORM_LIB_CONVERSION_NORMTOGPU_ROWCONTEXT_H
