// RUN: norm-opt %s --split-input-file --norm-lower-to-loops --norm-choose-geometry --norm-map-to-gpu | FileCheck %s
// RUN: norm-opt %s --split-input-file --norm-lower-to-loops --norm-choose-geometry=chip=sm_80 --norm-map-to-gpu=chip=sm_80 | FileCheck %s --check-prefix=SM80
// RUN: norm-opt %s --split-input-file --norm-lower-to-loops --norm-choose-geometry --norm-map-to-gpu="reduce-columns=32 reduce-unroll=4" | FileCheck %s --check-prefix=SET
// RUN: norm-opt %s --split-input-file --norm-lower-to-loops --norm-choose-geometry=rows=64 --norm-map-to-gpu=rows=64 | FileCheck %s --check-prefix=FEW
// RUN: not norm-opt %s --norm-lower-to-loops --norm-choose-geometry --norm-map-to-gpu=reduce-columns=24 2>&1 | FileCheck %s --check-prefix=BADC
// RUN: not norm-opt %s --norm-lower-to-loops --norm-choose-geometry --norm-map-to-gpu=reduce-unroll=33 2>&1 | FileCheck %s --check-prefix=BADU

// BADC: norm-map-to-gpu: reduce-columns must be 0, 8, 16 or 32, got 24
// BADU: norm-map-to-gpu: reduce-unroll must be 0 to 32, got 33

// The reduce kernel (ReduceKernel.cpp): a block takes `columns` columns
// and 8 slices of threads; slice s sums the partial rows s, s + 8, ... in
// order, then slice 0 adds the 8 slices' sums in order. The columns a
// block are the most of 32, 16, 8 whose blocks still number the chip's
// SMs (sm_90: 132; sm_80: 108): N = 4096 takes 16 on sm_90 (256 blocks;
// 32 would give 128, fewer than the SMs) and 32 on sm_80 (128 >= 108).
// Neither changes the order of any sum.
// CHECK-LABEL: func @layer_norm_grad_n4096
// CHECK-SAME: #norm.kernel<name = "layer_norm_grad_n4096_reduce_2", kind = reduce, block = 128, grid = columns, columns = 16, waits = true, skip_at_one_group = true>
// SM80-LABEL: func @layer_norm_grad_n4096
// SM80-SAME: #norm.kernel<name = "layer_norm_grad_n4096_reduce_2", kind = reduce, block = 256, grid = columns, columns = 32, skip_at_one_group = true>
// SET-LABEL: func @layer_norm_grad_n4096
// SET-SAME: #norm.kernel<name = "layer_norm_grad_n4096_reduce_2", kind = reduce, block = 256, grid = columns, columns = 32, waits = true, skip_at_one_group = true>
// The batches, software-pipelined: 16 rows a batch (kReduceUnroll), a
// step of 8 x 16 = 128 rows; LayerNorm has two sums a row (dweight,
// dbias), so 32 loads a batch. The loop runs two steps past G
// (kReduceDepth = 2) and carries the two sums and two batches of 16 x 2
// values, zeros at the start (no loads before the loop).
// CHECK: gpu.launch {{.*}} function(@layer_norm_grad_n4096_reduce_2) workgroup(%{{.*}} : memref<8x16xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<8x16xf32, #gpu.address_space<workgroup>>)
// CHECK:   %[[LANE:.*]] = arith.remui %{{.*}}, %c16{{[_0-9]*}}
// CHECK:   %[[SLICE:.*]] = arith.divui %{{.*}}, %c16{{[_0-9]*}}
// CHECK:   scf.if
// CHECK-NOT: memref.load
// CHECK:     %[[END:.*]] = arith.addi %[[G:.*]], %c256{{[_0-9]*}}
// CHECK:     scf.for %[[W0:.*]] = %[[SLICE]] to %[[END]] step %c128{{[_0-9]*}} iter_args(%[[DW:[^ ]*]] = %cst, %[[DB:[^ ]*]] = %cst, %[[A0:[^ ]*]] = %cst{{.*}}) -> ({{(f32, ){65}f32}}) {
// This step's batch: loaded only where its first row is below G, each
// row clamped to the last (row w0 + 8 k), both partial rows of a row.
// CHECK:       %[[HAVE:.*]] = arith.cmpi ult, %[[W0]], %[[G]]
// CHECK:       scf.if %[[HAVE]] -> ({{(f32, ){31}f32}}) {
// CHECK:         %[[R0:.*]] = arith.minui %[[W0]], %[[LAST:.*]] : index
// CHECK:         memref.load %{{.*}}[%[[R0]], %{{.*}}] : memref<?x4096xf32>
// CHECK:         memref.load %{{.*}}[%[[R0]], %{{.*}}] : memref<?x4096xf32>
// CHECK:         %[[N1:.*]] = arith.addi %[[W0]], %c8{{[_0-9]*}}
// CHECK:         %[[R1:.*]] = arith.minui %[[N1]], %[[LAST]] : index
// CHECK-COUNT-30: memref.load
// CHECK:         scf.yield
// CHECK:       } else {
// CHECK-NOT:     memref.load
// CHECK:         scf.yield
// CHECK:       }
// Then the adds of the batch loaded two steps before (rows w0 - 256 + 8 k,
// which wrap past every G in the first two steps): in row order, each
// kept only where its row is below G.
// CHECK:       %[[PREV:.*]] = arith.subi %[[W0]], %c256{{[_0-9]*}}
// CHECK:       %[[OK0:.*]] = arith.cmpi ult, %[[PREV]], %[[G]]
// CHECK:       %[[S0:.*]] = arith.addf %[[DW]], %[[A0]] : f32
// CHECK:       %[[T0:.*]] = arith.addf %[[DB]], %{{.*}} : f32
// CHECK:       %[[DW1:.*]] = arith.select %[[OK0]], %[[S0]], %[[DW]]
// CHECK:       arith.select %[[OK0]], %[[T0]], %[[DB]]
// CHECK:       %[[P1:.*]] = arith.addi %[[PREV]], %c8{{[_0-9]*}}
// CHECK:       %[[OK1:.*]] = arith.cmpi ult, %[[P1]], %[[G]]
// CHECK:       arith.addf %[[DW1]]
// CHECK:       arith.addf
// CHECK:       arith.select %[[OK1]]
// CHECK-COUNT-29: arith.select
// CHECK-NOT:   arith.addf
// CHECK:       scf.yield
// CHECK-NOT: memref.load %{{.*}} : memref<?x4096xf32>
// CHECK:   gpu.barrier
// CHECK: return
// Built for at most 128 rows (the hint's bucket 1-128): G <= 128, so a
// thread has at most 16 rows, one batch; nothing to overlap, so 8 rows a
// batch added in the step that loads them (depth 0: no batch carried, the
// loop ends at G; 40 registers where the pipeline takes 96).
// FEW-LABEL: func @layer_norm_grad_n4096
// FEW: function(@layer_norm_grad_n4096_reduce_2)
// FEW:   scf.for %[[W0:.*]] = %{{.*}} to %[[END:.*]] step %c64{{[_0-9]*}} iter_args(%[[DW:[^ ]*]] = %cst, %[[DB:[^ ]*]] = %cst) -> (f32, f32) {
// FEW:     %[[B:.*]]:16 = scf.if
// FEW-COUNT-16: memref.load
// FEW:     } else {
// FEW:     %[[PREV:.*]] = arith.subi %[[W0]], %c0{{[_0-9]*}}
// FEW:     %[[OK0:.*]] = arith.cmpi ult, %[[PREV]], %[[G:.*]] : index
// FEW:     arith.addf %[[DW]], %[[B]]#0 : f32
// FEW:     arith.addf %[[DB]], %[[B]]#1 : f32
// FEW-COUNT-16: arith.select
// FEW:     scf.yield %{{.*}}, %{{.*}} : f32, f32
// FEW-LABEL: func @rms_norm_grad_n24
// SET: function(@layer_norm_grad_n4096_reduce_2) workgroup(%{{.*}} : memref<8x32xf32, #gpu.address_space<workgroup>>
// SET:   arith.addi %{{.*}}, %c64{{[_0-9]*}}
// SET:   scf.for {{.*}} step %c32{{[_0-9]*}} iter_args
// SET-COUNT-8: memref.load
// SET-NOT: memref.load
// SET:     scf.yield
func.func @layer_norm_grad_n4096(%dy: memref<?x4096xbf16>, %x: memref<?x4096xbf16>, %mean: memref<?xf32>,
                                 %rstd: memref<?xf32>, %w: memref<4096xbf16>, %dx: memref<?x4096xbf16>,
                                 %dw: memref<4096xbf16>, %db: memref<4096xbf16>) {
  norm.layer_norm_grad dy(%dy : memref<?x4096xbf16>) x(%x : memref<?x4096xbf16>) mean(%mean : memref<?xf32>)
      rstd(%rstd : memref<?xf32>) weight(%w : memref<4096xbf16>)
      outs dx(%dx : memref<?x4096xbf16>) dweight(%dw : memref<4096xbf16>) dbias(%db : memref<4096xbf16>)
  return
}

// -----

// RMSNorm: one sum a row, 16 loads a batch (a step of 128 rows). N = 24
// gives 3 blocks of 8 columns (fewer than the SMs at any width); a slice
// of 8 lanes reads one 32-byte sector a row. N = 8192 keeps 32 (256
// blocks).
// CHECK-LABEL: func @rms_norm_grad_n24
// CHECK-SAME: #norm.kernel<name = "rms_norm_grad_n24_reduce_2", kind = reduce, block = 64, grid = columns, columns = 8, waits = true, skip_at_one_group = true>
// CHECK: function(@rms_norm_grad_n24_reduce_2) workgroup(%{{.*}} : memref<8x8xf32, #gpu.address_space<workgroup>>)
// CHECK:   arith.addi %{{.*}}, %c256{{[_0-9]*}}
// CHECK:   scf.for {{.*}} step %c128{{[_0-9]*}} iter_args
// CHECK:     scf.if
// CHECK-COUNT-16: memref.load
// CHECK-NOT: memref.load
// CHECK:     scf.yield
// SM80-LABEL: func @rms_norm_grad_n24
// SM80-SAME: columns = 8, skip_at_one_group = true>
func.func @rms_norm_grad_n24(%dy: memref<?x24xbf16>, %x: memref<?x24xbf16>, %rstd: memref<?xf32>,
                             %w: memref<24xbf16>, %dx: memref<?x24xbf16>, %dw: memref<24xbf16>) {
  norm.rms_norm_grad dy(%dy : memref<?x24xbf16>) x(%x : memref<?x24xbf16>) rstd(%rstd : memref<?xf32>)
      weight(%w : memref<24xbf16>) outs dx(%dx : memref<?x24xbf16>) dweight(%dw : memref<24xbf16>)
  return
}

// -----

// CHECK-LABEL: func @rms_norm_grad_n8192
// CHECK-SAME: #norm.kernel<name = "rms_norm_grad_n8192_reduce_2", kind = reduce, block = 256, grid = columns, columns = 32, waits = true, skip_at_one_group = true>
func.func @rms_norm_grad_n8192(%dy: memref<?x8192xbf16>, %x: memref<?x8192xbf16>, %rstd: memref<?xf32>,
                               %w: memref<8192xbf16>, %dx: memref<?x8192xbf16>, %dw: memref<8192xbf16>) {
  norm.rms_norm_grad dy(%dy : memref<?x8192xbf16>) x(%x : memref<?x8192xbf16>) rstd(%rstd : memref<?xf32>)
      weight(%w : memref<8192xbf16>) outs dx(%dx : memref<?x8192xbf16>) dweight(%dw : memref<8192xbf16>)
  return
}
