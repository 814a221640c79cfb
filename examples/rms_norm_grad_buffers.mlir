// The RMSNorm backward of rms_norm_grad.mlir in buffer form (destination
// passing, as an embedder that owns its allocations writes it), so each
// lowering pass can be applied to it directly:
//
//   norm-opt examples/rms_norm_grad_buffers.mlir --norm-split
//   norm-opt examples/rms_norm_grad_buffers.mlir --norm-split --norm-recompute-loops
//   norm-opt examples/rms_norm_grad_buffers.mlir --norm-split --norm-recompute-loops \
//       --norm-promote --norm-fuse-partials --norm-cache-rows
func.func @rms_norm_grad_bf16_n4096(
    %dy: memref<?x4096xbf16>, %x: memref<?x4096xbf16>, %rstd: memref<?xf32>,
    %w: memref<4096xbf16>, %dx: memref<?x4096xbf16>, %dw: memref<4096xbf16>) {
  norm.rms_norm_grad dy(%dy : memref<?x4096xbf16>) x(%x : memref<?x4096xbf16>)
      rstd(%rstd : memref<?xf32>) weight(%w : memref<4096xbf16>)
      outs dx(%dx : memref<?x4096xbf16>) dweight(%dw : memref<4096xbf16>)
  return
}
