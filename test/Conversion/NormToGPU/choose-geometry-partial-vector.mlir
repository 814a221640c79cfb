// RUN: norm-opt %s --split-input-file --norm-choose-geometry="tuning=false partial-vector=4" | FileCheck %s
// RUN: norm-opt %s --split-input-file --norm-choose-geometry=tuning=false | FileCheck %s --check-prefix=NONE
// RUN: not norm-opt %s --split-input-file --norm-choose-geometry="partial-vector=3" 2>&1 | FileCheck %s --check-prefix=RANGE

// The `partial-vector` option: where the dx kernel keeps its partial rows
// in shared memory (one row in flight), its lanes keep that many sums side
// by side; the threads, chunks and layout stay the cost model's (no result
// bit changes). The forward kernel has no partial rows: untouched. The
// default (0) is the tuning table's, else 1, which the attribute elides.
// CHECK-LABEL: func.func @grouped
// CHECK: norm.rms_norm_grad {{.*}}norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 2, partials = shared, partial_vector = 4, shared = 16448>
// CHECK: norm.rms_norm {{.*}}norm.geometry = #norm.row_geometry<
// CHECK-NOT: partial_vector
// NONE-LABEL: func.func @grouped
// NONE-NOT: partial_vector
// RANGE: norm-choose-geometry: partial-vector must be 0 (the tuning table's, else 1), 1, 2 or 4, got 3
func.func @grouped(%dy: memref<?x4096xbf16>, %x: memref<?x4096xbf16>, %rstd: memref<?xf32>, %dx: memref<?x4096xbf16>, %w: memref<4096xbf16>, %dw: memref<4096xbf16>, %y: memref<?x4096xbf16>, %r: memref<?xf32>) {
  norm.rms_norm_grad dy(%dy : memref<?x4096xbf16>) x(%x : memref<?x4096xbf16>) rstd(%rstd : memref<?xf32>) weight(%w : memref<4096xbf16>) outs dx(%dx : memref<?x4096xbf16>) dweight(%dw : memref<4096xbf16>)
  norm.rms_norm x(%x : memref<?x4096xbf16>) outs y(%y : memref<?x4096xbf16>) rstd(%r : memref<?xf32>)
  return
}
