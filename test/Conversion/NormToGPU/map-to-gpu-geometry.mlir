// RUN: not norm-opt %s --norm-lower-to-loops --norm-map-to-gpu 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: not norm-opt %s --norm-lower-to-loops --norm-choose-geometry=chip=sm_90 --norm-map-to-gpu=chip=sm_80 2>&1 | FileCheck %s --check-prefix=CHIP
// RUN: not norm-opt %s --norm-choose-geometry=chip=sm_90 --norm-lower-to-loops --norm-choose-geometry=chip=sm_80 2>&1 | FileCheck %s --check-prefix=CHOOSE

// norm-map-to-gpu builds the geometry the nest states and nothing else: a
// nest without one is an error, and so is one the chip cannot run (here a
// row split over a cluster of 8, chosen for sm_90, mapped for sm_80, which
// has no clusters). norm-choose-geometry refuses it the same way when it
// meets it again for another chip.

// NONE: error: norm-map-to-gpu: this 'dx' nest has no norm.geometry (#norm.row_geometry); run norm-choose-geometry first (norm-to-gpu-binary does)
// CHIP: error: norm-map-to-gpu: #norm.row_geometry<regime = registers, threads = 512, lanes = 512, rows = 1, vector = 8, chunks = 2, partials = registers, cluster = 8, shared = 400> cannot be built for sm_80: cluster: 8 blocks a cluster; sm_80 has no thread-block clusters (sm_90 and newer do)
// CHOOSE: error: norm-choose-geometry: #norm.row_geometry<{{.*}}cluster = 8{{.*}}> is refused: cluster: 8 blocks a cluster; sm_80 has no thread-block clusters (sm_90 and newer do)
func.func @layer_norm_grad_bf16_n65536(%dy: tensor<?x65536xbf16>, %x: tensor<?x65536xbf16>, %mean: tensor<?xf32>, %rstd: tensor<?xf32>, %w: tensor<65536xbf16>) -> (tensor<?x65536xbf16>, tensor<65536xbf16>, tensor<65536xbf16>) {
  %dx, %dw, %db = norm.layer_norm_grad dy(%dy : tensor<?x65536xbf16>) x(%x : tensor<?x65536xbf16>) mean(%mean : tensor<?xf32>) rstd(%rstd : tensor<?xf32>) weight(%w : tensor<65536xbf16>) -> dx(tensor<?x65536xbf16>) dweight(tensor<65536xbf16>) dbias(tensor<65536xbf16>)
  return %dx, %dw, %db : tensor<?x65536xbf16>, tensor<65536xbf16>, tensor<65536xbf16>
}
