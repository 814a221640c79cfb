// RUN: norm-opt %s --split-input-file --norm-promote | FileCheck %s

// A bf16 row nest: loads extend at once, the sum is carried in f32, the
// f32 statistic is used as is (its truncation disappears), and only the
// store truncates.
// CHECK-LABEL: func @promote_bf16_row
// CHECK: scf.for %[[I:.*]] =
// CHECK:   %[[RS:.*]] = memref.load %{{.*}}[%[[I]]] : memref<?xf32>
// CHECK-NOT: arith.truncf %[[RS]]
// CHECK:   %[[S:.*]] = scf.for %[[J:.*]] = {{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (f32)
// CHECK:     %[[V:.*]] = memref.load %{{.*}}[%[[I]], %[[J]]] : memref<?x?xbf16>
// CHECK:     %[[E:.*]] = arith.extf %[[V]] : bf16 to f32
// CHECK:     %[[ADD:.*]] = arith.addf %[[ACC]], %[[E]] : f32
// CHECK:     scf.yield %[[ADD]] : f32
// CHECK:   %[[P:.*]] = arith.mulf %[[S]], %[[RS]] : f32
// CHECK:   %[[T:.*]] = arith.truncf %[[P]] : f32 to bf16
// CHECK:   memref.store %[[T]], %{{.*}}[%[[I]]] : memref<?xbf16>
// CHECK: norm.stage = #norm.stage<dx>
func.func @promote_bf16_row(%x: memref<?x?xbf16>, %r: memref<?xf32>, %out: memref<?xbf16>, %m: index, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %m step %c1 {
    %rs = memref.load %r[%i] : memref<?xf32>
    %rst = arith.truncf %rs : f32 to bf16
    %zero = arith.constant 0.0 : bf16
    %s = scf.for %j = %c0 to %n step %c1 iter_args(%acc = %zero) -> (bf16) {
      %v = memref.load %x[%i, %j] : memref<?x?xbf16>
      %a = arith.addf %acc, %v : bf16
      scf.yield %a : bf16
    }
    %p = arith.mulf %s, %rst : bf16
    memref.store %p, %out[%i] : memref<?xbf16>
  } {norm.stage = #norm.stage<dx>, norm.id = 0 : i64, norm.accumulate = f32}
  return
}

// -----

// Only tagged nests are promoted: bf16 arithmetic outside stays bf16.
// CHECK-LABEL: func @untagged_stays_bf16
// CHECK: arith.addf %{{.*}}, %{{.*}} : bf16
func.func @untagged_stays_bf16(%a: bf16) -> bf16 {
  %b = arith.addf %a, %a : bf16
  return %b : bf16
}

// -----

// A narrow value defined outside the nest enters it widened; f64
// accumulation widens f32 too.
// CHECK-LABEL: func @outside_value_f64
// CHECK: %[[W:.*]] = arith.extf %{{.*}} : f32 to f64
// CHECK: scf.for
// CHECK:   %[[V:.*]] = memref.load {{.*}} : memref<?xf32>
// CHECK:   %[[E:.*]] = arith.extf %[[V]] : f32 to f64
// CHECK:   %[[M:.*]] = arith.mulf %[[E]], %[[W]] : f64
// CHECK:   %[[T:.*]] = arith.truncf %[[M]] : f64 to f32
// CHECK:   memref.store %[[T]]
func.func @outside_value_f64(%x: memref<?xf32>, %s: f32, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %j = %c0 to %n step %c1 {
    %v = memref.load %x[%j] : memref<?xf32>
    %m = arith.mulf %v, %s : f32
    memref.store %m, %x[%j] : memref<?xf32>
  } {norm.stage = #norm.stage<dx>, norm.id = 0 : i64, norm.accumulate = f64}
  return
}
