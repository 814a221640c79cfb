// RUN: norm-opt %s --norm-lower-to-loops --norm-choose-geometry="tuning=false hold-columns=1" --norm-map-to-gpu --canonicalize --cse | FileCheck %s
// RUN: norm-opt %s --norm-lower-to-loops --norm-choose-geometry="tuning=false hold-columns=0" --norm-map-to-gpu --canonicalize --cse | FileCheck %s --check-prefix=NONE

// Geometry hold_columns = 1 (RowHeldColumns.cpp). LayerNorm bf16 N = 4096,
// 128 lanes of four 16-byte chunks, two rows a block (layout = both): a
// lane's chunks of the weight and of the bias are allocas of the kernel's
// entry block, loaded at the top of the aligned body, before the rows'
// loop and its loads of x. The last column loop takes them from there (no
// load of the weight or bias in the loop), each 32-bit word through a
// pinned move (the extension to f32 stays in the loop), and stores y.
// CHECK-LABEL: func.func @forward
// CHECK:      gpu.launch
// CHECK-DAG:  %[[WB:.*]] = memref.alloca() : memref<4xvector<8xbf16>>
// CHECK-DAG:  %[[BB:.*]] = memref.alloca() : memref<4xvector<8xbf16>>
// CHECK:      scf.if %[[ALIGNED:.*]] {
// CHECK:        %[[W0:.*]] = vector.load %arg1[%[[J0:.*]]] {alignment = 16 : i64} : memref<4096xbf16>, vector<8xbf16>
// CHECK:        memref.store %[[W0]], %[[WB]][%c0] : memref<4xvector<8xbf16>>
// CHECK:        %[[B0:.*]] = vector.load %arg2[%[[J0]]] {alignment = 16 : i64} : memref<4096xbf16>, vector<8xbf16>
// CHECK:        memref.store %[[B0]], %[[BB]][%c0] : memref<4xvector<8xbf16>>
// CHECK:        vector.load %arg1
// CHECK:        memref.store %{{.*}}, %[[WB]][%c1]
// CHECK:        vector.load %arg2
// CHECK:        memref.store %{{.*}}, %[[BB]][%c1]
// CHECK:        memref.store %{{.*}}, %[[WB]][%c3]
// CHECK:        memref.store %{{.*}}, %[[BB]][%c3]
// CHECK:        scf.for
// CHECK:          vector.load %arg0
// CHECK-NOT:      vector.load %arg1
// CHECK-NOT:      vector.load %arg2
// CHECK:          gpu.shuffle  xor
// CHECK-NOT:      vector.load %arg1
// CHECK-NOT:      vector.load %arg2
// CHECK:          %[[H0:.*]] = memref.load %[[WB]][%c0] : memref<4xvector<8xbf16>>
// CHECK:          %[[HW:.*]] = vector.bitcast %[[H0]] : vector<8xbf16> to vector<4xi32>
// CHECK:          %[[E0:.*]] = vector.extract %[[HW]][0] : i32 from vector<4xi32>
// CHECK:          llvm.inline_asm has_side_effects "mov.b32 $0, $1;", "=r,r" %[[E0]] : (i32) -> i32
// CHECK:          vector.bitcast %{{.*}} : vector<4xi32> to vector<8xbf16>
// CHECK:          memref.load %[[BB]][%c0] : memref<4xvector<8xbf16>>
// CHECK-NOT:      vector.load %arg1
// CHECK-NOT:      vector.load %arg2
// CHECK:          vector.store %{{.*}}, %arg3
// CHECK:          memref.load %[[WB]][%c1]
// The interleaved body (rows not aligned) loads the weight at each use.
// CHECK:      } else {
// CHECK-NOT:    memref.load %[[WB]]
// CHECK:        memref.load %arg1
// CHECK-LABEL: func.func @small
// NONE-LABEL: func.func @forward
// NONE-NOT:   memref<4xvector<8xbf16>>
// NONE-NOT:   llvm.inline_asm {{.*}}"mov.b32
// NONE:       gpu.shuffle  xor
// NONE:       vector.load %arg1
// NONE:       vector.load %arg2
// NONE:       vector.store %{{.*}}, %arg3
func.func @forward(%x: memref<?x4096xbf16>, %w: memref<4096xbf16>, %b: memref<4096xbf16>,
                   %y: memref<?x4096xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>) {
  norm.layer_norm x(%x : memref<?x4096xbf16>) weight(%w : memref<4096xbf16>) bias(%b : memref<4096xbf16>)
      outs y(%y : memref<?x4096xbf16>) mean(%mean : memref<?xf32>) rstd(%rstd : memref<?xf32>)
  return
}

// RMSNorm f32 N = 1024, 64 lanes of four chunks (layout = vector: one
// body, a run-time alignment test a chunk): the held loads are under that
// test, and f32 words need no pin.
// CHECK:      %[[WS:.*]] = memref.alloca() : memref<4xvector<4xf32>>
// CHECK:      scf.if %[[AL:.*]] {
// CHECK:        vector.load %arg1[%{{.*}}] {alignment = 16 : i64} : memref<1024xf32>, vector<4xf32>
// CHECK:        memref.store %{{.*}}, %[[WS]][%c0]
// CHECK:        memref.store %{{.*}}, %[[WS]][%c3]
// CHECK:      }
// CHECK:      scf.for
// CHECK-NOT:    llvm.inline_asm {{.*}}"mov.b32
// CHECK:        scf.if %[[AL]] {
// CHECK:          memref.load %[[WS]][%c0] : memref<4xvector<4xf32>>
// CHECK:          vector.store
func.func @small(%x: memref<?x1024xf32>, %w: memref<1024xf32>,
                 %y: memref<?x1024xf32>, %rstd: memref<?xf32>) {
  norm.rms_norm x(%x : memref<?x1024xf32>) weight(%w : memref<1024xf32>)
      outs y(%y : memref<?x1024xf32>) rstd(%rstd : memref<?xf32>)
  return
}

// A dx kernel walks waves of rows: RMSNorm bf16 N = 2048, the weight
// held before the waves' loop, read from registers in both column loops
// of every row.
// CHECK-LABEL: func.func @dx
// CHECK:      %[[DW:.*]] = memref.alloca() : memref<{{[0-9]+}}xvector<8xbf16>>
// CHECK:      scf.if
// CHECK:        vector.load %arg3[%{{.*}}] {alignment = 16 : i64} : memref<2048xbf16>, vector<8xbf16>
// CHECK:        memref.store %{{.*}}, %[[DW]][%c0]
// CHECK:        scf.for
// CHECK-NOT:      vector.load %arg3
// CHECK:          memref.load %[[DW]][%c0]
// CHECK-NOT:      vector.load %arg3
// CHECK:          gpu.shuffle  xor
// CHECK-NOT:      vector.load %arg3
// CHECK:          memref.load %[[DW]][%c0]
// CHECK:      } else {
func.func @dx(%dy: memref<?x2048xbf16>, %x: memref<?x2048xbf16>, %rstd: memref<?xf32>,
              %w: memref<2048xbf16>, %dx: memref<?x2048xbf16>, %dw: memref<2048xbf16>) {
  norm.rms_norm_grad dy(%dy : memref<?x2048xbf16>) x(%x : memref<?x2048xbf16>) rstd(%rstd : memref<?xf32>)
      weight(%w : memref<2048xbf16>) outs dx(%dx : memref<?x2048xbf16>) dweight(%dw : memref<2048xbf16>)
  return
}

// RMSNorm bf16 N = 1000: 125 chunks over 32 lanes of four (128 slots): the
// last group's chunk is in the row for lanes 0-28 only, so its held load
// is under the same test the chunk walk makes (chunk < 125).
// CHECK-LABEL: func.func @partial
// CHECK:      %[[PB:.*]] = memref.alloca() : memref<4xvector<8xbf16>>
// CHECK:      memref.store %{{.*}}, %[[PB]][%c2]
// CHECK:      %[[C3:.*]] = arith.addi %{{.*}}, %c96 : index
// CHECK:      %[[IN:.*]] = arith.cmpi ult, %[[C3]], %c125 : index
// CHECK:      scf.if %[[IN]] {
// CHECK:        vector.load %arg1
// CHECK:        memref.store %{{.*}}, %[[PB]][%c3]
// CHECK:      }
// CHECK:      scf.for
func.func @partial(%x: memref<?x1000xbf16>, %w: memref<1000xbf16>, %y: memref<?x1000xbf16>, %rstd: memref<?xf32>) {
  norm.rms_norm x(%x : memref<?x1000xbf16>) weight(%w : memref<1000xbf16>) outs y(%y : memref<?x1000xbf16>) rstd(%rstd : memref<?xf32>)
  return
}
