// RUN: norm-opt %s --split-input-file --norm-to-gpu-binary='format=isa rows=1' --mlir-print-ir-after=norm-restrict-kernel-arguments -o /dev/null 2>&1 | FileCheck %s
// RUN: norm-opt %s --split-input-file --norm-to-gpu-binary='format=isa rows=1 restrict-arguments=false' --mlir-print-ir-after=norm-restrict-kernel-arguments -o /dev/null 2>&1 | FileCheck %s --check-prefix=OFF
// RUN: norm-opt %s --split-input-file --norm-to-gpu-binary='format=isa rows=16384' --mlir-print-ir-after=norm-restrict-kernel-arguments -o /dev/null 2>&1 | FileCheck %s --check-prefix=OFF
// RUN: norm-opt %s --split-input-file --norm-to-gpu-binary='format=isa rows=1' | FileCheck %s --check-prefix=PTX
// RUN: norm-opt %s --split-input-file --norm-to-gpu-binary='format=isa rows=1 restrict-resident=true' | FileCheck %s --check-prefix=RES

// The whole pipeline on an RMSNorm forward and backward as norm-compile
// builds them. Built for M <= 128 the forward's launch is one wave
// (Geometry.h restrictPays): its kernel reads x and the weight through
// noalias read-only pointers (ld.global.nc in the PTX) and writes y and
// rstd through noalias ones. Built for M = 16384, or with
// restrict-arguments=false, nothing is (OFF). The backward's kernels are
// never restricted; dy and dx could not be (dx may be dy itself). The host
// functions keep no marks. With restrict-resident=true (RES) the
// restricted kernel also carries the blocks an SM its launch needs to
// stay one wave (.minnctapersm 1: 8 rows a block of 1024 threads, 16
// blocks at M = 128); by default it does not.
// CHECK-LABEL: llvm.func @norm_kernel_forward_0(
// CHECK-SAME: %arg0: !llvm.ptr, %arg1: !llvm.ptr {llvm.noalias, llvm.readonly}, %arg2: i64
// CHECK-SAME: %arg7: !llvm.ptr, %arg8: !llvm.ptr {llvm.noalias, llvm.readonly}, %arg9: i64
// CHECK-SAME: %arg12: !llvm.ptr, %arg13: !llvm.ptr {llvm.noalias}, %arg14: i64
// CHECK-SAME: %arg19: !llvm.ptr, %arg20: !llvm.ptr {llvm.noalias}, %arg21: i64
// CHECK-NOT: norm.noalias
// CHECK-LABEL: llvm.func @norm_kernel_dx_1(
// CHECK-NOT: llvm.noalias
// CHECK-NOT: norm.noalias
// OFF-NOT: llvm.noalias
// PTX-NOT: .minnctapersm
// PTX: ld.global.nc
// RES: .maxntid 1024, 1, 1\0A.minnctapersm 1\0A
func.func @norm_kernel(%x: memref<?x1024xbf16, strided<[?, 1], offset: ?>>, %weight: memref<1024xbf16, strided<[1], offset: ?>>, %y: memref<?x1024xbf16, strided<[?, 1], offset: ?>>, %rstd: memref<?xf32, strided<[1], offset: ?>>) {
  norm.rms_norm x(%x : memref<?x1024xbf16, strided<[?, 1], offset: ?>>) weight(%weight : memref<1024xbf16, strided<[1], offset: ?>>) outs y(%y : memref<?x1024xbf16, strided<[?, 1], offset: ?>>) rstd(%rstd : memref<?xf32, strided<[1], offset: ?>>)
  return
}
// -----
func.func @norm_kernel(%dy: memref<?x1024xbf16, strided<[?, 1], offset: ?>>, %x: memref<?x1024xbf16, strided<[?, 1], offset: ?>>, %rstd: memref<?xf32, strided<[1], offset: ?>>, %weight: memref<1024xbf16, strided<[1], offset: ?>>, %dx: memref<?x1024xbf16, strided<[?, 1], offset: ?>>, %dweight: memref<1024xbf16, strided<[1], offset: ?>>) {
  norm.rms_norm_grad dy(%dy : memref<?x1024xbf16, strided<[?, 1], offset: ?>>) x(%x : memref<?x1024xbf16, strided<[?, 1], offset: ?>>) rstd(%rstd : memref<?xf32, strided<[1], offset: ?>>) weight(%weight : memref<1024xbf16, strided<[1], offset: ?>>) outs dx(%dx : memref<?x1024xbf16, strided<[?, 1], offset: ?>>) dweight(%dweight : memref<1024xbf16, strided<[1], offset: ?>>)
  return
}
