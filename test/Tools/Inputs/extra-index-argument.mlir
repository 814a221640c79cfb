func.func @f(%dy: memref<?x8xf32>, %x: memref<?x8xf32>, %r: memref<?xf32>, %dx: memref<?x8xf32>, %k: index) {
  norm.rms_norm_grad dy(%dy : memref<?x8xf32>) x(%x : memref<?x8xf32>) rstd(%r : memref<?xf32>) outs dx(%dx : memref<?x8xf32>)
  return
}
