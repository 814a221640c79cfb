// RUN: norm-opt %s --split-input-file --norm-cache-rows | FileCheck %s

// A row the first column loop stores (the fused residual add's h, after
// norm-promote) and the later loops load: the loads read a row cache that
// holds the stored value widened (the rounded h), filled by the first
// loop; h is stored once and never loaded, and the later loops keep their
// arithmetic.
// CHECK-LABEL: func @stored_row_cached
// CHECK-SAME: (%[[X:[^:]+]]: memref<?x?xbf16>, %[[RES:[^:]+]]: memref<?x?xbf16>, %[[Y:[^:]+]]: memref<?x?xbf16>, %{{[^:]+}}: memref<?xf32>, %[[H:[^:]+]]: memref<?x?xbf16>, %[[M:[^:]+]]: index, %[[N:[^:]+]]: index)
// CHECK: %[[C:.*]] = memref.alloc(%[[N]]) {norm.row_cache} : memref<?xf32>
// CHECK: scf.for %[[ROW:[^ ]+]] =
// CHECK:   scf.for %[[J:[^ ]+]] =
// CHECK:     %[[S:.*]] = arith.addf
// CHECK-NEXT: %[[T:.*]] = arith.truncf %[[S]] : f32 to bf16
// CHECK-NEXT: %[[TE:.*]] = arith.extf %[[T]] : bf16 to f32
// CHECK-NEXT: memref.store %[[TE]], %[[C]][%[[J]]] : memref<?xf32>
// CHECK-NEXT: memref.store %[[T]], %[[H]][%[[ROW]], %[[J]]] : memref<?x?xbf16>
// CHECK:   scf.for %[[J2:[^ ]+]] = {{.*}} -> (f32)
// CHECK-NEXT: %[[V:.*]] = memref.load %[[C]][%[[J2]]] : memref<?xf32>
// CHECK-NEXT: arith.mulf %[[V]], %[[V]] : f32
// CHECK:   scf.for %[[J3:[^ ]+]] =
// CHECK-NEXT: %[[W:.*]] = memref.load %[[C]][%[[J3]]] : memref<?xf32>
// CHECK-NEXT: arith.mulf %[[W]], %{{.*}} : f32
// CHECK: } {norm.accumulate = f32, norm.id = 0 : i64, norm.stage = #norm.stage<forward>}
// CHECK-NEXT: memref.dealloc %[[C]]
// CHECK-NOT: memref.load %[[H]]
func.func @stored_row_cached(%x: memref<?x?xbf16>, %res: memref<?x?xbf16>, %y: memref<?x?xbf16>,
                             %rstd: memref<?xf32>, %h: memref<?x?xbf16>, %m: index, %n: index) {
  %cst = arith.constant 0.000000e+00 : f32
  %c1 = arith.constant 1 : index
  %c0 = arith.constant 0 : index
  scf.for %r = %c0 to %m step %c1 {
    scf.for %j = %c0 to %n step %c1 {
      %0 = memref.load %x[%r, %j] : memref<?x?xbf16>
      %1 = arith.extf %0 : bf16 to f32
      %2 = memref.load %res[%r, %j] : memref<?x?xbf16>
      %3 = arith.extf %2 : bf16 to f32
      %4 = arith.addf %1, %3 : f32
      %5 = arith.truncf %4 : f32 to bf16
      memref.store %5, %h[%r, %j] : memref<?x?xbf16>
    }
    %s = scf.for %j = %c0 to %n step %c1 iter_args(%acc = %cst) -> (f32) {
      %0 = memref.load %h[%r, %j] : memref<?x?xbf16>
      %1 = arith.extf %0 : bf16 to f32
      %2 = arith.mulf %1, %1 : f32
      %3 = arith.addf %acc, %2 : f32
      scf.yield %3 : f32
    }
    %rs = math.rsqrt %s : f32
    memref.store %rs, %rstd[%r] : memref<?xf32>
    scf.for %j = %c0 to %n step %c1 {
      %0 = memref.load %h[%r, %j] : memref<?x?xbf16>
      %1 = arith.extf %0 : bf16 to f32
      %2 = arith.mulf %1, %rs : f32
      %3 = arith.truncf %2 : f32 to bf16
      memref.store %3, %y[%r, %j] : memref<?x?xbf16>
    }
  } {norm.accumulate = f32, norm.id = 0 : i64, norm.stage = #norm.stage<forward>}
  return
}
