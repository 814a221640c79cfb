// RUN: norm-opt %s --norm-choose-geometry=prefetch=1 | FileCheck %s
// RUN: norm-opt %s --norm-choose-geometry | FileCheck %s --check-prefix=NONE
// RUN: not norm-opt %s --norm-choose-geometry="chip=sm_80 prefetch=1" 2>&1 | FileCheck %s --check-prefix=SM80
// RUN: not norm-opt %s --norm-choose-geometry=prefetch=5 2>&1 | FileCheck %s --check-prefix=RANGE

// The `prefetch` option: the dx kernel's geometry prefetches one wave of
// rows ahead into L2; the forward kernel's block has no row ahead, so it
// keeps none. Its layout, threads and chunks are the cost model's: the
// prefetch changes no other choice (and no result bit). sm_80 has no bulk
// prefetch.
// CHECK-LABEL: func.func @prefetch
// CHECK: norm.rms_norm_grad {{.*}}norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 2, partials = shared, prefetch = 1, shared = 16448>
// CHECK: norm.rms_norm {{.*}}norm.geometry = #norm.row_geometry<
// CHECK-NOT: prefetch =
// NONE-NOT: prefetch =
// SM80: norm-choose-geometry: prefetch=1 needs cp.async.bulk.prefetch, which sm_80 does not have (sm_90 and newer do)
// RANGE: norm-choose-geometry: prefetch must be 0 (none, or the tuning table's) to 4, got 5
func.func @prefetch(%dy: memref<?x4096xbf16>, %x: memref<?x4096xbf16>, %rstd: memref<?xf32>, %dx: memref<?x4096xbf16>, %w: memref<4096xbf16>, %dw: memref<4096xbf16>, %y: memref<?x4096xbf16>, %r: memref<?xf32>) {
  norm.rms_norm_grad dy(%dy : memref<?x4096xbf16>) x(%x : memref<?x4096xbf16>) rstd(%rstd : memref<?xf32>) weight(%w : memref<4096xbf16>) outs dx(%dx : memref<?x4096xbf16>) dweight(%dw : memref<4096xbf16>)
  norm.rms_norm x(%x : memref<?x4096xbf16>) outs y(%y : memref<?x4096xbf16>) rstd(%r : memref<?xf32>)
  return
}
