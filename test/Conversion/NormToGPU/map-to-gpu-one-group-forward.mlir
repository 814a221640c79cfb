// RUN: norm-opt %s --split-input-file --norm-lower-to-loops --norm-choose-geometry --norm-map-to-gpu=forward-finish=2 | FileCheck %s
// RUN: norm-opt %s --split-input-file --norm-lower-to-loops --norm-choose-geometry --norm-map-to-gpu | FileCheck %s --check-prefix=DEF
// RUN: norm-opt %s --split-input-file --norm-lower-to-loops --norm-choose-geometry --norm-map-to-gpu=forward-finish=0 | FileCheck %s --check-prefix=OFF
// RUN: norm-opt %s --split-input-file --norm-lower-to-loops --norm-choose-geometry=cluster=1 --norm-map-to-gpu=forward-finish=2 | FileCheck %s --check-prefix=LOOPED
// RUN: not norm-opt %s --split-input-file --norm-lower-to-loops --norm-choose-geometry --norm-map-to-gpu=forward-finish=3 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: norm-map-to-gpu: forward-finish must be 0, 1 or 2, got 3

// The one-group finish forwarded (norm-map-to-gpu forward-finish = 2:
// every such kernel; the default, 1, only where the row is split over a
// cluster, DEF below; docs/GPU.md "One group"). Where the partial rows live in shared
// memory or registers until the write-back, each column of the program's
// partial row is stored once, by one thread, with its final value: right
// after that store, under `leading extent of the partial rows == 1`
// (computed once at the kernel's start), the same thread does the reduce
// kernel's arithmetic for G = 1 on the value it stored (slice 0 adds it to
// the initial value, slices 1 to 7 keep the initial value, the eight added
// in order) and the nest's stores for that column. No barrier, no load of
// the partial rows back (forward-finish=0: both, map-to-gpu-one-
// group.mlir). The reduce kernel is recorded `skip_at_one_group` either
// way.

// RMSNorm bf16, partial row in shared memory: the write-back's scalar
// stores, 8 columns a step, each followed by its finish.
// CHECK-LABEL: func @rms_norm_grad_n4096
// CHECK-SAME: #norm.kernel<name = "rms_norm_grad_n4096_reduce_2", kind = reduce, {{[^>]*}}, skip_at_one_group = true>
// CHECK:      %[[WS:.*]] = memref.alloc({{.*}}) {norm.workspace, norm.written} : memref<?x4096xf32>
// CHECK:      gpu.launch {{.*}} function(@rms_norm_grad_n4096_dx_1)
// CHECK:        %[[G:.*]] = memref.dim %[[WS]], %c0{{[_0-9]*}} : memref<?x4096xf32>
// CHECK:        %[[ONE:.*]] = arith.cmpi eq, %[[G]], %c1
// CHECK:        scf.for %{{.*}} = %{{.*}} to %c4096{{[_0-9]*}} step %c2048{{[_0-9]*}} {
// CHECK-COUNT-8:  memref.load %{{.*}} : memref<4096xf32, #gpu.address_space<workgroup>>
// CHECK:          memref.store %[[V:.*]], %[[WS]][%{{.*}}, %[[J:.*]]] : memref<?x4096xf32>
// CHECK-NOT:      norm.final_partial
// CHECK-NEXT:     scf.if %[[ONE]] {
// CHECK:            %[[S0:.*]] = arith.addf %[[INIT:cst[_0-9]*]], %[[V]] : f32
// CHECK-NEXT:       %[[S1:.*]] = arith.addf %[[S0]], %[[INIT]] : f32
// CHECK-COUNT-6:    arith.addf %{{.*}}, %[[INIT]] : f32
// CHECK-NEXT:       %[[H:.*]] = arith.truncf %{{.*}} : f32 to bf16
// CHECK-NEXT:       memref.store %[[H]], %{{.*}}[%[[J]]] : memref<4096xbf16>
// CHECK-NEXT:     }
// CHECK-COUNT-7:  memref.store %{{.*}}, %[[WS]]{{\[}}
// CHECK:        }
// CHECK-NOT:    gpu.barrier
// CHECK-NOT:    memref.load %[[WS]]{{\[}}
// CHECK:        gpu.terminator
// The default leaves a kernel of one block to the barrier and the load
// back.
// DEF-LABEL: func @rms_norm_grad_n4096
// DEF:      %[[WS:.*]] = memref.alloc({{.*}}) {norm.workspace, norm.written} : memref<?x4096xf32>
// DEF:        %[[G:.*]] = memref.dim %[[WS]], %c0
// DEF:        %[[ONE:.*]] = arith.cmpi eq, %[[G]], %c1
// DEF:        scf.if %[[ONE]] {
// DEF-NEXT:     gpu.barrier
// DEF:            memref.load %[[WS]][%c0{{.*}}, %{{.*}}] : memref<?x4096xf32>
// OFF-LABEL: func @rms_norm_grad_n4096
// OFF:      %[[WS:.*]] = memref.alloc({{.*}}) {norm.workspace, norm.written} : memref<?x4096xf32>
// OFF:      gpu.launch {{.*}} function(@rms_norm_grad_n4096_dx_1)
// OFF:          memref.store %{{.*}}, %[[WS]]{{\[}}
// OFF-NEXT:     memref.store %{{.*}}, %[[WS]]{{\[}}
// OFF:        %[[G:.*]] = memref.dim %[[WS]], %c0
// OFF:        %[[ONE:.*]] = arith.cmpi eq, %[[G]], %c1
// OFF:        scf.if %[[ONE]] {
// OFF-NEXT:     gpu.barrier
// OFF:            memref.load %[[WS]][%c0{{.*}}, %{{.*}}] : memref<?x4096xf32>
func.func @rms_norm_grad_n4096(%dy: memref<?x4096xbf16>, %x: memref<?x4096xbf16>, %rstd: memref<?xf32>,
                               %w: memref<4096xbf16>, %dx: memref<?x4096xbf16>, %dw: memref<4096xbf16>) {
  norm.rms_norm_grad dy(%dy : memref<?x4096xbf16>) x(%x : memref<?x4096xbf16>) rstd(%rstd : memref<?xf32>)
      weight(%w : memref<4096xbf16>) outs dx(%dx : memref<?x4096xbf16>) dweight(%dw : memref<4096xbf16>)
  return
}

// -----

// RMSNorm f32, partial row in registers written as 16-byte vectors: each
// element of the stored vector is finished, at its column j + e.
// CHECK-LABEL: func @rms_norm_grad_n1536
// CHECK:      %[[WS:.*]] = memref.alloc({{.*}}) {norm.workspace, norm.written} : memref<?x1536xf32>
// CHECK:      gpu.launch {{.*}} function(@rms_norm_grad_n1536_dx_1)
// CHECK:        %[[ONE:.*]] = arith.cmpi eq, %{{.*}}, %c1
// CHECK:        vector.store %[[V:.*]], %[[WS]][%{{.*}}, %[[J:.*]]] {{.*}} : memref<?x1536xf32>, vector<4xf32>
// CHECK-NEXT:   scf.if %[[ONE]] {
// CHECK-NEXT:     %[[E0:.*]] = vector.extract %[[V]][0] : f32 from vector<4xf32>
// CHECK:          %[[S0:.*]] = arith.addf %[[INIT:cst[_0-9]*]], %[[E0]] : f32
// CHECK-COUNT-7:  arith.addf %{{.*}}, %[[INIT]] : f32
// CHECK-NEXT:     memref.store %{{.*}}, %{{.*}}[%[[J]]] : memref<1536xf32>
// CHECK:          %[[J1:.*]] = arith.addi %[[J]], %c1
// CHECK-NEXT:     %[[E1:.*]] = vector.extract %[[V]][1] : f32 from vector<4xf32>
// CHECK:          arith.addf %{{.*}}, %[[E1]] : f32
// CHECK:          memref.store %{{.*}}, %{{.*}}[%[[J1]]] : memref<1536xf32>
// CHECK:          vector.extract %[[V]][2]
// CHECK:          vector.extract %[[V]][3]
// CHECK:        }
// The kernel's other body (rows not 16-byte aligned): scalar stores, each
// finished the same way.
// CHECK:        memref.store %[[U:.*]], %[[WS]][%{{.*}}, %[[K:.*]]] : memref<?x1536xf32>
// CHECK-NEXT:   scf.if %[[ONE]] {
// CHECK:          arith.addf %{{.*}}, %[[U]] : f32
// CHECK-COUNT-7:  arith.addf
// CHECK-NEXT:     memref.store %{{.*}}, %{{.*}}[%[[K]]] : memref<1536xf32>
// CHECK-NOT:    memref.load %[[WS]]{{\[}}
// CHECK:        gpu.terminator
func.func @rms_norm_grad_n1536(%dy: memref<?x1536xf32>, %x: memref<?x1536xf32>, %rstd: memref<?xf32>,
                               %w: memref<1536xf32>, %dx: memref<?x1536xf32>, %dw: memref<1536xf32>) {
  norm.rms_norm_grad dy(%dy : memref<?x1536xf32>) x(%x : memref<?x1536xf32>) rstd(%rstd : memref<?xf32>)
      weight(%w : memref<1536xf32>) outs dx(%dx : memref<?x1536xf32>) dweight(%dw : memref<1536xf32>)
  return
}

// -----

// LayerNorm over a cluster (sm_90): two partial rows, each column of
// dweight finished from dweight's partial row after its store, dbias' from
// dbias'; each block its own slice (the columns it stored), so no cluster
// barrier either.
// CHECK-LABEL: func @layer_norm_grad_n32768
// CHECK-SAME: cluster = {{[2-8]}}
// CHECK:      %[[WSW:.*]] = memref.alloc({{.*}}) {norm.workspace, norm.written} : memref<?x32768xf32>
// CHECK:      %[[WSB:.*]] = memref.alloc({{.*}}) {norm.workspace, norm.written} : memref<?x32768xf32>
// CHECK:      gpu.launch {{.*}} function(@layer_norm_grad_n32768_dx_1)
// CHECK:        %[[ONE:.*]] = arith.cmpi eq, %{{.*}}, %c1
// CHECK:          memref.store %[[V:.*]], %[[WSW]][%{{.*}}, %[[J:.*]]] : memref<?x32768xf32>
// CHECK-NEXT:     scf.if %[[ONE]] {
// CHECK:            arith.addf %{{.*}}, %[[V]] : f32
// CHECK:            %[[H:.*]] = arith.truncf %{{.*}} : f32 to bf16
// CHECK-NEXT:       memref.store %[[H]], %[[DW:arg[0-9]+]][%[[J]]] : memref<32768xbf16>
// CHECK-NEXT:     }
// CHECK:          memref.store %[[VB:.*]], %[[WSB]][%{{.*}}, %[[JB:.*]]] : memref<?x32768xf32>
// CHECK-NEXT:     scf.if %[[ONE]] {
// CHECK:            arith.addf %{{.*}}, %[[VB]] : f32
// CHECK:            %[[HB:.*]] = arith.truncf %{{.*}} : f32 to bf16
// CHECK-NEXT:       memref.store %[[HB]], %[[DB:arg[0-9]+]][%[[JB]]] : memref<32768xbf16>
// CHECK-NEXT:     }
// CHECK-NOT:    memref.load %[[WSW]]{{\[}}
// CHECK-NOT:    memref.load %[[WSB]]{{\[}}
// CHECK:        gpu.terminator
// The default forwards it: a cluster.
// DEF-LABEL: func @layer_norm_grad_n32768
// DEF-SAME: cluster = {{[2-8]}}
// DEF:      %[[WSW:.*]] = memref.alloc({{.*}}) {norm.workspace, norm.written} : memref<?x32768xf32>
// DEF:          memref.store %{{.*}}, %[[WSW]][%{{.*}}, %{{.*}}] : memref<?x32768xf32>
// DEF-NEXT:     scf.if %{{.*}} {
// DEF-NOT:    memref.load %[[WSW]]{{\[}}
// DEF:        gpu.terminator
func.func @layer_norm_grad_n32768(%dy: memref<?x32768xbf16>, %x: memref<?x32768xbf16>, %mean: memref<?xf32>,
                                  %rstd: memref<?xf32>, %w: memref<32768xbf16>, %dx: memref<?x32768xbf16>,
                                  %dw: memref<32768xbf16>, %db: memref<32768xbf16>) {
  norm.layer_norm_grad dy(%dy : memref<?x32768xbf16>) x(%x : memref<?x32768xbf16>) mean(%mean : memref<?xf32>)
      rstd(%rstd : memref<?xf32>) weight(%w : memref<32768xbf16>)
      outs dx(%dx : memref<?x32768xbf16>) dweight(%dw : memref<32768xbf16>) dbias(%db : memref<32768xbf16>)
  return
}

// -----

// A row past the registers without a cluster (cluster=1): the looped regime
// keeps its partial row in global memory, stored again every row, so no
// store is a column's last: the barrier and the load back stay.
// LOOPED-LABEL: func @rms_norm_grad_n65536
// LOOPED-SAME: skip_at_one_group = true>
// LOOPED:      %[[WS:.*]] = memref.alloc({{.*}}) {norm.workspace, norm.written} : memref<?x65536xf32>
// LOOPED:      gpu.launch {{.*}} function(@rms_norm_grad_n65536_dx_1)
// LOOPED-NOT:    norm.final_partial
// LOOPED:        %[[G:.*]] = memref.dim %[[WS]], %c0
// LOOPED:        %[[ONE:.*]] = arith.cmpi eq, %[[G]], %c1
// LOOPED:        scf.if %[[ONE]] {
// LOOPED-NEXT:     gpu.barrier
// LOOPED:            memref.load %[[WS]][%c0{{.*}}, %{{.*}}] : memref<?x65536xf32>
// LOOPED:        gpu.terminator
func.func @rms_norm_grad_n65536(%dy: memref<?x65536xbf16>, %x: memref<?x65536xbf16>, %rstd: memref<?xf32>,
                                %w: memref<65536xbf16>, %dx: memref<?x65536xbf16>, %dw: memref<65536xbf16>) {
  norm.rms_norm_grad dy(%dy : memref<?x65536xbf16>) x(%x : memref<?x65536xbf16>) rstd(%rstd : memref<?xf32>)
      weight(%w : memref<65536xbf16>) outs dx(%dx : memref<?x65536xbf16>) dweight(%dw : memref<65536xbf16>)
  return
}
