//===- RowStrategies.h - how row kernels differ, axis by axis ---*- C++ -*-===//
//
// Part of mlir-norm. Private to lib/Conversion/NormToGPU.
//
// Each axis of a row kernel is an interface here, with one implementation
// per case in a file of its own; buildRowKernel (RowKernel.cpp) picks one
// of each from the geometry, and the core emitter (RowEmitter.cpp) calls
// them through these interfaces only:
//
//   ChunkWalk       how a lane walks its chunks of a column loop:
//                   unrolled, with its row caches in private arrays
//                   (RowChunksUnrolled.cpp), or a chunk loop, the row
//                   caches turned back into loads (RowChunksLooped.cpp);
//   Partials        where the `deterministic` partial rows live while the
//                   program's rows are summed: none, registers
//                   (RowPartialsRegisters.cpp), shared memory, static or
//                   dynamic (RowPartialsShared.cpp), global memory updated
//                   once per batch of rows (RowPartialsGlobal.cpp);
//   InRowReduction  how a row's sums meet: within the block (shuffles, one
//                   cross-warp shared-memory step; RowReduceBlock.cpp), or
//                   that and then over the blocks of a cluster in
//                   distributed shared memory (RowReduceCluster.cpp);
//   LockProtocol    the `locked` strategy's acquire and release
//                   (RowLock.cpp), or none;
//   RowWalk         the program's rows: waves of S rows (RowWaves.cpp), or
//                   the global home's batches of B rows.
//
// Every strategy emits at the point the core's builder (RowContext::b, or
// the builder it is given) is at, in the order the core calls it.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_LIB_CONVERSION_NORMTOGPU_ROWSTRATEGIES_H
#define NORM_LIB_CONVERSION_NORMTOGPU_ROWSTRATEGIES_H

#include "RowContext.h"

#include <memory>

namespace mlir::norm {

/// The body of a column loop for one of the lane's chunks (`chunk` = k L +
/// lane; `k` its group when the walk is unrolled), threading `carried`.
using ChunkBody =
    function_ref<void(OpBuilder &, Value chunk, std::optional<int64_t> k,
                      SmallVector<Value> &carried)>;

/// How a lane walks its chunks of a column loop, and the row caches that
/// walk keeps.
class ChunkWalk {
public:
  virtual ~ChunkWalk() = default;
  /// Before the kernel is emitted: brings the nest's row body to the form
  /// this walk emits.
  virtual void prepare() {}
  /// Before the first row: the thread's row caches.
  virtual void allocate() {}
  /// Runs `body` on each of the lane's chunks of a column loop (`chunks`
  /// of them in the row), threading `carried` through; `rowsPerChunk`
  /// rows share each chunk.
  virtual void walk(OpBuilder &rb, Value chunks, int64_t rowsPerChunk,
                    SmallVector<Value> &carried, ChunkBody body) = 0;
  /// A load / store of element e of chunk k in a row cache, if `load` /
  /// `store` is one; false otherwise.
  virtual bool load(OpBuilder &rb, memref::LoadOp load,
                    std::optional<int64_t> k, int64_t e, IRMapping &m) {
    return false;
  }
  virtual bool store(OpBuilder &rb, memref::StoreOp store,
                     std::optional<int64_t> k, int64_t e, IRMapping &m) {
    return false;
  }
};

/// The walk over the program's rows [lo, hi), and the core's column loops
/// it emits them with.
class ColumnLoops {
public:
  virtual ~ColumnLoops() = default;
  /// A column loop of the row body for the rows of `ms` (one mapping per
  /// row; `carried` holds the loop's values row after row). `active`: one
  /// guard per row for rows that may be past the program's last (their
  /// stores are guarded, their terms dropped), or empty.
  virtual void emitColumnLoop(OpBuilder &rb, scf::ForOp loop,
                              MutableArrayRef<IRMapping> ms,
                              ArrayRef<Value> active,
                              SmallVector<Value> &carried) = 0;
};

class RowWalk {
public:
  virtual ~RowWalk() = default;
  /// The program's rows [lo, hi), in the current layout.
  virtual void emitRows(ColumnLoops &loops, Value lo, Value hi) = 0;
};

/// Where the `deterministic` partial rows live while the program's rows are
/// summed (Geometry::partials), and how they reach the workspace.
class Partials {
public:
  virtual ~Partials() = default;
  /// Before the first row: the storage, zeroed.
  virtual void allocate() {}
  /// The home's own walk over the rows, if it needs one (global: batches
  /// of rows sharing one update of the partial rows); null: waves.
  virtual RowWalk *rowWalk() { return nullptr; }
  /// Element e (column j) of a chunk, for the rows of a column loop
  /// (`active` as in emitColumnLoop): before and after its rows' bodies.
  virtual void beginElement(OpBuilder &rb, Value j, int64_t e,
                            ArrayRef<Value> active) {}
  virtual void endElement(OpBuilder &rb, Value j, int64_t e,
                          ArrayRef<Value> active) {}
  /// A whole chunk of V columns from j0 on the vector path (16-byte row
  /// accesses, the chunk inside the row): before its elements'
  /// beginElement and after their endElement, so a home can move the
  /// chunk's partial sums as vectors.
  virtual void beginChunk(OpBuilder &rb, Value j0, ArrayRef<Value> active) {}
  virtual void endChunk(OpBuilder &rb, Value j0, ArrayRef<Value> active) {}
  /// A load / store of a partial row, element e of chunk k, by a row whose
  /// guard is `active` (null: no guard), if `load` / `store` is one the
  /// home serves; false otherwise.
  virtual bool load(OpBuilder &rb, memref::LoadOp load,
                    std::optional<int64_t> k, int64_t e, IRMapping &m,
                    Value active) {
    return false;
  }
  virtual bool store(OpBuilder &rb, memref::StoreOp store,
                     std::optional<int64_t> k, int64_t e, IRMapping &m,
                     Value active) {
    return false;
  }
  /// After the last row: the program's partial rows to the workspace.
  virtual void writeBack() {}
};

/// How the in-row sums of a row meet, and what a row split over a cluster
/// needs besides.
class InRowReduction {
public:
  virtual ~InRowReduction() = default;
  /// In the launch body: the program of block `block` (a cluster's blocks
  /// share one, each its slice of the rows).
  virtual Value programOf(OpBuilder &kb, Value block) { return block; }
  /// The first column of the block's slice of every row (null: the whole
  /// row).
  virtual Value columnBase() { return Value(); }
  /// Before the first row: the scratch of the sums.
  virtual void allocate() = 0;
  /// A wave of rows starts at row `wave` of the program's [lo, ...), the
  /// waves `waveRows` rows apart; given the guard of the row's lane 0,
  /// returns the guard of the row's side effects (one thread of the row
  /// does them).
  virtual Value beginRow(Value wave, Value lo, int64_t waveRows,
                         Value laneZero) {
    return laneZero;
  }
  /// The sums of `partials` over the row's lanes (every lane gets them).
  virtual SmallVector<Value> reduce(ValueRange partials) = 0;
  /// After the last row.
  virtual void endRows() {}
};

/// The `locked` strategy's protocol around a row's read-modify-write of
/// the partial rows.
class LockProtocol {
public:
  virtual ~LockProtocol() = default;
  /// Emits `op` of the row body (row guard `rowActive`) if it is one of
  /// the protocol's; false otherwise.
  virtual bool emit(Operation &op, Value rowActive) = 0;
};

/// No `deterministic` partial rows (the forward, the other strategies).
class NoPartials final : public Partials {};

/// No lock (every strategy but `locked`).
class NoLock final : public LockProtocol {
public:
  bool emit(Operation &, Value) override { return false; }
};

/// The strategies of one kernel, each the one its geometry says
/// (buildRowKernel).
struct RowStrategies {
  std::unique_ptr<ChunkWalk> chunks;
  std::unique_ptr<Partials> home;
  std::unique_ptr<InRowReduction> reduction;
  std::unique_ptr<LockProtocol> lock;
  /// The waves, unless the home walks the rows itself.
  std::unique_ptr<RowWalk> waves;
  RowWalk *rows = nullptr;
};

// The implementations, one file each.
std::unique_ptr<ChunkWalk> makeUnrolledChunks(RowContext &ctx);
std::unique_ptr<ChunkWalk> makeLoopedChunks(RowContext &ctx);
std::unique_ptr<Partials> makeRegisterPartials(RowContext &ctx);
std::unique_ptr<Partials> makeSharedPartials(RowContext &ctx);
std::unique_ptr<Partials> makeGlobalPartials(RowContext &ctx,
                                             InRowReduction &reduction);
std::unique_ptr<InRowReduction> makeBlockReduction(RowContext &ctx);
std::unique_ptr<InRowReduction> makeClusterReduction(RowContext &ctx);
std::unique_ptr<LockProtocol> makeLockedProtocol(RowContext &ctx);
std::unique_ptr<RowWalk> makeWaves(RowContext &ctx, InRowReduction &reduction,
                                   LockProtocol &lock);

} // namespace mlir::norm

#endif // NORM_LIB_CONVERSION_NORMTOGPU_ROWSTRATEGIES_H
