// RUN: norm-opt %s --norm-lower-to-loops --norm-choose-geometry --norm-map-to-gpu --canonicalize | FileCheck %s
// REQUIRES: cuda-toolkit
// RUN: norm-opt %s --norm-to-gpu-binary="toolkit=%cuda_toolkit" | FileCheck %s --check-prefix=BINARY

// Memrefs whose innermost stride is dynamic (what a one-by-one
// bufferization or a foreign producer gives). The block's alignment check
// also asks that stride to be 1 at run time; the 16-byte accesses then see
// the memref through a reinterpret_cast with a static unit stride, which
// vector.load / vector.store require (they used to be emitted on the
// dynamic type: "'vector.load' op most minor memref dim must have unit
// stride"). Otherwise the element path runs.
// CHECK-LABEL: func.func @rms_dynamic_strides
// CHECK: gpu.launch
// CHECK: memref.reinterpret_cast %{{.*}} to offset: [%{{.*}}], sizes: [1024], strides: [1] : memref<1024xbf16, strided<[?], offset: ?>> to memref<1024xbf16, strided<[1], offset: ?>>
// CHECK: vector.load %{{.*}} : memref<1024xbf16, strided<[1], offset: ?>>, vector<8xbf16>
// CHECK: memref.reinterpret_cast %{{.*}} to memref<?x1024xbf16, strided<[?, 1], offset: ?>>
// CHECK: vector.load %{{.*}} : memref<?x1024xbf16, strided<[?, 1], offset: ?>>, vector<8xbf16>
// BINARY: gpu.binary @rms_dynamic_strides_kernels
func.func @rms_dynamic_strides(
    %dy: memref<?x1024xbf16, strided<[?, ?], offset: ?>>,
    %x: memref<?x1024xbf16, strided<[?, ?], offset: ?>>,
    %rstd: memref<?xf32, strided<[?], offset: ?>>,
    %w: memref<1024xbf16, strided<[?], offset: ?>>,
    %dx: memref<?x1024xbf16, strided<[?, ?], offset: ?>>,
    %dw: memref<1024xbf16, strided<[?], offset: ?>>) {
  norm.rms_norm_grad dy(%dy : memref<?x1024xbf16, strided<[?, ?], offset: ?>>)
      x(%x : memref<?x1024xbf16, strided<[?, ?], offset: ?>>)
      rstd(%rstd : memref<?xf32, strided<[?], offset: ?>>)
      weight(%w : memref<1024xbf16, strided<[?], offset: ?>>)
      outs dx(%dx : memref<?x1024xbf16, strided<[?, ?], offset: ?>>)
      dweight(%dw : memref<1024xbf16, strided<[?], offset: ?>>)
  return
}
