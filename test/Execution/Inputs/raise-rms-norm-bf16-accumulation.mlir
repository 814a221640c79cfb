// Input of test/Execution/raise.test: @rms_norm_bf16_accumulation of
// test/Transforms/norm-raise.mlir.
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#r1 = affine_map<(d0) -> (d0)>

func.func @rms_norm_bf16_accumulation(%X: tensor<4x16xbf16>, %W: tensor<16xbf16>) -> tensor<4x16xbf16> {
  %c0 = arith.constant 0.0 : bf16
  %n = arith.constant 16.0 : bf16
  %eps = arith.constant 1.0e-6 : bf16
  %e1 = tensor.empty() : tensor<4xbf16>
  %z = linalg.fill ins(%c0 : bf16) outs(%e1 : tensor<4xbf16>) -> tensor<4xbf16>
  %ss = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%X : tensor<4x16xbf16>) outs(%z : tensor<4xbf16>) {
  ^bb0(%a: bf16, %acc: bf16):
    %q = arith.mulf %a, %a : bf16
    %s = arith.addf %q, %acc : bf16
    linalg.yield %s : bf16
  } -> tensor<4xbf16>
  %e2 = tensor.empty() : tensor<4x16xbf16>
  %y = linalg.generic {indexing_maps = [#id, #row, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%X, %ss, %W : tensor<4x16xbf16>, tensor<4xbf16>, tensor<16xbf16>) outs(%e2 : tensor<4x16xbf16>) {
  ^bb0(%a: bf16, %s: bf16, %w: bf16, %o: bf16):
    %v = arith.divf %s, %n : bf16
    %ve = arith.addf %v, %eps : bf16
    %r = math.rsqrt %ve : bf16
    %xh = arith.mulf %a, %r : bf16
    %yw = arith.mulf %xh, %w : bf16
    linalg.yield %yw : bf16
  } -> tensor<4x16xbf16>
  return %y : tensor<4x16xbf16>
}
