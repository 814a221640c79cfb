//===- Passes.td - norm conversions ------------------------*- tablegen -*-===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_CONVERSION_PASSES_TD
#define NORM_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def NormChooseGeometry : Pass<"norm-choose-geometry", "::mlir::func::FuncOp"> {
  let summary = "Choose how each row kernel is spread over the GPU "
                "(#norm.row_geometry), or check the one written";
  let description = [{
    Sets `norm.geometry = #norm.row_geometry<...>` on every norm op and on
    every `dx` / `forward` nest of `norm-lower-to-loops` that has none: the
    cost model's choice (Geometry.cpp) from N, the element types, the
    dweight/dbias strategy, the options and the chip. `norm-map-to-gpu`
    then builds exactly that kernel. On an op the attribute travels to its
    nest (norm-split, norm-lower-forward), so one written by hand on an op
    (a user's, a test's, a tuner's) pins that op's kernel alone:

    ```mlir
    %dx, %dw = norm.rms_norm_grad dy(%dy : tensor<?x4096xbf16>) ...
        {norm.geometry = #norm.row_geometry<regime = registers,
            threads = 128, lanes = 128, rows = 1, vector = 8, chunks = 4,
            partials = shared>} ...
    ```

    An attribute already there is checked against the row and the chip and
    completed (its shared memory sizes filled in), or refused with an error
    that names the limit it breaks: the chunk (one 16-byte access), a
    lane's share of the row against `max-register-elements`, the row's
    coverage by chunks, lanes and cluster, the chip's block and cluster
    sizes, the shared memory every chip gives, the partial rows' home for
    the strategy, and the order of the `deterministic` dweight/dbias sums:
    a geometry that adds them in another order than the cost model's would
    change their bits, so it is refused (one row in flight per block adds
    them in row order whatever else differs).

    Where none is written and the `threads`, `cluster` and `max-lanes`
    options are 0, the chip family's tuning table
    (lib/Conversion/NormToGPU/tuning/<family>.json, embedded at build time,
    written by bench/tune.py) is consulted first: an entry for the kernel,
    its element size, N and the `rows` hint gives the knobs (threads,
    cluster, max-lanes, max-register-elements; prefetch, which changes no
    bit) the cost model then lays the row out with, kept
    only where that geometry passes the same checks and adds dweight/dbias
    in the cost model's order; otherwise the cost model's own choice
    stands. So a table changes speed and dx's in-row sum order, never
    dweight/dbias bits.

    Post-condition: every norm op and every `dx` / `forward` nest carries a
    complete, checked `norm.geometry`.
  }];
  let dependentDialects = ["::mlir::norm::NormDialect"];
  let options = [
    Option<"threads", "threads", "int64_t", /*default=*/"0",
           "Threads per block of the row kernels (0: chosen from N, "
           "Geometry.h's kThreadCandidates)">,
    Option<"maxRegisterElements", "max-register-elements", "int64_t",
           /*default=*/"64",
           "Largest share of a row (elements per thread, per cached array) "
           "kept in registers">,
    Option<"cluster", "cluster", "int64_t", /*default=*/"0",
           "Blocks per thread-block cluster that split a row (0: chosen "
           "from N for a dx row where the chip has clusters and threads is "
           "0, never for a forward row; 1: never; 2 to 8: that many, or as "
           "few as the row needs, on sm_90)">,
    Option<"maxLanes", "max-lanes", "int64_t", /*default=*/"0",
           "Most lanes a row of a row kernel spreads over (0: no cap beyond "
           "the block; a power of two)">,
    Option<"trimIdleWarps", "trim-idle-warps", "bool", /*default=*/"true",
           "A backward row of more than a warp at one chunk a lane that "
           "can be 16-byte aligned keeps only the warps its chunks need (whole warps, not a power of "
           "two: no warp of a row without a chunk of it); no "
           "dweight/dbias bit changes">,
    Option<"twoChunkRows", "two-chunk-rows", "bool", /*default=*/"true",
           "A deterministic backward row without dresidual that the cost "
           "model gives 256 lanes at one 16-byte chunk a lane takes 128 "
           "lanes at two instead, where the rows hint passes 2048 and the "
           "rows can be 16-byte aligned (the tuning table is not "
           "consulted for it); no dweight/dbias bit changes">,
    Option<"registerPartials", "register-partials", "bool",
           /*default=*/"true",
           "A deterministic backward row of one row in flight at two "
           "chunks a lane or more (a share of at most 16 elements) keeps "
           "its partial rows in registers instead of static shared memory "
           "where the register estimate with them (and the ring's) keeps "
           "the blocks an SM of one wave at the rows hint's largest launch "
           "(Geometry.h keepPartialsInRegisters); no dweight/dbias bit "
           "changes">,
    Option<"batchRows", "batch-rows", "int64_t", /*default=*/"0",
           "Rows of the looped regime whose dweight/dbias terms one update "
           "of the partial rows adds (0: chosen, Geometry.h's "
           "kLoopedPartialBytes; 1 to 16: that many)">,
    Option<"prefetch", "prefetch", "int64_t", /*default=*/"0",
           "Waves of rows each block of a dx kernel prefetches into L2 "
           "ahead of the one it works on (cp.async.bulk.prefetch, sm_90; "
           "0: none, or the tuning table's; 1 to 4: that many). No result "
           "bit depends on it">,
    Option<"partialVector", "partial-vector", "int64_t", /*default=*/"0",
           "Partial sums a lane of a dx kernel keeps side by side in shared "
           "memory, moved that many at a time (0: the tuning table's, else "
           "1; 1, 2 or 4; only where the partial rows are in shared memory, "
           "at most the chunk's elements). No result bit depends on it">,
    Option<"pipeline", "pipeline", "int64_t", /*default=*/"0",
           "Waves of rows whose loads a register-regime dx kernel issues "
           "ahead into registers, before the current row's in-row sums (0: "
           "the tuning table's, else the cost model's: the next wave's for "
           "a kernel with early rows (dresidual) of one 16-byte chunk a "
           "lane, Geometry.h earlyPipelinePays, none otherwise; 1: the next "
           "wave's). No result "
           "bit depends on it">,
    Option<"narrowCache", "narrow-cache", "int64_t", /*default=*/"0",
           "Row caches of a register-regime row kernel (dx or forward) over "
           "16-bit rows kept in the loaded type, extended at each use (0: the tuning "
           "table's, else f32; 1). No result bit depends on it">,
    Option<"holdColumns", "hold-columns", "int64_t", /*default=*/"-1",
           "Column vectors (weight, bias) a register-regime row kernel "
           "loads into registers once a program and uses for every row "
           "(-1: the tuning table's, else the cost model's; 0: loaded at "
           "each use; 1: held). No result bit depends on it">,
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_90\"",
           "Target chip (TargetInfo); limits only, never the sum order">,
    Option<"rows", "rows", "int64_t", /*default=*/"0",
           "Rows M the kernels are built for, a hint: the tuning table's "
           "entries for a range of M apply when it lies in the range (0: "
           "unknown, only entries for every M apply). Kernels stay correct "
           "for every M">,
    Option<"tuning", "tuning", "bool", /*default=*/"true",
           "Consult the chip family's tuning table (tuning/<family>.json) "
           "before the cost model, where threads, cluster and max-lanes "
           "are 0">,
    Option<"tuningFile", "tuning-file", "std::string", /*default=*/"\"\"",
           "A tuning table (the JSON of tuning/<family>.json) to consult "
           "instead of the embedded one, for any chip: a table being "
           "written for a new chip, or a test's">
  ];
}

def NormMapToGPU : Pass<"norm-map-to-gpu", "::mlir::func::FuncOp"> {
  let summary = "Map the fused row loop nests to gpu.launch kernels";
  let description = [{
    Takes the tagged nests of `norm-lower-to-loops` (see docs/Lowering.md)
    and turns each into a `gpu.launch`, in the order of the nests, named
    `<func>_<stage>_<i>`, all in one `gpu.module @<func>_kernels`:

    * `zero` (ZeroKernel.cpp): a block per partial row, threads over columns
      (the row's lock, if any, reset by thread 0); none for `deterministic`,
      whose dx kernel writes every program's partial rows whole: the nest
      is dropped and its workspaces marked `norm.written` (the manifest's
      `"written"`, so the runtime does not clear them either);
    * `reduce` (ReduceKernel.cpp): a block of 256 threads per 32 columns, its
      8 warps each summing the partial rows `w = warp, warp + 8, ...` in row
      order (loads unrolled by 4), then warp 0 adding the 8 slices in order;
    * `dx` and `forward` (RowKernel.cpp): a block per program (dx) or per S
      rows (forward); its rows go to sub-groups of `L` lanes (`L` from N:
      many rows per warp when N is small, e.g. N = 24, up to the whole block
      for large N); columns go to lanes in chunks of 16 bytes
      (`vector.load` / `vector.store` with 16-byte alignment when every row
      pointer and row stride is 16-byte aligned and N fills whole chunks,
      element loads otherwise, checked at run time in the kernel). A core
      emitter (RowEmitter.cpp) builds the kernel with one strategy per axis,
      each in a file of its own, picked by `buildRowKernel` from the
      geometry:
      - the chunk walk: unrolled when N is static and a thread's share of
        the row fits `max-register-elements` (`regime = registers`, row
        caches in registers; RowChunksUnrolled.cpp), else a chunk loop with
        the row re-read from L2 (`regime = looped`; RowChunksLooped.cpp);
      - the home of the `deterministic` partial rows: registers (combined
        across sub-groups through shared memory in a fixed order and
        written once per program), shared memory with one row in flight
        (static, or dynamic past 40 KB), or, looped, global memory updated
        in place once per batch of rows, each column by the one thread
        that owns it (RowPartials*.cpp);
      - the in-row sums: `gpu.shuffle xor` and, across warps, one
        shared-memory step in a fixed order, synchronised by the row's own
        warps (`row-barriers`; RowReduceBlock.cpp), then,
        for a row split over a thread-block cluster (sm_90), the sum of the
        cluster's blocks in distributed shared memory (RowReduceCluster.cpp);
      - the lock protocol of `locked` (RowLock.cpp).

    The geometry of each row kernel is the nest's `norm.geometry`
    (`#norm.row_geometry`, set by `norm-choose-geometry`: lanes per row,
    rows in flight, vector width, chunks per lane, regime, where the
    partials live, cluster, shared memory); a nest without one is an error.
    The attribute is checked again against this pass's `chip`. The cost
    model behind it is a pure function of N, the element types, the
    strategy (`norm.strategy`) and the options. Its shared-memory budget is
    the 48 KB of static shared memory every CUDA chip since sm_50
    guarantees, never the chip's own limit, so `deterministic` results are
    bitwise identical across GPUs (unit-tested for every chip TargetInfo
    knows). What a chip emits differently (the cluster barrier, distributed
    shared memory addressing, the lock's device-scope fence) comes from its
    TargetCodegen (TargetCodegen.h); the kernel builders name no target
    dialect. Index arithmetic is 64-bit, so M * N >= 2^31 is safe. Every
    launch has a constant block size, which becomes `.maxntid` in the PTX.

    Post-condition (checked, an error naming the op): no `norm.stage` nest
    or other loop remains outside a `gpu.launch`; the host function only
    allocates the workspace and launches kernels, each recorded in the
    function's `norm.kernels` attribute. A `dx` kernel with early rows
    (row caches `norm.early_row`, filled in the first column loop for rows
    only a later loop reads: dresidual) keeps them or reads those rows late
    again, and its record gets `resident = B`, the blocks an SM its largest
    launch (G at the largest M of the `rows` hint's bucket, or G's cap for
    N without a hint, or the op's fixed G) needs to be one wave,
    where that is what its geometry's register estimate allows
    (Geometry.h dxEarlyRows; off with `fit-early-rows=false`).
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::NVVM::NVVMDialect"];
  let options = [
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_90\"",
           "Target chip (TargetInfo): the geometry is checked against its "
           "limits (block and cluster size, opt-in shared memory)">,
    Option<"fitEarly", "fit-early-rows", "bool", /*default=*/"true",
           "Decide per dx kernel whether its early rows (norm-cache-rows "
           "early-rows) stay and the blocks an SM it asks ptxas for "
           "(Geometry.h dxEarlyRows); false: every early row stays and "
           "nothing is asked">,
    Option<"rows", "rows", "int64_t", /*default=*/"0",
           "Rows M the kernels are built for, a hint (norm-choose-geometry's "
           "`rows`): a dx kernel's early rows are fitted to G at the largest "
           "M of the hint's bucket (0: G's cap for N). Kernels stay correct "
           "for every M">,
    Option<"rowBarriers", "row-barriers", "int64_t", /*default=*/"2",
           "The barriers of a row's sums across its warps "
           "(RowReduceBlock.cpp): 0, two block barriers a sum; 1, two "
           "barriers of the row's own warps (a named barrier where a block "
           "holds 2-15 rows); 2, as 1 with one barrier a sum, the scratch "
           "double-buffered. No result bit depends on it">,
    Option<"asyncRows", "async-rows", "int64_t", /*default=*/"2",
           "Waves of rows a dx kernel of the register regime copies ahead "
           "into shared memory with cp.async (RowPipeline.cpp; 0: none, 1 "
           "to 4), in place of the geometry's `pipeline`, where the ring's "
           "registers keep the kernel's wave (Geometry.h ringFit), the rows "
           "are 16-byte aligned and the ring fits the shared memory "
           "(ring-dynamic). No result bit depends on it">,
    Option<"waveResident", "wave-resident", "bool", /*default=*/"true",
           "Record in a dx kernel without the ring or early rows the blocks "
           "an SM that keep its largest launch one wave, where the register "
           "estimate fits them (`wave`, the manifest's wave_blocks; "
           "Geometry.h dxWaveBlocks): the runtime asks the JIT for them "
           "(`.minnctapersm`) only where its registers fall short. No result "
           "bit depends on it">,
    Option<"rereadFallback", "reread-fallback", "bool", /*default=*/"true",
           "A forward kernel of two bodies (a lane's share past 16 "
           "elements, rows that may be 16-byte aligned) reads its row "
           "again in the body for rows that are not aligned, where the "
           "aligned body reads its row cache: ptxas gives the kernel the "
           "registers of its larger body. No result bit depends on it (the "
           "row read again holds the values the cache held)">,
    Option<"forwardFinish", "forward-finish", "int64_t", /*default=*/"1",
           "Where the dx kernel finishes dweight / dbias itself at G = 1 "
           "and each column of its partial rows is stored once from "
           "shared memory or registers, the storing thread finishes that "
           "column from the value it stored: no barrier, no load back. 0: "
           "never; 1: where the row is split over a cluster (the barrier "
           "it spares is the cluster's); 2: every such kernel. The same "
           "operations on the same values: no result bit depends on it">,
    Option<"dependentLaunch", "dependent-launch", "bool", /*default=*/"true",
           "On chips with grid dependency control (sm_90), start every "
           "kernel by waiting for the grids before it in the stream "
           "(griddepcontrol.wait) and letting the next one be scheduled "
           "(launch_dependents), and record it `waits`: the runtime then "
           "launches it before the grid before it ends, which hides the "
           "launch between the dx and reduce kernels and after the caller's "
           "kernels. No result bit depends on it">,
    Option<"reduceColumns", "reduce-columns", "int64_t", /*default=*/"0",
           "Columns a block of the reduce kernel takes (ReduceKernel.cpp): "
           "8, 16 or 32; 0, the most of them whose blocks still number the "
           "chip's SMs (Kernels.h reduceColumns). No result bit depends on "
           "it">,
    Option<"reduceUnroll", "reduce-unroll", "int64_t", /*default=*/"0",
           "Partial rows a thread of the reduce kernel loads in one batch, "
           "the next batch's loads issued before this one's adds (1 to 32; "
           "0: kReduceUnroll, 16). No result bit "
           "depends on it">,
    Option<"ringDynamic", "ring-dynamic", "bool", /*default=*/"false",
           "Where fewer than async-rows waves of the ring fit the static "
           "shared memory beside the kernel's own, put the ring in dynamic "
           "shared memory after the kernel's (within what the chip lets a "
           "block opt in to and what keeps the SM's blocks; Geometry.h "
           "RingFit); false: the ring takes the waves the static memory "
           "fits, none where not one does (the default: measured, the "
           "dynamic ring gained up to 1.43x on some kernels and lost up to "
           "0.83x on others, docs/GPU.md). No result bit depends on it">
  ];
}

#endif // NORM_CONVERSION_PASSES_TD
