// RUN: norm-opt %s --split-input-file --pass-pipeline="builtin.module(one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map}, func.func(norm-check-stage{stage=bufferized}, norm-split, norm-lower-forward, norm-check-stage{stage=split}, norm-recompute-loops, norm-check-stage{stage=recomputed}, norm-promote, norm-check-stage{stage=promoted}, norm-fuse-partials, norm-cache-rows, norm-check-stage{stage=fused}))" | FileCheck %s
// RUN: norm-opt %s --split-input-file --norm-lower-to-loops --norm-check-stage=stage=fused | FileCheck %s

// Each stage's invariants hold after the pass that establishes them (and
// norm-check-stage changes nothing).
// CHECK-LABEL: func @layer_norm_grad
// CHECK-NOT: norm.layer_norm_grad
// CHECK-NOT: norm.recomputable
// CHECK-NOT: #norm.stage<partials>
// CHECK: norm.row_cache
// CHECK: #norm.stage<dx>
func.func @layer_norm_grad(%dy: tensor<?x64xbf16>, %x: tensor<?x64xbf16>, %mean: tensor<?xf32>,
                           %rstd: tensor<?xf32>, %w: tensor<64xf32>)
    -> (tensor<?x64xbf16>, tensor<64xf32>, tensor<64xf32>) {
  %dx, %dw, %db = norm.layer_norm_grad dy(%dy : tensor<?x64xbf16>) x(%x : tensor<?x64xbf16>)
      mean(%mean : tensor<?xf32>) rstd(%rstd : tensor<?xf32>) weight(%w : tensor<64xf32>)
      -> dx(tensor<?x64xbf16>) dweight(tensor<64xf32>) dbias(tensor<64xf32>)
  return %dx, %dw, %db : tensor<?x64xbf16>, tensor<64xf32>, tensor<64xf32>
}

// -----

// CHECK-LABEL: func @rms_norm_forward
// CHECK: #norm.stage<forward>
func.func @rms_norm_forward(%x: tensor<?x64xf16>, %w: tensor<64xf16>) -> (tensor<?x64xf16>, tensor<?xf32>) {
  %y, %rstd = norm.rms_norm x(%x : tensor<?x64xf16>) weight(%w : tensor<64xf16>) {eps = 1.0e-5 : f32}
      -> y(tensor<?x64xf16>) rstd(tensor<?xf32>)
  return %y, %rstd : tensor<?x64xf16>, tensor<?xf32>
}
