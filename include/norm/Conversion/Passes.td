//===- Passes.td - norm conversions ------------------------*- tablegen -*-===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_CONVERSION_PASSES_TD
#define NORM_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def NormMapToGPU : Pass<"norm-map-to-gpu", "::mlir::func::FuncOp"> {
  let summary = "Map the fused row loop nests to gpu.launch kernels";
  let description = [{
    Takes the tagged nests of `norm-lower-to-loops` (see docs/Lowering.md)
    and turns each into a `gpu.launch`:

    * `zero`: a block per partial row, threads over columns;
    * `reduce`: a thread per column, the fixed-order sum over partial rows;
    * `dx` and `forward`: a block per program; its rows go to sub-groups of
      `L` lanes (`L` from N: many rows per warp when N is small, e.g. N = 24,
      up to the whole block for large N); columns go to lanes in chunks of
      16 bytes (`vector.load` / `vector.store` with 16-byte alignment when
      every row pointer and row stride is 16-byte aligned and N fills whole
      chunks, element loads otherwise, checked at run time in the kernel);
      in-row sums are reduced with `gpu.shuffle xor` and, across warps, one
      shared-memory step in a fixed order. When N is static and a thread's
      share of the row fits `max-register-elements`, the row cache and the
      `deterministic` partial sums live in registers (the partials are
      combined across sub-groups through shared memory in a fixed order and
      written once per program); otherwise the row is re-read from L2 and
      the partial row is updated in place (each column owned by one thread).

    Lanes per row, rows in flight and chunking depend on N alone, never on
    the device, so `deterministic` results are bitwise identical across
    GPUs. Index arithmetic is 64-bit, so M * N >= 2^31 is safe. Every
    launch has a constant block size, which becomes `.reqntid` in the PTX.

    Post-condition: no `norm.stage` nest remains outside a `gpu.launch`; the
    host function only allocates the workspace and launches kernels, each
    recorded in the function's `norm.kernels` attribute.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::NVVM::NVVMDialect"];
  let options = [
    Option<"threads", "threads", "int64_t", /*default=*/"256",
           "Threads per block of the row kernels">,
    Option<"maxRegisterElements", "max-register-elements", "int64_t",
           /*default=*/"64",
           "Largest share of a row (elements per thread, per cached array) "
           "kept in registers">,
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_90\"",
           "Target chip; limits only, never the sum order">
  ];
}

#endif // NORM_CONVERSION_PASSES_TD
