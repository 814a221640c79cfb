//===- Passes.td - norm pipeline support passes ------------*- tablegen -*-===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_PIPELINES_PASSES_TD
#define NORM_PIPELINES_PASSES_TD

include "mlir/Pass/PassBase.td"

def NormCheckLibdevice : Pass<"norm-check-libdevice", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Fail when a kernel calls libdevice but no CUDA toolkit is found";
  let description = [{
    `convert-gpu-to-nvvm` turns math ops such as `math.rsqrt` into calls to
    libdevice functions (`__nv_rsqrtf`). `gpu-module-to-binary` links
    libdevice only when it finds a CUDA toolkit; otherwise the PTX silently
    keeps `.extern .func __nv_rsqrtf` and fails later in ptxas or at module
    load. This pass runs after `convert-gpu-to-nvvm` and turns that into an
    error at compile time that names the function and the places searched.

    Before (no toolkit at `toolkit=/nonexistent`):

    ```mlir
    gpu.module @k {
      llvm.func @__nv_rsqrtf(f32) -> f32
      ...
    }
    ```

    After: `error: kernel module 'k' calls libdevice function '__nv_rsqrtf'
    but no CUDA toolkit with nvvm/libdevice/libdevice.10.bc was found ...`.

    Post-condition: every `__nv_*` declaration can be resolved from the
    toolkit that `gpu-module-to-binary` is given.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
  let options = [
    Option<"toolkit", "toolkit", "std::string", /*default=*/"\"\"",
           "CUDA toolkit root; empty: $CUDA_HOME, $CUDA_PATH, $CUDA_ROOT, "
           "then the build's default">
  ];
}

#endif // NORM_PIPELINES_PASSES_TD
