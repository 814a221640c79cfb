// RMSNorm backward on [B, S, N] activations and [B, S] statistics: the rows
// are the two leading extents (test/Pipelines/rank3-to-binary.mlir).
func.func @rms_norm_grad_rank3(%dy: memref<?x?x1024xbf16>, %x: memref<?x?x1024xbf16>,
                               %rstd: memref<?x?xf32>, %w: memref<1024xbf16>,
                               %dx: memref<?x?x1024xbf16>, %dw: memref<1024xbf16>) {
  norm.rms_norm_grad dy(%dy : memref<?x?x1024xbf16>) x(%x : memref<?x?x1024xbf16>)
      rstd(%rstd : memref<?x?xf32>) weight(%w : memref<1024xbf16>)
      outs dx(%dx : memref<?x?x1024xbf16>) dweight(%dw : memref<1024xbf16>)
  return
}
