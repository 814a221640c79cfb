// RUN: norm-opt %s --split-input-file --norm-lower-to-loops --norm-choose-geometry=tuning=false | FileCheck %s
// RUN: norm-opt %s --split-input-file --norm-lower-to-loops=early-rows=false --norm-choose-geometry=tuning=false | FileCheck %s --check-prefix=LATE

// The cost model loads the next wave of rows ahead (pipeline = 1) for a
// dx kernel with early rows (dresidual, read in the first column loop)
// whose lanes hold one 16-byte chunk of a row (Geometry.h
// earlyPipelinePays): LayerNorm bf16 N = 768, two rows of 96 lanes a
// block (96 chunks: three warps, trimIdleWarps). The
// pipelined rows are the aligned body's, so the layout becomes `both`.
// Without early rows (early-rows=false) nothing is loaded ahead.
// CHECK-LABEL: func.func @dres768
// CHECK: norm.geometry = #norm.row_geometry<regime = registers, threads = 192, lanes = 96, rows = 2, vector = 8, chunks = 1, layout = both, partials = registers, pipeline = 1, shared = 12336>
// LATE-LABEL: func.func @dres768
// LATE: norm.geometry = #norm.row_geometry<regime = registers, threads = 192, lanes = 96, rows = 2, vector = 8, chunks = 1, partials = registers, shared = 12336>
func.func @dres768(%dy: memref<?x768xbf16>, %x: memref<?x768xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>, %w: memref<768xbf16>, %dres: memref<?x768xbf16>, %dx: memref<?x768xbf16>, %dw: memref<768xbf16>, %db: memref<768xbf16>) {
  norm.layer_norm_grad dy(%dy : memref<?x768xbf16>) x(%x : memref<?x768xbf16>) mean(%mean : memref<?xf32>) rstd(%rstd : memref<?xf32>) weight(%w : memref<768xbf16>) dresidual(%dres : memref<?x768xbf16>) outs dx(%dx : memref<?x768xbf16>) dweight(%dw : memref<768xbf16>) dbias(%db : memref<768xbf16>)
  return
}

// -----

// The same kernel without dresidual: two rows read a row, and pipeline 1
// measured slower there (LayerNorm bf16 65536 x 768 125 -> 144 us, plan
// small-g): not loaded ahead.
// CHECK-LABEL: func.func @plain768
// CHECK: norm.geometry = #norm.row_geometry<regime = registers, threads = 192, lanes = 96, rows = 2, vector = 8, chunks = 1, partials = registers, shared = 12336>
func.func @plain768(%dy: memref<?x768xbf16>, %x: memref<?x768xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>, %w: memref<768xbf16>, %dx: memref<?x768xbf16>, %dw: memref<768xbf16>, %db: memref<768xbf16>) {
  norm.layer_norm_grad dy(%dy : memref<?x768xbf16>) x(%x : memref<?x768xbf16>) mean(%mean : memref<?xf32>) rstd(%rstd : memref<?xf32>) weight(%w : memref<768xbf16>) outs dx(%dx : memref<?x768xbf16>) dweight(%dw : memref<768xbf16>) dbias(%db : memref<768xbf16>)
  return
}

// -----

// N = 4096 with dresidual: two chunks a lane (16 elements; the three
// buffered rows would cost 24 registers): not loaded ahead.
// CHECK-LABEL: func.func @dres4096
// CHECK: norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 2, partials = shared, shared = 32832>
func.func @dres4096(%dy: memref<?x4096xbf16>, %x: memref<?x4096xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>, %w: memref<4096xbf16>, %dres: memref<?x4096xbf16>, %dx: memref<?x4096xbf16>, %dw: memref<4096xbf16>, %db: memref<4096xbf16>) {
  norm.layer_norm_grad dy(%dy : memref<?x4096xbf16>) x(%x : memref<?x4096xbf16>) mean(%mean : memref<?xf32>) rstd(%rstd : memref<?xf32>) weight(%w : memref<4096xbf16>) dresidual(%dres : memref<?x4096xbf16>) outs dx(%dx : memref<?x4096xbf16>) dweight(%dw : memref<4096xbf16>) dbias(%db : memref<4096xbf16>)
  return
}
