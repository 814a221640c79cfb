// RUN: norm-opt %s --split-input-file --norm-lower-to-loops --norm-map-to-gpu --canonicalize --cse | FileCheck %s
// RUN: norm-opt %s --split-input-file --norm-lower-to-loops --norm-map-to-gpu="reread-fallback=false" --canonicalize --cse | FileCheck %s --check-prefix=CACHE

// A forward kernel of two bodies (layout = both: a lane's share of 32
// elements): the aligned body fills the row cache (a private array) from its
// 16-byte loads and reads it for y; the body for rows that are not aligned
// reads x again, element by element, and never touches the cache, so its
// elements are not live across the in-row sums (ptxas gives the kernel the
// registers of its larger body). With reread-fallback=false that body reads
// the cache too.
// CHECK-LABEL: func.func @rms
// CHECK:       %[[ROWC:.*]] = memref.alloca() : memref<32xf32>
// CHECK-NEXT:  scf.if
// CHECK-NEXT:    scf.for %{{.*}} = %[[LO:[^ ]+]] to %[[HI:[^ ]+]] step
// CHECK:         vector.load %arg0
// CHECK:         memref.store %{{.*}}, %[[ROWC]][%c0] : memref<32xf32>
// CHECK:         gpu.shuffle xor
// CHECK:         memref.load %[[ROWC]][%c0] : memref<32xf32>
// The body for rows not aligned: its own walk of the waves.
// CHECK:         scf.for %{{.*}} = %[[LO]] to %[[HI]] step
// CHECK-NOT:     %[[ROWC]]
// CHECK:         memref.load %arg0
// CHECK-NOT:     %[[ROWC]]
// CHECK:         gpu.shuffle xor
// CHECK-NOT:     %[[ROWC]]
// CHECK:         memref.load %arg0
// CHECK-NEXT:    arith.extf
// CHECK-NOT:     %[[ROWC]]
// CHECK:         memref.load %arg1
// CHECK-NOT:     %[[ROWC]]
// CHECK:         memref.store %{{.*}}, %arg2
// CHECK-NOT:     %[[ROWC]]
// CHECK:         gpu.terminator
// CACHE-LABEL: func.func @rms
// CACHE:       %[[ROWC:.*]] = memref.alloca() : memref<32xf32>
// CACHE-NEXT:  scf.if
// CACHE-NEXT:    scf.for %{{.*}} = %[[LO:[^ ]+]] to %[[HI:[^ ]+]] step
// CACHE:         scf.for %{{.*}} = %[[LO]] to %[[HI]] step
// CACHE:         memref.store %{{.*}}, %[[ROWC]][%c0] : memref<32xf32>
// CACHE:         gpu.shuffle xor
// CACHE:         memref.load %[[ROWC]][%c0] : memref<32xf32>
func.func @rms(%x: memref<?x4096xbf16>, %w: memref<4096xbf16>, %y: memref<?x4096xbf16>, %rstd: memref<?xf32>) {
  norm.rms_norm x(%x : memref<?x4096xbf16>) weight(%w : memref<4096xbf16>) outs y(%y : memref<?x4096xbf16>) rstd(%rstd : memref<?xf32>) {norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 128, rows = 2, vector = 8, chunks = 4, layout = both, shared = 64>}
  return
}

// -----

// With a residual the cache holds h = x + residual, which the first loop
// also stores to its row: the body for unaligned rows reads h back from
// there (the lane that wrote each element reads it) for the variance and y.
// CHECK-LABEL: func.func @ln_residual
// CHECK:       %[[ROWC:.*]] = memref.alloca() : memref<40xf32>
// CHECK-NEXT:  scf.if
// CHECK-NEXT:    scf.for %{{.*}} = %[[LO:[^ ]+]] to %[[HI:[^ ]+]] step
// CHECK:         memref.load %[[ROWC]]
// CHECK:         scf.for %{{.*}} = %[[LO]] to %[[HI]] step
// CHECK-NOT:     %[[ROWC]]
// CHECK:         memref.load %arg0
// CHECK:         memref.load %arg1
// CHECK:         memref.store %{{.*}}, %arg7
// CHECK-NOT:     %[[ROWC]]
// CHECK:         gpu.shuffle xor
// CHECK-NOT:     %[[ROWC]]
// CHECK:         memref.load %arg7
// CHECK-NOT:     %[[ROWC]]
// CHECK:         gpu.shuffle xor
// CHECK-NOT:     %[[ROWC]]
// CHECK:         memref.load %arg7
// CHECK-NOT:     %[[ROWC]]
// CHECK:         memref.load %arg2
// CHECK-NOT:     %[[ROWC]]
// CHECK:         memref.store %{{.*}}, %arg4
// CHECK-NOT:     %[[ROWC]]
// CHECK:         gpu.terminator
// CACHE-LABEL: func.func @ln_residual
// CACHE:       %[[ROWC:.*]] = memref.alloca() : memref<40xf32>
// CACHE-NEXT:  scf.if
// CACHE-NEXT:    scf.for %{{.*}} = %[[LO:[^ ]+]] to %[[HI:[^ ]+]] step
// CACHE:         scf.for %{{.*}} = %[[LO]] to %[[HI]] step
// CACHE:         memref.store %{{.*}}, %[[ROWC]][%c0] : memref<40xf32>
func.func @ln_residual(%x: memref<?x2560xbf16>, %res: memref<?x2560xbf16>, %w: memref<2560xbf16>, %b: memref<2560xbf16>, %y: memref<?x2560xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>, %h: memref<?x2560xbf16>) {
  norm.layer_norm x(%x : memref<?x2560xbf16>) residual(%res : memref<?x2560xbf16>) weight(%w : memref<2560xbf16>) bias(%b : memref<2560xbf16>)
      outs y(%y : memref<?x2560xbf16>) mean(%mean : memref<?xf32>) rstd(%rstd : memref<?xf32>) h(%h : memref<?x2560xbf16>) {norm.geometry = #norm.row_geometry<regime = registers, threads = 256, lanes = 64, rows = 4, vector = 8, chunks = 5, layout = both, shared = 128>}
  return
}

// -----

// A dx kernel of two bodies keeps its cache in both (the option is the
// forward's).
// CHECK-LABEL: func.func @dx
// CHECK:       %[[XC:.*]] = memref.alloca() : memref<32xf32>
// CHECK:       } else {
// CHECK:         memref.store %{{.*}}, %{{.*}}[%c0] : memref<32xf32>
func.func @dx(%dy: memref<?x4096xbf16>, %x: memref<?x4096xbf16>, %rstd: memref<?xf32>, %dx: memref<?x4096xbf16>, %w: memref<4096xbf16>, %dw: memref<4096xbf16>) {
  norm.rms_norm_grad dy(%dy : memref<?x4096xbf16>) x(%x : memref<?x4096xbf16>) rstd(%rstd : memref<?xf32>) weight(%w : memref<4096xbf16>) outs dx(%dx : memref<?x4096xbf16>) dweight(%dw : memref<4096xbf16>) {norm.geometry = #norm.row_geometry<regime = registers, threads = 128, lanes = 128, rows = 1, vector = 8, chunks = 4, layout = both, partials = shared, shared = 16448>}
  return
}
