// A gpu.module of the user's own, for plugin.mlir: the pass plugin's
// norm-gpu-to-binary compiles it.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @scale(%buf: memref<?xf32>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %buf[%i] : memref<?xf32>
      %r = math.rsqrt %v : f32
      memref.store %r, %buf[%i] : memref<?xf32>
      gpu.return
    }
  }
}
