// Buffer form, but dx is allocated inside and returned: nothing the
// runtime could pass in.
func.func @returns_buffer(%dy: memref<?x64xf32>, %x: memref<?x64xf32>,
                          %rstd: memref<?xf32>) -> memref<?x64xf32> {
  %c0 = arith.constant 0 : index
  %m = memref.dim %dy, %c0 : memref<?x64xf32>
  %dx = memref.alloc(%m) : memref<?x64xf32>
  norm.rms_norm_grad dy(%dy : memref<?x64xf32>) x(%x : memref<?x64xf32>)
      rstd(%rstd : memref<?xf32>) outs dx(%dx : memref<?x64xf32>)
  return %dx : memref<?x64xf32>
}
