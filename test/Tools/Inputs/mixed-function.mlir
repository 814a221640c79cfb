// A function that holds an RMSNorm backward and a loop of its author's own
// (it scales the weight into %scale): norm-map-to-gpu maps the norm op
// and leaves the loop where it is.
func.func @mixed(%dy: memref<?x256xf32>, %x: memref<?x256xf32>,
                 %rstd: memref<?xf32>, %w: memref<256xf32>,
                 %dx: memref<?x256xf32>, %dw: memref<256xf32>,
                 %scale: memref<256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %two = arith.constant 2.0 : f32
  scf.for %i = %c0 to %c256 step %c1 {
    %v = memref.load %w[%i] : memref<256xf32>
    %s = arith.mulf %v, %two : f32
    memref.store %s, %scale[%i] : memref<256xf32>
  }
  norm.rms_norm_grad dy(%dy : memref<?x256xf32>) x(%x : memref<?x256xf32>)
      rstd(%rstd : memref<?xf32>) weight(%w : memref<256xf32>)
      outs dx(%dx : memref<?x256xf32>) dweight(%dw : memref<256xf32>)
  return
}
