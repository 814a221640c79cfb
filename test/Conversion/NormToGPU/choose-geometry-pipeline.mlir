// RUN: norm-opt %s --split-input-file --norm-choose-geometry="tuning=false pipeline=1 narrow-cache=1" | FileCheck %s
// RUN: norm-opt %s --split-input-file --norm-choose-geometry=tuning=false | FileCheck %s --check-prefix=NONE
// RUN: not norm-opt %s --split-input-file --norm-choose-geometry="pipeline=2" 2>&1 | FileCheck %s --check-prefix=RANGE
// RUN: not norm-opt %s --split-input-file --norm-choose-geometry="narrow-cache=3" 2>&1 | FileCheck %s --check-prefix=NARROW

// The `pipeline` and `narrow-cache` options: a register-regime dx kernel
// loads the next wave's row ahead into registers (in the aligned body of two,
// so a kernel whose cost-model layout is `vector` takes `both`) and keeps
// its row caches of bf16 rows as bf16; threads, lanes and chunks stay the
// cost model's (no result bit changes). The forward kernel takes the narrow
// cache of x (read again for the variance and for y) and no pipeline (one
// wave a block: no row ahead). The defaults (0) are the tuning table's,
// else the cost model's (none for these kernels without early rows), which
// the attribute elides.
// CHECK-LABEL: func.func @ahead
// CHECK: norm.layer_norm_grad {{.*}}norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 2, layout = both, partials = shared, pipeline = 1, narrow_cache = 1, shared = 32832>
// CHECK: norm.layer_norm {{.*}}norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 128, rows = 2, vector = 8, chunks = 4, layout = both, narrow_cache = 1, shared = 64>}
// NONE-LABEL: func.func @ahead
// NONE: norm.layer_norm_grad {{.*}}norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 2, partials = shared, shared = 32832>
// NONE-NOT: pipeline
// NONE-NOT: narrow_cache
// RANGE: norm-choose-geometry: pipeline must be 0 (the tuning table's, else the cost model's) to 1, got 2
// NARROW: norm-choose-geometry: narrow-cache must be 0 (the tuning table's, else f32 caches), 1 or 2, got 3
func.func @ahead(%dy: memref<?x4096xbf16>, %x: memref<?x4096xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>, %dx: memref<?x4096xbf16>, %w: memref<4096xbf16>, %dw: memref<4096xbf16>, %db: memref<4096xbf16>, %y: memref<?x4096xbf16>, %m2: memref<?xf32>, %r2: memref<?xf32>) {
  norm.layer_norm_grad dy(%dy : memref<?x4096xbf16>) x(%x : memref<?x4096xbf16>) mean(%mean : memref<?xf32>) rstd(%rstd : memref<?xf32>) weight(%w : memref<4096xbf16>) outs dx(%dx : memref<?x4096xbf16>) dweight(%dw : memref<4096xbf16>) dbias(%db : memref<4096xbf16>)
  norm.layer_norm x(%x : memref<?x4096xbf16>) outs y(%y : memref<?x4096xbf16>) mean(%m2 : memref<?xf32>) rstd(%r2 : memref<?xf32>)
  return
}

// -----

// A cost-model layout of `both` already (a lane's share past 16 elements):
// kept.
// CHECK-LABEL: func.func @both_already
// CHECK: norm.rms_norm_grad {{.*}}norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 4, layout = both, partials = {{.*}}, pipeline = 1, narrow_cache = 1
func.func @both_already(%dy: memref<?x8192xbf16>, %x: memref<?x8192xbf16>, %rstd: memref<?xf32>, %dx: memref<?x8192xbf16>, %w: memref<8192xbf16>, %dw: memref<8192xbf16>) {
  norm.rms_norm_grad dy(%dy : memref<?x8192xbf16>) x(%x : memref<?x8192xbf16>) rstd(%rstd : memref<?xf32>) weight(%w : memref<8192xbf16>) outs dx(%dx : memref<?x8192xbf16>) dweight(%dw : memref<8192xbf16>)
  return
}
