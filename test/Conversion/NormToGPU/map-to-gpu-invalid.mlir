// RUN: not norm-opt %s --norm-choose-geometry=chip=sm_10 --norm-map-to-gpu=chip=sm_10 2>&1 | FileCheck %s --check-prefix=CHIP
// RUN: not norm-opt %s --norm-choose-geometry=threads=100 --norm-map-to-gpu 2>&1 | FileCheck %s --check-prefix=THREADS
// RUN: not norm-opt %s --norm-choose-geometry=max-lanes=48 --norm-map-to-gpu 2>&1 | FileCheck %s --check-prefix=LANES
// RUN: norm-opt %s --norm-split --norm-choose-geometry --norm-map-to-gpu --verify-diagnostics

// CHIP: norm-choose-geometry: unknown chip 'sm_10'
// THREADS: norm-choose-geometry: threads must be 0 (chosen from N) or a power of two, a multiple of 32 and at most 1024, got 100
// LANES: norm-choose-geometry: max-lanes must be 0 (no cap) or a power of two, got 48

// The faithful form (unfused, materialised xhat) has stages the mapping
// does not take: it needs the whole norm-lower-to-loops first.
func.func @not_lowered_fully(%dy: memref<?x8xf32>, %x: memref<?x8xf32>, %r: memref<?xf32>, %dx: memref<?x8xf32>) {
  // expected-error @+1 {{norm-map-to-gpu: stage 'xhat' cannot be mapped; run norm-lower-to-loops fully first}}
  norm.rms_norm_grad dy(%dy : memref<?x8xf32>) x(%x : memref<?x8xf32>) rstd(%r : memref<?xf32>) outs dx(%dx : memref<?x8xf32>)
  return
}
