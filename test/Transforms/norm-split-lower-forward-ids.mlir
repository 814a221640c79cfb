// RUN: norm-opt %s --split-input-file --norm-split --norm-lower-forward | FileCheck %s
// RUN: norm-opt %s --split-input-file --norm-lower-forward --norm-split | FileCheck %s --check-prefix=REVERSED

// norm.id is unique per function (the stage contract; fusion pairs nests by
// it) across both lowerings: each numbers from one past the largest id
// already in the function, in either order. The pipeline's order (split
// first) numbers the grads in program order, then the forwards.

// CHECK-LABEL: func @forward_then_grads
// CHECK-NOT: norm.rms_norm
// CHECK-NOT: norm.layer_norm
// CHECK: {norm.accumulate = f32, norm.id = 2 : i64, norm.stage = #norm.stage<forward>}
// CHECK: {norm.accumulate = f32, norm.id = 0 : i64, norm.stage = #norm.stage<xhat>}
// CHECK: {norm.accumulate = f32, norm.id = 0 : i64, norm.stage = #norm.stage<dx>}
// CHECK: {norm.accumulate = f32, norm.id = 3 : i64, norm.stage = #norm.stage<forward>}
// CHECK: {norm.accumulate = f32, norm.id = 1 : i64, norm.stage = #norm.stage<xhat>}
// CHECK: {norm.accumulate = f32, norm.id = 1 : i64, norm.stage = #norm.stage<dx>}
// CHECK: return

// REVERSED-LABEL: func @forward_then_grads
// REVERSED: {norm.accumulate = f32, norm.id = 0 : i64, norm.stage = #norm.stage<forward>}
// REVERSED: {norm.accumulate = f32, norm.id = 2 : i64, norm.stage = #norm.stage<xhat>}
// REVERSED: {norm.accumulate = f32, norm.id = 2 : i64, norm.stage = #norm.stage<dx>}
// REVERSED: {norm.accumulate = f32, norm.id = 1 : i64, norm.stage = #norm.stage<forward>}
// REVERSED: {norm.accumulate = f32, norm.id = 3 : i64, norm.stage = #norm.stage<xhat>}
// REVERSED: {norm.accumulate = f32, norm.id = 3 : i64, norm.stage = #norm.stage<dx>}
func.func @forward_then_grads(%x: memref<?x16xf32>, %y: memref<?x16xf32>, %m: memref<?xf32>,
                              %r: memref<?xf32>, %dy: memref<?x16xf32>, %dx: memref<?x16xf32>,
                              %r2: memref<?xf32>, %dx2: memref<?x16xf32>) {
  norm.layer_norm x(%x : memref<?x16xf32>) outs y(%y : memref<?x16xf32>)
      mean(%m : memref<?xf32>) rstd(%r : memref<?xf32>)
  norm.layer_norm_grad dy(%dy : memref<?x16xf32>) x(%x : memref<?x16xf32>)
      mean(%m : memref<?xf32>) rstd(%r : memref<?xf32>) outs dx(%dx : memref<?x16xf32>)
  norm.rms_norm x(%y : memref<?x16xf32>) outs y(%dy : memref<?x16xf32>) rstd(%r2 : memref<?xf32>)
  norm.rms_norm_grad dy(%dy : memref<?x16xf32>) x(%y : memref<?x16xf32>)
      rstd(%r2 : memref<?xf32>) outs dx(%dx2 : memref<?x16xf32>)
  return
}

// -----

// Nests already in the function (an earlier run, another producer) keep
// their ids; the new ones count on from the largest.
// CHECK-LABEL: func @ids_already_present
// CHECK: {norm.accumulate = f32, norm.id = 7 : i64, norm.stage = #norm.stage<forward>}
// CHECK: {norm.accumulate = f32, norm.id = 8 : i64, norm.stage = #norm.stage<dx>}
// CHECK: {norm.accumulate = f32, norm.id = 9 : i64, norm.stage = #norm.stage<forward>}
// REVERSED-LABEL: func @ids_already_present
// REVERSED: {norm.accumulate = f32, norm.id = 7 : i64, norm.stage = #norm.stage<forward>}
// REVERSED: {norm.accumulate = f32, norm.id = 9 : i64, norm.stage = #norm.stage<dx>}
// REVERSED: {norm.accumulate = f32, norm.id = 8 : i64, norm.stage = #norm.stage<forward>}
func.func @ids_already_present(%x: memref<?x16xf32>, %y: memref<?x16xf32>, %r: memref<?xf32>,
                               %dy: memref<?x16xf32>, %dx: memref<?x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %c1 step %c1 {
  } {norm.accumulate = f32, norm.id = 7 : i64, norm.stage = #norm.stage<forward>}
  norm.rms_norm_grad dy(%dy : memref<?x16xf32>) x(%x : memref<?x16xf32>)
      rstd(%r : memref<?xf32>) outs dx(%dx : memref<?x16xf32>)
  norm.rms_norm x(%x : memref<?x16xf32>) outs y(%y : memref<?x16xf32>) rstd(%r : memref<?xf32>)
  return
}
