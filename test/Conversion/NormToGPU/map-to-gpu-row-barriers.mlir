// RUN: norm-opt %s --split-input-file --norm-lower-to-loops --norm-choose-geometry --norm-map-to-gpu=async-rows=0 | FileCheck %s
// RUN: norm-opt %s --split-input-file --norm-lower-to-loops --norm-choose-geometry --norm-map-to-gpu="row-barriers=1 async-rows=0" | FileCheck %s --check-prefix=ROW
// RUN: norm-opt %s --split-input-file --norm-lower-to-loops --norm-choose-geometry --norm-map-to-gpu="row-barriers=0 async-rows=0" | FileCheck %s --check-prefix=BLOCK
// RUN: not norm-opt %s --split-input-file --norm-lower-to-loops --norm-choose-geometry --norm-map-to-gpu=row-barriers=3 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: norm-map-to-gpu: row-barriers must be 0, 1 or 2, got 3

// The barriers of a row's sums across its warps (RowReduceBlock.cpp).
// LayerNorm bf16 N = 768 backward: two rows of 96 lanes (three warps) in a
// block of 192. By default (row-barriers=2) each row waits for its own
// three warps only, on named barrier s + 1 (`bar.sync s + 1, 96`), once a
// sum: the scratch is two buffers of 6 slots, taken by the wave's parity
// (one sum a wave). row-barriers=1: the row's barrier before and after
// the reads, one buffer. row-barriers=0: two block barriers.
// CHECK-LABEL: func @layer_norm_grad_n768
// CHECK: function(@layer_norm_grad_n768_dx_1) workgroup(%[[S0:.*]] : memref<12xf32, #gpu.address_space<workgroup>>, %[[S1:.*]] : memref<12xf32, #gpu.address_space<workgroup>>,
// CHECK:   %[[SUB:.*]] = arith.divui %{{.*}}, %c96
// CHECK:   scf.for %[[WAVE:.*]] = %[[LO:.*]] to
// CHECK:     %[[DONE:.*]] = arith.subi %[[WAVE]], %[[LO]]
// CHECK:     %[[INDEX:.*]] = arith.divui %[[DONE]], %c2
// CHECK:     %[[PARITY:.*]] = arith.andi %[[INDEX]], %c1
// CHECK:     gpu.shuffle xor
// CHECK:     %[[BUF:.*]] = arith.muli %[[PARITY]], %c6
// CHECK:     %[[SLOT:.*]] = arith.addi %[[BUF]], %{{.*}}
// CHECK:     memref.store %{{.*}}, %[[S0]][%[[SLOT]]]
// CHECK:     %[[ID:.*]] = arith.addi %[[SUB]], %c1
// CHECK:     %[[ID32:.*]] = arith.index_castui %[[ID]] : index to i32
// CHECK:     nvvm.barrier id = %[[ID32]] number_of_threads = %c96_i32
// CHECK:     memref.load %[[S0]]
// CHECK:     memref.load %[[S1]]
// CHECK-NOT: barrier
// CHECK:     vector.store {{.*}} : memref<?x768xbf16>
// CHECK-NOT: barrier
// The program's partial rows meet across the block's rows at the end:
// block barriers.
// CHECK:   memref.store {{.*}} : memref<2x768xf32, #gpu.address_space<workgroup>>
// CHECK:   gpu.barrier
// ROW-LABEL: func @layer_norm_grad_n768
// ROW: workgroup(%{{.*}} : memref<6xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<6xf32, #gpu.address_space<workgroup>>,
// ROW:     nvvm.barrier id = %{{.*}} number_of_threads = %c96_i32
// ROW:     memref.load
// ROW:     nvvm.barrier id = %{{.*}} number_of_threads = %c96_i32
// ROW-NOT: barrier
// ROW:     vector.store {{.*}} : memref<?x768xbf16>
// BLOCK-LABEL: func @layer_norm_grad_n768
// BLOCK: workgroup(%{{.*}} : memref<6xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<6xf32, #gpu.address_space<workgroup>>,
// BLOCK-NOT: nvvm.barrier
// BLOCK:     gpu.barrier
// BLOCK:     memref.load
// BLOCK:     gpu.barrier
// BLOCK-NOT: barrier
// BLOCK:     vector.store {{.*}} : memref<?x768xbf16>
func.func @layer_norm_grad_n768(%dy: memref<?x768xbf16>, %x: memref<?x768xbf16>, %mean: memref<?xf32>,
                                %rstd: memref<?xf32>, %w: memref<768xbf16>, %dx: memref<?x768xbf16>,
                                %dw: memref<768xbf16>, %db: memref<768xbf16>) {
  norm.layer_norm_grad dy(%dy : memref<?x768xbf16>) x(%x : memref<?x768xbf16>)
      mean(%mean : memref<?xf32>) rstd(%rstd : memref<?xf32>) weight(%w : memref<768xbf16>)
      outs dx(%dx : memref<?x768xbf16>) dweight(%dw : memref<768xbf16>) dbias(%db : memref<768xbf16>)
  return
}

// -----

// N = 4096 bf16 backward: one row a block of 256, so the block barrier;
// once a sum by default, the scratch two buffers of 8.
// CHECK-LABEL: func @rms_norm_grad_n4096
// CHECK: function(@rms_norm_grad_n4096_dx_1) workgroup(%{{.*}} : memref<4096xf32, #gpu.address_space<workgroup>>, %[[S:arg[0-9]+]] : memref<16xf32, #gpu.address_space<workgroup>>
// CHECK:   scf.for
// CHECK:     memref.store %{{.*}}, %[[S]]
// CHECK-NOT: nvvm.barrier
// CHECK:     gpu.barrier
// CHECK:     memref.load %[[S]]
// CHECK-NOT: barrier
// CHECK:     vector.store {{.*}} : memref<?x4096xbf16>
// ROW-LABEL: func @rms_norm_grad_n4096
// ROW: workgroup(%{{.*}} : memref<4096xf32, #gpu.address_space<workgroup>>, %[[S:arg[0-9]+]] : memref<8xf32, #gpu.address_space<workgroup>>
// ROW:   scf.for
// ROW:     memref.store %{{.*}}, %[[S]]
// ROW-NOT: nvvm.barrier
// ROW:     gpu.barrier
// ROW:     memref.load %[[S]]
// ROW:     gpu.barrier
// ROW-NOT: barrier
// ROW:     vector.store {{.*}} : memref<?x4096xbf16>
func.func @rms_norm_grad_n4096(%dy: memref<?x4096xbf16>, %x: memref<?x4096xbf16>, %rstd: memref<?xf32>,
                               %w: memref<4096xbf16>, %dx: memref<?x4096xbf16>, %dw: memref<4096xbf16>) {
  norm.rms_norm_grad dy(%dy : memref<?x4096xbf16>) x(%x : memref<?x4096xbf16>) rstd(%rstd : memref<?xf32>)
      weight(%w : memref<4096xbf16>) outs dx(%dx : memref<?x4096xbf16>) dweight(%dw : memref<4096xbf16>)
  return
}

// -----

// LayerNorm bf16 N = 4096 forward: two rows of 128 lanes a block, two sums
// a row (the mean, then the variance about it): an even number a wave, so
// the buffers alternate within the wave, no parity: the mean's sum takes
// buffer 0, the variance's buffer 1 (slots 8-15), and no sum waits after
// its reads.
// CHECK-LABEL: func @layer_norm_n4096
// CHECK: function(@layer_norm_n4096_forward_0) workgroup(%[[S:arg[0-9]+]] : memref<16xf32, #gpu.address_space<workgroup>>,
// CHECK:   %[[B0:.*]] = arith.muli %[[ZERO:c0[_0-9]*]], %c8
// CHECK:   arith.addi %[[B0]]
// CHECK:   memref.store %{{.*}}, %[[S]]
// CHECK:   nvvm.barrier id = %{{.*}} number_of_threads = %c128_i32
// CHECK:   memref.load %[[S]]
// CHECK-NOT: barrier
// CHECK:   %[[ONE:.*]] = arith.subi %c1{{[_0-9]*}}, %[[ZERO]]
// CHECK:   %[[B1:.*]] = arith.muli %[[ONE]], %c8
// CHECK:   arith.addi %[[B1]]
// CHECK:   memref.store %{{.*}}, %[[S]]
// CHECK:   nvvm.barrier id = %{{.*}} number_of_threads = %c128_i32
// CHECK:   memref.load %[[S]]
// CHECK-NOT: barrier
// CHECK:   vector.store {{.*}} : memref<?x4096xbf16>
func.func @layer_norm_n4096(%x: memref<?x4096xbf16>, %w: memref<4096xbf16>, %b: memref<4096xbf16>,
                            %y: memref<?x4096xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>) {
  norm.layer_norm x(%x : memref<?x4096xbf16>) weight(%w : memref<4096xbf16>) bias(%b : memref<4096xbf16>)
      outs y(%y : memref<?x4096xbf16>) mean(%mean : memref<?xf32>) rstd(%rstd : memref<?xf32>)
  return
}
