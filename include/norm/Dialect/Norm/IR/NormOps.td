//===- NormOps.td - norm dialect ops -----------------------*- tablegen -*-===//
//
// Forward and backward LayerNorm / RMSNorm. The LayerNorm and RMSNorm ops are
// stamped out of one class each, so the two families cannot drift apart.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_DIALECT_NORM_IR_NORMOPS_TD
#define NORM_DIALECT_NORM_IR_NORMOPS_TD

include "norm/Dialect/Norm/IR/NormBase.td"
include "norm/Dialect/Norm/IR/NormAttrs.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

/// Declarations shared by every norm op.
defvar NormCommonDecls = [{
  /// The type every reduction and intermediate is computed in (f32 unless
  /// `accumulation_type` says otherwise).
  ::mlir::FloatType getAccumulationElementType() {
    if (auto t = getAccumulationType())
      return ::llvm::cast<::mlir::FloatType>(*t);
    return ::mlir::Float32Type::get(getContext());
  }
}];

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

class Norm_ForwardOp<string mnemonic, bit isLayerNorm>
    : Norm_Op<mnemonic, [AttrSizedOperandSegments, AttrSizedResultSegments,
                         DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let arguments = !con(
      (ins Norm_Shaped:$x, Optional<Norm_Shaped>:$residual,
           Optional<Norm_Shaped>:$weight),
      !if(isLayerNorm, (ins Optional<Norm_Shaped>:$bias), (ins)),
      (ins Optional<Norm_Buffer>:$y_out),
      !if(isLayerNorm, (ins Optional<Norm_Buffer>:$mean_out), (ins)),
      (ins Optional<Norm_Buffer>:$rstd_out,
           Optional<Norm_Buffer>:$xhat_out,
           Optional<Norm_Buffer>:$h_out,
           DefaultValuedAttr<F32Attr, "1.0e-5f">:$eps,
           UnitAttr:$zero_centered_weight,
           OptionalAttr<TypeAttr>:$accumulation_type));
  let results = !con(
      (outs Optional<AnyRankedTensor>:$y),
      !if(isLayerNorm, (outs Optional<AnyRankedTensor>:$mean), (outs)),
      (outs Optional<AnyRankedTensor>:$rstd,
            Optional<AnyRankedTensor>:$xhat,
            Optional<AnyRankedTensor>:$h));
  let assemblyFormat = !strconcat(
      "`x` `(` $x `:` type($x) `)` "
      "(`residual` `(` $residual^ `:` type($residual) `)`)? "
      "(`weight` `(` $weight^ `:` type($weight) `)`)? ",
      !if(isLayerNorm, "(`bias` `(` $bias^ `:` type($bias) `)`)? ", ""),
      "(`outs` `y` `(` $y_out^ `:` type($y_out) `)`)? ",
      !if(isLayerNorm, "(`mean` `(` $mean_out^ `:` type($mean_out) `)`)? ", ""),
      "(`rstd` `(` $rstd_out^ `:` type($rstd_out) `)`)? "
      "(`xhat` `(` $xhat_out^ `:` type($xhat_out) `)`)? "
      "(`h` `(` $h_out^ `:` type($h_out) `)`)? "
      "attr-dict "
      "(`->` `y` `(` type($y)^ `)`)? ",
      !if(isLayerNorm, "(`mean` `(` type($mean)^ `)`)? ", ""),
      "(`rstd` `(` type($rstd)^ `)`)? "
      "(`xhat` `(` type($xhat)^ `)`)? "
      "(`h` `(` type($h)^ `)`)?");
  let hasVerifier = 1;
  let extraClassDeclaration = NormCommonDecls # [{
    /// True when the operands are memrefs and the outputs `*_out` operands.
    bool isBufferForm() {
      return ::llvm::isa<::mlir::MemRefType>(getX().getType());
    }
    /// The sum `h = x + residual` (value or buffer form), if the op adds a
    /// residual.
    ::mlir::Value getSumOutput() {
      return getH() ? ::mlir::Value(getH()) : ::mlir::Value(getHOut());
    }
  }];
}

def Norm_LayerNormOp : Norm_ForwardOp<"layer_norm", 1> {
  let summary = "LayerNorm forward over the trailing dimension";
  let description = [{
    Per row of length N:

        mean = sum(x) / N;  rstd = 1 / sqrt(sum((x - mean)^2) / N + eps)
        xhat = (x - mean) * rstd
        y    = xhat * w + b          (w + 1 with `zero_centered_weight`)

    `weight` and `bias` are optional (`[N]`, any of f32/f16/bf16, independent
    of x's type). Results: `y` (x's type), the saved row statistics `mean`
    and `rstd` (f32, shaped like x's leading dims) and, only when asked for,
    the normalised `xhat`. Statistics are computed in `accumulation_type`
    (f32 by default).

    With a `residual` (x's shape and element type) the op normalises
    `h = x + residual` instead of x and also returns `h` (x's element type;
    required with a residual): each element is added in the accumulation
    type (f32 by default, as `torch.add` computes 16-bit sums) and rounded
    once to the storage type, and the statistics, `y`
    and `xhat` are computed from `h` as rounded (so the op is exactly the
    add followed by the norm of the stored `h`, and a backward fed `h`
    recomputes the same `xhat`). Lowered, the row is read once from `x` and
    `residual` and `h` is written once (docs/NOTES.md, "Fused residual add
    forward").

    Value form:

    ```mlir
    %y, %mean, %rstd = norm.layer_norm x(%x : tensor<?x4096xbf16>)
        weight(%w : tensor<4096xf32>) bias(%b : tensor<4096xf32>)
        {eps = 1.0e-05 : f32}
        -> y(tensor<?x4096xbf16>) mean(tensor<?xf32>) rstd(tensor<?xf32>)
    ```

    Buffer form (destination passing, no results):

    ```mlir
    norm.layer_norm x(%x : memref<?x4096xbf16>) weight(%w : memref<4096xf32>)
        outs y(%y : memref<?x4096xbf16>) mean(%m : memref<?xf32>)
        rstd(%r : memref<?xf32>)
    ```
  }];
}

def Norm_RMSNormOp : Norm_ForwardOp<"rms_norm", 0> {
  let summary = "RMSNorm forward over the trailing dimension";
  let description = [{
    Per row of length N:

        rstd = 1 / sqrt(sum(x^2) / N + eps)
        xhat = x * rstd
        y    = xhat * w              (w + 1 with `zero_centered_weight`)

    Same forms and typing rules as `norm.layer_norm` (`residual` and `h`
    included), without `bias` and `mean`.

    ```mlir
    %y, %rstd = norm.rms_norm x(%x : tensor<?x4096xbf16>)
        weight(%w : tensor<4096xbf16>) -> y(tensor<?x4096xbf16>) rstd(tensor<?xf32>)
    %y2, %rstd2, %h = norm.rms_norm x(%x : tensor<?x4096xbf16>)
        residual(%res : tensor<?x4096xbf16>) weight(%w : tensor<4096xbf16>)
        -> y(tensor<?x4096xbf16>) rstd(tensor<?xf32>) h(tensor<?x4096xbf16>)
    ```
  }];
}

//===----------------------------------------------------------------------===//
// Backward
//===----------------------------------------------------------------------===//

class Norm_GradOp<string mnemonic, bit isLayerNorm>
    : Norm_Op<mnemonic, [AttrSizedOperandSegments, AttrSizedResultSegments,
                         DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let arguments = !con(
      (ins Norm_Shaped:$dy,
           Optional<Norm_Shaped>:$x,
           Optional<Norm_Shaped>:$xhat),
      !if(isLayerNorm, (ins Optional<Norm_Shaped>:$mean), (ins)),
      (ins Norm_Shaped:$rstd,
           Optional<Norm_Shaped>:$weight,
           Optional<Norm_Shaped>:$dresidual,
           Optional<Norm_Buffer>:$dx_out,
           Optional<Norm_Buffer>:$dweight_out),
      !if(isLayerNorm, (ins Optional<Norm_Buffer>:$dbias_out), (ins)),
      (ins DefaultValuedAttr<Norm_ReductionStrategyAttr,
                             "::mlir::norm::ReductionStrategy::Deterministic">
               :$strategy,
           OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$groups,
           UnitAttr:$zero_centered_weight,
           OptionalAttr<TypeAttr>:$accumulation_type));
  let results = !con(
      (outs Optional<AnyRankedTensor>:$dx,
            Optional<AnyRankedTensor>:$dweight),
      !if(isLayerNorm, (outs Optional<AnyRankedTensor>:$dbias), (outs)));
  let assemblyFormat = !strconcat(
      "`dy` `(` $dy `:` type($dy) `)` "
      "(`x` `(` $x^ `:` type($x) `)`)? "
      "(`xhat` `(` $xhat^ `:` type($xhat) `)`)? ",
      !if(isLayerNorm, "(`mean` `(` $mean^ `:` type($mean) `)`)? ", ""),
      "`rstd` `(` $rstd `:` type($rstd) `)` "
      "(`weight` `(` $weight^ `:` type($weight) `)`)? "
      "(`dresidual` `(` $dresidual^ `:` type($dresidual) `)`)? "
      "(`outs` `dx` `(` $dx_out^ `:` type($dx_out) `)`)? "
      "(`dweight` `(` $dweight_out^ `:` type($dweight_out) `)`)? ",
      !if(isLayerNorm,
          "(`dbias` `(` $dbias_out^ `:` type($dbias_out) `)`)? ", ""),
      "attr-dict "
      "(`->` `dx` `(` type($dx)^ `)`)? "
      "(`dweight` `(` type($dweight)^ `)`)? ",
      !if(isLayerNorm, "(`dbias` `(` type($dbias)^ `)`)?", ""));
  let hasVerifier = 1;
  let extraClassDeclaration = NormCommonDecls # [{
    /// True when the operands are memrefs and the outputs `*_out` operands.
    bool isBufferForm() {
      return ::llvm::isa<::mlir::MemRefType>(getDy().getType());
    }
    /// The activations the op reads: `x`, or the stored `xhat`.
    ::mlir::Value getInput() { return getX() ? getX() : getXhat(); }
    bool hasDWeight() { return getDweight() || getDweightOut(); }
    /// Number of groups the partial dweight/dbias are reduced through, when
    /// the attribute fixes it (0 = chosen by the lowering from M and N).
    int64_t getGroupsOrZero() {
      auto g = getGroups();
      return g ? static_cast<int64_t>(*g) : 0;
    }
  }];
}

def Norm_LayerNormGradOp : Norm_GradOp<"layer_norm_grad", 1> {
  let summary = "LayerNorm backward: dx and, as requested, dweight / dbias";
  let description = [{
    Per row, with `g = dy * w` (`g = dy` without weight):

        xhat = (x - mean) * rstd
        dx   = rstd * (g - mean(g) - xhat * mean(g * xhat)) (+ dresidual)
        dweight = sum over rows of dy * xhat
        dbias   = sum over rows of dy

    Takes `x` with the saved `mean`, or a stored `xhat` (then no `mean`).
    `dweight` needs a `weight`; it has the weight's type. `dbias` is `[N]` of
    any float type. `dresidual` (x's shape and type) is added into `dx`.
    `strategy` selects how the cross-row dweight/dbias sum is combined (see
    `#norm.strategy`); `groups` fixes the number of partial rows.

    ```mlir
    %dx, %dw, %db = norm.layer_norm_grad dy(%dy : tensor<?x4096xbf16>)
        x(%x : tensor<?x4096xbf16>) mean(%mean : tensor<?xf32>)
        rstd(%rstd : tensor<?xf32>) weight(%w : tensor<4096xf32>)
        -> dx(tensor<?x4096xbf16>) dweight(tensor<4096xf32>)
           dbias(tensor<4096xf32>)
    ```
  }];
}

def Norm_RMSNormGradOp : Norm_GradOp<"rms_norm_grad", 0> {
  let summary = "RMSNorm backward: dx and, as requested, dweight";
  let description = [{
    As `norm.layer_norm_grad` with `xhat = x * rstd` and without the
    `mean(g)` term and `dbias`:

        dx = rstd * (g - xhat * mean(g * xhat)) (+ dresidual)

    ```mlir
    %dx, %dw = norm.rms_norm_grad dy(%dy : tensor<?x4096xbf16>)
        x(%x : tensor<?x4096xbf16>) rstd(%rstd : tensor<?xf32>)
        weight(%w : tensor<4096xbf16>)
        {strategy = #norm.strategy<grouped_atomic>, groups = 64 : i64}
        -> dx(tensor<?x4096xbf16>) dweight(tensor<4096xbf16>)
    ```
  }];
}

#endif // NORM_DIALECT_NORM_IR_NORMOPS_TD
