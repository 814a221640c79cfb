// RUN: norm-opt %s --norm-lower-to-loops --norm-choose-geometry=rows=16384 --norm-map-to-gpu="rows=16384" | FileCheck %s --check-prefix=WAVE
// RUN: norm-opt %s --norm-lower-to-loops --norm-choose-geometry=rows=16384 --norm-map-to-gpu="rows=16384 wave-resident=false" | FileCheck %s --check-prefix=OFF
// RUN: norm-opt %s --norm-lower-to-loops --norm-choose-geometry=rows=100 --norm-map-to-gpu="rows=100" | FileCheck %s --check-prefix=FEW

// wave-resident (Geometry.h dxWaveBlocks; on by default): a dx kernel without the ring or
// early rows records the blocks an SM that keep its largest launch one
// wave (`wave`, the manifest's wave_blocks; the runtime asks the JIT for
// them where its registers fall short, test/Runtime/wave.test). LayerNorm bf16 N = 4096: 256 threads, 16 elements a lane, the
// partial rows in shared memory (register estimate 64), and no ring (its
// 16 registers would cost the fourth block). Past the last row edge G is
// 512: four blocks an SM on 132 SMs, which the estimate fits; unasked,
// ptxas gives the kernel 70 registers, three blocks, two waves. At 100
// rows G is 128, a block an SM: nothing to ask.
// WAVE-LABEL: func.func @ln4096
// WAVE-SAME: #norm.kernel<name = "ln4096_dx_1", kind = dx, block = 256, grid = programs, lanes = 256, rows = 1, vector = 8, registers = true, wave = 4, waits = true>
// OFF-LABEL: func.func @ln4096
// OFF-SAME: #norm.kernel<name = "ln4096_dx_1", kind = dx, block = 256, grid = programs, lanes = 256, rows = 1, vector = 8, registers = true, waits = true>
// FEW-LABEL: func.func @ln4096
// FEW-SAME: #norm.kernel<name = "ln4096_dx_1", kind = dx, block = 256, grid = programs, lanes = 256, rows = 1, vector = 8, registers = true, waits = true>
func.func @ln4096(%dy: memref<?x4096xbf16>, %x: memref<?x4096xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>, %w: memref<4096xbf16>, %dx: memref<?x4096xbf16>, %dw: memref<4096xbf16>, %db: memref<4096xbf16>) {
  norm.layer_norm_grad dy(%dy : memref<?x4096xbf16>) x(%x : memref<?x4096xbf16>) mean(%mean : memref<?xf32>) rstd(%rstd : memref<?xf32>) weight(%w : memref<4096xbf16>) outs dx(%dx : memref<?x4096xbf16>) dweight(%dw : memref<4096xbf16>) dbias(%db : memref<4096xbf16>)
  return
}

// With dresidual the early rows' rule decides (dxEarlyRows), not this one.
// WAVE-LABEL: func.func @ln1000_dres
// WAVE-SAME: #norm.kernel<name = "ln1000_dres_dx_1", kind = dx, block = 256, grid = programs, lanes = 128, rows = 2, vector = 8, registers = true, waits = true>
func.func @ln1000_dres(%dy: memref<?x1000xbf16>, %x: memref<?x1000xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>, %w: memref<1000xbf16>, %dres: memref<?x1000xbf16>, %dx: memref<?x1000xbf16>, %dw: memref<1000xbf16>, %db: memref<1000xbf16>) {
  norm.layer_norm_grad dy(%dy : memref<?x1000xbf16>) x(%x : memref<?x1000xbf16>) mean(%mean : memref<?xf32>) rstd(%rstd : memref<?xf32>) weight(%w : memref<1000xbf16>) dresidual(%dres : memref<?x1000xbf16>) outs dx(%dx : memref<?x1000xbf16>) dweight(%dw : memref<1000xbf16>) dbias(%db : memref<1000xbf16>)
  return
}
