//===- NormBase.td - norm dialect definition ---------------*- tablegen -*-===//
//
// The `norm` dialect: LayerNorm / RMSNorm forward and backward as single ops,
// lowered pass by pass to bandwidth-bound GPU kernels.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_DIALECT_NORM_IR_NORMBASE_TD
#define NORM_DIALECT_NORM_IR_NORMBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/IR/CommonAttrConstraints.td"

def Norm_Dialect : Dialect {
  let name = "norm";
  let cppNamespace = "::mlir::norm";
  let summary = "LayerNorm and RMSNorm, forward and backward, as single ops";
  let description = [{
    The `norm` dialect models a normalisation layer over the trailing
    dimension of a tensor as one op, so that a compiler can lower the backward
    (dx, dweight, dbias) to kernels that read `x` and `dy` from memory once.

    Every op takes ranked operands of rank >= 2: the trailing dimension `N` is
    the normalised (feature) axis, all leading dimensions are rows (they
    collapse to `M`). The saved row statistics (`mean`, `rstd`) have the
    leading dimensions of `x` and are always `f32`. Activations are `f32`,
    `f16` or `bf16`; the weight may have another float type than `x`.

    Ops come in two forms, distinguished by their operand types:

    * value form (tensors, as frontends emit it): the outputs are results;
    * buffer form (memrefs, destination passing): the outputs are `*_out`
      operands and the op has no results. Buffers may have any strided
      layout, so strided rows need no copy.
  }];
  let useDefaultAttributePrinterParser = 1;

  // The contract between the lowering stages (docs/Lowering.md): what
  // norm-split, norm-lower-forward and norm-cache-rows put on the loops and
  // buffers they create, and what the later passes and the GPU mapping read. Typed
  // accessors are in norm/Dialect/Norm/IR/StageContract.h; the dialect
  // verifies each attribute's type wherever it appears.
  let discardableAttrs = (ins
    "::mlir::norm::StageAttr":$stage,
    "::mlir::IntegerAttr":$id,
    "::mlir::TypeAttr":$accumulate,
    "::mlir::norm::ReductionStrategyAttr":$strategy,
    "::mlir::UnitAttr":$row_cache,
    "::mlir::UnitAttr":$early_row,
    "::mlir::UnitAttr":$recomputable,
    "::mlir::UnitAttr":$workspace,
    "::mlir::UnitAttr":$written,
    "::mlir::ArrayAttr":$kernels,
    "::mlir::norm::RowGeometryAttr":$geometry
  );
  let hasOperationAttrVerify = 1;
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

def Norm_ReductionStrategy : I32EnumAttr<"ReductionStrategy",
    "how the cross-row dweight/dbias reduction combines per-row partials", [
  I32EnumAttrCase<"Deterministic", 0, "deterministic">,
  I32EnumAttrCase<"GroupedAtomic", 1, "grouped_atomic">,
  I32EnumAttrCase<"Atomic", 2, "atomic">,
  I32EnumAttrCase<"Locked", 3, "locked">
]> {
  let cppNamespace = "::mlir::norm";
  let genSpecializedAttr = 0;
}

def Norm_ReductionStrategyAttr
    : EnumAttr<Norm_Dialect, Norm_ReductionStrategy, "strategy"> {
  let summary = "dweight/dbias reduction strategy";
  let description = [{
    * `deterministic` (default): every program owns a disjoint contiguous
      block of rows, accumulates one f32 partial row, and a fixed-order reduce
      sums the `[groups, N]` partials. Bitwise reproducible, and the number of
      groups depends on M and N only, so results are identical across GPUs.
    * `grouped_atomic`: row r atomically adds into partial row `r mod groups`,
      then a fixed-order reduce. Not bitwise reproducible.
    * `atomic`: every row atomically adds straight into `[N]`. Not
      reproducible; for comparison and tiny M.
    * `locked`: a spin lock per group guards a read-modify-write of the
      group's partial row (the Triton tutorial's scheme), then a reduce.
  }];
  let assemblyFormat = "`<` $value `>`";
}

def Norm_Stage : I32EnumAttr<"Stage",
    "which part of a lowered norm op a loop nest computes", [
  I32EnumAttrCase<"Xhat", 0, "xhat">,
  I32EnumAttrCase<"G", 1, "g">,
  I32EnumAttrCase<"Zero", 2, "zero">,
  I32EnumAttrCase<"Partials", 3, "partials">,
  I32EnumAttrCase<"Reduce", 4, "reduce">,
  I32EnumAttrCase<"Dx", 5, "dx">,
  I32EnumAttrCase<"Forward", 6, "forward">
]> {
  let cppNamespace = "::mlir::norm";
  let genSpecializedAttr = 0;
}

def Norm_StageAttr : EnumAttr<Norm_Dialect, Norm_Stage, "stage"> {
  let summary = "the stage of a loop nest created by norm-split or "
                "norm-lower-forward";
  let description = [{
    Put on the outermost `scf.for` of every nest norm-split (grad ops) and
    norm-lower-forward (forward ops) create, as the discardable attribute
    `norm.stage`:

    * `xhat`, `g`: a materialised intermediate (norm-recompute-loops
      removes it);
    * `zero`: clears the partial rows (and locks) of the dweight/dbias
      workspace;
    * `partials`: adds each row's `dy * xhat` / `dy` into a partial row
      (norm-fuse-partials moves it into the `dx` nest);
    * `reduce`: the fixed-order sum of the partial rows into dweight/dbias;
    * `dx`: the per-row input gradient (programs of contiguous rows);
    * `forward`: a forward op's row loop (norm-lower-forward).
  }];
  let assemblyFormat = "`<` $value `>`";
}

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

/// Operands are ranked tensors (value form) or memrefs (buffer form); ranks,
/// shapes and element types are checked by the C++ verifiers, whose messages
/// name the operand and the expected vs actual type.
def Norm_Shaped : AnyTypeOf<[AnyRankedTensor, AnyMemRef],
                            "ranked tensor or memref">;
defvar Norm_Buffer = AnyMemRef;

class Norm_Op<string mnemonic, list<Trait> traits = []>
    : Op<Norm_Dialect, mnemonic, traits>;

#endif // NORM_DIALECT_NORM_IR_NORMBASE_TD
