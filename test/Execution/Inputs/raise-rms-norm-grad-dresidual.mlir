// Input of test/Execution/raise.test: @rms_norm_grad_dresidual of
// test/Transforms/norm-raise.mlir.
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0, 0)>
#col = affine_map<(d0, d1) -> (d1)>

func.func @rms_norm_grad_dresidual(%DY: tensor<4x16xf32>, %X: tensor<4x16xf32>, %RSTD: tensor<4x1xf32>, %W: tensor<16xf32>, %DR: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %c0 = arith.constant 0.0 : f32
  %n = arith.constant 16.0 : f32
  %e1 = tensor.empty() : tensor<4x1xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e1 : tensor<4x1xf32>) -> tensor<4x1xf32>
  %sgx = linalg.generic {indexing_maps = [#id, #id, #row, #col, #row], iterator_types = ["parallel", "reduction"]} ins(%DY, %X, %RSTD, %W : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x1xf32>, tensor<16xf32>) outs(%z : tensor<4x1xf32>) {
  ^bb0(%dy: f32, %x: f32, %r: f32, %w: f32, %acc: f32):
    %xh = arith.mulf %x, %r : f32
    %g = arith.mulf %w, %dy : f32
    %t = arith.mulf %xh, %g : f32
    %s = arith.addf %acc, %t : f32
    linalg.yield %s : f32
  } -> tensor<4x1xf32>
  %e2 = tensor.empty() : tensor<4x16xf32>
  %dx = linalg.generic {indexing_maps = [#id, #id, #row, #col, #row, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%DY, %X, %RSTD, %W, %sgx, %DR : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x1xf32>, tensor<16xf32>, tensor<4x1xf32>, tensor<4x16xf32>) outs(%e2 : tensor<4x16xf32>) {
  ^bb0(%dy: f32, %x: f32, %r: f32, %w: f32, %s: f32, %dr: f32, %o: f32):
    %xh = arith.mulf %x, %r : f32
    %g = arith.mulf %dy, %w : f32
    %m = arith.divf %s, %n : f32
    %b = arith.mulf %xh, %m : f32
    %c = arith.subf %g, %b : f32
    %d = arith.mulf %c, %r : f32
    %e = arith.addf %dr, %d : f32
    linalg.yield %e : f32
  } -> tensor<4x16xf32>
  return %dx : tensor<4x16xf32>
}
