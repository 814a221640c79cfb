// RUN: norm-opt %s --split-input-file --norm-raise | FileCheck %s
//
// norm-raise's near misses: programs that look like a LayerNorm or an
// RMSNorm, forward or backward, but compute something else or in dtypes
// the ops cannot give. Each stays as it is; with report-near-misses each
// gets a remark saying why. Written by hand in the forms of
// norm-raise.mlir; norm-raise-remarks.mlir checks the remarks of a few.
// 26 cases.

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#r1 = affine_map<(d0) -> (d0)>

// eps added after the rsqrt, not under it.
// CHECK-LABEL: func @eps_outside_rsqrt
// CHECK-NOT: norm.
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

// eps added to the sum of squares before dividing by N.
// CHECK-LABEL: func @eps_before_divide
// CHECK-NOT: norm.
func.func @eps_before_divide(%X: tensor<4x16xf32>, %W: tensor<16xf32>, %B: tensor<16xf32>) -> tensor<4x16xf32> {
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
    %ve = arith.addf %a, %eps : f32
    %v = arith.divf %ve, %n : f32
    %r = math.rsqrt %v : f32
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

// -----
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#r1 = affine_map<(d0) -> (d0)>

// eps added to the centred value, not to the variance.
// CHECK-LABEL: func @eps_in_centring
// CHECK-NOT: norm.
func.func @eps_in_centring(%X: tensor<4x16xf32>, %W: tensor<16xf32>, %B: tensor<16xf32>) -> tensor<4x16xf32> {
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
    %d0 = arith.subf %a, %m : f32
    %d = arith.addf %d0, %eps : f32
    %q = arith.mulf %d, %d : f32
    %s = arith.addf %q, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %rstd = linalg.generic {indexing_maps = [#r1, #r1], iterator_types = ["parallel"]} ins(%sq : tensor<4xf32>) outs(%e1 : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.divf %a, %n : f32
    %r = math.rsqrt %v : f32
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

// -----
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#r1 = affine_map<(d0) -> (d0)>

// the mean divides by 15, not by the reduced extent 16.
// CHECK-LABEL: func @mean_wrong_divisor
// CHECK-NOT: norm.
func.func @mean_wrong_divisor(%X: tensor<4x16xf32>, %W: tensor<16xf32>, %B: tensor<16xf32>) -> tensor<4x16xf32> {
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
    %n15 = arith.constant 15.0 : f32
    %d = arith.divf %a, %n15 : f32
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

// -----
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#r1 = affine_map<(d0) -> (d0)>

// unbiased variance (divides by N - 1), as torch.var's default.
// CHECK-LABEL: func @unbiased_variance
// CHECK-NOT: norm.
func.func @unbiased_variance(%X: tensor<4x16xf32>, %W: tensor<16xf32>, %B: tensor<16xf32>) -> tensor<4x16xf32> {
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
    %n1 = arith.constant 15.0 : f32
    %v = arith.divf %a, %n1 : f32
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

// -----
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#r1 = affine_map<(d0) -> (d0)>

// sqrt instead of rsqrt: x is scaled by the standard deviation.
// CHECK-LABEL: func @sqrt_not_rsqrt
// CHECK-NOT: norm.
func.func @sqrt_not_rsqrt(%X: tensor<4x16xf32>, %W: tensor<16xf32>, %B: tensor<16xf32>) -> tensor<4x16xf32> {
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
    %r = math.sqrt %ve : f32
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

// -----
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#r1 = affine_map<(d0) -> (d0)>

// divides by the variance without the square root.
// CHECK-LABEL: func @no_sqrt
// CHECK-NOT: norm.
func.func @no_sqrt(%X: tensor<4x16xf32>, %W: tensor<16xf32>, %B: tensor<16xf32>) -> tensor<4x16xf32> {
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
    %one = arith.constant 1.0 : f32
    %r = arith.divf %one, %ve : f32
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

// -----
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#r1 = affine_map<(d0) -> (d0)>

// bias added before the weight multiply.
// CHECK-LABEL: func @bias_before_weight
// CHECK-NOT: norm.
func.func @bias_before_weight(%X: tensor<4x16xf32>, %W: tensor<16xf32>, %B: tensor<16xf32>) -> tensor<4x16xf32> {
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
    %yb0 = arith.addf %xh, %b : f32
    %yb = arith.mulf %yb0, %w : f32
    linalg.yield %yb : f32
  } -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#r1 = affine_map<(d0) -> (d0)>

// bias added twice.
// CHECK-LABEL: func @bias_twice
// CHECK-NOT: norm.
func.func @bias_twice(%X: tensor<4x16xf32>, %W: tensor<16xf32>, %B: tensor<16xf32>) -> tensor<4x16xf32> {
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
    %yb0 = arith.addf %yw, %b : f32
    %yb = arith.addf %yb0, %b : f32
    linalg.yield %yb : f32
  } -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#r1 = affine_map<(d0) -> (d0)>

// not centred in y: x * rstd with the LayerNorm variance.
// CHECK-LABEL: func @y_not_centred
// CHECK-NOT: norm.
func.func @y_not_centred(%X: tensor<4x16xf32>, %W: tensor<16xf32>, %B: tensor<16xf32>) -> tensor<4x16xf32> {
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
    %xh = arith.mulf %a, %r : f32
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

// eps is a function argument, not a constant.
// CHECK-LABEL: func @eps_argument
// CHECK-NOT: norm.
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

// the result is returned in bf16 from f32 x (a dtype the op cannot give).
// CHECK-LABEL: func @result_bf16
// CHECK-NOT: norm.
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

// x is f64, which the op does not take.
// CHECK-LABEL: func @x_f64
// CHECK-NOT: norm.
func.func @x_f64(%X: tensor<4x16xf64>, %W: tensor<16xf64>, %B: tensor<16xf64>) -> tensor<4x16xf64> {
  %c0 = arith.constant 0.0 : f64
  %n = arith.constant 16.0 : f64
  %eps = arith.constant 1.0e-5 : f64
  %e1 = tensor.empty() : tensor<4xf64>
  %z = linalg.fill ins(%c0 : f64) outs(%e1 : tensor<4xf64>) -> tensor<4xf64>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%X : tensor<4x16xf64>) outs(%z : tensor<4xf64>) {
  ^bb0(%a: f64, %acc: f64):
    %s = arith.addf %a, %acc : f64
    linalg.yield %s : f64
  } -> tensor<4xf64>
  %mean = linalg.generic {indexing_maps = [#r1, #r1], iterator_types = ["parallel"]} ins(%sum : tensor<4xf64>) outs(%e1 : tensor<4xf64>) {
  ^bb0(%a: f64, %o: f64):
    %d = arith.divf %a, %n : f64
    linalg.yield %d : f64
  } -> tensor<4xf64>
  %sq = linalg.generic {indexing_maps = [#id, #row, #row], iterator_types = ["parallel", "reduction"]} ins(%X, %mean : tensor<4x16xf64>, tensor<4xf64>) outs(%z : tensor<4xf64>) {
  ^bb0(%a: f64, %m: f64, %acc: f64):
    %d = arith.subf %a, %m : f64
    %q = arith.mulf %d, %d : f64
    %s = arith.addf %q, %acc : f64
    linalg.yield %s : f64
  } -> tensor<4xf64>
  %rstd = linalg.generic {indexing_maps = [#r1, #r1], iterator_types = ["parallel"]} ins(%sq : tensor<4xf64>) outs(%e1 : tensor<4xf64>) {
  ^bb0(%a: f64, %o: f64):
    %v = arith.divf %a, %n : f64
    %ve = arith.addf %v, %eps : f64
    %r = math.rsqrt %ve : f64
    linalg.yield %r : f64
  } -> tensor<4xf64>
  %e2 = tensor.empty() : tensor<4x16xf64>
  %y = linalg.generic {indexing_maps = [#id, #row, #row, #col, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%X, %mean, %rstd, %W, %B : tensor<4x16xf64>, tensor<4xf64>, tensor<4xf64>, tensor<16xf64>, tensor<16xf64>) outs(%e2 : tensor<4x16xf64>) {
  ^bb0(%a: f64, %m: f64, %r: f64, %w: f64, %b: f64, %o: f64):
    %xm = arith.subf %a, %m : f64
    %xh = arith.mulf %xm, %r : f64
    %yw = arith.mulf %xh, %w : f64
    %yb = arith.addf %yw, %b : f64
    linalg.yield %yb : f64
  } -> tensor<4x16xf64>
  return %y : tensor<4x16xf64>
}

// -----
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#r1 = affine_map<(d0) -> (d0)>

// LayerNorm backward without the mean(g) term.
// CHECK-LABEL: func @ln_bwd_no_mean_term
// CHECK-NOT: norm.
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

// LayerNorm backward without the xhat * mean(g * xhat) term.
// CHECK-LABEL: func @ln_bwd_no_xhat_term
// CHECK-NOT: norm.
func.func @ln_bwd_no_xhat_term(%DY: tensor<4x16xf32>, %X: tensor<4x16xf32>, %MEAN: tensor<4xf32>, %RSTD: tensor<4xf32>, %W: tensor<16xf32>) -> tensor<4x16xf32> {
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
    %mg = arith.divf %sg, %n : f32
    %c = arith.subf %g, %mg : f32
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

// LayerNorm backward: the xhat term added, not subtracted.
// CHECK-LABEL: func @ln_bwd_wrong_sign
// CHECK-NOT: norm.
func.func @ln_bwd_wrong_sign(%DY: tensor<4x16xf32>, %X: tensor<4x16xf32>, %MEAN: tensor<4xf32>, %RSTD: tensor<4xf32>, %W: tensor<16xf32>) -> tensor<4x16xf32> {
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
    %mg = arith.divf %sg, %n : f32
    %mgx = arith.divf %sgx, %n : f32
    %a1 = arith.subf %g, %mg : f32
    %bq = arith.mulf %xh, %mgx : f32
    %c = arith.addf %a1, %bq : f32
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

// LayerNorm backward: not scaled by rstd.
// CHECK-LABEL: func @ln_bwd_no_rstd
// CHECK-NOT: norm.
func.func @ln_bwd_no_rstd(%DY: tensor<4x16xf32>, %X: tensor<4x16xf32>, %MEAN: tensor<4xf32>, %RSTD: tensor<4xf32>, %W: tensor<16xf32>) -> tensor<4x16xf32> {
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
    %mg = arith.divf %sg, %n : f32
    %mgx = arith.divf %sgx, %n : f32
    %a1 = arith.subf %g, %mg : f32
    %bq = arith.mulf %xh, %mgx : f32
    %d = arith.subf %a1, %bq : f32
    linalg.yield %d : f32
  } -> tensor<4x16xf32>
  return %dx : tensor<4x16xf32>
}

// -----
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#r1 = affine_map<(d0) -> (d0)>

// LayerNorm backward: mean(g * xhat) taken of dy * xhat (the weight left out).
// CHECK-LABEL: func @ln_bwd_sgx_without_weight
// CHECK-NOT: norm.
func.func @ln_bwd_sgx_without_weight(%DY: tensor<4x16xf32>, %X: tensor<4x16xf32>, %MEAN: tensor<4xf32>, %RSTD: tensor<4xf32>, %W: tensor<16xf32>) -> (tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>) {
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
    %t = arith.mulf %dy, %xh : f32
    %s = arith.addf %t, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %e2 = tensor.empty() : tensor<4x16xf32>
  %dx = linalg.generic {indexing_maps = [#id, #id, #row, #row, #col, #row, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%DY, %X, %MEAN, %RSTD, %W, %SG, %SGX : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4xf32>, tensor<4xf32>, tensor<16xf32>, tensor<4xf32>, tensor<4xf32>) outs(%e2 : tensor<4x16xf32>) {
  ^bb0(%dy: f32, %x: f32, %m: f32, %r: f32, %w: f32, %sg: f32, %sgx: f32, %o: f32):
    %xm = arith.subf %x, %m : f32
    %xh = arith.mulf %xm, %r : f32
    %g = arith.mulf %dy, %w : f32
    %mg = arith.divf %sg, %n : f32
    %mgx = arith.divf %sgx, %n : f32
    %a1 = arith.subf %g, %mg : f32
    %bq = arith.mulf %xh, %mgx : f32
    %c = arith.subf %a1, %bq : f32
    %d = arith.mulf %r, %c : f32
    linalg.yield %d : f32
  } -> tensor<4x16xf32>
  %e3 = tensor.empty() : tensor<16xf32>
  %zc = linalg.fill ins(%c0 : f32) outs(%e3 : tensor<16xf32>) -> tensor<16xf32>
  %dw = linalg.generic {indexing_maps = [#id, #id, #row, #row, #col], iterator_types = ["reduction", "parallel"]} ins(%DY, %X, %MEAN, %RSTD : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4xf32>, tensor<4xf32>) outs(%zc : tensor<16xf32>) {
  ^bb0(%dy: f32, %x: f32, %m: f32, %r: f32, %acc: f32):
    %xm = arith.subf %x, %m : f32
    %xh = arith.mulf %xm, %r : f32
    %t = arith.mulf %dy, %x : f32
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

// -----
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#r1 = affine_map<(d0) -> (d0)>

// the mean sums a column (the other dim) of a square x.
// CHECK-LABEL: func @mean_over_other_dim
// CHECK-NOT: norm.
func.func @mean_over_other_dim(%X: tensor<16x16xf32>, %W: tensor<16xf32>, %B: tensor<16xf32>) -> tensor<16x16xf32> {
  %c0 = arith.constant 0.0 : f32
  %n = arith.constant 16.0 : f32
  %eps = arith.constant 1.0e-5 : f32
  %e1 = tensor.empty() : tensor<16xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e1 : tensor<16xf32>) -> tensor<16xf32>
  %sum = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, #row], iterator_types = ["parallel", "reduction"]} ins(%X : tensor<16x16xf32>) outs(%z : tensor<16xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  %mean = linalg.generic {indexing_maps = [#r1, #r1], iterator_types = ["parallel"]} ins(%sum : tensor<16xf32>) outs(%e1 : tensor<16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %d = arith.divf %a, %n : f32
    linalg.yield %d : f32
  } -> tensor<16xf32>
  %sq = linalg.generic {indexing_maps = [#id, #row, #row], iterator_types = ["parallel", "reduction"]} ins(%X, %mean : tensor<16x16xf32>, tensor<16xf32>) outs(%z : tensor<16xf32>) {
  ^bb0(%a: f32, %m: f32, %acc: f32):
    %d = arith.subf %a, %m : f32
    %q = arith.mulf %d, %d : f32
    %s = arith.addf %q, %acc : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  %rstd = linalg.generic {indexing_maps = [#r1, #r1], iterator_types = ["parallel"]} ins(%sq : tensor<16xf32>) outs(%e1 : tensor<16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.divf %a, %n : f32
    %ve = arith.addf %v, %eps : f32
    %r = math.rsqrt %ve : f32
    linalg.yield %r : f32
  } -> tensor<16xf32>
  %e2 = tensor.empty() : tensor<16x16xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #row, #col, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%X, %mean, %rstd, %W, %B : tensor<16x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) outs(%e2 : tensor<16x16xf32>) {
  ^bb0(%a: f32, %m: f32, %r: f32, %w: f32, %b: f32, %o: f32):
    %xm = arith.subf %a, %m : f32
    %xh = arith.mulf %xm, %r : f32
    %yw = arith.mulf %xh, %w : f32
    %yb = arith.addf %yw, %b : f32
    linalg.yield %yb : f32
  } -> tensor<16x16xf32>
  return %y : tensor<16x16xf32>
}

// -----
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#r1 = affine_map<(d0) -> (d0)>

// rstd broadcast along the columns of a square x.
// CHECK-LABEL: func @rstd_broadcast_wrong_dim
// CHECK-NOT: norm.
func.func @rstd_broadcast_wrong_dim(%X: tensor<16x16xf32>, %W: tensor<16xf32>, %B: tensor<16xf32>) -> tensor<16x16xf32> {
  %c0 = arith.constant 0.0 : f32
  %n = arith.constant 16.0 : f32
  %eps = arith.constant 1.0e-5 : f32
  %e1 = tensor.empty() : tensor<16xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e1 : tensor<16xf32>) -> tensor<16xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%X : tensor<16x16xf32>) outs(%z : tensor<16xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  %mean = linalg.generic {indexing_maps = [#r1, #r1], iterator_types = ["parallel"]} ins(%sum : tensor<16xf32>) outs(%e1 : tensor<16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %d = arith.divf %a, %n : f32
    linalg.yield %d : f32
  } -> tensor<16xf32>
  %sq = linalg.generic {indexing_maps = [#id, #row, #row], iterator_types = ["parallel", "reduction"]} ins(%X, %mean : tensor<16x16xf32>, tensor<16xf32>) outs(%z : tensor<16xf32>) {
  ^bb0(%a: f32, %m: f32, %acc: f32):
    %d = arith.subf %a, %m : f32
    %q = arith.mulf %d, %d : f32
    %s = arith.addf %q, %acc : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  %rstd = linalg.generic {indexing_maps = [#r1, #r1], iterator_types = ["parallel"]} ins(%sq : tensor<16xf32>) outs(%e1 : tensor<16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.divf %a, %n : f32
    %ve = arith.addf %v, %eps : f32
    %r = math.rsqrt %ve : f32
    linalg.yield %r : f32
  } -> tensor<16xf32>
  %e2 = tensor.empty() : tensor<16x16xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #col, #col, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%X, %mean, %rstd, %W, %B : tensor<16x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) outs(%e2 : tensor<16x16xf32>) {
  ^bb0(%a: f32, %m: f32, %r: f32, %w: f32, %b: f32, %o: f32):
    %xm = arith.subf %a, %m : f32
    %xh = arith.mulf %xm, %r : f32
    %yw = arith.mulf %xh, %w : f32
    %yb = arith.addf %yw, %b : f32
    linalg.yield %yb : f32
  } -> tensor<16x16xf32>
  return %y : tensor<16x16xf32>
}

// -----
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#r1 = affine_map<(d0) -> (d0)>

// the mean is taken over the first half of the row.
// CHECK-LABEL: func @mean_over_half_row
// CHECK-NOT: norm.
func.func @mean_over_half_row(%X: tensor<4x16xf32>, %W: tensor<16xf32>, %B: tensor<16xf32>) -> tensor<4x16xf32> {
  %c0 = arith.constant 0.0 : f32
  %n = arith.constant 16.0 : f32
  %eps = arith.constant 1.0e-5 : f32
  %XS = tensor.extract_slice %X[0, 0] [4, 8] [1, 1] : tensor<4x16xf32> to tensor<4x8xf32>
  %e1 = tensor.empty() : tensor<4xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%XS : tensor<4x8xf32>) outs(%z : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %mean = linalg.generic {indexing_maps = [#r1, #r1], iterator_types = ["parallel"]} ins(%sum : tensor<4xf32>) outs(%e1 : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n8 = arith.constant 8.0 : f32
    %d = arith.divf %a, %n8 : f32
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

// -----
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#r1 = affine_map<(d0) -> (d0)>

// one-pass variance E[x^2] - E[x]^2, which cancels for data far from zero.
// CHECK-LABEL: func @one_pass_variance
// CHECK-NOT: norm.
func.func @one_pass_variance(%X: tensor<4x16xf32>, %W: tensor<16xf32>, %B: tensor<16xf32>) -> tensor<4x16xf32> {
  %c0 = arith.constant 0.0 : f32
  %n = arith.constant 16.0 : f32
  %eps = arith.constant 1.0e-5 : f32
  %e1 = tensor.empty() : tensor<4xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.reduce { arith.addf } ins(%X : tensor<4x16xf32>) outs(%z : tensor<4xf32>) dimensions = [1]
  %x2 = linalg.mul ins(%X, %X : tensor<4x16xf32>, tensor<4x16xf32>) outs(%X : tensor<4x16xf32>) -> tensor<4x16xf32>
  %sum2 = linalg.reduce { arith.addf } ins(%x2 : tensor<4x16xf32>) outs(%z : tensor<4xf32>) dimensions = [1]
  %rstd, %mean = linalg.generic {indexing_maps = [#r1, #r1, #r1, #r1], iterator_types = ["parallel"]} ins(%sum, %sum2 : tensor<4xf32>, tensor<4xf32>) outs(%e1, %e1 : tensor<4xf32>, tensor<4xf32>) {
  ^bb0(%s1: f32, %s2: f32, %o1: f32, %o2: f32):
    %m = arith.divf %s1, %n : f32
    %ex2 = arith.divf %s2, %n : f32
    %m2 = arith.mulf %m, %m : f32
    %v = arith.subf %ex2, %m2 : f32
    %ve = arith.addf %v, %eps : f32
    %r = math.rsqrt %ve : f32
    linalg.yield %r, %m : f32, f32
  } -> (tensor<4xf32>, tensor<4xf32>)
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

// -----
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#r1 = affine_map<(d0) -> (d0)>

// RMSNorm with the sum of squares where the mean belongs.
// CHECK-LABEL: func @rms_sum_not_mean
// CHECK-NOT: norm.
func.func @rms_sum_not_mean(%X: tensor<4x16xf32>, %W: tensor<16xf32>) -> tensor<4x16xf32> {
  %c0 = arith.constant 0.0 : f32
  %eps = arith.constant 1.0e-6 : f32
  %e1 = tensor.empty() : tensor<4xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
  %ss = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%X : tensor<4x16xf32>) outs(%z : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %q = arith.mulf %a, %a : f32
    %s = arith.addf %q, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %e2 = tensor.empty() : tensor<4x16xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%X, %ss, %W : tensor<4x16xf32>, tensor<4xf32>, tensor<16xf32>) outs(%e2 : tensor<4x16xf32>) {
  ^bb0(%a: f32, %s: f32, %w: f32, %o: f32):
    %ve = arith.addf %s, %eps : f32
    %r = math.rsqrt %ve : f32
    %xh = arith.mulf %a, %r : f32
    %yw = arith.mulf %xh, %w : f32
    linalg.yield %yw : f32
  } -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#r1 = affine_map<(d0) -> (d0)>

// RMSNorm whose rstd is of another tensor than the x it scales.
// CHECK-LABEL: func @rms_reads_other_tensor
// CHECK-NOT: norm.
func.func @rms_reads_other_tensor(%X: tensor<4x16xf32>, %X2: tensor<4x16xf32>, %W: tensor<16xf32>) -> tensor<4x16xf32> {
  %c0 = arith.constant 0.0 : f32
  %eps = arith.constant 1.0e-6 : f32
  %n = arith.constant 16.0 : f32
  %e1 = tensor.empty() : tensor<4xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
  %ss = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%X2 : tensor<4x16xf32>) outs(%z : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %q = arith.mulf %a, %a : f32
    %q16 = arith.divf %q, %n : f32
    %s = arith.addf %q16, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %e2 = tensor.empty() : tensor<4x16xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%X, %ss, %W : tensor<4x16xf32>, tensor<4xf32>, tensor<16xf32>) outs(%e2 : tensor<4x16xf32>) {
  ^bb0(%a: f32, %s: f32, %w: f32, %o: f32):
    %ve = arith.addf %s, %eps : f32
    %r = math.rsqrt %ve : f32
    %xh = arith.mulf %a, %r : f32
    %yw = arith.mulf %xh, %w : f32
    linalg.yield %yw : f32
  } -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>

// An RMSNorm backward whose dy is bf16 and x f32: the op needs them of one
// type.
// CHECK-LABEL: func @rms_grad_dy_bf16_x_f32
// CHECK-NOT: norm.
func.func @rms_grad_dy_bf16_x_f32(%DY: tensor<4x16xbf16>, %X: tensor<4x16xf32>, %RSTD: tensor<4xf32>, %W: tensor<16xf32>) -> tensor<4x16xf32> {
  %c0 = arith.constant 0.0 : f32
  %n = arith.constant 16.0 : f32
  %e1 = tensor.empty() : tensor<4xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
  %sgx = linalg.generic {indexing_maps = [#id, #id, #row, #col, #row], iterator_types = ["parallel", "reduction"]} ins(%DY, %X, %RSTD, %W : tensor<4x16xbf16>, tensor<4x16xf32>, tensor<4xf32>, tensor<16xf32>) outs(%z : tensor<4xf32>) {
  ^bb0(%dyh: bf16, %x: f32, %r: f32, %w: f32, %acc: f32):
    %dy = arith.extf %dyh : bf16 to f32
    %xh = arith.mulf %x, %r : f32
    %g = arith.mulf %w, %dy : f32
    %t = arith.mulf %xh, %g : f32
    %s = arith.addf %acc, %t : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %e2 = tensor.empty() : tensor<4x16xf32>
  %dx = linalg.generic {indexing_maps = [#id, #id, #row, #col, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%DY, %X, %RSTD, %W, %sgx : tensor<4x16xbf16>, tensor<4x16xf32>, tensor<4xf32>, tensor<16xf32>, tensor<4xf32>) outs(%e2 : tensor<4x16xf32>) {
  ^bb0(%dyh: bf16, %x: f32, %r: f32, %w: f32, %s: f32, %o: f32):
    %dy = arith.extf %dyh : bf16 to f32
    %xh = arith.mulf %x, %r : f32
    %g = arith.mulf %dy, %w : f32
    %m = arith.divf %s, %n : f32
    %b = arith.mulf %xh, %m : f32
    %c = arith.subf %g, %b : f32
    %d = arith.mulf %c, %r : f32
    linalg.yield %d : f32
  } -> tensor<4x16xf32>
  return %dx : tensor<4x16xf32>
}

// -----
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>

// A LayerNorm of f16 x whose mean accumulates in f16 and whose variance
// accumulates in bf16: no one accumulation type to record.
// CHECK-LABEL: func @two_16bit_accumulations
// CHECK-NOT: norm.
func.func @two_16bit_accumulations(%X: tensor<4x16xf16>) -> tensor<4x16xf16> {
  %zh = arith.constant 0.0 : f16
  %zb = arith.constant 0.0 : bf16
  %n = arith.constant 16.0 : f32
  %eps = arith.constant 1.0e-5 : f32
  %e1 = tensor.empty() : tensor<4xf16>
  %z1 = linalg.fill ins(%zh : f16) outs(%e1 : tensor<4xf16>) -> tensor<4xf16>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%X : tensor<4x16xf16>) outs(%z1 : tensor<4xf16>) {
  ^bb0(%a: f16, %acc: f16):
    %s = arith.addf %a, %acc : f16
    linalg.yield %s : f16
  } -> tensor<4xf16>
  %e2 = tensor.empty() : tensor<4xbf16>
  %z2 = linalg.fill ins(%zb : bf16) outs(%e2 : tensor<4xbf16>) -> tensor<4xbf16>
  %sq = linalg.generic {indexing_maps = [#id, #row, #row], iterator_types = ["parallel", "reduction"]} ins(%X, %sum : tensor<4x16xf16>, tensor<4xf16>) outs(%z2 : tensor<4xbf16>) {
  ^bb0(%a: f16, %s: f16, %acc: bf16):
    %af = arith.extf %a : f16 to f32
    %sf = arith.extf %s : f16 to f32
    %m = arith.divf %sf, %n : f32
    %d = arith.subf %af, %m : f32
    %q = arith.mulf %d, %d : f32
    %qb = arith.truncf %q : f32 to bf16
    %t = arith.addf %qb, %acc : bf16
    linalg.yield %t : bf16
  } -> tensor<4xbf16>
  %e3 = tensor.empty() : tensor<4x16xf16>
  %y = linalg.generic {indexing_maps = [#id, #row, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%X, %sum, %sq : tensor<4x16xf16>, tensor<4xf16>, tensor<4xbf16>) outs(%e3 : tensor<4x16xf16>) {
  ^bb0(%a: f16, %s: f16, %v: bf16, %o: f16):
    %af = arith.extf %a : f16 to f32
    %sf = arith.extf %s : f16 to f32
    %vf = arith.extf %v : bf16 to f32
    %m = arith.divf %sf, %n : f32
    %var = arith.divf %vf, %n : f32
    %ve = arith.addf %var, %eps : f32
    %r = math.rsqrt %ve : f32
    %xm = arith.subf %af, %m : f32
    %xh = arith.mulf %xm, %r : f32
    %yh = arith.truncf %xh : f32 to f16
    linalg.yield %yh : f16
  } -> tensor<4x16xf16>
  return %y : tensor<4x16xf16>
}
