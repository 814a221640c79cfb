// RUN: norm-opt %s --norm-lower-to-loops --norm-choose-geometry=rows=65536 --norm-map-to-gpu=rows=65536 | FileCheck %s
// RUN: norm-opt %s --norm-lower-to-loops --norm-choose-geometry=rows=65536 --norm-map-to-gpu="rows=65536 async-rows=0" | FileCheck %s --check-prefix=OFF
// RUN: not norm-opt %s --norm-lower-to-loops --norm-choose-geometry --norm-map-to-gpu=async-rows=5 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: norm-map-to-gpu: async-rows must be 0 to 4, got 5

// async-rows (RowPipeline.cpp; 2, the default): the dx kernel's rows
// copied D = 2 waves ahead into a shared-memory ring with cp.async. LayerNorm bf16 N = 768:
// two rows of 96 lanes, one 16-byte chunk a lane; the ring holds x and dy
// ([D][K][T] chunks: 2 x 1 x 192 x 8 bf16) and mean and rstd ([D][T]).
// Before the walk, waves 0 and 1 (one commit each); at the top of a wave
// the wait leaves one group in flight, its statistics come from the ring
// and its first column loop reads x and dy there; after that loop the row
// two waves ahead goes into the same slot, one commit (empty past the
// program's rows). The largest launch at the hint (512 programs) is four
// blocks an SM: the kernel asks for them (resident).
// CHECK-LABEL: func @layer_norm_grad_n768
// CHECK-SAME: #norm.kernel<name = "layer_norm_grad_n768_dx_1", kind = dx, block = 192, grid = programs, lanes = 96, rows = 2, vector = 8, registers = true, resident = 4, waits = true>
// CHECK: function(@layer_norm_grad_n768_dx_1) workgroup(%[[X:arg[0-9]+]] : memref<3072xbf16, #gpu.address_space<workgroup>>, %[[DY:arg[0-9]+]] : memref<3072xbf16, #gpu.address_space<workgroup>>, %[[MEAN:arg[0-9]+]] : memref<384xf32, #gpu.address_space<workgroup>>, %[[RSTD:arg[0-9]+]] : memref<384xf32, #gpu.address_space<workgroup>>,
// The ring runs in a body of its own for aligned launches (layout both,
// set by norm-map-to-gpu where the kernel takes the ring): everything it
// copies and reads there is aligned, and the other body (interleaved
// element accesses, for rows that are not) neither copies nor reads it.
// CHECK:      scf.if %[[ALIGNED:.*]] {
// CHECK-NEXT:   arith.constant 0
// CHECK-NEXT:   arith.addi
// CHECK-NEXT:   %[[FIRST:.*]] = arith.addi
// CHECK-NEXT:   arith.constant 0
// CHECK-NEXT:   %[[IN0:.*]] = arith.cmpi ult, %[[FIRST]]
// CHECK-NEXT:   scf.if %[[IN0]] {
// CHECK-COUNT-2:  nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 4, cache =  ca
// CHECK-COUNT-2:  nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 16, cache =  cg
// CHECK-NEXT:   }
// CHECK-NEXT:   nvvm.cp.async.commit.group
// CHECK:        scf.if
// CHECK-COUNT-2:  nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 4, cache =  ca
// CHECK-COUNT-2:  nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 16, cache =  cg
// CHECK-NEXT:   }
// CHECK-NEXT:   nvvm.cp.async.commit.group
// CHECK:      scf.for %[[WAVE:.*]] = %[[LO:.*]] to
// CHECK:        %[[ROW:.*]] = arith.addi %[[WAVE]], %{{.*}} : index
// CHECK:        nvvm.cp.async.wait.group 1
// CHECK:        %[[DONE:.*]] = arith.subi %[[WAVE]], %[[LO]]
// CHECK:        %[[INDEX:.*]] = arith.divui %[[DONE]], %c2
// CHECK:        %[[SLOT:.*]] = arith.remui %[[INDEX]], %c2
// CHECK:        %[[SBASE:.*]] = arith.muli %[[SLOT]], %c192
// CHECK:        %[[S:.*]] = arith.addi %[[SBASE]], %{{.*}}
// CHECK:        memref.load %[[MEAN]][%[[S]]]
// CHECK-NEXT:   memref.load %[[RSTD]][%[[S]]]
// CHECK-NOT:    vector.load %arg0
// CHECK:        vector.load %[[X]][%{{.*}}] {alignment = 16 : i64} : memref<3072xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// CHECK:        vector.load %[[DY]][%{{.*}}] {alignment = 16 : i64} : memref<3072xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// CHECK:        %[[AHEAD:.*]] = arith.addi %[[ROW]], %c4
// CHECK:        arith.cmpi ult, %[[AHEAD]]
// CHECK:        scf.if
// CHECK-COUNT-2:  nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 4, cache =  ca
// CHECK-COUNT-2:  nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 16, cache =  cg
// CHECK:        }
// CHECK-NEXT:   nvvm.cp.async.commit.group
// CHECK:        nvvm.barrier
// CHECK-NOT:    nvvm.cp.async.shared.global
// CHECK-NOT:    memref.load %[[MEAN]]
// CHECK-NOT:    memref.load %[[RSTD]]
// CHECK:        gpu.terminator
// OFF-LABEL: func @layer_norm_grad_n768
// OFF-SAME: registers = true, wave = 4, waits = true>
// OFF-NOT: nvvm.cp.async
// OFF: vector.load %arg0
func.func @layer_norm_grad_n768(%dy: memref<?x768xbf16>, %x: memref<?x768xbf16>, %mean: memref<?xf32>,
                                %rstd: memref<?xf32>, %w: memref<768xbf16>, %dx: memref<?x768xbf16>,
                                %dw: memref<768xbf16>, %db: memref<768xbf16>) {
  norm.layer_norm_grad dy(%dy : memref<?x768xbf16>) x(%x : memref<?x768xbf16>)
      mean(%mean : memref<?xf32>) rstd(%rstd : memref<?xf32>) weight(%w : memref<768xbf16>)
      outs dx(%dx : memref<?x768xbf16>) dweight(%dw : memref<768xbf16>) dbias(%db : memref<768xbf16>)
  return
}
