// RUN: norm-opt %s --norm-lower-to-loops --norm-choose-geometry="tuning=false narrow-cache=2" --norm-map-to-gpu --canonicalize --cse | FileCheck %s
// RUN: norm-opt %s --norm-lower-to-loops --norm-choose-geometry="tuning=false narrow-cache=1" --norm-map-to-gpu --canonicalize --cse | FileCheck %s --check-prefix=ONE

// narrow_cache = 2 (RowChunksUnrolled.cpp): a register-regime row cache of
// 16-bit rows is an array of 32-bit words, element i in the low (i even)
// or high (i odd) half of word i / 2. Every word is 0 before the rows, so
// each store's read-modify-write reads a defined word. A store keeps the
// other half (and with 0xffff0000 for the low half, 0xffff for the high)
// and ors in the element's bits (shifted by 16 for the high half). A use
// takes bf16 to f32 by its bits: the low half shifted up by 16, the high
// half masked in place.
// RMSNorm bf16 N = 4096 backward, 256 lanes of 2 chunks of 8: x and dy
// cached, 16 elements a lane, 8 words each.
// CHECK-LABEL: func.func @packed
// CHECK: gpu.launch
// CHECK:      %[[A:.*]] = memref.alloca() : memref<8xi32>
// CHECK-NEXT: memref.store %[[Z:.*]], %[[A]][%[[C0:.*]]] : memref<8xi32>
// CHECK:      memref.store %[[Z]], %[[A]][%c7] : memref<8xi32>
// CHECK-NEXT: %[[B:.*]] = memref.alloca() : memref<8xi32>
// CHECK-NOT: memref<16xbf16>
// CHECK-NOT: memref<16xf32>
// Element 0 of the first cache: low half.
// CHECK:      %[[I0:.*]] = arith.bitcast %{{.*}} : bf16 to i16
// CHECK-NEXT: %[[E0:.*]] = arith.extui %[[I0]] : i16 to i32
// CHECK-NEXT: %[[W0:.*]] = memref.load %[[A]][%[[C0]]] : memref<8xi32>
// CHECK-NEXT: %[[K0:.*]] = arith.andi %[[W0]], %c-65536_i32 : i32
// CHECK-NEXT: %[[N0:.*]] = arith.ori %[[K0]], %[[E0]] : i32
// CHECK-NEXT: memref.store %[[N0]], %[[A]][%[[C0]]] : memref<8xi32>
// Element 1: high half, the same word.
// CHECK:      %[[S1:.*]] = arith.shli %{{.*}}, %c16_i32 : i32
// CHECK-NEXT: %[[W1:.*]] = memref.load %[[A]][%[[C0]]] : memref<8xi32>
// CHECK-NEXT: %[[K1:.*]] = arith.andi %[[W1]], %c65535_i32 : i32
// CHECK-NEXT: %[[N1:.*]] = arith.ori %[[K1]], %[[S1]] : i32
// CHECK-NEXT: memref.store %[[N1]], %[[A]][%[[C0]]] : memref<8xi32>
// Element 2 goes to word 1.
// CHECK:      memref.load %[[A]][%[[C1:.*]]] : memref<8xi32>
// The second column loop, after the in-row sums: element 0 by a shift,
// element 1 by a mask, of one load of word 0.
// CHECK:      gpu.shuffle
// CHECK:      %[[R0:.*]] = memref.load %[[A]][%[[C0]]] : memref<8xi32>
// CHECK-NEXT: %[[L0:.*]] = arith.shli %[[R0]], %c16_i32 : i32
// CHECK-NEXT: arith.bitcast %[[L0]] : i32 to f32
// CHECK:      %[[H0:.*]] = arith.andi %[[R0]], %c-65536_i32 : i32
// CHECK-NEXT: arith.bitcast %[[H0]] : i32 to f32
// narrow_cache = 1: an element an entry.
// ONE-LABEL: func.func @packed
// ONE: memref.alloca() : memref<16xbf16>
// ONE-NOT: memref<8xi32>
func.func @packed(%dy: memref<?x4096xbf16>, %x: memref<?x4096xbf16>, %rstd: memref<?xf32>, %dx: memref<?x4096xbf16>, %w: memref<4096xbf16>, %dw: memref<4096xbf16>) {
  norm.rms_norm_grad dy(%dy : memref<?x4096xbf16>) x(%x : memref<?x4096xbf16>) rstd(%rstd : memref<?xf32>) weight(%w : memref<4096xbf16>) outs dx(%dx : memref<?x4096xbf16>) dweight(%dw : memref<4096xbf16>)
  return
}

// f16 (RMSNorm forward, N = 2048, 64 lanes of 4 chunks of 8: the cache of
// x, 32 elements a lane, 16 words): a use truncates the word (low half)
// or shifts it down first (high half), then extends the f16.
// CHECK-LABEL: func.func @half
// CHECK:      %[[HA:.*]] = memref.alloca() : memref<16xi32>
// CHECK-NOT: memref<32xf16>
// CHECK:      nvvm.barrier
// CHECK:      %[[HW:.*]] = memref.load %[[HA]][%{{.*}}] : memref<16xi32>
// CHECK-NEXT: %[[HT:.*]] = arith.trunci %[[HW]] : i32 to i16
// CHECK-NEXT: %[[HF:.*]] = arith.bitcast %[[HT]] : i16 to f16
// CHECK-NEXT: arith.extf %[[HF]] : f16 to f32
// CHECK:      %[[HS:.*]] = arith.shrui %[[HW]], %c16_i32 : i32
// CHECK-NEXT: %[[HT1:.*]] = arith.trunci %[[HS]] : i32 to i16
// CHECK-NEXT: %[[HF1:.*]] = arith.bitcast %[[HT1]] : i16 to f16
// CHECK-NEXT: arith.extf %[[HF1]] : f16 to f32
// ONE-LABEL: func.func @half
// ONE: memref.alloca() : memref<32xf16>
func.func @half(%x: memref<?x2048xf16>, %w: memref<2048xf16>, %y: memref<?x2048xf16>, %rstd: memref<?xf32>) {
  norm.rms_norm x(%x : memref<?x2048xf16>) weight(%w : memref<2048xf16>) outs y(%y : memref<?x2048xf16>) rstd(%rstd : memref<?xf32>)
  return
}
