// accumulation_type = f64 (documented for CPU reference runs) lowers to
// valid loop nests (issue 8 item 8: norm-fuse-partials emitted IR that did
// not dominate), reaches the LLVM dialect for the CPU, and is refused with a
// clear error by the GPU mapping, whose kernels accumulate in f32.
// RUN: norm-opt %s --norm-lower-to-loops | FileCheck %s
// RUN: norm-opt %s --norm-lower-to-loops --norm-cpu-to-llvm | FileCheck %s --check-prefix=CPU
// RUN: not norm-opt %s --norm-to-gpu-binary 2>&1 | FileCheck %s --check-prefix=GPU

// CHECK-LABEL: func.func @layer_norm_grad_f64
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (f64, f64)
// CHECK: arith.truncf {{.*}} : f64 to bf16
// CHECK: norm.accumulate = f64, {{.*}}norm.stage = #norm.stage<dx>
// CPU: llvm.func @layer_norm_grad_f64
// GPU: error: norm-map-to-gpu: the GPU kernels accumulate in f32, this nest in 'f64' (accumulation_type other than f32 is for CPU runs)
func.func @layer_norm_grad_f64(%dy: memref<?x64xbf16>, %x: memref<?x64xbf16>, %mean: memref<?xf32>,
                               %r: memref<?xf32>, %w: memref<64xbf16>, %dx: memref<?x64xbf16>,
                               %dw: memref<64xbf16>, %db: memref<64xbf16>) {
  norm.layer_norm_grad dy(%dy : memref<?x64xbf16>) x(%x : memref<?x64xbf16>) mean(%mean : memref<?xf32>)
      rstd(%r : memref<?xf32>) weight(%w : memref<64xbf16>)
      outs dx(%dx : memref<?x64xbf16>) dweight(%dw : memref<64xbf16>) dbias(%db : memref<64xbf16>)
      {accumulation_type = f64}
  return
}
