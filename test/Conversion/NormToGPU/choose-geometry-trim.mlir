// RUN: norm-opt %s --split-input-file --norm-lower-to-loops --norm-choose-geometry=tuning=false | FileCheck %s
// RUN: norm-opt %s --split-input-file --norm-lower-to-loops --norm-choose-geometry="tuning=false trim-idle-warps=false" | FileCheck %s --check-prefix=POW2

// trim-idle-warps (the default): a backward row of more than a warp at one
// chunk a lane keeps only the warps its chunks need. LayerNorm bf16 N = 768
// is 96 chunks: the block is chosen as two rows of 128 lanes (the power of
// two, as with the option off) and launched as two rows of 96, three warps
// a row; the rows in flight, so the dweight/dbias order, are the same.
// CHECK-LABEL: func.func @layer_768
// CHECK: norm.geometry = #norm.row_geometry<regime = registers, threads = 192, lanes = 96, rows = 2, vector = 8, chunks = 1, partials = registers, shared = 12336>
// POW2-LABEL: func.func @layer_768
// POW2: norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 128, rows = 2, vector = 8, chunks = 1, partials = registers, shared = 12352>
func.func @layer_768(%dy: memref<?x768xbf16>, %x: memref<?x768xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>, %w: memref<768xbf16>, %dx: memref<?x768xbf16>, %dw: memref<768xbf16>, %db: memref<768xbf16>) {
  norm.layer_norm_grad dy(%dy : memref<?x768xbf16>) x(%x : memref<?x768xbf16>) mean(%mean : memref<?xf32>) rstd(%rstd : memref<?xf32>) weight(%w : memref<768xbf16>) outs dx(%dx : memref<?x768xbf16>) dweight(%dw : memref<768xbf16>) dbias(%db : memref<768xbf16>)
  return
}

// -----

// One row a block: RMSNorm f32 N = 640 is 160 chunks, five warps of 256.
// CHECK-LABEL: func.func @rms_f32_640
// CHECK: norm.geometry = #norm.row_geometry<regime = registers, threads = 160, lanes = 160, rows = 1, vector = 4, chunks = 1, partials = shared, shared = 2600>
// POW2-LABEL: func.func @rms_f32_640
// POW2: norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 4, chunks = 1, partials = shared, shared = 4160>
func.func @rms_f32_640(%dy: memref<?x640xf32>, %x: memref<?x640xf32>, %rstd: memref<?xf32>, %w: memref<640xf32>, %dx: memref<?x640xf32>, %dw: memref<640xf32>) {
  norm.rms_norm_grad dy(%dy : memref<?x640xf32>) x(%x : memref<?x640xf32>) rstd(%rstd : memref<?xf32>) weight(%w : memref<640xf32>) outs dx(%dx : memref<?x640xf32>) dweight(%dw : memref<640xf32>)
  return
}

// -----

// Several chunks a lane keep the power of two (measured 0.99x trimmed):
// RMSNorm bf16 N = 2304 is 288 chunks, three a lane of 128.
// CHECK-LABEL: func.func @rms_2304
// CHECK: threads = 128, lanes = 128, rows = 1, vector = 8, chunks = 3
// POW2-LABEL: func.func @rms_2304
// POW2: threads = 128, lanes = 128, rows = 1, vector = 8, chunks = 3
func.func @rms_2304(%dy: memref<?x2304xbf16>, %x: memref<?x2304xbf16>, %rstd: memref<?xf32>, %w: memref<2304xbf16>, %dx: memref<?x2304xbf16>, %dw: memref<2304xbf16>) {
  norm.rms_norm_grad dy(%dy : memref<?x2304xbf16>) x(%x : memref<?x2304xbf16>) rstd(%rstd : memref<?xf32>) weight(%w : memref<2304xbf16>) outs dx(%dx : memref<?x2304xbf16>) dweight(%dw : memref<2304xbf16>)
  return
}

// -----

// Rows that can never be 16-byte aligned keep the power of two (measured
// 0.988x trimmed): LayerNorm bf16 N = 700, 88 chunks of element accesses.
// CHECK-LABEL: func.func @layer_700
// CHECK: threads = 256, lanes = 128, rows = 2, vector = 8, chunks = 1, layout = interleaved
// POW2-LABEL: func.func @layer_700
// POW2: threads = 256, lanes = 128, rows = 2, vector = 8, chunks = 1, layout = interleaved
func.func @layer_700(%dy: memref<?x700xbf16>, %x: memref<?x700xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>, %w: memref<700xbf16>, %dx: memref<?x700xbf16>, %dw: memref<700xbf16>, %db: memref<700xbf16>) {
  norm.layer_norm_grad dy(%dy : memref<?x700xbf16>) x(%x : memref<?x700xbf16>) mean(%mean : memref<?xf32>) rstd(%rstd : memref<?xf32>) weight(%w : memref<700xbf16>) outs dx(%dx : memref<?x700xbf16>) dweight(%dw : memref<700xbf16>) dbias(%db : memref<700xbf16>)
  return
}

// -----

// The forward keeps its lanes (forwardLanes: 16 of 6 chunks at N = 768).
// CHECK-LABEL: func.func @forward_768
// CHECK: threads = 256, lanes = 16, rows = 16, vector = 8, chunks = 6
func.func @forward_768(%x: memref<?x768xbf16>, %w: memref<768xbf16>, %y: memref<?x768xbf16>, %rstd: memref<?xf32>) {
  norm.rms_norm x(%x : memref<?x768xbf16>) weight(%w : memref<768xbf16>) outs y(%y : memref<?x768xbf16>) rstd(%rstd : memref<?xf32>)
  return
}
