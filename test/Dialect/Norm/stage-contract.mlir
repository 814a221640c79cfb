// The stage contract's attributes (StageContract.h) parse, verify and print
// back typed.
// RUN: norm-opt %s | FileCheck %s
// RUN: norm-opt %s | norm-opt | FileCheck %s

// CHECK-LABEL: func.func @tagged
func.func @tagged(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // CHECK: memref.alloc(%{{.*}}) {norm.row_cache} : memref<?xf32>
  %cache = memref.alloc(%n) {norm.row_cache} : memref<?xf32>
  // CHECK: memref.alloc(%{{.*}}) {norm.recomputable} : memref<?xf32>
  %h = memref.alloc(%n) {norm.recomputable} : memref<?xf32>
  scf.for %i = %c0 to %n step %c1 {
  // CHECK: {norm.accumulate = f32, norm.id = 7 : i64, norm.stage = #norm.stage<dx>, norm.strategy = #norm.strategy<locked>}
  } {norm.stage = #norm.stage<dx>, norm.id = 7 : i64, norm.accumulate = f32,
     norm.strategy = #norm.strategy<locked>}
  scf.for %i = %c0 to %n step %c1 {
  // CHECK: norm.stage = #norm.stage<xhat>
  } {norm.stage = #norm.stage<xhat>, norm.id = 7 : i64, norm.accumulate = f32}
  memref.dealloc %cache : memref<?xf32>
  memref.dealloc %h : memref<?xf32>
  return
}

// CHECK-LABEL: func.func @host
// CHECK-SAME: norm.kernels = []
func.func @host() attributes {norm.kernels = []} {
  return
}
