// A static offset other than 0: the runtime passes each tensor's data
// pointer with offset 0, so this layout cannot be launched.
func.func @static_offset(%dy: memref<?x64xf32, strided<[64, 1], offset: 8>>,
                         %x: memref<?x64xf32>, %rstd: memref<?xf32>,
                         %dx: memref<?x64xf32>) {
  norm.rms_norm_grad dy(%dy : memref<?x64xf32, strided<[64, 1], offset: 8>>)
      x(%x : memref<?x64xf32>) rstd(%rstd : memref<?xf32>)
      outs dx(%dx : memref<?x64xf32>)
  return
}
