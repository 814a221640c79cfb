// RUN: norm-opt %s --split-input-file --norm-split --verify-diagnostics
// RUN: not norm-opt %s --split-input-file --norm-split="strategy=fastest" 2>&1 | FileCheck %s --check-prefix=OPTION

// OPTION: for the --strategy option: Cannot find option named 'fastest'!

// A negative groups option is named by its value (it printed a raw byte).
// RUN: not norm-opt %s --split-input-file --norm-split="groups=-3" 2>&1 | FileCheck %s --check-prefix=GROUPS
// GROUPS: error: norm-split: groups must be >= 0, got -3

func.func @value_form(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>, %r: tensor<4xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{norm-split lowers the buffer form; bufferize first (one-shot-bufferize, or the norm-lower-to-loops pipeline)}}
  %dx = norm.rms_norm_grad dy(%dy : tensor<4x8xf32>) x(%x : tensor<4x8xf32>) rstd(%r : tensor<4xf32>) -> dx(tensor<4x8xf32>)
  return %dx : tensor<4x8xf32>
}

// -----

func.func @leading_dims_not_contiguous(%dy: memref<2x3x8xf32, strided<[?, ?, 1]>>, %x: memref<2x3x8xf32, strided<[?, ?, 1]>>,
                                       %r: memref<2x3xf32>, %dx: memref<2x3x8xf32>) {
  // expected-error @+1 {{cannot view 'x' 'memref<2x3x8xf32, strided<[?, ?, 1]>>' as [rows, N]: its leading dims are not contiguous; pass a rank-2 buffer}}
  norm.rms_norm_grad dy(%dy : memref<2x3x8xf32, strided<[?, ?, 1]>>) x(%x : memref<2x3x8xf32, strided<[?, ?, 1]>>)
      rstd(%r : memref<2x3xf32>) outs dx(%dx : memref<2x3x8xf32>)
  return
}
