// RUN: norm-opt %s --split-input-file --norm-choose-geometry="rows=64 tuning-file=%S/Inputs/tuning-file.json" | FileCheck %s
// RUN: norm-opt %s --split-input-file --norm-choose-geometry="rows=64 tuning-file=%S/Inputs/tuning-file.json chip=sm_80" | FileCheck %s --check-prefix=SM80
// RUN: norm-opt %s --split-input-file --norm-choose-geometry="rows=4096 tuning-file=%S/Inputs/tuning-file.json" | FileCheck %s --check-prefix=ABOVE
// RUN: not norm-opt %s --split-input-file --norm-choose-geometry="tuning-file=%S/Inputs/no-such-table.json" 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not norm-opt %s --split-input-file --norm-choose-geometry="tuning-file=%S/Inputs/tuning-file-bad.json" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not norm-opt %s --split-input-file --norm-choose-geometry="tuning-file=%S/Inputs/tuning-tuned-n-bad.json" 2>&1 | FileCheck %s --check-prefix=TUNED
// RUN: not norm-opt %s --split-input-file --norm-choose-geometry="tuning-file=%S/Inputs/tuning-row-sums-bad.json" 2>&1 | FileCheck %s --check-prefix=SUMS
// RUN: norm-opt %s --split-input-file --norm-lower-to-loops --norm-choose-geometry="rows=64 tuning-file=%S/Inputs/tuning-file.json" 2>&1 | FileCheck %s --check-prefix=NEST

// A table from a file (the `tuning-file` option) in place of the embedded
// one, on any chip. Its entries: RMSNorm backward bf16 N = 4000-5000 at
// every M, prefetch 2 and partial_vector 4 (the cost model's layout
// otherwise); LayerNorm
// backward bf16 N >= 200000 at M <= 128, a cluster of 8 with
// max_register_elements 32 (the looped row split over the cluster); the
// forward at N = 4000-5000, prefetch 1, which a forward kernel cannot take
// (no row ahead of its block's one wave), so the cost model's stands. On
// sm_80 the prefetch yields to the cost model (no bulk prefetch) while the
// entry's partial_vector stands (any chip), and the cluster entry yields
// (no clusters).
// CHECK-LABEL: func.func @rms_grad
// CHECK: norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 2, partials = shared, prefetch = 2, partial_vector = 4, shared = 16448>
// SM80-LABEL: func.func @rms_grad
// SM80: norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 2, partials = shared, partial_vector = 4, shared = 16448>
// MISSING: norm-choose-geometry: tuning-file '{{.*}}no-such-table.json': {{.*}}
// BAD: norm-choose-geometry: tuning-file '{{.*}}tuning-file-bad.json': tuning table: entries[0]: "prefetch" must be at most 4
// SUMS: norm-choose-geometry: tuning-file '{{.*}}tuning-row-sums-bad.json': tuning table: entries[0]: "row_sums" names a forward kernel: 1 (RMSNorm's) or 2 (LayerNorm's)
// TUNED: norm-choose-geometry: tuning-file '{{.*}}tuning-tuned-n-bad.json': tuning table: entries[0]: "tuned_n" must lie in the entry's "n" range
func.func @rms_grad(%dy: memref<?x4096xbf16>, %x: memref<?x4096xbf16>, %rstd: memref<?xf32>, %dx: memref<?x4096xbf16>, %w: memref<4096xbf16>, %dw: memref<4096xbf16>) {
  norm.rms_norm_grad dy(%dy : memref<?x4096xbf16>) x(%x : memref<?x4096xbf16>) rstd(%rstd : memref<?xf32>) weight(%w : memref<4096xbf16>) outs dx(%dx : memref<?x4096xbf16>) dweight(%dw : memref<4096xbf16>)
  return
}

// -----

// CHECK-LABEL: func.func @layer_grad_wide
// CHECK: norm.geometry = #norm.row_geometry<regime = looped, threads = 512, lanes = 512, rows = 1, vector = 8, chunks = 8, partials = global, cluster = 8
// SM80-LABEL: func.func @layer_grad_wide
// SM80: norm.geometry = #norm.row_geometry<regime = looped, threads = 512, lanes = 512, rows = 1, vector = 8, partials = global, batch = 8
func.func @layer_grad_wide(%dy: memref<?x262144xbf16>, %x: memref<?x262144xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>, %dx: memref<?x262144xbf16>, %w: memref<262144xbf16>, %dw: memref<262144xbf16>, %db: memref<262144xbf16>) {
  norm.layer_norm_grad dy(%dy : memref<?x262144xbf16>) x(%x : memref<?x262144xbf16>) mean(%mean : memref<?xf32>) rstd(%rstd : memref<?xf32>) weight(%w : memref<262144xbf16>) outs dx(%dx : memref<?x262144xbf16>) dweight(%dw : memref<262144xbf16>) dbias(%db : memref<262144xbf16>)
  return
}

// -----

// CHECK-LABEL: func.func @forward
// CHECK: norm.geometry = #norm.row_geometry<
// CHECK-NOT: prefetch =
func.func @forward(%x: memref<?x4096xbf16>, %y: memref<?x4096xbf16>, %r: memref<?xf32>) {
  norm.rms_norm x(%x : memref<?x4096xbf16>) outs y(%y : memref<?x4096xbf16>) rstd(%r : memref<?xf32>)
  return
}

// -----

// The forward bf16 at N = 7000-7500 and M <= 128: its row split over a
// cluster of 2 (only ever a table's or the option's choice); on sm_80 (no
// clusters) and above the entry's rows, the cost model's block a row.
// CHECK-LABEL: func.func @forward_split
// CHECK: norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 2, cluster = 2, shared = 144>
// SM80-LABEL: func.func @forward_split
// SM80: norm.geometry = #norm.row_geometry<regime = registers, threads = 128, lanes = 128, rows = 1, vector = 8, chunks = 7, layout = both, shared = 32>
// ABOVE-LABEL: func.func @forward_split
// ABOVE: norm.geometry = #norm.row_geometry<regime = registers, threads = 128, lanes = 128, rows = 1, vector = 8, chunks = 7, layout = both, shared = 32>
func.func @forward_split(%x: memref<?x7168xbf16>, %y: memref<?x7168xbf16>, %r: memref<?xf32>) {
  norm.rms_norm x(%x : memref<?x7168xbf16>) outs y(%y : memref<?x7168xbf16>) rstd(%r : memref<?xf32>)
  return
}

// -----

// LayerNorm backward bf16 N = 3000-3500 at M <= 128: pipeline 1 and
// narrow_cache 1 over the cost model's geometry (layout = both already), on
// any chip. Above the entry's rows (M = 4096, no entry): the cost model's.
// CHECK-LABEL: func.func @layer_grad_ahead
// CHECK: norm.geometry = #norm.row_geometry<regime = registers, threads = 128, lanes = 128, rows = 1, vector = 8, chunks = 3, layout = both, partials = shared, pipeline = 1, narrow_cache = 1, shared = 24608>
// SM80-LABEL: func.func @layer_grad_ahead
// SM80: pipeline = 1, narrow_cache = 1
// ABOVE-LABEL: func.func @layer_grad_ahead
// ABOVE: norm.geometry = #norm.row_geometry<regime = registers, threads = 128, lanes = 128, rows = 1, vector = 8, chunks = 3, layout = both, partials = shared, shared = 24608>
func.func @layer_grad_ahead(%dy: memref<?x3072xbf16>, %x: memref<?x3072xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>, %dx: memref<?x3072xbf16>, %w: memref<3072xbf16>, %dw: memref<3072xbf16>, %db: memref<3072xbf16>) {
  norm.layer_norm_grad dy(%dy : memref<?x3072xbf16>) x(%x : memref<?x3072xbf16>) mean(%mean : memref<?xf32>) rstd(%rstd : memref<?xf32>) weight(%w : memref<3072xbf16>) outs dx(%dx : memref<?x3072xbf16>) dweight(%dw : memref<3072xbf16>) dbias(%db : memref<3072xbf16>)
  return
}

// -----

// The forward bf16 at N = 1500-2500 and M <= 128: the weight held in
// registers (hold_columns 1, on any chip); above the entry's rows, the
// cost model's (none held).
// CHECK-LABEL: func.func @forward_hold
// CHECK: norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 64, rows = 4, vector = 8, chunks = 4, layout = both, hold_columns = 1, shared = 64>
// SM80-LABEL: func.func @forward_hold
// SM80: hold_columns = 1
// ABOVE-LABEL: func.func @forward_hold
// ABOVE-NOT: hold_columns
func.func @forward_hold(%x: memref<?x2048xbf16>, %w: memref<2048xbf16>, %y: memref<?x2048xbf16>, %r: memref<?xf32>) {
  norm.rms_norm x(%x : memref<?x2048xbf16>) weight(%w : memref<2048xbf16>) outs y(%y : memref<?x2048xbf16>) rstd(%r : memref<?xf32>)
  return
}

// -----

// The forward bf16 at N = 3000-3100 and M <= 128: hold_columns 0, where
// the cost model would hold (a launch of at most a block an SM); above the
// entry's rows, the cost model's (M = 2049-8192: none held either).
// CHECK-LABEL: func.func @forward_no_hold
// CHECK-NOT: hold_columns
// SM80-LABEL: func.func @forward_no_hold
// SM80-NOT: hold_columns
func.func @forward_no_hold(%x: memref<?x3072xbf16>, %w: memref<3072xbf16>, %y: memref<?x3072xbf16>, %r: memref<?xf32>) {
  norm.rms_norm x(%x : memref<?x3072xbf16>) weight(%w : memref<3072xbf16>) outs y(%y : memref<?x3072xbf16>) rstd(%r : memref<?xf32>)
  return
}

// -----

// The forward f32 at N = 1800-2600, M <= 128, measured at N = 2048
// (`tuned_n`): 256 lanes of one 16-byte chunk each, every chunk slot of a
// row used. At N = 2048 the entry stands; at N = 2560 its knobs would give
// three chunks a lane over 256 lanes (640 chunks in 768 slots: 83%, 17
// points below the measured layout's; kTunedSlotLoss allows 10), so the
// measurement says nothing there and the cost model's geometry stands.
// Above the entry's rows, the cost model's at both.
// CHECK-LABEL: func.func @forward_tuned_n
// CHECK: norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 4, chunks = 2,
// CHECK-LABEL: func.func @forward_off_tuned_n
// CHECK: norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 128, rows = 2, vector = 4, chunks = 5,
// ABOVE-LABEL: func.func @forward_tuned_n
// ABOVE: norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 128, rows = 2, vector = 4, chunks = 4,
// ABOVE-LABEL: func.func @forward_off_tuned_n
// ABOVE: norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 128, rows = 2, vector = 4, chunks = 5,
func.func @forward_tuned_n(%x: memref<?x2048xf32>, %y: memref<?x2048xf32>, %r: memref<?xf32>) {
  norm.rms_norm x(%x : memref<?x2048xf32>) outs y(%y : memref<?x2048xf32>) rstd(%r : memref<?xf32>)
  return
}
func.func @forward_off_tuned_n(%x: memref<?x2560xf32>, %y: memref<?x2560xf32>, %r: memref<?xf32>) {
  norm.rms_norm x(%x : memref<?x2560xf32>) outs y(%y : memref<?x2560xf32>) rstd(%r : memref<?xf32>)
  return
}

// -----

// An entry's register share is a knob like its lanes: the forward bf16 at
// N = 2500-2600, M <= 128, on 32 lanes of ten 16-byte chunks (80 elements
// a lane, past the option's default of 64) with max_register_elements =
// 128 stands (it was checked against the option's 64 and refused).
// CHECK-LABEL: func.func @forward_share
// CHECK: norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 32, rows = 8, vector = 8, chunks = 10,
// ABOVE-LABEL: func.func @forward_share
// ABOVE: norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 64, rows = 4, vector = 8, chunks = 5,
func.func @forward_share(%x: memref<?x2560xbf16>, %y: memref<?x2560xbf16>, %r: memref<?xf32>) {
  norm.rms_norm x(%x : memref<?x2560xbf16>) outs y(%y : memref<?x2560xbf16>) rstd(%r : memref<?xf32>)
  return
}

// -----

// An entry without layout knobs keeps the cost model's layout, whatever it
// is at an N off its tuned one, and its other knobs stand on it: the
// forward f32 at N = 3000-3500, M <= 128, measured at N = 3072 (256
// threads, two rows of six chunks a lane) with hold_columns = 0; at N =
// 3400 the cost model lays the row out over 128 threads of seven chunks,
// and the entry still says not to hold (the cost model alone would).
// CHECK-LABEL: func.func @forward_no_layout_knob
// CHECK: norm.geometry = #norm.row_geometry<regime = registers, threads = 128, lanes = 128, rows = 1, vector = 4, chunks = 7, layout = both, shared = 32>
func.func @forward_no_layout_knob(%x: memref<?x3400xf32>, %w: memref<3400xf32>, %y: memref<?x3400xf32>, %r: memref<?xf32>) {
  norm.rms_norm x(%x : memref<?x3400xf32>) weight(%w : memref<3400xf32>) outs y(%y : memref<?x3400xf32>) rstd(%r : memref<?xf32>)
  return
}

// -----

// A forward entry for one norm (`row_sums`: 2, LayerNorm's forward with
// its mean and variance): bf16 N = 5100-5200, M <= 128, 128 threads. The
// LayerNorm forward takes it; RMSNorm's (one in-row sum) keeps the cost
// model's 256 threads of two rows, whether it is chosen on the op or on
// its lowered nest.
// CHECK-LABEL: func.func @layer_forward_sums
// CHECK: norm.geometry = #norm.row_geometry<regime = registers, threads = 128, lanes = 128, rows = 1, vector = 8, chunks = 5,
// CHECK-LABEL: func.func @rms_forward_sums
// CHECK: norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 128, rows = 2, vector = 8, chunks = 5,
// NEST-LABEL: func.func @layer_forward_sums
// NEST: norm.geometry = #norm.row_geometry<regime = registers, threads = 128, lanes = 128, rows = 1, vector = 8, chunks = 5,
// NEST-SAME: norm.stage = #norm.stage<forward>
// NEST-LABEL: func.func @rms_forward_sums
// NEST: norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 128, rows = 2, vector = 8, chunks = 5,
// NEST-SAME: norm.stage = #norm.stage<forward>
func.func @layer_forward_sums(%x: memref<?x5120xbf16>, %y: memref<?x5120xbf16>, %m: memref<?xf32>, %r: memref<?xf32>) {
  norm.layer_norm x(%x : memref<?x5120xbf16>) outs y(%y : memref<?x5120xbf16>) mean(%m : memref<?xf32>) rstd(%r : memref<?xf32>)
  return
}
func.func @rms_forward_sums(%x: memref<?x5120xbf16>, %y: memref<?x5120xbf16>, %r: memref<?xf32>) {
  norm.rms_norm x(%x : memref<?x5120xbf16>) outs y(%y : memref<?x5120xbf16>) rstd(%r : memref<?xf32>)
  return
}

// -----

// The layout may follow N within an entry's range: the forward f32 at N =
// 3550-4200, M <= 128, a cluster of 8 measured at N = 4096 (four blocks of
// 256 threads there, one chunk a lane, every slot used); at N = 3584 the
// same knob lays the row over seven blocks of 128 threads, every slot used
// too, and the entry stands.
// CHECK-LABEL: func.func @forward_cluster_follows
// CHECK: norm.geometry = #norm.row_geometry<regime = registers, threads = 128, lanes = 128, rows = 1, vector = 4, chunks = 1, cluster = 7,
func.func @forward_cluster_follows(%x: memref<?x3584xf32>, %y: memref<?x3584xf32>, %r: memref<?xf32>) {
  norm.rms_norm x(%x : memref<?x3584xf32>) outs y(%y : memref<?x3584xf32>) rstd(%r : memref<?xf32>)
  return
}

// -----

// A hold measured at one N stands off it only where a lane holds no more
// chunks than there: the RMSNorm forward bf16 at N = 9160-11217, M =
// 2049-8192, hold_columns 1 measured at N = 10240 (the cost model's 256
// lanes of 5 chunks; it holds nothing at these M). At N = 9216 (5 chunks,
// the last one partial) and 10240 the entry's hold stands; at N = 11008 a
// lane would hold 6 chunks, more registers than were measured, and the
// cost model's (no hold) stands. Below the entry's rows (M = 64) the cost
// model's rule decides, as everywhere.
// SM80-LABEL: func.func @hold_tuned_n
// ABOVE-LABEL: func.func @hold_tuned_n
// ABOVE: norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 5, layout = both, hold_columns = 1,
// ABOVE-LABEL: func.func @hold_fewer_chunks
// ABOVE: norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 5, layout = both, hold_columns = 1,
// ABOVE-LABEL: func.func @hold_more_chunks
// ABOVE: norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 6, layout = both, shared
// ABOVE-NOT: hold_columns
func.func @hold_tuned_n(%x: memref<?x10240xbf16>, %w: memref<10240xbf16>, %y: memref<?x10240xbf16>, %r: memref<?xf32>) {
  norm.rms_norm x(%x : memref<?x10240xbf16>) weight(%w : memref<10240xbf16>) outs y(%y : memref<?x10240xbf16>) rstd(%r : memref<?xf32>)
  return
}
func.func @hold_fewer_chunks(%x: memref<?x9216xbf16>, %w: memref<9216xbf16>, %y: memref<?x9216xbf16>, %r: memref<?xf32>) {
  norm.rms_norm x(%x : memref<?x9216xbf16>) weight(%w : memref<9216xbf16>) outs y(%y : memref<?x9216xbf16>) rstd(%r : memref<?xf32>)
  return
}
func.func @hold_more_chunks(%x: memref<?x11008xbf16>, %w: memref<11008xbf16>, %y: memref<?x11008xbf16>, %r: memref<?xf32>) {
  norm.rms_norm x(%x : memref<?x11008xbf16>) weight(%w : memref<11008xbf16>) outs y(%y : memref<?x11008xbf16>) rstd(%r : memref<?xf32>)
  return
}
