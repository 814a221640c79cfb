// Input of test/Execution/raise.test: @rms_norm_rank3_bf16 of
// test/Transforms/norm-raise.mlir.
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row3 = affine_map<(d0, d1, d2) -> (d0, d1)>
#col3 = affine_map<(d0, d1, d2) -> (d2)>

func.func @rms_norm_rank3_bf16(%X: tensor<2x?x32xbf16>, %W: tensor<32xf32>) -> tensor<2x?x32xbf16> {
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %n = arith.constant 32.0 : f32
  %eps = arith.constant 1.0e-6 : f32
  %s = tensor.dim %X, %c1 : tensor<2x?x32xbf16>
  %e1 = tensor.empty(%s) : tensor<2x?xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x?xf32>) -> tensor<2x?xf32>
  %ss = linalg.generic {indexing_maps = [#id3, #row3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%X : tensor<2x?x32xbf16>) outs(%z : tensor<2x?xf32>) {
  ^bb0(%a: bf16, %acc: f32):
    %f = arith.extf %a : bf16 to f32
    %q = arith.mulf %f, %f : f32
    %t = arith.addf %q, %acc : f32
    linalg.yield %t : f32
  } -> tensor<2x?xf32>
  %e2 = tensor.empty(%s) : tensor<2x?x32xbf16>
  %y = linalg.generic {indexing_maps = [#id3, #row3, #col3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%X, %ss, %W : tensor<2x?x32xbf16>, tensor<2x?xf32>, tensor<32xf32>) outs(%e2 : tensor<2x?x32xbf16>) {
  ^bb0(%a: bf16, %t: f32, %w: f32, %o: bf16):
    %f = arith.extf %a : bf16 to f32
    %v = arith.divf %t, %n : f32
    %ve = arith.addf %v, %eps : f32
    %r = math.rsqrt %ve : f32
    %h = arith.mulf %f, %r : f32
    %yw = arith.mulf %h, %w : f32
    %yt = arith.truncf %yw : f32 to bf16
    linalg.yield %yt : bf16
  } -> tensor<2x?x32xbf16>
  return %y : tensor<2x?x32xbf16>
}
