// RUN: norm-opt %s --split-input-file --norm-lower-to-loops --norm-choose-geometry="tuning=false partial-vector=4" --norm-map-to-gpu | FileCheck %s
// RUN: norm-opt %s --split-input-file --norm-lower-to-loops --norm-choose-geometry="tuning=false partial-vector=2" --norm-map-to-gpu | FileCheck %s --check-prefix=TWO
// RUN: norm-opt %s --split-input-file --norm-lower-to-loops --norm-choose-geometry=tuning=false --norm-map-to-gpu | FileCheck %s --check-prefix=ONE

// LayerNorm bf16 N = 4096 (the cost model: 256 threads, 2 chunks of 8
// columns a lane, one row in flight, both partial rows in shared memory).
// With partial_vector = 4 the lane's sums sit in groups of W = 4 slots,
// slot ((q / 4) L + lane) 4 + q % 4 for q = k V + e: on the vector path
// each chunk loads and stores its 8 sums of a partial row as two 16-byte
// vectors at 1024 q / 4 + 4 lane (lanes 16 bytes apart: no bank
// conflicts). The write-back maps column j back to its slot. W = 2: four
// 8-byte vectors a chunk. W = 1 (the default): a word a load and a store,
// slot q L + lane.
// CHECK-LABEL: func @layer_norm_grad_n4096
// CHECK-SAME: #norm.kernel<name = "layer_norm_grad_n4096_dx_1", kind = dx, block = 256, grid = programs, lanes = 256, rows = 1, vector = 8, registers = true, wave = 4, waits = true>
// CHECK: gpu.launch
// CHECK-SAME: workgroup(%{{.*}} : memref<4096xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<4096xf32, #gpu.address_space<workgroup>>
// CHECK: scf.if
// Chunk 0: groups at 0 and 1024, dweight's then dbias's.
// CHECK: %[[DW:.*]] = vector.load %[[DWACC:[a-z0-9_]+]][%{{.*}}] {alignment = 16 : i64} : memref<4096xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK: vector.extract %[[DW]][0]
// CHECK: vector.load %[[DBACC:[a-z0-9_]+]][%{{.*}}] {alignment = 16 : i64} : memref<4096xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK: vector.extract %[[DW]][3]
// CHECK: vector.store %{{.*}}, %[[DWACC]][%{{.*}}] {alignment = 16 : i64} : memref<4096xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK: vector.store %{{.*}}, %[[DBACC]][%{{.*}}] {alignment = 16 : i64} : memref<4096xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK: arith.constant 1024 : index
// CHECK: vector.load %[[DWACC]]
// CHECK: vector.load %[[DBACC]]
// CHECK: vector.store %{{.*}}, %[[DWACC]]
// CHECK: vector.store %{{.*}}, %[[DBACC]]
// CHECK-NOT: memref.load %[[DWACC]]
// The element path (rows not 16-byte aligned at run time): a word each.
// CHECK: } else {
// CHECK: memref.load %[[DWACC]]
// CHECK: memref.store %{{.*}}, %[[DWACC]]
// Chunk 1: groups at 2048 and 3072.
// CHECK: arith.constant 2048 : index
// CHECK: vector.load %[[DWACC]]
// CHECK: arith.constant 3072 : index
// CHECK: vector.load %[[DWACC]]
// The write-back: column j is element e = j % 8 of chunk c = j / 8, lane
// c % 256's chunk k = c / 256; q = 8 k + e.
// CHECK: gpu.barrier
// CHECK: scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK: %[[C:.*]] = arith.divui %[[J]], %{{.*}} : index
// CHECK: %[[E:.*]] = arith.remui %[[J]], %{{.*}} : index
// CHECK: %[[OWNER:.*]] = arith.remui %[[C]], %{{.*}} : index
// CHECK: %[[K:.*]] = arith.divui %[[C]], %{{.*}} : index
// CHECK: %[[K8:.*]] = arith.muli %[[K]], %{{.*}} : index
// CHECK: %[[Q:.*]] = arith.addi %[[K8]], %[[E]] : index
// CHECK: %[[G:.*]] = arith.divui %[[Q]], %[[C4:.*]] : index
// CHECK: %[[GL:.*]] = arith.muli %[[G]], %{{.*}} : index
// CHECK: %[[GROUP:.*]] = arith.addi %[[GL]], %[[OWNER]] : index
// CHECK: %[[BASE:.*]] = arith.muli %[[GROUP]], %{{.*}} : index
// CHECK: %[[R:.*]] = arith.remui %[[Q]], %{{.*}} : index
// CHECK: %[[SLOT:.*]] = arith.addi %[[BASE]], %[[R]] : index
// CHECK: memref.load %[[DWACC]][%[[SLOT]]]
// TWO-LABEL: func @layer_norm_grad_n4096
// TWO-COUNT-4: vector.load %{{.*}} {alignment = 8 : i64} : memref<4096xf32, #gpu.address_space<workgroup>>, vector<2xf32>
// TWO-NOT: vector<4xf32>
// TWO: vector.store %{{.*}} {alignment = 8 : i64} : memref<4096xf32, #gpu.address_space<workgroup>>, vector<2xf32>
// ONE-LABEL: func @layer_norm_grad_n4096
// ONE-NOT: address_space<workgroup>>, vector
// ONE: %[[ACC:.*]] = memref.load %{{.*}} : memref<4096xf32, #gpu.address_space<workgroup>>
// ONE-NOT: address_space<workgroup>>, vector
// ONE: gpu.terminator
func.func @layer_norm_grad_n4096(%dy: tensor<?x4096xbf16>, %x: tensor<?x4096xbf16>, %mean: tensor<?xf32>, %rstd: tensor<?xf32>, %w: tensor<4096xbf16>) -> (tensor<?x4096xbf16>, tensor<4096xbf16>, tensor<4096xbf16>) {
  %dx, %dw, %db = norm.layer_norm_grad dy(%dy : tensor<?x4096xbf16>) x(%x : tensor<?x4096xbf16>) mean(%mean : tensor<?xf32>) rstd(%rstd : tensor<?xf32>) weight(%w : tensor<4096xbf16>) -> dx(tensor<?x4096xbf16>) dweight(tensor<4096xbf16>) dbias(tensor<4096xbf16>)
  return %dx, %dw, %db : tensor<?x4096xbf16>, tensor<4096xbf16>, tensor<4096xbf16>
}

// -----

// RMSNorm bf16 N = 12288: the partial row (48 KB) in dynamic shared memory,
// two bodies (layout = both). The vector body groups its sums (12 vector
// loads and stores a row, 6 chunks x 2 groups); the interleaved body,
// whose lanes read a word each at consecutive columns, keeps its own slots
// a word a lane (W = 1: slot q L + lane is column j itself).
// CHECK-LABEL: func @rms_norm_grad_n12288
// CHECK: gpu.launch
// CHECK-COUNT-12: vector.store %{{.*}}, %[[ACC:[a-z0-9_]+]][%{{.*}}] {alignment = 16 : i64} : memref<12288xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK: } else {
// CHECK: } else {
// CHECK-NOT: address_space<workgroup>>, vector<4xf32>
// CHECK: gpu.barrier
// CHECK: scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT: arith.constant 256 : index
// CHECK-NEXT: %[[Q:.*]] = arith.divui %[[J]], %{{.*}} : index
// CHECK-NEXT: arith.constant 256 : index
// CHECK-NEXT: %[[LANE:.*]] = arith.remui %[[J]], %{{.*}} : index
// CHECK-NEXT: %[[C256:.*]] = arith.constant 256 : index
// CHECK-NEXT: %[[QL:.*]] = arith.muli %[[Q]], %[[C256]] : index
// CHECK-NEXT: %[[SLOT:.*]] = arith.addi %[[QL]], %[[LANE]] : index
// CHECK-NEXT: memref.load %[[ACC]][%[[SLOT]]] : memref<12288xf32, #gpu.address_space<workgroup>>
// CHECK: gpu.terminator
func.func @rms_norm_grad_n12288(%dy: tensor<?x12288xbf16>, %x: tensor<?x12288xbf16>, %rstd: tensor<?xf32>, %w: tensor<12288xbf16>) -> (tensor<?x12288xbf16>, tensor<12288xbf16>) {
  %dx, %dw = norm.rms_norm_grad dy(%dy : tensor<?x12288xbf16>) x(%x : tensor<?x12288xbf16>) rstd(%rstd : tensor<?xf32>) weight(%w : tensor<12288xbf16>) -> dx(tensor<?x12288xbf16>) dweight(tensor<12288xbf16>)
  return %dx, %dw : tensor<?x12288xbf16>, tensor<12288xbf16>
}

// -----

// The write-back where the threads' steps do not divide N (RMSNorm bf16 N
// = 5000, 128 threads, the partial row in shared memory): 8 columns a step
// (step 1024), each loaded at min(j, N - 1), all loads before the stores,
// and each store kept to j < N (the sums' slots padded to 5120).
// ONE-LABEL: func @rms_norm_grad_n5000
// ONE: scf.for %[[J:.*]] = %{{.*}} to %[[N:c5000[_0-9]*]] step %c1024{{[_0-9]*}} {
// ONE-NEXT: %[[LAST:.*]] = arith.constant 4999 : index
// ONE-NEXT: %[[J0:.*]] = arith.minui %[[J]], %[[LAST]] : index
// ONE-COUNT-8: memref.load %[[ACC:[a-z0-9_]+]][%{{.*}}] : memref<5120xf32, #gpu.address_space<workgroup>>
// ONE-NOT: memref.load
// ONE: %[[IN:.*]] = arith.cmpi ult, %[[J]], %c5000{{[_0-9]*}} : index
// ONE-NEXT: scf.if %[[IN]] {
// ONE-NEXT: memref.store %{{.*}}, %{{.*}}[%{{.*}}, %[[J]]] : memref<?x5000xf32>
// ONE-COUNT-7: scf.if
// ONE: gpu.terminator
func.func @rms_norm_grad_n5000(%dy: tensor<?x5000xbf16>, %x: tensor<?x5000xbf16>, %rstd: tensor<?xf32>, %w: tensor<5000xbf16>) -> (tensor<?x5000xbf16>, tensor<5000xbf16>) {
  %dx, %dw = norm.rms_norm_grad dy(%dy : tensor<?x5000xbf16>) x(%x : tensor<?x5000xbf16>) rstd(%rstd : tensor<?xf32>) weight(%w : tensor<5000xbf16>) -> dx(tensor<?x5000xbf16>) dweight(tensor<5000xbf16>)
  return %dx, %dw : tensor<?x5000xbf16>, tensor<5000xbf16>
}
