// RUN: norm-opt %s --split-input-file --norm-choose-geometry --verify-diagnostics

// Each chunk: a #norm.row_geometry written on an op that norm-choose-geometry
// refuses (sm_90), and the limit its message names.

// -----

func.func @share_past_registers(%dy: memref<?x4096xbf16>, %x: memref<?x4096xbf16>, %rstd: memref<?xf32>, %dx: memref<?x4096xbf16>, %w: memref<4096xbf16>, %dw: memref<4096xbf16>) {
  // expected-error @+1 {{registers: a lane's share of 128 elements per row array passes max-register-elements (64)}}
  norm.rms_norm_grad dy(%dy : memref<?x4096xbf16>) x(%x : memref<?x4096xbf16>) rstd(%rstd : memref<?xf32>) weight(%w : memref<4096xbf16>) outs dx(%dx : memref<?x4096xbf16>) dweight(%dw : memref<4096xbf16>) {norm.geometry = #norm.row_geometry<regime = registers, threads = 32, lanes = 32, rows = 1, vector = 8, chunks = 16, partials = shared>}
  return
}

// -----

func.func @vector_not_one_access(%dy: memref<?x4096xbf16>, %x: memref<?x4096xbf16>, %rstd: memref<?xf32>, %dx: memref<?x4096xbf16>, %w: memref<4096xbf16>, %dw: memref<4096xbf16>) {
  // expected-error @+1 {{vector: the row kernels' chunk is one 16-byte access, 8 elements of 2 bytes; got vector = 4}}
  norm.rms_norm_grad dy(%dy : memref<?x4096xbf16>) x(%x : memref<?x4096xbf16>) rstd(%rstd : memref<?xf32>) weight(%w : memref<4096xbf16>) outs dx(%dx : memref<?x4096xbf16>) dweight(%dw : memref<4096xbf16>) {norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 4, chunks = 4, partials = shared>}
  return
}

// -----

func.func @chunks_do_not_cover(%dy: memref<?x4096xbf16>, %x: memref<?x4096xbf16>, %rstd: memref<?xf32>, %dx: memref<?x4096xbf16>, %w: memref<4096xbf16>, %dw: memref<4096xbf16>) {
  // expected-error @+1 {{chunks: N = 4096 is 512 chunks over 256 lanes, 2 a lane; got chunks = 3}}
  norm.rms_norm_grad dy(%dy : memref<?x4096xbf16>) x(%x : memref<?x4096xbf16>) rstd(%rstd : memref<?xf32>) weight(%w : memref<4096xbf16>) outs dx(%dx : memref<?x4096xbf16>) dweight(%dw : memref<4096xbf16>) {norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 3, partials = shared>}
  return
}

// -----

func.func @cluster_too_small(%dy: memref<?x65536xbf16>, %x: memref<?x65536xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>, %w: memref<65536xbf16>, %dx: memref<?x65536xbf16>, %dw: memref<65536xbf16>, %db: memref<65536xbf16>) {
  // expected-error @+1 {{cluster: N = 65536 in slices of 2 x 512 x 8 columns needs 8 block(s) a row, the geometry has cluster = 4}}
  norm.layer_norm_grad dy(%dy : memref<?x65536xbf16>) x(%x : memref<?x65536xbf16>) mean(%mean : memref<?xf32>) rstd(%rstd : memref<?xf32>) weight(%w : memref<65536xbf16>) outs dx(%dx : memref<?x65536xbf16>) dweight(%dw : memref<65536xbf16>) dbias(%db : memref<65536xbf16>) {norm.geometry = #norm.row_geometry<regime = registers, threads = 512, lanes = 512, rows = 1, vector = 8, chunks = 2, partials = registers, cluster = 4>}
  return
}

// -----

func.func @cluster_not_splittable(%dy: memref<?x65536xbf16>, %x: memref<?x65536xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>, %w: memref<65536xbf16>, %dx: memref<?x65536xbf16>, %dw: memref<65536xbf16>, %db: memref<65536xbf16>) {
  // expected-error @+1 {{cluster: only a forward kernel or a dx kernel of the deterministic strategy (or without dweight/dbias) may split its rows over a cluster}}
  norm.layer_norm_grad dy(%dy : memref<?x65536xbf16>) x(%x : memref<?x65536xbf16>) mean(%mean : memref<?xf32>) rstd(%rstd : memref<?xf32>) weight(%w : memref<65536xbf16>) outs dx(%dx : memref<?x65536xbf16>) dweight(%dw : memref<65536xbf16>) dbias(%db : memref<65536xbf16>) {strategy = #norm.strategy<atomic>, norm.geometry = #norm.row_geometry<regime = registers, threads = 512, lanes = 512, rows = 1, vector = 8, chunks = 2, cluster = 8>}
  return
}

// -----

func.func @threads_past_block(%dy: memref<?x65536xbf16>, %x: memref<?x65536xbf16>, %rstd: memref<?xf32>, %dx: memref<?x65536xbf16>, %w: memref<65536xbf16>, %dw: memref<65536xbf16>) {
  // expected-error @+1 {{threads: a block of 2048 threads; sm_90 takes multiples of its 32-thread warp up to 1024}}
  norm.rms_norm_grad dy(%dy : memref<?x65536xbf16>) x(%x : memref<?x65536xbf16>) rstd(%rstd : memref<?xf32>) weight(%w : memref<65536xbf16>) outs dx(%dx : memref<?x65536xbf16>) dweight(%dw : memref<65536xbf16>) {norm.geometry = #norm.row_geometry<regime = looped, threads = 2048, lanes = 2048, rows = 1, vector = 8, partials = global>}
  return
}

// -----

func.func @partial_order_changed(%dy: memref<?x24xbf16>, %x: memref<?x24xbf16>, %rstd: memref<?xf32>, %dx: memref<?x24xbf16>, %w: memref<24xbf16>, %dw: memref<24xbf16>) {
  // expected-error @+1 {{dweight/dbias: this geometry adds the deterministic partial sums in another order than the cost model's (rows = 32 against 64 rows in flight)}}
  norm.rms_norm_grad dy(%dy : memref<?x24xbf16>) x(%x : memref<?x24xbf16>) rstd(%rstd : memref<?xf32>) weight(%w : memref<24xbf16>) outs dx(%dx : memref<?x24xbf16>) dweight(%dw : memref<24xbf16>) {norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 8, rows = 32, vector = 8, chunks = 1, partials = registers>}
  return
}

// -----

func.func @static_shared_past_48k(%dy: memref<?x8192xbf16>, %x: memref<?x8192xbf16>, %rstd: memref<?xf32>, %dx: memref<?x8192xbf16>, %w: memref<8192xbf16>, %dw: memref<8192xbf16>) {
  // expected-error @+1 {{shared memory: 65600 bytes of static shared memory pass the 49152 every chip gives a block without opting in}}
  norm.rms_norm_grad dy(%dy : memref<?x8192xbf16>) x(%x : memref<?x8192xbf16>) rstd(%rstd : memref<?xf32>) weight(%w : memref<8192xbf16>) outs dx(%dx : memref<?x8192xbf16>) dweight(%dw : memref<8192xbf16>) {norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 128, rows = 2, vector = 8, chunks = 8, partials = registers>}
  return
}

// -----

func.func @partials_without_home(%dy: memref<?x4096xbf16>, %x: memref<?x4096xbf16>, %rstd: memref<?xf32>, %dx: memref<?x4096xbf16>, %w: memref<4096xbf16>, %dw: memref<4096xbf16>) {
  // expected-error @+1 {{partials: the deterministic strategy's partial rows need a home (registers, shared or global)}}
  norm.rms_norm_grad dy(%dy : memref<?x4096xbf16>) x(%x : memref<?x4096xbf16>) rstd(%rstd : memref<?xf32>) weight(%w : memref<4096xbf16>) outs dx(%dx : memref<?x4096xbf16>) dweight(%dw : memref<4096xbf16>) {norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 2>}
  return
}

// -----

func.func @partials_without_dweight(%dy: memref<?x4096xbf16>, %x: memref<?x4096xbf16>, %rstd: memref<?xf32>, %dx: memref<?x4096xbf16>) {
  // expected-error @+1 {{partials: this kernel has no deterministic partial rows; got partials other than none}}
  norm.rms_norm_grad dy(%dy : memref<?x4096xbf16>) x(%x : memref<?x4096xbf16>) rstd(%rstd : memref<?xf32>) outs dx(%dx : memref<?x4096xbf16>) {norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 2, partials = shared>}
  return
}

// -----

func.func @locked_rows(%dy: memref<?x24xbf16>, %x: memref<?x24xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>, %w: memref<24xbf16>, %dx: memref<?x24xbf16>, %dw: memref<24xbf16>, %db: memref<24xbf16>) {
  // expected-error @+1 {{rows: the locked strategy holds a group's lock for one row at a time (rows = 1); got rows = 64}}
  norm.layer_norm_grad dy(%dy : memref<?x24xbf16>) x(%x : memref<?x24xbf16>) mean(%mean : memref<?xf32>) rstd(%rstd : memref<?xf32>) weight(%w : memref<24xbf16>) outs dx(%dx : memref<?x24xbf16>) dweight(%dw : memref<24xbf16>) dbias(%db : memref<24xbf16>) {strategy = #norm.strategy<locked>, norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 4, rows = 64, vector = 8, chunks = 1>}
  return
}

// -----

func.func @shared_written_wrong(%dy: memref<?x4096xbf16>, %x: memref<?x4096xbf16>, %rstd: memref<?xf32>, %dx: memref<?x4096xbf16>, %w: memref<4096xbf16>, %dw: memref<4096xbf16>) {
  // expected-error @+1 {{shared: 100 bytes written, the geometry takes 16448 (leave it out: the pass fills it in)}}
  norm.rms_norm_grad dy(%dy : memref<?x4096xbf16>) x(%x : memref<?x4096xbf16>) rstd(%rstd : memref<?xf32>) weight(%w : memref<4096xbf16>) outs dx(%dx : memref<?x4096xbf16>) dweight(%dw : memref<4096xbf16>) {norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 2, partials = shared, shared = 100>}
  return
}

// -----

func.func @forward_chunks(%x: memref<?x1000xbf16>, %y: memref<?x1000xbf16>, %rstd: memref<?xf32>) {
  // expected-error @+1 {{chunks: N = 1000 is 125 chunks over 64 lanes, 2 a lane; got chunks = 1}}
  norm.rms_norm x(%x : memref<?x1000xbf16>) outs y(%y : memref<?x1000xbf16>) rstd(%rstd : memref<?xf32>) {norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 64, rows = 4, vector = 8, chunks = 1>}
  return
}

// -----

// A forward row split over a cluster takes a block a row (the cluster's
// sums go one row at a time): the attribute's own rule.
func.func @forward_cluster_rows(%x: memref<?x4096xbf16>, %y: memref<?x4096xbf16>, %rstd: memref<?xf32>) {
  // expected-error @+1 {{#norm.row_geometry: a row split over a cluster takes one row in flight (rows = 1), got rows = 2}}
  norm.rms_norm x(%x : memref<?x4096xbf16>) outs y(%y : memref<?x4096xbf16>) rstd(%rstd : memref<?xf32>) {norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 128, rows = 2, vector = 8, chunks = 2, cluster = 2>}
  return
}

// -----

func.func @looped_cluster_slices(%dy: memref<?x262144xbf16>, %x: memref<?x262144xbf16>, %rstd: memref<?xf32>, %dx: memref<?x262144xbf16>, %w: memref<262144xbf16>, %dw: memref<262144xbf16>) {
  // expected-error @+1 {{cluster: N = 262144 in slices of 8 x 512 x 8 columns needs 8 block(s) a row, the geometry has cluster = 4}}
  norm.rms_norm_grad dy(%dy : memref<?x262144xbf16>) x(%x : memref<?x262144xbf16>) rstd(%rstd : memref<?xf32>) weight(%w : memref<262144xbf16>) outs dx(%dx : memref<?x262144xbf16>) dweight(%dw : memref<262144xbf16>) {norm.geometry = #norm.row_geometry<regime = looped, threads = 512, lanes = 512, rows = 1, vector = 8, chunks = 8, partials = global, cluster = 4, shared = 272>}
  return
}

// -----

func.func @looped_cluster_dynamic_n(%dy: memref<?x?xbf16>, %x: memref<?x?xbf16>, %rstd: memref<?xf32>, %dx: memref<?x?xbf16>, %w: memref<?xbf16>, %dw: memref<?xbf16>) {
  // expected-error @+1 {{cluster: a row split over a cluster needs a static N; this row's N is dynamic}}
  norm.rms_norm_grad dy(%dy : memref<?x?xbf16>) x(%x : memref<?x?xbf16>) rstd(%rstd : memref<?xf32>) weight(%w : memref<?xbf16>) outs dx(%dx : memref<?x?xbf16>) dweight(%dw : memref<?xbf16>) {norm.geometry = #norm.row_geometry<regime = looped, threads = 512, lanes = 512, rows = 1, vector = 1, chunks = 8, partials = global, cluster = 4, shared = 272>}
  return
}

// -----

// A written prefetch where the rows can never be 16-byte aligned (odd N),
// on a forward kernel (one wave a block), on a chip without bulk prefetch
// (choose-geometry-prefetch.mlir), past kMaxPrefetch.
func.func @prefetch_unaligned_rows(%dy: memref<?x4095xbf16>, %x: memref<?x4095xbf16>, %rstd: memref<?xf32>, %dx: memref<?x4095xbf16>, %w: memref<4095xbf16>, %dw: memref<4095xbf16>) {
  // expected-error @+1 {{prefetch: the rows are prefetched as whole 16-byte aligned ranges, which needs a static N whose rows can be 16-byte aligned (N times the element size a multiple of 16)}}
  norm.rms_norm_grad dy(%dy : memref<?x4095xbf16>) x(%x : memref<?x4095xbf16>) rstd(%rstd : memref<?xf32>) weight(%w : memref<4095xbf16>) outs dx(%dx : memref<?x4095xbf16>) dweight(%dw : memref<4095xbf16>) {norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 2, layout = interleaved, partials = shared, prefetch = 1>}
  return
}

// -----

func.func @prefetch_forward(%x: memref<?x4096xbf16>, %y: memref<?x4096xbf16>, %rstd: memref<?xf32>) {
  // expected-error @+1 {{prefetch: a forward kernel's block takes one wave of rows, so there is no row ahead of it to prefetch}}
  norm.rms_norm x(%x : memref<?x4096xbf16>) outs y(%y : memref<?x4096xbf16>) rstd(%rstd : memref<?xf32>) {norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 2, prefetch = 1>}
  return
}

// -----

func.func @prefetch_too_far(%dy: memref<?x4096xbf16>, %x: memref<?x4096xbf16>, %rstd: memref<?xf32>, %dx: memref<?x4096xbf16>, %w: memref<4096xbf16>, %dw: memref<4096xbf16>) {
  // expected-error @+1 {{prefetch: 0 to 4 waves of rows ahead, got 5}}
  norm.rms_norm_grad dy(%dy : memref<?x4096xbf16>) x(%x : memref<?x4096xbf16>) rstd(%rstd : memref<?xf32>) weight(%w : memref<4096xbf16>) outs dx(%dx : memref<?x4096xbf16>) dweight(%dw : memref<4096xbf16>) {norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 2, partials = shared, prefetch = 5>}
  return
}

// -----

// A written partial_vector where the rows can never be 16-byte aligned
// (the interleaved layout alone: no vector body to group the sums in).
func.func @partial_vector_interleaved(%dy: memref<?x4098xf32>, %x: memref<?x4098xf32>, %rstd: memref<?xf32>, %dx: memref<?x4098xf32>, %w: memref<4098xf32>, %dw: memref<4098xf32>) {
  // expected-error @+1 {{partial_vector: only the vector layout's body groups the partial sums, and rows that can never be 16-byte aligned have none (layout = interleaved)}}
  norm.rms_norm_grad dy(%dy : memref<?x4098xf32>) x(%x : memref<?x4098xf32>) rstd(%rstd : memref<?xf32>) weight(%w : memref<4098xf32>) outs dx(%dx : memref<?x4098xf32>) dweight(%dw : memref<4098xf32>) {norm.geometry = #norm.row_geometry<regime = registers, threads = 128, lanes = 128, rows = 1, vector = 4, chunks = 9, layout = interleaved, partials = shared, partial_vector = 4>}
  return
}

// -----

// A written pipeline on a forward kernel (one wave a block: no row ahead),
// and a written pipeline whose aligned body checks alignment a chunk (layout
// = vector: its fallback would keep the loaded row live through a second
// body).
func.func @pipeline_forward(%x: memref<?x4096xbf16>, %y: memref<?x4096xbf16>, %rstd: memref<?xf32>) {
  // expected-error @+1 {{pipeline: a forward kernel's block takes one wave of rows, so there is no row ahead of it to load}}
  norm.rms_norm x(%x : memref<?x4096xbf16>) outs y(%y : memref<?x4096xbf16>) rstd(%rstd : memref<?xf32>) {norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 2, layout = both, pipeline = 1>}
  return
}

// -----

// Whole warps are lanes the attribute takes, but they must still cover
// the row: N = 1024 bf16 is 128 chunks, 2 a lane of 96.
func.func @whole_warps_do_not_cover(%dy: memref<?x1024xbf16>, %x: memref<?x1024xbf16>, %rstd: memref<?xf32>, %dx: memref<?x1024xbf16>, %w: memref<1024xbf16>, %dw: memref<1024xbf16>) {
  // expected-error @+1 {{chunks: N = 1024 is 128 chunks over 96 lanes, 2 a lane; got chunks = 1}}
  norm.rms_norm_grad dy(%dy : memref<?x1024xbf16>) x(%x : memref<?x1024xbf16>) rstd(%rstd : memref<?xf32>) weight(%w : memref<1024xbf16>) outs dx(%dx : memref<?x1024xbf16>) dweight(%dw : memref<1024xbf16>) {norm.geometry = #norm.row_geometry<regime = registers, threads = 192, lanes = 96, rows = 2, vector = 8, chunks = 1, partials = registers>}
  return
}
