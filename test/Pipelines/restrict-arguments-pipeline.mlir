// RUN: norm-opt %s --norm-to-gpu-binary='format=isa rows=4096' --mlir-print-ir-after=norm-restrict-kernel-arguments -o /dev/null 2>&1 | FileCheck %s
// RUN: norm-opt %s --norm-to-gpu-binary='format=isa rows=4096 restrict-arguments=false' --mlir-print-ir-after=norm-restrict-kernel-arguments -o /dev/null 2>&1 | FileCheck %s --check-prefix=OFF
// RUN: norm-opt %s --norm-to-gpu-binary='format=isa rows=4096' | FileCheck %s --check-prefix=PTX

// The whole pipeline on an RMSNorm backward as norm-compile builds it: the
// dx kernel takes (x, weight, dy, dx, rstd, workspace) and reads x, weight
// and rstd through noalias read-only pointers; dy and dx (dx may be dy
// itself) and the workspace stay may-alias. The reduce kernel's dweight is
// noalias. The host function keeps no marks.
// CHECK-LABEL: llvm.func @norm_kernel_dx_1(
// CHECK-SAME: %arg0: !llvm.ptr, %arg1: !llvm.ptr {llvm.noalias, llvm.readonly}, %arg2: i64
// CHECK-SAME: %arg7: !llvm.ptr, %arg8: !llvm.ptr {llvm.noalias, llvm.readonly}, %arg9: i64
// CHECK-SAME: %arg12: !llvm.ptr, %arg13: !llvm.ptr, %arg14: i64
// CHECK-SAME: %arg19: !llvm.ptr, %arg20: !llvm.ptr, %arg21: i64
// CHECK-SAME: %arg26: !llvm.ptr, %arg27: !llvm.ptr {llvm.noalias, llvm.readonly}, %arg28: i64
// CHECK-SAME: %arg31: !llvm.ptr, %arg32: !llvm.ptr, %arg33: i64
// CHECK-LABEL: llvm.func @norm_kernel_reduce_2(
// CHECK-SAME: %arg14: !llvm.ptr, %arg15: !llvm.ptr {llvm.noalias}, %arg16: i64
// CHECK-NOT: norm.noalias
// OFF-NOT: llvm.noalias
// The read-only pointers are read with ld.global.nc.
// PTX: ld.global.nc
func.func @norm_kernel(%dy: memref<?x1024xbf16, strided<[?, 1], offset: ?>>, %x: memref<?x1024xbf16, strided<[?, 1], offset: ?>>, %rstd: memref<?xf32, strided<[1], offset: ?>>, %weight: memref<1024xbf16, strided<[1], offset: ?>>, %dx: memref<?x1024xbf16, strided<[?, 1], offset: ?>>, %dweight: memref<1024xbf16, strided<[1], offset: ?>>) {
  norm.rms_norm_grad dy(%dy : memref<?x1024xbf16, strided<[?, 1], offset: ?>>) x(%x : memref<?x1024xbf16, strided<[?, 1], offset: ?>>) rstd(%rstd : memref<?xf32, strided<[1], offset: ?>>) weight(%weight : memref<1024xbf16, strided<[1], offset: ?>>) outs dx(%dx : memref<?x1024xbf16, strided<[?, 1], offset: ?>>) dweight(%dweight : memref<1024xbf16, strided<[1], offset: ?>>)
  return
}
