// RUN: norm-opt %s --norm-lower-to-loops --norm-choose-geometry="tuning=false rows=129" --norm-map-to-gpu="rows=129 async-rows=0" | FileCheck %s --check-prefix=HINT
// RUN: norm-opt %s --norm-lower-to-loops --norm-choose-geometry="tuning=false rows=1" --norm-map-to-gpu="rows=1 async-rows=0" | FileCheck %s --check-prefix=FEW
// RUN: norm-opt %s --norm-lower-to-loops --norm-choose-geometry=tuning=false --norm-map-to-gpu=async-rows=0 | FileCheck %s --check-prefix=CAP

// The wave a dx kernel's early rows are fitted to is its largest launch
// for the rows hint (Geometry.h dxLargestPrograms): G at the last M of the
// hint's bucket. LayerNorm bf16 N = 3000 (128 threads, 24 elements a
// lane): at hint 129, G(512, 3000) = 256 programs, one wave at two blocks
// an SM; the early row's estimate fits, so it stays and the kernel asks
// for two blocks. At hint 1, G(128) = 128 programs: one block an SM is a
// wave, nothing to ask. Without a hint, G's cap for N (512 programs: four
// blocks an SM). Measured (plan dres-few, H200): judged at the cap
// whatever the hint, LayerNorm bf16 512 x 3000 (the table's 512-thread
// kernel) ran at 72 registers in two waves, 1.17x slower than reading
// dresidual late; judged at the hint's G, 0.905x the time of reading late
// over the plan's 96 kernels, none slower than 1.012x.
// HINT-LABEL: func.func @ln3000
// HINT-SAME: %[[DRES:arg5]]: memref<?x3000xbf16>
// HINT-SAME: #norm.kernel<name = "ln3000_dx_1", kind = dx, block = 128, grid = programs, lanes = 128, rows = 1, vector = 8, registers = true, resident = 2, waits = true>
// HINT: gpu.launch
// HINT: vector.load %[[DRES]]
// HINT: gpu.shuffle
// FEW-LABEL: func.func @ln3000
// FEW-SAME: #norm.kernel<name = "ln3000_dx_1", kind = dx, block = 128, grid = programs, lanes = 128, rows = 1, vector = 8, registers = true, waits = true>
// CAP-LABEL: func.func @ln3000
// CAP-SAME: #norm.kernel<name = "ln3000_dx_1", kind = dx, block = 128, grid = programs, lanes = 128, rows = 1, vector = 8, registers = true, resident = 4, waits = true>
func.func @ln3000(%dy: memref<?x3000xbf16>, %x: memref<?x3000xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>, %w: memref<3000xbf16>, %dres: memref<?x3000xbf16>, %dx: memref<?x3000xbf16>, %dw: memref<3000xbf16>, %db: memref<3000xbf16>) {
  norm.layer_norm_grad dy(%dy : memref<?x3000xbf16>) x(%x : memref<?x3000xbf16>) mean(%mean : memref<?xf32>) rstd(%rstd : memref<?xf32>) weight(%w : memref<3000xbf16>) dresidual(%dres : memref<?x3000xbf16>) outs dx(%dx : memref<?x3000xbf16>) dweight(%dw : memref<3000xbf16>) dbias(%db : memref<3000xbf16>)
  return
}
