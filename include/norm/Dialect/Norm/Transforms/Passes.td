//===- Passes.td - norm dialect transformations ------------*- tablegen -*-===//
//
// Part of mlir-norm. The lowering of norm ops to loop nests, stage by stage.
// The stages communicate through the discardable attributes of the stage
// contract (norm/Dialect/Norm/IR/StageContract.h, docs/Lowering.md). Every
// pass checks its post-condition and fails with an error naming the op that
// breaks it; norm-check-stage checks what the pipeline promises at each
// stage boundary.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_DIALECT_NORM_TRANSFORMS_PASSES_TD
#define NORM_DIALECT_NORM_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def NormSplit : Pass<"norm-split", "::mlir::func::FuncOp"> {
  let summary = "Lower buffer-form grad ops to tagged loop nests: a "
                "per-row dx nest split from a grouped dweight/dbias "
                "reduction";
  let description = [{
    Rewrites each buffer-form `norm.layer_norm_grad` / `norm.rms_norm_grad`
    into, in this order:

    1. materialised intermediates (`xhat`, and `g = dy * w` when there is a
       weight) in x's storage type, each a `memref.alloc` tagged
       `norm.recomputable` filled by its own loop nest;
    2. when dweight or dbias is requested: an f32 `[G, N]` workspace per
       output, zero-filled, and the partial sums: program `p` of `G` walks
       its contiguous block of rows and adds `dy * xhat` / `dy` into
       partial row `p` (`deterministic`), `r mod G` with atomics
       (`grouped_atomic`), `r mod G` under a per-group spin lock
       (`locked`), or row 0 with atomics (`atomic`, `G = 1`);
    3. the fixed-order reduce over the `G` axis, truncating into dweight /
       dbias;
    4. the per-row dx loop nest, programs over the same row blocks: two
       in-row sums, then `dx = rstd * (g - mean(g) - xhat * mean(g * xhat))`
       (RMSNorm without the `mean(g)` term), plus `dresidual`. The sum of
       `g * xhat` is a `math.fma` chain, and dx is computed distributed,
       `fma(rstd, g, fma(xhat, -rstd mean(g xhat), -rstd mean(g)))`, with
       the two products of the statistics once a row: two fused
       multiply-adds an element in place of five operations. Only dx sees
       this; the partial rows keep their own product and sum.

    Partials come before dx so that `dx` may alias `dy` (written in place).
    Arithmetic is in the storage type (the faithful form); `norm-promote`
    moves it to f32. `G` comes from the `groups` attribute, else from this
    pass's `groups` option, else from (M, N) alone (never the device):
    `G = max(1, min(cap(N), max(ceil(M / r(N)), min(M, 128))))`, r(N) =
    `ceil(4096 / N)`, cap(N) the largest of 512, 256 and 128 with
    `cap * N <= 3 * 2^20` (norm/Support/Groups.h).

    Forward ops are left alone (norm-lower-forward lowers them).

    Before:

    ```mlir
    norm.rms_norm_grad dy(%dy : memref<?x?xf32>) x(%x : memref<?x?xf32>)
        rstd(%r : memref<?xf32>) outs dx(%dx : memref<?x?xf32>)
    ```

    After (abridged):

    ```mlir
    %xhat = memref.alloc(%m, %n) {norm.recomputable} : memref<?x?xf32>
    scf.for %i ... { scf.for %j ... { ... memref.store %h, %xhat[%i, %j] } }
        {norm.stage = #norm.stage<xhat>}
    scf.for %p = %c0 to %groups ... {
      scf.for %r = %lo to %hi ... {
        %s = scf.for %j ... iter_args(...) { ... }   // sum(g * xhat)
        scf.for %j ... { ... memref.store %d, %dx[%r, %j] }
      }
    } {norm.stage = #norm.stage<dx>}
    ```

    One conversion pattern per op kind (`populateNormSplitPatterns` in
    `Transforms.h`), applied with the two grad ops illegal. An op in value
    form, or with a buffer that has no [rows, N] / [rows] view, is an error
    on that op. Each lowered op's nests get a `norm.id` one past the largest
    already in the function (unique per function, whichever of this pass and
    norm-lower-forward ran first).

    Post-condition (by construction: the conversion fails otherwise): no
    grad op remains in the function; every nest it created carries
    `norm.stage`, `norm.id` and `norm.accumulate`; every partial workspace
    is of the accumulation type and shape [G, N].
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
  let options = [
    Option<"groups", "groups", "int64_t", /*default=*/"0",
           "Partial rows G when the op has no `groups` attribute "
           "(0: chosen from M and N)">,
    Option<"strategy", "strategy", "::mlir::norm::StrategyOverride",
           /*default=*/"::mlir::norm::StrategyOverride::Keep",
           "Reduction strategy of every grad op (keep: each op's own)",
           [{::mlir::norm::strategyOverrideValues()}]>
  ];
  let statistics = [
    Statistic<"numGradOps", "grad-ops", "Backward ops lowered">
  ];
}

def NormLowerForward : Pass<"norm-lower-forward", "::mlir::func::FuncOp"> {
  let summary = "Lower buffer-form forward ops to one tagged row loop nest "
                "each";
  let description = [{
    Rewrites each buffer-form `norm.layer_norm` / `norm.rms_norm` into one
    loop over the rows, tagged `#norm.stage<forward>`. Per row: the sum of
    x and the mean (LayerNorm), the two-pass variance `sum((x - mean)^2) / N`
    (RMSNorm: `sum(x^2) / N`), `rstd = rsqrt(var + eps)`, the stores of mean
    and rstd, then a column loop storing `xhat = (x - mean) * rstd` (when
    requested) and `y = xhat * w + b` (`w + 1` when zero-centred; weight and
    bias when present). The variance's sum of squares and `xhat * w + b`
    are `math.fma`s (one rounding each).

    Like norm-split's, the form is faithful: arithmetic in the storage type,
    `N` and `eps` as accumulation-type constants truncated to it, so that
    `norm-promote` moves it to f32 exactly; `norm-cache-rows` later makes
    it read x once per row. Grad ops are left alone (norm-split lowers
    them).

    Before:

    ```mlir
    norm.rms_norm x(%x : memref<?x?xf32>) weight(%w : memref<?xf32>)
        outs y(%y : memref<?x?xf32>) rstd(%rstd : memref<?xf32>)
    ```

    After (the constants `%nf` = N and `%eps` are made inside the row loop):

    ```mlir
    scf.for %r = %c0 to %m step %c1 {
      %sq = scf.for %j = %c0 to %n step %c1 iter_args(%s = %zero) -> (f32) {
        %v = memref.load %x[%r, %j] : memref<?x?xf32>
        %t = math.fma %v, %v, %s : f32
        scf.yield %t : f32
      }
      %var = arith.divf %sq, %nf : f32
      %ve = arith.addf %var, %eps : f32
      %rs = math.rsqrt %ve : f32
      memref.store %rs, %rstd[%r] : memref<?xf32>
      scf.for %j = %c0 to %n step %c1 {
        %v = memref.load %x[%r, %j] : memref<?x?xf32>
        %h = arith.mulf %v, %rs : f32
        %wj = memref.load %w[%j] : memref<?xf32>
        %o = arith.mulf %h, %wj : f32
        memref.store %o, %y[%r, %j] : memref<?x?xf32>
      }
    } {norm.accumulate = f32, norm.id = 0 : i64,
       norm.stage = #norm.stage<forward>}
    ```

    One conversion pattern per op kind (`populateNormLowerForwardPatterns`
    in `Transforms.h`), applied with the two forward ops illegal. An op in
    value form, or with a buffer that has no [rows, N] / [rows] view, is an
    error on that op. Each nest's `norm.id` is one past the largest already
    in the function, as in norm-split.

    Post-condition (by construction: the conversion fails otherwise): no
    forward op remains in the function; every nest it created carries
    `norm.stage`, `norm.id` and `norm.accumulate`.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
  let statistics = [
    Statistic<"numForwardOps", "forward-ops", "Forward ops lowered">
  ];
}

def NormRaise : Pass<"norm-raise", "::mlir::func::FuncOp"> {
  let summary = "Raise LayerNorm / RMSNorm (forward and backward) written "
                "as linalg on tensors to norm ops";
  let description = [{
    Finds LayerNorm and RMSNorm, forward and backward, computed by linalg
    ops on tensors (named elementwise ops, `linalg.map`, `linalg.reduce`,
    `linalg.broadcast`, `linalg.fill`, `linalg.generic` with
    projected-permutation maps, and the `tensor` reshapes between them), as
    torch-mlir's `torch-backend-to-linalg-on-tensors` pipeline emits them
    or as written by hand, and replaces each with the value-form norm op;
    everything else stays.

    The match is on the math, not on the op sequence. Each candidate (the
    one result of a linalg op: y or dx `[rows..., N]`, or a dweight `[N]`,
    also as an `[N]` reshape of a `[1, N]` sum) is cut at its leaves (the
    values no such op computes: arguments, parameters, matmuls) or, where
    the program computes x, dy or a residual sum itself, at those values
    (`[rows..., N]` values computed without a reduction of the candidate's
    computation); each assignment of the leaves to the op's operands, with
    each float constant of the computation in (0, 1) as eps, is tried, and
    holds when the computation and the op's definition agree in f64 (casts
    exact) on random inputs:
    unit data, data whose variance is of the order of eps (where the place
    of eps matters), and, for LayerNorm, data far from zero (where
    E[x^2] - E[x]^2 cancels, so a one-pass variance is refused). A
    different epsilon placement, a reduction over another dim, a mean over
    part of the row, a divisor other than the reduced extent or a missing
    term of the backward differ there and stay untouched. Dtypes are then
    checked on the IR: x, y, dy, dx and dresidual of one element type
    (f32, f16, bf16), dweight of the weight's type, statistics of a float
    type (cast to and from the op's f32), reductions in one accumulation
    type: f32 (also when some are f64, as torch-mlir's variance), else the
    16-bit type recorded as `accumulation_type` (`f32-accumulation` makes
    it f32).

    A forward also replaces the mean and rstd the program computes; a
    backward takes dx, dweight and dbias of the same inputs together
    (whichever the program computes; the op's other results stay unused,
    a dweight without a weight in the program gets a weight of ones). A
    backward reads saved statistics, a stored xhat, or (a joint graph of
    forward and backward) x with the mean the forward computed.
    Forward ops are raised first, so a backward in the same function reads
    their statistics; candidates are tried from the last op to the first,
    backward dx before dweight. The largest matching expression is
    raised: a candidate whose user also matches is left to that user, and
    of the cuts that match, the one that takes most of the program (dy and
    the weight rather than g = dy * w); no cut whose operands are computed
    from what it replaces.

    Before (abridged, torch-mlir's form):

    ```mlir
    %sum = linalg.generic {... ["parallel", "reduction"]} ins(%x ...)
    %mean = linalg.generic ... { arith.divf %in, %c64 }
    ...
    %rstd = linalg.generic ... { math.rsqrt }
    %y = linalg.generic ... { arith.addf %xhat_w, %b }
    ```

    After:

    ```mlir
    %y, %mean, %rstd = norm.layer_norm x(%x : tensor<8x64xf32>)
        weight(%w : tensor<64xf32>) bias(%b : tensor<64xf32>)
        {eps = 9.99999974E-6 : f32}
        -> y(tensor<8x64xf32>) mean(tensor<8xf32>) rstd(tensor<8xf32>)
    ```

    The patterns are `populateNormRaisePatterns` (`Transforms.h`).
    Post-condition: every raised op verifies; the program's remaining
    linalg ops compute what they computed before.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::norm::NormDialect"];
  let options = [
    Option<"f32Accumulation", "f32-accumulation", "bool", /*default=*/"false",
           "Raise programs that accumulate in f16 / bf16 with f32 "
           "accumulation (what the GPU kernels run)">,
    Option<"reportNearMisses", "report-near-misses", "bool",
           /*default=*/"false",
           "Emit a remark at each linalg result computed through a "
           "reduction that was not raised, saying why">
  ];
  let statistics = [
    Statistic<"numRaised", "raised-ops", "norm ops created">
  ];
}

def NormRecomputeGraph : Pass<"norm-recompute-graph", "::mlir::func::FuncOp"> {
  let summary = "Value form: a grad op fed a forward's stored xhat reads the "
                "forward's x and statistics instead";
  let description = [{
    On the value form (tensors), before bufferization: when a grad op reads
    the `xhat` a forward op of its family produced, and the grad's `rstd` is
    that forward's, the grad takes the forward's `x` (and `mean`) instead
    and recomputes xhat per row; a forward whose `xhat` is then unused stops
    producing it. That saves writing and reading an [M, N] tensor. The
    patterns are `populateStoredXhatToRecomputePatterns` (`Transforms.h`),
    applied to the norm ops alone (no folding of the code around them).

    Before:

    ```mlir
    %y, %mean, %rstd, %xhat = norm.layer_norm x(%x : tensor<?x64xbf16>) ...
    %dx = norm.layer_norm_grad dy(%dy ...) xhat(%xhat ...) rstd(%rstd ...) ...
    ```

    After:

    ```mlir
    %y, %mean, %rstd = norm.layer_norm x(%x : tensor<?x64xbf16>) ...
    %dx = norm.layer_norm_grad dy(%dy ...) x(%x ...) mean(%mean ...)
        rstd(%rstd ...) ...
    ```

    Post-condition (checked): no grad op reads a stored `xhat` together
    with the `rstd` of the forward op that produced it, unless that
    forward's `x` has another type than the `xhat` (an f32 xhat of a bf16
    x, which the grad could not read as x); no forward op produces an
    `xhat` that nothing reads.
  }];
  let statistics = [
    Statistic<"numGraphRewrites", "graph-rewrites",
              "Grad ops moved from a stored xhat to x + statistics">
  ];
}

def NormRecomputeLoops : Pass<"norm-recompute-loops", "::mlir::func::FuncOp"> {
  let summary = "Recompute the materialised xhat and g at each load instead "
                "of storing them";
  let description = [{
    Every `memref.alloc` tagged `norm.recomputable` (the materialised `xhat`
    and `g` of `norm-split`) disappears. Each load from it is replaced by a
    copy of the computation its producer nest stored at that index, so
    xhat = (x - mean) * rstd and g = dy * w are recomputed in registers
    where they are used; the producer nest and the buffer are erased. A
    recomputable buffer whose producer is not one store `buf[i, j]` in a
    two-deep nest over (i, j) that writes nothing else is an error.

    Before:

    ```mlir
    %xhat = memref.alloc(%m, %n) {norm.recomputable} : memref<?x?xbf16>
    scf.for %i ... { scf.for %j ... {
      %x = memref.load %x[%i, %j] ... %h = arith.mulf %d, %rstd
      memref.store %h, %xhat[%i, %j] } } {norm.stage = #norm.stage<xhat>}
    ... %v = memref.load %xhat[%r, %k] ...
    ```

    After: `%v` is `arith.mulf(arith.subf(load %x[%r, %k], mean), rstd)`,
    and `%xhat` is gone.

    Post-condition (checked): no `norm.recomputable` buffer remains, and no
    rank-2 buffer is allocated only for the tagged nests other than the
    partial workspaces (the buffers a `zero` nest fills): the function
    allocates no [M, N] intermediate.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
  let statistics = [
    Statistic<"numBuffers", "buffers", "Materialised buffers removed">,
    Statistic<"numLoads", "loads", "Loads replaced by recomputation">
  ];
}

def NormPromote : Pass<"norm-promote", "::mlir::func::FuncOp"> {
  let summary = "Compute in f32: extend at the load, truncate at the store";
  let description = [{
    Inside the loop nests tagged `norm.stage`, every load of an f16/bf16
    value is extended to the nest's `norm.accumulate` type (f32 by default)
    at once, every arithmetic op, loop-carried sum and constant moves to
    that type, and only stores truncate (dx to x's type, dweight / dbias /
    y to their declared types).

    Before:

    ```mlir
    %a = memref.load %x[%r, %j] : memref<?x?xbf16>
    %b = arith.mulf %a, %s : bf16
    memref.store %b, %dx[%r, %j] : memref<?x?xbf16>
    ```

    After:

    ```mlir
    %a = memref.load %x[%r, %j] : memref<?x?xbf16>
    %e = arith.extf %a : bf16 to f32
    %b = arith.mulf %e, %s : f32
    %t = arith.truncf %b : f32 to bf16
    memref.store %t, %dx[%r, %j] : memref<?x?xbf16>
    ```

    Post-condition (checked): in tagged nests no arithmetic op, block
    argument or loop result has an f16/bf16 type; narrow values exist only as a load's
    result (immediately extended) or a store's operand (just truncated).
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def NormFusePartials : Pass<"norm-fuse-partials", "::mlir::func::FuncOp"> {
  let summary = "Accumulate the partial dweight/dbias sums in the dx nest's "
                "first column loop";
  let description = [{
    Moves the partial-sum nest (`norm.stage = #norm.stage<partials>`) of
    each lowered grad op into its dx nest (`#norm.stage<dx>`, same
    `norm.id`), after proving structurally that both walk the same programs
    and rows: the partial accumulation (and a lock's acquire/release around
    it) joins the row's first column loop, next to the two in-row sums. The
    fixed-order reduce moves after the fused nest. `norm-cache-rows` then
    makes that loop the only one reading x and dy.

    Before (abridged):

    ```mlir
    scf.for %p ... { scf.for %r ... { scf.for %j ... { ws[p, j] += dy * xhat } } }
        {norm.stage = #norm.stage<partials>}
    scf.for %j ... { dw[j] = sum over p of ws[p, j] } {norm.stage = #norm.stage<reduce>}
    scf.for %p ... { scf.for %r ... { sums over j; dx over j } }
        {norm.stage = #norm.stage<dx>}
    ```

    After:

    ```mlir
    scf.for %p ... {
      scf.for %r ... {
        scf.for %j ... { sums; ws[p, j] += dy * xhat }
        scf.for %j ... { dx }
      }
    } {norm.stage = #norm.stage<dx>}
    scf.for %j ... { dw[j] = sum over p of ws[p, j] } {norm.stage = #norm.stage<reduce>}
    ```

    Post-condition (checked): no `partials` nest remains; a partials nest
    that cannot be fused (no dx nest of its op, or other programs or rows)
    is an error.
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect"];
}

def NormCacheRows : Pass<"norm-cache-rows", "::mlir::func::FuncOp"> {
  let summary = "Read each row of x and dy once: later column loops read a "
                "per-program row cache";
  let description = [{
    In the row body of every dx nest (and every forward nest), each row
    that the first column loop loads at `[r, j]` is stored, as the loop
    uses it (extended to f32 after `norm-promote`), into a row cache, and
    the later column loops read the cache instead of memory. Repeated loads
    of one element in the first loop become one, and row-invariant loads
    (the statistics) move out of the column loops. The caches are
    `memref.alloc` ops of N elements tagged `norm.row_cache`, allocated
    just before the nest and freed after it: each parallel program needs
    its own copy (the GPU mapping keeps them in registers).

    Before (one row of a dx nest, abridged):

    ```mlir
    scf.for %j ... { %x = memref.load %x[%r, %j] ... sums }
    scf.for %j ... { %x2 = memref.load %x[%r, %j] ... dx }
    ```

    After:

    ```mlir
    %cx = memref.alloc(%n) {norm.row_cache} : memref<?xf32>
    ...
    scf.for %j ... { %x = memref.load %x[%r, %j] ...
                     memref.store %xe, %cx[%j] ... sums }
    scf.for %j ... { %x2 = memref.load %cx[%j] ... dx }
    ```

    With `early-rows` (the default), a row that only a later column loop
    reads (a backward's `dresidual`, read where dx is formed), of a buffer
    the row body never writes, is read by the first loop too and served
    from a cache like x's, tagged `norm.early_row`: its load is in flight
    with x's and dy's instead of a memory round trip after the row's sums.
    It costs a cache's registers; the GPU mapping reads such a row late
    again where they would cost its kernel a wave (Geometry.h dxEarlyRows).

    Post-condition (checked): in every row body of a dx or forward nest, no
    buffer's row is loaded by more than one column loop (x and dy are read
    from memory once per row); a load that cannot be served from the cache
    is an error naming it.
  }];
  let options = [
    Option<"earlyRows", "early-rows", "bool", /*default=*/"true",
           "Also read, in the first column loop, the rows only a later "
           "loop reads (dresidual), into row caches">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect"];
}

def NormCheckStage : Pass<"norm-check-stage", "::mlir::func::FuncOp"> {
  let summary = "Check the invariants the lowering promises after a stage";
  let description = [{
    Changes nothing; fails, with an error naming the first op that breaks
    it, unless the function satisfies what the pipelines promise after
    `stage` (each stage includes the promises of the ones before it):

    * `bufferized`: no norm op in value form and no tensor value, except
      at the function boundary (arguments, `func.return`, `func.call`) and
      in the `bufferization.to_buffer` / `to_tensor` casts that leaves;
    * `split` (after norm-split and norm-lower-forward): no norm op; every
      tagged nest is an `scf.for` carrying `norm.stage`, `norm.id` and
      `norm.accumulate`, not inside another;
    * `recomputed`: no `norm.recomputable` buffer and no [M, N]
      intermediate (a rank-2 `memref.alloc` only the tagged nests use
      that is not a partial workspace, filled by a `zero` nest);
    * `promoted`: no f16/bf16 (narrower than `norm.accumulate`) result or
      block argument in a tagged nest, except a load's result and the
      truncation before a store;
    * `fused`: no `partials` nest, and in every row body of a dx or
      forward nest no buffer's row is loaded by more than one column loop.

    The pipelines run it at each of these boundaries, so a pass that
    breaks the stage contract fails where it does.

    ```mlir
    // norm-opt --norm-check-stage=stage=split
    func.func @f(...) {
      // error: norm-check-stage: split: norm op left
      norm.rms_norm_grad ...
    }
    ```
  }];
  let options = [
    Option<"stage", "stage", "::mlir::norm::CheckedStage",
           /*default=*/"::mlir::norm::CheckedStage::Fused",
           "The stage whose invariants to check",
           [{::llvm::cl::values(
             clEnumValN(::mlir::norm::CheckedStage::Bufferized, "bufferized",
                        "after one-shot-bufferize"),
             clEnumValN(::mlir::norm::CheckedStage::Split, "split",
                        "after norm-split and norm-lower-forward"),
             clEnumValN(::mlir::norm::CheckedStage::Recomputed, "recomputed",
                        "after norm-recompute-loops"),
             clEnumValN(::mlir::norm::CheckedStage::Promoted, "promoted",
                        "after norm-promote"),
             clEnumValN(::mlir::norm::CheckedStage::Fused, "fused",
                        "after norm-fuse-partials and norm-cache-rows"))}]>
  ];
}

#endif // NORM_DIALECT_NORM_TRANSFORMS_PASSES_TD
