// RUN: norm-opt %s --split-input-file --norm-lower-to-loops --norm-choose-geometry --norm-map-to-gpu=forward-finish=0 | FileCheck %s
// RUN: norm-opt %s --split-input-file --norm-lower-to-loops --norm-choose-geometry=chip=sm_80 --norm-map-to-gpu="chip=sm_80 forward-finish=0" | FileCheck %s --check-prefix=SM80
// RUN: norm-opt %s --split-input-file --norm-lower-to-loops --norm-choose-geometry=rows=129 --norm-map-to-gpu=rows=129 | FileCheck %s --check-prefix=BIG
// RUN: norm-opt %s --split-input-file --norm-lower-to-loops --norm-choose-geometry --norm-map-to-gpu --mlir-disable-threading | FileCheck %s --check-prefix=SEQ

// One group (docs/GPU.md "One group"): where G = 1 (M = 1 with the default
// groups, or a fixed G of 1) the dx kernel finishes dweight / dbias itself.
// Here without forward-finish (map-to-gpu-one-group-forward.mlir has the
// default, which finishes each column right after its write-back store,
// and keeps what follows where the partial rows live in global memory).
// At its end, where the partial rows' leading extent is 1, its blocks meet
// (a block barrier; a cluster barrier, release / acquire, where a program
// is a cluster) and its threads take the columns j = t, t + T, ... (T
// threads in the launch, a constant where the block is: at G = 1 the grid
// is the program's blocks), the thread's whole share of the row a step
// where up to 32 loads allow (else 8 columns a step), each doing the reduce
// kernel's arithmetic for
// G = 1: slice 0 adds row 0 to the initial value, slices 1 to 7 keep it,
// and the eight slices' sums are added in slice order; then the nest's
// stores. The same operations in the same order as the reduce kernel's:
// the same bits. The reduce kernel is recorded `skip_at_one_group`, and
// the runtime launches it only where G > 1. Kernels built for a bucket of
// M without M = 1 (the rows hint past 128) have neither, and neither has
// a fixed G other than 1.

// RMSNorm, a program of one block: the partial row, then the finish.
// CHECK-LABEL: func @rms_norm_grad_n4096
// CHECK-SAME: #norm.kernel<name = "rms_norm_grad_n4096_reduce_2", kind = reduce, {{[^>]*}}, skip_at_one_group = true>
// CHECK:      %[[WS:.*]] = memref.alloc({{.*}}) {norm.workspace, norm.written} : memref<?x4096xf32>
// CHECK:      gpu.launch {{.*}} function(@rms_norm_grad_n4096_dx_1) workgroup(%[[SUMS:[^ ]*]] : memref<4096xf32, #gpu.address_space<workgroup>>
// The partial row's write-back from shared memory (every G): thread t
// stores columns t, t + 256, ..., 8 a step, their loads first.
// CHECK:        scf.for %{{.*}} = %{{.*}} to %c4096{{[_0-9]*}} step %c2048{{[_0-9]*}} {
// CHECK-COUNT-8:  memref.load %[[SUMS]]
// CHECK-NOT:      memref.load
// CHECK-COUNT-8:  memref.store %{{.*}}, %[[WS]]
// CHECK-NOT:      scf.if
// CHECK:        }
// CHECK:        %[[G:.*]] = memref.dim %[[WS]], %c0
// CHECK:        %[[ONE:.*]] = arith.cmpi eq, %[[G]], %c1
// CHECK:        scf.if %[[ONE]] {
// CHECK-NEXT:     gpu.barrier
// CHECK-NOT:      nvvm.cluster
// Thread t of the T = 256 threads: columns t, t + T, ..., its 16 in one
// step (loads together, stores after; a column past N loads column N - 1
// and stores nothing).
// CHECK:          %[[T:.*]] = arith.constant 256 : index
// CHECK:          %[[LAST:.*]] = arith.subi %[[N:c4096[_0-9]*]], %c1
// CHECK:          %[[COLS:.*]] = arith.constant 16 : index
// CHECK:          %[[STEP:.*]] = arith.muli %[[T]], %[[COLS]]
// CHECK:          scf.for %[[J:.*]] = %{{.*}} to %[[N]] step %[[STEP]] {
// CHECK:            %[[IN0:.*]] = arith.cmpi ult, %[[J]], %[[N]]
// CHECK:            %[[C0:.*]] = arith.minui %[[J]], %[[LAST]]
// CHECK:            %[[P:.*]] = memref.load %[[WS]][%c0{{.*}}, %[[C0]]] : memref<?x4096xf32>
// CHECK:            %[[S0:.*]] = arith.addf %[[INIT:cst[_0-9]*]], %[[P]] : f32
// CHECK:            %[[S1:.*]] = arith.addf %[[S0]], %[[INIT]] : f32
// CHECK-COUNT-5:    arith.addf %{{.*}}, %[[INIT]] : f32
// CHECK:            %[[S7:.*]] = arith.addf %{{.*}}, %[[INIT]] : f32
// CHECK:            %[[J1:.*]] = arith.addi %[[J]], %{{.*}} : index
// CHECK:            arith.cmpi ult, %[[J1]], %[[N]]
// CHECK:            %[[C1:.*]] = arith.minui %[[J1]], %[[LAST]]
// CHECK:            memref.load %[[WS]][%c0{{.*}}, %[[C1]]] : memref<?x4096xf32>
// CHECK-COUNT-14:   memref.load %[[WS]]
// CHECK-NOT:        memref.store
// CHECK:            scf.if %[[IN0]] {
// CHECK-NEXT:         %[[H:.*]] = arith.truncf %[[S7]] : f32 to bf16
// CHECK-NEXT:         memref.store %[[H]], %{{.*}}[%[[C0]]] : memref<4096xbf16>
// CHECK-NEXT:       }
// CHECK-COUNT-15:   memref.store %{{.*}} : memref<4096xbf16>
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT:   gpu.terminator
// CHECK:      gpu.launch {{.*}} function(@rms_norm_grad_n4096_reduce_2)
// CHECK-NOT:    memref.dim %[[WS]], %c0
// CHECK:        gpu.terminator
// SM80-LABEL: func @rms_norm_grad_n4096
// SM80-SAME: #norm.kernel<name = "rms_norm_grad_n4096_reduce_2", kind = reduce, {{[^>]*}}, skip_at_one_group = true>
// SM80:      gpu.launch {{.*}} function(@rms_norm_grad_n4096_dx_1)
// SM80:        %[[G:.*]] = memref.dim %{{.*}}, %c0{{.*}} : memref<?x4096xf32>
// SM80:        %[[ONE:.*]] = arith.cmpi eq, %[[G]], %c1
// SM80:        scf.if %[[ONE]] {
// SM80-NEXT:     gpu.barrier
// SM80-NOT:      nvvm.cluster
// SM80:          scf.for
// SM80:      gpu.launch {{.*}} function(@rms_norm_grad_n4096_reduce_2)
// BIG-LABEL: func @rms_norm_grad_n4096
// BIG-NOT: skip_at_one_group
// BIG:      gpu.launch {{.*}} function(@rms_norm_grad_n4096_dx_1)
// BIG-NOT:    memref.load %{{.*}}[%c0{{[_0-9]*}}, %{{.*}}] : memref<?x4096xf32>
// BIG:      gpu.launch {{.*}} function(@rms_norm_grad_n4096_reduce_2)
func.func @rms_norm_grad_n4096(%dy: memref<?x4096xbf16>, %x: memref<?x4096xbf16>, %rstd: memref<?xf32>,
                               %w: memref<4096xbf16>, %dx: memref<?x4096xbf16>, %dw: memref<4096xbf16>) {
  norm.rms_norm_grad dy(%dy : memref<?x4096xbf16>) x(%x : memref<?x4096xbf16>) rstd(%rstd : memref<?xf32>)
      weight(%w : memref<4096xbf16>) outs dx(%dx : memref<?x4096xbf16>) dweight(%dw : memref<4096xbf16>)
  return
}

// -----

// LayerNorm with a row split over a cluster of blocks (sm_90): the blocks
// of the one program meet at a cluster barrier, arrive (release) then
// wait (acquire), and read each other's columns of the partial rows; both
// sums of a column (dweight, dbias) finish in one step. sm_80 has no
// cluster: a block barrier.
// CHECK-LABEL: func @layer_norm_grad_n32768
// CHECK-SAME: #norm.kernel<name = "layer_norm_grad_n32768_dx_1", kind = dx, {{[^>]*}}, cluster = {{[2-8]}}, waits = true>
// CHECK-SAME: #norm.kernel<name = "layer_norm_grad_n32768_reduce_2", kind = reduce, {{[^>]*}}, skip_at_one_group = true>
// CHECK:      gpu.launch {{.*}} function(@layer_norm_grad_n32768_dx_1)
// CHECK:        %[[G:.*]] = memref.dim %{{.*}}, %c0{{.*}} : memref<?x32768xf32>
// CHECK:        %[[ONE:.*]] = arith.cmpi eq, %[[G]], %c1
// CHECK:        scf.if %[[ONE]] {
// CHECK-NEXT:     nvvm.cluster.arrive {aligned}
// CHECK-NEXT:     nvvm.cluster.wait {aligned}
// CHECK:          scf.for %[[J:.*]] = %{{.*}} to %c32768{{.*}} step %{{.*}} {
// CHECK:            %[[C:.*]] = arith.minui %[[J]], %{{.*}}
// CHECK:            memref.load %{{.*}}[%c0{{.*}}, %[[C]]] : memref<?x32768xf32>
// CHECK:            memref.load %{{.*}}[%c0{{.*}}, %[[C]]] : memref<?x32768xf32>
// CHECK-COUNT-15:   arith.addf
// CHECK:            scf.if
// CHECK-NEXT:         arith.truncf
// CHECK-NEXT:         memref.store %{{.*}}[%[[C]]] : memref<32768xbf16>
// CHECK-NEXT:         arith.truncf
// CHECK-NEXT:         memref.store %{{.*}}[%[[C]]] : memref<32768xbf16>
// CHECK:      gpu.launch {{.*}} function(@layer_norm_grad_n32768_reduce_2)
// SM80-LABEL: func @layer_norm_grad_n32768
// SM80:      gpu.launch {{.*}} function(@layer_norm_grad_n32768_dx_1)
// SM80:        %[[G:.*]] = memref.dim %{{.*}}, %c0{{.*}} : memref<?x32768xf32>
// SM80:        %[[ONE:.*]] = arith.cmpi eq, %[[G]], %c1
// SM80:        scf.if %[[ONE]] {
// SM80-NEXT:     gpu.barrier
// SM80-NOT:      nvvm.cluster.arrive
// SM80:      gpu.launch {{.*}} function(@layer_norm_grad_n32768_reduce_2)
func.func @layer_norm_grad_n32768(%dy: memref<?x32768xbf16>, %x: memref<?x32768xbf16>, %mean: memref<?xf32>,
                                  %rstd: memref<?xf32>, %w: memref<32768xbf16>, %dx: memref<?x32768xbf16>,
                                  %dw: memref<32768xbf16>, %db: memref<32768xbf16>) {
  norm.layer_norm_grad dy(%dy : memref<?x32768xbf16>) x(%x : memref<?x32768xbf16>) mean(%mean : memref<?xf32>)
      rstd(%rstd : memref<?xf32>) weight(%w : memref<32768xbf16>)
      outs dx(%dx : memref<?x32768xbf16>) dweight(%dw : memref<32768xbf16>) dbias(%db : memref<32768xbf16>)
  return
}

// -----

// A fixed G of 1: the condition folds to true at compile time (the
// extent is static), the reduce kernel is recorded all the same, and the
// runtime never launches it. A fixed G of 4 has no finish. One instance
// of the pass maps both functions in turn without threads (SEQ): each
// function records its own kernels only.
// SEQ-LABEL: func @fixed_one
// SEQ-SAME: norm.kernels = [#norm.kernel<name = "fixed_one_dx_1", {{[^>]*}}>, #norm.kernel<name = "fixed_one_reduce_2", {{[^>]*}}, skip_at_one_group = true>]
// SEQ-LABEL: func @fixed_four
// SEQ-SAME: norm.kernels = [#norm.kernel<name = "fixed_four_dx_1", {{[^>]*}}>, #norm.kernel<name = "fixed_four_reduce_2", {{[^>]*}}, waits = true>]
// CHECK-LABEL: func @fixed_one
// CHECK-SAME: kind = reduce, {{[^>]*}}, skip_at_one_group = true>
// CHECK:      gpu.launch {{.*}} function(@fixed_one_dx_1)
// CHECK:          scf.for %[[J:.*]] = %{{.*}} to %c2048{{.*}} step %{{.*}} {
// CHECK:            %[[C:.*]] = arith.minui %[[J]], %{{.*}}
// CHECK:            memref.load %{{.*}}[%c0{{.*}}, %[[C]]] : memref<1x2048xf32>
// CHECK-LABEL: func @fixed_four
// CHECK-NOT: skip_at_one_group
// CHECK:      gpu.launch {{.*}} function(@fixed_four_dx_1)
// CHECK-NOT:    memref.load %{{.*}}[%c0{{[_0-9]*}}, %{{.*}}] : memref<4x2048xf32>
// CHECK:      gpu.launch {{.*}} function(@fixed_four_reduce_2)
func.func @fixed_one(%dy: memref<?x2048xf32>, %x: memref<?x2048xf32>, %rstd: memref<?xf32>,
                     %w: memref<2048xf32>, %dx: memref<?x2048xf32>, %dw: memref<2048xf32>) {
  norm.rms_norm_grad dy(%dy : memref<?x2048xf32>) x(%x : memref<?x2048xf32>) rstd(%rstd : memref<?xf32>)
      weight(%w : memref<2048xf32>) outs dx(%dx : memref<?x2048xf32>) dweight(%dw : memref<2048xf32>) {groups = 1}
  return
}
func.func @fixed_four(%dy: memref<?x2048xf32>, %x: memref<?x2048xf32>, %rstd: memref<?xf32>,
                      %w: memref<2048xf32>, %dx: memref<?x2048xf32>, %dw: memref<2048xf32>) {
  norm.rms_norm_grad dy(%dy : memref<?x2048xf32>) x(%x : memref<?x2048xf32>) rstd(%rstd : memref<?xf32>)
      weight(%w : memref<2048xf32>) outs dx(%dx : memref<?x2048xf32>) dweight(%dw : memref<2048xf32>) {groups = 4}
  return
}

// -----

// Only `deterministic` finishes in the dx kernel: `atomic` adds every
// program's terms into its one row (a static extent of 1, at every G),
// `locked` shares rows between programs under a lock, so one program's
// barrier would not wait for the others.
// CHECK-LABEL: func @atomic
// CHECK-NOT: skip_at_one_group
// CHECK:      gpu.launch {{.*}} function(@atomic_dx_1)
// CHECK-NOT:    memref.load %{{.*}}[%c0{{[_0-9]*}}, %{{.*}}] : memref<1x2048xf32>
// CHECK:      gpu.launch {{.*}} function(@atomic_reduce_2)
// CHECK-LABEL: func @locked
// CHECK-NOT: skip_at_one_group
// CHECK:      gpu.launch {{.*}} function(@locked_dx_1)
// CHECK-NOT:    memref.load %{{.*}}[%c0{{[_0-9]*}}, %{{.*}}] : memref<?x2048xf32>
// CHECK:      gpu.launch {{.*}} function(@locked_reduce_2)
func.func @atomic(%dy: memref<?x2048xf32>, %x: memref<?x2048xf32>, %rstd: memref<?xf32>,
                  %w: memref<2048xf32>, %dx: memref<?x2048xf32>, %dw: memref<2048xf32>) {
  norm.rms_norm_grad dy(%dy : memref<?x2048xf32>) x(%x : memref<?x2048xf32>) rstd(%rstd : memref<?xf32>)
      weight(%w : memref<2048xf32>) outs dx(%dx : memref<?x2048xf32>) dweight(%dw : memref<2048xf32>)
      {strategy = #norm.strategy<atomic>}
  return
}
func.func @locked(%dy: memref<?x2048xf32>, %x: memref<?x2048xf32>, %rstd: memref<?xf32>,
                  %w: memref<2048xf32>, %dx: memref<?x2048xf32>, %dw: memref<2048xf32>) {
  norm.rms_norm_grad dy(%dy : memref<?x2048xf32>) x(%x : memref<?x2048xf32>) rstd(%rstd : memref<?xf32>)
      weight(%w : memref<2048xf32>) outs dx(%dx : memref<?x2048xf32>) dweight(%dw : memref<2048xf32>)
      {strategy = #norm.strategy<locked>}
  return
}
