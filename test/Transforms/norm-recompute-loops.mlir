// RUN: norm-opt %s --split-input-file --norm-recompute-loops | FileCheck %s
// RUN: norm-opt %s --split-input-file --norm-split --norm-recompute-loops | FileCheck %s --check-prefix=SPLIT

// A hand-written faithful xhat buffer: each load becomes the producer's
// computation at the load's indices; the producer nest and buffer go.
// CHECK-LABEL: func @recompute_xhat
// CHECK-SAME: (%[[X:[^:]+]]: memref<?x?xf32>, %[[R:[^:]+]]: memref<?xf32>, %[[OUT:[^:]+]]: memref<?x?xf32>
// CHECK-NOT: memref.alloc
// CHECK-NOT: norm.stage = #norm.stage<xhat>
// CHECK: scf.for %[[I:.*]] =
// CHECK:   scf.for %[[J:.*]] =
// CHECK:     %[[RS:.*]] = memref.load %[[R]][%[[I]]]
// CHECK:     %[[XV:.*]] = memref.load %[[X]][%[[I]], %[[J]]]
// CHECK:     %[[H:.*]] = arith.mulf %[[XV]], %[[RS]]
// CHECK:     %[[T:.*]] = arith.addf %[[H]], %[[H]]
// CHECK:     memref.store %[[T]], %[[OUT]][%[[I]], %[[J]]]
// CHECK-NOT: memref.dealloc
func.func @recompute_xhat(%x: memref<?x?xf32>, %r: memref<?xf32>, %out: memref<?x?xf32>, %m: index, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %xhat = memref.alloc(%m, %n) {norm.recomputable} : memref<?x?xf32>
  scf.for %i = %c0 to %m step %c1 {
    %rs = memref.load %r[%i] : memref<?xf32>
    scf.for %j = %c0 to %n step %c1 {
      %v = memref.load %x[%i, %j] : memref<?x?xf32>
      %h = arith.mulf %v, %rs : f32
      memref.store %h, %xhat[%i, %j] : memref<?x?xf32>
    }
  } {norm.stage = #norm.stage<xhat>, norm.id = 0 : i64, norm.accumulate = f32}
  scf.for %i = %c0 to %m step %c1 {
    scf.for %j = %c0 to %n step %c1 {
      %h = memref.load %xhat[%i, %j] : memref<?x?xf32>
      %t = arith.addf %h, %h : f32
      memref.store %t, %out[%i, %j] : memref<?x?xf32>
    }
  }
  memref.dealloc %xhat : memref<?x?xf32>
  return
}

// -----

// Untagged buffers are not touched.
// CHECK-LABEL: func @untagged_left_alone
// CHECK: memref.alloc
// CHECK: memref.store
// CHECK: memref.load
func.func @untagged_left_alone(%v: f32, %n: index) -> f32 {
  %c0 = arith.constant 0 : index
  %buf = memref.alloc(%n) : memref<?xf32>
  memref.store %v, %buf[%c0] : memref<?xf32>
  %r = memref.load %buf[%c0] : memref<?xf32>
  return %r : f32
}

// -----

// After norm-split, the xhat and g buffers of a LayerNorm backward are both
// recomputed where they are read: in the partials (dy * xhat) and in both
// column loops of the dx nest; no [M, N] buffer is left.
// SPLIT-LABEL: func @layer_norm_grad
// SPLIT-NOT: norm.recomputable
// SPLIT-NOT: memref<?x?xbf16> = memref.alloc
// SPLIT: norm.stage = #norm.stage<zero>
// SPLIT: scf.for
// SPLIT:   scf.for %[[ROW:.*]] =
// SPLIT:     scf.for %[[C:.*]] =
// SPLIT:       %[[DYV:.*]] = memref.load %{{.*}}[%[[ROW]], %[[C]]] : memref<?x?xbf16>
// SPLIT:       %[[XV:.*]] = memref.load %{{.*}}[%[[ROW]], %[[C]]] : memref<?x?xbf16>
// SPLIT:       %[[D:.*]] = arith.subf %[[XV]]
// SPLIT:       %[[XH:.*]] = arith.mulf %[[D]]
// SPLIT:       arith.mulf %[[DYV]], %[[XH]] : bf16
// SPLIT: norm.stage = #norm.stage<partials>
// SPLIT-NOT: memref.dealloc {{.*}} : memref<?x?xbf16>
func.func @layer_norm_grad(%dy: memref<?x?xbf16>, %x: memref<?x?xbf16>, %mean: memref<?xf32>,
                           %rstd: memref<?xf32>, %w: memref<?xf32>, %dx: memref<?x?xbf16>,
                           %dw: memref<?xf32>) {
  norm.layer_norm_grad dy(%dy : memref<?x?xbf16>) x(%x : memref<?x?xbf16>)
      mean(%mean : memref<?xf32>) rstd(%rstd : memref<?xf32>) weight(%w : memref<?xf32>)
      outs dx(%dx : memref<?x?xbf16>) dweight(%dw : memref<?xf32>)
  return
}
