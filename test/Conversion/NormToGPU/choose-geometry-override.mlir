// RUN: norm-opt %s --split-input-file --norm-choose-geometry | FileCheck %s
// RUN: norm-opt %s --split-input-file --norm-choose-geometry --norm-lower-to-loops --norm-choose-geometry --norm-map-to-gpu | FileCheck %s --check-prefix=MAP
// RUN: norm-opt %s --split-input-file --norm-to-gpu-binary | FileCheck %s --check-prefix=MAP

// A #norm.row_geometry written by hand on an op is an override:
// norm-choose-geometry checks and completes it, lowering carries it to the
// op's nest, and norm-map-to-gpu builds that kernel (its launch record).

// -----

// A block of 128 threads for N = 4096 instead of the cost model's 256 (one
// row in flight in both, so dweight keeps its bits): obeyed, its shared
// memory filled in (the 16 KB partial row and the cross-warp slots).
// CHECK-LABEL: func.func @rms_norm_grad_bf16_n4096_t128
// CHECK: norm.geometry = #norm.row_geometry<regime = registers, threads = 128, lanes = 128, rows = 1, vector = 8, chunks = 4, partials = shared, shared = 16416>
// MAP-LABEL: func.func @rms_norm_grad_bf16_n4096_t128
// MAP-SAME: #norm.kernel<name = "rms_norm_grad_bf16_n4096_t128_dx_1", kind = dx, block = 128, grid = programs, lanes = 128, rows = 1, vector = 8, registers = true, wave = 4, waits = true>
func.func @rms_norm_grad_bf16_n4096_t128(%dy: tensor<?x4096xbf16>, %x: tensor<?x4096xbf16>, %rstd: tensor<?xf32>, %w: tensor<4096xbf16>) -> (tensor<?x4096xbf16>, tensor<4096xbf16>) {
  %dx, %dw = norm.rms_norm_grad dy(%dy : tensor<?x4096xbf16>) x(%x : tensor<?x4096xbf16>) rstd(%rstd : tensor<?xf32>) weight(%w : tensor<4096xbf16>) {norm.geometry = #norm.row_geometry<regime = registers, threads = 128, lanes = 128, rows = 1, vector = 8, chunks = 4, partials = shared>} -> dx(tensor<?x4096xbf16>) dweight(tensor<4096xbf16>)
  return %dx, %dw : tensor<?x4096xbf16>, tensor<4096xbf16>
}

// -----

// The looped regime where the cost model keeps the row in registers, with
// its partial row updated every 2 rows.
// CHECK-LABEL: func.func @rms_norm_grad_bf16_n4096_looped
// CHECK: norm.geometry = #norm.row_geometry<regime = looped, threads = 256, lanes = 256, rows = 1, vector = 8, partials = global, batch = 2, shared = 128>
// MAP-LABEL: func.func @rms_norm_grad_bf16_n4096_looped
// MAP-SAME: #norm.kernel<name = "rms_norm_grad_bf16_n4096_looped_dx_1", kind = dx, block = 256, grid = programs, lanes = 256, rows = 1, vector = 8, registers = false, waits = true>
func.func @rms_norm_grad_bf16_n4096_looped(%dy: tensor<?x4096xbf16>, %x: tensor<?x4096xbf16>, %rstd: tensor<?xf32>, %w: tensor<4096xbf16>) -> (tensor<?x4096xbf16>, tensor<4096xbf16>) {
  %dx, %dw = norm.rms_norm_grad dy(%dy : tensor<?x4096xbf16>) x(%x : tensor<?x4096xbf16>) rstd(%rstd : tensor<?xf32>) weight(%w : tensor<4096xbf16>) {norm.geometry = #norm.row_geometry<regime = looped, threads = 256, lanes = 256, rows = 1, vector = 8, partials = global, batch = 2>} -> dx(tensor<?x4096xbf16>) dweight(tensor<4096xbf16>)
  return %dx, %dw : tensor<?x4096xbf16>, tensor<4096xbf16>
}

// -----

// A forward over 128 lanes a row, 2 rows a block (the cost model takes 32
// lanes x 4 chunks): no partial sums, so any geometry that covers the row.
// CHECK-LABEL: func.func @layer_norm_bf16_n1000_lanes128
// CHECK: norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 128, rows = 2, vector = 8, chunks = 1, shared = 64>
// MAP-LABEL: func.func @layer_norm_bf16_n1000_lanes128
// MAP-SAME: #norm.kernel<name = "layer_norm_bf16_n1000_lanes128_forward_0", kind = forward, block = 256, grid = row_blocks, lanes = 128, rows = 2, vector = 8, registers = true, waits = true>
func.func @layer_norm_bf16_n1000_lanes128(%x: tensor<?x1000xbf16>, %w: tensor<1000xbf16>, %b: tensor<1000xbf16>) -> (tensor<?x1000xbf16>, tensor<?xf32>, tensor<?xf32>) {
  %y, %mean, %rstd = norm.layer_norm x(%x : tensor<?x1000xbf16>) weight(%w : tensor<1000xbf16>) bias(%b : tensor<1000xbf16>) {norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 128, rows = 2, vector = 8, chunks = 1>} -> y(tensor<?x1000xbf16>) mean(tensor<?xf32>) rstd(tensor<?xf32>)
  return %y, %mean, %rstd : tensor<?x1000xbf16>, tensor<?xf32>, tensor<?xf32>
}
