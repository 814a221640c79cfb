// Input of test/Execution/raise.test: @layer_norm_named_ops of
// test/Transforms/norm-raise.mlir.
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#r1 = affine_map<(d0) -> (d0)>

func.func @layer_norm_named_ops(%X: tensor<?x32xf32>, %W: tensor<32xf32>) -> (tensor<?x32xf32>, tensor<?xf32>, tensor<?xf32>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %inv = arith.constant 3.125e-02 : f32
  %eps = arith.constant 1.0e-6 : f32
  %m = tensor.dim %X, %c0 : tensor<?x32xf32>
  %e1 = tensor.empty(%m) : tensor<?xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e1 : tensor<?xf32>) -> tensor<?xf32>
  %sum = linalg.reduce { arith.addf } ins(%X : tensor<?x32xf32>) outs(%z : tensor<?xf32>) dimensions = [1]
  %mean = linalg.map ins(%sum : tensor<?xf32>) outs(%e1 : tensor<?xf32>)
    (%s: f32, %o: f32) {
      %d = arith.mulf %s, %inv : f32
      linalg.yield %d : f32
    }
  %e2 = tensor.empty(%m) : tensor<?x32xf32>
  %meanb = linalg.broadcast ins(%mean : tensor<?xf32>) outs(%e2 : tensor<?x32xf32>) dimensions = [1]
  %xc = linalg.sub ins(%X, %meanb : tensor<?x32xf32>, tensor<?x32xf32>) outs(%e2 : tensor<?x32xf32>) -> tensor<?x32xf32>
  %sq = linalg.mul ins(%xc, %xc : tensor<?x32xf32>, tensor<?x32xf32>) outs(%e2 : tensor<?x32xf32>) -> tensor<?x32xf32>
  %ss = linalg.reduce { arith.addf } ins(%sq : tensor<?x32xf32>) outs(%z : tensor<?xf32>) dimensions = [1]
  %rstd = linalg.map ins(%ss : tensor<?xf32>) outs(%e1 : tensor<?xf32>)
    (%s: f32, %o: f32) {
      %v = arith.mulf %s, %inv : f32
      %ve = arith.addf %eps, %v : f32
      %r = math.rsqrt %ve : f32
      linalg.yield %r : f32
    }
  %rb = linalg.broadcast ins(%rstd : tensor<?xf32>) outs(%e2 : tensor<?x32xf32>) dimensions = [1]
  %xh = linalg.mul ins(%rb, %xc : tensor<?x32xf32>, tensor<?x32xf32>) outs(%e2 : tensor<?x32xf32>) -> tensor<?x32xf32>
  %wb = linalg.broadcast ins(%W : tensor<32xf32>) outs(%e2 : tensor<?x32xf32>) dimensions = [0]
  %y = linalg.mul ins(%xh, %wb : tensor<?x32xf32>, tensor<?x32xf32>) outs(%e2 : tensor<?x32xf32>) -> tensor<?x32xf32>
  return %y, %mean, %rstd : tensor<?x32xf32>, tensor<?xf32>, tensor<?xf32>
}
