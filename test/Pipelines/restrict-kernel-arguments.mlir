// RUN: norm-opt %s --split-input-file --norm-restrict-kernel-arguments=rows=1 | FileCheck %s
// RUN: norm-opt %s --split-input-file --norm-restrict-kernel-arguments="rows=1 apply=false" | FileCheck %s --check-prefix=OFF
// RUN: norm-opt %s --split-input-file --norm-restrict-kernel-arguments | FileCheck %s --check-prefix=OFF
// RUN: norm-opt %s --split-input-file --norm-restrict-kernel-arguments=rows=100000 | FileCheck %s --check-prefix=OFF
// RUN: norm-opt %s --split-input-file --norm-restrict-kernel-arguments=rows=1 | FileCheck %s --check-prefix=NORES
// RUN: norm-opt %s --split-input-file --norm-restrict-kernel-arguments="rows=1 resident=true" | FileCheck %s --check-prefix=RES

// The cost rule (Geometry.h restrictPays) takes the forward kernels whose
// launch at the last M of the hint's bucket is one wave: @k, 256 threads
// of 8 rows, at rows=1 (bucket 1-128: 16 blocks). With no hint, or past
// the last bucket (rows=100000), nothing is restricted (OFF).

// Operand 0 (rank 2: parameters 0-6) is a read-only marked argument, so
// its aligned pointer (parameter 1) gets noalias and readonly; operand 1
// (rank 1: parameters 7-11) is a marked output: noalias on parameter 8;
// operand 2 (parameters 12-14, an unmarked argument: dy) gets nothing, nor
// does the index operand (parameter 15). The marks leave the host
// function.
// CHECK-LABEL: llvm.func @k(
// CHECK-SAME: %{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: !llvm.ptr {llvm.noalias, llvm.readonly}, %{{[a-z0-9]+}}: i64,
// CHECK-SAME: %{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: !llvm.ptr {llvm.noalias}, %{{[a-z0-9]+}}: i64, %{{[a-z0-9]+}}: i64, %{{[a-z0-9]+}}: i64, %{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: i64, %{{[a-z0-9]+}}: i64)
// CHECK: func.func @host(%{{[a-z0-9]+}}: memref<?x8xf32>, %{{[a-z0-9]+}}: memref<8xf32>, %{{[a-z0-9]+}}: memref<f32>, %{{[a-z0-9]+}}: index)
// OFF-LABEL: llvm.func @k(
// OFF-NOT: llvm.noalias
// OFF: func.func @host(%{{[a-z0-9]+}}: memref<?x8xf32>, %{{[a-z0-9]+}}: memref<8xf32>, %{{[a-z0-9]+}}: memref<f32>, %{{[a-z0-9]+}}: index)
module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.func @k(%a0: !llvm.ptr, %a1: !llvm.ptr, %a2: i64, %a3: i64, %a4: i64, %a5: i64, %a6: i64,
                 %b0: !llvm.ptr, %b1: !llvm.ptr, %b2: i64, %b3: i64, %b4: i64,
                 %c0: !llvm.ptr, %c1: !llvm.ptr, %c2: i64,
                 %n: i64) attributes {gpu.kernel, nvvm.kernel} {
      llvm.return
    }
  }
  func.func @host(%x: memref<?x8xf32> {norm.noalias, norm.readonly},
                  %y: memref<8xf32> {norm.noalias}, %dy: memref<f32>,
                  %n: index) attributes {norm.kernels = [#norm.kernel<name = "k", kind = forward, block = 256, grid = row_blocks, rows = 8>]} {
    %c1 = arith.constant 1 : index
    gpu.launch_func @kernels::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<?x8xf32>, %y : memref<8xf32>, %dy : memref<f32>, %n : index)
    return
  }
}

// -----

// A kernel launched twice gets only what both launches allow: the second
// passes an unmarked argument as operand 0 and the marked one twice as
// operands 1 and 2 (the same buffer at two pointers: neither is noalias).
// CHECK-LABEL: llvm.func @twice(
// CHECK-NOT: llvm.noalias
// CHECK: func.func @host
module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.func @twice(%a0: !llvm.ptr, %a1: !llvm.ptr, %a2: i64,
                     %b0: !llvm.ptr, %b1: !llvm.ptr, %b2: i64,
                     %c0: !llvm.ptr, %c1: !llvm.ptr, %c2: i64) attributes {gpu.kernel, nvvm.kernel} {
      llvm.return
    }
  }
  func.func @host(%p: memref<f32> {norm.noalias, norm.readonly},
                  %q: memref<f32> {norm.noalias, norm.readonly},
                  %r: memref<f32>) attributes {norm.kernels = [#norm.kernel<name = "twice", kind = forward, block = 256, grid = row_blocks, rows = 8>]} {
    %c1 = arith.constant 1 : index
    gpu.launch_func @kernels::@twice blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%p : memref<f32>, %p : memref<f32>, %q : memref<f32>)
    gpu.launch_func @kernels::@twice blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%r : memref<f32>, %q : memref<f32>, %q : memref<f32>)
    return
  }
}

// -----

// A view among the operands may overlap any argument: nothing of that
// launch is noalias. A kernel whose parameters are not the descriptors of
// its operands (here: bare pointers) is left alone.
// CHECK-LABEL: llvm.func @viewed(
// CHECK-NOT: llvm.noalias
// CHECK-LABEL: llvm.func @bare(
// CHECK-NOT: llvm.noalias
// CHECK: func.func @host
module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.func @viewed(%a0: !llvm.ptr, %a1: !llvm.ptr, %a2: i64, %a3: i64, %a4: i64,
                      %b0: !llvm.ptr, %b1: !llvm.ptr, %b2: i64, %b3: i64, %b4: i64) attributes {gpu.kernel, nvvm.kernel} {
      llvm.return
    }
    llvm.func @bare(%a0: !llvm.ptr, %b0: !llvm.ptr) attributes {gpu.kernel, nvvm.kernel} {
      llvm.return
    }
  }
  func.func @host(%p: memref<8xf32> {norm.noalias, norm.readonly},
                  %q: memref<8xf32> {norm.noalias}) attributes {norm.kernels = [#norm.kernel<name = "viewed", kind = forward, block = 256, grid = row_blocks, rows = 8>, #norm.kernel<name = "bare", kind = forward, block = 256, grid = row_blocks, rows = 8>]} {
    %c1 = arith.constant 1 : index
    %v = memref.subview %p[0] [8] [1] : memref<8xf32> to memref<8xf32, strided<[1]>>
    %w = memref.cast %v : memref<8xf32, strided<[1]>> to memref<8xf32>
    gpu.launch_func @kernels::@viewed blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%w : memref<8xf32>, %q : memref<8xf32>)
    gpu.launch_func @kernels::@bare blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%p : memref<8xf32>, %q : memref<8xf32>)
    return
  }
}

// -----

// The rule: a dx kernel is never restricted; a forward kernel whose
// launch is more than one wave at the bucket's last M is not (@wide: one
// row a block of 1024 threads at M = 128 is 128 blocks, 2 an SM at full
// occupancy: one wave; @many: 1024 threads of 1 row in clusters of 8: 1024
// blocks, more than 264); a kernel without a record is not.
// CHECK-LABEL: llvm.func @dx(
// CHECK-NOT: llvm.noalias
// CHECK-LABEL: llvm.func @wide(
// CHECK-SAME: !llvm.ptr {llvm.noalias, llvm.readonly}
// CHECK-LABEL: llvm.func @many(
// CHECK-NOT: llvm.noalias
// CHECK-LABEL: llvm.func @unrecorded(
// CHECK-NOT: llvm.noalias
// CHECK: func.func @host
module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.func @dx(%a0: !llvm.ptr, %a1: !llvm.ptr, %a2: i64) attributes {gpu.kernel, nvvm.kernel} {
      llvm.return
    }
    llvm.func @wide(%a0: !llvm.ptr, %a1: !llvm.ptr, %a2: i64) attributes {gpu.kernel, nvvm.kernel} {
      llvm.return
    }
    llvm.func @many(%a0: !llvm.ptr, %a1: !llvm.ptr, %a2: i64) attributes {gpu.kernel, nvvm.kernel} {
      llvm.return
    }
    llvm.func @unrecorded(%a0: !llvm.ptr, %a1: !llvm.ptr, %a2: i64) attributes {gpu.kernel, nvvm.kernel} {
      llvm.return
    }
  }
  func.func @host(%p: memref<f32> {norm.noalias, norm.readonly}) attributes {norm.kernels = [#norm.kernel<name = "dx", kind = dx, block = 256, grid = programs, rows = 1>, #norm.kernel<name = "wide", kind = forward, block = 1024, grid = row_blocks, rows = 1>, #norm.kernel<name = "many", kind = forward, block = 1024, grid = row_blocks, rows = 1, cluster = 8>]} {
    %c1 = arith.constant 1 : index
    gpu.launch_func @kernels::@dx blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%p : memref<f32>)
    gpu.launch_func @kernels::@wide blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%p : memref<f32>)
    gpu.launch_func @kernels::@many blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%p : memref<f32>)
    gpu.launch_func @kernels::@unrecorded blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%p : memref<f32>)
    return
  }
}

// -----

// With resident=true (RES; off by default) the blocks an SM the rule
// counted on (restrictBlocksPerSM: the launch at the bucket's last M, M =
// 128 here, over sm_90's 132 SMs) go on each restricted kernel as
// nvvm.minctasm, ptxas's .minnctapersm: @one, 256 threads of 8 rows, 16
// blocks, one an SM; @eight, a row over a cluster of 8 blocks of 128
// threads, 1024 blocks, eight an SM. A kernel the rule does not restrict
// (@dx2) gets none; by default (NORES) or with no restriction at all
// (OFF) no kernel has one.
// RES-LABEL: llvm.func @one(
// RES-SAME: nvvm.minctasm = 1 : i32
// RES-LABEL: llvm.func @eight(
// RES-SAME: nvvm.minctasm = 8 : i32
// RES-LABEL: llvm.func @dx2(
// RES-NOT: nvvm.minctasm
// RES: func.func @host
// NORES-LABEL: llvm.func @one(
// NORES-SAME: {llvm.noalias, llvm.readonly}
// NORES-NOT: nvvm.minctasm
// NORES: func.func @host
// OFF-LABEL: llvm.func @one(
// OFF-NOT: nvvm.minctasm
// OFF: func.func @host
module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.func @one(%a0: !llvm.ptr, %a1: !llvm.ptr, %a2: i64) attributes {gpu.kernel, nvvm.kernel} {
      llvm.return
    }
    llvm.func @eight(%a0: !llvm.ptr, %a1: !llvm.ptr, %a2: i64) attributes {gpu.kernel, nvvm.kernel} {
      llvm.return
    }
    llvm.func @dx2(%a0: !llvm.ptr, %a1: !llvm.ptr, %a2: i64) attributes {gpu.kernel, nvvm.kernel} {
      llvm.return
    }
  }
  func.func @host(%p: memref<f32> {norm.noalias, norm.readonly}) attributes {norm.kernels = [#norm.kernel<name = "one", kind = forward, block = 256, grid = row_blocks, rows = 8>, #norm.kernel<name = "eight", kind = forward, block = 128, grid = row_blocks, rows = 1, cluster = 8>, #norm.kernel<name = "dx2", kind = dx, block = 256, grid = programs, rows = 1>]} {
    %c1 = arith.constant 1 : index
    gpu.launch_func @kernels::@one blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%p : memref<f32>)
    gpu.launch_func @kernels::@eight blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%p : memref<f32>)
    gpu.launch_func @kernels::@dx2 blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%p : memref<f32>)
    return
  }
}
