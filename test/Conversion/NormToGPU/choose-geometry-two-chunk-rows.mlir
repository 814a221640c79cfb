// RUN: norm-opt %s --split-input-file --norm-lower-to-loops --norm-choose-geometry=rows=16384 | FileCheck %s
// RUN: norm-opt %s --split-input-file --norm-lower-to-loops --norm-choose-geometry="rows=16384 two-chunk-rows=false" | FileCheck %s --check-prefix=OFF
// RUN: norm-opt %s --split-input-file --norm-lower-to-loops --norm-choose-geometry=rows=2048 | FileCheck %s --check-prefix=FEW
// RUN: norm-opt %s --split-input-file --norm-lower-to-loops --norm-choose-geometry | FileCheck %s --check-prefix=NOHINT

// A deterministic backward row without early rows that the cost model
// lays out on 256 lanes at one 16-byte chunk a lane (chunks in (128,
// 256]) takes 128 lanes at two chunks past 2048 rows (Geometry.h
// twoChunkRowsPay), and the tuning table (entries measured on the
// one-chunk layout) is not consulted for it. S stays 1; its partial
// rows then go to registers (register-partials, at two chunks a lane:
// choose-geometry-register-partials.mlir). Off
// (two-chunk-rows=false), at 2048 rows or fewer, or without a rows hint:
// 256 lanes at one chunk, as before, under the table's entry where it has
// one (LayerNorm bf16 N = 2048, M = 513-2048: prefetch, partial_vector,
// pipeline, narrow_cache = 2; none for M > 2048 since plan mid-big).

// CHECK-LABEL: func.func @plain2048
// CHECK: norm.geometry = #norm.row_geometry<regime = registers, threads = 128, lanes = 128, rows = 1, vector = 8, chunks = 2, partials = registers, shared = 32>
// OFF-LABEL: func.func @plain2048
// OFF: norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 1, partials = shared, shared = 16448>
// FEW-LABEL: func.func @plain2048
// FEW: norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 1, layout = both, partials = shared, prefetch = 1, partial_vector = 4, pipeline = 1, narrow_cache = 2, shared = 16448>
// NOHINT-LABEL: func.func @plain2048
// NOHINT: norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 1, partials = shared, shared = 16448>
func.func @plain2048(%dy: memref<?x2048xbf16>, %x: memref<?x2048xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>, %w: memref<2048xbf16>, %dx: memref<?x2048xbf16>, %dw: memref<2048xbf16>, %db: memref<2048xbf16>) {
  norm.layer_norm_grad dy(%dy : memref<?x2048xbf16>) x(%x : memref<?x2048xbf16>) mean(%mean : memref<?xf32>) rstd(%rstd : memref<?xf32>) weight(%w : memref<2048xbf16>) outs dx(%dx : memref<?x2048xbf16>) dweight(%dw : memref<2048xbf16>) dbias(%db : memref<2048xbf16>)
  return
}

// -----

// With dresidual (an early row): measured 0.97-1.00x at two chunks, so
// one chunk stays (no table entry at M > 2048: the cost model's pipeline
// for early rows).
// CHECK-LABEL: func.func @dres2048
// CHECK: norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 1, layout = both, partials = shared, pipeline = 1, shared = 16448>
func.func @dres2048(%dy: memref<?x2048xbf16>, %x: memref<?x2048xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>, %w: memref<2048xbf16>, %dres: memref<?x2048xbf16>, %dx: memref<?x2048xbf16>, %dw: memref<2048xbf16>, %db: memref<2048xbf16>) {
  norm.layer_norm_grad dy(%dy : memref<?x2048xbf16>) x(%x : memref<?x2048xbf16>) mean(%mean : memref<?xf32>) rstd(%rstd : memref<?xf32>) weight(%w : memref<2048xbf16>) dresidual(%dres : memref<?x2048xbf16>) outs dx(%dx : memref<?x2048xbf16>) dweight(%dw : memref<2048xbf16>) dbias(%db : memref<2048xbf16>)
  return
}

// -----

// 144 chunks: one chunk on 160 lanes (trimmed) before, two on 128 now.
// CHECK-LABEL: func.func @rms1152
// CHECK: norm.geometry = #norm.row_geometry<regime = registers, threads = 128, lanes = 128, rows = 1, vector = 8, chunks = 2, partials = registers, shared = 32>
// OFF-LABEL: func.func @rms1152
// OFF: norm.geometry = #norm.row_geometry<regime = registers, threads = 160, lanes = 160, rows = 1, vector = 8, chunks = 1, partials = shared, shared = 5160>
func.func @rms1152(%dy: memref<?x1152xbf16>, %x: memref<?x1152xbf16>, %rstd: memref<?xf32>, %w: memref<1152xbf16>, %dx: memref<?x1152xbf16>, %dw: memref<1152xbf16>) {
  norm.rms_norm_grad dy(%dy : memref<?x1152xbf16>) x(%x : memref<?x1152xbf16>) rstd(%rstd : memref<?xf32>) weight(%w : memref<1152xbf16>) outs dx(%dx : memref<?x1152xbf16>) dweight(%dw : memref<1152xbf16>)
  return
}

// -----

// f32 rows of 4080 bytes: 255 chunks of four.
// CHECK-LABEL: func.func @rms1020
// CHECK: norm.geometry = #norm.row_geometry<regime = registers, threads = 128, lanes = 128, rows = 1, vector = 4, chunks = 2, partials = registers, shared = 32>
func.func @rms1020(%dy: memref<?x1020xf32>, %x: memref<?x1020xf32>, %rstd: memref<?xf32>, %w: memref<1020xf32>, %dx: memref<?x1020xf32>, %dw: memref<1020xf32>) {
  norm.rms_norm_grad dy(%dy : memref<?x1020xf32>) x(%x : memref<?x1020xf32>) rstd(%rstd : memref<?xf32>) weight(%w : memref<1020xf32>) outs dx(%dx : memref<?x1020xf32>) dweight(%dw : memref<1020xf32>)
  return
}

// -----

// f32 rows of 4088 bytes are never 16-byte aligned (the interleaved
// layout's element accesses): left as they were.
// CHECK-LABEL: func.func @rms1022
// CHECK: norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 4, chunks = 1, layout = interleaved, partials = shared, shared = 4160>
func.func @rms1022(%dy: memref<?x1022xf32>, %x: memref<?x1022xf32>, %rstd: memref<?xf32>, %w: memref<1022xf32>, %dx: memref<?x1022xf32>, %dw: memref<1022xf32>) {
  norm.rms_norm_grad dy(%dy : memref<?x1022xf32>) x(%x : memref<?x1022xf32>) rstd(%rstd : memref<?xf32>) weight(%w : memref<1022xf32>) outs dx(%dx : memref<?x1022xf32>) dweight(%dw : memref<1022xf32>)
  return
}
