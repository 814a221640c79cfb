//===- Passes.td - norm dialect transformations ------------*- tablegen -*-===//
//
// Part of mlir-norm. The lowering of norm ops to loop nests, stage by stage.
// The stages communicate through a small set of discardable attributes the
// split pass puts on what it creates (see docs/Lowering.md):
//
//   norm.stage = "xhat" | "g" | "zero" | "partials" | "reduce" | "dx" |
//                "forward"       on the outermost scf.for of each loop nest
//   norm.accumulate = f32        on the same loops: the promotion type
//   norm.recomputable            on a memref.alloc whose every element can be
//                                recomputed from its producer nest at any use
//
//===----------------------------------------------------------------------===//

#ifndef NORM_DIALECT_NORM_TRANSFORMS_PASSES_TD
#define NORM_DIALECT_NORM_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def NormSplit : Pass<"norm-split", "::mlir::func::FuncOp"> {
  let summary = "Lower buffer-form norm ops to a per-row dx loop nest and a "
                "grouped cross-row dweight/dbias reduction";
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
       (RMSNorm without the `mean(g)` term), plus `dresidual`.

    Partials come before dx so that `dx` may alias `dy` (written in place).
    Arithmetic is in the storage type (the faithful form); `norm-promote`
    moves it to f32. `G` comes from the `groups` attribute, else from this
    pass's `groups` option, else from (M, N) alone (never the device):
    `G = max(1, min(clamp(2^21 / N, 128, 512), ceil(M / 8)))`.

    Forward ops become one row loop nest (`norm.stage = "forward"`): the row
    sums, the statistics, then y (and xhat if requested).

    Before:

    ```mlir
    norm.rms_norm_grad dy(%dy : memref<?x?xf32>) x(%x : memref<?x?xf32>)
        rstd(%r : memref<?xf32>) outs dx(%dx : memref<?x?xf32>)
    ```

    After (abridged):

    ```mlir
    %xhat = memref.alloc(%m, %n) {norm.recomputable} : memref<?x?xf32>
    scf.for %i ... { scf.for %j ... { ... memref.store %h, %xhat[%i, %j] } }
        {norm.stage = "xhat"}
    scf.for %p = %c0 to %groups ... {
      scf.for %r = %lo to %hi ... {
        %s = scf.for %j ... iter_args(...) { ... }   // sum(g * xhat)
        scf.for %j ... { ... memref.store %d, %dx[%r, %j] }
      }
    } {norm.stage = "dx"}
    ```

    Post-condition: no norm op remains in the function; every partial
    workspace is f32 of shape [G, N]; loop nests carry `norm.stage`.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
  let options = [
    Option<"groups", "groups", "int64_t", /*default=*/"0",
           "Partial rows G when the op has no `groups` attribute "
           "(0: chosen from M and N)">,
    Option<"strategy", "strategy", "std::string", /*default=*/"\"\"",
           "Override every op's reduction strategy (deterministic, "
           "grouped_atomic, atomic, locked); empty keeps the op's">
  ];
  let statistics = [
    Statistic<"numGradOps", "grad-ops", "Backward ops lowered">,
    Statistic<"numForwardOps", "forward-ops", "Forward ops lowered">
  ];
}

def NormRecompute : Pass<"norm-recompute", "::mlir::func::FuncOp"> {
  let summary = "Recompute normalised rows instead of storing them";
  let description = [{
    Two rewrites that trade stored bytes for arithmetic:

    * Loop level: every `memref.alloc` tagged `norm.recomputable` (the
      materialised `xhat` and `g` of `norm-split`) disappears. Each load
      from it is replaced by a copy of the computation its producer nest
      stored at that index, so xhat = (x - mean) * rstd and g = dy * w are
      recomputed in registers where they are used; the producer nest and the
      buffer are erased.
    * Graph level (value form): when a grad op reads a stored `xhat` that a
      forward op produced, and the grad's `rstd` is that forward's, the grad
      takes the forward's `x` (and `mean`) instead, and the forward stops
      producing `xhat` if nothing else reads it.

    Before:

    ```mlir
    %xhat = memref.alloc(%m, %n) {norm.recomputable} : memref<?x?xbf16>
    scf.for %i ... { scf.for %j ... {
      %x = memref.load %x[%i, %j] ... %h = arith.mulf %d, %rstd
      memref.store %h, %xhat[%i, %j] } } {norm.stage = "xhat"}
    ... %v = memref.load %xhat[%r, %k] ...
    ```

    After: `%v` is `arith.mulf(arith.subf(load %x[%r, %k], mean), rstd)`,
    and `%xhat` is gone.

    Post-condition: no `norm.recomputable` buffer remains; the function
    allocates no [M, N] intermediate.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
  let statistics = [
    Statistic<"numBuffers", "buffers", "Materialised buffers removed">,
    Statistic<"numLoads", "loads", "Loads replaced by recomputation">,
    Statistic<"numGraphRewrites", "graph-rewrites",
              "Grad ops moved from a stored xhat to x + statistics">
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

    Post-condition: in tagged nests no arithmetic op, block argument or
    loop result has an f16/bf16 type; narrow values exist only as a load's
    result (immediately extended) or a store's operand (just truncated).
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def NormFusePartials : Pass<"norm-fuse-partials", "::mlir::func::FuncOp"> {
  let summary = "Accumulate partial dweight/dbias in the dx pass, reading "
                "x and dy once";
  let description = [{
    Moves the partial-sum nest (`norm.stage = "partials"`) into the dx nest
    (`norm.stage = "dx"`), which walks the same programs and rows: the
    partial accumulation joins the row's first column loop, next to the two
    in-row sums. The row's x and dy are loaded into a per-program f32 row
    cache in that loop and the dx loop reads the cache, so x and dy are read
    from memory once. The fixed-order reduce moves after the fused nest.

    Before (abridged):

    ```mlir
    scf.for %p ... { scf.for %r ... { scf.for %j ... { ws[p, j] += dy * xhat } } }
        {norm.stage = "partials"}
    scf.for %j ... { dw[j] = sum over p of ws[p, j] } {norm.stage = "reduce"}
    scf.for %p ... { scf.for %r ... { sums over j; dx over j } }
        {norm.stage = "dx"}
    ```

    After:

    ```mlir
    scf.for %p ... {
      %cx = memref.alloca(%n) : memref<?xf32>   // row cache
      scf.for %r ... {
        scf.for %j ... { cache x, dy; sums; ws[p, j] += dy * xhat }
        scf.for %j ... { dx from the cache }
      }
    } {norm.stage = "dx"}
    scf.for %j ... { dw[j] = sum over p of ws[p, j] } {norm.stage = "reduce"}
    ```

    Post-condition: no `partials` nest remains; in the dx nest every element
    of x and dy is loaded from memory once.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

#endif // NORM_DIALECT_NORM_TRANSFORMS_PASSES_TD
