// RUN: norm-opt %s --pass-pipeline='builtin.module(gpu.module(norm-reciprocal-divide))' | FileCheck %s

// An f32 division by a constant N becomes a multiply by 1/N rounded to f32
// (768: 0x3AAAAAAB), a power of two too (exact either way).
// CHECK-LABEL: gpu.func @by_n
// CHECK-SAME: (%[[S:.*]]: f32, %[[T:.*]]: f32)
// CHECK-DAG: %[[R:.*]] = arith.constant 0.00130208337 : f32
// CHECK-DAG: %[[H:.*]] = arith.constant 2.500000e-01 : f32
// CHECK: %[[A:.*]] = arith.mulf %[[S]], %[[R]] : f32
// CHECK: %[[B:.*]] = arith.mulf %[[T]], %[[H]] : f32
// CHECK: gpu.return %[[A]], %[[B]]
// CHECK-NOT: arith.divf
//
// Left alone: a divisor that is not a constant, zero, infinity, NaN, one
// whose reciprocal overflows (the smallest subnormal) or is subnormal
// (3e38), fast-math flags, f64 and f16.
// CHECK-LABEL: gpu.func @kept
// CHECK-COUNT-9: arith.divf
// CHECK-NOT: arith.mulf
gpu.module @kernels {
  gpu.func @by_n(%s: f32, %t: f32) -> (f32, f32) {
    %n = arith.constant 768.0 : f32
    %four = arith.constant 4.0 : f32
    %a = arith.divf %s, %n : f32
    %b = arith.divf %t, %four : f32
    gpu.return %a, %b : f32, f32
  }
  gpu.func @kept(%s: f32, %d: f32, %w: f64, %h: f16) -> (f32, f32, f32, f32, f32, f32, f32, f64, f16) {
    %zero = arith.constant 0.0 : f32
    %inf = arith.constant 0x7F800000 : f32
    %nan = arith.constant 0x7FC00000 : f32
    %tiny = arith.constant 1.0e-45 : f32
    %huge = arith.constant 3.0e38 : f32
    %n = arith.constant 768.0 : f32
    %n64 = arith.constant 768.0 : f64
    %n16 = arith.constant 768.0 : f16
    %0 = arith.divf %s, %d : f32
    %1 = arith.divf %s, %zero : f32
    %2 = arith.divf %s, %inf : f32
    %3 = arith.divf %s, %nan : f32
    %4 = arith.divf %s, %tiny : f32
    %5 = arith.divf %s, %huge : f32
    %6 = arith.divf %s, %n fastmath<fast> : f32
    %7 = arith.divf %w, %n64 : f64
    %8 = arith.divf %h, %n16 : f16
    gpu.return %0, %1, %2, %3, %4, %5, %6, %7, %8 : f32, f32, f32, f32, f32, f32, f32, f64, f16
  }
}
