//===- Passes.td - norm pipeline support passes ------------*- tablegen -*-===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_PIPELINES_PASSES_TD
#define NORM_PIPELINES_PASSES_TD

include "mlir/Pass/PassBase.td"

def NormCheckLibdevice : Pass<"norm-check-libdevice", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Fail when a kernel calls libdevice but no CUDA toolkit is found";
  let description = [{
    `convert-gpu-to-nvvm` turns math ops such as `math.rsqrt` into calls to
    libdevice functions (`__nv_rsqrtf`). `gpu-module-to-binary` links
    libdevice only when it finds a CUDA toolkit; otherwise the PTX silently
    keeps `.extern .func __nv_rsqrtf` and fails later in ptxas or at module
    load. This pass runs after `convert-gpu-to-nvvm` and turns that into an
    error at compile time that names the function and the places searched.

    Before (no toolkit at `toolkit=/nonexistent`):

    ```mlir
    gpu.module @k {
      llvm.func @__nv_rsqrtf(f32) -> f32
      ...
    }
    ```

    After: `error: kernel module 'k' calls libdevice function '__nv_rsqrtf'
    but no CUDA toolkit with nvvm/libdevice/libdevice.10.bc was found ...`.

    Post-condition: every `__nv_*` declaration can be resolved from the
    toolkit that `gpu-module-to-binary` is given.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
  let options = [
    Option<"toolkit", "toolkit", "std::string", /*default=*/"\"\"",
           "CUDA toolkit root; empty: $CUDA_HOME, $CUDA_PATH, $CUDA_ROOT, "
           "then the build's default">
  ];
}

def NormCheckTarget : Pass<"norm-check-target", "::mlir::ModuleOp"> {
  let summary = "Fail on a chip, PTX version or output format the GPU tail "
                "cannot serve";
  let description = [{
    Runs first in `norm-gpu-to-binary`. The upstream NVVM tail ends in
    `LLVM ERROR` (an abort, no diagnostic) when the PTX version in
    `features` is older than the chip needs (`chip=sm_120` with the default
    `+ptx81`), and `gpu-module-to-binary` takes any `format`. This pass turns
    each into an error naming the option, its value and what is accepted:

    ```
    error: norm-gpu-to-binary: unknown chip 'sm_120' (known: sm_80, sm_86,
    sm_89, sm_90, sm_90a)
    error: norm-gpu-to-binary: features '+ptx70' are too old for sm_90,
    which needs +ptx78 or later
    error: norm-gpu-to-binary: format 'garbage' is not one of isa, bin,
    fatbin
    ```

    Post-condition: the chip is one TargetInfo knows, the PTX version is at
    least its minimum, and the format is one gpu-module-to-binary serves.
  }];
  let options = [
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_90\"",
           "Target chip">,
    Option<"features", "features", "std::string", /*default=*/"\"+ptx81\"",
           "PTX features (+ptxNN)">,
    Option<"format", "format", "std::string", /*default=*/"\"isa\"",
           "Output format: isa, bin or fatbin">
  ];
}

def NormAlignWorkgroupMemory
    : Pass<"norm-align-workgroup-memory", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Give every workgroup (shared) buffer 16-byte alignment";
  let description = [{
    Sets `llvm.align = 16` on each workgroup attribution of the kernels that
    has no alignment yet. Without it the buffers are 4-byte aligned, and a
    buffer of an odd size (N = 4095 floats) places the next one at an
    address where LLVM's load/store vectorizer may still merge neighbouring
    accesses into 8- or 16-byte ones: a misaligned-address fault at run time.

    ```mlir
    gpu.func @k() workgroup(%a : memref<4095xf32, #gpu.address_space<workgroup>>)
    // becomes
    gpu.func @k() workgroup(%a : memref<4095xf32, #gpu.address_space<workgroup>>
                                 {llvm.align = 16 : i64})
    ```

    Post-condition: every workgroup attribution has an `llvm.align` of at
    least 16.
  }];
}

def NormFuseMultiplyAdd
    : Pass<"norm-fuse-multiply-add", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Fuse an f32 multiply into the add or subtract that is its "
                "only use (llvm.intr.fma)";
  let description = [{
    In the kernels, `arith.addf(arith.mulf(a, b), c)` (either operand order)
    becomes `llvm.intr.fma(a, b, c)`, `arith.subf(c, arith.mulf(a, b))`
    becomes `fma(-a, b, c)` and `arith.subf(arith.mulf(a, b), c)` becomes
    `fma(a, b, -c)`, where the multiply has no other use and neither op
    carries fast-math flags. One instruction and one rounding instead of two:
    the row kernels issue about a fifth fewer instructions an element (the
    dx kernel's running sums, its partial rows and the dx formula).

    Why explicit, not `fastmath<contract>`: with contraction allowed the
    NVPTX backend prints the multiplies and adds it did not fuse without
    `.rn`, and ptxas may then fuse them on its own, per chip. Explicit
    `fma.rn.f32` and `.rn` everywhere else leave no choice to ptxas, so the
    same IR gives the same bits on every chip (the dweight/dbias rule).

    ```mlir
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    // becomes
    %s = llvm.intr.fma(%a, %b, %acc) : (f32, f32, f32) -> f32
    ```

    norm-gpu-to-binary runs it with `fuse-multiply-add=true` (off by
    default until it is timed on the GPU: it also raises the registers of
    some kernels). Nothing is refused: the pass never fails. Post-condition: no f32
    `arith.mulf` without fast-math flags has exactly one use that is such an
    `arith.addf` or `arith.subf`.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def NormReciprocalDivide
    : Pass<"norm-reciprocal-divide", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Divide an f32 by a constant as a multiply by its reciprocal";
  let description = [{
    In the kernels, `arith.divf %x, %c` where `%c` is an f32 constant
    whose reciprocal is a finite normal number becomes `arith.mulf %x, %r`
    with `%r` the reciprocal rounded to f32. The row kernels divide by N
    (a constant: every kernel is compiled for one N) twice a row: the
    forward's mean and variance, the backward's two in-row means. NVPTX
    prints each as `div.rn.f32`, which ptxas expands into a reciprocal
    refinement, a range check and a branch to a slow path: about a dozen
    instructions a lane a row, against one multiply.

    The product differs from the correctly rounded quotient by at most one
    unit in the last place (none where `%c` is a power of two). Only dx,
    y and the saved statistics see it; dweight and dbias are sums of dy
    and dy * xhat over saved statistics and do not. Every chip gets the
    same IR, so the dweight/dbias rule (the same bits on every chip)
    holds.

    ```mlir
    %m = arith.divf %s, %cst : f32      // %cst = 768.0
    // becomes
    %m = arith.mulf %s, %r : f32        // %r = 0.00130208337
    ```

    Left alone: a non-constant divisor, zero, inf or NaN, a divisor whose
    reciprocal is subnormal or overflows, fast-math flags (LLVM's choice
    then), and types other than f32. Nothing is refused: the pass never
    fails. norm-gpu-to-binary runs it with `reciprocal-divide=true`; off
    by default, since timed alone it bought nothing (1.000x over 56
    backward points on the H100, LayerNorm f32 6144 x 8192 0.93x;
    docs/NOTES.md, eighteenth session).
  }];
}

def NormUnpackBF16 : Pass<"norm-unpack-bf16"> {
  let summary = "Widen a bf16 lane of a loaded vector to f32 with one "
                "integer op";
  let description = [{
    The row kernels load 16 bytes at a time and widen each bf16 lane of the
    vector to f32 (`arith.extf` of a `vector.extract`). NVPTX prints each
    as a `mov.b32 {lo, hi}` split and a `cvt.f32.bf16`, which ptxas turns
    into one instruction for the low half of a 32-bit word and two (a
    permute and a shift) for the high half. A bf16 is the upper half of
    the f32 with the same value, so the lane is the word shifted left by
    16 (an even lane, the low half) or masked with 0xffff0000 (an odd
    lane): one instruction each.

    ```mlir
    %e = vector.extract %v[3] : bf16 from vector<8xbf16>
    %f = arith.extf %e : bf16 to f32
    // becomes
    %w = vector.bitcast %v : vector<8xbf16> to vector<4xi32>
    %h = vector.extract %w[1] : i32 from vector<4xi32>
    %m = arith.andi %h, %c-65536_i32 : i32
    %f = arith.bitcast %m : i32 to f32
    ```

    The result is the same bits as the conversion for every input (bf16 to
    f32 is exact; NaN payloads and subnormals included), so no result of
    any kernel changes. Left alone: a lane of a vector with an odd number
    of elements or more than one dimension, a dynamic position, and other
    types. Nothing is refused: the pass never fails. It runs on any op
    (test/Pipelines/unpack-bf16-exec.mlir executes it on the CPU, every
    lane bit for bit against `arith.extf`); norm-gpu-to-binary always runs
    it on the kernels.
  }];
  let dependentDialects = ["::mlir::vector::VectorDialect"];
}

def NormExternDynamicShared
    : Pass<"norm-extern-dynamic-shared", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Declare the dynamic shared memory global external";
  let description = [{
    Runs after convert-gpu-to-nvvm, which lowers `gpu.dynamic_shared_memory`
    to a zero-sized global of internal linkage in the workgroup address
    space (`@__dynamic_shmem__N`). The NVPTX backend demotes an internal
    shared global that one kernel uses into that kernel's own static shared
    memory: a one-byte `.shared .b8 __dynamic_shmem__0;` that the other
    static buffers follow, so the dynamic views overlap them (seen: wrong,
    run-to-run different dweight for LayerNorm bf16 N = 6144-10000 on the
    H200). With external linkage it is declared `.extern .shared .align 16
    .b8 __dynamic_shmem__0[];`, the start of the launch's dynamic shared
    memory.

    ```mlir
    llvm.mlir.global internal @__dynamic_shmem__0() {addr_space = 3 : i32,
        alignment = 16 : i64} : !llvm.array<0 x i8>
    // becomes
    llvm.mlir.global external @__dynamic_shmem__0() {addr_space = 3 : i32,
        alignment = 16 : i64} : !llvm.array<0 x i8>
    ```

    Post-condition: every zero-sized global in address space 3 has external
    linkage.
  }];
}

def NormAttachClusterDims
    : Pass<"norm-attach-cluster-dims", "::mlir::ModuleOp"> {
  let summary = "Compile the cluster size of each cluster launch into its "
                "kernel";
  let description = [{
    A kernel that `gpu.launch_func` launches in thread-block clusters of a
    constant size gets `nvvm.cluster_dim`, which becomes
    `.reqnctapercluster` in the PTX. The cluster is then part of the kernel
    itself: a plain `cuLaunchKernel` of a grid that is a multiple of it
    launches the clusters (what libnormrt does), and a launch with any other
    cluster size fails instead of running with the wrong one. Outlining
    (`gpu-kernel-outlining`) keeps the size on the launch only.

    ```mlir
    gpu.launch_func @m::@k clusters in (%c8, %c1, %c1) blocks in (...) ...
    gpu.func @k(...) kernel
    // becomes
    gpu.func @k(...) kernel attributes {nvvm.cluster_dim = array<i32: 8, 1, 1>}
    ```

    Fails on a cluster size that is not a constant, and on a kernel launched
    with two different cluster sizes (or with and without clusters).
  }];
}

def NormAttachResidentBlocks
    : Pass<"norm-attach-resident-blocks", "::mlir::ModuleOp"> {
  let summary = "Compile the blocks an SM each kernel's record asks for into "
                "the kernel";
  let description = [{
    A kernel whose `#norm.kernel` record (the launching function's
    `norm.kernels`) has `resident = B` gets `nvvm.minctasm = B`, which
    becomes `.minnctapersm B` in the PTX: ptxas then fits the kernel's
    registers to B blocks an SM. norm-map-to-gpu records it for a `dx`
    kernel whose largest launch is one wave only at B blocks an SM
    (Geometry.h dxEarlyRows); outlining keeps nothing of the launch
    but its sizes, so the record carries it here.

    ```mlir
    func.func @f(...) attributes {norm.kernels = [#norm.kernel<name =
        "f_dx_0", kind = dx, block = 256, grid = programs, ...,
        resident = 4>]} { gpu.launch_func @f_dx_0::@f_dx_0 ... }
    gpu.func @f_dx_0(...) kernel
    // becomes
    gpu.func @f_dx_0(...) kernel attributes {nvvm.minctasm = 4 : i32}
    ```

    A kernel launched from functions whose records ask for different
    numbers gets the largest. A kernel without a record is left alone.
  }];
}

def NormMarkRestrictArguments
    : Pass<"norm-mark-restrict-arguments", "::mlir::func::FuncOp"> {
  let summary = "Mark the function arguments that the norm op's contract "
                "keeps apart from every written argument";
  let description = [{
    The launch contract (docs/Runtime.md, "No aliasing"; libnormrt checks
    it at every launch) is that no output overlaps an input or another
    output, except that `dx` may be `dy` itself. In a function of exactly
    one norm op in the buffer form (what norm-compile builds, and the only
    kind the manifest describes), each argument that is an operand of that
    op in one role, other than `dy` and `dx`, gets `norm.noalias`; an input
    among them also gets `norm.readonly`. An argument used in two roles
    gets nothing when one of them writes; a value-form op's operands are
    no arguments, so nothing is marked there. norm-to-gpu-binary runs it
    first, while the op names its operands' roles;
    norm-restrict-kernel-arguments turns the marks into `llvm.noalias` /
    `llvm.readonly` on the kernels' pointers and removes them.

    ```mlir
    func.func @f(%x: memref<?x512xbf16>, %w: memref<512xbf16>,
                 %y: memref<?x512xbf16>, %rstd: memref<?xf32>) {
      norm.rms_norm x(%x : ...) weight(%w : ...) outs y(%y : ...) rstd(...)
    // becomes
    func.func @f(%x: memref<?x512xbf16> {norm.noalias, norm.readonly},
                 %w: memref<512xbf16> {norm.noalias, norm.readonly},
                 %y: memref<?x512xbf16> {norm.noalias},
                 %rstd: memref<?xf32> {norm.noalias}) {
    ```
  }];
}

def NormRestrictKernelArguments
    : Pass<"norm-restrict-kernel-arguments", "::mlir::ModuleOp"> {
  let summary = "Give the kernels' pointers the host arguments' "
                "noalias / readonly marks";
  let description = [{
    Runs after the kernels are LLVM functions (convert-gpu-to-nvvm), with
    the host functions still launching them with memrefs. Each memref
    kernel operand is a descriptor of 3 + 2 * rank parameters (allocated
    pointer, aligned pointer, offset, sizes, strides); the aligned pointer
    of an operand gets `llvm.noalias` where every launch of the kernel
    passes there a host argument marked `norm.noalias`
    (norm-mark-restrict-arguments) that it passes nowhere else in that
    launch, and also `llvm.readonly` where every such argument is also
    marked `norm.readonly`. The NVPTX backend then reads those pointers
    with `ld.global.nc`, which ptxas may move above stores: a row's weight
    and bias loads no longer wait behind the previous chunk's y stores.
    Which kernels get them is a cost rule (Geometry.h restrictPays): the
    forward kernels (their `#norm.kernel` record in the host function's
    `norm.kernels`) whose launch at the last M of the `rows` hint's bucket
    is one wave at full thread occupancy; the moved loads take registers,
    which costs blocks an SM past that. A kernel without a record, of
    another kind, or whose parameters do not match the descriptor layout
    is left alone. The marks are removed from the host functions either
    way. With `resident` (off by default) each restricted kernel also gets
    `nvvm.minctasm`, the blocks an SM its launch needs to stay one wave
    (Geometry.h restrictBlocksPerSM), so that ptxas fits the moved loads'
    registers to them; it spills where it cannot (measured 0.94x overall,
    docs/GPU.md).

    ```mlir
    llvm.func @k(%a0: !llvm.ptr, %a1: !llvm.ptr, %a2: i64, ...)
    // becomes (k a forward kernel that pays, operand 0 a
    // `norm.noalias, norm.readonly` argument)
    llvm.func @k(%a0: !llvm.ptr, %a1: !llvm.ptr {llvm.noalias,
                 llvm.readonly}, %a2: i64, ...)
    ```
  }];
  let options = [
    Option<"apply", "apply", "bool", /*default=*/"true",
           "Set the attributes (false: only remove the marks)">,
    Option<"rows", "rows", "int64_t", /*default=*/"0",
           "The rows (M) the kernels are built for, as norm-choose-"
           "geometry's hint (0: unknown: nothing is restricted)">,
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_90\"",
           "Target SM architecture (its SM count)">,
    Option<"residentBlocks", "resident", "bool", /*default=*/"false",
           "Also give each restricted kernel nvvm.minctasm: the blocks an "
           "SM its launch needs to stay one wave (restrictBlocksPerSM; "
           "off by default: ptxas spills to meet it, 0.71x where it "
           "spilled, docs/NOTES.md)">,
  ];
}

#endif // NORM_PIPELINES_PASSES_TD
