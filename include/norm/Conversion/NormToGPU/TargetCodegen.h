//===- TargetCodegen.h - what a chip emits differently ----------*- C++ -*-===//
//
// Part of mlir-norm. TargetInfo (TargetInfo.h) holds a chip's facts and
// limits, with no IR; this is its other half: the chip-specific operations
// the kernel builders emit (the cluster barrier, distributed shared memory
// addressing and the push of a row's sums, the device-scope fence of the
// lock protocol). The kernel code
// asks TargetCodegen::forTarget(target) and never names a target dialect,
// so a new chip generation is a TargetInfo entry and, where it emits
// something differently, a TargetCodegen of its own here.
//
// Asynchronous global-to-shared copies are hooks of this class too
// (cp.async: the rows a dx kernel copies ahead, RowPipeline.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef NORM_CONVERSION_NORMTOGPU_TARGETCODEGEN_H
#define NORM_CONVERSION_NORMTOGPU_TARGETCODEGEN_H

#include "mlir/IR/Builders.h"

namespace mlir::norm {

struct TargetInfo;

class TargetCodegen {
public:
  virtual ~TargetCodegen() = default;

  /// The emitter of `target`'s chip family.
  static const TargetCodegen &forTarget(const TargetInfo &target);

  /// A pointer to this block's shared memory at byte address `address`
  /// (i64, from memref.extract_aligned_pointer_as_index).
  virtual Value sharedPointer(OpBuilder &b, Location loc,
                              Value address) const = 0;

  /// The cluster's push exchange (RowReduceCluster.cpp): mbarriers in
  /// shared memory that count the bytes other blocks store into this one.
  ///
  /// Initialises the mbarrier at shared pointer `bar` (8 bytes, 8-aligned)
  /// for one arrival a phase; one thread of the block.
  virtual void initBarrier(OpBuilder &b, Location loc, Value bar) const = 0;
  /// After the block's initialisations: makes them visible to the cluster
  /// and arrives at the cluster barrier without waiting (every thread of
  /// every block; the matching clusterWait before a block stores into
  /// another's shared memory).
  virtual void clusterArriveAfterInit(OpBuilder &b, Location loc) const = 0;
  /// Waits for every thread of the cluster's arrival (acquire).
  virtual void clusterWait(OpBuilder &b, Location loc) const = 0;
  /// A barrier of every thread of the cluster that orders their memory
  /// accesses, global memory's included (arrive with release, wait with
  /// acquire): what one block wrote before it, every block reads after.
  virtual void clusterBarrier(OpBuilder &b, Location loc) const = 0;
  /// This block's arrival at mbarrier `bar`'s current phase, which then
  /// completes once `bytes` more bytes have been stored into the block
  /// (by pushToClusterRank, from any block).
  virtual void arriveExpectingBytes(OpBuilder &b, Location loc, Value bar,
                                    int64_t bytes) const = 0;
  /// Stores the f32 `values` at `at` (a pointer into this block's shared
  /// memory) in block `rank`'s shared memory instead, each completing its 4
  /// bytes on block `rank`'s mbarrier at `bar` (a pointer into this
  /// block's): no barrier and no fence before the receiver may use them.
  virtual void pushToClusterRank(OpBuilder &b, Location loc, Value at,
                                 ValueRange values, Value bar,
                                 int64_t rank) const = 0;
  /// Waits until the phase of parity `parity` (i32, 0 or 1) of this block's
  /// mbarrier `bar` has completed.
  virtual void waitBarrierPhase(OpBuilder &b, Location loc, Value bar,
                                Value parity) const = 0;

  /// A barrier of `threads` threads (a multiple of 32, the warps of one
  /// row) on the block's barrier `id` (index, 1 to 15; barrier 0 is the
  /// whole block's): it waits for them alone and orders their shared
  /// memory accesses as a block barrier does. Every thread of the block
  /// executes this one instruction (each with its row's id).
  virtual void groupBarrier(OpBuilder &b, Location loc, Value id,
                            int64_t threads) const = 0;
  /// Asynchronous copies from global to shared memory (cp.async): `bytes`
  /// (4, 8 or 16) from the generic byte address `from` (i64, of global
  /// memory, aligned to `bytes`) to `to` (a pointer into this block's
  /// shared memory, aligned likewise), without waiting. 16-byte copies
  /// bypass L1.
  virtual void asyncCopy(OpBuilder &b, Location loc, Value to, Value from,
                         int64_t bytes) const = 0;
  /// Closes the group of this thread's asynchronous copies issued since
  /// the last one (an empty group where it issued none).
  virtual void asyncCommit(OpBuilder &b, Location loc) const = 0;
  /// Waits until at most `pending` of this thread's committed groups are
  /// still in flight; the copies of the others are then visible to it.
  virtual void asyncWait(OpBuilder &b, Location loc,
                         int64_t pending) const = 0;
  /// Orders this thread's global memory accesses before and after it for
  /// every thread of the device (the lock protocol of `locked`).
  virtual void deviceFence(OpBuilder &b, Location loc) const = 0;

  /// At a kernel's entry, before any access to global memory
  /// (TargetInfo::gridDependencies): waits until the grids before it in
  /// the stream have ended and their memory is visible (a no-op unless the
  /// kernel was launched with programmatic stream serialization), then
  /// lets the grid after it be scheduled once every block of this one is
  /// here. Neither instruction moves across a memory access.
  virtual void waitForPriorGrids(OpBuilder &b, Location loc) const = 0;

  /// Asks the memory system to bring `bytes` (i32, a multiple of 16) of
  /// global memory from the generic byte address `address` (i64, 16-byte
  /// aligned) into L2, without waiting (TargetInfo::bulkPrefetch).
  virtual void prefetchL2(OpBuilder &b, Location loc, Value address,
                          Value bytes) const = 0;

  /// `value` (i32) through an instruction the compiler may neither move
  /// nor remove: what is computed from it stays where it is used. A value
  /// held across a loop (a 16-bit column chunk held in registers) would
  /// otherwise have its extension to f32 hoisted out of the loop, twice
  /// the registers for the whole loop.
  virtual Value pin(OpBuilder &b, Location loc, Value value) const = 0;
};

} // namespace mlir::norm

#endif // NORM_CONVERSION_NORMTOGPU_TARGETCODEGEN_H
