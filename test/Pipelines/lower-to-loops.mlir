// RUN: norm-opt %s --norm-lower-to-loops | FileCheck %s
// RUN: norm-opt %s --norm-lower-to-loops="strategy=grouped_atomic groups=32" | FileCheck %s --check-prefix=OPTS
// RUN: norm-opt %s --norm-lower-to-loops --norm-cpu-to-llvm | FileCheck %s --check-prefix=LLVM

// Tensor input as a frontend emits it, through the whole lowering: no tensor
// and no norm op is left, the row loop nest reads x and dy once, computes
// in f32 and carries the partial dweight.

// CHECK-LABEL: func @rms_norm_grad_bf16_n4096
// CHECK-SAME: -> (memref<?x4096xbf16>, memref<4096xbf16>)
// CHECK-NOT: tensor<
// CHECK-NOT: norm.rms_norm_grad
// CHECK: %[[WS:[^ ]+]] = memref.alloc(%{{.*}}) {norm.workspace} : memref<?x4096xf32>
// CHECK: norm.stage = #norm.stage<zero>
// CHECK: scf.for %[[P:[^ ]+]] =
// CHECK:   scf.for %[[R:[^ ]+]] =
// CHECK:     scf.for %[[J:[^ ]+]] = {{.*}} -> (f32
// CHECK:       arith.extf {{.*}} : bf16 to f32
// CHECK:       memref.store {{.*}}, %[[WS]][%[[P]], %[[J]]]
// CHECK:     scf.for
// CHECK:       arith.truncf {{.*}} : f32 to bf16
// CHECK: norm.stage = #norm.stage<dx>
// CHECK: norm.stage = #norm.stage<reduce>

// OPTS: arith.constant 32 : index
// OPTS: memref.atomic_rmw addf

// LLVM-LABEL: llvm.func @rms_norm_grad_bf16_n4096
// LLVM-NOT: scf.
// LLVM-NOT: memref.
func.func @rms_norm_grad_bf16_n4096(%dy: tensor<?x4096xbf16>, %x: tensor<?x4096xbf16>,
                                    %rstd: tensor<?xf32>, %w: tensor<4096xbf16>)
    -> (tensor<?x4096xbf16>, tensor<4096xbf16>) {
  %dx, %dw = norm.rms_norm_grad dy(%dy : tensor<?x4096xbf16>) x(%x : tensor<?x4096xbf16>)
      rstd(%rstd : tensor<?xf32>) weight(%w : tensor<4096xbf16>)
      -> dx(tensor<?x4096xbf16>) dweight(tensor<4096xbf16>)
  return %dx, %dw : tensor<?x4096xbf16>, tensor<4096xbf16>
}
