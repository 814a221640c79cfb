// RUN: norm-opt %s --split-input-file --norm-choose-geometry="tuning=false narrow-cache=1" --verify-diagnostics

// Where the row caches cannot be kept narrower, the option is refused as a
// written narrow_cache would be: f32 rows (the caches hold the loaded type
// already), a backward's or a forward's, and the looped regime (no row
// caches: the rows are read again).
func.func @f32_rows(%dy: memref<?x4096xf32>, %x: memref<?x4096xf32>, %rstd: memref<?xf32>, %dx: memref<?x4096xf32>, %w: memref<4096xf32>, %dw: memref<4096xf32>) {
  // expected-error @+1 {{norm-choose-geometry: narrow-cache=1 is refused: narrow_cache: the rows are f32, which the caches hold already}}
  norm.rms_norm_grad dy(%dy : memref<?x4096xf32>) x(%x : memref<?x4096xf32>) rstd(%rstd : memref<?xf32>) weight(%w : memref<4096xf32>) outs dx(%dx : memref<?x4096xf32>) dweight(%dw : memref<4096xf32>)
  return
}

// -----

func.func @looped(%dy: memref<?x131072xbf16>, %x: memref<?x131072xbf16>, %rstd: memref<?xf32>, %dx: memref<?x131072xbf16>, %w: memref<131072xbf16>, %dw: memref<131072xbf16>) {
  // expected-error @+1 {{norm-choose-geometry: narrow-cache=1 is refused: narrow_cache: only the register regime keeps row caches (the looped regime reads the rows again)}}
  norm.rms_norm_grad dy(%dy : memref<?x131072xbf16>) x(%x : memref<?x131072xbf16>) rstd(%rstd : memref<?xf32>) weight(%w : memref<131072xbf16>) outs dx(%dx : memref<?x131072xbf16>) dweight(%dw : memref<131072xbf16>)
  return
}

// -----

func.func @f32_forward(%x: memref<?x4096xf32>, %y: memref<?x4096xf32>, %rstd: memref<?xf32>) {
  // expected-error @+1 {{norm-choose-geometry: narrow-cache=1 is refused: narrow_cache: the rows are f32, which the caches hold already}}
  norm.rms_norm x(%x : memref<?x4096xf32>) outs y(%y : memref<?x4096xf32>) rstd(%rstd : memref<?xf32>)
  return
}
