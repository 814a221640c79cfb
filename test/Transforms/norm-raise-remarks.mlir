// RUN: norm-opt %s --split-input-file --norm-raise=report-near-misses --verify-diagnostics
//
// norm-raise{report-near-misses}: a remark on each result computed through
// a reduction that was left, saying why (cases of
// norm-raise-near-miss.mlir).

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#r1 = affine_map<(d0) -> (d0)>

// eps outside the square root: the forward formula differs.
func.func @eps_outside_rsqrt(%X: tensor<4x16xf32>, %W: tensor<16xf32>, %B: tensor<16xf32>) -> tensor<4x16xf32> {
  %c0 = arith.constant 0.0 : f32
  %n = arith.constant 16.0 : f32
  %eps = arith.constant 1.0e-5 : f32
  %e1 = tensor.empty() : tensor<4xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%X : tensor<4x16xf32>) outs(%z : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %mean = linalg.generic {indexing_maps = [#r1, #r1], iterator_types = ["parallel"]} ins(%sum : tensor<4xf32>) outs(%e1 : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %d = arith.divf %a, %n : f32
    linalg.yield %d : f32
  } -> tensor<4xf32>
  %sq = linalg.generic {indexing_maps = [#id, #row, #row], iterator_types = ["parallel", "reduction"]} ins(%X, %mean : tensor<4x16xf32>, tensor<4xf32>) outs(%z : tensor<4xf32>) {
  ^bb0(%a: f32, %m: f32, %acc: f32):
    %d = arith.subf %a, %m : f32
    %q = arith.mulf %d, %d : f32
    %s = arith.addf %q, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %rstd = linalg.generic {indexing_maps = [#r1, #r1], iterator_types = ["parallel"]} ins(%sq : tensor<4xf32>) outs(%e1 : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.divf %a, %n : f32
    %r0 = math.rsqrt %v : f32
    %r = arith.addf %r0, %eps : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %e2 = tensor.empty() : tensor<4x16xf32>
  // expected-remark @below {{norm-raise: not raised: as a forward: computes neither LayerNorm nor RMSNorm of its inputs}}
  %y = linalg.generic {indexing_maps = [#id, #row, #row, #col, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%X, %mean, %rstd, %W, %B : tensor<4x16xf32>, tensor<4xf32>, tensor<4xf32>, tensor<16xf32>, tensor<16xf32>) outs(%e2 : tensor<4x16xf32>) {
  ^bb0(%a: f32, %m: f32, %r: f32, %w: f32, %b: f32, %o: f32):
    %xm = arith.subf %a, %m : f32
    %xh = arith.mulf %xm, %r : f32
    %yw = arith.mulf %xh, %w : f32
    %yb = arith.addf %yw, %b : f32
    linalg.yield %yb : f32
  } -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#r1 = affine_map<(d0) -> (d0)>

// A LayerNorm computed in f32 and returned in bf16.
func.func @result_bf16(%X: tensor<4x16xf32>, %W: tensor<16xf32>, %B: tensor<16xf32>) -> tensor<4x16xbf16> {
  %c0 = arith.constant 0.0 : f32
  %n = arith.constant 16.0 : f32
  %eps = arith.constant 1.0e-5 : f32
  %e1 = tensor.empty() : tensor<4xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%X : tensor<4x16xf32>) outs(%z : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %mean = linalg.generic {indexing_maps = [#r1, #r1], iterator_types = ["parallel"]} ins(%sum : tensor<4xf32>) outs(%e1 : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %d = arith.divf %a, %n : f32
    linalg.yield %d : f32
  } -> tensor<4xf32>
  %sq = linalg.generic {indexing_maps = [#id, #row, #row], iterator_types = ["parallel", "reduction"]} ins(%X, %mean : tensor<4x16xf32>, tensor<4xf32>) outs(%z : tensor<4xf32>) {
  ^bb0(%a: f32, %m: f32, %acc: f32):
    %d = arith.subf %a, %m : f32
    %q = arith.mulf %d, %d : f32
    %s = arith.addf %q, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %rstd = linalg.generic {indexing_maps = [#r1, #r1], iterator_types = ["parallel"]} ins(%sq : tensor<4xf32>) outs(%e1 : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.divf %a, %n : f32
    %ve = arith.addf %v, %eps : f32
    %r = math.rsqrt %ve : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %e2 = tensor.empty() : tensor<4x16xbf16>
  // expected-remark @below {{as a forward: the result has another element type than x}}
  %y = linalg.generic {indexing_maps = [#id, #row, #row, #col, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%X, %mean, %rstd, %W, %B : tensor<4x16xf32>, tensor<4xf32>, tensor<4xf32>, tensor<16xf32>, tensor<16xf32>) outs(%e2 : tensor<4x16xbf16>) {
  ^bb0(%a: f32, %m: f32, %r: f32, %w: f32, %b: f32, %o: bf16):
    %xm = arith.subf %a, %m : f32
    %xh = arith.mulf %xm, %r : f32
    %yw = arith.mulf %xh, %w : f32
    %yb = arith.addf %yw, %b : f32
    %t = arith.truncf %yb : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<4x16xbf16>
  return %y : tensor<4x16xbf16>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#r1 = affine_map<(d0) -> (d0)>

// eps is not a constant.
func.func @eps_argument(%X: tensor<4x16xf32>, %W: tensor<16xf32>, %B: tensor<16xf32>, %eps: f32) -> tensor<4x16xf32> {
  %c0 = arith.constant 0.0 : f32
  %n = arith.constant 16.0 : f32
  %e1 = tensor.empty() : tensor<4xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%X : tensor<4x16xf32>) outs(%z : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %mean = linalg.generic {indexing_maps = [#r1, #r1], iterator_types = ["parallel"]} ins(%sum : tensor<4xf32>) outs(%e1 : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %d = arith.divf %a, %n : f32
    linalg.yield %d : f32
  } -> tensor<4xf32>
  %sq = linalg.generic {indexing_maps = [#id, #row, #row], iterator_types = ["parallel", "reduction"]} ins(%X, %mean : tensor<4x16xf32>, tensor<4xf32>) outs(%z : tensor<4xf32>) {
  ^bb0(%a: f32, %m: f32, %acc: f32):
    %d = arith.subf %a, %m : f32
    %q = arith.mulf %d, %d : f32
    %s = arith.addf %q, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %rstd = linalg.generic {indexing_maps = [#r1, #r1], iterator_types = ["parallel"]} ins(%sq : tensor<4xf32>) outs(%e1 : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.divf %a, %n : f32
    %ve = arith.addf %v, %eps : f32
    %r = math.rsqrt %ve : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %e2 = tensor.empty() : tensor<4x16xf32>
  // expected-remark @below {{as a forward: reads more than x, weight and bias}}
  %y = linalg.generic {indexing_maps = [#id, #row, #row, #col, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%X, %mean, %rstd, %W, %B : tensor<4x16xf32>, tensor<4xf32>, tensor<4xf32>, tensor<16xf32>, tensor<16xf32>) outs(%e2 : tensor<4x16xf32>) {
  ^bb0(%a: f32, %m: f32, %r: f32, %w: f32, %b: f32, %o: f32):
    %xm = arith.subf %a, %m : f32
    %xh = arith.mulf %xm, %r : f32
    %yw = arith.mulf %xh, %w : f32
    %yb = arith.addf %yw, %b : f32
    linalg.yield %yb : f32
  } -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#r1 = affine_map<(d0) -> (d0)>

// A backward without the mean(g) term.
func.func @ln_bwd_no_mean_term(%DY: tensor<4x16xf32>, %X: tensor<4x16xf32>, %MEAN: tensor<4xf32>, %RSTD: tensor<4xf32>, %W: tensor<16xf32>) -> tensor<4x16xf32> {
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
  // expected-remark @below {{as a backward: computes no LayerNorm / RMSNorm backward output of its inputs}}
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
  return %dx : tensor<4x16xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#r1 = affine_map<(d0) -> (d0)>

// What is raised gets no remark.
func.func @layer_norm_generic(%X: tensor<4x16xf32>, %W: tensor<16xf32>, %B: tensor<16xf32>) -> tensor<4x16xf32> {
  %c0 = arith.constant 0.0 : f32
  %n = arith.constant 16.0 : f32
  %eps = arith.constant 1.0e-5 : f32
  %e1 = tensor.empty() : tensor<4xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%X : tensor<4x16xf32>) outs(%z : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %mean = linalg.generic {indexing_maps = [#r1, #r1], iterator_types = ["parallel"]} ins(%sum : tensor<4xf32>) outs(%e1 : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %d = arith.divf %a, %n : f32
    linalg.yield %d : f32
  } -> tensor<4xf32>
  %sq = linalg.generic {indexing_maps = [#id, #row, #row], iterator_types = ["parallel", "reduction"]} ins(%X, %mean : tensor<4x16xf32>, tensor<4xf32>) outs(%z : tensor<4xf32>) {
  ^bb0(%a: f32, %m: f32, %acc: f32):
    %d = arith.subf %a, %m : f32
    %q = arith.mulf %d, %d : f32
    %s = arith.addf %q, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %rstd = linalg.generic {indexing_maps = [#r1, #r1], iterator_types = ["parallel"]} ins(%sq : tensor<4xf32>) outs(%e1 : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.divf %a, %n : f32
    %ve = arith.addf %v, %eps : f32
    %r = math.rsqrt %ve : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %e2 = tensor.empty() : tensor<4x16xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #row, #col, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%X, %mean, %rstd, %W, %B : tensor<4x16xf32>, tensor<4xf32>, tensor<4xf32>, tensor<16xf32>, tensor<16xf32>) outs(%e2 : tensor<4x16xf32>) {
  ^bb0(%a: f32, %m: f32, %r: f32, %w: f32, %b: f32, %o: f32):
    %xm = arith.subf %a, %m : f32
    %xh = arith.mulf %xm, %r : f32
    %yw = arith.mulf %xh, %w : f32
    %yb = arith.addf %yw, %b : f32
    linalg.yield %yb : f32
  } -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}
