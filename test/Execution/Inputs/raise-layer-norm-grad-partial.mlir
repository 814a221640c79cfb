// Input of test/Execution/raise.test: @layer_norm_grad_partial of
// test/Transforms/norm-raise.mlir.
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#r1 = affine_map<(d0) -> (d0)>

func.func @layer_norm_grad_partial(%DY: tensor<4x16xf32>, %X: tensor<4x16xf32>, %MEAN: tensor<4xf32>, %RSTD: tensor<4xf32>, %W: tensor<16xf32>) -> (tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %c0 = arith.constant 0.0 : f32
  %n = arith.constant 16.0 : f32
  %e1 = tensor.empty() : tensor<4xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
  %SG = linalg.generic {indexing_maps = [#id, #col, #row], iterator_types = ["parallel", "reduction"]} ins(%DY, %W : tensor<4x16xf32>, tensor<16xf32>) outs(%z : tensor<4xf32>) {
  ^bb0(%dy: f32, %w: f32, %acc: f32):
    %g = arith.mulf %dy, %w : f32
    %s = arith.addf %g, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %SGX = linalg.generic {indexing_maps = [#id, #id, #row, #row, #col, #row], iterator_types = ["parallel", "reduction"]} ins(%DY, %X, %MEAN, %RSTD, %W : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4xf32>, tensor<4xf32>, tensor<16xf32>) outs(%z : tensor<4xf32>) {
  ^bb0(%dy: f32, %x: f32, %m: f32, %r: f32, %w: f32, %acc: f32):
    %xm = arith.subf %x, %m : f32
    %xh = arith.mulf %xm, %r : f32
    %g = arith.mulf %dy, %w : f32
    %t = arith.mulf %g, %xh : f32
    %s = arith.addf %t, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %e2 = tensor.empty() : tensor<4x16xf32>
  %dx = linalg.generic {indexing_maps = [#id, #id, #row, #row, #col, #row, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%DY, %X, %MEAN, %RSTD, %W, %SG, %SGX : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4xf32>, tensor<4xf32>, tensor<16xf32>, tensor<4xf32>, tensor<4xf32>) outs(%e2 : tensor<4x16xf32>) {
  ^bb0(%dy: f32, %x: f32, %m: f32, %r: f32, %w: f32, %sg: f32, %sgx: f32, %o: f32):
    %xm = arith.subf %x, %m : f32
    %xh = arith.mulf %xm, %r : f32
    %g = arith.mulf %dy, %w : f32
    %mgx = arith.divf %sgx, %n : f32
    %bq = arith.mulf %xh, %mgx : f32
    %c = arith.subf %g, %bq : f32
    %d = arith.mulf %r, %c : f32
    linalg.yield %d : f32
  } -> tensor<4x16xf32>
  %e3 = tensor.empty() : tensor<16xf32>
  %zc = linalg.fill ins(%c0 : f32) outs(%e3 : tensor<16xf32>) -> tensor<16xf32>
  %dw = linalg.generic {indexing_maps = [#id, #id, #row, #row, #col], iterator_types = ["reduction", "parallel"]} ins(%DY, %X, %MEAN, %RSTD : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4xf32>, tensor<4xf32>) outs(%zc : tensor<16xf32>) {
  ^bb0(%dy: f32, %x: f32, %m: f32, %r: f32, %acc: f32):
    %xm = arith.subf %x, %m : f32
    %xh = arith.mulf %xm, %r : f32
    %t = arith.mulf %dy, %xh : f32
    %s = arith.addf %t, %acc : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  %db = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]} ins(%DY : tensor<4x16xf32>) outs(%zc : tensor<16xf32>) {
  ^bb0(%dy: f32, %acc: f32):
    %s = arith.addf %dy, %acc : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  return %dx, %dw, %db : tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>
}
