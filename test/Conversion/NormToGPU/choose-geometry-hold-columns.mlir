// RUN: norm-opt %s --split-input-file --norm-choose-geometry="tuning=false hold-columns=1" --verify-diagnostics | FileCheck %s
// RUN: norm-opt %s --split-input-file --norm-choose-geometry="tuning=false" | FileCheck %s --check-prefix=MODEL
// RUN: not norm-opt %s --split-input-file --norm-choose-geometry="hold-columns=2" 2>&1 | FileCheck %s --check-prefix=OPTION
// RUN: norm-opt %s --split-input-file --norm-choose-geometry="tuning=false rows=300" 2>/dev/null | FileCheck %s --check-prefix=FEW
// RUN: norm-opt %s --split-input-file --norm-choose-geometry="tuning=false rows=300 chip=sm_80" 2>/dev/null | FileCheck %s --check-prefix=SM80
// RUN: norm-opt %s --split-input-file --norm-choose-geometry="tuning=false rows=600" 2>/dev/null | FileCheck %s --check-prefix=MANY
// RUN: norm-opt %s --split-input-file --norm-choose-geometry="tuning=false rows=1" 2>/dev/null | FileCheck %s --check-prefix=FEW
// RUN: norm-opt %s --split-input-file --norm-choose-geometry="tuning=false rows=300 hold-columns=0" 2>/dev/null | FileCheck %s --check-prefix=MANY
// RUN: norm-opt %s --split-input-file --norm-choose-geometry="tuning=false rows=1 cluster=4" 2>/dev/null | FileCheck %s --check-prefix=SPLIT
// RUN: norm-opt %s --split-input-file --norm-choose-geometry="tuning=false rows=300 cluster=4" 2>/dev/null | FileCheck %s --check-prefix=SPLITMANY

// The hold-columns option over the cost model's geometry: taken where a
// register-regime kernel has a vector layout (a forward kernel too),
// refused as a written hold_columns would be where the kernel is looped
// (N = 262144: a block walks its row in a chunk loop) or its rows can
// never be 16-byte aligned (N = 4095: interleaved). Without it, the cost
// model holds nothing.
// CHECK-LABEL: func.func @forward
// CHECK: norm.geometry = #norm.row_geometry<regime = registers, {{.*}}, hold_columns = 1
// MODEL-LABEL: func.func @forward
// MODEL-NOT: hold_columns
//
// The cost model's hold_columns (holdColumnsPays): a forward kernel built
// for a rows hint holds its columns where the hint's bucket (M = 129-512
// for rows = 300), at its last M, is one wave of blocks with the held
// registers: RMSNorm bf16 N = 2048 has 4 rows a block of 256 threads, 128
// blocks at M = 512; 32 elements a lane and 16 held words come to an
// estimated 80 registers, three blocks an SM: 396 resident on sm_90's 132
// SMs, 324 on sm_80's 108. The next bucket (M = 513-2048, rows = 600)
// takes 512 blocks, more than a wave on either. A dx kernel holds
// nothing; hold-columns=0 overrides.
// FEW-LABEL: func.func @forward
// FEW: norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 64, rows = 4, vector = 8, chunks = 4, layout = both, hold_columns = 1
// FEW-LABEL: func.func @dx
// FEW-NOT: hold_columns
// SM80-LABEL: func.func @forward
// SM80: norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 64, rows = 4, vector = 8, chunks = 4, layout = both, hold_columns = 1
// MANY-LABEL: func.func @forward
// MANY-NOT: hold_columns
// OPTION: norm-choose-geometry: hold-columns must be -1 (the tuning table's, else the cost model's), 0 or 1, got 2
func.func @forward(%x: memref<?x2048xbf16>, %w: memref<2048xbf16>, %y: memref<?x2048xbf16>, %rstd: memref<?xf32>) {
  norm.rms_norm x(%x : memref<?x2048xbf16>) weight(%w : memref<2048xbf16>) outs y(%y : memref<?x2048xbf16>) rstd(%rstd : memref<?xf32>)
  return
}

// -----

// CHECK-LABEL: func.func @dx
// CHECK: norm.geometry = #norm.row_geometry<regime = registers, {{.*}}, hold_columns = 1
func.func @dx(%dy: memref<?x4096xbf16>, %x: memref<?x4096xbf16>, %rstd: memref<?xf32>, %dx: memref<?x4096xbf16>, %w: memref<4096xbf16>, %dw: memref<4096xbf16>) {
  norm.rms_norm_grad dy(%dy : memref<?x4096xbf16>) x(%x : memref<?x4096xbf16>) rstd(%rstd : memref<?xf32>) weight(%w : memref<4096xbf16>) outs dx(%dx : memref<?x4096xbf16>) dweight(%dw : memref<4096xbf16>)
  return
}

// -----

func.func @looped(%x: memref<?x262144xbf16>, %w: memref<262144xbf16>, %y: memref<?x262144xbf16>, %rstd: memref<?xf32>) {
  // expected-error @+1 {{norm-choose-geometry: hold-columns=1 is refused: hold_columns: the columns are held for a lane's unrolled chunks, which needs the register regime (regime = registers)}}
  norm.rms_norm x(%x : memref<?x262144xbf16>) weight(%w : memref<262144xbf16>) outs y(%y : memref<?x262144xbf16>) rstd(%rstd : memref<?xf32>)
  return
}

// -----

func.func @never_aligned(%x: memref<?x4095xbf16>, %w: memref<4095xbf16>, %b: memref<4095xbf16>, %y: memref<?x4095xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>) {
  // expected-error @+1 {{norm-choose-geometry: hold-columns=1 is refused: hold_columns: only the vector layout's 16-byte loads are held, and these rows can never be 16-byte aligned (N times the element size a multiple of 16)}}
  norm.layer_norm x(%x : memref<?x4095xbf16>) weight(%w : memref<4095xbf16>) bias(%b : memref<4095xbf16>) outs y(%y : memref<?x4095xbf16>) mean(%mean : memref<?xf32>) rstd(%rstd : memref<?xf32>)
  return
}

// -----

// A row split over a cluster (the cluster option, or a tuning entry's) has
// C blocks a row: RMSNorm bf16 N = 16384 over 4 blocks of 256 threads, 2
// chunks a lane. At rows = 1 (the bucket M = 1-128: 512 blocks at M =
// 128) the held kernel's estimated 56 registers give four blocks an SM,
// 528 resident on sm_90: one wave, held (the first rule, at most one
// block an SM, never held a cluster's blocks; the H200 timed RMSNorm 8 x
// 14336 over a cluster of 8 at 11.2 us unheld, 5.5 held). At rows = 300
// (2048 blocks at M = 512): not held.
// SPLIT-LABEL: func.func @forward_split
// SPLIT: norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 256, rows = 1, vector = 8, chunks = 2, cluster = 4, hold_columns = 1
// SPLITMANY-LABEL: func.func @forward_split
// SPLITMANY-NOT: hold_columns
// FEW-LABEL: func.func @forward_split
func.func @forward_split(%x: memref<?x16384xbf16>, %w: memref<16384xbf16>, %y: memref<?x16384xbf16>, %rstd: memref<?xf32>) {
  norm.rms_norm x(%x : memref<?x16384xbf16>) weight(%w : memref<16384xbf16>) outs y(%y : memref<?x16384xbf16>) rstd(%rstd : memref<?xf32>)
  return
}
