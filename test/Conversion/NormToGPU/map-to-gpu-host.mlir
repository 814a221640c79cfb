// RUN: norm-opt %s --split-input-file --norm-choose-geometry --norm-map-to-gpu --verify-diagnostics | FileCheck %s

// The post-condition: outside its launches the lowering leaves nothing on
// the host but allocations and launches. A loop of the lowering that lost
// its norm.stage tag (e.g. folded by a canonicalisation between
// norm-lower-to-loops and the mapping) still uses the lowering's buffers
// (here a row cache) and is reported.
func.func @untagged_loop(%buf: memref<8xf32>) {
  %cache = memref.alloc() {norm.row_cache} : memref<8xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  // expected-error @+1 {{norm-map-to-gpu: this 'scf.for' belongs to a lowered norm op but has no norm.stage tag, so it would run on the host}}
  scf.for %i = %c0 to %c8 step %c1 {
    %v = memref.load %cache[%i] : memref<8xf32>
    memref.store %v, %buf[%i] : memref<8xf32>
  }
  memref.dealloc %cache : memref<8xf32>
  return
}

// -----

// So is any other op of the lowering: here a store into a workspace.
func.func @host_store(%buf: memref<8xf32>) attributes {norm.kernels = []} {
  %ws = memref.alloc() {norm.workspace} : memref<8xf32>
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  // expected-error @+1 {{norm-map-to-gpu: 'memref.store' belongs to a lowered norm op and would run on the host, which only allocates and launches kernels}}
  memref.store %zero, %ws[%c0] : memref<8xf32>
  return
}

// -----

// A loop (or any op) of the author's own in a function of ours, touching
// none of the lowering's buffers, is left where it is.
// CHECK-LABEL: func.func @own_loop_beside_ours
// CHECK:         scf.for
// CHECK-NEXT:      memref.load
// CHECK-NEXT:      memref.store
// CHECK:         memref.store
func.func @own_loop_beside_ours(%buf: memref<8xf32>) {
  %cache = memref.alloc() {norm.row_cache} : memref<8xf32>
  memref.dealloc %cache : memref<8xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.for %i = %c0 to %c8 step %c1 {
    %v = memref.load %buf[%i] : memref<8xf32>
    memref.store %v, %buf[%i] : memref<8xf32>
  }
  %zero = arith.constant 0.0 : f32
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
