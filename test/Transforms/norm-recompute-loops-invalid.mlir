// RUN: norm-opt %s --split-input-file --norm-recompute-loops --verify-diagnostics

func.func @two_stores(%v: f32, %n: index) {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{norm-recompute-loops: a recomputable buffer must have exactly one store and otherwise only loads, but it is used by memref.store}}
  %buf = memref.alloc(%n, %n) {norm.recomputable} : memref<?x?xf32>
  memref.store %v, %buf[%c0, %c0] : memref<?x?xf32>
  memref.store %v, %buf[%c0, %c0] : memref<?x?xf32>
  return
}

// -----

func.func @not_a_nest(%v: f32, %n: index) -> f32 {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{norm-recompute-loops: the store into a recomputable buffer must be buf[i, j] directly inside its two-deep loop nest over (i, j)}}
  %buf = memref.alloc(%n, %n) {norm.recomputable} : memref<?x?xf32>
  memref.store %v, %buf[%c0, %c0] : memref<?x?xf32>
  %r = memref.load %buf[%c0, %c0] : memref<?x?xf32>
  return %r : f32
}

// -----

func.func @producer_writes_elsewhere(%x: memref<?x?xf32>, %other: memref<?x?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{norm-recompute-loops: the producer nest of a recomputable buffer writes other memory}}
  %buf = memref.alloc(%n, %n) {norm.recomputable} : memref<?x?xf32>
  scf.for %i = %c0 to %n step %c1 {
    scf.for %j = %c0 to %n step %c1 {
      %v = memref.load %x[%i, %j] : memref<?x?xf32>
      memref.store %v, %other[%i, %j] : memref<?x?xf32>
      memref.store %v, %buf[%i, %j] : memref<?x?xf32>
    }
  }
  return
}
