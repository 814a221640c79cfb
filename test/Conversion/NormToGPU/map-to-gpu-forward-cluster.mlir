// RUN: norm-opt %s --norm-lower-to-loops --norm-choose-geometry="chip=sm_90 cluster=2" --norm-map-to-gpu=chip=sm_90 | FileCheck %s
// RUN: norm-opt %s --norm-lower-to-loops --norm-choose-geometry="chip=sm_90 tuning=false" --norm-map-to-gpu=chip=sm_90 | FileCheck %s --check-prefix=MODEL
// RUN: norm-opt %s --norm-lower-to-loops --norm-choose-geometry=chip=sm_80 --norm-map-to-gpu=chip=sm_80 | FileCheck %s --check-prefix=MODEL
// RUN: norm-opt %s --norm-lower-to-loops --norm-choose-geometry="chip=sm_90 cluster=8" --norm-map-to-gpu=chip=sm_90 | FileCheck %s --check-prefix=EIGHT

// A forward row split over a thread-block cluster (sm_90): with cluster=2,
// LayerNorm bf16 N = 7168 goes to 2 blocks of 256 threads, 4096 columns
// each (2 chunks of 8 a lane; the second block's last 1024 columns past N).
// One block a row (rows = 1): the launch is ceil(M / 1) * 2 blocks in
// clusters of 2; block b is row b / 2, slice b % 2. Both of the row's sums
// (the mean's, then the centred second moment's) go across the block, then
// across the cluster by a push (map-to-gpu-cluster.mlir: thread 0 stores
// the block's sum into rank 0's and rank 1's receive slots with st.async,
// every thread waits on its block's mbarrier and adds the two slots), each
// sum its own slots and mbarriers; the first row waits once for the
// cluster barrier that makes the mbarriers' initialisation visible. The
// row's mean and rstd are stored by lane 0 of the first block only. No
// cluster barrier after the row.
// CHECK-LABEL: func @layer_norm_n7168
// CHECK-SAME: #norm.kernel<name = "layer_norm_n7168_forward_0", kind = forward, block = 256, grid = row_blocks, lanes = 256, rows = 1, vector = 8, registers = true, cluster = 2, waits = true>
// CHECK: %[[ROWS:.*]] = arith.ceildivui %{{.*}}, %c1
// CHECK: %[[G:.*]] = arith.muli %[[ROWS]], %c2{{(_[0-9]+)?}} : index
// CHECK: gpu.launch clusters({{.*}}) in ({{.*}} = %c2{{.*}}, {{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}}) blocks(%[[B:[a-z0-9]+]], {{.*}}) in ({{.*}} = %[[G]], {{.*}}) threads({{.*}}) in ({{.*}} = %c256{{.*}}, {{.*}}) module(@layer_norm_n7168_kernels) function(@layer_norm_n7168_forward_0) workgroup({{.*}}, %[[SLOTS1:[a-z0-9]+]] : memref<16xf32, #gpu.address_space<workgroup>>, %[[BARS1:[a-z0-9]+]] : memref<2xi64, #gpu.address_space<workgroup>>, %[[SLOTS2:[a-z0-9]+]] : memref<16xf32, #gpu.address_space<workgroup>>, %[[BARS2:[a-z0-9]+]] : memref<2xi64, #gpu.address_space<workgroup>>)
// CHECK:   %[[SLICE:.*]] = arith.remui %[[B]], %c2
// CHECK:   %[[ROW0:.*]] = arith.divui %[[B]], %c2
// CHECK:   %[[BASE:.*]] = arith.muli %[[SLICE]], %c4096
// Both sums' mbarriers, initialised before the row.
// CHECK:   scf.if
// CHECK:     memref.extract_aligned_pointer_as_index %[[BARS1]]
// CHECK:     nvvm.mbarrier.init
// CHECK:     memref.extract_aligned_pointer_as_index %[[BARS1]]
// CHECK:     nvvm.mbarrier.init
// CHECK:     memref.extract_aligned_pointer_as_index %[[BARS2]]
// CHECK:     nvvm.mbarrier.init
// CHECK:     memref.extract_aligned_pointer_as_index %[[BARS2]]
// CHECK:     nvvm.mbarrier.init
// CHECK:   }
// CHECK:   nvvm.fence.mbarrier.init
// CHECK:   nvvm.cluster.arrive.relaxed {aligned}
// CHECK:   scf.for %[[R:.*]] = %{{.*}} to %{{.*}} step
// CHECK:     %[[ROW:.*]] = arith.addi %[[R]],
// CHECK:     %[[LANE0:.*]] = arith.cmpi eq, %{{.*}}, %c0
// CHECK:     %[[FIRST:.*]] = arith.cmpi eq, %[[SLICE]], %c0
// CHECK:     %[[STATS:.*]] = arith.andi %[[LANE0]], %[[FIRST]] : i1
// The mean's sum over the slice's chunks: 16-byte loads from chunk
// (lane + BASE / 8).
// CHECK:     arith.divui %[[BASE]], %c8
// CHECK:     vector.load
// CHECK:     gpu.shuffle  xor
// CHECK:     nvvm.cluster.wait {aligned}
// CHECK:     memref.extract_aligned_pointer_as_index %[[BARS1]]
// CHECK:     nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c8_i32
// CHECK:     memref.extract_aligned_pointer_as_index %[[SLOTS1]]
// CHECK:     nvvm.mapa %{{.*}}, %c0_i32{{.*}} : !llvm.ptr<3> -> !llvm.ptr<7>
// CHECK:     "st.async.shared::cluster.mbarrier::complete_tx::bytes.f32 [$0], $2, [$1];"
// CHECK:     nvvm.mapa %{{.*}}, %c1_i32{{.*}} : !llvm.ptr<3> -> !llvm.ptr<7>
// CHECK:     "st.async.shared::cluster.mbarrier::complete_tx::bytes.f32 [$0], $2, [$1];"
// CHECK:     nvvm.mbarrier.try_wait.parity
// CHECK:     memref.load %[[SLOTS1]]
// CHECK:     memref.load %[[SLOTS1]]
// The second moment's sums, through the second slots and mbarriers (the
// cluster barrier waited on once, before the first).
// CHECK-NOT: nvvm.cluster.wait
// CHECK:     gpu.shuffle  xor
// CHECK-NOT: nvvm.cluster.wait
// CHECK:     memref.extract_aligned_pointer_as_index %[[BARS2]]
// CHECK:     nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c8_i32
// CHECK:     "st.async
// CHECK:     "st.async
// CHECK:     nvvm.mbarrier.try_wait.parity
// CHECK:     memref.load %[[SLOTS2]]
// CHECK:     memref.load %[[SLOTS2]]
// The statistics: the first block's lane 0.
// CHECK:     %[[ST:.*]] = arith.andi %{{.*}}, %[[STATS]] : i1
// CHECK:     scf.if %[[ST]] {
// CHECK:       memref.store %{{.*}}, %arg4[%[[ROW]]] : memref<?xf32>
// CHECK:     %[[ST2:.*]] = arith.andi %{{.*}}, %[[STATS]] : i1
// CHECK:     scf.if %[[ST2]] {
// CHECK:       math.rsqrt
// CHECK:       memref.store %{{.*}}, %arg5[%[[ROW]]] : memref<?xf32>
// The output row, at the slice's columns.
// CHECK:     vector.store
// CHECK:   }
// CHECK-NOT: nvvm.cluster
// CHECK: gpu.terminator

// The cost model never splits a forward row (rows few or many: the row
// shape does not know M), on sm_90 as on sm_80: one block a row.
// MODEL-LABEL: func @layer_norm_n7168
// MODEL-SAME: #norm.kernel<name = "layer_norm_n7168_forward_0", kind = forward, block = 128, grid = row_blocks, lanes = 128, rows = 1, vector = 8, registers = true{{(, waits = true)?}}>
// MODEL-NOT: clusters
// MODEL-NOT: nvvm.mapa
// MODEL-LABEL: func @rms_norm_n65536
// MODEL-SAME: kind = forward
// MODEL-NOT: cluster
// MODEL: return

// cluster=8 at N = 65536: 8 blocks of 8192 columns (RMSNorm f32: 2048
// chunks of 4, 512 lanes of 4 chunks).
// EIGHT-LABEL: func @rms_norm_n65536
// EIGHT-SAME: #norm.kernel<name = "rms_norm_n65536_forward_0", kind = forward, {{.*}}, rows = 1, vector = 4, registers = true, cluster = 8, waits = true>
// EIGHT: gpu.launch clusters({{.*}}) in ({{.*}} = %c8
func.func @layer_norm_n7168(%x: memref<?x7168xbf16>, %w: memref<7168xbf16>, %b: memref<7168xbf16>,
                            %y: memref<?x7168xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>) {
  norm.layer_norm x(%x : memref<?x7168xbf16>) weight(%w : memref<7168xbf16>) bias(%b : memref<7168xbf16>)
      outs y(%y : memref<?x7168xbf16>) mean(%mean : memref<?xf32>) rstd(%rstd : memref<?xf32>)
  return
}

func.func @rms_norm_n65536(%x: memref<?x65536xf32>, %w: memref<65536xf32>,
                           %y: memref<?x65536xf32>, %rstd: memref<?xf32>) {
  norm.rms_norm x(%x : memref<?x65536xf32>) weight(%w : memref<65536xf32>)
      outs y(%y : memref<?x65536xf32>) rstd(%rstd : memref<?xf32>)
  return
}

// The fused residual add split over a cluster of 8 (as the sm_90 table
// splits forward bf16 rows of N = 92683-185364): each block loads its slice's
// chunks of x and residual and stores h there (16-byte accesses at the
// slice's chunk), and y at the same columns.
// EIGHT-LABEL: func @layer_norm_residual_n131072
// EIGHT-SAME: (%[[X:[^:]+]]: memref<?x131072xbf16>, %[[RES:[^:]+]]: memref<?x131072xbf16>, %[[Y:[^:]+]]: memref<?x131072xbf16>, %{{[^:]+}}: memref<?xf32>, %{{[^:]+}}: memref<?xf32>, %[[H:[^:]+]]: memref<?x131072xbf16>)
// EIGHT-SAME: cluster = 8, waits = true>
// EIGHT: %[[SLICE:.*]] = arith.remui %{{.*}}, %c8
// EIGHT: %[[BASE:.*]] = arith.muli %[[SLICE]], %c16384
// EIGHT: arith.divui %[[BASE]], %c8
// EIGHT: vector.load %[[X]][%[[ROW:.*]], %[[J:.*]]] {alignment = 16 : i64}
// EIGHT: vector.load %[[RES]][%[[ROW]], %[[J]]] {alignment = 16 : i64}
// EIGHT: vector.store %{{.*}}, %[[H]][%[[ROW]], %[[J]]] {alignment = 16 : i64}
// EIGHT: nvvm.mbarrier.try_wait.parity
// EIGHT: vector.store %{{.*}}, %[[Y]][%[[ROW]], %{{.*}}] {alignment = 16 : i64}
func.func @layer_norm_residual_n131072(%x: memref<?x131072xbf16>, %res: memref<?x131072xbf16>,
                                       %y: memref<?x131072xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>,
                                       %h: memref<?x131072xbf16>) {
  norm.layer_norm x(%x : memref<?x131072xbf16>) residual(%res : memref<?x131072xbf16>)
      outs y(%y : memref<?x131072xbf16>) mean(%mean : memref<?xf32>) rstd(%rstd : memref<?xf32>) h(%h : memref<?x131072xbf16>)
  return
}

// A forward row the cost model gives half a block (N = 4096 bf16: 128
// lanes, 2 rows a block of 256) still splits where forced (a forward block
// has no partial-row order to keep): 2 blocks of 128 threads, 2048 columns
// each.
// CHECK-LABEL: func @rms_norm_n4096
// CHECK-SAME: #norm.kernel<name = "rms_norm_n4096_forward_0", kind = forward, block = 128, grid = row_blocks, lanes = 128, rows = 1, vector = 8, registers = true, cluster = 2, waits = true>
// MODEL-LABEL: func @rms_norm_n4096
// MODEL-SAME: #norm.kernel<name = "rms_norm_n4096_forward_0", kind = forward, block = 256, grid = row_blocks, lanes = 128, rows = 2, vector = 8, registers = true{{(, waits = true)?}}>
func.func @rms_norm_n4096(%x: memref<?x4096xbf16>, %w: memref<4096xbf16>,
                          %y: memref<?x4096xbf16>, %rstd: memref<?xf32>) {
  norm.rms_norm x(%x : memref<?x4096xbf16>) weight(%w : memref<4096xbf16>)
      outs y(%y : memref<?x4096xbf16>) rstd(%rstd : memref<?xf32>)
  return
}
