// RUN: norm-opt %s --split-input-file --norm-lower-to-loops --norm-choose-geometry="rows=16384" | FileCheck %s
// RUN: norm-opt %s --split-input-file --norm-lower-to-loops --norm-choose-geometry="rows=16384 register-partials=false" | FileCheck %s --check-prefix=OFF
// RUN: norm-opt %s --split-input-file --norm-lower-to-loops --norm-choose-geometry="rows=1024" | FileCheck %s --check-prefix=FEW
// RUN: norm-opt %s --split-input-file --norm-lower-to-loops --norm-choose-geometry="rows=16384 tuning=false" | FileCheck %s --check-prefix=MODEL
// RUN: norm-opt %s --split-input-file --norm-lower-to-loops --norm-choose-geometry="rows=16384 partial-vector=4" | FileCheck %s --check-prefix=PVEC

// register-partials (on by default): a deterministic backward row of one
// row in flight at two chunks a lane or more, a share of at most 16
// elements, whose partial rows sit in static shared memory keeps them in
// registers where the register estimate with them plus the ring's 16
// keeps the blocks an SM of one wave at the largest launch of the rows
// hint's bucket (Geometry.h keepPartialsInRegisters).

// LayerNorm bf16 N = 2048 at two chunks on 128 lanes: estimate 4 x 16 +
// 32 + 16 = 112 registers, 4 blocks of 128 an SM needed (512 programs):
// 128 allowed. The shared memory keeps only the cross-warp scratch.
// CHECK-LABEL: func.func @ln2048
// CHECK: norm.geometry = #norm.row_geometry<regime = registers, threads = 128, lanes = 128, rows = 1, vector = 8, chunks = 2, partials = registers, shared = 32>
// OFF-LABEL: func.func @ln2048
// OFF: norm.geometry = #norm.row_geometry<regime = registers, threads = 128, lanes = 128, rows = 1, vector = 8, chunks = 2, partials = shared, shared = 16416>
// The partial-vector option asks for the sums side by side in shared
// memory: they stay there.
// PVEC-LABEL: func.func @ln2048
// PVEC: norm.geometry = #norm.row_geometry<regime = registers, threads = 128, lanes = 128, rows = 1, vector = 8, chunks = 2, partials = shared, partial_vector = 4, shared = 16416>
// At 1024 rows the row stays one chunk on 256 lanes (two-chunk-rows needs
// more than 2048), where no ring comes: shared memory (measured 0.95-0.96x
// in registers), with the table's entry for M = 513-2048 (plan mid-big).
// FEW-LABEL: func.func @ln2048
// FEW: norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 1, layout = both, partials = shared, prefetch = 1, partial_vector = 4, pipeline = 1, narrow_cache = 2, shared = 16448>
func.func @ln2048(%dy: memref<?x2048xbf16>, %x: memref<?x2048xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>, %w: memref<2048xbf16>, %dx: memref<?x2048xbf16>, %dw: memref<2048xbf16>, %db: memref<2048xbf16>) {
  norm.layer_norm_grad dy(%dy : memref<?x2048xbf16>) x(%x : memref<?x2048xbf16>) mean(%mean : memref<?xf32>) rstd(%rstd : memref<?xf32>) weight(%w : memref<2048xbf16>) outs dx(%dx : memref<?x2048xbf16>) dweight(%dw : memref<2048xbf16>) dbias(%db : memref<2048xbf16>)
  return
}

// -----

// LayerNorm bf16 N = 4096 on 256 lanes at two chunks: its table entry
// sets partial_vector (measured with the sums in shared memory), which
// stands. Without the table (MODEL): 4 x 16 + 32 + 16 = 112 registers
// against the 64 that keep 4 blocks of 256 an SM: shared memory too.
// CHECK-LABEL: func.func @ln4096
// CHECK: partials = shared, prefetch = 1, partial_vector = 4
// MODEL-LABEL: func.func @ln4096
// MODEL: norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 2, partials = shared, shared = 32832>
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

// -----

// RMSNorm f32 N = 2560 on 128 lanes: five chunks of four, a share of 20
// (measured 0.98-1.00x in registers): shared memory.
// CHECK-LABEL: func.func @rms2560
// CHECK: norm.geometry = #norm.row_geometry<regime = registers, threads = 128, lanes = 128, rows = 1, vector = 4, chunks = 5, layout = both, partials = shared, shared = 10272>
func.func @rms2560(%dy: memref<?x2560xf32>, %x: memref<?x2560xf32>, %rstd: memref<?xf32>, %w: memref<2560xf32>, %dx: memref<?x2560xf32>, %dw: memref<2560xf32>) {
  norm.rms_norm_grad dy(%dy : memref<?x2560xf32>) x(%x : memref<?x2560xf32>) rstd(%rstd : memref<?xf32>) weight(%w : memref<2560xf32>) outs dx(%dx : memref<?x2560xf32>) dweight(%dw : memref<2560xf32>)
  return
}

// -----

// LayerNorm f32 N = 1536: three chunks of four on 128 lanes, registers.
// CHECK-LABEL: func.func @lnf32
// CHECK: norm.geometry = #norm.row_geometry<regime = registers, threads = 128, lanes = 128, rows = 1, vector = 4, chunks = 3, partials = registers, shared = 32>
// OFF-LABEL: func.func @lnf32
// OFF: partials = shared
func.func @lnf32(%dy: memref<?x1536xf32>, %x: memref<?x1536xf32>, %mean: memref<?xf32>, %rstd: memref<?xf32>, %w: memref<1536xf32>, %dx: memref<?x1536xf32>, %dw: memref<1536xf32>, %db: memref<1536xf32>) {
  norm.layer_norm_grad dy(%dy : memref<?x1536xf32>) x(%x : memref<?x1536xf32>) mean(%mean : memref<?xf32>) rstd(%rstd : memref<?xf32>) weight(%w : memref<1536xf32>) outs dx(%dx : memref<?x1536xf32>) dweight(%dw : memref<1536xf32>) dbias(%db : memref<1536xf32>)
  return
}

// -----

// RMSNorm bf16 N = 2048 at 1024 rows: one chunk on 256 lanes (no ring),
// where registers measured 0.99x: shared memory. Past 2048 rows, two
// chunks on 128 lanes: registers.
// FEW-LABEL: func.func @rms2048
// FEW: norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 1, partials = shared, shared = 8256>
// CHECK-LABEL: func.func @rms2048
// CHECK: norm.geometry = #norm.row_geometry<regime = registers, threads = 128, lanes = 128, rows = 1, vector = 8, chunks = 2, partials = registers, shared = 32>
func.func @rms2048(%dy: memref<?x2048xbf16>, %x: memref<?x2048xbf16>, %rstd: memref<?xf32>, %w: memref<2048xbf16>, %dx: memref<?x2048xbf16>, %dw: memref<2048xbf16>) {
  norm.rms_norm_grad dy(%dy : memref<?x2048xbf16>) x(%x : memref<?x2048xbf16>) rstd(%rstd : memref<?xf32>) weight(%w : memref<2048xbf16>) outs dx(%dx : memref<?x2048xbf16>) dweight(%dw : memref<2048xbf16>)
  return
}

// -----

// RMSNorm bf16 N = 1536 at 1024 rows: one chunk on 192 lanes, whose
// registers would keep the wave (56 + 24 + 16), but a row of one chunk a
// lane gets no ring and measured 0.95-1.04x: shared memory.
// FEW-LABEL: func.func @rms1536
// FEW: norm.geometry = #norm.row_geometry<regime = registers, threads = 192, lanes = 192, rows = 1, vector = 8, chunks = 1, partials = shared, shared = 6192>
// CHECK-LABEL: func.func @rms1536
// CHECK: norm.geometry = #norm.row_geometry<regime = registers, threads = 128, lanes = 128, rows = 1, vector = 8, chunks = 2, partials = registers, shared = 32>
func.func @rms1536(%dy: memref<?x1536xbf16>, %x: memref<?x1536xbf16>, %rstd: memref<?xf32>, %w: memref<1536xbf16>, %dx: memref<?x1536xbf16>, %dw: memref<1536xbf16>) {
  norm.rms_norm_grad dy(%dy : memref<?x1536xbf16>) x(%x : memref<?x1536xbf16>) rstd(%rstd : memref<?xf32>) weight(%w : memref<1536xbf16>) outs dx(%dx : memref<?x1536xbf16>) dweight(%dw : memref<1536xbf16>)
  return
}
