// RUN: norm-opt %s --split-input-file --norm-lower-forward | FileCheck %s

// The faithful form of a LayerNorm forward: one row nest, in the storage
// type, with the two-pass variance, then y (and xhat).

// CHECK-LABEL: func @layer_norm_forward
// CHECK-SAME: (%[[X:[^:]+]]: memref<?x?xbf16>, %[[W:[^:]+]]: memref<?xf32>, %[[B:[^:]+]]: memref<?xf32>, %[[Y:[^:]+]]: memref<?x?xbf16>, %[[MEAN:[^:]+]]: memref<?xf32>, %[[RSTD:[^:]+]]: memref<?xf32>, %[[XHAT:[^:]+]]: memref<?x?xf32>)
// CHECK-NOT: norm.layer_norm
// CHECK: %[[M:.*]] = memref.dim %[[X]], %c0
// CHECK: %[[N:.*]] = memref.dim %[[X]], %c1
// CHECK: scf.for %[[ROW:.*]] = %{{.*}} to %[[M]]
// CHECK:   %[[SUM:.*]] = scf.for {{.*}} -> (bf16)
// CHECK:   %[[MU:.*]] = arith.divf %[[SUM]]
// CHECK:   %[[SQ:.*]] = scf.for {{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (bf16)
// CHECK:     %[[D:.*]] = arith.subf %{{.*}}, %[[MU]] : bf16
// CHECK:     math.fma %[[D]], %[[D]], %[[ACC]] : bf16
// CHECK:   %[[VAR:.*]] = arith.divf %[[SQ]]
// CHECK:   %[[RS:.*]] = math.rsqrt
// CHECK:   memref.store {{.*}}, %[[MEAN]][%[[ROW]]] : memref<?xf32>
// CHECK:   memref.store {{.*}}, %[[RSTD]][%[[ROW]]] : memref<?xf32>
// CHECK:   scf.for %[[COL:.*]] = %{{.*}} to %[[N]]
// CHECK:     %[[H:.*]] = arith.mulf %{{.*}}, %[[RS]] : bf16
// CHECK:     memref.store {{.*}}, %[[XHAT]][%[[ROW]], %[[COL]]] : memref<?x?xf32>
// CHECK:     %[[WV:.*]] = memref.load %[[W]][%[[COL]]]
// CHECK:     %[[WT:.*]] = arith.truncf %[[WV]] : f32 to bf16
// CHECK:     %[[BV:.*]] = memref.load %[[B]][%[[COL]]]
// CHECK:     %[[BT:.*]] = arith.truncf %[[BV]] : f32 to bf16
// CHECK:     %[[OUT:.*]] = math.fma %[[H]], %[[WT]], %[[BT]] : bf16
// CHECK:     memref.store %[[OUT]], %[[Y]][%[[ROW]], %[[COL]]] : memref<?x?xbf16>
// CHECK: } {norm.accumulate = f32, norm.id = 0 : i64, norm.stage = #norm.stage<forward>}
// CHECK-NEXT: return
func.func @layer_norm_forward(%x: memref<?x?xbf16>, %w: memref<?xf32>, %b: memref<?xf32>,
                              %y: memref<?x?xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>,
                              %xhat: memref<?x?xf32>) {
  norm.layer_norm x(%x : memref<?x?xbf16>) weight(%w : memref<?xf32>) bias(%b : memref<?xf32>)
      outs y(%y : memref<?x?xbf16>) mean(%mean : memref<?xf32>) rstd(%rstd : memref<?xf32>)
      xhat(%xhat : memref<?x?xf32>)
  return
}

// -----

// RMSNorm: no mean, sum(x^2); a zero-centred weight adds 1. Rank 3 collapses
// to [rows, N] (and the statistics to [rows]).
// CHECK-LABEL: func @rms_norm_forward_rank3
// CHECK: memref.collapse_shape %{{.*}} {{\[\[}}0, 1], [2]] : memref<2x?x24xf16> into memref<?x24xf16>
// CHECK: memref.collapse_shape %{{.*}} {{\[\[}}0, 1], [2]] : memref<2x?x24xf16> into memref<?x24xf16>
// CHECK: memref.collapse_shape %{{.*}} {{\[\[}}0, 1]] : memref<2x?xf32> into memref<?xf32>
// CHECK: scf.for
// CHECK-NOT: arith.subf
// CHECK:   scf.for {{.*}} -> (f16)
// CHECK:   math.rsqrt
// CHECK:   scf.for
// CHECK:     arith.constant 1.000000e+00 : f32
// CHECK: norm.stage = #norm.stage<forward>
func.func @rms_norm_forward_rank3(%x: memref<2x?x24xf16>, %w: memref<24xf16>,
                                  %y: memref<2x?x24xf16>, %rstd: memref<2x?xf32>) {
  norm.rms_norm x(%x : memref<2x?x24xf16>) weight(%w : memref<24xf16>)
      outs y(%y : memref<2x?x24xf16>) rstd(%rstd : memref<2x?xf32>) {zero_centered_weight}
  return
}

// -----

// The fused residual add: the first column loop forms h = x + residual (in
// the storage type) and stores it; every later loop reads the row from h,
// as stored, never from x (norm-cache-rows then serves those reads from the
// stored value).
// CHECK-LABEL: func @layer_norm_residual
// CHECK-SAME: (%[[X:[^:]+]]: memref<?x?xbf16>, %[[RES:[^:]+]]: memref<?x?xbf16>, %{{[^:]+}}: memref<?xf32>, %[[Y:[^:]+]]: memref<?x?xbf16>, %{{[^:]+}}: memref<?xf32>, %{{[^:]+}}: memref<?xf32>, %[[H:[^:]+]]: memref<?x?xbf16>)
// CHECK: scf.for %[[ROW:.*]] = %{{.*}} to %{{.*}} {
// CHECK:   scf.for %[[C0:.*]] = %{{.*}} to %{{.*}} {
// CHECK-NEXT: %[[XV:.*]] = memref.load %[[X]][%[[ROW]], %[[C0]]] : memref<?x?xbf16>
// CHECK-NEXT: %[[RV:.*]] = memref.load %[[RES]][%[[ROW]], %[[C0]]] : memref<?x?xbf16>
// CHECK-NEXT: %[[SUM:.*]] = arith.addf %[[XV]], %[[RV]] : bf16
// CHECK-NEXT: memref.store %[[SUM]], %[[H]][%[[ROW]], %[[C0]]] : memref<?x?xbf16>
// CHECK-NEXT: }
// CHECK:   scf.for {{.*}} -> (bf16)
// CHECK:     memref.load %[[H]][%[[ROW]], %{{.*}}] : memref<?x?xbf16>
// CHECK:   scf.for {{.*}} -> (bf16)
// CHECK:     memref.load %[[H]][%[[ROW]], %{{.*}}] : memref<?x?xbf16>
// CHECK:   scf.for
// CHECK:     memref.load %[[H]][%[[ROW]], %{{.*}}] : memref<?x?xbf16>
// CHECK:     memref.store {{.*}}, %[[Y]][%[[ROW]], %{{.*}}] : memref<?x?xbf16>
// CHECK: } {norm.accumulate = f32, norm.id = 0 : i64, norm.stage = #norm.stage<forward>}
// CHECK-NOT: memref.load %[[X]]
// CHECK: return
func.func @layer_norm_residual(%x: memref<?x?xbf16>, %res: memref<?x?xbf16>, %w: memref<?xf32>,
                               %y: memref<?x?xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>,
                               %h: memref<?x?xbf16>) {
  norm.layer_norm x(%x : memref<?x?xbf16>) residual(%res : memref<?x?xbf16>) weight(%w : memref<?xf32>)
      outs y(%y : memref<?x?xbf16>) mean(%mean : memref<?xf32>) rstd(%rstd : memref<?xf32>)
      h(%h : memref<?x?xbf16>)
  return
}

// -----

// Two forward ops in one function: one nest each, numbered in order.
// CHECK-LABEL: func @two_forwards
// CHECK: norm.id = 0 : i64, norm.stage = #norm.stage<forward>
// CHECK: norm.id = 1 : i64, norm.stage = #norm.stage<forward>
func.func @two_forwards(%x: memref<?x8xf32>, %y: memref<?x8xf32>, %r: memref<?xf32>,
                        %y2: memref<?x8xf32>, %r2: memref<?xf32>) {
  norm.rms_norm x(%x : memref<?x8xf32>) outs y(%y : memref<?x8xf32>) rstd(%r : memref<?xf32>)
  norm.rms_norm x(%y : memref<?x8xf32>) outs y(%y2 : memref<?x8xf32>) rstd(%r2 : memref<?xf32>)
  return
}

// -----

// A grad op is not norm-lower-forward's (norm-split lowers it): it stays as
// it is, next to the lowered forward.
// CHECK-LABEL: func @grad_left_alone
// CHECK-NOT: norm.rms_norm x
// CHECK: norm.stage = #norm.stage<forward>
// CHECK-NEXT: norm.rms_norm_grad dy(%{{.*}} : memref<?x16xf32>)
// CHECK-NOT: norm.stage
// CHECK: return
func.func @grad_left_alone(%x: memref<?x16xf32>, %y: memref<?x16xf32>, %r: memref<?xf32>,
                           %dy: memref<?x16xf32>, %dx: memref<?x16xf32>) {
  norm.rms_norm x(%x : memref<?x16xf32>) outs y(%y : memref<?x16xf32>) rstd(%r : memref<?xf32>)
  norm.rms_norm_grad dy(%dy : memref<?x16xf32>) x(%x : memref<?x16xf32>)
      rstd(%r : memref<?xf32>) outs dx(%dx : memref<?x16xf32>)
  return
}
