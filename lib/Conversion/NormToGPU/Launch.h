//===- Launch.h - gpu.launch construction for the norm kernels --*- C++ -*-===//
//
// Part of mlir-norm. Private to lib/Conversion/NormToGPU: the helpers every
// kernel builder (ZeroKernel, ReduceKernel, RowKernel) shares.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_LIB_CONVERSION_NORMTOGPU_LAUNCH_H
#define NORM_LIB_CONVERSION_NORMTOGPU_LAUNCH_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"

namespace mlir::norm {

Value cIndex(OpBuilder &b, Location loc, int64_t v);

/// Terminates an scf.if branch built by `getThenBodyBuilder` /
/// `getElseBodyBuilder`: an if without results already has its yield.
void yieldFrom(OpBuilder &b, Location loc, ValueRange values);

/// A `gpu.launch` of `grid` blocks of `threads` threads whose body `build`
/// fills (given block id x and thread id x); the kernel is named `name` and
/// goes to the function's one gpu.module. With `cluster` > 1 the blocks
/// form clusters of that many consecutive blocks (`grid` counts blocks).
gpu::LaunchOp
createLaunch(OpBuilder &b, Location loc, Value grid, int64_t threads,
             StringRef name,
             function_ref<void(OpBuilder &, gpu::LaunchOp)> build,
             int64_t cluster = 1);

/// A shared-memory buffer of the kernel (a workgroup attribution).
Value addSharedBuffer(gpu::LaunchOp launch, ArrayRef<int64_t> shape,
                      Type elementType, Location loc);

/// The bytes of dynamic shared memory `launch` is given (0: none).
int64_t dynamicSharedSize(gpu::LaunchOp launch);

/// A view of `launch`'s dynamic shared memory at byte `offset`, of `shape`
/// and `elementType` (`b` inside the launch body), and the launch's dynamic
/// size raised to cover it.
Value addDynamicSharedView(gpu::LaunchOp launch, OpBuilder &b, int64_t offset,
                           ArrayRef<int64_t> shape, Type elementType,
                           Location loc);

/// Moves the pure index arithmetic a kernel uses into it, so kernels compute
/// it from the memref descriptors instead of taking it as arguments.
void sinkIntoLaunch(gpu::LaunchOp launch);

} // namespace mlir::norm

#endif // NORM_LIB_CONVERSION_NORMTOGPU_LAUNCH_H
