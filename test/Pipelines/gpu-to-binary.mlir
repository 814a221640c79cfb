// REQUIRES: cuda-toolkit
// RUN: norm-opt %s --norm-gpu-to-binary="toolkit=%cuda_toolkit" | FileCheck %s --check-prefix=SM90
// RUN: norm-opt %s --norm-gpu-to-binary="chip=sm_80 toolkit=%cuda_toolkit" | FileCheck %s --check-prefix=SM80
// RUN: not norm-opt %s --norm-gpu-to-binary="toolkit=%t.nonexistent" 2>&1 | FileCheck %s --check-prefix=NOTOOLKIT

// A hand-written kernel through the registered GPU tail: one rsqrt per
// element, so the PTX needs libdevice's __nv_rsqrtf resolved.

// SM90: gpu.binary @kernels
// SM90-SAME: .version 8.1
// SM90-SAME: .target sm_90
// SM90-SAME: .entry rsqrt_rows
// SM90-NOT: .extern .func __nv_rsqrtf
// SM90-SAME: rsqrt.approx

// SM80: .target sm_80

// NOTOOLKIT: error: kernel module 'kernels' calls libdevice function '__nv_rsqrtf' but no CUDA toolkit with nvvm/libdevice/libdevice.10.bc was found (tried: {{.*}}.nonexistent); pass toolkit=<path> or set CUDA_HOME

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @rsqrt_rows(%in: memref<?xf32>, %out: memref<?xf32>, %n: index) kernel {
      %tid = gpu.thread_id x
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %base = arith.muli %bid, %bdim : index
      %i = arith.addi %base, %tid : index
      %inb = arith.cmpi ult, %i, %n : index
      scf.if %inb {
        %v = memref.load %in[%i] : memref<?xf32>
        %r = math.rsqrt %v : f32
        memref.store %r, %out[%i] : memref<?xf32>
      }
      gpu.return
    }
  }
}
