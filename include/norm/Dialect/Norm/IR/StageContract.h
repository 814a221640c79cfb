//===- StageContract.h - what the lowering stages tell each other -*- C++
//-*-===//
//
// Part of mlir-norm.
//
// norm-split (grad ops) and norm-lower-forward (forward ops) tag the loop
// nests and buffers they create; the later passes (norm-recompute-loops,
// norm-promote, norm-fuse-partials, norm-cache-rows) and the GPU mapping
// find their work by these tags and never by guessing at loop shapes. The
// tags are discardable attributes registered by the norm dialect (so the
// verifier checks their types) and read and written only through the typed
// functions below:
//
//   norm.stage = #norm.stage<dx>       outermost scf.for of a nest
//   norm.id = 3 : i64                   same loops: the lowered op they
//                                       came from (unique per function)
//   norm.accumulate = f32               same loops: the promotion type
//   norm.strategy = #norm.strategy<..>  zero/partials/reduce/dx nests of an
//                                       op with dweight or dbias: how the
//                                       partial rows are combined
//   norm.recomputable                   memref.alloc: every element may be
//                                       recomputed from its producer nest
//   norm.row_cache                      memref.alloc: a row cache each
//                                       program owns (norm-cache-rows)
//   norm.workspace                      memref.alloc: partial rows (or locks)
//                                       of a dweight/dbias reduction
//   norm.written                        same allocs: a kernel writes every
//                                       element before any reads it, so
//                                       nothing clears it (the GPU mapping)
//   norm.kernels = [...]                host func.func: the kernels the GPU
//                                       mapping launched, in order
//   norm.geometry = #norm.row_geometry  a norm op, or its dx / forward
//                                       nest: how its row kernel is spread
//                                       over the GPU (norm-choose-geometry
//                                       sets it, norm-split and
//                                       norm-lower-forward carry it from
//                                       the op to the nest)
//
//===----------------------------------------------------------------------===//

#ifndef NORM_DIALECT_NORM_IR_STAGECONTRACT_H
#define NORM_DIALECT_NORM_IR_STAGECONTRACT_H

#include "norm/Dialect/Norm/IR/NormDialect.h"

#include "mlir/IR/Operation.h"

#include <optional>

namespace mlir::norm {

/// The stage of a tagged nest, or none.
std::optional<Stage> getStage(Operation *op);

/// The first op under `root` that a pass past the lowering cannot take: a
/// norm op, or (with `taggedNests`) a loop nest still carrying a stage
/// tag. Null if there is none.
Operation *findUnlowered(Operation *root, bool taggedNests);
/// Tags `nest` as the `stage` of lowered op `id`, computing in `accumulate`.
void setStage(Operation *nest, Stage stage, int64_t id, Type accumulate);

/// The lowered op a tagged nest belongs to, or none.
std::optional<int64_t> getNestId(Operation *nest);
/// The type a tagged nest's arithmetic is promoted to, or null.
Type getAccumulateType(Operation *nest);

/// How the partial rows of a zero/partials/reduce/dx nest are combined;
/// none for a nest of an op without dweight/dbias (or a forward nest).
std::optional<ReductionStrategy> getNestStrategy(Operation *nest);
void setNestStrategy(Operation *nest, ReductionStrategy strategy);

/// The row geometry of a norm op or of its dx / forward nest, or null.
RowGeometryAttr getGeometry(Operation *op);
void setGeometry(Operation *op, RowGeometryAttr geometry);
/// Carries `from`'s geometry, if any, to `to` (the op to its nest).
void copyGeometry(Operation *from, Operation *to);

/// `norm.recomputable` on a memref.alloc.
bool isRecomputable(Operation *alloc);
void setRecomputable(Operation *alloc);

/// `norm.row_cache` on a memref.alloc.
bool isRowCache(Operation *alloc);
void setRowCache(Operation *alloc);

/// `norm.early_row` on a row cache's memref.alloc: the row only a later
/// column loop reads, read by the first (norm-cache-rows early-rows); the
/// GPU mapping may turn it back into the later loop's load
/// (dxEarlyRows).
bool isEarlyRow(Operation *alloc);
void setEarlyRow(Operation *alloc);

/// `norm.workspace` on a memref.alloc.
bool isWorkspace(Operation *alloc);
void setWorkspace(Operation *alloc);

/// `norm.written` on a workspace's memref.alloc.
bool isWrittenWhole(Operation *alloc);
void setWrittenWhole(Operation *alloc);
/// Whether `value` is a buffer the lowering allocated: a row cache, a
/// recomputable buffer or a workspace. Code that uses one is ours even
/// where a canonicalisation folded its nest's tag away.
bool isLoweringBuffer(Value value);
/// The outermost tagged nest enclosing `op` (or `op` itself), or null.
Operation *getEnclosingNest(Operation *op);

} // namespace mlir::norm

#endif // NORM_DIALECT_NORM_IR_STAGECONTRACT_H
