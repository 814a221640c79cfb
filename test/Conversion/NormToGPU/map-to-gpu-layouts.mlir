// RUN: norm-opt %s --split-input-file --norm-lower-to-loops --norm-choose-geometry --norm-map-to-gpu --canonicalize --cse | FileCheck %s

// How a lane's chunks map to columns (RowContext.h, RowLayouts in
// Geometry.h). N = 4095 bf16: a row is 8190 bytes, so rows can never all
// be 16-byte aligned. One body, interleaved layout: no vector access, and
// element e of the lane's chunk k is column k*2048 + e*256 + lane, so the
// 256 lanes read 256 consecutive columns per access (coalesced). The first
// group of chunks ([0, 2048)) needs no bound check, the second does.
// CHECK-LABEL: func @rms_norm_grad_n4095
// CHECK: gpu.launch {{.*}} function(@rms_norm_grad_n4095_dx_1)
// CHECK-NOT: vector.load
// CHECK:   %[[LANE:.*]] = arith.remui %{{.*}}, %c256 : index
// CHECK:   scf.for
// CHECK:     memref.load %{{.*}}[%{{.*}}, %[[LANE]]] : memref<?x4095xbf16>
// CHECK:     %[[E1:.*]] = arith.addi %[[LANE]], %c256 : index
// CHECK:     memref.load %{{.*}}[%{{.*}}, %[[E1]]] : memref<?x4095xbf16>
// CHECK:     %[[G1:.*]] = arith.addi %[[LANE]], %c2048 : index
// CHECK:     %[[IN:.*]] = arith.cmpi ult, %[[G1]], %c4095 : index
// CHECK:     scf.if %[[IN]]
// CHECK:       memref.load %{{.*}}[%{{.*}}, %[[G1]]] : memref<?x4095xbf16>
// CHECK-NOT: vector.load
// CHECK: gpu.launch {{.*}} function(@rms_norm_grad_n4095_reduce_2)
func.func @rms_norm_grad_n4095(%dy: memref<?x4095xbf16>, %x: memref<?x4095xbf16>, %rstd: memref<?xf32>,
                               %w: memref<4095xbf16>, %dx: memref<?x4095xbf16>, %dw: memref<4095xbf16>) {
  norm.rms_norm_grad dy(%dy : memref<?x4095xbf16>) x(%x : memref<?x4095xbf16>) rstd(%rstd : memref<?xf32>)
      weight(%w : memref<4095xbf16>) outs dx(%dx : memref<?x4095xbf16>) dweight(%dw : memref<4095xbf16>)
  return
}

// -----

// N = 8192 bf16: 32 elements a lane (more than kBatchedLoadsShare). Two
// bodies under the run-time alignment check: aligned rows take the vector
// layout with every chunk's 16-byte loads issued with no per-chunk check;
// others the interleaved layout.
// CHECK-LABEL: func @rms_norm_grad_n8192
// CHECK: gpu.launch {{.*}} function(@rms_norm_grad_n8192_dx_1)
// CHECK:   scf.if %{{.*}} {
// CHECK-NEXT: scf.for
// CHECK:       scf.if %{{.*}} -> (f32) {
// CHECK-NEXT:    memref.load %{{.*}} : memref<?xf32>
// CHECK-NEXT:    arith.muli
// CHECK-NEXT:    vector.load {{.*}} : memref<8192xbf16>, vector<8xbf16>
// CHECK-NEXT:    vector.load {{.*}} : memref<?x8192xbf16>, vector<8xbf16>
// CHECK-NEXT:    vector.load {{.*}} : memref<?x8192xbf16>, vector<8xbf16>
// The interleaved body: the weight read one element at a time.
// CHECK:       memref.load %{{.*}}[%{{.*}}] : memref<8192xbf16>
// CHECK:       memref.load %{{.*}} : memref<?x8192xbf16>
// CHECK-NOT:   vector.load
// CHECK: gpu.launch {{.*}} function(@rms_norm_grad_n8192_reduce_2)
func.func @rms_norm_grad_n8192(%dy: memref<?x8192xbf16>, %x: memref<?x8192xbf16>, %rstd: memref<?xf32>,
                               %w: memref<8192xbf16>, %dx: memref<?x8192xbf16>, %dw: memref<8192xbf16>) {
  norm.rms_norm_grad dy(%dy : memref<?x8192xbf16>) x(%x : memref<?x8192xbf16>) rstd(%rstd : memref<?xf32>)
      weight(%w : memref<8192xbf16>) outs dx(%dx : memref<?x8192xbf16>) dweight(%dw : memref<8192xbf16>)
  return
}

// -----

// N = 4096 bf16: 16 elements a lane. One body, vector layout, each chunk
// checked: a 16-byte access when the rows are aligned, else element
// accesses in the same layout (column chunk*8 + e).
// CHECK-LABEL: func @rms_norm_grad_n4096
// CHECK: gpu.launch {{.*}} function(@rms_norm_grad_n4096_dx_1)
// CHECK:   scf.for
// CHECK:     scf.if %{{.*}} -> (f32) {
// CHECK:       scf.if %[[ALIGNED4K:.*]] -> (f32) {
// CHECK:         vector.load {{.*}} : memref<?x4096xbf16>, vector<8xbf16>
// CHECK:       } else {
// CHECK:         memref.load %{{.*}} : memref<?x4096xbf16>
// CHECK:       scf.if %[[ALIGNED4K]] -> (f32) {
func.func @rms_norm_grad_n4096(%dy: memref<?x4096xbf16>, %x: memref<?x4096xbf16>, %rstd: memref<?xf32>,
                               %w: memref<4096xbf16>, %dx: memref<?x4096xbf16>, %dw: memref<4096xbf16>) {
  norm.rms_norm_grad dy(%dy : memref<?x4096xbf16>) x(%x : memref<?x4096xbf16>) rstd(%rstd : memref<?xf32>)
      weight(%w : memref<4096xbf16>) outs dx(%dx : memref<?x4096xbf16>) dweight(%dw : memref<4096xbf16>)
  return
}
