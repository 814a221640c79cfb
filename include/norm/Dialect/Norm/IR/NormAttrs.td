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
    `dynamic_shared_bytes`). `resident` (absent: none) is the blocks an SM
    a `programs` dx kernel is compiled to keep resident (`.minnctapersm`,
    norm-attach-resident-blocks), where its largest launch is one wave
    only at that many (the manifest's `resident_blocks`). `wave` (absent:
    none) is the blocks an SM such a kernel's largest launch needs to be
    one wave where the compiler leaves the registers to the JIT: the
    runtime asks for them only where the JIT's registers fall short (the
    manifest's `wave_blocks`). `waits = true` (absent: false) marks a
    kernel that waits for the grids before it in the stream before it
    touches global memory (`griddepcontrol.wait`), so the runtime may
    launch it before they end (programmatic stream serialization; sm_90,
    norm-map-to-gpu's `dependent-launch`). `skip_at_one_group = true`
    (absent: false; a reduce kernel only) marks a reduce kernel whose work
    the dx kernel before it does itself where G = 1, so the runtime
    launches it only where G > 1 (the manifest's `skip_at_one_group`). The
    keys, their
    ranges and the enum names are those of the manifest's kernel fields
    (norm/Support/ManifestSchema.def), from which the attribute's storage
    (a `KernelRecord`), parser, printer and verifier are stamped.

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
                     CArg<"int64_t", "0">:$shared,
                     CArg<"int64_t", "0">:$resident,
                     CArg<"int64_t", "0">:$wave,
                     CArg<"std::optional<bool>", "std::nullopt">:$waits), [{
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
      record.resident = resident;
      record.wave = wave;
      record.waits = waits;
      return $_get($_ctxt, record);
    }]>
  ];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// #norm.row_geometry
//===----------------------------------------------------------------------===//

def Norm_RowRegime : I32EnumAttr<"RowRegime",
    "how a row kernel's lanes walk their chunks", [
  I32EnumAttrCase<"Registers", 0, "registers">,
  I32EnumAttrCase<"Looped", 1, "looped">
]> {
  let cppNamespace = "::mlir::norm";
  let genSpecializedAttr = 0;
}

def Norm_RowLayout : I32EnumAttr<"RowLayout",
    "how a row kernel maps a lane's chunks to columns", [
  I32EnumAttrCase<"Vector", 0, "vector">,
  I32EnumAttrCase<"Interleaved", 1, "interleaved">,
  I32EnumAttrCase<"Both", 2, "both">
]> {
  let cppNamespace = "::mlir::norm";
  let genSpecializedAttr = 0;
}

def Norm_PartialsHome : I32EnumAttr<"RowPartials",
    "where a row kernel keeps its deterministic partial rows", [
  I32EnumAttrCase<"None", 0, "none">,
  I32EnumAttrCase<"Registers", 1, "registers">,
  I32EnumAttrCase<"Shared", 2, "shared">,
  I32EnumAttrCase<"Global", 3, "global">
]> {
  let cppNamespace = "::mlir::norm";
  let genSpecializedAttr = 0;
}

def Norm_RowGeometryAttr : AttrDef<Norm_Dialect, "RowGeometry"> {
  let mnemonic = "row_geometry";
  let summary = "every decision the GPU mapping makes for one row kernel";
  let description = [{
    How the row kernel of one norm op (its `dx` kernel, or the forward's
    kernel) is spread over the GPU. `norm-choose-geometry` sets it, as the
    discardable attribute `norm.geometry`, on every norm op and every
    `dx` / `forward` nest that has none, from the cost model (Geometry.h);
    `norm-map-to-gpu` carries out what it says and nothing else. Written by
    hand (on the op, where lowering carries it to the nest, or on the nest)
    it is an override: `norm-choose-geometry` checks it against the row
    (N, element types, strategy) and the chip and refuses it with a
    diagnostic naming the limit it breaks.

    * `regime`: `registers` (a lane's `chunks` chunks unrolled, row caches
      in registers) or `looped` (a block per row walking its chunks).
    * `threads` per block; `lanes` per row (a power of two dividing
      `threads`); `rows` = threads / lanes, rows in flight per block.
    * `vector`: elements per chunk (one 16-byte access).
    * `chunks`: chunks per lane (K, registers regime; 0 when looped).
    * `layout`: `vector` (chunk c is columns [c V, c V + V)), `interleaved`
      (coalesced element accesses, rows that can never be 16-byte aligned)
      or `both` (two bodies under a run-time alignment test).
    * `partials`: where the `deterministic` partial rows live (`none`,
      `registers`, `shared`, `global`).
    * `cluster`: blocks of a thread-block cluster that split each row
      (sm_90; 1: none).
    * `batch`: rows whose partial-row update the looped regime shares.
    * `prefetch`: waves of rows (S rows, or B in the looped regime) a
      block has prefetched into L2 ahead of the one it works on, with one
      `cp.async.bulk.prefetch` a row and read memref (sm_90; 0: none). A
      hint to the memory system: no result bit depends on it.
    * `partial_vector`: with `partials = shared`, the sums a lane keeps
      side by side in shared memory in the vector layout's body (W; 1, 2
      or 4, at most `vector`): a chunk's partial sums then move W at a
      time (one 16-byte access a group at W = 4) instead of a word each.
      Fewer shared accesses against more live registers; no result bit
      depends on it.
    * `pipeline`: waves of rows whose loads a register-regime block issues
      ahead into registers (0: none; 1: the next wave's row, its chunks of
      the rows the first column loop reads and its statistics, loaded
      right after this row's first column loop, before its in-row sums).
      Bytes in flight while the block reduces and writes a row, against
      more live registers; no result bit depends on it.
    * `narrow_cache`: the registers regime's row caches of 16-bit rows
      kept in the loaded type and extended again at each use, an element
      an entry (1) or two elements a 32-bit word (2), instead of as f32
      (0): up to half the registers for a conversion an element; no
      result bit depends on it.
    * `hold_columns`: the column vectors the row body reads (weight,
      bias), a lane's chunks of them loaded into registers once, at the top
      of the vector layout's body, and used by every row of the program
      (1), instead of loaded at each use (0): a forward row's weight
      travels with x instead of after the in-row sums, and a block of
      several waves reads it once, against more live registers; no result
      bit depends on it.
    * `shared`, `dynamic_shared`: bytes of static and dynamic shared memory
      the kernel takes; derived from the rest (the pass fills them in).

    ```mlir
    {norm.geometry = #norm.row_geometry<regime = registers, threads = 256,
        lanes = 256, rows = 1, vector = 8, chunks = 2, layout = vector,
        partials = shared, shared = 16384>}
    ```
  }];
  let parameters = (ins
    EnumParameter<Norm_RowRegime>:$regime,
    "int64_t":$threads,
    "int64_t":$lanes,
    "int64_t":$rows,
    "int64_t":$vector,
    DefaultValuedParameter<"int64_t", "0", "chunks per lane">:$chunks,
    DefaultValuedParameter<"::mlir::norm::RowLayout",
                           "::mlir::norm::RowLayout::Vector",
                           "chunk layout">:$layout,
    DefaultValuedParameter<"::mlir::norm::RowPartials",
                           "::mlir::norm::RowPartials::None",
                           "home of the partial rows">:$partials,
    DefaultValuedParameter<"int64_t", "1", "blocks per cluster">:$cluster,
    DefaultValuedParameter<"int64_t", "1", "rows per partial update">:$batch,
    DefaultValuedParameter<"int64_t", "0", "waves prefetched into L2">
        :$prefetch,
    DefaultValuedParameter<"int64_t", "1", "shared partial sums a lane "
                           "keeps side by side">:$partial_vector,
    DefaultValuedParameter<"int64_t", "0", "waves loaded ahead into "
                           "registers">:$pipeline,
    DefaultValuedParameter<"int64_t", "0", "row caches in the loaded "
                           "type">:$narrow_cache,
    DefaultValuedParameter<"int64_t", "0", "column vectors held in "
                           "registers">:$hold_columns,
    DefaultValuedParameter<"int64_t", "0", "static shared bytes">:$shared,
    DefaultValuedParameter<"int64_t", "0", "dynamic shared bytes">
        :$dynamic_shared);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

#endif // NORM_DIALECT_NORM_IR_NORMATTRS_TD
