// RUN: norm-opt %s --norm-lower-to-loops --norm-choose-geometry=rows=16384 --norm-map-to-gpu="rows=16384 ring-dynamic=true" | FileCheck %s
// RUN: norm-opt %s --norm-lower-to-loops --norm-choose-geometry=rows=16384 --norm-map-to-gpu=rows=16384 | FileCheck %s --check-prefix=STATIC

// ring-dynamic (RowPipeline.cpp; false by default): where the static
// shared memory beside the kernel's own holds fewer than async-rows (2)
// waves of the ring, the ring goes to dynamic shared memory after the
// kernel's own dynamic bytes.
//
// LayerNorm bf16 N = 3072 at 16384 rows: 128 lanes at three chunks a lane,
// its two partial rows in static shared memory (2 x 3072 f32, 24 KB). A
// wave of the ring is x and dy (3 x 128 chunks of 8 bf16 each, 6 KB a
// memref) and mean and rstd (128 f32 each): 13 KB, and 22 KB are left
// beside the partial rows. Dynamic: both waves from byte 0 (x, dy, mean,
// rstd: 2 x 6144 bf16, 2 x 256 f32), 26624 bytes, the size the launch and
// the manifest's kernel (`shared`) carry. Static (the default): the one
// wave that fits, as workgroup attributions.
// CHECK-LABEL: func @layer_norm_grad_n3072
// CHECK-SAME: #norm.kernel<name = "layer_norm_grad_n3072_dx_1", kind = dx, block = 128, grid = programs, lanes = 128, rows = 1, vector = 8, registers = true, shared = 26624, resident = 4, waits = true>
// CHECK: gpu.launch
// CHECK-SAME: dynamic_shared_memory_size %{{.*}} module(@layer_norm_grad_n3072_kernels) function(@layer_norm_grad_n3072_dx_1) workgroup(%[[WS0:.*]] : memref<3072xf32, #gpu.address_space<workgroup>>, %[[WS1:.*]] : memref<3072xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<8xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<8xf32, #gpu.address_space<workgroup>>) {
// CHECK:      %[[B0:.*]] = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// CHECK-NEXT: %[[O0:.*]] = arith.constant 0 : index
// CHECK-NEXT: %[[X:.*]] = memref.view %[[B0]][%[[O0]]][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<6144xbf16, #gpu.address_space<workgroup>>
// CHECK-NEXT: %[[B1:.*]] = gpu.dynamic_shared_memory
// CHECK-NEXT: %[[O1:.*]] = arith.constant 12288 : index
// CHECK-NEXT: %[[DY:.*]] = memref.view %[[B1]][%[[O1]]][] : {{.*}} to memref<6144xbf16, #gpu.address_space<workgroup>>
// CHECK-NEXT: %[[B2:.*]] = gpu.dynamic_shared_memory
// CHECK-NEXT: %[[O2:.*]] = arith.constant 24576 : index
// CHECK-NEXT: %[[MEAN:.*]] = memref.view %[[B2]][%[[O2]]][] : {{.*}} to memref<256xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT: %[[B3:.*]] = gpu.dynamic_shared_memory
// CHECK-NEXT: %[[O3:.*]] = arith.constant 25600 : index
// CHECK-NEXT: %[[RSTD:.*]] = memref.view %[[B3]][%[[O3]]][] : {{.*}} to memref<256xf32, #gpu.address_space<workgroup>>
// The copies go into the views, the wave's loads come from them, and the
// partial rows stay where they were.
// CHECK:      memref.extract_aligned_pointer_as_index %[[MEAN]]
// CHECK:      nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 4, cache =  ca
// CHECK:      memref.extract_aligned_pointer_as_index %[[X]]
// CHECK:      nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 16, cache =  cg
// CHECK:      nvvm.cp.async.wait.group 1
// CHECK:      memref.load %[[MEAN]]
// CHECK:      vector.load %[[X]][%{{.*}}] {alignment = 16 : i64} : memref<6144xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// CHECK:      vector.load %[[DY]][%{{.*}}] {alignment = 16 : i64} : memref<6144xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// CHECK:      memref.load %[[WS0]]
// STATIC-LABEL: func @layer_norm_grad_n3072
// STATIC-SAME: #norm.kernel<name = "layer_norm_grad_n3072_dx_1", kind = dx, block = 128, grid = programs, lanes = 128, rows = 1, vector = 8, registers = true, resident = 4, waits = true>
// STATIC: gpu.launch
// STATIC-NOT: dynamic_shared_memory_size
// STATIC-SAME: function(@layer_norm_grad_n3072_dx_1) workgroup(%{{.*}} : memref<3072xbf16, #gpu.address_space<workgroup>>, %{{.*}} : memref<3072xbf16, #gpu.address_space<workgroup>>, %{{.*}} : memref<128xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<128xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<3072xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<3072xf32, #gpu.address_space<workgroup>>,
// STATIC-NOT: gpu.dynamic_shared_memory
// STATIC: nvvm.cp.async.wait.group 0
func.func @layer_norm_grad_n3072(%dy: memref<?x3072xbf16>, %x: memref<?x3072xbf16>, %mean: memref<?xf32>,
                                 %rstd: memref<?xf32>, %w: memref<3072xbf16>, %dx: memref<?x3072xbf16>,
                                 %dw: memref<3072xbf16>, %db: memref<3072xbf16>) {
  norm.layer_norm_grad dy(%dy : memref<?x3072xbf16>) x(%x : memref<?x3072xbf16>)
      mean(%mean : memref<?xf32>) rstd(%rstd : memref<?xf32>) weight(%w : memref<3072xbf16>)
      outs dx(%dx : memref<?x3072xbf16>) dweight(%dw : memref<3072xbf16>) dbias(%db : memref<3072xbf16>)
  return
}

// LayerNorm bf16 N = 6144: 256 lanes at three chunks, its partial rows in
// dynamic shared memory (2 x 6144 f32 from byte 0, 48 KB). The ring comes
// after them, from byte 49152: x and dy (2 x 3 x 256 x 8 bf16, 24 KB
// each), then mean and rstd, to 102400 bytes.
// CHECK-LABEL: func @layer_norm_grad_n6144
// CHECK-SAME: #norm.kernel<name = "layer_norm_grad_n6144_dx_1", kind = dx, block = 256, grid = programs, lanes = 256, rows = 1, vector = 8, registers = true, shared = 102400, waits = true>
// CHECK:      %[[R:.*]] = arith.constant 49152 : index
// CHECK-NEXT: memref.view %{{.*}}[%[[R]]][] : {{.*}} to memref<12288xbf16, #gpu.address_space<workgroup>>
// CHECK:      arith.constant 73728 : index
// CHECK-NEXT: memref.view {{.*}} to memref<12288xbf16, #gpu.address_space<workgroup>>
// CHECK:      arith.constant 98304 : index
// CHECK-NEXT: memref.view {{.*}} to memref<512xf32, #gpu.address_space<workgroup>>
// CHECK:      arith.constant 100352 : index
// CHECK-NEXT: memref.view {{.*}} to memref<512xf32, #gpu.address_space<workgroup>>
// CHECK:      %[[P:.*]] = arith.constant 0 : index
// CHECK-NEXT: memref.view %{{.*}}[%[[P]]][] : {{.*}} to memref<6144xf32, #gpu.address_space<workgroup>>
// CHECK:      arith.constant 24576 : index
// CHECK-NEXT: memref.view {{.*}} to memref<6144xf32, #gpu.address_space<workgroup>>
// STATIC-LABEL: func @layer_norm_grad_n6144
// STATIC-SAME: shared = 49152, waits = true>
func.func @layer_norm_grad_n6144(%dy: memref<?x6144xbf16>, %x: memref<?x6144xbf16>, %mean: memref<?xf32>,
                                 %rstd: memref<?xf32>, %w: memref<6144xbf16>, %dx: memref<?x6144xbf16>,
                                 %dw: memref<6144xbf16>, %db: memref<6144xbf16>) {
  norm.layer_norm_grad dy(%dy : memref<?x6144xbf16>) x(%x : memref<?x6144xbf16>)
      mean(%mean : memref<?xf32>) rstd(%rstd : memref<?xf32>) weight(%w : memref<6144xbf16>)
      outs dx(%dx : memref<?x6144xbf16>) dweight(%dw : memref<6144xbf16>) dbias(%db : memref<6144xbf16>)
  return
}
