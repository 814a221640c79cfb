// A pass given input of the wrong stage says so and fails, instead of
// passing the IR through; and no error dumps IR (no "see current
// operation" note unless the user asks for it).
// RUN: not norm-opt %s --norm-map-to-gpu 2>&1 | FileCheck %s --check-prefix=MAP --implicit-check-not="see current operation"
// RUN: not norm-opt %s --norm-gpu-to-binary 2>&1 | FileCheck %s --check-prefix=TAIL --implicit-check-not="see current operation"
// RUN: not norm-opt %s --norm-lower-to-loops --norm-gpu-to-binary 2>&1 | FileCheck %s --check-prefix=NEST --implicit-check-not="see current operation"
// RUN: not norm-opt %s --norm-to-gpu-binary=format=garbage 2>&1 | FileCheck %s --check-prefix=FORMAT --implicit-check-not="see current operation"
// RUN: not norm-opt %s --norm-to-gpu-binary=chip=sm_99 2>&1 | FileCheck %s --check-prefix=CHIP --implicit-check-not="see current operation"

// MAP: error: norm-map-to-gpu: 'norm.rms_norm_grad' is not lowered to loops yet; run norm-lower-to-loops first (or the whole pipeline, norm-to-gpu-binary)
// TAIL: error: norm-gpu-to-binary: 'norm.rms_norm_grad' is not lowered to kernels yet; run norm-lower-to-loops and norm-map-to-gpu first, or the whole pipeline, norm-to-gpu-binary
// NEST: error: norm-gpu-to-binary: 'scf.for' (a tagged norm nest) is not lowered to kernels yet
// FORMAT: error: norm-gpu-to-binary: format 'garbage' is not one of isa, bin, fatbin
// CHIP: error: norm-choose-geometry: unknown chip 'sm_99' (known: sm_80, sm_86, sm_89, sm_90, sm_90a)
func.func @rms(%dy: memref<?x64xf32>, %x: memref<?x64xf32>, %r: memref<?xf32>,
               %w: memref<64xf32>, %dx: memref<?x64xf32>, %dw: memref<64xf32>) {
  norm.rms_norm_grad dy(%dy : memref<?x64xf32>) x(%x : memref<?x64xf32>) rstd(%r : memref<?xf32>)
      weight(%w : memref<64xf32>) outs dx(%dx : memref<?x64xf32>) dweight(%dw : memref<64xf32>)
  return
}
