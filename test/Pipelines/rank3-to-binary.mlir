// REQUIRES: cuda-toolkit
// RUN: norm-opt %s --norm-to-gpu-binary="toolkit=%cuda_toolkit" | FileCheck %s
// RUN: norm-opt %s --norm-lower-to-loops --norm-choose-geometry --norm-map-to-gpu --gpu-kernel-outlining | FileCheck %s --check-prefix=KERNEL

// Rank 3 (batch, sequence, hidden): the rows are the two leading dims. The
// lowering views them as one by a memref.collapse_shape, which the mapping
// moves into the kernels with the rest of the index arithmetic; the GPU
// tail expands it into strided metadata (expand-strided-metadata), so the
// kernels compile to PTX (they used to end in "LLVM Translation failed for
// operation: builtin.unrealized_conversion_cast").
// KERNEL: gpu.func @rms_norm_grad_rank3_dx_1(
// KERNEL-SAME: memref<?x?x1024xbf16
// KERNEL: memref.collapse_shape
// CHECK-LABEL: func.func @rms_norm_grad_rank3
// CHECK: gpu.launch_func @rms_norm_grad_rank3_kernels::@rms_norm_grad_rank3_dx_1
// CHECK: gpu.binary @rms_norm_grad_rank3_kernels
// CHECK-SAME: .visible .entry rms_norm_grad_rank3_dx_1(
// CHECK-NOT: unrealized_conversion_cast
func.func @rms_norm_grad_rank3(%dy: memref<?x?x1024xbf16>, %x: memref<?x?x1024xbf16>,
                               %rstd: memref<?x?xf32>, %w: memref<1024xbf16>,
                               %dx: memref<?x?x1024xbf16>, %dw: memref<1024xbf16>) {
  norm.rms_norm_grad dy(%dy : memref<?x?x1024xbf16>) x(%x : memref<?x?x1024xbf16>)
      rstd(%rstd : memref<?x?xf32>) weight(%w : memref<1024xbf16>)
      outs dx(%dx : memref<?x?x1024xbf16>) dweight(%dw : memref<1024xbf16>)
  return
}
