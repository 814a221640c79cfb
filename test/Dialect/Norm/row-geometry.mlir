// RUN: norm-opt %s --split-input-file --verify-diagnostics | FileCheck %s

// #norm.row_geometry round-trips, defaults elided; what holds whatever the
// row is checked by the attribute's verifier (the rest, against N and the
// chip, by norm-choose-geometry).

// CHECK-LABEL: func.func @round_trip
// CHECK: norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 32, rows = 8, vector = 8, chunks = 4, layout = both, partials = registers, shared = 64>
func.func @round_trip(%x: tensor<?x1000xbf16>) -> tensor<?x1000xbf16> {
  %y, %r = norm.rms_norm x(%x : tensor<?x1000xbf16>) {norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 32, rows = 8, vector = 8, chunks = 4, layout = both, partials = registers, cluster = 1, batch = 1, shared = 64, dynamic_shared = 0>} -> y(tensor<?x1000xbf16>) rstd(tensor<?xf32>)
  return %y : tensor<?x1000xbf16>
}

// -----

func.func @rows_times_lanes(%x: tensor<?x1000xbf16>) -> tensor<?x1000xbf16> {
  // expected-error @+1 {{#norm.row_geometry: rows x lanes must be threads: 4 x 32 != 256}}
  %y, %r = norm.rms_norm x(%x : tensor<?x1000xbf16>) {norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 32, rows = 4, vector = 8, chunks = 4>} -> y(tensor<?x1000xbf16>) rstd(tensor<?xf32>)
  return %y : tensor<?x1000xbf16>
}

// -----

func.func @lanes_power_of_two(%x: tensor<?x1000xbf16>) -> tensor<?x1000xbf16> {
  // expected-error @+1 {{#norm.row_geometry: lanes must be a power of two or a multiple of 32 (whole warps), at most threads (256), got 48}}
  %y, %r = norm.rms_norm x(%x : tensor<?x1000xbf16>) {norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 48, rows = 4, vector = 8, chunks = 4>} -> y(tensor<?x1000xbf16>) rstd(tensor<?xf32>)
  return %y : tensor<?x1000xbf16>
}

// -----

// Whole warps that are no power of two (a backward row trimmed of its idle
// warps): three warps a row, two rows a block of 192.
// CHECK-LABEL: func.func @whole_warps
// CHECK: #norm.row_geometry<regime = registers, threads = 192, lanes = 96, rows = 2, vector = 8, chunks = 1>
func.func @whole_warps(%x: tensor<?x768xbf16>) -> tensor<?x768xbf16> {
  %y, %r = norm.rms_norm x(%x : tensor<?x768xbf16>) {norm.geometry = #norm.row_geometry<regime = registers, threads = 192, lanes = 96, rows = 2, vector = 8, chunks = 1>} -> y(tensor<?x768xbf16>) rstd(tensor<?xf32>)
  return %y : tensor<?x768xbf16>
}

// -----

func.func @threads_whole_warps(%x: tensor<?x1000xbf16>) -> tensor<?x1000xbf16> {
  // expected-error @+1 {{#norm.row_geometry: threads must be a power of two or a multiple of 32, up to 65536, got 100}}
  %y, %r = norm.rms_norm x(%x : tensor<?x1000xbf16>) {norm.geometry = #norm.row_geometry<regime = registers, threads = 100, lanes = 100, rows = 1, vector = 8, chunks = 1>} -> y(tensor<?x1000xbf16>) rstd(tensor<?xf32>)
  return %y : tensor<?x1000xbf16>
}

// -----

func.func @looped_one_row(%x: tensor<?x1000xbf16>) -> tensor<?x1000xbf16> {
  // expected-error @+1 {{#norm.row_geometry: the looped regime takes one row per block (lanes = threads), got rows = 2}}
  %y, %r = norm.rms_norm x(%x : tensor<?x1000xbf16>) {norm.geometry = #norm.row_geometry<regime = looped, threads = 256, lanes = 128, rows = 2, vector = 8>} -> y(tensor<?x1000xbf16>) rstd(tensor<?xf32>)
  return %y : tensor<?x1000xbf16>
}

// -----

func.func @registers_need_chunks(%x: tensor<?x1000xbf16>) -> tensor<?x1000xbf16> {
  // expected-error @+1 {{#norm.row_geometry: the registers regime needs chunks >= 1, got 0}}
  %y, %r = norm.rms_norm x(%x : tensor<?x1000xbf16>) {norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8>} -> y(tensor<?x1000xbf16>) rstd(tensor<?xf32>)
  return %y : tensor<?x1000xbf16>
}

// -----

func.func @global_is_looped(%x: tensor<?x1000xbf16>) -> tensor<?x1000xbf16> {
  // expected-error @+1 {{#norm.row_geometry: partials = global is the looped regime's}}
  %y, %r = norm.rms_norm x(%x : tensor<?x1000xbf16>) {norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 1, partials = global>} -> y(tensor<?x1000xbf16>) rstd(tensor<?xf32>)
  return %y : tensor<?x1000xbf16>
}

// -----

func.func @batch_is_global(%x: tensor<?x1000xbf16>) -> tensor<?x1000xbf16> {
  // expected-error @+1 {{#norm.row_geometry: batch > 1 only goes with partials = global}}
  %y, %r = norm.rms_norm x(%x : tensor<?x1000xbf16>) {norm.geometry = #norm.row_geometry<regime = looped, threads = 256, lanes = 256, rows = 1, vector = 8, batch = 4>} -> y(tensor<?x1000xbf16>) rstd(tensor<?xf32>)
  return %y : tensor<?x1000xbf16>
}

// -----

func.func @cluster_one_row(%x: tensor<?x1000xbf16>) -> tensor<?x1000xbf16> {
  // expected-error @+1 {{#norm.row_geometry: a row split over a cluster takes one row in flight (rows = 1), got rows = 2}}
  %y, %r = norm.rms_norm x(%x : tensor<?x1000xbf16>) {norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 128, rows = 2, vector = 8, chunks = 1, cluster = 2>} -> y(tensor<?x1000xbf16>) rstd(tensor<?xf32>)
  return %y : tensor<?x1000xbf16>
}

// -----

// A looped row split over a cluster: each block walks its slice of chunks x
// lanes x vector columns, one row at a time.
// CHECK-LABEL: func.func @looped_cluster
// CHECK: #norm.row_geometry<regime = looped, threads = 512, lanes = 512, rows = 1, vector = 8, chunks = 8, partials = global, cluster = 8>
func.func @looped_cluster(%dy: tensor<?x262144xbf16>, %x: tensor<?x262144xbf16>, %r: tensor<?xf32>, %w: tensor<262144xbf16>) -> tensor<?x262144xbf16> {
  %dx, %dw = norm.rms_norm_grad dy(%dy : tensor<?x262144xbf16>) x(%x : tensor<?x262144xbf16>) rstd(%r : tensor<?xf32>) weight(%w : tensor<262144xbf16>) {norm.geometry = #norm.row_geometry<regime = looped, threads = 512, lanes = 512, rows = 1, vector = 8, chunks = 8, partials = global, cluster = 8>} -> dx(tensor<?x262144xbf16>) dweight(tensor<262144xbf16>)
  return %dx : tensor<?x262144xbf16>
}

// -----

func.func @looped_cluster_chunks(%x: tensor<?x1000xbf16>) -> tensor<?x1000xbf16> {
  // expected-error @+1 {{#norm.row_geometry: a looped row split over a cluster walks slices of chunks x lanes x vector columns: chunks >= 1 needed}}
  %y, %r = norm.rms_norm x(%x : tensor<?x1000xbf16>) {norm.geometry = #norm.row_geometry<regime = looped, threads = 256, lanes = 256, rows = 1, vector = 8, cluster = 2>} -> y(tensor<?x1000xbf16>) rstd(tensor<?xf32>)
  return %y : tensor<?x1000xbf16>
}

// -----

func.func @looped_cluster_batch(%x: tensor<?x1000xbf16>) -> tensor<?x1000xbf16> {
  // expected-error @+1 {{#norm.row_geometry: a looped row split over a cluster takes one row at a time (batch = 1), got batch = 4}}
  %y, %r = norm.rms_norm x(%x : tensor<?x1000xbf16>) {norm.geometry = #norm.row_geometry<regime = looped, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 1, partials = global, cluster = 2, batch = 4>} -> y(tensor<?x1000xbf16>) rstd(tensor<?xf32>)
  return %y : tensor<?x1000xbf16>
}

// -----

func.func @looped_no_chunks(%x: tensor<?x1000xbf16>) -> tensor<?x1000xbf16> {
  // expected-error @+1 {{#norm.row_geometry: the looped regime has no fixed chunks per lane, got chunks = 2}}
  %y, %r = norm.rms_norm x(%x : tensor<?x1000xbf16>) {norm.geometry = #norm.row_geometry<regime = looped, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 2>} -> y(tensor<?x1000xbf16>) rstd(tensor<?xf32>)
  return %y : tensor<?x1000xbf16>
}

// -----

// expected-error @+1 {{'norm.geometry' belongs on a norm op or its 'dx' / 'forward' nest, not on 'func.func'}}
func.func @not_on_a_function() attributes {norm.geometry = #norm.row_geometry<regime = looped, threads = 256, lanes = 256, rows = 1, vector = 8>} {
  return
}

// -----

// prefetch (waves of rows prefetched into L2) round-trips; 0 is elided.
// CHECK-LABEL: func.func @prefetch_round_trip
// CHECK: norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 2, partials = shared, prefetch = 2>
// CHECK: norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 2, partials = shared>
func.func @prefetch_round_trip(%dy: tensor<?x4096xbf16>, %x: tensor<?x4096xbf16>, %rstd: tensor<?xf32>, %w: tensor<4096xbf16>) -> (tensor<?x4096xbf16>, tensor<4096xbf16>, tensor<?x4096xbf16>, tensor<4096xbf16>) {
  %dx, %dw = norm.rms_norm_grad dy(%dy : tensor<?x4096xbf16>) x(%x : tensor<?x4096xbf16>) rstd(%rstd : tensor<?xf32>) weight(%w : tensor<4096xbf16>) {norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 2, partials = shared, prefetch = 2>} -> dx(tensor<?x4096xbf16>) dweight(tensor<4096xbf16>)
  %dx2, %dw2 = norm.rms_norm_grad dy(%dy : tensor<?x4096xbf16>) x(%x : tensor<?x4096xbf16>) rstd(%rstd : tensor<?xf32>) weight(%w : tensor<4096xbf16>) {norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 2, partials = shared, prefetch = 0>} -> dx(tensor<?x4096xbf16>) dweight(tensor<4096xbf16>)
  return %dx, %dw, %dx2, %dw2 : tensor<?x4096xbf16>, tensor<4096xbf16>, tensor<?x4096xbf16>, tensor<4096xbf16>
}

// -----

func.func @prefetch_negative(%x: tensor<?x1000xbf16>) -> tensor<?x1000xbf16> {
  // expected-error @+1 {{#norm.row_geometry: prefetch must be 0 to 1024 waves ahead, got -1}}
  %y, %r = norm.rms_norm x(%x : tensor<?x1000xbf16>) {norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 32, rows = 8, vector = 8, chunks = 4, prefetch = -1>} -> y(tensor<?x1000xbf16>) rstd(tensor<?xf32>)
  return %y : tensor<?x1000xbf16>
}

// -----

// partial_vector (shared partial sums a lane keeps side by side) round-trips;
// 1 is elided.
// CHECK-LABEL: func.func @partial_vector_round_trip
// CHECK: norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 2, partials = shared, partial_vector = 4>
// CHECK: norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 2, partials = shared>
func.func @partial_vector_round_trip(%dy: tensor<?x4096xbf16>, %x: tensor<?x4096xbf16>, %rstd: tensor<?xf32>, %w: tensor<4096xbf16>) -> (tensor<?x4096xbf16>, tensor<4096xbf16>, tensor<?x4096xbf16>, tensor<4096xbf16>) {
  %dx, %dw = norm.rms_norm_grad dy(%dy : tensor<?x4096xbf16>) x(%x : tensor<?x4096xbf16>) rstd(%rstd : tensor<?xf32>) weight(%w : tensor<4096xbf16>) {norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 2, partials = shared, partial_vector = 4>} -> dx(tensor<?x4096xbf16>) dweight(tensor<4096xbf16>)
  %dx2, %dw2 = norm.rms_norm_grad dy(%dy : tensor<?x4096xbf16>) x(%x : tensor<?x4096xbf16>) rstd(%rstd : tensor<?xf32>) weight(%w : tensor<4096xbf16>) {norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 2, partials = shared, partial_vector = 1>} -> dx(tensor<?x4096xbf16>) dweight(tensor<4096xbf16>)
  return %dx, %dw, %dx2, %dw2 : tensor<?x4096xbf16>, tensor<4096xbf16>, tensor<?x4096xbf16>, tensor<4096xbf16>
}

// -----

func.func @partial_vector_three(%dy: tensor<?x4096xbf16>, %x: tensor<?x4096xbf16>, %rstd: tensor<?xf32>, %w: tensor<4096xbf16>) -> tensor<?x4096xbf16> {
  // expected-error @+1 {{#norm.row_geometry: partial_vector must be 1, 2 or 4, got 3}}
  %dx, %dw = norm.rms_norm_grad dy(%dy : tensor<?x4096xbf16>) x(%x : tensor<?x4096xbf16>) rstd(%rstd : tensor<?xf32>) weight(%w : tensor<4096xbf16>) {norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 2, partials = shared, partial_vector = 3>} -> dx(tensor<?x4096xbf16>) dweight(tensor<4096xbf16>)
  return %dx : tensor<?x4096xbf16>
}

// -----

func.func @partial_vector_registers(%dy: tensor<?x4096xbf16>, %x: tensor<?x4096xbf16>, %rstd: tensor<?xf32>, %w: tensor<4096xbf16>) -> tensor<?x4096xbf16> {
  // expected-error @+1 {{#norm.row_geometry: partial_vector groups partial sums in shared memory (partials = shared), got partials = registers}}
  %dx, %dw = norm.rms_norm_grad dy(%dy : tensor<?x4096xbf16>) x(%x : tensor<?x4096xbf16>) rstd(%rstd : tensor<?xf32>) weight(%w : tensor<4096xbf16>) {norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 2, partials = registers, partial_vector = 2>} -> dx(tensor<?x4096xbf16>) dweight(tensor<4096xbf16>)
  return %dx : tensor<?x4096xbf16>
}

// -----

func.func @partial_vector_past_vector(%dy: tensor<?x4096xf32>, %x: tensor<?x4096xf32>, %rstd: tensor<?xf32>, %w: tensor<4096xf32>) -> tensor<?x4096xf32> {
  // expected-error @+1 {{#norm.row_geometry: partial_vector (4) must be at most vector (2)}}
  %dx, %dw = norm.rms_norm_grad dy(%dy : tensor<?x4096xf32>) x(%x : tensor<?x4096xf32>) rstd(%rstd : tensor<?xf32>) weight(%w : tensor<4096xf32>) {norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 2, chunks = 8, partials = shared, partial_vector = 4>} -> dx(tensor<?x4096xf32>) dweight(tensor<4096xf32>)
  return %dx : tensor<?x4096xf32>
}

// -----

// pipeline (the next row's loads ahead, in the aligned body of layout =
// both) and narrow_cache (row caches in the loaded type, 1 an element an
// entry, 2 two elements a word) round-trip; 0 is elided.
// CHECK-LABEL: func.func @pipeline_round_trip
// CHECK: norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 2, layout = both, partials = shared, pipeline = 1, narrow_cache = 1>
// CHECK: norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 2, partials = shared>
// CHECK: norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 2, partials = shared, narrow_cache = 2>
func.func @pipeline_round_trip(%dy: tensor<?x4096xbf16>, %x: tensor<?x4096xbf16>, %rstd: tensor<?xf32>, %w: tensor<4096xbf16>) -> tensor<?x4096xbf16> {
  %dx, %dw = norm.rms_norm_grad dy(%dy : tensor<?x4096xbf16>) x(%x : tensor<?x4096xbf16>) rstd(%rstd : tensor<?xf32>) weight(%w : tensor<4096xbf16>) {norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 2, layout = both, partials = shared, pipeline = 1, narrow_cache = 1>} -> dx(tensor<?x4096xbf16>) dweight(tensor<4096xbf16>)
  %dx2, %dw2 = norm.rms_norm_grad dy(%dy : tensor<?x4096xbf16>) x(%x : tensor<?x4096xbf16>) rstd(%rstd : tensor<?xf32>) weight(%w : tensor<4096xbf16>) {norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 2, partials = shared, pipeline = 0, narrow_cache = 0>} -> dx(tensor<?x4096xbf16>) dweight(tensor<4096xbf16>)
  %dx3, %dw3 = norm.rms_norm_grad dy(%dy : tensor<?x4096xbf16>) x(%x : tensor<?x4096xbf16>) rstd(%rstd : tensor<?xf32>) weight(%w : tensor<4096xbf16>) {norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 2, partials = shared, narrow_cache = 2>} -> dx(tensor<?x4096xbf16>) dweight(tensor<4096xbf16>)
  return %dx : tensor<?x4096xbf16>
}

// -----

func.func @pipeline_two(%dy: tensor<?x4096xbf16>, %x: tensor<?x4096xbf16>, %rstd: tensor<?xf32>, %w: tensor<4096xbf16>) -> tensor<?x4096xbf16> {
  // expected-error @+1 {{#norm.row_geometry: pipeline must be 0 or 1 waves loaded ahead, got 2}}
  %dx, %dw = norm.rms_norm_grad dy(%dy : tensor<?x4096xbf16>) x(%x : tensor<?x4096xbf16>) rstd(%rstd : tensor<?xf32>) weight(%w : tensor<4096xbf16>) {norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 2, layout = both, partials = shared, pipeline = 2>} -> dx(tensor<?x4096xbf16>) dweight(tensor<4096xbf16>)
  return %dx : tensor<?x4096xbf16>
}

// -----

func.func @pipeline_looped(%dy: tensor<?x4096xbf16>, %x: tensor<?x4096xbf16>, %rstd: tensor<?xf32>, %w: tensor<4096xbf16>) -> tensor<?x4096xbf16> {
  // expected-error @+1 {{#norm.row_geometry: pipeline loads the next row into registers, which needs regime = registers}}
  %dx, %dw = norm.rms_norm_grad dy(%dy : tensor<?x4096xbf16>) x(%x : tensor<?x4096xbf16>) rstd(%rstd : tensor<?xf32>) weight(%w : tensor<4096xbf16>) {norm.geometry = #norm.row_geometry<regime = looped, threads = 256, lanes = 256, rows = 1, vector = 8, layout = both, partials = shared, pipeline = 1>} -> dx(tensor<?x4096xbf16>) dweight(tensor<4096xbf16>)
  return %dx : tensor<?x4096xbf16>
}

// -----

func.func @pipeline_vector_layout(%dy: tensor<?x4096xbf16>, %x: tensor<?x4096xbf16>, %rstd: tensor<?xf32>, %w: tensor<4096xbf16>) -> tensor<?x4096xbf16> {
  // expected-error @+1 {{#norm.row_geometry: pipeline loads the next row in the aligned body of layout = both, got layout = vector}}
  %dx, %dw = norm.rms_norm_grad dy(%dy : tensor<?x4096xbf16>) x(%x : tensor<?x4096xbf16>) rstd(%rstd : tensor<?xf32>) weight(%w : tensor<4096xbf16>) {norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 2, partials = shared, pipeline = 1>} -> dx(tensor<?x4096xbf16>) dweight(tensor<4096xbf16>)
  return %dx : tensor<?x4096xbf16>
}

// -----

func.func @narrow_cache_three(%dy: tensor<?x4096xbf16>, %x: tensor<?x4096xbf16>, %rstd: tensor<?xf32>, %w: tensor<4096xbf16>) -> tensor<?x4096xbf16> {
  // expected-error @+1 {{#norm.row_geometry: narrow_cache must be 0, 1 or 2, got 3}}
  %dx, %dw = norm.rms_norm_grad dy(%dy : tensor<?x4096xbf16>) x(%x : tensor<?x4096xbf16>) rstd(%rstd : tensor<?xf32>) weight(%w : tensor<4096xbf16>) {norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 2, partials = shared, narrow_cache = 3>} -> dx(tensor<?x4096xbf16>) dweight(tensor<4096xbf16>)
  return %dx : tensor<?x4096xbf16>
}

// -----

func.func @narrow_cache_looped(%dy: tensor<?x4096xbf16>, %x: tensor<?x4096xbf16>, %rstd: tensor<?xf32>, %w: tensor<4096xbf16>) -> tensor<?x4096xbf16> {
  // expected-error @+1 {{#norm.row_geometry: narrow_cache keeps the register regime's row caches narrow, which needs regime = registers}}
  %dx, %dw = norm.rms_norm_grad dy(%dy : tensor<?x4096xbf16>) x(%x : tensor<?x4096xbf16>) rstd(%rstd : tensor<?xf32>) weight(%w : tensor<4096xbf16>) {norm.geometry = #norm.row_geometry<regime = looped, threads = 256, lanes = 256, rows = 1, vector = 8, partials = shared, narrow_cache = 1>} -> dx(tensor<?x4096xbf16>) dweight(tensor<4096xbf16>)
  return %dx : tensor<?x4096xbf16>
}

// -----

// hold_columns (the weight and bias held in registers a program)
// round-trips; 0 is elided.
// CHECK-LABEL: func.func @hold_columns_round_trip
// CHECK: norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 2, partials = shared, hold_columns = 1>
// CHECK: norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 2, partials = shared>
func.func @hold_columns_round_trip(%dy: tensor<?x4096xbf16>, %x: tensor<?x4096xbf16>, %rstd: tensor<?xf32>, %w: tensor<4096xbf16>) -> tensor<?x4096xbf16> {
  %dx, %dw = norm.rms_norm_grad dy(%dy : tensor<?x4096xbf16>) x(%x : tensor<?x4096xbf16>) rstd(%rstd : tensor<?xf32>) weight(%w : tensor<4096xbf16>) {norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 2, partials = shared, hold_columns = 1>} -> dx(tensor<?x4096xbf16>) dweight(tensor<4096xbf16>)
  %dx2, %dw2 = norm.rms_norm_grad dy(%dy : tensor<?x4096xbf16>) x(%x : tensor<?x4096xbf16>) rstd(%rstd : tensor<?xf32>) weight(%w : tensor<4096xbf16>) {norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 2, partials = shared, hold_columns = 0>} -> dx(tensor<?x4096xbf16>) dweight(tensor<4096xbf16>)
  return %dx : tensor<?x4096xbf16>
}

// -----

func.func @hold_columns_two(%x: tensor<?x4096xbf16>, %w: tensor<4096xbf16>) -> tensor<?x4096xbf16> {
  // expected-error @+1 {{#norm.row_geometry: hold_columns must be 0 or 1, got 2}}
  %y, %rstd = norm.rms_norm x(%x : tensor<?x4096xbf16>) weight(%w : tensor<4096xbf16>) {norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 2, hold_columns = 2>} -> y(tensor<?x4096xbf16>) rstd(tensor<?xf32>)
  return %y : tensor<?x4096xbf16>
}

// -----

func.func @hold_columns_looped(%x: tensor<?x4096xbf16>, %w: tensor<4096xbf16>) -> tensor<?x4096xbf16> {
  // expected-error @+1 {{#norm.row_geometry: hold_columns holds a lane's unrolled chunks of the columns, which needs regime = registers}}
  %y, %rstd = norm.rms_norm x(%x : tensor<?x4096xbf16>) weight(%w : tensor<4096xbf16>) {norm.geometry = #norm.row_geometry<regime = looped, threads = 256, lanes = 256, rows = 1, vector = 8, hold_columns = 1>} -> y(tensor<?x4096xbf16>) rstd(tensor<?xf32>)
  return %y : tensor<?x4096xbf16>
}

// -----

func.func @hold_columns_interleaved(%x: tensor<?x4096xbf16>, %w: tensor<4096xbf16>) -> tensor<?x4096xbf16> {
  // expected-error @+1 {{#norm.row_geometry: hold_columns holds the vector layout's 16-byte loads, and layout = interleaved has none}}
  %y, %rstd = norm.rms_norm x(%x : tensor<?x4096xbf16>) weight(%w : tensor<4096xbf16>) {norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 2, layout = interleaved, hold_columns = 1>} -> y(tensor<?x4096xbf16>) rstd(tensor<?xf32>)
  return %y : tensor<?x4096xbf16>
}
