// norm-compile's file mode (norm-compile-file.test): arguments in an order
// of the author's choosing, under names of their own, next to a function
// of the author's that is not ours.
func.func @scale(%a: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %a, %c0 : memref<?xf32>
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %a[%i] : memref<?xf32>
    %w = arith.addf %v, %v : f32
    memref.store %w, %a[%i] : memref<?xf32>
  }
  return
}
func.func @ln(%gamma: memref<1024xf32>, %input: memref<?x1024xbf16>,
              %grad: memref<?x1024xbf16>, %mu: memref<?xf32>, %rs: memref<?xf32>,
              %dgamma: memref<1024xf32>, %dbeta: memref<1024xf32>,
              %dinput: memref<?x1024xbf16>) {
  norm.layer_norm_grad dy(%grad : memref<?x1024xbf16>) x(%input : memref<?x1024xbf16>)
      mean(%mu : memref<?xf32>) rstd(%rs : memref<?xf32>) weight(%gamma : memref<1024xf32>)
      outs dx(%dinput : memref<?x1024xbf16>) dweight(%dgamma : memref<1024xf32>)
      dbias(%dbeta : memref<1024xf32>)
  return
}
