// RUN: norm-opt %s --split-input-file --norm-map-to-gpu --verify-diagnostics

// The post-condition: outside its launches the host function only allocates
// and launches. A loop without a norm.stage tag (e.g. folded by a
// canonicalisation between norm-lower-to-loops and the mapping) is reported.
func.func @untagged_loop(%buf: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  // expected-error @+1 {{norm-map-to-gpu: this 'scf.for' is not a tagged norm nest and would run on the host}}
  scf.for %i = %c0 to %c8 step %c1 {
    memref.store %zero, %buf[%i] : memref<8xf32>
  }
  return
}

// -----

// Any other op with a memory effect is named.
func.func @host_store(%buf: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  // expected-error @+1 {{norm-map-to-gpu: 'memref.store' would run on the host, which only allocates and launches kernels}}
  memref.store %zero, %buf[%c0] : memref<8xf32>
  return
}

// -----

// Allocation, index arithmetic and deallocation stay on the host.
func.func @host_allocates(%n: index) {
  %c4 = arith.constant 4 : index
  %m = arith.muli %n, %c4 : index
  %buf = memref.alloc(%m) : memref<?xf32>
  memref.dealloc %buf : memref<?xf32>
  return
}
