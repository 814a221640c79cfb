//===- GeometryAttr.h - the row geometry in the IR --------------*- C++ -*-===//
//
// Part of mlir-norm. Private to lib/Conversion/NormToGPU: what
// norm-choose-geometry and norm-map-to-gpu share. The row a kernel covers
// (RowShape) read off a norm op or off its lowered nest, and the Geometry
// of Geometry.h as the `#norm.row_geometry` attribute and back.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_LIB_CONVERSION_NORMTOGPU_GEOMETRYATTR_H
#define NORM_LIB_CONVERSION_NORMTOGPU_GEOMETRYATTR_H

#include "Kernels.h"

#include "norm/Dialect/Norm/IR/NormDialect.h"

#include "llvm/ADT/SmallPtrSet.h"

namespace mlir::norm {

/// The cost model's knobs (norm-choose-geometry's options).
struct GeometryKnobs {
  int64_t threads = 0;
  int64_t maxRegisterElements = 64;
  int64_t cluster = 0;
  int64_t batchRows = 0;
  int64_t maxLanes = 0;
  bool trimIdleWarps = true;
  bool twoChunkRows = true;
  bool registerPartials = true;
};

/// The row of a lowered `dx` / `forward` nest.
RowShape rowShapeOf(RowNest &rn, const GeometryKnobs &knobs);

/// The early row caches of a nest: the row caches (allocated per program,
/// outside the row loop) that its row body fills and norm-cache-rows
/// tagged `norm.early_row` (dresidual). RowShape::earlyRows counts them.
llvm::SmallPtrSet<Operation *, 4> earlyRowCaches(RowNest &rn);

/// The row of the row kernel a norm op lowers to (its dx kernel, or the
/// forward's kernel): the same shape as rowShapeOf gives its nest. None for
/// an op of the dialect that has no row kernel.
std::optional<RowShape> rowShapeOfOp(Operation *op,
                                     const GeometryKnobs &knobs);

/// `g` as the attribute, derived sizes included.
RowGeometryAttr toAttr(MLIRContext *context, const Geometry &g);

/// The geometry an attribute states for the row `s`, completed
/// (completeGeometry).
Geometry fromAttr(RowGeometryAttr attr, const RowShape &s,
                  const TargetInfo &target);

} // namespace mlir::norm

#endif // NORM_LIB_CONVERSION_NORMTOGPU_GEOMETRYATTR_H
