// Input of test/Execution/raise.test: @layer_norm_grad_stored_xhat of
// test/Transforms/norm-raise.mlir.
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>

func.func @layer_norm_grad_stored_xhat(%DY: tensor<?x16xf32>, %XH: tensor<?x16xf32>, %RSTD: tensor<?xf32>) -> (tensor<?x16xf32>, tensor<16xf32>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %inv = arith.constant 0.0625 : f32
  %m = tensor.dim %DY, %c0 : tensor<?x16xf32>
  %e1 = tensor.empty(%m) : tensor<?xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e1 : tensor<?xf32>) -> tensor<?xf32>
  %sg = linalg.reduce { arith.addf } ins(%DY : tensor<?x16xf32>) outs(%z : tensor<?xf32>) dimensions = [1]
  %e2 = tensor.empty(%m) : tensor<?x16xf32>
  %gx = linalg.mul ins(%DY, %XH : tensor<?x16xf32>, tensor<?x16xf32>) outs(%e2 : tensor<?x16xf32>) -> tensor<?x16xf32>
  %sgx = linalg.reduce { arith.addf } ins(%gx : tensor<?x16xf32>) outs(%z : tensor<?xf32>) dimensions = [1]
  %dx = linalg.generic {indexing_maps = [#id, #id, #row, #row, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%DY, %XH, %RSTD, %sg, %sgx : tensor<?x16xf32>, tensor<?x16xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>) outs(%e2 : tensor<?x16xf32>) {
  ^bb0(%dy: f32, %xh: f32, %r: f32, %s1: f32, %s2: f32, %o: f32):
    %m1 = arith.mulf %s1, %inv : f32
    %m2 = arith.mulf %s2, %inv : f32
    %a = arith.subf %dy, %m1 : f32
    %b = arith.mulf %xh, %m2 : f32
    %c = arith.subf %a, %b : f32
    %d = arith.mulf %r, %c : f32
    linalg.yield %d : f32
  } -> tensor<?x16xf32>
  %e3 = tensor.empty() : tensor<16xf32>
  %zc = linalg.fill ins(%zero : f32) outs(%e3 : tensor<16xf32>) -> tensor<16xf32>
  %db = linalg.reduce { arith.addf } ins(%DY : tensor<?x16xf32>) outs(%zc : tensor<16xf32>) dimensions = [0]
  return %dx, %db : tensor<?x16xf32>, tensor<16xf32>
}
