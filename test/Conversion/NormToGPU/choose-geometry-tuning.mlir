// RUN: norm-opt %s --norm-choose-geometry | FileCheck %s --check-prefix=ANY
// RUN: norm-opt %s --norm-choose-geometry=rows=1024 | FileCheck %s --check-prefix=TUNED
// RUN: norm-opt %s --norm-choose-geometry="rows=1024 chip=sm_90a" | FileCheck %s --check-prefix=TUNED
// RUN: norm-opt %s --norm-choose-geometry=rows=100000 | FileCheck %s --check-prefix=TUNED
// RUN: norm-opt %s --norm-choose-geometry="rows=1024 tuning=false" | FileCheck %s --check-prefix=ANY
// RUN: norm-opt %s --norm-choose-geometry="rows=1024 threads=512 cluster=6" | FileCheck %s --check-prefix=ANY
// RUN: norm-opt %s --norm-choose-geometry="rows=1024 chip=sm_80" | FileCheck %s --check-prefix=SM80
// RUN: norm-opt %s --norm-lower-to-loops --norm-choose-geometry=rows=1024 | FileCheck %s --check-prefix=NEST
// RUN: not norm-opt %s --norm-choose-geometry=rows=-1 2>&1 | FileCheck %s --check-prefix=NEG

// The sm_90 tuning table (lib/Conversion/NormToGPU/tuning/sm_90.json) has
// an entry for RMSNorm backward, bf16, N = 40133-56756 and M >= 513
// (measured at M = 1024 and 4096; the larger M, which no plan could
// measure, take the largest measured bucket's choice): the row split over
// a cluster of 8 blocks of 256 threads, 3 chunks a lane (max register
// elements 32; the cost model's is 6 blocks of 512). It applies where the
// `rows` hint lies in its range, and never without the hint, with
// tuning=false, with the knobs given as options, or on a chip of another
// family. Both geometries add dweight in row order (rows = 1), so the bits
// are the same.

// ANY: norm.geometry = #norm.row_geometry<regime = registers, threads = 512, lanes = 512, rows = 1, vector = 8, chunks = 2, partials = shared, cluster = 6
// TUNED: norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 3, layout = both, partials = shared, cluster = 8
// NEST: norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 3, layout = both, partials = shared, cluster = 8
// SM80: norm.geometry = #norm.row_geometry<regime = looped
// NEG: norm-choose-geometry: rows must be 0 (unknown) or the rows M the kernels are for, got -1
func.func @rms_norm_grad_bf16_n49152(%dy: tensor<?x49152xbf16>, %x: tensor<?x49152xbf16>, %rstd: tensor<?xf32>, %w: tensor<49152xbf16>) -> (tensor<?x49152xbf16>, tensor<49152xbf16>) {
  %dx, %dw = norm.rms_norm_grad dy(%dy : tensor<?x49152xbf16>) x(%x : tensor<?x49152xbf16>) rstd(%rstd : tensor<?xf32>) weight(%w : tensor<49152xbf16>) -> dx(tensor<?x49152xbf16>) dweight(tensor<49152xbf16>)
  return %dx, %dw : tensor<?x49152xbf16>, tensor<49152xbf16>
}
