// RUN: norm-opt %s --pass-pipeline="builtin.module(gpu.module(norm-extern-dynamic-shared))" | FileCheck %s
// The whole tail: gpu.dynamic_shared_memory ends up as the extern
// zero-sized array NVPTX declares for the launch's dynamic shared memory,
// not demoted into the kernel's static shared memory.
// RUN: norm-opt %s --pass-pipeline="builtin.module(gpu.module(convert-gpu-to-nvvm, norm-extern-dynamic-shared))" | FileCheck %s --check-prefix=TAIL

// The zero-sized shared global turns external; a sized one and a
// zero-sized global of another address space stay as they are.
// CHECK: llvm.mlir.global external @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
// CHECK: llvm.mlir.global internal @static_buffer() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<32 x i8>
// CHECK: llvm.mlir.global internal @global_empty() {addr_space = 1 : i32} : !llvm.array<0 x i8>
gpu.module @kernels {
  llvm.mlir.global internal @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
  llvm.mlir.global internal @static_buffer() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<32 x i8>
  llvm.mlir.global internal @global_empty() {addr_space = 1 : i32} : !llvm.array<0 x i8>
}

// TAIL: llvm.mlir.global external @__dynamic_shmem__{{[0-9]+}}() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
// TAIL-NOT: llvm.mlir.global internal @__dynamic_shmem__
gpu.module @lowered {
  gpu.func @k(%v: f32) kernel {
    %c0 = arith.constant 0 : index
    %d = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
    %s = memref.view %d[%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64xf32, #gpu.address_space<workgroup>>
    memref.store %v, %s[%c0] : memref<64xf32, #gpu.address_space<workgroup>>
    gpu.return
  }
}
