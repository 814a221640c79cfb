//===- NormAttrs.td - norm dialect attributes --------------*- tablegen -*-===//
//
// Part of mlir-norm.
//
// `#norm.kernel`: what norm-map-to-gpu records of each kernel it creates,
// in the terms of the launch manifest (norm/Support/ManifestSchema.h), from
// which norm-compile writes the manifest's `kernels`.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_DIALECT_NORM_IR_NORMATTRS_TD
#define NORM_DIALECT_NORM_IR_NORMATTRS_TD

include "norm/Dialect/Norm/IR/NormBase.td"

def Norm_KernelAttr : AttrDef<Norm_Dialect, "Kernel"> {
  let mnemonic = "kernel";
  let summary = "a GPU kernel's launch record, in the manifest's terms";
  let description = [{
    One kernel of a host function, as the launch manifest describes it:
    its `name` (the gpu.func), `kind` (zero, dx, reduce, forward), threads
    per `block`, and the `grid` rule (constant, workspace_rows, programs,
    row_blocks, columns) that gives its blocks from M. `columns` is the
    number of columns per block of the `columns` rule; `lanes`, `rows`,
    `vector` and `registers` describe the geometry of the row kernels (dx,
    forward). `cluster` (1 to 8; absent: 1, and the mapping records it only
    above 1) is the number of blocks per thread-block cluster of a kernel
    that splits each row across a cluster (above 1 only with grid =
    programs): it launches G * cluster blocks, grouped in clusters of
    `cluster` (compiled into the kernel as `.reqnctapercluster`, so it needs
    sm_90 or later). `shared` (absent: 0) is the dynamic shared memory the
    kernel is launched with, in bytes (the manifest's
    `dynamic_shared_bytes`). The keys, their ranges and the enum names are
    those of the manifest's kernel fields (norm/Support/ManifestSchema.def),
    from which the attribute's storage (a `KernelRecord`), parser, printer
    and verifier are stamped.

    ```mlir
    #norm.kernel<name = "f_dx_1", kind = dx, block = 256, grid = programs,
                 lanes = 256, rows = 1, vector = 8, registers = true>
    #norm.kernel<name = "f_dx_1", kind = dx, block = 512, grid = programs,
                 lanes = 512, rows = 1, vector = 8, registers = true,
                 cluster = 4>
    #norm.kernel<name = "f_reduce_2", kind = reduce, block = 256,
                 grid = columns, columns = 32>
    ```
  }];
  // One parameter: the record whose members are the manifest's kernel
  // fields, so that a new launch property is one line of ManifestSchema.def.
  let parameters = (ins
    AttrParameter<"::mlir::norm::manifest::KernelRecord",
                  "the launch record (ManifestSchema.def)",
                  "const ::mlir::norm::manifest::KernelRecord &">:$record);
  let skipDefaultBuilders = 1;
  let builders = [
    AttrBuilder<(ins "const ::mlir::norm::manifest::KernelRecord &":$record),
    [{
      return $_get($_ctxt, record);
    }]>,
    AttrBuilder<(ins "::llvm::StringRef":$name,
                     "::mlir::norm::manifest::KernelKind":$kind,
                     "int64_t":$block,
                     "::mlir::norm::manifest::GridRule":$grid,
                     CArg<"int64_t", "0">:$columns,
                     CArg<"int64_t", "0">:$lanes,
                     CArg<"int64_t", "0">:$rows,
                     CArg<"int64_t", "0">:$vector,
                     CArg<"std::optional<bool>", "std::nullopt">:$registers,
                     CArg<"int64_t", "0">:$cluster,
                     CArg<"int64_t", "0">:$shared), [{
      ::mlir::norm::manifest::KernelRecord record;
      record.name = name.str();
      record.kind = kind;
      record.block = block;
      record.grid = grid;
      record.columns = columns;
      record.lanes = lanes;
      record.rows = rows;
      record.vector = vector;
      record.registers = registers;
      record.cluster = cluster;
      record.shared = shared;
      return $_get($_ctxt, record);
    }]>
  ];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

#endif // NORM_DIALECT_NORM_IR_NORMATTRS_TD
