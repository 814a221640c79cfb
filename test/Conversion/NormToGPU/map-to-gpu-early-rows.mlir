// RUN: norm-opt %s --split-input-file --norm-lower-to-loops --norm-choose-geometry=tuning=false --norm-map-to-gpu=async-rows=0 | FileCheck %s
// RUN: norm-opt %s --split-input-file --norm-lower-to-loops --norm-choose-geometry=tuning=false --norm-map-to-gpu="fit-early-rows=false async-rows=0" | FileCheck %s --check-prefix=KEEP

// The early rows of a dx kernel (dresidual, read by norm-cache-rows in the
// first column loop) against the wave its largest launch needs
// (Geometry.h dxEarlyRows). The geometries are the cost model's.

// LayerNorm bf16 N = 4096, 256 threads of 16 elements a lane: 512
// programs are one wave at four blocks an SM (64 registers a thread); the
// estimate with the early row (80) does not fit, without it (64) it does:
// dresidual is read late again (after the row's sums) and the kernel asks
// for four blocks. With fit-early-rows=false it keeps the early row and
// asks for nothing.
// CHECK-LABEL: func.func @ln4096
// CHECK-SAME: %[[DRES:arg5]]: memref<?x4096xbf16>
// CHECK-SAME: #norm.kernel<name = "ln4096_dx_1", kind = dx, block = 256, grid = programs, lanes = 256, rows = 1, vector = 8, registers = true, resident = 4, waits = true>
// CHECK: gpu.launch
// CHECK-NOT: load %[[DRES]]
// CHECK: gpu.shuffle
// CHECK: load %[[DRES]]
// KEEP-LABEL: func.func @ln4096
// KEEP-SAME: %[[DRES:arg5]]: memref<?x4096xbf16>
// KEEP-SAME: #norm.kernel<name = "ln4096_dx_1", kind = dx, block = 256, grid = programs, lanes = 256, rows = 1, vector = 8, registers = true, waits = true>
// KEEP: gpu.launch
// KEEP: vector.load %[[DRES]]
// KEEP: gpu.shuffle
func.func @ln4096(%dy: memref<?x4096xbf16>, %x: memref<?x4096xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>, %w: memref<4096xbf16>, %dres: memref<?x4096xbf16>, %dx: memref<?x4096xbf16>, %dw: memref<4096xbf16>, %db: memref<4096xbf16>) {
  norm.layer_norm_grad dy(%dy : memref<?x4096xbf16>) x(%x : memref<?x4096xbf16>) mean(%mean : memref<?xf32>) rstd(%rstd : memref<?xf32>) weight(%w : memref<4096xbf16>) dresidual(%dres : memref<?x4096xbf16>) outs dx(%dx : memref<?x4096xbf16>) dweight(%dw : memref<4096xbf16>) dbias(%db : memref<4096xbf16>)
  return
}

// -----

// LayerNorm f32 N = 2048, 8 elements a lane: with the early row the
// estimate (56) fits four blocks an SM, so it stays (read before the
// row's sums) and the kernel asks for four.
// CHECK-LABEL: func.func @ln2048
// CHECK-SAME: %[[DRES:arg5]]: memref<?x2048xf32>
// CHECK-SAME: #norm.kernel<name = "ln2048_dx_1", {{.*}}, resident = 4, waits = true>
// CHECK: gpu.launch
// CHECK: vector.load %[[DRES]]
// CHECK: gpu.shuffle
func.func @ln2048(%dy: memref<?x2048xf32>, %x: memref<?x2048xf32>, %mean: memref<?xf32>, %rstd: memref<?xf32>, %w: memref<2048xf32>, %dres: memref<?x2048xf32>, %dx: memref<?x2048xf32>, %dw: memref<2048xf32>, %db: memref<2048xf32>) {
  norm.layer_norm_grad dy(%dy : memref<?x2048xf32>) x(%x : memref<?x2048xf32>) mean(%mean : memref<?xf32>) rstd(%rstd : memref<?xf32>) weight(%w : memref<2048xf32>) dresidual(%dres : memref<?x2048xf32>) outs dx(%dx : memref<?x2048xf32>) dweight(%dw : memref<2048xf32>) dbias(%db : memref<2048xf32>)
  return
}

// -----

// LayerNorm bf16 N = 6144, 24 elements a lane: no estimate fits four
// blocks an SM, the kernel is not past its register ceiling without the
// early row: it keeps it and asks for nothing.
// CHECK-LABEL: func.func @ln6144
// CHECK-SAME: %[[DRES:arg5]]: memref<?x6144xbf16>
// CHECK-SAME: #norm.kernel<name = "ln6144_dx_1", kind = dx, block = 256, grid = programs, lanes = 256, rows = 1, vector = 8, registers = true, shared = 49152, waits = true>
// CHECK: gpu.launch
// CHECK: vector.load %[[DRES]]
// CHECK: gpu.shuffle
func.func @ln6144(%dy: memref<?x6144xbf16>, %x: memref<?x6144xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>, %w: memref<6144xbf16>, %dres: memref<?x6144xbf16>, %dx: memref<?x6144xbf16>, %dw: memref<6144xbf16>, %db: memref<6144xbf16>) {
  norm.layer_norm_grad dy(%dy : memref<?x6144xbf16>) x(%x : memref<?x6144xbf16>) mean(%mean : memref<?xf32>) rstd(%rstd : memref<?xf32>) weight(%w : memref<6144xbf16>) dresidual(%dres : memref<?x6144xbf16>) outs dx(%dx : memref<?x6144xbf16>) dweight(%dw : memref<6144xbf16>) dbias(%db : memref<6144xbf16>)
  return
}

// -----

// Without dresidual there is no early row: nothing is asked of the wave
// (the geometry was chosen for this kernel as it is).
// CHECK-LABEL: func.func @ln4096_plain
// CHECK-SAME: #norm.kernel<name = "ln4096_plain_dx_1", kind = dx, block = 256, grid = programs, lanes = 256, rows = 1, vector = 8, registers = true, wave = 4, waits = true>
func.func @ln4096_plain(%dy: memref<?x4096xbf16>, %x: memref<?x4096xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>, %w: memref<4096xbf16>, %dx: memref<?x4096xbf16>, %dw: memref<4096xbf16>, %db: memref<4096xbf16>) {
  norm.layer_norm_grad dy(%dy : memref<?x4096xbf16>) x(%x : memref<?x4096xbf16>) mean(%mean : memref<?xf32>) rstd(%rstd : memref<?xf32>) weight(%w : memref<4096xbf16>) outs dx(%dx : memref<?x4096xbf16>) dweight(%dw : memref<4096xbf16>) dbias(%db : memref<4096xbf16>)
  return
}
