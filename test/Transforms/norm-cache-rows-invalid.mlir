// RUN: norm-opt %s --split-input-file --norm-cache-rows --verify-diagnostics

// The row cache holds what the first column loop uses (here the promoted
// f32 value); a later load used in another type cannot be served from it.
func.func @promoted_differently(%x: memref<?x?xbf16>, %out: memref<?x?xbf16>, %m: index, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f32
  scf.for %r = %c0 to %m step %c1 {
    %s = scf.for %j = %c0 to %n step %c1 iter_args(%acc = %z) -> (f32) {
      %v = memref.load %x[%r, %j] : memref<?x?xbf16>
      %e = arith.extf %v : bf16 to f32
      %a = arith.addf %acc, %e : f32
      scf.yield %a : f32
    }
    scf.for %j = %c0 to %n step %c1 {
      // expected-error @+1 {{norm-cache-rows: this load is used as 'bf16' but the row cache holds the first column loop's 'f32'; run norm-promote on both or neither}}
      %v = memref.load %x[%r, %j] : memref<?x?xbf16>
      memref.store %v, %out[%r, %j] : memref<?x?xbf16>
    }
  } {norm.stage = #norm.stage<forward>, norm.id = 0 : i64, norm.accumulate = f32}
  return
}

// -----

func.func @dx_nest_without_rows(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{norm-cache-rows: a dx nest must be `for p { for r { row } }`}}
  scf.for %p = %c0 to %n step %c1 {
  } {norm.stage = #norm.stage<dx>, norm.id = 0 : i64, norm.accumulate = f32}
  return
}
