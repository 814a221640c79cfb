// RUN: norm-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(norm-recompute-graph))" | FileCheck %s

// norm-recompute-graph (value form): a grad op reading the xhat a
// forward op stored, with that forward's rstd, reads the forward's x (and
// mean) instead; a forward whose xhat is no longer read stops producing it.

// CHECK-LABEL: func @layer_norm_xhat_to_x
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x64xbf16>, %[[W:[^:]*]]: tensor<64xf32>, %[[DY:[^:]*]]: tensor<?x64xbf16>)
// CHECK: %[[Y:.*]], %[[MEAN:.*]], %[[RSTD:.*]] = norm.layer_norm x(%[[X]] : tensor<?x64xbf16>) weight(%[[W]] : tensor<64xf32>)
// CHECK-SAME: {eps = 9.99999997E-7 : f32, zero_centered_weight}
// CHECK-SAME: -> y(tensor<?x64xbf16>) mean(tensor<?xf32>) rstd(tensor<?xf32>){{$}}
// CHECK: %[[DX:.*]], %[[DW:.*]], %[[DB:.*]] = norm.layer_norm_grad dy(%[[DY]] : tensor<?x64xbf16>)
// CHECK-SAME: x(%[[X]] : tensor<?x64xbf16>) mean(%[[MEAN]] : tensor<?xf32>) rstd(%[[RSTD]] : tensor<?xf32>) weight(%[[W]] : tensor<64xf32>)
// CHECK-SAME: {groups = 4 : i64, strategy = #norm.strategy<locked>, zero_centered_weight}
// CHECK-SAME: -> dx(tensor<?x64xbf16>) dweight(tensor<64xf32>) dbias(tensor<64xf32>)
// CHECK: return %[[Y]], %[[DX]], %[[DW]], %[[DB]]
func.func @layer_norm_xhat_to_x(%x: tensor<?x64xbf16>, %w: tensor<64xf32>, %dy: tensor<?x64xbf16>)
    -> (tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<64xf32>, tensor<64xf32>) {
  %y, %mean, %rstd, %xhat = norm.layer_norm x(%x : tensor<?x64xbf16>) weight(%w : tensor<64xf32>)
      {eps = 1.0e-6 : f32, zero_centered_weight}
      -> y(tensor<?x64xbf16>) mean(tensor<?xf32>) rstd(tensor<?xf32>) xhat(tensor<?x64xbf16>)
  %dx, %dw, %db = norm.layer_norm_grad dy(%dy : tensor<?x64xbf16>) xhat(%xhat : tensor<?x64xbf16>)
      rstd(%rstd : tensor<?xf32>) weight(%w : tensor<64xf32>)
      {strategy = #norm.strategy<locked>, groups = 4 : i64, zero_centered_weight}
      -> dx(tensor<?x64xbf16>) dweight(tensor<64xf32>) dbias(tensor<64xf32>)
  return %y, %dx, %dw, %db : tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<64xf32>, tensor<64xf32>
}

// -----

// CHECK-LABEL: func @rms_norm_xhat_to_x
// CHECK-SAME: (%[[X:[^:]*]]: tensor<2x?x128xf16>, %[[DY:[^:]*]]: tensor<2x?x128xf16>, %[[DRES:[^:]*]]: tensor<2x?x128xf16>)
// CHECK: %[[Y:.*]], %[[RSTD:.*]] = norm.rms_norm x(%[[X]] : tensor<2x?x128xf16>)
// CHECK-SAME: -> y(tensor<2x?x128xf16>) rstd(tensor<2x?xf32>){{$}}
// CHECK: %[[DX:.*]] = norm.rms_norm_grad dy(%[[DY]] : tensor<2x?x128xf16>) x(%[[X]] : tensor<2x?x128xf16>)
// CHECK-SAME: rstd(%[[RSTD]] : tensor<2x?xf32>) dresidual(%[[DRES]] : tensor<2x?x128xf16>)
// CHECK-SAME: {accumulation_type = f64} -> dx(tensor<2x?x128xf16>)
// CHECK: return %[[Y]], %[[DX]]
func.func @rms_norm_xhat_to_x(%x: tensor<2x?x128xf16>, %dy: tensor<2x?x128xf16>,
                              %dres: tensor<2x?x128xf16>)
    -> (tensor<2x?x128xf16>, tensor<2x?x128xf16>) {
  %y, %rstd, %xhat = norm.rms_norm x(%x : tensor<2x?x128xf16>)
      -> y(tensor<2x?x128xf16>) rstd(tensor<2x?xf32>) xhat(tensor<2x?x128xf16>)
  %dx = norm.rms_norm_grad dy(%dy : tensor<2x?x128xf16>) xhat(%xhat : tensor<2x?x128xf16>)
      rstd(%rstd : tensor<2x?xf32>) dresidual(%dres : tensor<2x?x128xf16>)
      {accumulation_type = f64} -> dx(tensor<2x?x128xf16>)
  return %y, %dx : tensor<2x?x128xf16>, tensor<2x?x128xf16>
}

// -----

// xhat has another use (it is returned): the grad still reads x, the forward
// keeps producing xhat.
// CHECK-LABEL: func @rms_norm_xhat_other_use
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x32xf32>,
// CHECK: %[[Y:.*]], %[[RSTD:.*]], %[[XHAT:.*]] = norm.rms_norm x(%[[X]] : tensor<?x32xf32>)
// CHECK-SAME: -> y(tensor<?x32xf32>) rstd(tensor<?xf32>) xhat(tensor<?x32xf32>)
// CHECK: %[[DX:.*]] = norm.rms_norm_grad dy(%{{[^ ]+}} : tensor<?x32xf32>) x(%[[X]] : tensor<?x32xf32>) rstd(%[[RSTD]] : tensor<?xf32>)
// CHECK: return %[[DX]], %[[XHAT]]
func.func @rms_norm_xhat_other_use(%x: tensor<?x32xf32>, %dy: tensor<?x32xf32>)
    -> (tensor<?x32xf32>, tensor<?x32xf32>) {
  %y, %rstd, %xhat = norm.rms_norm x(%x : tensor<?x32xf32>)
      -> y(tensor<?x32xf32>) rstd(tensor<?xf32>) xhat(tensor<?x32xf32>)
  %dx = norm.rms_norm_grad dy(%dy : tensor<?x32xf32>) xhat(%xhat : tensor<?x32xf32>)
      rstd(%rstd : tensor<?xf32>) -> dx(tensor<?x32xf32>)
  return %dx, %xhat : tensor<?x32xf32>, tensor<?x32xf32>
}

// -----

// Two grads read the same stored xhat: both move to x, then xhat goes.
// CHECK-LABEL: func @layer_norm_xhat_two_grads
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x32xf32>,
// CHECK: %[[Y:.*]], %[[MEAN:.*]], %[[RSTD:.*]] = norm.layer_norm x(%[[X]] : tensor<?x32xf32>)
// CHECK-SAME: -> y(tensor<?x32xf32>) mean(tensor<?xf32>) rstd(tensor<?xf32>){{$}}
// CHECK: norm.layer_norm_grad dy(%{{[^ ]+}} : tensor<?x32xf32>) x(%[[X]] : tensor<?x32xf32>) mean(%[[MEAN]] : tensor<?xf32>) rstd(%[[RSTD]] : tensor<?xf32>)
// CHECK: norm.layer_norm_grad dy(%{{[^ ]+}} : tensor<?x32xf32>) x(%[[X]] : tensor<?x32xf32>) mean(%[[MEAN]] : tensor<?xf32>) rstd(%[[RSTD]] : tensor<?xf32>)
func.func @layer_norm_xhat_two_grads(%x: tensor<?x32xf32>, %dy0: tensor<?x32xf32>,
                                     %dy1: tensor<?x32xf32>)
    -> (tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x32xf32>) {
  %y, %mean, %rstd, %xhat = norm.layer_norm x(%x : tensor<?x32xf32>)
      -> y(tensor<?x32xf32>) mean(tensor<?xf32>) rstd(tensor<?xf32>) xhat(tensor<?x32xf32>)
  %dx0 = norm.layer_norm_grad dy(%dy0 : tensor<?x32xf32>) xhat(%xhat : tensor<?x32xf32>)
      rstd(%rstd : tensor<?xf32>) -> dx(tensor<?x32xf32>)
  %dx1 = norm.layer_norm_grad dy(%dy1 : tensor<?x32xf32>) xhat(%xhat : tensor<?x32xf32>)
      rstd(%rstd : tensor<?xf32>) -> dx(tensor<?x32xf32>)
  return %y, %dx0, %dx1 : tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x32xf32>
}

// -----

// The grad's rstd is not the forward's: left alone, and the forward keeps
// its (used) xhat.
// CHECK-LABEL: func @rms_norm_other_rstd
// CHECK-SAME: %[[RSTD2:[^:]*]]: tensor<?xf32>)
// CHECK: %{{.*}}, %{{.*}}, %[[XHAT:.*]] = norm.rms_norm
// CHECK-SAME: xhat(tensor<?x32xf32>)
// CHECK: norm.rms_norm_grad dy(%{{[^ ]+}} : tensor<?x32xf32>) xhat(%[[XHAT]] : tensor<?x32xf32>) rstd(%[[RSTD2]] : tensor<?xf32>)
func.func @rms_norm_other_rstd(%x: tensor<?x32xf32>, %dy: tensor<?x32xf32>, %rstd2: tensor<?xf32>)
    -> (tensor<?x32xf32>, tensor<?x32xf32>) {
  %y, %rstd, %xhat = norm.rms_norm x(%x : tensor<?x32xf32>)
      -> y(tensor<?x32xf32>) rstd(tensor<?xf32>) xhat(tensor<?x32xf32>)
  %dx = norm.rms_norm_grad dy(%dy : tensor<?x32xf32>) xhat(%xhat : tensor<?x32xf32>)
      rstd(%rstd2 : tensor<?xf32>) -> dx(tensor<?x32xf32>)
  return %y, %dx : tensor<?x32xf32>, tensor<?x32xf32>
}

// -----

// xhat is a function argument: nothing to recompute it from.
// CHECK-LABEL: func @layer_norm_grad_xhat_argument
// CHECK-SAME: (%{{[^:]*}}: tensor<?x32xf32>, %[[XHAT:[^:]*]]: tensor<?x32xf32>, %[[RSTD:[^:]*]]: tensor<?xf32>)
// CHECK: norm.layer_norm_grad dy(%{{[^ ]+}} : tensor<?x32xf32>) xhat(%[[XHAT]] : tensor<?x32xf32>) rstd(%[[RSTD]] : tensor<?xf32>)
func.func @layer_norm_grad_xhat_argument(%dy: tensor<?x32xf32>, %xhat: tensor<?x32xf32>,
                                         %rstd: tensor<?xf32>) -> tensor<?x32xf32> {
  %dx = norm.layer_norm_grad dy(%dy : tensor<?x32xf32>) xhat(%xhat : tensor<?x32xf32>)
      rstd(%rstd : tensor<?xf32>) -> dx(tensor<?x32xf32>)
  return %dx : tensor<?x32xf32>
}

// -----

// The stored xhat is f32 but x is f16 (the grad's dy and dx are f32 to
// match): reading x instead would change the grad's types, so it is left
// alone.
// CHECK-LABEL: func @layer_norm_xhat_other_type
// CHECK: %{{.*}}, %{{.*}}, %[[RSTD:.*]], %[[XHAT:.*]] = norm.layer_norm x(%{{[^ ]+}} : tensor<?x32xf16>)
// CHECK-SAME: xhat(tensor<?x32xf32>)
// CHECK: norm.layer_norm_grad dy(%{{[^ ]+}} : tensor<?x32xf32>) xhat(%[[XHAT]] : tensor<?x32xf32>) rstd(%[[RSTD]] : tensor<?xf32>)
func.func @layer_norm_xhat_other_type(%x: tensor<?x32xf16>, %dy: tensor<?x32xf32>)
    -> (tensor<?x32xf16>, tensor<?x32xf32>) {
  %y, %mean, %rstd, %xhat = norm.layer_norm x(%x : tensor<?x32xf16>)
      -> y(tensor<?x32xf16>) mean(tensor<?xf32>) rstd(tensor<?xf32>) xhat(tensor<?x32xf32>)
  %dx = norm.layer_norm_grad dy(%dy : tensor<?x32xf32>) xhat(%xhat : tensor<?x32xf32>)
      rstd(%rstd : tensor<?xf32>) -> dx(tensor<?x32xf32>)
  return %y, %dx : tensor<?x32xf16>, tensor<?x32xf32>
}

// -----

// A forward op whose xhat is never used loses it even without a grad.
// CHECK-LABEL: func @rms_norm_unused_xhat
// CHECK: %[[Y:.*]], %[[RSTD:.*]] = norm.rms_norm x(%{{[^ ]+}} : tensor<8x16xbf16>) weight(%{{[^ ]+}} : tensor<16xbf16>)
// CHECK-SAME: -> y(tensor<8x16xbf16>) rstd(tensor<8xf32>){{$}}
// CHECK: return %[[Y]], %[[RSTD]]
func.func @rms_norm_unused_xhat(%x: tensor<8x16xbf16>, %w: tensor<16xbf16>)
    -> (tensor<8x16xbf16>, tensor<8xf32>) {
  %y, %rstd, %xhat = norm.rms_norm x(%x : tensor<8x16xbf16>) weight(%w : tensor<16xbf16>)
      -> y(tensor<8x16xbf16>) rstd(tensor<8xf32>) xhat(tensor<8x16xbf16>)
  return %y, %rstd : tensor<8x16xbf16>, tensor<8xf32>
}

// -----

// With the fused residual add, h is the last result (after xhat): dropping
// an unused xhat keeps h and the uses of every other result.
// CHECK-LABEL: func @rms_norm_residual_unused_xhat
// CHECK: %[[Y:.*]], %[[R:.*]], %[[H:.*]] = norm.rms_norm x(%{{.*}} : tensor<?x64xbf16>) residual(%{{.*}} : tensor<?x64xbf16>) -> y(tensor<?x64xbf16>) rstd(tensor<?xf32>) h(tensor<?x64xbf16>)
// CHECK: return %[[Y]], %[[R]], %[[H]]
func.func @rms_norm_residual_unused_xhat(%x: tensor<?x64xbf16>, %res: tensor<?x64xbf16>)
    -> (tensor<?x64xbf16>, tensor<?xf32>, tensor<?x64xbf16>) {
  %y, %r, %xh, %h = norm.rms_norm x(%x : tensor<?x64xbf16>) residual(%res : tensor<?x64xbf16>)
      -> y(tensor<?x64xbf16>) rstd(tensor<?xf32>) xhat(tensor<?x64xf32>) h(tensor<?x64xbf16>)
  return %y, %r, %h : tensor<?x64xbf16>, tensor<?xf32>, tensor<?x64xbf16>
}
