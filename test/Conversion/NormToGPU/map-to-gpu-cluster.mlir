// RUN: norm-opt %s --norm-lower-to-loops --norm-choose-geometry="chip=sm_90 cluster=2" --norm-map-to-gpu=chip=sm_90 | FileCheck %s
// RUN: norm-opt %s --norm-lower-to-loops --norm-choose-geometry=chip=sm_80 --norm-map-to-gpu=chip=sm_80 | FileCheck %s --check-prefix=SM80
// RUN: norm-opt %s --norm-lower-to-loops --norm-choose-geometry="chip=sm_90 cluster=1" --norm-map-to-gpu=chip=sm_90 | FileCheck %s --check-prefix=SM80
// RUN: norm-opt %s --norm-lower-to-loops --norm-choose-geometry=chip=sm_90 --norm-map-to-gpu=chip=sm_90 | FileCheck %s --check-prefix=SM80
// RUN: norm-opt %s --norm-lower-to-loops --norm-choose-geometry="chip=sm_90 cluster=4" --norm-map-to-gpu=chip=sm_90 | FileCheck %s --check-prefix=FORCED
// RUN: not norm-opt %s --norm-choose-geometry=cluster=9 --norm-map-to-gpu 2>&1 | FileCheck %s --check-prefix=SIZE
// RUN: not norm-opt %s --norm-choose-geometry="chip=sm_80 cluster=2" --norm-map-to-gpu=chip=sm_80 2>&1 | FileCheck %s --check-prefix=CHIP

// LayerNorm bf16 N = 8192 on sm_90 with cluster=2: the row is split over
// a cluster of 2 blocks of 256 threads, 4096 columns each (2 chunks of 8
// per lane; both partial rows of the slice in shared memory, 32 KB). The
// launch is G * 2 blocks in clusters of 2; block b is program b / 2, slice
// b % 2. Each row's two sums go across the block (shuffles, one
// shared-memory step), then across the cluster by a push: before the first
// row thread 0 initialises the block's two mbarriers (one a row parity),
// a fence makes them visible to the cluster and every thread arrives at
// the cluster barrier (relaxed); the first row waits for it once, before
// its first push. A row: thread 0 arrives on the row parity's mbarrier
// expecting 2 blocks x 2 sums x 4 bytes and stores its two sums (st.async
// of a v2) into slot [parity][slice] of rank 0's and rank 1's receive
// slots (nvvm.mapa of the slot and of the mbarrier), every thread waits
// for the mbarrier's phase, then adds rank 0's and rank 1's slots from its
// own shared memory. No cluster barrier after the last row.
// CHECK-LABEL: func @layer_norm_grad_n8192
// CHECK-SAME: #norm.kernel<name = "layer_norm_grad_n8192_dx_1", kind = dx, block = 256, grid = programs, lanes = 256, rows = 1, vector = 8, registers = true, cluster = 2, waits = true>
// CHECK: %[[G:.*]] = arith.muli %{{.*}}, %c2{{(_[0-9]+)?}} : index
// CHECK: gpu.launch clusters({{.*}}) in ({{.*}} = %c2{{.*}}, {{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}}) blocks(%[[B:[a-z0-9]+]], {{.*}}) in ({{.*}} = %[[G]], {{.*}}) threads(%[[T:[a-z0-9]+]], {{.*}}) in ({{.*}} = %c256{{.*}}, {{.*}}) module(@layer_norm_grad_n8192_kernels) function(@layer_norm_grad_n8192_dx_1) workgroup(%{{.*}} : memref<4096xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<4096xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<16xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<16xf32, #gpu.address_space<workgroup>>, %[[SLOTS:.*]] : memref<16xf32, #gpu.address_space<workgroup>>, %[[BARS:.*]] : memref<2xi64, #gpu.address_space<workgroup>>)
// CHECK:   %[[SLICE:.*]] = arith.remui %[[B]], %c2
// CHECK:   %[[P:.*]] = arith.divui %[[B]], %c2
// CHECK:   %[[BASE:.*]] = arith.muli %[[SLICE]], %c4096
// CHECK:   %[[LEAD0:.*]] = arith.cmpi eq, %[[T]], %c0
// CHECK:   scf.if %[[LEAD0]] {
// CHECK:     memref.extract_aligned_pointer_as_index %[[BARS]]
// CHECK:     nvvm.mbarrier.init %{{.*}}, %c1_i32
// CHECK:     nvvm.mbarrier.init %{{.*}}, %c1_i32
// CHECK:   }
// CHECK:   nvvm.fence.mbarrier.init
// CHECK:   nvvm.cluster.arrive.relaxed {aligned}
// The 16-byte loads of x, dy and the weight start at the slice's chunk:
// (chunk + BASE / 8) * 8.
// CHECK:   scf.for %[[ROW:[a-z0-9_]+]] = %[[LO:[a-z0-9_]+]] to
// CHECK:     %[[R:.*]] = arith.subi %[[ROW]], %[[LO]]
// CHECK:     %[[PAR:.*]] = arith.remui %[[R]], %c2
// CHECK:     %[[USE:.*]] = arith.divui %[[R]], %c2
// CHECK:     %[[PH:.*]] = arith.remui %[[USE]], %c2
// CHECK:     %[[PHASE:.*]] = arith.index_castui %[[PH]] : index to i32
// CHECK:     %[[FIRSTROW:.*]] = arith.cmpi eq, %[[R]], %c0
// CHECK:     %[[FIRST:.*]] = arith.divui %[[BASE]], %c8
// CHECK:     %[[CHUNK:.*]] = arith.addi %{{.*}}, %[[FIRST]]
// CHECK:     %[[J0:.*]] = arith.muli %[[CHUNK]], %c8
// CHECK:     vector.load %{{.*}}[%[[J0]]]
// CHECK:     gpu.shuffle  xor
// CHECK:     gpu.barrier
// CHECK:     scf.if %[[FIRSTROW]] {
// CHECK-NEXT:  nvvm.cluster.wait {aligned}
// CHECK-NEXT: }
// CHECK:     memref.extract_aligned_pointer_as_index %[[BARS]]
// CHECK:     %[[BAR:.*]] = llvm.inttoptr %{{.*}} : i64 to !llvm.ptr<3>
// CHECK:     %[[SLOTROW:.*]] = arith.muli %[[PAR]], %c8
// CHECK:     scf.if %{{.*}} {
// CHECK:       nvvm.mbarrier.arrive.expect_tx %[[BAR]], %c16_i32{{.*}} : !llvm.ptr<3>, i32
// CHECK:       memref.extract_aligned_pointer_as_index %[[SLOTS]]
// CHECK:       %[[TO0:.*]] = nvvm.mapa %{{.*}}, %c0_i32{{.*}} : !llvm.ptr<3> -> !llvm.ptr<7>
// CHECK:       %[[A0:.*]] = llvm.ptrtoint %[[TO0]] : !llvm.ptr<7> to i32
// CHECK:       %[[BAR0:.*]] = nvvm.mapa %[[BAR]], %c0_i32{{.*}} : !llvm.ptr<3> -> !llvm.ptr<7>
// CHECK:       %[[B0:.*]] = llvm.ptrtoint %[[BAR0]] : !llvm.ptr<7> to i32
// CHECK:       llvm.inline_asm has_side_effects "st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.f32 [$0], {$2, $3}, [$1];", "r,r,f,f,~{memory}" %[[A0]], %[[B0]], %{{.*}}, %{{.*}} : (i32, i32, f32, f32) -> ()
// CHECK:       nvvm.mapa %{{.*}}, %c1_i32{{.*}} : !llvm.ptr<3> -> !llvm.ptr<7>
// CHECK:       nvvm.mapa %[[BAR]], %c1_i32{{.*}} : !llvm.ptr<3> -> !llvm.ptr<7>
// CHECK:       llvm.inline_asm has_side_effects "st.async
// CHECK-NOT:   st.async
// CHECK:     }
// CHECK:     nvvm.mbarrier.try_wait.parity %[[BAR]], %[[PHASE]], %{{.*}} : !llvm.ptr<3>, i32, i32
// The sums: rank 0's slot, then rank 1's (slot [parity][rank][sum]).
// CHECK:     %[[S00:.*]] = arith.addi %[[SLOTROW]], %{{.*}}
// CHECK:     memref.load %[[SLOTS]][%[[S00]]]
// CHECK:     memref.load %[[SLOTS]]
// CHECK:     arith.addf
// CHECK:     memref.load %[[SLOTS]]
// CHECK:     memref.load %[[SLOTS]]
// CHECK:     arith.addf
// CHECK-NOT: nvvm.mapa
// CHECK:     vector.store
// CHECK:   }
// CHECK-NOT: nvvm.cluster
// The partial rows: each thread stores its slice's columns (from BASE) of
// the program's row P, whole (2 x 4096 = N: no bound check).
// Each store is followed only by the finish at G = 1 of that column
// (forwarded: map-to-gpu-one-group-forward.mlir), and no cluster barrier
// follows: each block finishes the columns it stored.
// CHECK:   scf.for
// CHECK:     %[[COL:.*]] = arith.addi %[[BASE]], %{{.*}} : index
// CHECK:     memref.store %{{.*}}[%[[P]], %[[COL]]]
// CHECK-NEXT: scf.if %[[ONE:.*]] {
// CHECK-NOT:   nvvm.cluster
// CHECK:       memref.store %{{.*}}[%[[COL]]] : memref<8192xbf16>
// CHECK-NEXT: }
// CHECK-NOT: nvvm.cluster
// CHECK: gpu.terminator

// Without clusters (sm_80, or cluster=1), and as chosen on sm_90 (one
// block per row: 32 elements a lane, estimated 192 registers, below the
// 255 + 2 arrays that make the split worth its cluster barrier): the
// block per row (on sm_90 it records wave = 2: G = 256 programs, two
// blocks an SM, Geometry.h dxWaveBlocks).
// SM80-LABEL: func @layer_norm_grad_n8192
// SM80-SAME: #norm.kernel<name = "layer_norm_grad_n8192_dx_1", kind = dx, block = 256, grid = programs, lanes = 256, rows = 1, vector = 8, registers = true, shared = 65536{{(, wave = 2)?}}{{(, waits = true)?}}>
// The two partial rows (2 x 8192 f32) in dynamic shared memory, one view
// after the other, and the launch's dynamic size covering both.
// SM80: gpu.launch blocks({{.*}}) dynamic_shared_memory_size %c65536_i32 module(@layer_norm_grad_n8192_kernels) function(@layer_norm_grad_n8192_dx_1)
// SM80: %[[D0:.*]] = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// SM80: memref.view %[[D0]][%c0{{.*}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<8192xf32, #gpu.address_space<workgroup>>
// SM80: %[[D1:.*]] = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// SM80: memref.view %[[D1]][%c32768{{.*}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<8192xf32, #gpu.address_space<workgroup>>
// SM80-NOT: clusters
// SM80-NOT: nvvm.mapa

// cluster=4: 4 blocks of 2048 columns.
// FORCED: #norm.kernel<name = "layer_norm_grad_n8192_dx_1", kind = dx, {{.*}}, cluster = 4, waits = true>
// FORCED: gpu.launch clusters({{.*}}) in ({{.*}} = %c4

// SIZE: norm-choose-geometry: cluster must be 0 (chosen), 1 (never) or 2 to 8, got 9
// CHIP: norm-choose-geometry: cluster=2 needs thread-block clusters of that size, which sm_80 does not have (sm_90 and newer do)
func.func @layer_norm_grad_n8192(%dy: memref<?x8192xbf16>, %x: memref<?x8192xbf16>, %mean: memref<?xf32>,
                                 %rstd: memref<?xf32>, %w: memref<8192xbf16>, %dx: memref<?x8192xbf16>,
                                 %dw: memref<8192xbf16>, %db: memref<8192xbf16>) {
  norm.layer_norm_grad dy(%dy : memref<?x8192xbf16>) x(%x : memref<?x8192xbf16>)
      mean(%mean : memref<?xf32>) rstd(%rstd : memref<?xf32>) weight(%w : memref<8192xbf16>)
      outs dx(%dx : memref<?x8192xbf16>) dweight(%dw : memref<8192xbf16>) dbias(%db : memref<8192xbf16>)
  return
}
