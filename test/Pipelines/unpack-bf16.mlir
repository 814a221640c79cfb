// RUN: norm-opt %s --pass-pipeline='builtin.module(gpu.module(norm-unpack-bf16))' | FileCheck %s

// A bf16 lane of a loaded vector widened to f32 is its 32-bit word shifted
// left by 16 (even lane: the low half) or masked with 0xffff0000 (odd lane).
// CHECK-LABEL: gpu.func @lanes
// CHECK-SAME: (%[[V:.*]]: vector<8xbf16>)
// CHECK-DAG: %[[C16:.*]] = arith.constant 16 : i32
// CHECK-DAG: %[[HI:.*]] = arith.constant -65536 : i32
// CHECK: %[[W0:.*]] = vector.bitcast %[[V]] : vector<8xbf16> to vector<4xi32>
// CHECK: %[[E0:.*]] = vector.extract %[[W0]][0] : i32 from vector<4xi32>
// CHECK: %[[S0:.*]] = arith.shli %[[E0]], %[[C16]] : i32
// CHECK: %[[F0:.*]] = arith.bitcast %[[S0]] : i32 to f32
// CHECK: %[[W1:.*]] = vector.bitcast %[[V]] : vector<8xbf16> to vector<4xi32>
// CHECK: %[[E1:.*]] = vector.extract %[[W1]][3] : i32 from vector<4xi32>
// CHECK: %[[M1:.*]] = arith.andi %[[E1]], %[[HI]] : i32
// CHECK: %[[F1:.*]] = arith.bitcast %[[M1]] : i32 to f32
// CHECK: gpu.return %[[F0]], %[[F1]]
// CHECK-NOT: arith.extf
//
// Left alone: a lane of a vector of odd length or of rank 2, a dynamic
// position, f16, and bf16 to f64.
// CHECK-LABEL: gpu.func @kept
// CHECK-COUNT-5: arith.extf
// CHECK-NOT: vector.bitcast
gpu.module @kernels {
  gpu.func @lanes(%v: vector<8xbf16>) -> (f32, f32) {
    %e0 = vector.extract %v[0] : bf16 from vector<8xbf16>
    %f0 = arith.extf %e0 : bf16 to f32
    %e7 = vector.extract %v[7] : bf16 from vector<8xbf16>
    %f7 = arith.extf %e7 : bf16 to f32
    gpu.return %f0, %f7 : f32, f32
  }
  gpu.func @kept(%o: vector<3xbf16>, %r: vector<2x4xbf16>, %v: vector<8xbf16>, %i: index, %h: vector<8xf16>) -> (f32, f32, f32, f32, f64) {
    %a = vector.extract %o[1] : bf16 from vector<3xbf16>
    %fa = arith.extf %a : bf16 to f32
    %b = vector.extract %r[1, 1] : bf16 from vector<2x4xbf16>
    %fb = arith.extf %b : bf16 to f32
    %c = vector.extract %v[%i] : bf16 from vector<8xbf16>
    %fc = arith.extf %c : bf16 to f32
    %d = vector.extract %h[1] : f16 from vector<8xf16>
    %fd = arith.extf %d : f16 to f32
    %e = vector.extract %v[1] : bf16 from vector<8xbf16>
    %fe = arith.extf %e : bf16 to f64
    gpu.return %fa, %fb, %fc, %fd, %fe : f32, f32, f32, f32, f64
  }
}
