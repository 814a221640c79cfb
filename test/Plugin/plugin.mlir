// The stock mlir-opt-22 loads our plugin: the dialect plugin adds `norm`, the
// pass plugin adds our passes and pipelines (named inside --pass-pipeline).
// RUN: %norm_preload mlir-opt %s --load-dialect-plugin=%norm_plugin | FileCheck %s --check-prefix=DIALECT
// RUN: %norm_preload mlir-opt %S/Inputs/kernels.mlir --load-dialect-plugin=%norm_plugin --load-pass-plugin=%norm_plugin --pass-pipeline="builtin.module(norm-gpu-to-binary{chip=sm_80 toolkit=%cuda_toolkit})" | FileCheck %s --check-prefix=PASS
// RUN: not %norm_preload mlir-opt %s --load-dialect-plugin=%norm_plugin --load-pass-plugin=%norm_plugin --pass-pipeline="builtin.module(norm-gpu-to-binary{chip=sm_80 toolkit=%cuda_toolkit})" 2>&1 | FileCheck %s --check-prefix=STAGE
// RUN: not %norm_preload mlir-opt %s 2>&1 | FileCheck %s --check-prefix=NOPLUGIN
// Tensor form, the whole compiler: the dialect plugin also attaches the ops'
// One-Shot Bufferize model (it used to stop at "op was not bufferized").
// RUN: %norm_preload mlir-opt %norm_src/examples/layer_norm_grad.mlir --load-dialect-plugin=%norm_plugin --load-pass-plugin=%norm_plugin --pass-pipeline="builtin.module(norm-to-gpu-binary{chip=sm_90 toolkit=%cuda_toolkit})" | FileCheck %s --check-prefix=TENSOR
// TENSOR: gpu.launch_func @layer_norm_grad_bf16_n4096_kernels::@layer_norm_grad_bf16_n4096_dx_1
// TENSOR: gpu.binary @layer_norm_grad_bf16_n4096_kernels
// REQUIRES: cuda-toolkit

// DIALECT-LABEL: func @rms_norm_grad
// DIALECT: norm.rms_norm_grad dy(%{{[^ ]+}} : tensor<?x24xbf16>)
// DIALECT: gpu.module @kernels

// PASS: gpu.binary @kernels
// PASS-SAME: .target sm_80

// The GPU tail given norm ops (not lowered yet) says so.
// STAGE: error: norm-gpu-to-binary: 'norm.rms_norm_grad' is not lowered to kernels yet

// NOPLUGIN: Dialect `norm' not found for custom op 'norm.rms_norm_grad'

module attributes {gpu.container_module} {
  func.func @rms_norm_grad(%dy: tensor<?x24xbf16>, %x: tensor<?x24xbf16>,
                           %rstd: tensor<?xf32>) -> tensor<?x24xbf16> {
    %dx = norm.rms_norm_grad dy(%dy : tensor<?x24xbf16>) x(%x : tensor<?x24xbf16>)
        rstd(%rstd : tensor<?xf32>) -> dx(tensor<?x24xbf16>)
    return %dx : tensor<?x24xbf16>
  }
  gpu.module @kernels {
    gpu.func @scale(%buf: memref<?xf32>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %buf[%i] : memref<?xf32>
      %r = math.rsqrt %v : f32
      memref.store %r, %buf[%i] : memref<?xf32>
      gpu.return
    }
  }
}
