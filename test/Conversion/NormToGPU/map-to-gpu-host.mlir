// RUN: norm-opt %s --split-input-file --norm-map-to-gpu --verify-diagnostics | FileCheck %s

// The post-condition: outside its launches a host function of ours (one
// with `norm.*` attributes: here a row cache) only allocates and launches.
// A loop without a norm.stage tag (e.g. folded by a canonicalisation
// between norm-lower-to-loops and the mapping) is reported.
func.func @untagged_loop(%buf: memref<8xf32>) {
  %cache = memref.alloc() {norm.row_cache} : memref<8xf32>
  memref.dealloc %cache : memref<8xf32>
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
func.func @host_store(%buf: memref<8xf32>) attributes {norm.kernels = []} {
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

// -----

// A function with nothing of ours (an embedder's own code, no `norm.*`
// attribute anywhere) is left exactly as it was: no error, no record.
// CHECK-LABEL: func.func @foreign_loop
// CHECK-NOT: norm.kernels
// CHECK: scf.for
// CHECK:   arith.mulf
// CHECK:   memref.store
func.func @foreign_loop(%buf: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.for %i = %c0 to %c8 step %c1 {
    %v = memref.load %buf[%i] : memref<8xf32>
    %w = arith.mulf %v, %v : f32
    memref.store %w, %buf[%i] : memref<8xf32>
  }
  return
}
