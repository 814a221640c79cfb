// RUN: norm-opt %s --split-input-file --norm-lower-to-loops --norm-choose-geometry=prefetch=1 --norm-map-to-gpu --canonicalize --cse | FileCheck %s
// RUN: norm-opt %s --split-input-file --norm-lower-to-loops --norm-choose-geometry="prefetch=2 batch-rows=2" --norm-map-to-gpu --canonicalize --cse | FileCheck %s --check-prefix=LOOPED
// RUN: norm-opt %s --split-input-file --norm-lower-to-loops --norm-choose-geometry --norm-map-to-gpu | FileCheck %s --check-prefix=NONE
// RUN: norm-opt %s --split-input-file --norm-lower-to-loops --norm-choose-geometry=prefetch=2 --norm-map-to-gpu --canonicalize --cse | FileCheck %s --check-prefix=TWO

// Geometry prefetch = P: at the top of each wave of S rows, lane 0 of each
// sub-group asks L2 for its row P S ahead, where that row is still the
// program's and the rows are 16-byte aligned (the kernel's alignment
// check): one cp.async.bulk.prefetch per row memref the body reads (dy and
// x, never dx), the whole row (N x 2 bytes) from the row's generic address
// converted to the global space. Without the option, none.
// CHECK-LABEL: func.func @registers
// CHECK: gpu.launch {{.*}} function(@registers_dx_1)
// CHECK:   %[[DYPTR:.*]] = memref.extract_aligned_pointer_as_index %arg0
// CHECK:   %[[XPTR:.*]] = memref.extract_aligned_pointer_as_index %arg1
// CHECK:   memref.extract_aligned_pointer_as_index %arg3
// CHECK:   %[[ALIGNED:.*]] = arith.andi %{{.*}}, %{{.*}} : i1
// CHECK-NEXT: memref.alloca
// CHECK:   scf.for %[[WAVE:.*]] = %[[LO:.*]] to %[[END:.*]] step %c1 {
// CHECK:     %[[ROW:.*]] = arith.addi %[[WAVE]], %{{.*}} : index
// CHECK:     %[[LANE0:.*]] = arith.cmpi eq, %{{.*}}, %c0 : index
// CHECK:     %[[AHEAD:.*]] = arith.addi %[[ROW]], %c1 : index
// CHECK:     %[[MINE:.*]] = arith.cmpi ult, %[[AHEAD]], %[[END]] : index
// CHECK:     %[[ISSUE:.*]] = arith.andi %[[LANE0]], %[[MINE]] : i1
// CHECK:     %[[WHEN:.*]] = arith.andi %[[ISSUE]], %[[ALIGNED]] : i1
// CHECK:     scf.if %[[WHEN]] {
// CHECK:       %[[OFF:.*]] = arith.muli %[[AHEAD]], %c8192 : index
// CHECK:       %[[A0:.*]] = arith.addi %[[DYPTR]], %[[OFF]] : index
// CHECK:       %[[I0:.*]] = arith.index_castui %[[A0]] : index to i64
// CHECK:       %[[P0:.*]] = llvm.inttoptr %[[I0]] : i64 to !llvm.ptr
// CHECK:       %[[G0:.*]] = llvm.addrspacecast %[[P0]] : !llvm.ptr to !llvm.ptr<1>
// CHECK:       nvvm.cp.async.bulk.prefetch %[[G0]], %c8192_i32 : <1>
// CHECK:       %[[A1:.*]] = arith.addi %[[XPTR]], %[[OFF]] : index
// CHECK:       nvvm.cp.async.bulk.prefetch %{{.*}}, %c8192_i32 : <1>
// CHECK-NEXT: }
// CHECK-NOT: nvvm.cp.async.bulk.prefetch
// CHECK: gpu.launch {{.*}} function(@registers_reduce_2)
// Two waves ahead: the row 2 S ahead (S = 1 here).
// TWO-LABEL: func.func @registers
// TWO: gpu.launch {{.*}} function(@registers_dx_1)
// TWO:   scf.for %[[WAVE:.*]] = %{{.*}} to %[[END:.*]] step %c1 {
// TWO:     %[[ROW:.*]] = arith.addi %[[WAVE]], %{{.*}} : index
// TWO:     %[[AHEAD:.*]] = arith.addi %[[ROW]], %c2 : index
// TWO:     arith.cmpi ult, %[[AHEAD]], %[[END]] : index
// TWO:     arith.muli %[[AHEAD]], %c8192 : index
// TWO:     nvvm.cp.async.bulk.prefetch
// NONE-LABEL: func.func @registers
// NONE-NOT: nvvm.cp.async.bulk.prefetch
func.func @registers(%dy: memref<?x4096xbf16>, %x: memref<?x4096xbf16>, %rstd: memref<?xf32>, %dx: memref<?x4096xbf16>, %w: memref<4096xbf16>, %dw: memref<4096xbf16>) {
  norm.rms_norm_grad dy(%dy : memref<?x4096xbf16>) x(%x : memref<?x4096xbf16>) rstd(%rstd : memref<?xf32>) weight(%w : memref<4096xbf16>) outs dx(%dx : memref<?x4096xbf16>) dweight(%dw : memref<4096xbf16>)
  return
}

// -----

// The looped regime's batches of B rows (here 2, prefetch 2): row i of the
// batch 2 B ahead by lane i, the whole row of 131072 x 2 bytes.
// LOOPED-LABEL: func.func @looped
// LOOPED: gpu.launch {{.*}} function(@looped_dx_1)
// LOOPED:   scf.for %[[FIRST:.*]] = %{{.*}} to %[[END:.*]] step %c2 {
// LOOPED:     %[[AHEAD0:.*]] = arith.addi %[[FIRST]], %c4 : index
// LOOPED:     %[[LANE0:.*]] = arith.cmpi eq, %[[LANE:.*]], %c0 : index
// LOOPED:     arith.cmpi ult, %[[AHEAD0]], %[[END]] : index
// LOOPED:     scf.if
// LOOPED:       arith.muli %[[AHEAD0]], %c262144 : index
// LOOPED:       nvvm.cp.async.bulk.prefetch %{{.*}}, %c262144_i32 : <1>
// LOOPED:       nvvm.cp.async.bulk.prefetch %{{.*}}, %c262144_i32 : <1>
// LOOPED:     %[[AHEAD1:.*]] = arith.addi %[[FIRST]], %c5 : index
// LOOPED:     arith.cmpi eq, %[[LANE]], %c1 : index
// LOOPED:     arith.cmpi ult, %[[AHEAD1]], %[[END]] : index
// LOOPED:     scf.if
// LOOPED:       arith.muli %[[AHEAD1]], %c262144 : index
// LOOPED:       nvvm.cp.async.bulk.prefetch %{{.*}}, %c262144_i32 : <1>
// LOOPED:       nvvm.cp.async.bulk.prefetch %{{.*}}, %c262144_i32 : <1>
// LOOPED-NOT: nvvm.cp.async.bulk.prefetch
// LOOPED: gpu.launch {{.*}} function(@looped_reduce_2)
func.func @looped(%dy: memref<?x131072xbf16>, %x: memref<?x131072xbf16>, %rstd: memref<?xf32>, %dx: memref<?x131072xbf16>, %w: memref<131072xbf16>, %dw: memref<131072xbf16>) {
  norm.rms_norm_grad dy(%dy : memref<?x131072xbf16>) x(%x : memref<?x131072xbf16>) rstd(%rstd : memref<?xf32>) weight(%w : memref<131072xbf16>) outs dx(%dx : memref<?x131072xbf16>) dweight(%dw : memref<131072xbf16>)
  return
}
