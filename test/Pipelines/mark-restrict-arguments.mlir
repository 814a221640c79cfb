// RUN: norm-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(norm-mark-restrict-arguments))' | FileCheck %s

// A forward: every argument is the op's in one role; inputs are also
// read-only.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %{{[a-z0-9]+}}: memref<?x512xbf16> {norm.noalias, norm.readonly}
// CHECK-SAME: %{{[a-z0-9]+}}: memref<512xbf16> {norm.noalias, norm.readonly}
// CHECK-SAME: %{{[a-z0-9]+}}: memref<512xbf16> {norm.noalias, norm.readonly}
// CHECK-SAME: %{{[a-z0-9]+}}: memref<?x512xbf16> {norm.noalias}
// CHECK-SAME: %{{[a-z0-9]+}}: memref<?xf32> {norm.noalias}
// CHECK-SAME: %{{[a-z0-9]+}}: memref<?xf32> {norm.noalias})
func.func @forward(%x: memref<?x512xbf16>, %w: memref<512xbf16>,
                   %b: memref<512xbf16>, %y: memref<?x512xbf16>,
                   %mean: memref<?xf32>, %rstd: memref<?xf32>) {
  norm.layer_norm x(%x : memref<?x512xbf16>) weight(%w : memref<512xbf16>)
      bias(%b : memref<512xbf16>) outs y(%y : memref<?x512xbf16>)
      mean(%mean : memref<?xf32>) rstd(%rstd : memref<?xf32>)
  return
}

// -----

// A backward: dx may be dy itself (the documented in-place backward), so
// neither is marked; the rest are.
// CHECK-LABEL: func.func @backward(
// CHECK-SAME: %{{[a-z0-9]+}}: memref<?x512xbf16>,
// CHECK-SAME: %{{[a-z0-9]+}}: memref<?x512xbf16> {norm.noalias, norm.readonly}
// CHECK-SAME: %{{[a-z0-9]+}}: memref<?xf32> {norm.noalias, norm.readonly}
// CHECK-SAME: %{{[a-z0-9]+}}: memref<512xbf16> {norm.noalias, norm.readonly}
// CHECK-SAME: %{{[a-z0-9]+}}: memref<?x512xbf16>,
// CHECK-SAME: %{{[a-z0-9]+}}: memref<512xbf16> {norm.noalias})
func.func @backward(%dy: memref<?x512xbf16>, %x: memref<?x512xbf16>,
                    %rstd: memref<?xf32>, %w: memref<512xbf16>,
                    %dx: memref<?x512xbf16>, %dw: memref<512xbf16>) {
  norm.rms_norm_grad dy(%dy : memref<?x512xbf16>) x(%x : memref<?x512xbf16>)
      rstd(%rstd : memref<?xf32>) weight(%w : memref<512xbf16>)
      outs dx(%dx : memref<?x512xbf16>) dweight(%dw : memref<512xbf16>)
  return
}

// -----

// One argument in two input roles (x and residual) stays marked; one in
// two output roles is left alone.
// CHECK-LABEL: func.func @two_roles(
// CHECK-SAME: %{{[a-z0-9]+}}: memref<?x512xbf16> {norm.noalias, norm.readonly}
// CHECK-SAME: %{{[a-z0-9]+}}: memref<512xbf16> {norm.noalias, norm.readonly}
// CHECK-SAME: %{{[a-z0-9]+}}: memref<?x512xbf16>,
// CHECK-SAME: %{{[a-z0-9]+}}: memref<?xf32> {norm.noalias})
func.func @two_roles(%x: memref<?x512xbf16>, %w: memref<512xbf16>,
                     %yh: memref<?x512xbf16>, %rstd: memref<?xf32>) {
  norm.rms_norm x(%x : memref<?x512xbf16>) residual(%x : memref<?x512xbf16>)
      weight(%w : memref<512xbf16>) outs y(%yh : memref<?x512xbf16>)
      rstd(%rstd : memref<?xf32>) h(%yh : memref<?x512xbf16>)
  return
}

// -----

// Two ops in one function: no manifest describes it and libnormrt checks
// no contract between them, so nothing is marked.
// CHECK-LABEL: func.func @two_ops(
// CHECK-NOT: norm.noalias
// CHECK: return
func.func @two_ops(%x: memref<?x512xbf16>, %w: memref<512xbf16>,
                   %y: memref<?x512xbf16>, %rstd: memref<?xf32>,
                   %y2: memref<?x512xbf16>, %rstd2: memref<?xf32>) {
  norm.rms_norm x(%x : memref<?x512xbf16>) weight(%w : memref<512xbf16>)
      outs y(%y : memref<?x512xbf16>) rstd(%rstd : memref<?xf32>)
  norm.rms_norm x(%y : memref<?x512xbf16>) weight(%w : memref<512xbf16>)
      outs y(%y2 : memref<?x512xbf16>) rstd(%rstd2 : memref<?xf32>)
  return
}

// -----

// Operands that are not the function's arguments (a subview here) are not
// marked, and neither is the argument they come from.
// CHECK-LABEL: func.func @not_arguments(
// CHECK-SAME: %{{[a-z0-9]+}}: memref<?x512xbf16>,
// CHECK-SAME: %{{[a-z0-9]+}}: memref<512xbf16> {norm.noalias, norm.readonly}
func.func @not_arguments(%x: memref<?x512xbf16>, %w: memref<512xbf16>,
                         %y: memref<?x512xbf16>, %rstd: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %xs = memref.subview %x[0, 0] [%c4, 512] [1, 1] : memref<?x512xbf16> to memref<?x512xbf16, strided<[512, 1]>>
  norm.rms_norm x(%xs : memref<?x512xbf16, strided<[512, 1]>>)
      weight(%w : memref<512xbf16>) outs y(%y : memref<?x512xbf16>)
      rstd(%rstd : memref<?xf32>)
  return
}
