//===- TargetCodegen.h - what a chip emits differently ----------*- C++ -*-===//
//
// Part of mlir-norm. TargetInfo (TargetInfo.h) holds a chip's facts and
// limits, with no IR; this is its other half: the chip-specific operations
// the kernel builders emit (the cluster barrier, distributed shared memory
// addressing, the device-scope fence of the lock protocol). The kernel code
// asks TargetCodegen::forTarget(target) and never names a target dialect,
// so a new chip generation is a TargetInfo entry and, where it emits
// something differently, a TargetCodegen of its own here.
//
// Asynchronous global-to-shared copies (cp.async, TMA) would be hooks of
// this class too; no kernel issues one yet (docs/GPU.md).
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

  /// Every thread of every block of the cluster arrives (release) and
  /// waits for the others (acquire). With `release` false the arrival is
  /// relaxed: it orders none of the thread's earlier memory operations (so
  /// it does not wait for its global stores to complete), for a barrier
  /// that only keeps a block's shared memory alive while the others may
  /// still read it (their reads are complete once their values are used).
  virtual void clusterBarrier(OpBuilder &b, Location loc,
                              bool release = true) const = 0;

  /// A pointer to this block's shared memory at byte address `address`
  /// (i64, from memref.extract_aligned_pointer_as_index).
  virtual Value sharedPointer(OpBuilder &b, Location loc,
                              Value address) const = 0;
  /// Element `index` (i64) of the f32 array at shared pointer `base`.
  virtual Value sharedElement(OpBuilder &b, Location loc, Value base,
                              Value index) const = 0;
  /// The f32 that block `rank` of the cluster holds at `at`, a pointer
  /// into this block's shared memory (distributed shared memory).
  virtual Value loadFromClusterRank(OpBuilder &b, Location loc, Value at,
                                    int64_t rank) const = 0;

  /// Orders this thread's global memory accesses before and after it for
  /// every thread of the device (the lock protocol of `locked`).
  virtual void deviceFence(OpBuilder &b, Location loc) const = 0;

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
