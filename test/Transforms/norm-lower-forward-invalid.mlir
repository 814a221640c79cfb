// RUN: norm-opt %s --split-input-file --norm-lower-forward --verify-diagnostics

func.func @value_form(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{norm-lower-forward lowers the buffer form; bufferize first (one-shot-bufferize, or the norm-lower-to-loops pipeline)}}
  %y, %r = norm.rms_norm x(%x : tensor<4x8xf32>) -> y(tensor<4x8xf32>) rstd(tensor<4xf32>)
  return %y : tensor<4x8xf32>
}

// -----

func.func @leading_dims_not_contiguous(%x: memref<2x3x8xf32, strided<[?, ?, 1]>>, %y: memref<2x3x8xf32>,
                                       %r: memref<2x3xf32>) {
  // expected-error @+1 {{cannot view 'x' 'memref<2x3x8xf32, strided<[?, ?, 1]>>' as [rows, N]: its leading dims are not contiguous; pass a rank-2 buffer}}
  norm.rms_norm x(%x : memref<2x3x8xf32, strided<[?, ?, 1]>>) outs y(%y : memref<2x3x8xf32>)
      rstd(%r : memref<2x3xf32>)
  return
}

// -----

func.func @statistics_not_contiguous(%x: memref<2x3x8xf32>, %y: memref<2x3x8xf32>,
                                     %m: memref<2x3xf32, strided<[?, ?]>>, %r: memref<2x3xf32>) {
  // expected-error @+1 {{cannot view 'mean' 'memref<2x3xf32, strided<[?, ?]>>' as [rows]: it is not contiguous}}
  norm.layer_norm x(%x : memref<2x3x8xf32>) outs y(%y : memref<2x3x8xf32>)
      mean(%m : memref<2x3xf32, strided<[?, ?]>>) rstd(%r : memref<2x3xf32>)
  return
}
