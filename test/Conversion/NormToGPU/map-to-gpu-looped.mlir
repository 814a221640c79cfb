// RUN: norm-opt %s --split-input-file --norm-lower-to-loops --norm-choose-geometry="batch-rows=2" --norm-map-to-gpu --canonicalize --cse | FileCheck %s
// RUN: norm-opt %s --split-input-file --norm-lower-to-loops --norm-choose-geometry --norm-map-to-gpu | FileCheck %s --check-prefix=CHOSEN
// RUN: norm-opt %s --split-input-file --norm-lower-to-loops --norm-choose-geometry="batch-rows=1" --norm-map-to-gpu | FileCheck %s --check-prefix=ONE
// RUN: not norm-opt %s --norm-choose-geometry=batch-rows=17 --norm-map-to-gpu 2>&1 | FileCheck %s --check-prefix=RANGE

// The looped regime (N = 131072: no register share, no cluster reaches it)
// takes its rows in batches of B (here the option's 2): row i of a batch
// is min(first + i, last) and counts only while first + i is below the
// program's end (row 0 always does). The reduction loop of the two rows
// walks the columns once: both rows' 16-byte loads first, then, per
// column, the partial sums so far (zero in the program's first batch: no
// kernel clears the partial rows, this one writes them whole), the rows'
// terms added in row order (a row past the end adds nothing: select), one
// write; on the vector path (aligned rows, a whole chunk) the partial sums
// move as 16-byte vectors, on the element path an element at a time. The four in-row sums meet in one cross-warp step
// (one barrier: the scratch is double-buffered, row-barriers); then each
// row's dx loop, under its own row check. A program without rows writes
// zeros.
// CHECK-LABEL: func @layer_norm_grad_looped
// CHECK-SAME: norm.kernels = [#norm.kernel<name = "layer_norm_grad_looped_dx_1", kind = dx, block = 512, grid = programs, lanes = 512, rows = 1, vector = 8, registers = false, waits = true>, #norm.kernel<name = "layer_norm_grad_looped_reduce_2"
// CHECK: %[[WSW:.*]] = memref.alloc({{.*}}) {norm.workspace, norm.written} : memref<?x131072xf32>
// CHECK: %[[WSB:.*]] = memref.alloc({{.*}}) {norm.workspace, norm.written} : memref<?x131072xf32>
// CHECK-NOT: gpu.launch
// CHECK: gpu.launch {{.*}} function(@layer_norm_grad_looped_dx_1)
// CHECK:   scf.for %[[FIRST:.*]] = %[[LO:.*]] to %[[END:.*]] step %c2 {
// CHECK:     %[[ISFIRST:.*]] = arith.cmpi eq, %[[FIRST]], %[[LO]]
// CHECK:     %[[ROW0:.*]] = arith.minui %[[FIRST]], %[[LAST:.*]] : index
// CHECK:     %[[NEXT:.*]] = arith.addi %[[FIRST]], %c1
// CHECK:     %[[ACTIVE1:.*]] = arith.cmpi ult, %[[NEXT]], %[[END]]
// CHECK:     %[[ROW1:.*]] = arith.minui %[[NEXT]], %[[LAST]] : index
// CHECK:     scf.for {{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32) {
// CHECK:       vector.load %arg0[%[[ROW0]], %[[J:.*]]] {alignment = 16 : i64}
// CHECK-NEXT:  vector.load %arg1[%[[ROW0]], %[[J]]]
// CHECK-NEXT:  vector.load %arg0[%[[ROW1]], %[[J]]]
// CHECK-NEXT:  vector.load %arg1[%[[ROW1]], %[[J]]]
// CHECK-NEXT:  %[[OLDW:.*]] = scf.if %[[ISFIRST]] -> (vector<4xf32>) {
// CHECK-NEXT:    scf.yield %[[ZEROV:.*]] : vector<4xf32>
// CHECK-NEXT:  } else {
// CHECK-NEXT:    vector.load %[[WSW]][%[[P:.*]], %[[J]]] {alignment = 16 : i64} : memref<?x131072xf32>, vector<4xf32>
// CHECK:       %[[W0:.*]] = vector.extract %[[OLDW]][0] : f32 from vector<4xf32>
// CHECK:       %[[J4:.*]] = arith.addi %[[J]], %c4
// CHECK:       vector.load %[[WSW]][%[[P]], %[[J4]]] {alignment = 16 : i64}
// CHECK:       %[[OLDB:.*]] = scf.if %[[ISFIRST]] -> (vector<4xf32>) {
// CHECK:         vector.load %[[WSB]][%[[P]], %[[J]]] {alignment = 16 : i64}
// CHECK:       %[[B0:.*]] = vector.extract %[[OLDB]][0] : f32 from vector<4xf32>
// CHECK:       vector.load %[[WSB]][%[[P]], %[[J4]]] {alignment = 16 : i64}
// CHECK-NOT:   memref.load %[[WSW]]
// CHECK:       %[[DW0:.*]] = arith.addf %[[W0]], %{{.*}} : f32
// CHECK:       %[[DB0:.*]] = arith.addf %[[B0]], %{{.*}} : f32
// CHECK:       %[[DW1:.*]] = arith.select %[[ACTIVE1]], %{{.*}}, %[[DW0]] : f32
// CHECK:       %[[DB1:.*]] = arith.select %[[ACTIVE1]], %{{.*}}, %[[DB0]] : f32
// CHECK-NOT:   memref.store %{{.*}}, %[[WSW]]
// CHECK:       %[[VW:.*]] = vector.from_elements %[[DW1]], %{{.*}}, %{{.*}}, %{{.*}} : vector<4xf32>
// CHECK-NEXT:  vector.store %[[VW]], %[[WSW]][%[[P]], %[[J]]] {alignment = 16 : i64}
// CHECK-NEXT:  vector.from_elements
// CHECK-NEXT:  vector.store %{{.*}}, %[[WSW]][%[[P]], %[[J4]]] {alignment = 16 : i64}
// CHECK-NEXT:  %[[VB:.*]] = vector.from_elements %[[DB1]], %{{.*}}, %{{.*}}, %{{.*}} : vector<4xf32>
// CHECK-NEXT:  vector.store %[[VB]], %[[WSB]][%[[P]], %[[J]]] {alignment = 16 : i64}
// CHECK-NEXT:  vector.from_elements
// CHECK-NEXT:  vector.store %{{.*}}, %[[WSB]][%[[P]], %[[J4]]] {alignment = 16 : i64}
// The element path (rows not 16-byte aligned): an element at a time.
// CHECK:       } else {
// CHECK:         memref.load %[[WSW]][%[[P]], %{{.*}}] : memref<?x131072xf32>
// CHECK:         memref.store %{{.*}}, %[[WSW]][%[[P]], %{{.*}}] : memref<?x131072xf32>
// CHECK-NOT:   gpu.barrier
// CHECK:     gpu.shuffle xor
// CHECK:     gpu.barrier
// CHECK-NOT: gpu.barrier
// CHECK-NOT: scf.if %[[ACTIVE1]]
// CHECK:     vector.store %{{.*}}, %arg5[%[[ROW0]], %{{.*}}]
// CHECK:     scf.if %[[ACTIVE1]] {
// CHECK:       vector.store %{{.*}}, %arg5[%[[ROW1]], %{{.*}}]
// CHECK:   %[[EMPTY:.*]] = arith.cmpi uge, %[[LO]], %[[END]]
// CHECK:   scf.if %[[EMPTY]] {
// CHECK:     scf.for
// CHECK:       memref.store %[[ZERO:.*]], %[[WSW]][%[[P]], %{{.*}}]
// CHECK:     scf.for
// CHECK:       memref.store %[[ZERO]], %[[WSB]][%[[P]], %{{.*}}]
// CHECK: gpu.launch {{.*}} function(@layer_norm_grad_looped_reduce_2)

// Chosen: B = 4 P for P partial rows (Geometry.h kLoopedPartialBytes), 8
// for dweight and dbias. batch-rows=1 is the row-at-a-time kernel: the
// partial rows read (but in the first row) and written in every row.
// CHOSEN-LABEL: func @layer_norm_grad_looped
// CHOSEN: function(@layer_norm_grad_looped_dx_1)
// CHOSEN: scf.for {{.*}} step %c8{{.*}} {
// ONE-LABEL: func @layer_norm_grad_looped
// ONE-NOT: arith.select {{.*}} : f32
// ONE: function(@layer_norm_grad_looped_dx_1)
// ONE-NOT: arith.select {{.*}} : f32
// ONE: scf.for {{.*}} step %c1{{.*}} {
// ONE:   %[[OLD:[0-9]+]] = scf.if %{{.*}} -> (f32) {
// ONE:     memref.load %[[WS:.*]][%[[P:.*]], %[[J:.*]]] : memref<?x131072xf32>
// ONE:   %[[NEW:.*]] = arith.addf %[[OLD]], %{{.*}} : f32
// ONE:   memref.store %[[NEW]], %[[WS]][%[[P]], %[[J]]]
// ONE-NOT: arith.select {{.*}} : f32
// ONE: function(@layer_norm_grad_looped_reduce_2)

// RANGE: norm-choose-geometry: batch-rows must be 0 (chosen) or 1 to 16, got 17
func.func @layer_norm_grad_looped(%dy: memref<?x131072xbf16>, %x: memref<?x131072xbf16>, %mean: memref<?xf32>,
                                  %rstd: memref<?xf32>, %w: memref<131072xbf16>, %dx: memref<?x131072xbf16>,
                                  %dw: memref<131072xbf16>, %db: memref<131072xbf16>) {
  norm.layer_norm_grad dy(%dy : memref<?x131072xbf16>) x(%x : memref<?x131072xbf16>)
      mean(%mean : memref<?xf32>) rstd(%rstd : memref<?xf32>) weight(%w : memref<131072xbf16>)
      outs dx(%dx : memref<?x131072xbf16>) dweight(%dw : memref<131072xbf16>) dbias(%db : memref<131072xbf16>)
  return
}

// -----

// One partial row (RMSNorm dweight): B = 4. Without dweight (no partial
// rows), and with another strategy, rows go one at a time (no select of a
// batch's f32 values; G's own select is an index).
// CHOSEN-LABEL: func @rms_norm_grad_looped
// CHOSEN: function(@rms_norm_grad_looped_dx_1)
// CHOSEN: scf.for {{.*}} step %c4{{.*}} {
// CHOSEN-LABEL: func @rms_norm_grad_looped_no_weight
// CHOSEN: function(@rms_norm_grad_looped_no_weight_dx_0)
// CHOSEN-NOT: arith.select {{.*}} : f32
// CHOSEN: scf.for {{.*}} step %c1{{.*}} {
// CHOSEN-LABEL: func @rms_norm_grad_looped_atomic
// CHOSEN: function(@rms_norm_grad_looped_atomic_dx_1)
// CHOSEN-NOT: arith.select {{.*}} : f32
// CHOSEN: memref.atomic_rmw addf
func.func @rms_norm_grad_looped(%dy: memref<?x131072xf32>, %x: memref<?x131072xf32>, %rstd: memref<?xf32>,
                                %w: memref<131072xf32>, %dx: memref<?x131072xf32>, %dw: memref<131072xf32>) {
  norm.rms_norm_grad dy(%dy : memref<?x131072xf32>) x(%x : memref<?x131072xf32>) rstd(%rstd : memref<?xf32>)
      weight(%w : memref<131072xf32>) outs dx(%dx : memref<?x131072xf32>) dweight(%dw : memref<131072xf32>)
  return
}
func.func @rms_norm_grad_looped_no_weight(%dy: memref<?x131072xf32>, %x: memref<?x131072xf32>, %rstd: memref<?xf32>,
                                          %dx: memref<?x131072xf32>) {
  norm.rms_norm_grad dy(%dy : memref<?x131072xf32>) x(%x : memref<?x131072xf32>) rstd(%rstd : memref<?xf32>)
      outs dx(%dx : memref<?x131072xf32>)
  return
}
func.func @rms_norm_grad_looped_atomic(%dy: memref<?x131072xf32>, %x: memref<?x131072xf32>, %rstd: memref<?xf32>,
                                       %w: memref<131072xf32>, %dx: memref<?x131072xf32>, %dw: memref<131072xf32>) {
  norm.rms_norm_grad dy(%dy : memref<?x131072xf32>) x(%x : memref<?x131072xf32>) rstd(%rstd : memref<?xf32>)
      weight(%w : memref<131072xf32>) outs dx(%dx : memref<?x131072xf32>) dweight(%dw : memref<131072xf32>)
      {strategy = #norm.strategy<atomic>}
  return
}
