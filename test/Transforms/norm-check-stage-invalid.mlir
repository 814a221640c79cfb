// RUN: norm-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline="builtin.module(func.func(norm-check-stage{stage=fused}))"

// Each stage includes the invariants of the stages before it, so checking
// `fused` finds the first broken invariant of every stage.

func.func @tensor_left(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>, %r: tensor<4xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{norm-check-stage: fused: a tensor value is left after bufferization}}
  %dx = norm.rms_norm_grad dy(%dy : tensor<4x8xf32>) x(%x : tensor<4x8xf32>) rstd(%r : tensor<4xf32>) -> dx(tensor<4x8xf32>)
  return %dx : tensor<4x8xf32>
}

// -----

func.func @norm_op_left(%dy: memref<4x8xf32>, %x: memref<4x8xf32>, %r: memref<4xf32>, %dx: memref<4x8xf32>) {
  // expected-error @+1 {{norm-check-stage: fused: a norm op is left}}
  norm.rms_norm_grad dy(%dy : memref<4x8xf32>) x(%x : memref<4x8xf32>) rstd(%r : memref<4xf32>) outs dx(%dx : memref<4x8xf32>)
  return
}

// -----

func.func @untyped_nest(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{norm-check-stage: fused: a tagged nest must be an scf.for carrying norm.stage, norm.id and norm.accumulate}}
  scf.for %i = %c0 to %n step %c1 {
  } {norm.stage = #norm.stage<dx>}
  return
}

// -----

func.func @recomputable_left(%n: index) {
  // expected-error @+1 {{norm-check-stage: fused: a norm.recomputable buffer is left}}
  %buf = memref.alloc(%n, %n) {norm.recomputable} : memref<?x?xf32>
  memref.dealloc %buf : memref<?x?xf32>
  return
}

// -----

func.func @intermediate_left(%x: memref<?x?xf32>, %out: memref<?x?xf32>, %m: index, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{norm-check-stage: fused: an [M, N] intermediate is left}}
  %buf = memref.alloc(%m, %n) : memref<?x?xf32>
  scf.for %i = %c0 to %m step %c1 {
    scf.for %j = %c0 to %n step %c1 {
      %v = memref.load %x[%i, %j] : memref<?x?xf32>
      memref.store %v, %buf[%i, %j] : memref<?x?xf32>
    }
  } {norm.stage = #norm.stage<g>, norm.id = 0 : i64, norm.accumulate = f32}
  scf.for %i = %c0 to %m step %c1 {
    scf.for %j = %c0 to %n step %c1 {
      %v = memref.load %buf[%i, %j] : memref<?x?xf32>
      memref.store %v, %out[%i, %j] : memref<?x?xf32>
    }
  } {norm.stage = #norm.stage<forward>, norm.id = 1 : i64, norm.accumulate = f32}
  memref.dealloc %buf : memref<?x?xf32>
  return
}

// -----

func.func @narrow_arithmetic(%x: memref<?xbf16>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %j = %c0 to %n step %c1 {
    %v = memref.load %x[%j] : memref<?xbf16>
    // expected-error @+1 {{norm-check-stage: fused: could not widen this 'bf16' value to 'f32'}}
    %d = arith.addf %v, %v : bf16
    memref.store %d, %x[%j] : memref<?xbf16>
  } {norm.stage = #norm.stage<forward>, norm.id = 0 : i64, norm.accumulate = f32}
  return
}

// -----

func.func @partials_left(%ws: memref<?x?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %v = arith.constant 1.0 : f32
  // expected-error @+1 {{norm-check-stage: fused: a partials nest is left}}
  scf.for %p = %c0 to %n step %c1 {
    memref.store %v, %ws[%p, %c0] : memref<?x?xf32>
  } {norm.stage = #norm.stage<partials>, norm.id = 0 : i64, norm.accumulate = f32}
  return
}

// -----

func.func @row_read_twice(%x: memref<?x?xf32>, %out: memref<?x?xf32>, %m: index, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f32
  scf.for %r = %c0 to %m step %c1 {
    %s = scf.for %j = %c0 to %n step %c1 iter_args(%acc = %z) -> (f32) {
      %v = memref.load %x[%r, %j] : memref<?x?xf32>
      %a = arith.addf %acc, %v : f32
      scf.yield %a : f32
    }
    scf.for %j = %c0 to %n step %c1 {
      // expected-error @+1 {{norm-check-stage: fused: this row was loaded from memory by an earlier column loop of the row}}
      %v = memref.load %x[%r, %j] : memref<?x?xf32>
      %d = arith.subf %v, %s : f32
      memref.store %d, %out[%r, %j] : memref<?x?xf32>
    }
  } {norm.stage = #norm.stage<forward>, norm.id = 0 : i64, norm.accumulate = f32}
  return
}
