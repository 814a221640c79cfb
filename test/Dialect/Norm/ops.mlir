// RUN: norm-opt %s --split-input-file | norm-opt --split-input-file | FileCheck %s
// RUN: norm-opt %s --split-input-file --mlir-print-op-generic | norm-opt --split-input-file | FileCheck %s

// Round trips of every op, operand, result and attribute of the dialect.

// CHECK-LABEL: func @layer_norm_bf16_f32_weight
func.func @layer_norm_bf16_f32_weight(%x: tensor<?x4096xbf16>, %w: tensor<4096xf32>,
                                      %b: tensor<4096xf32>)
    -> (tensor<?x4096xbf16>, tensor<?xf32>, tensor<?xf32>) {
  // CHECK: %[[Y:.*]], %[[MEAN:.*]], %[[RSTD:.*]] = norm.layer_norm x(%{{[^ ]+}} : tensor<?x4096xbf16>)
  // CHECK-SAME: weight(%{{[^ ]+}} : tensor<4096xf32>) bias(%{{[^ ]+}} : tensor<4096xf32>)
  // CHECK-SAME: {eps = 9.99999997E-7 : f32}
  // CHECK-SAME: -> y(tensor<?x4096xbf16>) mean(tensor<?xf32>) rstd(tensor<?xf32>)
  %y, %mean, %rstd = norm.layer_norm x(%x : tensor<?x4096xbf16>)
      weight(%w : tensor<4096xf32>) bias(%b : tensor<4096xf32>)
      {eps = 1.0e-6 : f32}
      -> y(tensor<?x4096xbf16>) mean(tensor<?xf32>) rstd(tensor<?xf32>)
  return %y, %mean, %rstd : tensor<?x4096xbf16>, tensor<?xf32>, tensor<?xf32>
}

// -----

// The default eps (1e-5) is not printed; a rank-3 input has rank-2 statistics; the
// optional xhat result.
// CHECK-LABEL: func @layer_norm_rank3_xhat
func.func @layer_norm_rank3_xhat(%x: tensor<2x3x8xf16>)
    -> (tensor<2x3x8xf16>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3x8xf32>) {
  // CHECK: norm.layer_norm x(%{{[^ ]+}} : tensor<2x3x8xf16>) -> y(tensor<2x3x8xf16>)
  // CHECK-SAME: mean(tensor<2x3xf32>) rstd(tensor<2x3xf32>) xhat(tensor<2x3x8xf32>)
  // CHECK-NOT: eps
  %y, %mean, %rstd, %xhat = norm.layer_norm x(%x : tensor<2x3x8xf16>) {eps = 1.0e-5 : f32}
      -> y(tensor<2x3x8xf16>) mean(tensor<2x3xf32>) rstd(tensor<2x3xf32>)
         xhat(tensor<2x3x8xf32>)
  return %y, %mean, %rstd, %xhat
      : tensor<2x3x8xf16>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3x8xf32>
}

// -----

// The fused residual add: a `residual` operand and the sum `h` as the last
// result (value form) or the last outs operand (buffer form).
// CHECK-LABEL: func @layer_norm_residual
func.func @layer_norm_residual(%x: tensor<?x4096xbf16>, %res: tensor<?x4096xbf16>,
                               %w: tensor<4096xf32>)
    -> (tensor<?x4096xbf16>, tensor<?xf32>, tensor<?xf32>, tensor<?x4096xbf16>) {
  // CHECK: %[[Y:.*]], %[[MEAN:.*]], %[[RSTD:.*]], %[[H:.*]] = norm.layer_norm x(%{{[^ ]+}} : tensor<?x4096xbf16>)
  // CHECK-SAME: residual(%{{[^ ]+}} : tensor<?x4096xbf16>) weight(%{{[^ ]+}} : tensor<4096xf32>)
  // CHECK-SAME: -> y(tensor<?x4096xbf16>) mean(tensor<?xf32>) rstd(tensor<?xf32>) h(tensor<?x4096xbf16>)
  %y, %mean, %rstd, %h = norm.layer_norm x(%x : tensor<?x4096xbf16>)
      residual(%res : tensor<?x4096xbf16>) weight(%w : tensor<4096xf32>)
      -> y(tensor<?x4096xbf16>) mean(tensor<?xf32>) rstd(tensor<?xf32>) h(tensor<?x4096xbf16>)
  return %y, %mean, %rstd, %h : tensor<?x4096xbf16>, tensor<?xf32>, tensor<?xf32>, tensor<?x4096xbf16>
}

// -----

// CHECK-LABEL: func @rms_norm_residual_buffers
func.func @rms_norm_residual_buffers(%x: memref<?x64xf16>, %res: memref<?x64xf16>,
                                     %y: memref<?x64xf16>, %rstd: memref<?xf32>,
                                     %xhat: memref<?x64xf32>, %h: memref<?x64xf16>) {
  // CHECK: norm.rms_norm x(%{{[^ ]+}} : memref<?x64xf16>) residual(%{{[^ ]+}} : memref<?x64xf16>)
  // CHECK-SAME: outs y(%{{[^ ]+}} : memref<?x64xf16>) rstd(%{{[^ ]+}} : memref<?xf32>)
  // CHECK-SAME: xhat(%{{[^ ]+}} : memref<?x64xf32>) h(%{{[^ ]+}} : memref<?x64xf16>)
  norm.rms_norm x(%x : memref<?x64xf16>) residual(%res : memref<?x64xf16>)
      outs y(%y : memref<?x64xf16>) rstd(%rstd : memref<?xf32>)
      xhat(%xhat : memref<?x64xf32>) h(%h : memref<?x64xf16>)
  return
}

// -----

// CHECK-LABEL: func @rms_norm_zero_centered
func.func @rms_norm_zero_centered(%x: tensor<?x?xbf16>, %w: tensor<?xbf16>)
    -> (tensor<?x?xbf16>, tensor<?xf32>) {
  // CHECK: norm.rms_norm x(%{{[^ ]+}} : tensor<?x?xbf16>) weight(%{{[^ ]+}} : tensor<?xbf16>)
  // CHECK-SAME: {accumulation_type = f64, eps = 9.99999997E-7 : f32, zero_centered_weight}
  // CHECK-SAME: -> y(tensor<?x?xbf16>) rstd(tensor<?xf32>)
  %y, %rstd = norm.rms_norm x(%x : tensor<?x?xbf16>) weight(%w : tensor<?xbf16>)
      {eps = 1.0e-6 : f32, zero_centered_weight, accumulation_type = f64}
      -> y(tensor<?x?xbf16>) rstd(tensor<?xf32>)
  return %y, %rstd : tensor<?x?xbf16>, tensor<?xf32>
}

// -----

// Buffer form: destination-passing memrefs, no results; strided rows.
// CHECK-LABEL: func @layer_norm_buffers
func.func @layer_norm_buffers(%x: memref<?x64xf32, strided<[128, 1]>>,
                              %w: memref<64xf32>, %y: memref<?x64xf32>,
                              %mean: memref<?xf32>, %rstd: memref<?xf32>,
                              %xhat: memref<?x64xf32>) {
  // CHECK: norm.layer_norm x(%{{[^ ]+}} : memref<?x64xf32, strided<[128, 1]>>) weight(%{{[^ ]+}} : memref<64xf32>)
  // CHECK-SAME: outs y(%{{[^ ]+}} : memref<?x64xf32>) mean(%{{[^ ]+}} : memref<?xf32>)
  // CHECK-SAME: rstd(%{{[^ ]+}} : memref<?xf32>) xhat(%{{[^ ]+}} : memref<?x64xf32>)
  norm.layer_norm x(%x : memref<?x64xf32, strided<[128, 1]>>) weight(%w : memref<64xf32>)
      outs y(%y : memref<?x64xf32>) mean(%mean : memref<?xf32>)
      rstd(%rstd : memref<?xf32>) xhat(%xhat : memref<?x64xf32>)
  return
}

// -----

// CHECK-LABEL: func @rms_norm_buffers
func.func @rms_norm_buffers(%x: memref<8x24xf16>, %y: memref<8x24xf16>,
                            %rstd: memref<8xf32>) {
  // CHECK: norm.rms_norm x(%{{[^ ]+}} : memref<8x24xf16>) outs y(%{{[^ ]+}} : memref<8x24xf16>) rstd(%{{[^ ]+}} : memref<8xf32>)
  norm.rms_norm x(%x : memref<8x24xf16>) outs y(%y : memref<8x24xf16>)
      rstd(%rstd : memref<8xf32>)
  return
}

// -----

// The default strategy (deterministic) is not printed.
// CHECK-LABEL: func @layer_norm_grad_bf16_n4096
func.func @layer_norm_grad_bf16_n4096(%dy: tensor<?x4096xbf16>, %x: tensor<?x4096xbf16>,
                                      %mean: tensor<?xf32>, %rstd: tensor<?xf32>,
                                      %w: tensor<4096xf32>)
    -> (tensor<?x4096xbf16>, tensor<4096xf32>, tensor<4096xf32>) {
  // CHECK: %[[DX:.*]], %[[DW:.*]], %[[DB:.*]] = norm.layer_norm_grad dy(%{{[^ ]+}} : tensor<?x4096xbf16>)
  // CHECK-SAME: x(%{{[^ ]+}} : tensor<?x4096xbf16>) mean(%{{[^ ]+}} : tensor<?xf32>) rstd(%{{[^ ]+}} : tensor<?xf32>)
  // CHECK-SAME: weight(%{{[^ ]+}} : tensor<4096xf32>)
  // CHECK-SAME: -> dx(tensor<?x4096xbf16>) dweight(tensor<4096xf32>) dbias(tensor<4096xf32>)
  // CHECK-NOT: strategy
  // CHECK: return %[[DX]], %[[DW]], %[[DB]]
  %dx, %dw, %db = norm.layer_norm_grad dy(%dy : tensor<?x4096xbf16>)
      x(%x : tensor<?x4096xbf16>) mean(%mean : tensor<?xf32>)
      rstd(%rstd : tensor<?xf32>) weight(%w : tensor<4096xf32>)
      {strategy = #norm.strategy<deterministic>}
      -> dx(tensor<?x4096xbf16>) dweight(tensor<4096xf32>) dbias(tensor<4096xf32>)
  return %dx, %dw, %db : tensor<?x4096xbf16>, tensor<4096xf32>, tensor<4096xf32>
}

// -----

// Every strategy, groups, dresidual, zero-centred weight.
// CHECK-LABEL: func @layer_norm_grad_strategies
func.func @layer_norm_grad_strategies(%dy: tensor<7x24xf16>, %x: tensor<7x24xf16>,
                                      %mean: tensor<7xf32>, %rstd: tensor<7xf32>,
                                      %w: tensor<24xf16>, %dres: tensor<7x24xf16>) {
  // CHECK: norm.layer_norm_grad {{.*}} dresidual(%{{[^ ]+}} : tensor<7x24xf16>) {groups = 3 : i64, strategy = #norm.strategy<grouped_atomic>, zero_centered_weight}
  %0:3 = norm.layer_norm_grad dy(%dy : tensor<7x24xf16>) x(%x : tensor<7x24xf16>)
      mean(%mean : tensor<7xf32>) rstd(%rstd : tensor<7xf32>) weight(%w : tensor<24xf16>)
      dresidual(%dres : tensor<7x24xf16>)
      {strategy = #norm.strategy<grouped_atomic>, groups = 3, zero_centered_weight}
      -> dx(tensor<7x24xf16>) dweight(tensor<24xf16>) dbias(tensor<24xf16>)
  // CHECK: norm.layer_norm_grad {{.*}} {strategy = #norm.strategy<atomic>}
  %1:3 = norm.layer_norm_grad dy(%dy : tensor<7x24xf16>) x(%x : tensor<7x24xf16>)
      mean(%mean : tensor<7xf32>) rstd(%rstd : tensor<7xf32>) weight(%w : tensor<24xf16>)
      {strategy = #norm.strategy<atomic>}
      -> dx(tensor<7x24xf16>) dweight(tensor<24xf16>) dbias(tensor<24xf16>)
  // CHECK: norm.layer_norm_grad {{.*}} {groups = 2 : i64, strategy = #norm.strategy<locked>}
  %2:3 = norm.layer_norm_grad dy(%dy : tensor<7x24xf16>) x(%x : tensor<7x24xf16>)
      mean(%mean : tensor<7xf32>) rstd(%rstd : tensor<7xf32>) weight(%w : tensor<24xf16>)
      {strategy = #norm.strategy<locked>, groups = 2}
      -> dx(tensor<7x24xf16>) dweight(tensor<24xf16>) dbias(tensor<24xf16>)
  return
}

// -----

// No weight: only dx and dbias; dbias may have its own float type.
// CHECK-LABEL: func @layer_norm_grad_no_weight
func.func @layer_norm_grad_no_weight(%dy: tensor<?x128xf32>, %x: tensor<?x128xf32>,
                                     %mean: tensor<?xf32>, %rstd: tensor<?xf32>)
    -> (tensor<?x128xf32>, tensor<128xbf16>) {
  // CHECK: norm.layer_norm_grad dy({{[^)]*}}) x({{[^)]*}}) mean({{[^)]*}}) rstd(%{{[^ ]+}} : tensor<?xf32>) -> dx(tensor<?x128xf32>) dbias(tensor<128xbf16>)
  %dx, %db = norm.layer_norm_grad dy(%dy : tensor<?x128xf32>) x(%x : tensor<?x128xf32>)
      mean(%mean : tensor<?xf32>) rstd(%rstd : tensor<?xf32>)
      -> dx(tensor<?x128xf32>) dbias(tensor<128xbf16>)
  return %dx, %db : tensor<?x128xf32>, tensor<128xbf16>
}

// -----

// A stored xhat instead of x (no mean then); dx only.
// CHECK-LABEL: func @layer_norm_grad_from_xhat
func.func @layer_norm_grad_from_xhat(%dy: tensor<?x64xbf16>, %xhat: tensor<?x64xbf16>,
                                     %rstd: tensor<?xf32>) -> tensor<?x64xbf16> {
  // CHECK: norm.layer_norm_grad dy(%{{[^ ]+}} : tensor<?x64xbf16>) xhat(%{{[^ ]+}} : tensor<?x64xbf16>) rstd(%{{[^ ]+}} : tensor<?xf32>) -> dx(tensor<?x64xbf16>)
  %dx = norm.layer_norm_grad dy(%dy : tensor<?x64xbf16>) xhat(%xhat : tensor<?x64xbf16>)
      rstd(%rstd : tensor<?xf32>) -> dx(tensor<?x64xbf16>)
  return %dx : tensor<?x64xbf16>
}

// -----

// CHECK-LABEL: func @rms_norm_grad_bf16_f32_weight
func.func @rms_norm_grad_bf16_f32_weight(%dy: tensor<4x?x1000xbf16>, %x: tensor<4x?x1000xbf16>,
                                         %rstd: tensor<4x?xf32>, %w: tensor<1000xf32>)
    -> (tensor<4x?x1000xbf16>, tensor<1000xf32>) {
  // CHECK: norm.rms_norm_grad dy(%{{[^ ]+}} : tensor<4x?x1000xbf16>) x(%{{[^ ]+}} : tensor<4x?x1000xbf16>) rstd(%{{[^ ]+}} : tensor<4x?xf32>) weight(%{{[^ ]+}} : tensor<1000xf32>)
  // CHECK-SAME: {accumulation_type = f32, groups = 64 : i64} -> dx(tensor<4x?x1000xbf16>) dweight(tensor<1000xf32>)
  %dx, %dw = norm.rms_norm_grad dy(%dy : tensor<4x?x1000xbf16>) x(%x : tensor<4x?x1000xbf16>)
      rstd(%rstd : tensor<4x?xf32>) weight(%w : tensor<1000xf32>)
      {groups = 64, accumulation_type = f32}
      -> dx(tensor<4x?x1000xbf16>) dweight(tensor<1000xf32>)
  return %dx, %dw : tensor<4x?x1000xbf16>, tensor<1000xf32>
}

// -----

// Buffer form, dx written in place of dy (the same buffer), strided rows.
// CHECK-LABEL: func @rms_norm_grad_buffers_in_place
func.func @rms_norm_grad_buffers_in_place(%dy: memref<?x24xbf16, strided<[32, 1]>>,
                                          %x: memref<?x24xbf16, strided<[32, 1]>>,
                                          %rstd: memref<?xf32>, %w: memref<24xbf16>,
                                          %dw: memref<24xbf16>) {
  // CHECK: norm.rms_norm_grad dy(%[[DY:.*]] : memref<?x24xbf16, strided<[32, 1]>>) x(%{{[^)]*}}) rstd(%{{[^)]*}}) weight(%{{[^)]*}})
  // CHECK-SAME: outs dx(%[[DY]] : memref<?x24xbf16, strided<[32, 1]>>) dweight(%{{[^ ]+}} : memref<24xbf16>)
  norm.rms_norm_grad dy(%dy : memref<?x24xbf16, strided<[32, 1]>>)
      x(%x : memref<?x24xbf16, strided<[32, 1]>>) rstd(%rstd : memref<?xf32>)
      weight(%w : memref<24xbf16>)
      outs dx(%dy : memref<?x24xbf16, strided<[32, 1]>>) dweight(%dw : memref<24xbf16>)
  return
}

// -----

// CHECK-LABEL: func @layer_norm_grad_buffers
func.func @layer_norm_grad_buffers(%dy: memref<?x8xf32>, %x: memref<?x8xf32>,
                                   %mean: memref<?xf32>, %rstd: memref<?xf32>,
                                   %w: memref<8xf32>, %dres: memref<?x8xf32>,
                                   %dx: memref<?x8xf32>, %dw: memref<8xf32>,
                                   %db: memref<8xf32>) {
  // CHECK: norm.layer_norm_grad {{.*}} dresidual(%{{[^ ]+}} : memref<?x8xf32>)
  // CHECK-SAME: outs dx(%{{[^ ]+}} : memref<?x8xf32>) dweight(%{{[^ ]+}} : memref<8xf32>) dbias(%{{[^ ]+}} : memref<8xf32>)
  norm.layer_norm_grad dy(%dy : memref<?x8xf32>) x(%x : memref<?x8xf32>)
      mean(%mean : memref<?xf32>) rstd(%rstd : memref<?xf32>) weight(%w : memref<8xf32>)
      dresidual(%dres : memref<?x8xf32>)
      outs dx(%dx : memref<?x8xf32>) dweight(%dw : memref<8xf32>) dbias(%db : memref<8xf32>)
  return
}
