// RUN: norm-opt %s --pass-pipeline="builtin.module(gpu.module(norm-align-workgroup-memory))" | FileCheck %s

// CHECK-LABEL: gpu.func @k
// CHECK-SAME: workgroup(%{{.*}} : memref<4095xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %{{.*}} : memref<8xf32, #gpu.address_space<workgroup>> {llvm.align = 32 : i64})
gpu.module @kernels {
  gpu.func @k() workgroup(%a : memref<4095xf32, #gpu.address_space<workgroup>>,
                          %b : memref<8xf32, #gpu.address_space<workgroup>> {llvm.align = 32 : i64}) kernel {
    gpu.return
  }
}
