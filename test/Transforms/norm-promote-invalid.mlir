// RUN: norm-opt %s --norm-promote --verify-diagnostics

func.func @no_accumulate_type(%x: memref<?xbf16>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{norm-promote: a 'norm.stage' nest needs a float 'norm.accumulate' attribute}}
  scf.for %j = %c0 to %n step %c1 {
    %v = memref.load %x[%j] : memref<?xbf16>
    memref.store %v, %x[%j] : memref<?xbf16>
  } {norm.stage = #norm.stage<dx>}
  return
}
