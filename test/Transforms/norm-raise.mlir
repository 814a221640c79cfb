// RUN: norm-opt %s --split-input-file --norm-raise | FileCheck %s
// RUN: norm-opt %s --split-input-file --norm-raise=f32-accumulation | FileCheck %s --check-prefix=F32
//
// norm-raise on hand-written linalg: fused linalg.generic, named ops
// (linalg.reduce / map / broadcast / sub / mul), dynamic rows, a
// zero-centred weight, 16-bit accumulation, the backward and a partial
// backward. torch-mlir's forms: norm-raise-torch-mlir.mlir; what must
// stay: norm-raise-near-miss.mlir.

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#r1 = affine_map<(d0) -> (d0)>

// CHECK-LABEL: func @layer_norm_generic
// CHECK-SAME: (%[[X:[^:]*]]: tensor<4x16xf32>, %[[W:[^:]*]]: tensor<16xf32>, %[[B:[^:]*]]: tensor<16xf32>)
// CHECK-NOT: linalg.
// CHECK: %[[Y:.*]], %{{.*}}, %{{.*}} = norm.layer_norm x(%[[X]] : tensor<4x16xf32>) weight(%[[W]] : tensor<16xf32>) bias(%[[B]] : tensor<16xf32>) -> y(tensor<4x16xf32>) mean(tensor<4xf32>) rstd(tensor<4xf32>)
// CHECK-NOT: linalg.
// CHECK: return %[[Y]]
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

// -----
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#r1 = affine_map<(d0) -> (d0)>

// The same from named ops, dynamic rows, mean and rstd returned too, 1/N
// as a multiplier; no bias.
// CHECK-LABEL: func @layer_norm_named_ops
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x32xf32>, %[[W:[^:]*]]: tensor<32xf32>)
// CHECK: %[[Y:.*]], %[[MEAN:.*]], %[[RSTD:.*]] = norm.layer_norm x(%[[X]] : tensor<?x32xf32>) weight(%[[W]] : tensor<32xf32>) {eps = 9.99999997E-7 : f32} -> y(tensor<?x32xf32>) mean(tensor<?xf32>) rstd(tensor<?xf32>)
// CHECK-NOT: linalg.
// CHECK: return %[[Y]], %[[MEAN]], %[[RSTD]]
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

// -----
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#r1 = affine_map<(d0) -> (d0)>

// Gemma's RMSNorm: the weight enters as (1 + w).
// CHECK-LABEL: func @rms_norm_zero_centered
// CHECK-SAME: (%[[X:[^:]*]]: tensor<4x16xf32>, %[[W:[^:]*]]: tensor<16xf32>)
// CHECK: %[[Y:.*]], %{{.*}} = norm.rms_norm x(%[[X]] : tensor<4x16xf32>) weight(%[[W]] : tensor<16xf32>) {eps = 9.99999997E-7 : f32, zero_centered_weight}
// CHECK-NOT: linalg.
// CHECK: return %[[Y]]
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

// -----
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#r1 = affine_map<(d0) -> (d0)>

// Accumulation in bf16 is kept, and recorded (f32-accumulation: f32).
// CHECK-LABEL: func @rms_norm_bf16_accumulation
// CHECK: norm.rms_norm x(%{{.*}} : tensor<4x16xbf16>) weight(%{{.*}} : tensor<16xbf16>) {accumulation_type = bf16, eps = 9.98377799E-7 : f32}
// F32-LABEL: func @rms_norm_bf16_accumulation
// F32: norm.rms_norm x(%{{.*}} : tensor<4x16xbf16>) weight(%{{.*}} : tensor<16xbf16>) {eps = 9.98377799E-7 : f32}
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

// -----
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#r1 = affine_map<(d0) -> (d0)>

// The backward by hand: dx, dweight and dbias become one op.
// CHECK-LABEL: func @layer_norm_grad_generic
// CHECK-SAME: (%[[DY:[^:]*]]: tensor<4x16xf32>, %[[X:[^:]*]]: tensor<4x16xf32>, %[[MEAN:[^:]*]]: tensor<4xf32>, %[[RSTD:[^:]*]]: tensor<4xf32>, %[[W:[^:]*]]: tensor<16xf32>)
// CHECK: %[[DX:.*]], %[[DW:.*]], %[[DB:.*]] = norm.layer_norm_grad dy(%[[DY]] : tensor<4x16xf32>) x(%[[X]] : tensor<4x16xf32>) mean(%[[MEAN]] : tensor<4xf32>) rstd(%[[RSTD]] : tensor<4xf32>) weight(%[[W]] : tensor<16xf32>) -> dx(tensor<4x16xf32>) dweight(tensor<16xf32>) dbias(tensor<16xf32>)
// CHECK-NOT: linalg.
// CHECK: return %[[DX]], %[[DW]], %[[DB]]
func.func @layer_norm_grad_generic(%DY: tensor<4x16xf32>, %X: tensor<4x16xf32>, %MEAN: tensor<4xf32>, %RSTD: tensor<4xf32>, %W: tensor<16xf32>) -> (tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>) {
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

// -----
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#r1 = affine_map<(d0) -> (d0)>

// A partial match: dx lacks the mean(g) term, so only dweight and dbias
// are raised (with a weight of ones: the program's weight is read by dx
// alone); the wrong dx stays.
// CHECK-LABEL: func @layer_norm_grad_partial
// CHECK: %[[ONES:.*]] = linalg.fill
// CHECK: %{{.*}}, %[[DW:.*]], %[[DB:.*]] = norm.layer_norm_grad dy(%{{.*}}) x(%{{.*}}) mean(%{{.*}}) rstd(%{{.*}}) weight(%[[ONES]] : tensor<16xf32>) -> dx(tensor<4x16xf32>) dweight(tensor<16xf32>) dbias(tensor<16xf32>)
// CHECK: %[[DX:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4xf32>, tensor<4xf32>, tensor<16xf32>, tensor<4xf32>, tensor<4xf32>)
// CHECK: return %[[DX]], %[[DW]], %[[DB]]
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

// -----
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0, 0)>
#col = affine_map<(d0, d1) -> (d1)>

// RMSNorm backward with a residual gradient added, statistics kept as
// [M, 1] (collapsed for the op).
// CHECK-LABEL: func @rms_norm_grad_dresidual
// CHECK-SAME: (%[[DY:[^:]*]]: tensor<4x16xf32>, %[[X:[^:]*]]: tensor<4x16xf32>, %[[RSTD:[^:]*]]: tensor<4x1xf32>, %[[W:[^:]*]]: tensor<16xf32>, %[[DR:[^:]*]]: tensor<4x16xf32>)
// CHECK: %[[R:.*]] = tensor.collapse_shape %[[RSTD]] {{\[\[}}0, 1]]
// CHECK: %[[DX:.*]] = norm.rms_norm_grad dy(%[[DY]] : tensor<4x16xf32>) x(%[[X]] : tensor<4x16xf32>) rstd(%[[R]] : tensor<4xf32>) weight(%[[W]] : tensor<16xf32>) dresidual(%[[DR]] : tensor<4x16xf32>) -> dx(tensor<4x16xf32>)
// CHECK-NOT: linalg.
// CHECK: return %[[DX]]
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

// -----
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>

// LayerNorm backward from a stored xhat (no x, no mean), without weight.
// CHECK-LABEL: func @layer_norm_grad_stored_xhat
// CHECK-SAME: (%[[DY:[^:]*]]: tensor<?x16xf32>, %[[XH:[^:]*]]: tensor<?x16xf32>, %[[RSTD:[^:]*]]: tensor<?xf32>)
// CHECK: %[[DX:.*]], %[[DB:.*]] = norm.layer_norm_grad dy(%[[DY]] : tensor<?x16xf32>) xhat(%[[XH]] : tensor<?x16xf32>) rstd(%[[RSTD]] : tensor<?xf32>) -> dx(tensor<?x16xf32>) dbias(tensor<16xf32>)
// CHECK-NOT: linalg.
// CHECK: return %[[DX]], %[[DB]]
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

// -----
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row3 = affine_map<(d0, d1, d2) -> (d0, d1)>
#col3 = affine_map<(d0, d1, d2) -> (d2)>

// Rank 3 ([B, S, N] rows), bf16 activations computed in f32 with an f32
// weight, as torch's autocast leaves it: extf, the norm, truncf.
// CHECK-LABEL: func @rms_norm_rank3_bf16
// CHECK-SAME: (%[[X:[^:]*]]: tensor<2x?x32xbf16>, %[[W:[^:]*]]: tensor<32xf32>)
// CHECK: %[[Y:.*]], %{{.*}} = norm.rms_norm x(%[[X]] : tensor<2x?x32xbf16>) weight(%[[W]] : tensor<32xf32>) {eps = 9.99999997E-7 : f32} -> y(tensor<2x?x32xbf16>) rstd(tensor<2x?xf32>)
// CHECK-NOT: linalg.
// CHECK: return %[[Y]]
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
