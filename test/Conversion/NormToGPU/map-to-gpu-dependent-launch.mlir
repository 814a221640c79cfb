// RUN: norm-opt %s --split-input-file --norm-lower-to-loops --norm-choose-geometry --norm-map-to-gpu | FileCheck %s
// RUN: norm-opt %s --split-input-file --norm-lower-to-loops --norm-choose-geometry --norm-map-to-gpu=dependent-launch=false | FileCheck %s --check-prefix=OFF
// RUN: norm-opt %s --split-input-file --norm-lower-to-loops --norm-choose-geometry=chip=sm_80 --norm-map-to-gpu=chip=sm_80 | FileCheck %s --check-prefix=OFF

// Dependent launches (`dependent-launch`, on by default; docs/GPU.md
// "Dependent launches"): on sm_90 every kernel's first two operations are
// `griddepcontrol.wait` (the grids before it in the stream have ended and
// their memory is visible) and `griddepcontrol.launch_dependents` (the
// grid after it may be scheduled once all of this one's blocks are here),
// as inline PTX that clobbers memory, so no access moves above the wait
// (only the index arithmetic sunk into the launch comes before them).
// Each kernel is recorded `waits = true`, for the runtime to launch it
// with programmatic stream serialization. sm_80 has no griddepcontrol,
// and the option off leaves every kernel as before.

// The deterministic backward: the dx kernel and the reduce kernel.
// CHECK-LABEL: func @layer_norm_grad_n4096
// CHECK-SAME: #norm.kernel<name = "layer_norm_grad_n4096_dx_1", kind = dx, {{[^>]*}}, waits = true>
// CHECK-SAME: #norm.kernel<name = "layer_norm_grad_n4096_reduce_2", kind = reduce, {{[^>]*}}, waits = true, skip_at_one_group = true>
// CHECK:      gpu.launch {{.*}} function(@layer_norm_grad_n4096_dx_1)
// CHECK-NOT:    {{memref|vector}}.{{load|store}}
// CHECK:   llvm.inline_asm has_side_effects "griddepcontrol.wait;", "~{memory}"  : () -> ()
// CHECK-NEXT:   llvm.inline_asm has_side_effects "griddepcontrol.launch_dependents;", "~{memory}"  : () -> ()
// CHECK:      gpu.launch {{.*}} function(@layer_norm_grad_n4096_reduce_2)
// CHECK-NOT:    {{memref|vector}}.{{load|store}}
// CHECK:   llvm.inline_asm has_side_effects "griddepcontrol.wait;", "~{memory}"  : () -> ()
// CHECK-NEXT:   llvm.inline_asm has_side_effects "griddepcontrol.launch_dependents;", "~{memory}"  : () -> ()
// OFF-LABEL: func @layer_norm_grad_n4096
// OFF-NOT: waits
// OFF-NOT: griddepcontrol
// OFF: return
func.func @layer_norm_grad_n4096(%dy: memref<?x4096xbf16>, %x: memref<?x4096xbf16>, %mean: memref<?xf32>,
                                 %rstd: memref<?xf32>, %w: memref<4096xbf16>, %dx: memref<?x4096xbf16>,
                                 %dw: memref<4096xbf16>, %db: memref<4096xbf16>) {
  norm.layer_norm_grad dy(%dy : memref<?x4096xbf16>) x(%x : memref<?x4096xbf16>) mean(%mean : memref<?xf32>)
      rstd(%rstd : memref<?xf32>) weight(%w : memref<4096xbf16>)
      outs dx(%dx : memref<?x4096xbf16>) dweight(%dw : memref<4096xbf16>) dbias(%db : memref<4096xbf16>)
  return
}

// -----

// An accumulating strategy: the zero kernel waits too (the kernel before
// it in the stream may still read the workspace it clears).
// CHECK-LABEL: func @rms_norm_grad_atomic
// CHECK-SAME: #norm.kernel<name = "rms_norm_grad_atomic_zero_0", kind = zero, {{[^>]*}}, waits = true>
// CHECK:      gpu.launch {{.*}} function(@rms_norm_grad_atomic_zero_0)
// CHECK-NOT:    {{memref|vector}}.{{load|store}}
// CHECK:   llvm.inline_asm has_side_effects "griddepcontrol.wait;"
// CHECK-NEXT:   llvm.inline_asm has_side_effects "griddepcontrol.launch_dependents;"
// CHECK:      gpu.launch {{.*}} function(@rms_norm_grad_atomic_dx_1)
// CHECK-NOT:    {{memref|vector}}.{{load|store}}
// CHECK:   llvm.inline_asm has_side_effects "griddepcontrol.wait;"
// OFF-LABEL: func @rms_norm_grad_atomic
// OFF-NOT: waits
// OFF-NOT: griddepcontrol
// OFF: return
func.func @rms_norm_grad_atomic(%dy: memref<?x2048xbf16>, %x: memref<?x2048xbf16>, %rstd: memref<?xf32>,
                                %w: memref<2048xbf16>, %dx: memref<?x2048xbf16>, %dw: memref<2048xbf16>) {
  norm.rms_norm_grad dy(%dy : memref<?x2048xbf16>) x(%x : memref<?x2048xbf16>) rstd(%rstd : memref<?xf32>)
      weight(%w : memref<2048xbf16>) outs dx(%dx : memref<?x2048xbf16>) dweight(%dw : memref<2048xbf16>)
      {strategy = #norm.strategy<atomic>}
  return
}

// -----

// The forward kernel: it reads x, which the grid before it may still be
// writing.
// CHECK-LABEL: func @rms_norm_n2048
// CHECK-SAME: #norm.kernel<name = "rms_norm_n2048_forward_0", kind = forward, {{[^>]*}}, waits = true>
// CHECK:      gpu.launch {{.*}} function(@rms_norm_n2048_forward_0)
// CHECK-NOT:    {{memref|vector}}.{{load|store}}
// CHECK:   llvm.inline_asm has_side_effects "griddepcontrol.wait;"
// CHECK-NEXT:   llvm.inline_asm has_side_effects "griddepcontrol.launch_dependents;"
// OFF-LABEL: func @rms_norm_n2048
// OFF-NOT: waits
// OFF-NOT: griddepcontrol
// OFF: return
func.func @rms_norm_n2048(%x: memref<?x2048xbf16>, %w: memref<2048xbf16>, %y: memref<?x2048xbf16>,
                          %rstd: memref<?xf32>) {
  norm.rms_norm x(%x : memref<?x2048xbf16>) weight(%w : memref<2048xbf16>) outs y(%y : memref<?x2048xbf16>) rstd(%rstd : memref<?xf32>)
  return
}
