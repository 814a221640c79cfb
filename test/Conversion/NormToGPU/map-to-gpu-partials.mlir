// RUN: norm-opt %s --norm-lower-to-loops --norm-choose-geometry=chip=sm_80 --norm-map-to-gpu="chip=sm_80 forward-finish=0" | FileCheck %s

// (forward-finish=0: the one-group finish's vector.extract of each
// stored vector is map-to-gpu-one-group-forward.mlir's.)
// LayerNorm bf16 N = 16384 on sm_80: a block of 256 threads per row, 8
// chunks of 8 columns a lane, both partial rows in registers (2 x 64 KB:
// past the shared budget). With one row in flight each thread writes its
// columns of the program's partial rows once, after its rows. In the
// vector body (16-byte aligned rows) a chunk is 8 consecutive columns, so
// it goes out as two 16-byte stores: 8 chunks x 2 x 2 partial rows = 32
// (an element a store, lanes 32 bytes apart, touched 8x the sectors). The
// interleaved body's chunks are element e of consecutive lanes: element
// stores, coalesced across the warp.
// CHECK-LABEL: func @layer_norm_grad_n16384
// CHECK-SAME: #norm.kernel<name = "layer_norm_grad_n16384_dx_1", kind = dx, block = 256, grid = programs, lanes = 256, rows = 1, vector = 8, registers = true>
// CHECK: gpu.launch
// CHECK: scf.if
// CHECK-COUNT-32: vector.store %{{.*}}, %[[WS:[a-z0-9_]+]][%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x16384xf32>, vector<4xf32>
// CHECK-NOT: vector<4xf32>
// CHECK: } else {
// CHECK-COUNT-128: memref.store %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}] : memref<?x16384xf32>
// CHECK: gpu.terminator
func.func @layer_norm_grad_n16384(%dy: tensor<?x16384xbf16>, %x: tensor<?x16384xbf16>, %mean: tensor<?xf32>, %rstd: tensor<?xf32>, %w: tensor<16384xbf16>) -> (tensor<?x16384xbf16>, tensor<16384xbf16>, tensor<16384xbf16>) {
  %dx, %dw, %db = norm.layer_norm_grad dy(%dy : tensor<?x16384xbf16>) x(%x : tensor<?x16384xbf16>) mean(%mean : tensor<?xf32>) rstd(%rstd : tensor<?xf32>) weight(%w : tensor<16384xbf16>) -> dx(tensor<?x16384xbf16>) dweight(tensor<16384xbf16>) dbias(tensor<16384xbf16>)
  return %dx, %dw, %db : tensor<?x16384xbf16>, tensor<16384xbf16>, tensor<16384xbf16>
}
