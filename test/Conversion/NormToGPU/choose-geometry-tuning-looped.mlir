// RUN: norm-opt %s --norm-choose-geometry="rows=1 tuning-file=%S/Inputs/tuning-looped.json" | FileCheck %s --check-prefix=TABLE
// RUN: norm-opt %s --norm-choose-geometry="rows=256 tuning-file=%S/Inputs/tuning-looped.json" | FileCheck %s --check-prefix=MID
// RUN: norm-opt %s --norm-choose-geometry="rows=1 tuning=false" | FileCheck %s --check-prefix=COST
// RUN: norm-opt %s --norm-choose-geometry="rows=1 threads=256 cluster=8" | FileCheck %s --check-prefix=FORCED

// A table (Inputs/tuning-looped.json, of the shape bench/tune.py wrote
// for LayerNorm backward, f32, N = 92683-160530, timed at N = 131072): at
// M = 1-128 a cluster of 8 with max_register_elements 32, at M = 129-2048
// a cluster of 8 alone. At N = 139016 the first makes the looped row split over the
// cluster (each block walks a slice of 9 chunks a lane: 36 elements, past
// 32), the second keeps the slice in registers (36 within the default 64).
// The cost model, M-agnostic, keeps one looped block a row (batches of 8
// rows). The same kind of split from the options.
// TABLE: norm.geometry = #norm.row_geometry<regime = looped, threads = 512, lanes = 512, rows = 1, vector = 4, chunks = 9, partials = global, cluster = 8
// MID: norm.geometry = #norm.row_geometry<regime = registers, threads = 512, lanes = 512, rows = 1, vector = 4, chunks = 9, layout = both, partials = registers, cluster = 8
// COST: norm.geometry = #norm.row_geometry<regime = looped, threads = 512, lanes = 512, rows = 1, vector = 4, partials = global, batch = 8,
// COST-NOT: cluster
// FORCED: norm.geometry = #norm.row_geometry<regime = looped, threads = 256, lanes = 256, rows = 1, vector = 4, chunks = 17, partials = global, cluster = 8
func.func @layer_norm_grad_f32_n139016(%dy: tensor<?x139016xf32>, %x: tensor<?x139016xf32>, %mean: tensor<?xf32>, %rstd: tensor<?xf32>, %w: tensor<139016xf32>) -> (tensor<?x139016xf32>, tensor<139016xf32>, tensor<139016xf32>) {
  %dx, %dw, %db = norm.layer_norm_grad dy(%dy : tensor<?x139016xf32>) x(%x : tensor<?x139016xf32>) mean(%mean : tensor<?xf32>) rstd(%rstd : tensor<?xf32>) weight(%w : tensor<139016xf32>) -> dx(tensor<?x139016xf32>) dweight(tensor<139016xf32>) dbias(tensor<139016xf32>)
  return %dx, %dw, %db : tensor<?x139016xf32>, tensor<139016xf32>, tensor<139016xf32>
}
