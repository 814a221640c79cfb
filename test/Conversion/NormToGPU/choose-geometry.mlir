// RUN: norm-opt %s --split-input-file --norm-choose-geometry | FileCheck %s
// RUN: norm-opt %s --split-input-file --norm-lower-to-loops --norm-choose-geometry | FileCheck %s --check-prefix=NEST
// RUN: norm-opt %s --split-input-file --norm-choose-geometry=chip=sm_80 | FileCheck %s --check-prefix=SM80
// RUN: norm-opt %s --split-input-file --norm-choose-geometry --norm-lower-to-loops --norm-choose-geometry | FileCheck %s --check-prefix=NEST

// norm-choose-geometry's choices for representative rows (sm_90 unless
// noted), the same on the op (before lowering) and on its dx / forward nest
// (after): the op's attribute travels to the nest, where the second run of
// the pass finds it and keeps it.

// -----

// N = 24 bf16 (3 chunks): 4 lanes a row, 64 rows in flight, their partial
// rows combined through shared memory [64, 24] x 2.
// CHECK-LABEL: func.func @layer_norm_grad_bf16_n24
// CHECK: norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 4, rows = 64, vector = 8, chunks = 1, partials = registers, shared = 12288>
// NEST-LABEL: func.func @layer_norm_grad_bf16_n24
// NEST: } {norm.accumulate = f32, norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 4, rows = 64, vector = 8, chunks = 1, partials = registers, shared = 12288>
func.func @layer_norm_grad_bf16_n24(%dy: tensor<?x24xbf16>, %x: tensor<?x24xbf16>, %mean: tensor<?xf32>, %rstd: tensor<?xf32>, %w: tensor<24xbf16>) -> (tensor<?x24xbf16>, tensor<24xbf16>, tensor<24xbf16>) {
  %dx, %dw, %db = norm.layer_norm_grad dy(%dy : tensor<?x24xbf16>) x(%x : tensor<?x24xbf16>) mean(%mean : tensor<?xf32>) rstd(%rstd : tensor<?xf32>) weight(%w : tensor<24xbf16>) -> dx(tensor<?x24xbf16>) dweight(tensor<24xbf16>) dbias(tensor<24xbf16>)
  return %dx, %dw, %db : tensor<?x24xbf16>, tensor<24xbf16>, tensor<24xbf16>
}

// -----

// N = 4096: a block a row, 2 chunks a lane, the partial row in shared
// memory (one row in flight).
// CHECK-LABEL: func.func @rms_norm_grad_bf16_n4096
// CHECK: norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 2, partials = shared, shared = 16448>
// NEST-LABEL: func.func @rms_norm_grad_bf16_n4096
// NEST: } {norm.accumulate = f32, norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 2, partials = shared, shared = 16448>
func.func @rms_norm_grad_bf16_n4096(%dy: tensor<?x4096xbf16>, %x: tensor<?x4096xbf16>, %rstd: tensor<?xf32>, %w: tensor<4096xbf16>) -> (tensor<?x4096xbf16>, tensor<4096xbf16>) {
  %dx, %dw = norm.rms_norm_grad dy(%dy : tensor<?x4096xbf16>) x(%x : tensor<?x4096xbf16>) rstd(%rstd : tensor<?xf32>) weight(%w : tensor<4096xbf16>) -> dx(tensor<?x4096xbf16>) dweight(tensor<4096xbf16>)
  return %dx, %dw : tensor<?x4096xbf16>, tensor<4096xbf16>
}

// -----

// LayerNorm N = 8192: two partial rows of 32 KB pass the static budget and
// go to dynamic shared memory; 4 chunks a lane, two bodies (aligned or not).
// CHECK-LABEL: func.func @layer_norm_grad_bf16_n8192
// CHECK: norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 4, layout = both, partials = shared, shared = 64, dynamic_shared = 65536>
// NEST-LABEL: func.func @layer_norm_grad_bf16_n8192
// NEST: } {norm.accumulate = f32, norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 4, layout = both, partials = shared, shared = 64, dynamic_shared = 65536>
func.func @layer_norm_grad_bf16_n8192(%dy: tensor<?x8192xbf16>, %x: tensor<?x8192xbf16>, %mean: tensor<?xf32>, %rstd: tensor<?xf32>, %w: tensor<8192xbf16>) -> (tensor<?x8192xbf16>, tensor<8192xbf16>, tensor<8192xbf16>) {
  %dx, %dw, %db = norm.layer_norm_grad dy(%dy : tensor<?x8192xbf16>) x(%x : tensor<?x8192xbf16>) mean(%mean : tensor<?xf32>) rstd(%rstd : tensor<?xf32>) weight(%w : tensor<8192xbf16>) -> dx(tensor<?x8192xbf16>) dweight(tensor<8192xbf16>) dbias(tensor<8192xbf16>)
  return %dx, %dw, %db : tensor<?x8192xbf16>, tensor<8192xbf16>, tensor<8192xbf16>
}

// -----

// N = 65536: on sm_90 the row is split over a cluster of 8 blocks; sm_80
// has no clusters, so one block walks the row (looped) and updates the
// program's partial rows in global memory 8 rows at a time.
// CHECK-LABEL: func.func @layer_norm_grad_bf16_n65536
// CHECK: norm.geometry = #norm.row_geometry<regime = registers, threads = 512, lanes = 512, rows = 1, vector = 8, chunks = 2, partials = registers, cluster = 8, shared = 400>
// NEST-LABEL: func.func @layer_norm_grad_bf16_n65536
// NEST: } {norm.accumulate = f32, norm.geometry = #norm.row_geometry<regime = registers, threads = 512, lanes = 512, rows = 1, vector = 8, chunks = 2, partials = registers, cluster = 8, shared = 400>
// SM80-LABEL: func.func @layer_norm_grad_bf16_n65536
// SM80: norm.geometry = #norm.row_geometry<regime = looped, threads = 512, lanes = 512, rows = 1, vector = 8, partials = global, batch = 8, shared = 1024>
func.func @layer_norm_grad_bf16_n65536(%dy: tensor<?x65536xbf16>, %x: tensor<?x65536xbf16>, %mean: tensor<?xf32>, %rstd: tensor<?xf32>, %w: tensor<65536xbf16>) -> (tensor<?x65536xbf16>, tensor<65536xbf16>, tensor<65536xbf16>) {
  %dx, %dw, %db = norm.layer_norm_grad dy(%dy : tensor<?x65536xbf16>) x(%x : tensor<?x65536xbf16>) mean(%mean : tensor<?xf32>) rstd(%rstd : tensor<?xf32>) weight(%w : tensor<65536xbf16>) -> dx(tensor<?x65536xbf16>) dweight(tensor<65536xbf16>) dbias(tensor<65536xbf16>)
  return %dx, %dw, %db : tensor<?x65536xbf16>, tensor<65536xbf16>, tensor<65536xbf16>
}

// -----

// RMSNorm N = 12288: 48 KB of partial row in dynamic shared memory.
// CHECK-LABEL: func.func @rms_norm_grad_bf16_n12288
// CHECK: norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 6, layout = both, partials = shared, shared = 64, dynamic_shared = 49152>
// NEST-LABEL: func.func @rms_norm_grad_bf16_n12288
// NEST: } {norm.accumulate = f32, norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 6, layout = both, partials = shared, shared = 64, dynamic_shared = 49152>
func.func @rms_norm_grad_bf16_n12288(%dy: tensor<?x12288xbf16>, %x: tensor<?x12288xbf16>, %rstd: tensor<?xf32>, %w: tensor<12288xbf16>) -> (tensor<?x12288xbf16>, tensor<12288xbf16>) {
  %dx, %dw = norm.rms_norm_grad dy(%dy : tensor<?x12288xbf16>) x(%x : tensor<?x12288xbf16>) rstd(%rstd : tensor<?xf32>) weight(%w : tensor<12288xbf16>) -> dx(tensor<?x12288xbf16>) dweight(tensor<12288xbf16>)
  return %dx, %dw : tensor<?x12288xbf16>, tensor<12288xbf16>
}

// -----

// A dynamic N: looped, element chunks; no dweight, no partial rows.
// CHECK-LABEL: func.func @rms_norm_grad_f32_dynamic_n
// CHECK: norm.geometry = #norm.row_geometry<regime = looped, threads = 512, lanes = 512, rows = 1, vector = 1, shared = 128>
// NEST-LABEL: func.func @rms_norm_grad_f32_dynamic_n
// NEST: } {norm.accumulate = f32, norm.geometry = #norm.row_geometry<regime = looped, threads = 512, lanes = 512, rows = 1, vector = 1, shared = 128>
func.func @rms_norm_grad_f32_dynamic_n(%dy: tensor<?x?xf32>, %x: tensor<?x?xf32>, %rstd: tensor<?xf32>) -> tensor<?x?xf32> {
  %dx = norm.rms_norm_grad dy(%dy : tensor<?x?xf32>) x(%x : tensor<?x?xf32>) rstd(%rstd : tensor<?xf32>) -> dx(tensor<?x?xf32>)
  return %dx : tensor<?x?xf32>
}

// -----

// The forward: 32 lanes x 4 chunks a row (kForwardShareChunks), 8 rows a
// block.
// CHECK-LABEL: func.func @layer_norm_bf16_n1000
// CHECK: norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 32, rows = 8, vector = 8, chunks = 4, layout = both>
// NEST-LABEL: func.func @layer_norm_bf16_n1000
// NEST: } {norm.accumulate = f32, norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 32, rows = 8, vector = 8, chunks = 4, layout = both>
func.func @layer_norm_bf16_n1000(%x: tensor<?x1000xbf16>, %w: tensor<1000xbf16>, %b: tensor<1000xbf16>) -> (tensor<?x1000xbf16>, tensor<?xf32>, tensor<?xf32>) {
  %y, %mean, %rstd = norm.layer_norm x(%x : tensor<?x1000xbf16>) weight(%w : tensor<1000xbf16>) bias(%b : tensor<1000xbf16>) -> y(tensor<?x1000xbf16>) mean(tensor<?xf32>) rstd(tensor<?xf32>)
  return %y, %mean, %rstd : tensor<?x1000xbf16>, tensor<?xf32>, tensor<?xf32>
}
