// Any int64 is a valid norm.id: INT64_MAX and INT64_MIN were DenseMap's
// empty and tombstone keys, so fusion silently skipped those nests (issue 8
// item 4).
// RUN: norm-opt %s --norm-split --norm-recompute-loops --norm-promote \
// RUN:   | sed 's/norm.id = 0 : i64/norm.id = 9223372036854775807 : i64/g' \
// RUN:   | norm-opt --norm-fuse-partials | FileCheck %s
// RUN: norm-opt %s --norm-split --norm-recompute-loops --norm-promote \
// RUN:   | sed 's/norm.id = 0 : i64/norm.id = -9223372036854775808 : i64/g' \
// RUN:   | norm-opt --norm-fuse-partials | FileCheck %s

// CHECK-LABEL: func @rms_norm_grad
// CHECK-NOT: norm.stage = #norm.stage<partials>
// CHECK: norm.stage = #norm.stage<dx>
// CHECK: norm.stage = #norm.stage<reduce>
func.func @rms_norm_grad(%dy: memref<?x8xf32>, %x: memref<?x8xf32>, %r: memref<?xf32>,
                         %w: memref<8xf32>, %dx: memref<?x8xf32>, %dw: memref<8xf32>) {
  norm.rms_norm_grad dy(%dy : memref<?x8xf32>) x(%x : memref<?x8xf32>) rstd(%r : memref<?xf32>)
      weight(%w : memref<8xf32>) outs dx(%dx : memref<?x8xf32>) dweight(%dw : memref<8xf32>)
  return
}
