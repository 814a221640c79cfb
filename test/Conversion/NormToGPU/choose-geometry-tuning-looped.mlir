// RUN: norm-opt %s --norm-choose-geometry=rows=1 | FileCheck %s --check-prefix=TABLE
// RUN: norm-opt %s --norm-choose-geometry="rows=1 threads=256 cluster=8" | FileCheck %s --check-prefix=FORCED

// The sm_90 table's entry for LayerNorm backward, f32, N = 92683-185364,
// M = 1-512 is a cluster of 8 blocks of 256 threads, timed at N = 131072
// (a register-regime slice). At N = 139016 those slices do not fit in
// registers: the knobs would make a looped row split over a cluster, which
// no GPU run has timed or checked yet, so the entry yields to the cost
// model (one looped block a row). The same knobs as options do take it.
// TABLE: norm.geometry = #norm.row_geometry<regime = looped, threads = 512, lanes = 512, rows = 1, vector = 4, partials = global
// TABLE-NOT: cluster
// FORCED: norm.geometry = #norm.row_geometry<regime = looped, threads = 256, lanes = 256, rows = 1, vector = 4, chunks = 17, partials = global, cluster = 8
func.func @layer_norm_grad_f32_n139016(%dy: tensor<?x139016xf32>, %x: tensor<?x139016xf32>, %mean: tensor<?xf32>, %rstd: tensor<?xf32>, %w: tensor<139016xf32>) -> (tensor<?x139016xf32>, tensor<139016xf32>, tensor<139016xf32>) {
  %dx, %dw, %db = norm.layer_norm_grad dy(%dy : tensor<?x139016xf32>) x(%x : tensor<?x139016xf32>) mean(%mean : tensor<?xf32>) rstd(%rstd : tensor<?xf32>) weight(%w : tensor<139016xf32>) -> dx(tensor<?x139016xf32>) dweight(tensor<139016xf32>) dbias(tensor<139016xf32>)
  return %dx, %dw, %db : tensor<?x139016xf32>, tensor<139016xf32>, tensor<139016xf32>
}
