// RUN: norm-opt %s --split-input-file --verify-diagnostics

// One rule per chunk. Forward ops first, then the backward ops.

func.func @forward_rank1(%x: tensor<8xf32>) {
  // expected-error @+1 {{'x' must have rank >= 2 (rows x N), got 'tensor<8xf32>'}}
  %y, %r = norm.rms_norm x(%x : tensor<8xf32>) -> y(tensor<8xf32>) rstd(tensor<f32>)
  return
}

// -----

func.func @forward_f64(%x: tensor<4x8xf64>) {
  // expected-error @+1 {{'x' element type must be f32, f16 or bf16, got 'f64'}}
  %y, %r = norm.rms_norm x(%x : tensor<4x8xf64>) -> y(tensor<4x8xf64>) rstd(tensor<4xf32>)
  return
}

// -----

func.func @forward_unranked(%x: tensor<*xf32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor or memref}}
  %y, %r = norm.rms_norm x(%x : tensor<*xf32>) -> y(tensor<4x8xf32>) rstd(tensor<4xf32>)
  return
}

// -----

func.func @forward_eps_nonpositive(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'eps' must be positive, got 0}}
  %y, %r = norm.rms_norm x(%x : tensor<4x8xf32>) {eps = 0.0 : f32} -> y(tensor<4x8xf32>) rstd(tensor<4xf32>)
  return
}

// -----

func.func @forward_weight_shape(%x: tensor<4x8xf32>, %w: tensor<16xf32>) {
  // expected-error @+1 {{'weight' must have shape [8] (the trailing dim of 'x'), got [16]}}
  %y, %r = norm.rms_norm x(%x : tensor<4x8xf32>) weight(%w : tensor<16xf32>) -> y(tensor<4x8xf32>) rstd(tensor<4xf32>)
  return
}

// -----

func.func @forward_weight_type(%x: tensor<4x8xf32>, %w: tensor<8xi32>) {
  // expected-error @+1 {{'weight' element type must be f32, f16 or bf16, got 'i32'}}
  %y, %r = norm.rms_norm x(%x : tensor<4x8xf32>) weight(%w : tensor<8xi32>) -> y(tensor<4x8xf32>) rstd(tensor<4xf32>)
  return
}

// -----

func.func @forward_zero_centered_no_weight(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'zero_centered_weight' needs a 'weight'}}
  %y, %r = norm.rms_norm x(%x : tensor<4x8xf32>) {zero_centered_weight} -> y(tensor<4x8xf32>) rstd(tensor<4xf32>)
  return
}

// -----

func.func @forward_bias_shape(%x: tensor<4x8xf32>, %b: tensor<4x8xf32>) {
  // expected-error @+1 {{'bias' must have shape [8] (the trailing dim of 'x'), got [4, 8]}}
  %y, %m, %r = norm.layer_norm x(%x : tensor<4x8xf32>) bias(%b : tensor<4x8xf32>) -> y(tensor<4x8xf32>) mean(tensor<4xf32>) rstd(tensor<4xf32>)
  return
}

// -----

func.func @forward_value_form_without_y(%x: tensor<4x8xf32>) {
  // (No custom syntax can say this; the generic form can.)
  // expected-error @+1 {{value form needs a 'y' result}}
  %r = "norm.rms_norm"(%x) <{operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 1, 0, 0>}> : (tensor<4x8xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @forward_buffer_form_without_y(%x: memref<4x8xf32>, %r: memref<4xf32>) {
  // expected-error @+1 {{buffer form needs a 'y' outs operand}}
  norm.rms_norm x(%x : memref<4x8xf32>) rstd(%r : memref<4xf32>)
  return
}

// -----

func.func @forward_y_type(%x: tensor<4x8xbf16>) {
  // expected-error @+1 {{'y' must have element type 'bf16', got 'f32'}}
  %y, %r = norm.rms_norm x(%x : tensor<4x8xbf16>) -> y(tensor<4x8xf32>) rstd(tensor<4xf32>)
  return
}

// -----

func.func @forward_y_shape(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'y' must have the shape of 'x' [4, 8], got [4, 16]}}
  %y, %r = norm.rms_norm x(%x : tensor<4x8xf32>) -> y(tensor<4x16xf32>) rstd(tensor<4xf32>)
  return
}

// -----

func.func @forward_layer_norm_without_mean(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'mean' output is required (the backward reads it)}}
  %y, %r = norm.layer_norm x(%x : tensor<4x8xf32>) -> y(tensor<4x8xf32>) rstd(tensor<4xf32>)
  return
}

// -----

func.func @forward_rms_norm_without_rstd(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'rstd' output is required (the backward reads it)}}
  %y = norm.rms_norm x(%x : tensor<4x8xf32>) -> y(tensor<4x8xf32>)
  return
}

// -----

func.func @forward_mean_shape(%x: tensor<2x4x8xf32>) {
  // expected-error @+1 {{'mean' must have shape [2, 4] (the row dims of 'x'), got [8]}}
  %y, %m, %r = norm.layer_norm x(%x : tensor<2x4x8xf32>) -> y(tensor<2x4x8xf32>) mean(tensor<8xf32>) rstd(tensor<2x4xf32>)
  return
}

// -----

func.func @forward_rstd_type(%x: tensor<4x8xbf16>) {
  // expected-error @+1 {{'rstd' must have element type f32, got 'bf16'}}
  %y, %r = norm.rms_norm x(%x : tensor<4x8xbf16>) -> y(tensor<4x8xbf16>) rstd(tensor<4xbf16>)
  return
}

// -----

func.func @forward_xhat_shape(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'xhat' must have the shape of 'x' [4, 8], got [8, 4]}}
  %y, %r, %xh = norm.rms_norm x(%x : tensor<4x8xf32>) -> y(tensor<4x8xf32>) rstd(tensor<4xf32>) xhat(tensor<8x4xf32>)
  return
}

// -----

// The fused residual add: `residual` is x's shape and element type, and the
// sum `h` is an output exactly when a residual is given.

func.func @forward_residual_shape(%x: tensor<4x8xbf16>, %res: tensor<4x4xbf16>) {
  // expected-error @+1 {{'residual' must have the shape of 'x' [4, 8], got [4, 4]}}
  %y, %r, %h = norm.rms_norm x(%x : tensor<4x8xbf16>) residual(%res : tensor<4x4xbf16>) -> y(tensor<4x8xbf16>) rstd(tensor<4xf32>) h(tensor<4x8xbf16>)
  return
}

// -----

func.func @forward_residual_type(%x: tensor<4x8xbf16>, %res: tensor<4x8xf32>) {
  // expected-error @+1 {{'residual' must have element type 'bf16', got 'f32'}}
  %y, %m, %r, %h = norm.layer_norm x(%x : tensor<4x8xbf16>) residual(%res : tensor<4x8xf32>) -> y(tensor<4x8xbf16>) mean(tensor<4xf32>) rstd(tensor<4xf32>) h(tensor<4x8xbf16>)
  return
}

// -----

func.func @forward_residual_rank(%x: tensor<2x4x8xf16>, %res: tensor<8x8xf16>) {
  // expected-error @+1 {{'residual' must have the shape of 'x' [2, 4, 8], got [8, 8]}}
  %y, %r, %h = norm.rms_norm x(%x : tensor<2x4x8xf16>) residual(%res : tensor<8x8xf16>) -> y(tensor<2x4x8xf16>) rstd(tensor<2x4xf32>) h(tensor<2x4x8xf16>)
  return
}

// -----

func.func @forward_residual_without_h(%x: tensor<4x8xbf16>, %res: tensor<4x8xbf16>) {
  // expected-error @+1 {{a 'residual' needs the sum 'h' as an output (an 'h' result)}}
  %y, %r = norm.rms_norm x(%x : tensor<4x8xbf16>) residual(%res : tensor<4x8xbf16>) -> y(tensor<4x8xbf16>) rstd(tensor<4xf32>)
  return
}

// -----

func.func @forward_residual_without_h_out(%x: memref<4x8xbf16>, %res: memref<4x8xbf16>, %y: memref<4x8xbf16>, %r: memref<4xf32>) {
  // expected-error @+1 {{a 'residual' needs the sum 'h' as an output (an 'h' outs operand)}}
  norm.rms_norm x(%x : memref<4x8xbf16>) residual(%res : memref<4x8xbf16>) outs y(%y : memref<4x8xbf16>) rstd(%r : memref<4xf32>)
  return
}

// -----

func.func @forward_h_without_residual(%x: tensor<4x8xbf16>) {
  // expected-error @+1 {{'h' (x + residual) is an output but no 'residual' is given}}
  %y, %r, %h = norm.rms_norm x(%x : tensor<4x8xbf16>) -> y(tensor<4x8xbf16>) rstd(tensor<4xf32>) h(tensor<4x8xbf16>)
  return
}

// -----

func.func @forward_h_type(%x: tensor<4x8xbf16>, %res: tensor<4x8xbf16>) {
  // expected-error @+1 {{'h' must have element type 'bf16', got 'f32'}}
  %y, %r, %h = norm.rms_norm x(%x : tensor<4x8xbf16>) residual(%res : tensor<4x8xbf16>) -> y(tensor<4x8xbf16>) rstd(tensor<4xf32>) h(tensor<4x8xf32>)
  return
}

// -----

func.func @forward_h_shape(%x: memref<4x8xbf16>, %res: memref<4x8xbf16>, %y: memref<4x8xbf16>, %r: memref<4xf32>, %h: memref<4x9xbf16>) {
  // expected-error @+1 {{'h' must have the shape of 'x' [4, 8], got [4, 9]}}
  norm.rms_norm x(%x : memref<4x8xbf16>) residual(%res : memref<4x8xbf16>) outs y(%y : memref<4x8xbf16>) rstd(%r : memref<4xf32>) h(%h : memref<4x9xbf16>)
  return
}

// -----

func.func @forward_residual_mixed_forms(%x: tensor<4x8xbf16>, %res: memref<4x8xbf16>) {
  // expected-error @+1 {{'residual' is a memref but 'x' is a tensor: use all tensors (value form) or all memrefs (buffer form)}}
  %y, %r, %h = norm.rms_norm x(%x : tensor<4x8xbf16>) residual(%res : memref<4x8xbf16>) -> y(tensor<4x8xbf16>) rstd(tensor<4xf32>) h(tensor<4x8xbf16>)
  return
}

// -----

func.func @forward_mixed_forms(%x: tensor<4x8xf32>, %w: memref<8xf32>) {
  // expected-error @+1 {{'weight' is a memref but 'x' is a tensor: use all tensors (value form) or all memrefs (buffer form)}}
  %y, %r = norm.rms_norm x(%x : tensor<4x8xf32>) weight(%w : memref<8xf32>) -> y(tensor<4x8xf32>) rstd(tensor<4xf32>)
  return
}

// -----

func.func @forward_buffer_form_with_result(%x: memref<4x8xf32>, %y: memref<4x8xf32>) {
  // expected-error @+1 {{buffer form (memref operands) returns no results, but 'rstd' is a result}}
  %r = "norm.rms_norm"(%x, %y) <{operandSegmentSizes = array<i32: 1, 0, 0, 1, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 1, 0, 0>}> : (memref<4x8xf32>, memref<4x8xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @forward_value_form_with_outs(%x: tensor<4x8xf32>, %r: memref<4xf32>) {
  // expected-error @+1 {{'rstd' is a buffer operand (outs), but the op is in value form (tensor operands): return it as a result}}
  %y = norm.rms_norm x(%x : tensor<4x8xf32>) rstd(%r : memref<4xf32>) -> y(tensor<4x8xf32>)
  return
}

// -----

#map = affine_map<(d0, d1) -> (d1, d0)>
func.func @forward_not_strided(%x: memref<4x8xf32>, %y: memref<4x8xf32, #map>, %r: memref<4xf32>) {
  // expected-error @+1 {{'y' must have a strided layout, got 'memref<4x8xf32, affine_map<(d0, d1) -> (d1, d0)>>'}}
  norm.rms_norm x(%x : memref<4x8xf32>) outs y(%y : memref<4x8xf32, #map>) rstd(%r : memref<4xf32>)
  return
}

// -----

func.func @forward_accumulation_type(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'accumulation_type' must be f32, f64 or the element type of 'x' ('f32'), got 'f16'}}
  %y, %r = norm.rms_norm x(%x : tensor<4x8xf32>) {accumulation_type = f16} -> y(tensor<4x8xf32>) rstd(tensor<4xf32>)
  return
}

// -----

func.func @grad_both_x_and_xhat(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>, %r: tensor<4xf32>) {
  // expected-error @+1 {{expects exactly one of 'x' and 'xhat'}}
  %dx = norm.rms_norm_grad dy(%dy : tensor<4x8xf32>) x(%x : tensor<4x8xf32>) xhat(%x : tensor<4x8xf32>) rstd(%r : tensor<4xf32>) -> dx(tensor<4x8xf32>)
  return
}

// -----

func.func @grad_neither_x_nor_xhat(%dy: tensor<4x8xf32>, %r: tensor<4xf32>) {
  // expected-error @+1 {{expects exactly one of 'x' and 'xhat'}}
  %dx = norm.rms_norm_grad dy(%dy : tensor<4x8xf32>) rstd(%r : tensor<4xf32>) -> dx(tensor<4x8xf32>)
  return
}

// -----

func.func @forward_empty_rows(%x: memref<?x0xf32>, %y: memref<?x0xf32>, %r: memref<?xf32>) {
  // expected-error @+1 {{'x' must have a non-empty trailing dim (N > 0), got 'memref<?x0xf32>'}}
  norm.rms_norm x(%x : memref<?x0xf32>) outs y(%y : memref<?x0xf32>) rstd(%r : memref<?xf32>)
  return
}

// -----

func.func @grad_empty_rows(%dy: tensor<?x0xbf16>, %x: tensor<?x0xbf16>, %r: tensor<?xf32>) {
  // expected-error @+1 {{'x' must have a non-empty trailing dim (N > 0), got 'tensor<?x0xbf16>'}}
  %dx = norm.rms_norm_grad dy(%dy : tensor<?x0xbf16>) x(%x : tensor<?x0xbf16>) rstd(%r : tensor<?xf32>) -> dx(tensor<?x0xbf16>)
  return
}

// -----

func.func @grad_rank1(%dy: tensor<8xf32>, %x: tensor<8xf32>, %r: tensor<f32>) {
  // expected-error @+1 {{'x' must have rank >= 2 (rows x N), got 'tensor<8xf32>'}}
  %dx = norm.rms_norm_grad dy(%dy : tensor<8xf32>) x(%x : tensor<8xf32>) rstd(%r : tensor<f32>) -> dx(tensor<8xf32>)
  return
}

// -----

func.func @grad_dy_shape(%dy: tensor<4x16xf32>, %x: tensor<4x8xf32>, %r: tensor<4xf32>) {
  // expected-error @+1 {{'dy' must have the shape of 'x' [4, 8], got [4, 16]}}
  %dx = norm.rms_norm_grad dy(%dy : tensor<4x16xf32>) x(%x : tensor<4x8xf32>) rstd(%r : tensor<4xf32>) -> dx(tensor<4x8xf32>)
  return
}

// -----

func.func @grad_dy_type(%dy: tensor<4x8xf16>, %x: tensor<4x8xbf16>, %r: tensor<4xf32>) {
  // expected-error @+1 {{'dy' must have element type 'bf16', got 'f16'}}
  %dx = norm.rms_norm_grad dy(%dy : tensor<4x8xf16>) x(%x : tensor<4x8xbf16>) rstd(%r : tensor<4xf32>) -> dx(tensor<4x8xbf16>)
  return
}

// -----

func.func @grad_mean_missing(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>, %r: tensor<4xf32>) {
  // expected-error @+1 {{'mean' is required with 'x' (xhat = (x - mean) * rstd)}}
  %dx = norm.layer_norm_grad dy(%dy : tensor<4x8xf32>) x(%x : tensor<4x8xf32>) rstd(%r : tensor<4xf32>) -> dx(tensor<4x8xf32>)
  return
}

// -----

func.func @grad_mean_with_xhat(%dy: tensor<4x8xf32>, %xh: tensor<4x8xf32>, %m: tensor<4xf32>, %r: tensor<4xf32>) {
  // expected-error @+1 {{'mean' is not used when a stored 'xhat' is given}}
  %dx = norm.layer_norm_grad dy(%dy : tensor<4x8xf32>) xhat(%xh : tensor<4x8xf32>) mean(%m : tensor<4xf32>) rstd(%r : tensor<4xf32>) -> dx(tensor<4x8xf32>)
  return
}

// -----

func.func @grad_mean_shape(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>, %m: tensor<5xf32>, %r: tensor<4xf32>) {
  // expected-error @+1 {{'mean' must have shape [4] (the row dims of 'x'), got [5]}}
  %dx = norm.layer_norm_grad dy(%dy : tensor<4x8xf32>) x(%x : tensor<4x8xf32>) mean(%m : tensor<5xf32>) rstd(%r : tensor<4xf32>) -> dx(tensor<4x8xf32>)
  return
}

// -----

func.func @grad_rstd_shape_from_xhat(%dy: tensor<4x8xf32>, %xh: tensor<4x8xf32>, %r: tensor<4x1xf32>) {
  // expected-error @+1 {{'rstd' must have shape [4] (the row dims of 'xhat'), got [4, 1]}}
  %dx = norm.rms_norm_grad dy(%dy : tensor<4x8xf32>) xhat(%xh : tensor<4x8xf32>) rstd(%r : tensor<4x1xf32>) -> dx(tensor<4x8xf32>)
  return
}

// -----

func.func @grad_weight_shape(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>, %r: tensor<4xf32>, %w: tensor<4xf32>) {
  // expected-error @+1 {{'weight' must have shape [8] (the trailing dim of 'x'), got [4]}}
  %dx = norm.rms_norm_grad dy(%dy : tensor<4x8xf32>) x(%x : tensor<4x8xf32>) rstd(%r : tensor<4xf32>) weight(%w : tensor<4xf32>) -> dx(tensor<4x8xf32>)
  return
}

// -----

func.func @grad_zero_centered_no_weight(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>, %r: tensor<4xf32>) {
  // expected-error @+1 {{'zero_centered_weight' needs a 'weight'}}
  %dx = norm.rms_norm_grad dy(%dy : tensor<4x8xf32>) x(%x : tensor<4x8xf32>) rstd(%r : tensor<4xf32>) {zero_centered_weight} -> dx(tensor<4x8xf32>)
  return
}

// -----

func.func @grad_value_form_without_dx(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>, %m: tensor<4xf32>, %r: tensor<4xf32>) {
  // expected-error @+1 {{value form needs a 'dx' result}}
  %db = "norm.layer_norm_grad"(%dy, %x, %m, %r) <{operandSegmentSizes = array<i32: 1, 1, 0, 1, 1, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 1>}> : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @grad_buffer_form_without_dx(%dy: memref<4x8xf32>, %x: memref<4x8xf32>, %r: memref<4xf32>, %w: memref<8xf32>) {
  // expected-error @+1 {{buffer form needs a 'dx' outs operand}}
  norm.rms_norm_grad dy(%dy : memref<4x8xf32>) x(%x : memref<4x8xf32>) rstd(%r : memref<4xf32>) weight(%w : memref<8xf32>) dweight(%w : memref<8xf32>)
  return
}

// -----

func.func @grad_dx_type(%dy: tensor<4x8xbf16>, %x: tensor<4x8xbf16>, %r: tensor<4xf32>) {
  // expected-error @+1 {{'dx' must have element type 'bf16', got 'f32'}}
  %dx = norm.rms_norm_grad dy(%dy : tensor<4x8xbf16>) x(%x : tensor<4x8xbf16>) rstd(%r : tensor<4xf32>) -> dx(tensor<4x8xf32>)
  return
}

// -----

func.func @grad_dresidual_shape(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>, %r: tensor<4xf32>, %res: tensor<8x8xf32>) {
  // expected-error @+1 {{'dresidual' must have the shape of 'x' [4, 8], got [8, 8]}}
  %dx = norm.rms_norm_grad dy(%dy : tensor<4x8xf32>) x(%x : tensor<4x8xf32>) rstd(%r : tensor<4xf32>) dresidual(%res : tensor<8x8xf32>) -> dx(tensor<4x8xf32>)
  return
}

// -----

func.func @grad_dweight_without_weight(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>, %r: tensor<4xf32>) {
  // expected-error @+1 {{'dweight' is requested but no 'weight' is given}}
  %dx, %dw = norm.rms_norm_grad dy(%dy : tensor<4x8xf32>) x(%x : tensor<4x8xf32>) rstd(%r : tensor<4xf32>) -> dx(tensor<4x8xf32>) dweight(tensor<8xf32>)
  return
}

// -----

func.func @grad_dweight_type(%dy: tensor<4x8xbf16>, %x: tensor<4x8xbf16>, %r: tensor<4xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{'dweight' must have element type 'f32', got 'bf16'}}
  %dx, %dw = norm.rms_norm_grad dy(%dy : tensor<4x8xbf16>) x(%x : tensor<4x8xbf16>) rstd(%r : tensor<4xf32>) weight(%w : tensor<8xf32>) -> dx(tensor<4x8xbf16>) dweight(tensor<8xbf16>)
  return
}

// -----

func.func @grad_dbias_shape(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>, %m: tensor<4xf32>, %r: tensor<4xf32>) {
  // expected-error @+1 {{'dbias' must have shape [8] (the trailing dim of 'x'), got [4]}}
  %dx, %db = norm.layer_norm_grad dy(%dy : tensor<4x8xf32>) x(%x : tensor<4x8xf32>) mean(%m : tensor<4xf32>) rstd(%r : tensor<4xf32>) -> dx(tensor<4x8xf32>) dbias(tensor<4xf32>)
  return
}

// -----

func.func @grad_groups_with_atomic(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>, %m: tensor<4xf32>, %r: tensor<4xf32>) {
  // expected-error @+1 {{'groups' has no meaning with strategy 'atomic' (rows add straight into [N])}}
  %dx, %db = norm.layer_norm_grad dy(%dy : tensor<4x8xf32>) x(%x : tensor<4x8xf32>) mean(%m : tensor<4xf32>) rstd(%r : tensor<4xf32>) {strategy = #norm.strategy<atomic>, groups = 4} -> dx(tensor<4x8xf32>) dbias(tensor<8xf32>)
  return
}

// -----

func.func @grad_groups_without_column_sums(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>, %r: tensor<4xf32>) {
  // expected-error @+1 {{'groups' is set but neither dweight nor dbias is requested}}
  %dx = norm.rms_norm_grad dy(%dy : tensor<4x8xf32>) x(%x : tensor<4x8xf32>) rstd(%r : tensor<4xf32>) {groups = 4} -> dx(tensor<4x8xf32>)
  return
}

// -----

func.func @grad_groups_nonpositive(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>, %r: tensor<4xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{attribute 'groups' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %dx, %dw = norm.rms_norm_grad dy(%dy : tensor<4x8xf32>) x(%x : tensor<4x8xf32>) rstd(%r : tensor<4xf32>) weight(%w : tensor<8xf32>) {groups = 0} -> dx(tensor<4x8xf32>) dweight(tensor<8xf32>)
  return
}

// -----

func.func @grad_unknown_strategy(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>, %r: tensor<4xf32>) {
  // expected-error @+2 {{expected ::mlir::norm::ReductionStrategy to be one of: deterministic, grouped_atomic, atomic, locked}}
  // expected-error @+1 {{failed to parse Norm_ReductionStrategyAttr parameter 'value'}}
  %dx = norm.rms_norm_grad dy(%dy : tensor<4x8xf32>) x(%x : tensor<4x8xf32>) rstd(%r : tensor<4xf32>) {strategy = #norm.strategy<fastest>} -> dx(tensor<4x8xf32>)
  return
}

// -----

func.func @grad_mixed_forms(%dy: memref<4x8xf32>, %x: tensor<4x8xf32>, %r: tensor<4xf32>) {
  // expected-error @+1 {{'dy' is a memref but 'x' is a tensor: use all tensors (value form) or all memrefs (buffer form)}}
  %dx = norm.rms_norm_grad dy(%dy : memref<4x8xf32>) x(%x : tensor<4x8xf32>) rstd(%r : tensor<4xf32>) -> dx(tensor<4x8xf32>)
  return
}

// -----

func.func @grad_accumulation_type(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>, %r: tensor<4xf32>) {
  // expected-error @+1 {{'accumulation_type' must be f32, f64 or the element type of 'x' ('f32'), got 'bf16'}}
  %dx = norm.rms_norm_grad dy(%dy : tensor<4x8xf32>) x(%x : tensor<4x8xf32>) rstd(%r : tensor<4xf32>) {accumulation_type = bf16} -> dx(tensor<4x8xf32>)
  return
}
