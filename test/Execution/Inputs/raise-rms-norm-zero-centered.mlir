// Input of test/Execution/raise.test: @rms_norm_zero_centered of
// test/Transforms/norm-raise.mlir.
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#r1 = affine_map<(d0) -> (d0)>

func.func @rms_norm_zero_centered(%X: tensor<4x16xf32>, %W: tensor<16xf32>) -> tensor<4x16xf32> {
  %c0 = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %n = arith.constant 16.0 : f32
  %eps = arith.constant 1.0e-6 : f32
  %e1 = tensor.empty() : tensor<4xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
  %ss = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%X : tensor<4x16xf32>) outs(%z : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %q = arith.mulf %a, %a : f32
    %s = arith.addf %acc, %q : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %ew = tensor.empty() : tensor<16xf32>
  %w1 = linalg.generic {indexing_maps = [#r1, #r1], iterator_types = ["parallel"]} ins(%W : tensor<16xf32>) outs(%ew : tensor<16xf32>) {
  ^bb0(%w: f32, %o: f32):
    %p = arith.addf %one, %w : f32
    linalg.yield %p : f32
  } -> tensor<16xf32>
  %e2 = tensor.empty() : tensor<4x16xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%X, %ss, %w1 : tensor<4x16xf32>, tensor<4xf32>, tensor<16xf32>) outs(%e2 : tensor<4x16xf32>) {
  ^bb0(%a: f32, %s: f32, %w: f32, %o: f32):
    %v = arith.divf %s, %n : f32
    %ve = arith.addf %v, %eps : f32
    %r = math.rsqrt %ve : f32
    %aw = arith.mulf %a, %w : f32
    %yw = arith.mulf %r, %aw : f32
    linalg.yield %yw : f32
  } -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}
