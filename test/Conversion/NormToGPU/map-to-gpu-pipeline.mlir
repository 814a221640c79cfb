// RUN: norm-opt %s --norm-lower-to-loops --norm-choose-geometry="tuning=false pipeline=1 narrow-cache=1" --norm-map-to-gpu --canonicalize --cse | FileCheck %s
// RUN: norm-opt %s --norm-lower-to-loops --norm-choose-geometry="tuning=false narrow-cache=1" --norm-map-to-gpu --canonicalize --cse | FileCheck %s --check-prefix=NARROW
// RUN: norm-opt %s --norm-lower-to-loops --norm-choose-geometry=tuning=false --norm-map-to-gpu --canonicalize --cse | FileCheck %s --check-prefix=NONE

// Geometry pipeline = 1 (RowPipeline.cpp), RMSNorm bf16 N = 4096, 256 lanes
// of two 16-byte chunks: a lane's buffers of dy and x (two vectors each)
// and of rstd are allocas of the kernel's entry block. In the aligned body
// (layout = both), before the first wave, the sub-group's first row is
// loaded into them where it is the program's: rstd, then chunk by chunk dy
// and x. Each wave takes rstd from its buffer and the first column loop's
// chunks from the buffers (no global load of dy or x in it), and right
// after that loop, before the in-row sums' shuffles, loads the next wave's
// row (one wave = S = 1 row ahead) into the buffers. narrow_cache = 1: the
// row caches (x, dy) are bf16, stored before the extension and extended at
// each use of the second column loop by their bits (shift by 16).
// CHECK-LABEL: func.func @ahead
// CHECK: gpu.launch
// CHECK-DAG:  %[[DYB:.*]] = memref.alloca() : memref<2xvector<8xbf16>>
// CHECK-DAG:  %[[XB:.*]] = memref.alloca() : memref<2xvector<8xbf16>>
// CHECK-DAG:  %[[RB:.*]] = memref.alloca() : memref<1xf32>
// CHECK-DAG:  memref.alloca() : memref<16xbf16>
// CHECK-DAG:  memref.alloca() : memref<16xbf16>
// CHECK:      gpu.barrier
// CHECK:      scf.if %[[ALIGNED:.*]] {
// CHECK:        %[[FIRST:.*]] = arith.addi %[[LO:.*]], %[[SUB:.*]] : index
// CHECK:        %[[MINE:.*]] = arith.cmpi ult, %[[FIRST]], %[[HI:.*]] : index
// CHECK:        scf.if %[[MINE]] {
// CHECK:          %[[R0:.*]] = memref.load %arg2[%[[FIRST]]] : memref<?xf32>
// CHECK:          memref.store %[[R0]], %[[RB]][%c0] : memref<1xf32>
// CHECK:          %[[D0:.*]] = vector.load %arg0[%[[FIRST]], %{{.*}}] {alignment = 16 : i64} : memref<?x4096xbf16>, vector<8xbf16>
// CHECK:          memref.store %[[D0]], %[[DYB]][%c0] : memref<2xvector<8xbf16>>
// CHECK:          vector.load %arg1[%[[FIRST]], %{{.*}}]
// CHECK:          memref.store %{{.*}}, %[[XB]][%c0]
// CHECK:          vector.load %arg0[%[[FIRST]], %{{.*}}]
// CHECK:          memref.store %{{.*}}, %[[DYB]][%c1]
// CHECK:          vector.load %arg1[%[[FIRST]], %{{.*}}]
// CHECK:          memref.store %{{.*}}, %[[XB]][%c1]
// CHECK:        }
// CHECK:        scf.for %[[WAVE:.*]] = %[[LO]] to %[[HI]] step %c1 {
// CHECK:          %[[ROW:.*]] = arith.addi %[[WAVE]], %[[SUB]] : index
// CHECK:          %[[RSTD:.*]] = memref.load %[[RB]][%c0] : memref<1xf32>
// CHECK-NOT:      vector.load %arg0
// CHECK-NOT:      vector.load %arg1
// CHECK:          memref.load %[[DYB]][%c0] : memref<2xvector<8xbf16>>
// CHECK:          %[[X0:.*]] = memref.load %[[XB]][%c0] : memref<2xvector<8xbf16>>
// CHECK:          %[[E0:.*]] = vector.extract %[[X0]][0] : bf16 from vector<8xbf16>
// CHECK:          memref.store %[[E0]], %{{.*}}[%c0] : memref<16xbf16>
// CHECK:          memref.load %[[XB]][%c1] : memref<2xvector<8xbf16>>
// CHECK-NOT:      vector.load %arg0
// CHECK-NOT:      vector.load %arg1
// CHECK:          %[[NEXT:.*]] = arith.addi %[[ROW]], %c1 : index
// CHECK:          %[[AHEAD:.*]] = arith.cmpi ult, %[[NEXT]], %[[HI]] : index
// CHECK:          scf.if %[[AHEAD]] {
// CHECK:            memref.load %arg2[%[[NEXT]]] : memref<?xf32>
// CHECK:            vector.load %arg0[%[[NEXT]], %{{.*}}]
// CHECK:            vector.load %arg1[%[[NEXT]], %{{.*}}]
// CHECK:            vector.load %arg0[%[[NEXT]], %{{.*}}]
// CHECK:            vector.load %arg1[%[[NEXT]], %{{.*}}]
// CHECK:          }
// CHECK:          gpu.shuffle xor
// CHECK:          %[[C0:.*]] = memref.load %{{.*}}[%c0] : memref<16xbf16>
// CHECK:          %[[I0:.*]] = arith.bitcast %[[C0]] : bf16 to i16
// CHECK:          %[[W0:.*]] = arith.extui %[[I0]] : i16 to i32
// CHECK:          %[[S0:.*]] = arith.shli %[[W0]], %c16_i32 : i32
// CHECK:          arith.bitcast %[[S0]] : i32 to f32
// CHECK:          vector.store %{{.*}}, %arg3[%[[ROW]], %{{.*}}]
// The interleaved body (rows not aligned) loads its own rows: no buffer.
// CHECK:      } else {
// CHECK-NOT:    memref.load %[[DYB]]
// CHECK-NOT:    memref.load %[[XB]]
// CHECK:        memref.load %arg0
// narrow_cache alone: the bf16 caches, no buffers, the loads in the loop.
// NARROW-LABEL: func.func @ahead
// NARROW-NOT: memref<2xvector<8xbf16>>
// NARROW: memref.alloca() : memref<16xbf16>
// NARROW: scf.for
// NARROW: vector.load %arg0
// NARROW: arith.shli
// Neither: f32 caches, no buffers.
// NONE-LABEL: func.func @ahead
// NONE-NOT: memref<2xvector<8xbf16>>
// NONE-NOT: memref<16xbf16>
// NONE: memref.alloca() : memref<16xf32>
// NONE-NOT: arith.shli
func.func @ahead(%dy: memref<?x4096xbf16>, %x: memref<?x4096xbf16>, %rstd: memref<?xf32>, %dx: memref<?x4096xbf16>, %w: memref<4096xbf16>, %dw: memref<4096xbf16>) {
  norm.rms_norm_grad dy(%dy : memref<?x4096xbf16>) x(%x : memref<?x4096xbf16>) rstd(%rstd : memref<?xf32>) weight(%w : memref<4096xbf16>) outs dx(%dx : memref<?x4096xbf16>) dweight(%dw : memref<4096xbf16>)
  return
}
