// RUN: norm-opt %s --pass-pipeline='builtin.module(gpu.module(norm-fuse-multiply-add))' | FileCheck %s

// Each f32 multiply whose only use is an add or a subtract, with no
// fast-math flags on either, becomes one llvm.intr.fma (one rounding):
// acc + a * b and a * b + acc alike, c - a * b as fma(-a, b, c), a * b - c
// as fma(a, b, -c). A chain of running sums fuses link by link.
// CHECK-LABEL: gpu.func @sums
// CHECK-SAME: (%[[A:.*]]: f32, %[[B:.*]]: f32, %[[C:.*]]: f32)
// CHECK-NEXT: %[[S1:.*]] = llvm.intr.fma(%[[A]], %[[B]], %[[C]]) : (f32, f32, f32) -> f32
// CHECK-NEXT: %[[S2:.*]] = llvm.intr.fma(%[[B]], %[[C]], %[[S1]]) : (f32, f32, f32) -> f32
// CHECK-NEXT: %[[NA:.*]] = arith.negf %[[A]] : f32
// CHECK-NEXT: %[[S3:.*]] = llvm.intr.fma(%[[NA]], %[[C]], %[[S2]]) : (f32, f32, f32) -> f32
// CHECK-NEXT: %[[NS:.*]] = arith.negf %[[S3]] : f32
// CHECK-NEXT: %[[S4:.*]] = llvm.intr.fma(%[[A]], %[[A]], %[[NS]]) : (f32, f32, f32) -> f32
// CHECK-NEXT: gpu.return %[[S4]] : f32
// CHECK-NOT: arith.mulf
//
// Left alone: a product with a second use (it is computed once either
// way), flags on the multiply or the add (contraction is then LLVM's
// choice, which this pass does not make for it), and f64 or f16 (the
// kernels sum in f32).
// CHECK-LABEL: gpu.func @kept
// CHECK: %[[P:.*]] = arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK: arith.addf %[[P]], %{{.*}} : f32
// CHECK: arith.addf %[[P]], %{{.*}} : f32
// CHECK: arith.mulf %{{.*}}, %{{.*}} fastmath<contract> : f32
// CHECK: arith.addf
// CHECK: arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK: arith.addf %{{.*}}, %{{.*}} fastmath<fast> : f32
// CHECK: arith.mulf %{{.*}}, %{{.*}} : f64
// CHECK: arith.addf %{{.*}}, %{{.*}} : f64
// CHECK: arith.mulf %{{.*}}, %{{.*}} : f16
// CHECK: arith.subf %{{.*}}, %{{.*}} : f16
// CHECK-NOT: llvm.intr.fma
gpu.module @kernels {
  gpu.func @sums(%a: f32, %b: f32, %c: f32) -> f32 {
    %p1 = arith.mulf %a, %b : f32
    %s1 = arith.addf %p1, %c : f32
    %p2 = arith.mulf %b, %c : f32
    %s2 = arith.addf %s1, %p2 : f32
    %p3 = arith.mulf %a, %c : f32
    %s3 = arith.subf %s2, %p3 : f32
    %p4 = arith.mulf %a, %a : f32
    %s4 = arith.subf %p4, %s3 : f32
    gpu.return %s4 : f32
  }
  gpu.func @kept(%a: f32, %b: f32, %c: f32, %d: f64, %h: f16) -> (f32, f32, f32, f32, f64, f16) {
    %p = arith.mulf %a, %b : f32
    %s1 = arith.addf %p, %c : f32
    %s2 = arith.addf %p, %a : f32
    %q = arith.mulf %a, %c fastmath<contract> : f32
    %s3 = arith.addf %q, %b : f32
    %r = arith.mulf %b, %c : f32
    %s4 = arith.addf %r, %a fastmath<fast> : f32
    %dp = arith.mulf %d, %d : f64
    %ds = arith.addf %dp, %d : f64
    %hp = arith.mulf %h, %h : f16
    %hs = arith.subf %hp, %h : f16
    gpu.return %s1, %s2, %s3, %s4, %ds, %hs : f32, f32, f32, f32, f64, f16
  }
}
