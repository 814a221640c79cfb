// RUN: norm-opt %s --norm-choose-geometry="tuning=false partial-vector=4" --verify-diagnostics

// N = 16384 bf16: the partial rows (2 x 64 KB) live in registers, so there
// are no shared sums to group: the option is refused, as a written
// partial_vector would be.
func.func @in_registers(%dy: memref<?x16384xbf16>, %x: memref<?x16384xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>, %dx: memref<?x16384xbf16>, %w: memref<16384xbf16>, %dw: memref<16384xbf16>, %db: memref<16384xbf16>) {
  // expected-error @+1 {{norm-choose-geometry: partial-vector=4 is refused: partial_vector: it groups the partial sums of shared memory, and this geometry keeps none there}}
  norm.layer_norm_grad dy(%dy : memref<?x16384xbf16>) x(%x : memref<?x16384xbf16>) mean(%mean : memref<?xf32>) rstd(%rstd : memref<?xf32>) weight(%w : memref<16384xbf16>) outs dx(%dx : memref<?x16384xbf16>) dweight(%dw : memref<16384xbf16>) dbias(%db : memref<16384xbf16>)
  return
}
