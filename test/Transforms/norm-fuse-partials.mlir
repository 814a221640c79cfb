// RUN: norm-opt %s --split-input-file --norm-split --norm-lower-forward --norm-recompute-loops --norm-promote --norm-fuse-partials --norm-cache-rows --cse | FileCheck %s
// RUN: norm-opt %s --split-input-file --norm-split --norm-lower-forward --norm-recompute-loops --norm-promote --norm-fuse-partials | FileCheck %s --check-prefix=FUSE

// norm-fuse-partials alone: the partials nest is gone, its sums are in the
// dx nest's first column loop, the reduce follows the dx nest; no row cache
// yet (that is norm-cache-rows).
// FUSE-LABEL: func @layer_norm_grad_fused
// FUSE-NOT: norm.row_cache
// FUSE-NOT: norm.stage = #norm.stage<partials>
// FUSE: scf.for
// FUSE:   scf.for
// FUSE:     scf.for {{.*}} iter_args
// FUSE:       memref.store {{.*}} : memref<?x?xf32>
// FUSE:       memref.store {{.*}} : memref<?x?xf32>
// FUSE: norm.stage = #norm.stage<dx>
// FUSE: norm.stage = #norm.stage<reduce>
// FUSE-LABEL: func @

// The partial dweight/dbias sums join the dx nest's first column loop; x and
// dy go to per-program row caches there and the dx loop reads the caches;
// the fixed-order reduce runs after the dx nest.
// CHECK-LABEL: func @layer_norm_grad_fused
// CHECK-SAME: (%[[DY:[^:]+]]: memref<?x?xbf16>, %[[X:[^:]+]]: memref<?x?xbf16>
// CHECK-NOT: norm.stage = #norm.stage<partials>
// CHECK: %[[WSW:.*]] = memref.alloc({{.*}}) {norm.workspace} : memref<?x?xf32>
// CHECK: %[[WSB:.*]] = memref.alloc({{.*}}) {norm.workspace} : memref<?x?xf32>
// CHECK: norm.stage = #norm.stage<zero>
// CHECK: %[[CDY:.*]] = memref.alloc(%{{.*}}) {norm.row_cache} : memref<?xf32>
// CHECK: %[[CX:.*]] = memref.alloc(%{{.*}}) {norm.row_cache} : memref<?xf32>
// CHECK: scf.for %[[P:.*]] =
// CHECK:   scf.for %[[R:.*]] =
// CHECK:     scf.for %[[J:.*]] = {{.*}} iter_args
// CHECK:       %[[DYV:.*]] = memref.load %[[DY]][%[[R]], %[[J]]]
// CHECK:       %[[DYE:.*]] = arith.extf %[[DYV]]
// CHECK:       memref.store %[[DYE]], %[[CDY]][%[[J]]]
// CHECK:       %[[XV:.*]] = memref.load %[[X]][%[[R]], %[[J]]]
// CHECK:       %[[XE:.*]] = arith.extf %[[XV]]
// CHECK:       memref.store %[[XE]], %[[CX]][%[[J]]]
// CHECK:       memref.store {{.*}}, %[[WSW]][%[[P]], %[[J]]]
// CHECK:       memref.store {{.*}}, %[[WSB]][%[[P]], %[[J]]]
// CHECK:       scf.yield
// CHECK:     scf.for %[[K:.*]] =
// CHECK-NOT:     memref.load %[[X]]
// CHECK-NOT:     memref.load %[[DY]]
// CHECK:       memref.load %[[CDY]][%[[K]]]
// CHECK:       memref.load %[[CX]][%[[K]]]
// CHECK:       memref.store
// CHECK: norm.stage = #norm.stage<dx>
// CHECK: memref.dealloc %[[CX]]
// CHECK: memref.dealloc %[[CDY]]
// CHECK: norm.stage = #norm.stage<reduce>
func.func @layer_norm_grad_fused(%dy: memref<?x?xbf16>, %x: memref<?x?xbf16>, %mean: memref<?xf32>,
                                 %rstd: memref<?xf32>, %w: memref<?xf32>, %dx: memref<?x?xbf16>,
                                 %dw: memref<?xf32>, %db: memref<?xf32>) {
  norm.layer_norm_grad dy(%dy : memref<?x?xbf16>) x(%x : memref<?x?xbf16>)
      mean(%mean : memref<?xf32>) rstd(%rstd : memref<?xf32>) weight(%w : memref<?xf32>)
      outs dx(%dx : memref<?x?xbf16>) dweight(%dw : memref<?xf32>) dbias(%db : memref<?xf32>)
  return
}

// -----

// locked: the lock is taken before the fused column loop and released after
// it, so the partial update stays inside the critical section.
// CHECK-LABEL: func @rms_norm_grad_locked
// CHECK: scf.while
// CHECK: scf.for {{.*}} iter_args
// CHECK:   memref.store {{.*}} : memref<?x?xf32>
// CHECK: }
// CHECK: memref.atomic_rmw assign
// CHECK: norm.stage = #norm.stage<dx>
func.func @rms_norm_grad_locked(%dy: memref<?x?xf32>, %x: memref<?x?xf32>, %rstd: memref<?xf32>,
                                %w: memref<?xf32>, %dx: memref<?x?xf32>, %dw: memref<?xf32>) {
  norm.rms_norm_grad dy(%dy : memref<?x?xf32>) x(%x : memref<?x?xf32>) rstd(%rstd : memref<?xf32>)
      weight(%w : memref<?xf32>) outs dx(%dx : memref<?x?xf32>) dweight(%dw : memref<?xf32>)
      {strategy = #norm.strategy<locked>}
  return
}

// -----

// The forward row nest reads x once as well: the variance and y loops read
// the cache the mean loop filled.
// CHECK-LABEL: func @layer_norm_forward_cached
// CHECK: %[[C:.*]] = memref.alloc(%{{.*}}) {norm.row_cache} : memref<?xf32>
// CHECK: scf.for
// CHECK:   scf.for
// CHECK:     memref.store %{{.*}}, %[[C]]
// CHECK:   scf.for
// CHECK:     memref.load %[[C]]
// CHECK:   scf.for
// CHECK:     memref.load %[[C]]
// CHECK: norm.stage = #norm.stage<forward>
func.func @layer_norm_forward_cached(%x: memref<?x?xf16>, %y: memref<?x?xf16>, %mean: memref<?xf32>,
                                     %rstd: memref<?xf32>) {
  norm.layer_norm x(%x : memref<?x?xf16>) outs y(%y : memref<?x?xf16>) mean(%mean : memref<?xf32>)
      rstd(%rstd : memref<?xf32>)
  return
}

// -----

// The fused residual add: the first column loop adds x and residual in f32
// and stores h rounded to bf16; the row cache holds that rounded h,
// widened, and the later loops read the cache: h is written once and never
// read back, x and residual are read once. (FUSE, before norm-cache-rows:
// the later loops still read h from memory.)
// CHECK-LABEL: func @rms_norm_residual_cached
// CHECK-SAME: (%[[X:[^:]+]]: memref<?x?xbf16>, %[[RES:[^:]+]]: memref<?x?xbf16>, %{{[^:]+}}: memref<?x?xbf16>, %{{[^:]+}}: memref<?xf32>, %[[H:[^:]+]]: memref<?x?xbf16>)
// CHECK: %[[C:.*]] = memref.alloc(%{{.*}}) {norm.row_cache} : memref<?xf32>
// CHECK: scf.for %[[ROW:.*]] =
// CHECK:   scf.for %[[J:.*]] =
// CHECK:     %[[XV:.*]] = memref.load %[[X]][%[[ROW]], %[[J]]]
// CHECK:     %[[XE:.*]] = arith.extf %[[XV]] : bf16 to f32
// CHECK:     %[[RV:.*]] = memref.load %[[RES]][%[[ROW]], %[[J]]]
// CHECK:     %[[RE:.*]] = arith.extf %[[RV]] : bf16 to f32
// CHECK:     %[[S:.*]] = arith.addf %[[XE]], %[[RE]] : f32
// CHECK:     %[[T:.*]] = arith.truncf %[[S]] : f32 to bf16
// CHECK:     %[[TE:.*]] = arith.extf %[[T]] : bf16 to f32
// CHECK:     memref.store %[[TE]], %[[C]][%[[J]]]
// CHECK:     memref.store %[[T]], %[[H]][%[[ROW]], %[[J]]]
// CHECK:   scf.for
// CHECK-NOT: memref.load %[[H]]
// CHECK:     memref.load %[[C]]
// CHECK:   scf.for
// CHECK-NOT: memref.load %[[H]]
// CHECK:     memref.load %[[C]]
// CHECK: norm.stage = #norm.stage<forward>
// FUSE-LABEL: func @rms_norm_residual_cached
// FUSE: memref.store %{{.*}}, %[[FH:[^\[]+]][
// FUSE: memref.load %[[FH]][
// FUSE: memref.load %[[FH]][
// FUSE: norm.stage = #norm.stage<forward>
func.func @rms_norm_residual_cached(%x: memref<?x?xbf16>, %res: memref<?x?xbf16>,
                                    %y: memref<?x?xbf16>, %rstd: memref<?xf32>,
                                    %h: memref<?x?xbf16>) {
  norm.rms_norm x(%x : memref<?x?xbf16>) residual(%res : memref<?x?xbf16>)
      outs y(%y : memref<?x?xbf16>) rstd(%rstd : memref<?xf32>) h(%h : memref<?x?xbf16>)
  return
}
