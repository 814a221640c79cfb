// norm-raise from the stock mlir-opt-22 with the plugin (no GPU tail, so no
// CUDA toolkit needed): an RMSNorm written as two linalg.generic ops.
// RUN: %norm_preload mlir-opt %s --load-dialect-plugin=%norm_plugin --load-pass-plugin=%norm_plugin --pass-pipeline="builtin.module(func.func(norm-raise))" | FileCheck %s

// CHECK-LABEL: func @rms_norm
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x8xf32>, %[[W:[^:]*]]: tensor<8xf32>)
// CHECK: %[[Y:.*]], %{{.*}} = norm.rms_norm x(%[[X]] : tensor<?x8xf32>) weight(%[[W]] : tensor<8xf32>) {eps = 9.99999997E-7 : f32}
// CHECK-NOT: linalg.
// CHECK: return %[[Y]]
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
#col = affine_map<(i, j) -> (j)>
func.func @rms_norm(%x: tensor<?x8xf32>, %w: tensor<8xf32>) -> tensor<?x8xf32> {
  %c0 = arith.constant 0 : index
  %z = arith.constant 0.0 : f32
  %n = arith.constant 8.0 : f32
  %eps = arith.constant 1.0e-6 : f32
  %m = tensor.dim %x, %c0 : tensor<?x8xf32>
  %e1 = tensor.empty(%m) : tensor<?xf32>
  %f = linalg.fill ins(%z : f32) outs(%e1 : tensor<?xf32>) -> tensor<?xf32>
  %ss = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<?x8xf32>) outs(%f : tensor<?xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %q = arith.mulf %a, %a : f32
    %s = arith.addf %q, %acc : f32
    linalg.yield %s : f32
  } -> tensor<?xf32>
  %e2 = tensor.empty(%m) : tensor<?x8xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %ss, %w : tensor<?x8xf32>, tensor<?xf32>, tensor<8xf32>) outs(%e2 : tensor<?x8xf32>) {
  ^bb0(%a: f32, %s: f32, %wj: f32, %o: f32):
    %v = arith.divf %s, %n : f32
    %ve = arith.addf %v, %eps : f32
    %r = math.rsqrt %ve : f32
    %h = arith.mulf %a, %r : f32
    %yv = arith.mulf %h, %wj : f32
    linalg.yield %yv : f32
  } -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}
