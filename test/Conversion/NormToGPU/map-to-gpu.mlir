// RUN: norm-opt %s --split-input-file --norm-lower-to-loops --norm-choose-geometry --norm-map-to-gpu | FileCheck %s
// RUN: norm-opt %s --split-input-file --norm-lower-to-loops --norm-choose-geometry=max-lanes=2 --norm-map-to-gpu | FileCheck %s --check-prefix=LANES

// N = 24 (the tall-skinny case): 3 chunks of 8 bf16 per row, so 4 lanes per
// row and 64 rows in flight per 256-thread block; row caches and the
// deterministic partial row in registers (private arrays), combined across
// the 64 sub-groups through shared memory in a fixed order. Every program
// writes its partial row whole, so no kernel clears it first (the zero nest
// of the `deterministic` strategy is dropped; the workspace is
// `norm.written`, which the manifest passes on to the runtime).
// With max-lanes=2 a row of 3 chunks takes 2 lanes of 2 chunks each: 128
// rows in flight.
// LANES-LABEL: func @rms_norm_grad_n24
// LANES-SAME: kind = dx, block = 256, grid = programs, lanes = 2, rows = 128, vector = 8, registers = true, waits = true>
// CHECK-LABEL: func @rms_norm_grad_n24
// CHECK-SAME: norm.kernels = [#norm.kernel<name = "rms_norm_grad_n24_dx_1", kind = dx, block = 256, grid = programs, lanes = 4, rows = 64, vector = 8, registers = true, wave = 4, waits = true>, #norm.kernel<name = "rms_norm_grad_n24_reduce_2", kind = reduce, block = 64, grid = columns, columns = 8, waits = true, skip_at_one_group = true>]
// CHECK: memref.alloc({{.*}}) {norm.workspace, norm.written} : memref<?x24xf32>
// CHECK-NOT: gpu.launch
// CHECK: gpu.launch {{.*}} threads({{.*}}) in ({{.*}} = %c256{{.*}}) module(@rms_norm_grad_n24_kernels) function(@rms_norm_grad_n24_dx_1) workgroup(%[[SMEM:.*]] : memref<64x24xf32, #gpu.address_space<workgroup>>)
// CHECK:   memref.extract_aligned_pointer_as_index
// CHECK:   memref.alloca() : memref<8xf32>
// CHECK:   scf.for
// CHECK:     vector.load {{.*}} {alignment = 16 : i64} : memref<?x24xbf16>, vector<8xbf16>
// CHECK:     gpu.shuffle  xor %{{.*}}, %c2_i32, %c32_i32 : f32
// CHECK:     vector.store {{.*}} {alignment = 16 : i64} : memref<?x24xbf16>, vector<8xbf16>
// CHECK:   memref.store {{.*}}, %[[SMEM]]
// CHECK:   gpu.barrier
// CHECK: gpu.launch {{.*}} function(@rms_norm_grad_n24_reduce_2)
// The reduce (map-to-gpu-reduce.mlir has its batches): 3 blocks of 8
// columns; a thread sums the partial rows w = slice, slice + 8, ..., 16
// of them a batch, in row order.
// CHECK:   scf.for {{.*}} step %c128{{.*}} iter_args
// CHECK-COUNT-16: memref.load %{{.*}} : memref<?x24xf32>
// CHECK-NOT: memref.load
// CHECK:     arith.addf
// CHECK:     scf.yield
// CHECK-NOT: norm.stage
func.func @rms_norm_grad_n24(%dy: memref<?x24xbf16>, %x: memref<?x24xbf16>, %rstd: memref<?xf32>,
                             %w: memref<24xbf16>, %dx: memref<?x24xbf16>, %dw: memref<24xbf16>) {
  norm.rms_norm_grad dy(%dy : memref<?x24xbf16>) x(%x : memref<?x24xbf16>) rstd(%rstd : memref<?xf32>)
      weight(%w : memref<24xbf16>) outs dx(%dx : memref<?x24xbf16>) dweight(%dw : memref<24xbf16>)
  return
}

// -----

// N = 4096 bf16: 512 chunks, the whole block on one row (2 chunks per
// lane); the in-row sums go across the 8 warps through shared memory.
// CHECK-LABEL: func @layer_norm_grad_n4096
// CHECK-SAME: #norm.kernel<name = "layer_norm_grad_n4096_dx_1", kind = dx, block = 256, grid = programs, lanes = 256, rows = 1, vector = 8, registers = true, wave = 4, waits = true>
// CHECK: gpu.launch {{.*}} function(@layer_norm_grad_n4096_dx_1) workgroup(%{{.*}} : memref<16xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<16xf32, #gpu.address_space<workgroup>>)
// CHECK:   gpu.shuffle  xor %{{.*}}, %c16_i32, %c32_i32 : f32
// CHECK:   gpu.barrier
func.func @layer_norm_grad_n4096(%dy: memref<?x4096xbf16>, %x: memref<?x4096xbf16>, %mean: memref<?xf32>,
                                 %rstd: memref<?xf32>, %w: memref<4096xf32>, %dx: memref<?x4096xbf16>,
                                 %dw: memref<4096xf32>, %db: memref<4096xf32>) {
  norm.layer_norm_grad dy(%dy : memref<?x4096xbf16>) x(%x : memref<?x4096xbf16>)
      mean(%mean : memref<?xf32>) rstd(%rstd : memref<?xf32>) weight(%w : memref<4096xf32>)
      outs dx(%dx : memref<?x4096xbf16>) dweight(%dw : memref<4096xf32>) dbias(%db : memref<4096xf32>)
  return
}

// -----

// Dynamic N: no registers; a block of the looped regime's 512 threads per
// row walks its chunks in a loop and re-reads the row (from L2) in the dx
// loop; element accesses (no guarantee of whole 16-byte chunks).
// CHECK-LABEL: func @rms_norm_grad_dynamic_n
// CHECK-SAME: #norm.kernel<name = "rms_norm_grad_dynamic_n_dx_0", kind = dx, block = 512, grid = programs, lanes = 512, rows = 1, vector = {{[0-9]+}}, registers = false, waits = true>
// CHECK: function(@rms_norm_grad_dynamic_n_dx_0)
// CHECK-NOT: memref.alloca
// CHECK-NOT: vector.load
// CHECK: scf.for {{.*}} iter_args
func.func @rms_norm_grad_dynamic_n(%dy: memref<?x?xf32>, %x: memref<?x?xf32>, %rstd: memref<?xf32>,
                                   %dx: memref<?x?xf32>) {
  norm.rms_norm_grad dy(%dy : memref<?x?xf32>) x(%x : memref<?x?xf32>) rstd(%rstd : memref<?xf32>)
      outs dx(%dx : memref<?x?xf32>)
  return
}

// -----

// Atomic strategies keep their atomics in the kernel.
// CHECK-LABEL: func @rms_norm_grad_grouped_atomic
// CHECK: function(@rms_norm_grad_grouped_atomic_dx_1)
// CHECK:   memref.atomic_rmw addf
func.func @rms_norm_grad_grouped_atomic(%dy: memref<?x128xf16>, %x: memref<?x128xf16>, %rstd: memref<?xf32>,
                                        %w: memref<128xf16>, %dx: memref<?x128xf16>, %dw: memref<128xf16>) {
  norm.rms_norm_grad dy(%dy : memref<?x128xf16>) x(%x : memref<?x128xf16>) rstd(%rstd : memref<?xf32>)
      weight(%w : memref<128xf16>) outs dx(%dx : memref<?x128xf16>) dweight(%dw : memref<128xf16>)
      {strategy = #norm.strategy<grouped_atomic>}
  return
}

// -----

// locked: the whole block takes a row; thread 0 spins on the group's lock,
// fences, and releases after a barrier. N = 64 f32 is 16 chunks: of the
// thread counts the geometry chooses from, 128 wastes the fewest slots.
// CHECK-LABEL: func @layer_norm_grad_locked
// CHECK-SAME: #norm.kernel<name = "layer_norm_grad_locked_dx_1", kind = dx, block = 128, grid = programs, lanes = 128,
// CHECK: function(@layer_norm_grad_locked_dx_1)
// CHECK:   scf.while
// CHECK:   nvvm.memory.barrier <gpu>
// CHECK:   gpu.barrier
// CHECK:   gpu.barrier
// CHECK:   nvvm.memory.barrier <gpu>
// CHECK:   memref.atomic_rmw assign
func.func @layer_norm_grad_locked(%dy: memref<?x64xf32>, %x: memref<?x64xf32>, %mean: memref<?xf32>,
                                  %rstd: memref<?xf32>, %dx: memref<?x64xf32>, %db: memref<64xf32>) {
  norm.layer_norm_grad dy(%dy : memref<?x64xf32>) x(%x : memref<?x64xf32>)
      mean(%mean : memref<?xf32>) rstd(%rstd : memref<?xf32>)
      outs dx(%dx : memref<?x64xf32>) dbias(%db : memref<64xf32>) {strategy = #norm.strategy<locked>}
  return
}

// -----

// Forward: blocks of S rows; mean / rstd written once per row by lane 0.
// N = 1000 bf16 is 125 chunks: 32 lanes x 4 chunks (the forward's lane
// rule, kForwardShareChunks), 8 rows a block.
// CHECK-LABEL: func @layer_norm_forward_n1000
// CHECK-SAME: kind = forward, block = 256, grid = row_blocks, lanes = 32,
// CHECK: function(@layer_norm_forward_n1000_forward_0)
// CHECK:   math.rsqrt
func.func @layer_norm_forward_n1000(%x: memref<?x1000xbf16>, %w: memref<1000xbf16>, %b: memref<1000xbf16>,
                                    %y: memref<?x1000xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>) {
  norm.layer_norm x(%x : memref<?x1000xbf16>) weight(%w : memref<1000xbf16>) bias(%b : memref<1000xbf16>)
      outs y(%y : memref<?x1000xbf16>) mean(%mean : memref<?xf32>) rstd(%rstd : memref<?xf32>)
  return
}
