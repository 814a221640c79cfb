// RUN: norm-opt %s --split-input-file --norm-lower-to-loops --norm-choose-geometry="rows=16384 register-partials=true" | FileCheck %s
// RUN: norm-opt %s --split-input-file --norm-lower-to-loops --norm-choose-geometry="rows=16384" | FileCheck %s --check-prefix=OFF

// register-partials: a deterministic backward row of one row in flight
// whose partial rows sit in static shared memory keeps them in registers
// where the register estimate with them (and the ring's 16 at two chunks
// a lane) keeps the blocks an SM of one wave at the largest launch of the
// rows hint's bucket (Geometry.h keepPartialsInRegisters). Off by default.

// LayerNorm bf16 N = 2048 at two chunks on 128 lanes: estimate 4 x 16 +
// 32 + 16 = 112 registers, 4 blocks of 128 an SM needed (512 programs):
// 128 allowed. The shared memory keeps only the cross-warp scratch.
// CHECK-LABEL: func.func @ln2048
// CHECK: norm.geometry = #norm.row_geometry<regime = registers, threads = 128, lanes = 128, rows = 1, vector = 8, chunks = 2, partials = registers, shared = 32>
// OFF-LABEL: func.func @ln2048
// OFF: norm.geometry = #norm.row_geometry<regime = registers, threads = 128, lanes = 128, rows = 1, vector = 8, chunks = 2, partials = shared, shared = 16416>
func.func @ln2048(%dy: memref<?x2048xbf16>, %x: memref<?x2048xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>, %w: memref<2048xbf16>, %dx: memref<?x2048xbf16>, %dw: memref<2048xbf16>, %db: memref<2048xbf16>) {
  norm.layer_norm_grad dy(%dy : memref<?x2048xbf16>) x(%x : memref<?x2048xbf16>) mean(%mean : memref<?xf32>) rstd(%rstd : memref<?xf32>) weight(%w : memref<2048xbf16>) outs dx(%dx : memref<?x2048xbf16>) dweight(%dw : memref<2048xbf16>) dbias(%db : memref<2048xbf16>)
  return
}

// -----

// LayerNorm bf16 N = 4096 on 256 lanes at two chunks: 96 registers
// against the 64 that keep 4 blocks of 256 an SM: stays in shared memory.
// CHECK-LABEL: func.func @ln4096
// CHECK: partials = shared
// OFF-LABEL: func.func @ln4096
// OFF: partials = shared
func.func @ln4096(%dy: memref<?x4096xbf16>, %x: memref<?x4096xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>, %w: memref<4096xbf16>, %dx: memref<?x4096xbf16>, %dw: memref<4096xbf16>, %db: memref<4096xbf16>) {
  norm.layer_norm_grad dy(%dy : memref<?x4096xbf16>) x(%x : memref<?x4096xbf16>) mean(%mean : memref<?xf32>) rstd(%rstd : memref<?xf32>) weight(%w : memref<4096xbf16>) outs dx(%dx : memref<?x4096xbf16>) dweight(%dw : memref<4096xbf16>) dbias(%db : memref<4096xbf16>)
  return
}

// -----

// With dresidual (an early row): not moved.
// CHECK-LABEL: func.func @dres2048
// CHECK: partials = shared
func.func @dres2048(%dy: memref<?x2048xbf16>, %x: memref<?x2048xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>, %w: memref<2048xbf16>, %dres: memref<?x2048xbf16>, %dx: memref<?x2048xbf16>, %dw: memref<2048xbf16>, %db: memref<2048xbf16>) {
  norm.layer_norm_grad dy(%dy : memref<?x2048xbf16>) x(%x : memref<?x2048xbf16>) mean(%mean : memref<?xf32>) rstd(%rstd : memref<?xf32>) weight(%w : memref<2048xbf16>) dresidual(%dres : memref<?x2048xbf16>) outs dx(%dx : memref<?x2048xbf16>) dweight(%dw : memref<2048xbf16>) dbias(%db : memref<2048xbf16>)
  return
}
