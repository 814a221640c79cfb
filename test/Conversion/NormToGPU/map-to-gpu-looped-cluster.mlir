// RUN: norm-opt %s --norm-lower-to-loops --norm-choose-geometry="chip=sm_90 cluster=8 max-register-elements=32" --norm-map-to-gpu=chip=sm_90 | FileCheck %s
// RUN: norm-opt %s --norm-lower-to-loops --norm-choose-geometry="chip=sm_90 cluster=8 max-register-elements=32" | FileCheck %s --check-prefix=GEOM
// RUN: norm-opt %s --norm-lower-to-loops --norm-choose-geometry=chip=sm_90 | FileCheck %s --check-prefix=DEFAULT

// RMSNorm bf16 N = 262144 with cluster=8 and max-register-elements=32: no
// slice of 8 blocks holds the row in registers within that bound (32768
// columns a block: 64 elements a lane at 512 threads), so each block of the looped
// regime (512 threads) walks its slice of the row in a loop: the slice is
// 8 chunks a lane x 512 lanes x 8 = 32768 columns, block b is program
// b / 8, slice b % 8 at column (b % 8) * 32768. One row at a time (batch 1):
// the row's sum goes across the block, then across the cluster (pushed
// to the 8 blocks: 2 parities x 8 ranks x 4 slots of f32 and 2 mbarriers,
// 272 bytes of the 400 of shared memory); the
// program's partial row is updated in global memory at the slice's
// columns only.
// GEOM: norm.geometry = #norm.row_geometry<regime = looped, threads = 512, lanes = 512, rows = 1, vector = 8, chunks = 8, partials = global, cluster = 8, shared = 400>
// CHECK-LABEL: func @rms_norm_grad_n262144
// CHECK-SAME: #norm.kernel<name = "rms_norm_grad_n262144_dx_1", kind = dx, block = 512, grid = programs, lanes = 512, rows = 1, vector = 8, registers = false, cluster = 8, waits = true>
// CHECK: gpu.launch clusters({{.*}}) in ({{.*}} = %c8{{.*}}, {{.*}}) blocks(%[[B:[a-z0-9]+]], {{.*}}) in {{.*}} threads({{.*}}) in ({{.*}} = %c512{{.*}}, {{.*}})
// CHECK:   %[[SLICE:.*]] = arith.remui %[[B]], %c8
// CHECK:   %[[P:.*]] = arith.divui %[[B]], %c8
// CHECK:   %[[BASE:.*]] = arith.muli %[[SLICE]], %c32768
// The rows, one at a time; the slice's chunks: min(N - BASE, 32768) / 8,
// from the lane in steps of 512 (unrolled by 4).
// CHECK:   scf.for %{{.*}} = %[[LO:[a-z0-9_]+]] to %[[HI:[a-z0-9_]+]] step
// CHECK:     %[[LEFT:.*]] = arith.subi %c262144{{.*}}, %[[BASE]] : index
// CHECK:     %[[SPAN:.*]] = arith.minui %[[LEFT]], %c32768{{.*}} : index
// CHECK:     arith.ceildivui %[[SPAN]], %c8
// CHECK:     scf.for {{.*}} iter_args
// CHECK:       arith.divui %[[BASE]], %c8
// CHECK:       vector.load
// CHECK:       memref.store %{{.*}}, %{{.*}}[%[[P]], %{{.*}}] : memref<?x262144xf32>
// The push to the 8 blocks: a slot and an mbarrier address each.
// CHECK:     nvvm.cluster.wait {aligned}
// CHECK:     nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c64_i32
// CHECK-COUNT-16: nvvm.mapa
// CHECK:     nvvm.mbarrier.try_wait.parity
// No cluster barrier after the rows.
// CHECK-NOT: nvvm.cluster
// A program without rows writes zeros to its partial row, each block only
// its slice's columns.
// CHECK:   %[[EMPTY:.*]] = arith.cmpi uge, %[[LO]], %[[HI]]
// CHECK:   scf.if %[[EMPTY]]
// CHECK:     %[[FROM:.*]] = arith.addi %[[BASE]], %{{.*}} : index
// CHECK:     %[[END:.*]] = arith.addi %[[BASE]], %c32768{{.*}} : index
// CHECK:     %[[TO:.*]] = arith.minui %{{.*}}, %[[END]] : index
// CHECK:     scf.for {{.*}} = %[[FROM]] to %[[TO]] step %c512
// CHECK: gpu.terminator

// The cost model alone keeps one looped block per row here (the split is
// unmeasured on the GPU, so only an option or a tuning entry takes it).
// DEFAULT: norm.geometry = #norm.row_geometry<regime = looped, threads = 512, lanes = 512, rows = 1, vector = 8, partials = global, batch = 4, shared = 512>
func.func @rms_norm_grad_n262144(%dy: tensor<?x262144xbf16>, %x: tensor<?x262144xbf16>, %r: tensor<?xf32>, %w: tensor<262144xbf16>) -> (tensor<?x262144xbf16>, tensor<262144xbf16>) {
  %dx, %dw = norm.rms_norm_grad dy(%dy : tensor<?x262144xbf16>) x(%x : tensor<?x262144xbf16>) rstd(%r : tensor<?xf32>) weight(%w : tensor<262144xbf16>) -> dx(tensor<?x262144xbf16>) dweight(tensor<262144xbf16>)
  return %dx, %dw : tensor<?x262144xbf16>, tensor<262144xbf16>
}
