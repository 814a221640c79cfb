// RUN: norm-opt %s --split-input-file --norm-lower-to-loops --norm-choose-geometry=tuning=false --norm-map-to-gpu --canonicalize --cse | FileCheck %s

// The fused residual add in the row kernel (registers): per chunk, one
// 16-byte load of x and one of residual, h = x + residual added in f32 and
// rounded to bf16 once, that rounded h kept (widened) in the row cache the
// sums and y read, and one 16-byte store of h. The aligned body never reads
// h back; x and residual are loaded in the first column loop only. The body
// for rows not 16-byte aligned (reread-fallback) reads h back where the
// aligned one reads its cache: each element from the lane that stored it.
// CHECK-LABEL: func @rms_norm_residual_n4096
// CHECK-SAME: (%[[X:[^:]+]]: memref<?x4096xbf16>, %[[RES:[^:]+]]: memref<?x4096xbf16>, %{{[^:]+}}: memref<4096xbf16>, %[[Y:[^:]+]]: memref<?x4096xbf16>, %{{[^:]+}}: memref<?xf32>, %[[H:[^:]+]]: memref<?x4096xbf16>)
// CHECK-SAME: kind = forward, block = 256, grid = row_blocks, lanes = 128, rows = 2, vector = 8, registers = true
// CHECK-NOT: load %[[H]]
// CHECK: gpu.launch {{.*}} function(@rms_norm_residual_n4096_forward_0)
// CHECK-NOT: load %[[H]]
// CHECK: %[[XV:.*]] = vector.load %[[X]][%[[ROW:.*]], %[[J:.*]]] {alignment = 16 : i64} : memref<?x4096xbf16>, vector<8xbf16>
// CHECK-NEXT: %[[RV:.*]] = vector.load %[[RES]][%[[ROW]], %[[J]]] {alignment = 16 : i64} : memref<?x4096xbf16>, vector<8xbf16>
// CHECK-NEXT: %[[X0:.*]] = vector.extract %[[XV]][0]
// CHECK-NEXT: %[[X0E:.*]] = arith.extf %[[X0]] : bf16 to f32
// CHECK-NEXT: %[[R0:.*]] = vector.extract %[[RV]][0]
// CHECK-NEXT: %[[R0E:.*]] = arith.extf %[[R0]] : bf16 to f32
// CHECK-NEXT: %[[S0:.*]] = arith.addf %[[X0E]], %[[R0E]] : f32
// CHECK-NEXT: %[[H0:.*]] = arith.truncf %[[S0]] : f32 to bf16
// CHECK-NEXT: %[[H0E:.*]] = arith.extf %[[H0]] : bf16 to f32
// CHECK-NEXT: memref.store %[[H0E]], %[[CACHE:.*]][%c0] : memref<32xf32>
// CHECK-NOT: load %[[H]]
// CHECK: %[[HV:.*]] = vector.from_elements %[[H0]], {{.*}} : vector<8xbf16>
// CHECK-NEXT: vector.store %[[HV]], %[[H]][%[[ROW]], %[[J]]] {alignment = 16 : i64}
// CHECK-NOT: load %[[H]]
// CHECK: gpu.shuffle xor
// CHECK-NOT: load %[[H]]
// CHECK: memref.load %[[CACHE]][%c0] : memref<32xf32>
// CHECK-NOT: load %[[H]]
// CHECK: vector.store %{{.*}}, %[[Y]][
// CHECK-NOT: load %[[H]]
// CHECK: memref.store %{{.*}}, %[[H]][%[[ROW2:.*]], %[[J2:.*]]] : memref<?x4096xbf16>
// CHECK-NOT: vector.load %[[H]]
// CHECK: gpu.shuffle xor
// CHECK: memref.load %[[H]][%[[ROW2]], %[[J2]]] : memref<?x4096xbf16>
// CHECK: return
func.func @rms_norm_residual_n4096(%x: memref<?x4096xbf16>, %res: memref<?x4096xbf16>, %w: memref<4096xbf16>,
                                   %y: memref<?x4096xbf16>, %rstd: memref<?xf32>, %h: memref<?x4096xbf16>) {
  norm.rms_norm x(%x : memref<?x4096xbf16>) residual(%res : memref<?x4096xbf16>) weight(%w : memref<4096xbf16>)
      outs y(%y : memref<?x4096xbf16>) rstd(%rstd : memref<?xf32>) h(%h : memref<?x4096xbf16>)
  return
}

// -----

// The looped regime (N = 131072: no row cache): the first chunk loop loads
// x and residual and stores h; the later chunk loops re-read h (the lane
// reads back the chunks it wrote).
// CHECK-LABEL: func @layer_norm_residual_looped
// CHECK-SAME: (%[[X:[^:]+]]: memref<?x131072xbf16>, %[[RES:[^:]+]]: memref<?x131072xbf16>, %[[Y:[^:]+]]: memref<?x131072xbf16>, %{{[^:]+}}: memref<?xf32>, %{{[^:]+}}: memref<?xf32>, %[[H:[^:]+]]: memref<?x131072xbf16>)
// CHECK-SAME: registers = false
// CHECK: gpu.launch
// CHECK-NOT: load %[[H]]
// CHECK: vector.load %[[X]][%[[ROW:.*]], %[[J:.*]]] {alignment = 16 : i64}
// CHECK-NEXT: vector.load %[[RES]][%[[ROW]], %[[J]]] {alignment = 16 : i64}
// CHECK-NOT: load %[[H]]
// CHECK: vector.store %{{.*}}, %[[H]][%[[ROW]], %[[J]]] {alignment = 16 : i64}
// CHECK: vector.load %[[H]][%[[ROW]], %{{.*}}] {alignment = 16 : i64}
// CHECK: vector.store %{{.*}}, %[[Y]][%[[ROW]], %{{.*}}] {alignment = 16 : i64}
// CHECK: return
func.func @layer_norm_residual_looped(%x: memref<?x131072xbf16>, %res: memref<?x131072xbf16>,
                                      %y: memref<?x131072xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>,
                                      %h: memref<?x131072xbf16>) {
  norm.layer_norm x(%x : memref<?x131072xbf16>) residual(%res : memref<?x131072xbf16>)
      outs y(%y : memref<?x131072xbf16>) mean(%mean : memref<?xf32>) rstd(%rstd : memref<?xf32>) h(%h : memref<?x131072xbf16>)
  return
}
