// RUN: norm-opt %s --split-input-file --norm-split | FileCheck %s
// RUN: norm-opt %s --split-input-file --norm-split="strategy=atomic groups=8" | FileCheck %s --check-prefix=OVERRIDE

// The faithful form of a LayerNorm backward, deterministic strategy:
// materialised xhat and g in bf16, an f32 [G, N] workspace per output,
// partials before dx (so dx may alias dy), a fixed-order reduce, and the dx
// nest over the same programs.

// CHECK-LABEL: func @layer_norm_grad_bf16
// CHECK-SAME: (%[[DY:[^:]+]]: memref<?x?xbf16>, %[[X:[^:]+]]: memref<?x?xbf16>, %[[MEAN:[^:]+]]: memref<?xf32>, %[[RSTD:[^:]+]]: memref<?xf32>, %[[W:[^:]+]]: memref<?xf32>, %[[DX:[^:]+]]: memref<?x?xbf16>, %[[DW:[^:]+]]: memref<?xf32>, %[[DB:[^:]+]]: memref<?xf32>)
// CHECK-NOT: norm.layer_norm_grad
// CHECK: %[[M:.*]] = memref.dim %[[X]], %c0
// CHECK: %[[N:.*]] = memref.dim %[[X]], %c1
// CHECK: %[[XHAT:.*]] = memref.alloc(%[[M]], %[[N]]) {norm.recomputable} : memref<?x?xbf16>
// CHECK: scf.for %[[I:.*]] =
// CHECK:   memref.load %[[RSTD]][%[[I]]]
// CHECK:   memref.load %[[MEAN]][%[[I]]]
// CHECK:   scf.for %[[J:.*]] =
// CHECK:     %[[XV:.*]] = memref.load %[[X]][%[[I]], %[[J]]] : memref<?x?xbf16>
// CHECK:     %[[D:.*]] = arith.subf %[[XV]], %{{.*}} : bf16
// CHECK:     %[[H:.*]] = arith.mulf %[[D]], %{{.*}} : bf16
// CHECK:     memref.store %[[H]], %[[XHAT]][%[[I]], %[[J]]]
// CHECK: } {norm.accumulate = f32, norm.id = 0 : i64, norm.stage = #norm.stage<xhat>}
// CHECK: %[[G:.*]] = memref.alloc(%[[M]], %[[N]]) {norm.recomputable} : memref<?x?xbf16>
// CHECK: norm.stage = #norm.stage<g>
// The number of partial rows: max(1, min(cap(N), max(ceil(M / r(N)),
// min(M, 128)))) (at most 64 where rows are wide and few), cap(N) the largest of
// 512, 256, 128 with cap * N <= 3 * 2^20, each larger cap kept (times 1)
// when 3 * 2^20 / N reaches it.
// CHECK: %[[BUDGET:.*]] = arith.constant 3145728 : index
// CHECK: %[[PER:.*]] = arith.divui %[[BUDGET]], %{{.*}}
// CHECK: %[[R256:.*]] = arith.divui %[[PER]], %c256
// CHECK: %[[K256:.*]] = arith.minui %[[R256]], %c1
// CHECK: %[[C256:.*]] = arith.muli %[[K256]], %c256
// CHECK: %[[CAP1:.*]] = arith.maxui %c128{{.*}}, %[[C256]]
// CHECK: %[[R512:.*]] = arith.divui %[[PER]], %c512
// CHECK: %[[K512:.*]] = arith.minui %[[R512]], %c1
// CHECK: %[[C512:.*]] = arith.muli %[[K512]], %c512
// CHECK: %[[CAP:.*]] = arith.maxui %[[CAP1]], %[[C512]]
// Then at least r(N) = ceil(4096 / N) rows a program while that leaves 128:
// CHECK: %[[R:.*]] = arith.ceildivui %c4096{{.*}}, %{{.*}}
// CHECK: %[[BYROWS:.*]] = arith.ceildivui %[[M]], %[[R]]
// CHECK: %[[FILL:.*]] = arith.minui %[[M]], %c128
// CHECK: %[[WANT:.*]] = arith.maxui %[[BYROWS]], %[[FILL]]
// CHECK: %[[CAPPED:.*]] = arith.minui %[[CAP]], %[[WANT]]
// Wide rows, few of them (3 * 2^20 / N <= 128, 128 < M <= 512): at most
// 64 programs.
// CHECK: %[[NARROW:.*]] = arith.cmpi ule, %[[PER]], %c128
// CHECK: %[[MORE:.*]] = arith.cmpi ugt, %[[M]], %c128
// CHECK: %[[FEW:.*]] = arith.cmpi ule, %[[M]], %c512
// CHECK: %[[SOME:.*]] = arith.andi %[[MORE]], %[[FEW]] : i1
// CHECK: %[[WIDE:.*]] = arith.andi %[[NARROW]], %[[SOME]] : i1
// CHECK: %[[AT64:.*]] = arith.minui %[[CAPPED]], %c64
// CHECK: %[[CHOSEN:.*]] = arith.select %[[WIDE]], %[[AT64]], %[[CAPPED]] : index
// CHECK: %[[GROUPS:.*]] = arith.maxui %[[CHOSEN]], %c1
// CHECK: %[[R:.*]] = arith.ceildivui %[[M]], %[[GROUPS]]
// CHECK: %[[WSW:.*]] = memref.alloc(%[[GROUPS]], %[[N]]) {norm.workspace} : memref<?x?xf32>
// CHECK: %[[WSB:.*]] = memref.alloc(%[[GROUPS]], %[[N]]) {norm.workspace} : memref<?x?xf32>
// CHECK: norm.stage = #norm.stage<zero>
// Program p owns rows [p * R, min(p * R + R, M)) and adds into partial row p.
// CHECK: scf.for %[[P:.*]] = %{{.*}} to %[[GROUPS]]
// CHECK:   %[[LO:.*]] = arith.muli %[[P]], %[[R]]
// CHECK:   scf.for %[[ROW:.*]] = %[[LO]] to
// CHECK:     scf.for %[[C:.*]] =
// CHECK:       memref.load %[[WSW]][%[[P]], %[[C]]]
// CHECK:       arith.addf {{.*}} : f32
// CHECK:       memref.store {{.*}}, %[[WSW]][%[[P]], %[[C]]]
// CHECK: norm.stage = #norm.stage<partials>
// CHECK: scf.for %[[COL:.*]] =
// CHECK:   %[[SUMS:.*]]:2 = scf.for %[[Q:.*]] = %{{.*}} to %[[GROUPS]] {{.*}} -> (f32, f32)
// CHECK:   memref.store %[[SUMS]]#0, %[[DW]][%[[COL]]] : memref<?xf32>
// CHECK:   memref.store %[[SUMS]]#1, %[[DB]][%[[COL]]] : memref<?xf32>
// CHECK: norm.stage = #norm.stage<reduce>
// dx = fma(rstd, g, fma(xhat, -rstd mean(g xhat), -rstd mean(g))): the
// in-row sum of g xhat fused too.
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[GROUPS]]
// CHECK:   %[[RSL:.*]] = memref.load %[[RSTD]]
// CHECK:   %[[RS:.*]] = arith.truncf %[[RSL]] : f32 to bf16
// CHECK:   %[[S:.*]]:2 = scf.for {{.*}} iter_args(%[[SG:.*]] = %{{.*}}, %[[SGX:.*]] = %{{.*}}) -> (bf16, bf16)
// CHECK:     %[[GV:.*]] = memref.load %[[G]]
// CHECK:     %[[HV:.*]] = memref.load %[[XHAT]]
// CHECK:     arith.addf %[[SG]], %[[GV]] : bf16
// CHECK:     math.fma %[[GV]], %[[HV]], %[[SGX]] : bf16
// CHECK:   %[[MG:.*]] = arith.divf %[[S]]#0
// CHECK:   %[[MGX:.*]] = arith.divf %[[S]]#1
// CHECK:   %[[P1:.*]] = arith.mulf %[[RS]], %[[MGX]] : bf16
// CHECK:   %[[KX:.*]] = arith.negf %[[P1]] : bf16
// CHECK:   %[[P2:.*]] = arith.mulf %[[RS]], %[[MG]] : bf16
// CHECK:   %[[KC:.*]] = arith.negf %[[P2]] : bf16
// CHECK:   scf.for
// CHECK:     %[[GV2:.*]] = memref.load %[[G]]
// CHECK:     %[[HV2:.*]] = memref.load %[[XHAT]]
// CHECK:     %[[T:.*]] = math.fma %[[HV2]], %[[KX]], %[[KC]] : bf16
// CHECK:     %[[OUT:.*]] = math.fma %[[RS]], %[[GV2]], %[[T]] : bf16
// CHECK:     memref.store %[[OUT]], %[[DX]]
// CHECK: norm.stage = #norm.stage<dx>
// CHECK: memref.dealloc %[[WSW]]
// CHECK: memref.dealloc %[[WSB]]
// CHECK: memref.dealloc %[[XHAT]]
// CHECK: memref.dealloc %[[G]]

// OVERRIDE-LABEL: func @layer_norm_grad_bf16
// OVERRIDE: %[[C8:.*]] = arith.constant 8 : index
// OVERRIDE: memref.alloc(%{{.*}}) {norm.workspace} : memref<1x?xf32>
// OVERRIDE: memref.atomic_rmw addf
func.func @layer_norm_grad_bf16(%dy: memref<?x?xbf16>, %x: memref<?x?xbf16>, %mean: memref<?xf32>,
                                %rstd: memref<?xf32>, %w: memref<?xf32>, %dx: memref<?x?xbf16>,
                                %dw: memref<?xf32>, %db: memref<?xf32>) {
  norm.layer_norm_grad dy(%dy : memref<?x?xbf16>) x(%x : memref<?x?xbf16>)
      mean(%mean : memref<?xf32>) rstd(%rstd : memref<?xf32>) weight(%w : memref<?xf32>)
      outs dx(%dx : memref<?x?xbf16>) dweight(%dw : memref<?xf32>) dbias(%db : memref<?xf32>)
  return
}

// -----

// No weight and no dweight: g is dy itself, no workspace, no partials.
// CHECK-LABEL: func @rms_norm_grad_no_weight
// CHECK: memref.alloc({{.*}}) {norm.recomputable} : memref<?x128xf32>
// CHECK-NOT: norm.recomputable
// CHECK-NOT: norm.stage = #norm.stage<partials>
// No partial rows, so no strategy on the dx nest.
// CHECK: {norm.accumulate = f32, norm.id = 0 : i64, norm.stage = #norm.stage<dx>}
func.func @rms_norm_grad_no_weight(%dy: memref<?x128xf32>, %x: memref<?x128xf32>,
                                   %rstd: memref<?xf32>, %dx: memref<?x128xf32>) {
  norm.rms_norm_grad dy(%dy : memref<?x128xf32>) x(%x : memref<?x128xf32>)
      rstd(%rstd : memref<?xf32>) outs dx(%dx : memref<?x128xf32>)
  return
}

// -----

// grouped_atomic with a fixed number of groups: row r adds into r mod 64.
// CHECK-LABEL: func @rms_norm_grad_grouped_atomic
// CHECK: %[[G64:.*]] = arith.constant 64 : index
// CHECK: memref.alloc() {norm.workspace} : memref<64x24xf32>
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[G64]]
// CHECK:   scf.for %[[ROW:.*]] =
// CHECK:     %[[T:.*]] = arith.remui %[[ROW]], %[[G64]]
// CHECK:       memref.atomic_rmw addf %{{.*}}, %{{.*}}[%[[T]], %{{.*}}]
// The strategy is recorded on every nest of the reduction, and on dx.
// CHECK: norm.stage = #norm.stage<partials>, norm.strategy = #norm.strategy<grouped_atomic>
// CHECK: norm.stage = #norm.stage<reduce>, norm.strategy = #norm.strategy<grouped_atomic>
// CHECK: norm.stage = #norm.stage<dx>, norm.strategy = #norm.strategy<grouped_atomic>
func.func @rms_norm_grad_grouped_atomic(%dy: memref<?x24xbf16>, %x: memref<?x24xbf16>,
                                        %rstd: memref<?xf32>, %w: memref<24xbf16>,
                                        %dx: memref<?x24xbf16>, %dw: memref<24xbf16>) {
  norm.rms_norm_grad dy(%dy : memref<?x24xbf16>) x(%x : memref<?x24xbf16>)
      rstd(%rstd : memref<?xf32>) weight(%w : memref<24xbf16>)
      outs dx(%dx : memref<?x24xbf16>) dweight(%dw : memref<24xbf16>)
      {strategy = #norm.strategy<grouped_atomic>, groups = 64}
  return
}

// -----

// locked: a spin lock per group (atomic exchange) around the row's update.
// CHECK-LABEL: func @layer_norm_grad_locked
// CHECK: %[[LOCKS:.*]] = memref.alloc(%{{.*}}) {norm.workspace} : memref<?xi32>
// CHECK: scf.while
// CHECK:   memref.atomic_rmw assign %{{.*}}, %[[LOCKS]]
// CHECK:   scf.condition
// CHECK: scf.for
// CHECK: memref.atomic_rmw assign %{{.*}}, %[[LOCKS]]
// CHECK: norm.stage = #norm.stage<partials>, norm.strategy = #norm.strategy<locked>
func.func @layer_norm_grad_locked(%dy: memref<?x8xf32>, %x: memref<?x8xf32>, %mean: memref<?xf32>,
                                  %rstd: memref<?xf32>, %dx: memref<?x8xf32>, %db: memref<8xf32>) {
  norm.layer_norm_grad dy(%dy : memref<?x8xf32>) x(%x : memref<?x8xf32>)
      mean(%mean : memref<?xf32>) rstd(%rstd : memref<?xf32>)
      outs dx(%dx : memref<?x8xf32>) dbias(%db : memref<8xf32>) {strategy = #norm.strategy<locked>}
  return
}

// -----

// Rank 3 collapses to [rows, N]; zero-centred weight adds 1; dresidual is
// added into dx.
// CHECK-LABEL: func @rms_norm_grad_rank3
// CHECK: memref.collapse_shape %{{.*}} {{\[\[}}0, 1], [2]] : memref<2x?x24xf16> into memref<?x24xf16>
// CHECK: memref.collapse_shape %{{.*}} {{\[\[}}0, 1]] : memref<2x?xf32> into memref<?xf32>
// CHECK: arith.constant 1.000000e+00 : f32
// CHECK: norm.stage = #norm.stage<g>
// CHECK: norm.stage = #norm.stage<partials>
// CHECK: arith.addf
// CHECK: memref.store
// CHECK: norm.stage = #norm.stage<dx>
func.func @rms_norm_grad_rank3(%dy: memref<2x?x24xf16>, %x: memref<2x?x24xf16>, %rstd: memref<2x?xf32>,
                               %w: memref<24xf16>, %res: memref<2x?x24xf16>, %dx: memref<2x?x24xf16>,
                               %dw: memref<24xf16>) {
  norm.rms_norm_grad dy(%dy : memref<2x?x24xf16>) x(%x : memref<2x?x24xf16>)
      rstd(%rstd : memref<2x?xf32>) weight(%w : memref<24xf16>) dresidual(%res : memref<2x?x24xf16>)
      outs dx(%dx : memref<2x?x24xf16>) dweight(%dw : memref<24xf16>) {zero_centered_weight}
  return
}

// -----

// A stored xhat is used as is: no xhat nest.
// CHECK-LABEL: func @layer_norm_grad_from_xhat
// CHECK-NOT: norm.stage = #norm.stage<xhat>
// CHECK: norm.stage = #norm.stage<dx>
func.func @layer_norm_grad_from_xhat(%dy: memref<?x64xf32>, %xhat: memref<?x64xf32>,
                                     %rstd: memref<?xf32>, %dx: memref<?x64xf32>) {
  norm.layer_norm_grad dy(%dy : memref<?x64xf32>) xhat(%xhat : memref<?x64xf32>)
      rstd(%rstd : memref<?xf32>) outs dx(%dx : memref<?x64xf32>)
  return
}

// -----

// A forward op is not norm-split's (norm-lower-forward lowers it): it stays
// as it is, next to the lowered grad.
// CHECK-LABEL: func @forward_left_alone
// CHECK: norm.rms_norm x(%{{.*}} : memref<?x16xf32>)
// CHECK-NOT: norm.rms_norm_grad
// CHECK: norm.stage = #norm.stage<dx>
// CHECK: return
func.func @forward_left_alone(%x: memref<?x16xf32>, %y: memref<?x16xf32>, %r: memref<?xf32>,
                              %dy: memref<?x16xf32>, %dx: memref<?x16xf32>) {
  norm.rms_norm x(%x : memref<?x16xf32>) outs y(%y : memref<?x16xf32>) rstd(%r : memref<?xf32>)
  norm.rms_norm_grad dy(%dy : memref<?x16xf32>) x(%x : memref<?x16xf32>)
      rstd(%r : memref<?xf32>) outs dx(%dx : memref<?x16xf32>)
  return
}
