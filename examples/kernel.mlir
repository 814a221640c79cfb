// A hand-written row kernel (one rsqrt per element), the input the
// norm-gpu-to-binary tail takes: `norm-opt examples/kernel.mlir
// --norm-gpu-to-binary` gives a gpu.binary holding PTX for sm_90.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @rsqrt_rows(%in: memref<?xf32>, %out: memref<?xf32>, %n: index)
        kernel attributes {nvvm.maxntid = array<i32: 256, 1, 1>} {
      %tid = gpu.thread_id x
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %base = arith.muli %bid, %bdim : index
      %i = arith.addi %base, %tid : index
      %inb = arith.cmpi ult, %i, %n : index
      scf.if %inb {
        %v = memref.load %in[%i] : memref<?xf32>
        %r = math.rsqrt %v : f32
        memref.store %r, %out[%i] : memref<?xf32>
      }
      gpu.return
    }
  }
}
