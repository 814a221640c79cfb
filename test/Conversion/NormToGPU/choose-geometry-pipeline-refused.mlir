// RUN: norm-opt %s --split-input-file --norm-choose-geometry="tuning=false pipeline=1" --verify-diagnostics

// Where the row cannot take the next row's loads ahead, the option is
// refused as a written pipeline would be: rows that can never be 16-byte
// aligned (odd N: the interleaved layout alone), the looped regime (a lane's
// share past the register budget: nothing to keep in registers).
func.func @odd_n(%dy: memref<?x4095xbf16>, %x: memref<?x4095xbf16>, %rstd: memref<?xf32>, %dx: memref<?x4095xbf16>, %w: memref<4095xbf16>, %dw: memref<4095xbf16>) {
  // expected-error @+1 {{norm-choose-geometry: pipeline=1 is refused: pipeline: only the vector layout's 16-byte loads are issued ahead, and these rows can never be 16-byte aligned}}
  norm.rms_norm_grad dy(%dy : memref<?x4095xbf16>) x(%x : memref<?x4095xbf16>) rstd(%rstd : memref<?xf32>) weight(%w : memref<4095xbf16>) outs dx(%dx : memref<?x4095xbf16>) dweight(%dw : memref<4095xbf16>)
  return
}

// -----

func.func @looped(%dy: memref<?x131072xbf16>, %x: memref<?x131072xbf16>, %rstd: memref<?xf32>, %dx: memref<?x131072xbf16>, %w: memref<131072xbf16>, %dw: memref<131072xbf16>) {
  // expected-error @+1 {{norm-choose-geometry: pipeline=1 is refused: pipeline: the next row is loaded into registers, which needs the register regime}}
  norm.rms_norm_grad dy(%dy : memref<?x131072xbf16>) x(%x : memref<?x131072xbf16>) rstd(%rstd : memref<?xf32>) weight(%w : memref<131072xbf16>) outs dx(%dx : memref<?x131072xbf16>) dweight(%dw : memref<131072xbf16>)
  return
}
