// RUN: norm-opt %s --split-input-file --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" | FileCheck %s
// RUN: norm-opt %s --split-input-file --one-shot-bufferize | FileCheck %s --check-prefix=TENSOR-ABI
// RUN: not norm-opt %s --split-input-file --one-shot-bufferize="must-infer-memory-space" 2>&1 | FileCheck %s --check-prefix=NO-SPACE

// One-Shot Bufferize turns each value-form norm op into its buffer form: the
// inputs are read in place, every result gets a fresh identity-layout buffer
// (its dynamic sizes read off the input) that becomes the `*_out` operand.

// LayerNorm grad with weight: dx, dweight and dbias each get a buffer; the
// strategy, groups and accumulation type survive.
// CHECK-LABEL: func @layer_norm_grad_dweight_dbias
// CHECK-SAME: (%[[DY:[^:]*]]: memref<?x64xf32>, %[[X:[^:]*]]: memref<?x64xf32>, %[[MEAN:[^:]*]]: memref<?xf32>, %[[RSTD:[^:]*]]: memref<?xf32>, %[[W:[^:]*]]: memref<64xf32>)
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[M:.*]] = memref.dim %[[X]], %[[C0]] : memref<?x64xf32>
// CHECK-DAG: %[[DX:.*]] = memref.alloc(%[[M]]) {{.*}} : memref<?x64xf32>
// CHECK-DAG: %[[DW:.*]] = memref.alloc() {{.*}} : memref<64xf32>
// CHECK-DAG: %[[DB:.*]] = memref.alloc() {{.*}} : memref<64xf32>
// CHECK: norm.layer_norm_grad dy(%[[DY]] : memref<?x64xf32>) x(%[[X]] : memref<?x64xf32>)
// CHECK-SAME: mean(%[[MEAN]] : memref<?xf32>) rstd(%[[RSTD]] : memref<?xf32>) weight(%[[W]] : memref<64xf32>)
// CHECK-SAME: outs dx(%[[DX]] : memref<?x64xf32>) dweight(%[[DW]] : memref<64xf32>) dbias(%[[DB]] : memref<64xf32>)
// CHECK-SAME: {accumulation_type = f64, groups = 8 : i64, strategy = #norm.strategy<grouped_atomic>}
// CHECK-NOT: ->
// CHECK: return %[[DX]], %[[DW]], %[[DB]]
func.func @layer_norm_grad_dweight_dbias(%dy: tensor<?x64xf32>, %x: tensor<?x64xf32>,
                                         %mean: tensor<?xf32>, %rstd: tensor<?xf32>,
                                         %w: tensor<64xf32>)
    -> (tensor<?x64xf32>, tensor<64xf32>, tensor<64xf32>) {
  %dx, %dw, %db = norm.layer_norm_grad dy(%dy : tensor<?x64xf32>) x(%x : tensor<?x64xf32>)
      mean(%mean : tensor<?xf32>) rstd(%rstd : tensor<?xf32>) weight(%w : tensor<64xf32>)
      {strategy = #norm.strategy<grouped_atomic>, groups = 8 : i64, accumulation_type = f64}
      -> dx(tensor<?x64xf32>) dweight(tensor<64xf32>) dbias(tensor<64xf32>)
  return %dx, %dw, %db : tensor<?x64xf32>, tensor<64xf32>, tensor<64xf32>
}

// -----

// RMSNorm grad without weight, reading a stored xhat, with a dresidual: dx
// only, sized like xhat.
// CHECK-LABEL: func @rms_norm_grad_no_weight
// CHECK-SAME: (%[[DY:[^:]*]]: memref<?x?xbf16>, %[[XHAT:[^:]*]]: memref<?x?xbf16>, %[[RSTD:[^:]*]]: memref<?xf32>, %[[DRES:[^:]*]]: memref<?x?xbf16>)
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[M:.*]] = memref.dim %[[XHAT]], %[[C0]]
// CHECK-DAG: %[[N:.*]] = memref.dim %[[XHAT]], %[[C1]]
// CHECK: %[[DX:.*]] = memref.alloc(%[[M]], %[[N]]) {{.*}} : memref<?x?xbf16>
// CHECK-NOT: memref.alloc
// CHECK: norm.rms_norm_grad dy(%[[DY]] : memref<?x?xbf16>) xhat(%[[XHAT]] : memref<?x?xbf16>)
// CHECK-SAME: rstd(%[[RSTD]] : memref<?xf32>) dresidual(%[[DRES]] : memref<?x?xbf16>)
// CHECK-SAME: outs dx(%[[DX]] : memref<?x?xbf16>)
// CHECK-NOT: dweight
// CHECK: return %[[DX]] : memref<?x?xbf16>
func.func @rms_norm_grad_no_weight(%dy: tensor<?x?xbf16>, %xhat: tensor<?x?xbf16>,
                                   %rstd: tensor<?xf32>, %dres: tensor<?x?xbf16>)
    -> tensor<?x?xbf16> {
  %dx = norm.rms_norm_grad dy(%dy : tensor<?x?xbf16>) xhat(%xhat : tensor<?x?xbf16>)
      rstd(%rstd : tensor<?xf32>) dresidual(%dres : tensor<?x?xbf16>) -> dx(tensor<?x?xbf16>)
  return %dx : tensor<?x?xbf16>
}

// -----

// RMSNorm grad, bf16 activations with an f32 weight: dweight is f32, and the
// dweight buffer takes N from x's trailing dim.
// CHECK-LABEL: func @rms_norm_grad_bf16_f32_weight
// CHECK-SAME: (%{{[^:]*}}: memref<?x?xbf16>, %[[X:[^:]*]]: memref<?x?xbf16>
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[M:.*]] = memref.dim %[[X]], %[[C0]]
// CHECK-DAG: %[[N:.*]] = memref.dim %[[X]], %[[C1]]
// CHECK-DAG: %[[DX:.*]] = memref.alloc(%[[M]], %[[N]]) {{.*}} : memref<?x?xbf16>
// CHECK-DAG: %[[DW:.*]] = memref.alloc(%[[N]]) {{.*}} : memref<?xf32>
// CHECK: norm.rms_norm_grad {{.*}} weight(%{{[^ ]+}} : memref<?xf32>)
// CHECK-SAME: outs dx(%[[DX]] : memref<?x?xbf16>) dweight(%[[DW]] : memref<?xf32>)
// CHECK-SAME: {strategy = #norm.strategy<atomic>, zero_centered_weight}
func.func @rms_norm_grad_bf16_f32_weight(%dy: tensor<?x?xbf16>, %x: tensor<?x?xbf16>,
                                         %rstd: tensor<?xf32>, %w: tensor<?xf32>)
    -> (tensor<?x?xbf16>, tensor<?xf32>) {
  %dx, %dw = norm.rms_norm_grad dy(%dy : tensor<?x?xbf16>) x(%x : tensor<?x?xbf16>)
      rstd(%rstd : tensor<?xf32>) weight(%w : tensor<?xf32>)
      {strategy = #norm.strategy<atomic>, zero_centered_weight}
      -> dx(tensor<?x?xbf16>) dweight(tensor<?xf32>)
  return %dx, %dw : tensor<?x?xbf16>, tensor<?xf32>
}

// -----

// LayerNorm forward without xhat, bf16 x with f32 weight and bias: y keeps
// x's type, the statistics are f32 rows; eps survives.
// CHECK-LABEL: func @layer_norm_bf16_f32_weight
// CHECK-SAME: (%[[X:[^:]*]]: memref<?x4096xbf16>, %[[W:[^:]*]]: memref<4096xf32>, %[[B:[^:]*]]: memref<4096xf32>)
// CHECK: %[[M:.*]] = memref.dim %[[X]], %{{.*}} : memref<?x4096xbf16>
// CHECK-DAG: %[[Y:.*]] = memref.alloc(%[[M]]) {{.*}} : memref<?x4096xbf16>
// CHECK-DAG: %[[MEAN:.*]] = memref.alloc(%[[M]]) {{.*}} : memref<?xf32>
// CHECK-DAG: %[[RSTD:.*]] = memref.alloc(%[[M]]) {{.*}} : memref<?xf32>
// CHECK: norm.layer_norm x(%[[X]] : memref<?x4096xbf16>) weight(%[[W]] : memref<4096xf32>) bias(%[[B]] : memref<4096xf32>)
// CHECK-SAME: outs y(%[[Y]] : memref<?x4096xbf16>) mean(%[[MEAN]] : memref<?xf32>) rstd(%[[RSTD]] : memref<?xf32>)
// CHECK-SAME: {eps = 9.99999997E-7 : f32}
// CHECK: return %[[Y]], %[[MEAN]], %[[RSTD]]
func.func @layer_norm_bf16_f32_weight(%x: tensor<?x4096xbf16>, %w: tensor<4096xf32>,
                                      %b: tensor<4096xf32>)
    -> (tensor<?x4096xbf16>, tensor<?xf32>, tensor<?xf32>) {
  %y, %mean, %rstd = norm.layer_norm x(%x : tensor<?x4096xbf16>)
      weight(%w : tensor<4096xf32>) bias(%b : tensor<4096xf32>) {eps = 1.0e-6 : f32}
      -> y(tensor<?x4096xbf16>) mean(tensor<?xf32>) rstd(tensor<?xf32>)
  return %y, %mean, %rstd : tensor<?x4096xbf16>, tensor<?xf32>, tensor<?xf32>
}

// -----

// LayerNorm forward with xhat on a rank-3 input: the statistics take x's
// leading dims; one memref.dim serves every buffer.
// CHECK-LABEL: func @layer_norm_rank3_xhat
// CHECK-SAME: (%[[X:[^:]*]]: memref<2x?x8xf16>)
// CHECK: %[[C1:.*]] = arith.constant 1 : index
// CHECK: %[[D1:.*]] = memref.dim %[[X]], %[[C1]] : memref<2x?x8xf16>
// CHECK-NOT: memref.dim
// CHECK-DAG: %[[Y:.*]] = memref.alloc(%[[D1]]) {{.*}} : memref<2x?x8xf16>
// CHECK-DAG: %[[MEAN:.*]] = memref.alloc(%[[D1]]) {{.*}} : memref<2x?xf32>
// CHECK-DAG: %[[RSTD:.*]] = memref.alloc(%[[D1]]) {{.*}} : memref<2x?xf32>
// CHECK-DAG: %[[XHAT:.*]] = memref.alloc(%[[D1]]) {{.*}} : memref<2x?x8xf32>
// CHECK: norm.layer_norm x(%[[X]] : memref<2x?x8xf16>)
// CHECK-SAME: outs y(%[[Y]] : memref<2x?x8xf16>) mean(%[[MEAN]] : memref<2x?xf32>)
// CHECK-SAME: rstd(%[[RSTD]] : memref<2x?xf32>) xhat(%[[XHAT]] : memref<2x?x8xf32>)
// CHECK: return %[[Y]], %[[MEAN]], %[[RSTD]], %[[XHAT]]
func.func @layer_norm_rank3_xhat(%x: tensor<2x?x8xf16>)
    -> (tensor<2x?x8xf16>, tensor<2x?xf32>, tensor<2x?xf32>, tensor<2x?x8xf32>) {
  %y, %mean, %rstd, %xhat = norm.layer_norm x(%x : tensor<2x?x8xf16>)
      -> y(tensor<2x?x8xf16>) mean(tensor<2x?xf32>) rstd(tensor<2x?xf32>)
         xhat(tensor<2x?x8xf32>)
  return %y, %mean, %rstd, %xhat
      : tensor<2x?x8xf16>, tensor<2x?xf32>, tensor<2x?xf32>, tensor<2x?x8xf32>
}

// -----

// RMSNorm forward with xhat, static shapes: no memref.dim.
// CHECK-LABEL: func @rms_norm_static_xhat
// CHECK-NOT: memref.dim
// CHECK-DAG: %[[Y:.*]] = memref.alloc() {{.*}} : memref<8x24xbf16>
// CHECK-DAG: %[[RSTD:.*]] = memref.alloc() {{.*}} : memref<8xf32>
// CHECK-DAG: %[[XHAT:.*]] = memref.alloc() {{.*}} : memref<8x24xbf16>
// CHECK: norm.rms_norm x(%{{[^ ]+}} : memref<8x24xbf16>) weight(%{{[^ ]+}} : memref<24xbf16>)
// CHECK-SAME: outs y(%[[Y]] : memref<8x24xbf16>) rstd(%[[RSTD]] : memref<8xf32>) xhat(%[[XHAT]] : memref<8x24xbf16>)
// CHECK-SAME: {zero_centered_weight}
func.func @rms_norm_static_xhat(%x: tensor<8x24xbf16>, %w: tensor<24xbf16>)
    -> (tensor<8x24xbf16>, tensor<8xf32>, tensor<8x24xbf16>) {
  %y, %rstd, %xhat = norm.rms_norm x(%x : tensor<8x24xbf16>) weight(%w : tensor<24xbf16>)
      {zero_centered_weight}
      -> y(tensor<8x24xbf16>) rstd(tensor<8xf32>) xhat(tensor<8x24xbf16>)
  return %y, %rstd, %xhat : tensor<8x24xbf16>, tensor<8xf32>, tensor<8x24xbf16>
}

// -----

// A forward feeding a grad: the grad reads the forward's buffers in place,
// no copy.
// CHECK-LABEL: func @rms_norm_fwd_bwd
// CHECK: norm.rms_norm x(%[[X:[^ ]+]] : memref<?x128xf16>) outs y(%[[Y:[^ ]+]] : memref<?x128xf16>) rstd(%[[RSTD:[^ ]+]] : memref<?xf32>)
// CHECK-NOT: memref.copy
// CHECK: norm.rms_norm_grad dy(%[[Y]] : memref<?x128xf16>) x(%[[X]] : memref<?x128xf16>) rstd(%[[RSTD]] : memref<?xf32>)
// CHECK-SAME: outs dx(%{{[^ ]+}} : memref<?x128xf16>)
func.func @rms_norm_fwd_bwd(%x: tensor<?x128xf16>) -> tensor<?x128xf16> {
  %y, %rstd = norm.rms_norm x(%x : tensor<?x128xf16>) -> y(tensor<?x128xf16>) rstd(tensor<?xf32>)
  %dx = norm.rms_norm_grad dy(%y : tensor<?x128xf16>) x(%x : tensor<?x128xf16>)
      rstd(%rstd : tensor<?xf32>) -> dx(tensor<?x128xf16>)
  return %dx : tensor<?x128xf16>
}

// -----

// Without function-boundary bufferization the function keeps its tensor
// signature: the op reads `to_buffer`s of the arguments (fully dynamic
// layout, accepted by the buffer form) and the results come back through
// `to_tensor`.
// TENSOR-ABI-LABEL: func @layer_norm_grad_tensor_abi
// TENSOR-ABI-SAME: (%[[DY:[^:]*]]: tensor<?x32xf32>, %[[XHAT:[^:]*]]: tensor<?x32xf32>, %{{[^:]*}}: tensor<?xf32>) -> tensor<?x32xf32>
// TENSOR-ABI-DAG: %[[DYB:.*]] = bufferization.to_buffer %[[DY]] : tensor<?x32xf32> to memref<?x32xf32, strided<[?, ?], offset: ?>>
// TENSOR-ABI-DAG: %[[XHATB:.*]] = bufferization.to_buffer %[[XHAT]] : tensor<?x32xf32> to memref<?x32xf32, strided<[?, ?], offset: ?>>
// TENSOR-ABI: %[[DX:.*]] = memref.alloc(%{{.*}}) {{.*}} : memref<?x32xf32>
// TENSOR-ABI: norm.layer_norm_grad dy(%[[DYB]] : memref<?x32xf32, strided<[?, ?], offset: ?>>) xhat(%[[XHATB]] : memref<?x32xf32, strided<[?, ?], offset: ?>>)
// TENSOR-ABI-SAME: outs dx(%[[DX]] : memref<?x32xf32>)
// TENSOR-ABI: %[[T:.*]] = bufferization.to_tensor %[[DX]] : memref<?x32xf32> to tensor<?x32xf32>
// TENSOR-ABI: return %[[T]] : tensor<?x32xf32>
// CHECK-LABEL: func @layer_norm_grad_tensor_abi
// CHECK: norm.layer_norm_grad {{.*}} outs dx(
func.func @layer_norm_grad_tensor_abi(%dy: tensor<?x32xf32>, %xhat: tensor<?x32xf32>,
                                      %rstd: tensor<?xf32>) -> tensor<?x32xf32> {
  %dx = norm.layer_norm_grad dy(%dy : tensor<?x32xf32>) xhat(%xhat : tensor<?x32xf32>)
      rstd(%rstd : tensor<?xf32>) -> dx(tensor<?x32xf32>)
  return %dx : tensor<?x32xf32>
}

// -----

// With `must-infer-memory-space`, a fresh result buffer has no memory space
// to take (the input's comes from a memref, so only the norm op fails): the
// op reports it and bufferization stops cleanly.
// CHECK-LABEL: func @rms_norm_must_infer_memory_space
// CHECK: norm.rms_norm x(%{{[^ ]+}} : memref<?x64xbf16>) outs y(
// NO-SPACE: one-shot-bufferize.mlir:[[@LINE+4]]:{{[0-9]+}}: error: could not infer memory space
// NO-SPACE: one-shot-bufferize.mlir:[[@LINE+3]]:{{[0-9]+}}: error: failed to bufferize op
func.func @rms_norm_must_infer_memory_space(%m: memref<?x64xbf16>) -> tensor<?x64xbf16> {
  %x = bufferization.to_tensor %m restrict : memref<?x64xbf16> to tensor<?x64xbf16>
  %y, %rstd = norm.rms_norm x(%x : tensor<?x64xbf16>) -> y(tensor<?x64xbf16>) rstd(tensor<?xf32>)
  return %y : tensor<?x64xbf16>
}
