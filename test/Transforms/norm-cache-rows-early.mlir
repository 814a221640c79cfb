// RUN: norm-opt %s --split-input-file --norm-cache-rows | FileCheck %s
// RUN: norm-opt %s --split-input-file --norm-cache-rows=early-rows=false | FileCheck %s --check-prefix=OFF
// RUN: norm-opt %s --split-input-file --norm-lower-to-loops | FileCheck %s --check-prefix=PIPE
// RUN: norm-opt %s --split-input-file --norm-lower-to-loops=early-rows=false | FileCheck %s --check-prefix=PIPEOFF

// norm-cache-rows early-rows (the default; off with early-rows=false). A row
// only the last column loop reads (a backward's dresidual), of a memref
// the row body never writes: the first loop reads it too (its load in
// flight with x's rather than a memory round trip after the row's sum)
// into a row cache tagged norm.early_row, which the last loop reads (the
// GPU mapping may read it late again: map-to-gpu-early-rows.mlir).
// OFF-LABEL: func @late_row_read_early
// OFF: scf.for
// OFF:   scf.for
// OFF-NOT: memref.load %arg1
// OFF:     scf.yield
// OFF:   scf.for
// OFF:     memref.load %arg1[%{{.*}}, %{{.*}}] : memref<?x?xbf16>
// CHECK-LABEL: func @late_row_read_early
// CHECK-SAME: (%[[X:[^:]+]]: memref<?x?xbf16>, %[[D:[^:]+]]: memref<?x?xbf16>, %[[Y:[^:]+]]: memref<?x?xbf16>,
// CHECK: memref.alloc(%{{.*}}) {norm.row_cache} : memref<?xf32>
// CHECK-NEXT: memref.alloc(%{{.*}}) {norm.early_row, norm.row_cache} : memref<?xf32>
// CHECK: scf.for %[[ROW:[^ ]+]] =
// CHECK:   scf.for %[[J:[^ ]+]] = {{.*}} -> (f32)
// CHECK-NEXT: %[[LD:.*]] = memref.load %[[D]][%[[ROW]], %[[J]]] : memref<?x?xbf16>
// CHECK-NEXT: %[[ED:.*]] = arith.extf %[[LD]] : bf16 to f32
// CHECK-NEXT: memref.store %[[ED]], %[[CD:alloc[_0-9]*]][%[[J]]] : memref<?xf32>
// CHECK:   scf.for %[[J2:[^ ]+]] =
// CHECK-NOT: memref.load %[[D]]
// CHECK: memref.load %[[CD]][%[[J2]]] : memref<?xf32>
// CHECK: } {norm.accumulate = f32, norm.id = 0 : i64, norm.stage = #norm.stage<forward>}
func.func @late_row_read_early(%x: memref<?x?xbf16>, %d: memref<?x?xbf16>, %y: memref<?x?xbf16>,
                               %m: index, %n: index) {
  %cst = arith.constant 0.000000e+00 : f32
  %c1 = arith.constant 1 : index
  %c0 = arith.constant 0 : index
  scf.for %r = %c0 to %m step %c1 {
    %s = scf.for %j = %c0 to %n step %c1 iter_args(%acc = %cst) -> (f32) {
      %0 = memref.load %x[%r, %j] : memref<?x?xbf16>
      %1 = arith.extf %0 : bf16 to f32
      %2 = arith.addf %acc, %1 : f32
      scf.yield %2 : f32
    }
    scf.for %j = %c0 to %n step %c1 {
      %0 = memref.load %x[%r, %j] : memref<?x?xbf16>
      %1 = arith.extf %0 : bf16 to f32
      %2 = memref.load %d[%r, %j] : memref<?x?xbf16>
      %3 = arith.extf %2 : bf16 to f32
      %4 = arith.mulf %1, %s : f32
      %5 = arith.addf %4, %3 : f32
      %6 = arith.truncf %5 : f32 to bf16
      memref.store %6, %y[%r, %j] : memref<?x?xbf16>
    }
  } {norm.accumulate = f32, norm.id = 0 : i64, norm.stage = #norm.stage<forward>}
  return
}

// -----

// The same row, but the row body writes its memref (dx written into dy):
// its later load stays where it is, since reading it early could read
// what the body has not written yet.
// CHECK-LABEL: func @late_row_written_stays
// CHECK-SAME: (%[[X:[^:]+]]: memref<?x?xbf16>, %[[D:[^:]+]]: memref<?x?xbf16>,
// CHECK: scf.for %[[ROW:[^ ]+]] =
// CHECK:   scf.for %[[J:[^ ]+]] = {{.*}} -> (f32)
// CHECK-NOT: memref.load %[[D]]
// CHECK:     scf.yield
// CHECK:   scf.for %[[J2:[^ ]+]] =
// CHECK: memref.load %[[D]][%[[ROW]], %[[J2]]] : memref<?x?xbf16>
// CHECK: memref.store %{{.*}}, %[[D]][%[[ROW]], %[[J2]]] : memref<?x?xbf16>
func.func @late_row_written_stays(%x: memref<?x?xbf16>, %d: memref<?x?xbf16>,
                                  %m: index, %n: index) {
  %cst = arith.constant 0.000000e+00 : f32
  %c1 = arith.constant 1 : index
  %c0 = arith.constant 0 : index
  scf.for %r = %c0 to %m step %c1 {
    %s = scf.for %j = %c0 to %n step %c1 iter_args(%acc = %cst) -> (f32) {
      %0 = memref.load %x[%r, %j] : memref<?x?xbf16>
      %1 = arith.extf %0 : bf16 to f32
      %2 = arith.addf %acc, %1 : f32
      scf.yield %2 : f32
    }
    scf.for %j = %c0 to %n step %c1 {
      %0 = memref.load %x[%r, %j] : memref<?x?xbf16>
      %1 = arith.extf %0 : bf16 to f32
      %2 = memref.load %d[%r, %j] : memref<?x?xbf16>
      %3 = arith.extf %2 : bf16 to f32
      %4 = arith.mulf %1, %s : f32
      %5 = arith.addf %4, %3 : f32
      %6 = arith.truncf %5 : f32 to bf16
      memref.store %6, %d[%r, %j] : memref<?x?xbf16>
    }
  } {norm.accumulate = f32, norm.id = 0 : i64, norm.stage = #norm.stage<forward>}
  return
}

// -----

// Through the pipeline (norm-lower-to-loops early-rows, which
// norm-to-gpu-binary and norm-compile take too): RMSNorm backward with a
// dresidual reads it in the first column loop of the dx nest, into a
// third row cache, the early one; with early-rows=false, in the last.
// PIPE-LABEL: func @rms_grad_dresidual
// PIPE-SAME: memref<?xf32, strided<[1], offset: ?>>, %[[DRES:[^:]+]]:
// PIPE-COUNT-2: memref.alloc() {norm.row_cache} : memref<64xf32>
// PIPE-NEXT: memref.alloc() {norm.early_row, norm.row_cache} : memref<64xf32>
// PIPE: scf.for %{{.*}} iter_args({{.*}}) -> (f32, f32) {
// PIPE-NEXT: memref.load %[[DRES]]
// PIPE: norm.stage = #norm.stage<dx>
// PIPEOFF-LABEL: func @rms_grad_dresidual
// PIPEOFF-SAME: memref<?xf32, strided<[1], offset: ?>>, %[[DRES:[^:]+]]:
// PIPEOFF-COUNT-2: memref.alloc() {norm.row_cache} : memref<64xf32>
// PIPEOFF-NOT: norm.row_cache
// PIPEOFF: scf.for %{{.*}} iter_args({{.*}}) -> (f32, f32) {
// PIPEOFF-NOT: memref.load %[[DRES]]
// PIPEOFF: scf.yield
// PIPEOFF: scf.for
// PIPEOFF: memref.load %[[DRES]]
// PIPEOFF: norm.stage = #norm.stage<dx>
func.func @rms_grad_dresidual(%dy: memref<?x64xbf16, strided<[?, 1], offset: ?>>, %x: memref<?x64xbf16, strided<[?, 1], offset: ?>>, %rstd: memref<?xf32, strided<[1], offset: ?>>, %dresidual: memref<?x64xbf16, strided<[?, 1], offset: ?>>, %dx: memref<?x64xbf16, strided<[?, 1], offset: ?>>) {
  norm.rms_norm_grad dy(%dy : memref<?x64xbf16, strided<[?, 1], offset: ?>>) x(%x : memref<?x64xbf16, strided<[?, 1], offset: ?>>) rstd(%rstd : memref<?xf32, strided<[1], offset: ?>>) dresidual(%dresidual : memref<?x64xbf16, strided<[?, 1], offset: ?>>) outs dx(%dx : memref<?x64xbf16, strided<[?, 1], offset: ?>>)
  return
}
