//===- Pipelines.h - norm pass pipelines ------------------------*- C++ -*-===//
//
// Part of mlir-norm.
//
// Each stage of the compiler has one options struct, declared once; the
// pipelines that run several stages inherit the structs of their stages, so
// every stage option is reachable from the full pipeline under one name,
// with one declaration. (PassPipelineOptions derives from PassOptions
// virtually: all stage options of a composed struct register with its one
// PassOptions, which parses and prints them together.)
//
// Each pipeline is such an options struct, a build function that embedders
// call on their own OpPassManager, and a registration for norm-opt
// (registerNormPipelines).
//
//===----------------------------------------------------------------------===//

#ifndef NORM_PIPELINES_PIPELINES_H
#define NORM_PIPELINES_PIPELINES_H

#include "norm/Dialect/Norm/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir::norm {

//===----------------------------------------------------------------------===//
// Stage options
//===----------------------------------------------------------------------===//

/// Options of the lowering from norm ops to loop nests.
struct LowerToLoopsOptions : public PassPipelineOptions<LowerToLoopsOptions> {
  Option<int64_t> groups{
      *this, "groups",
      llvm::cl::desc("Partial rows G for ops without a `groups` attribute "
                     "(0: chosen from M and N)"),
      llvm::cl::init(0)};
  Option<StrategyOverride> strategy{
      *this, "strategy",
      llvm::cl::desc("Reduction strategy of every grad op (keep: each op's "
                     "own)"),
      llvm::cl::init(StrategyOverride::Keep), strategyOverrideValues()};
  Option<bool> bufferizeFunctionBoundaries{
      *this, "bufferize-function-boundaries",
      llvm::cl::desc("Also bufferize function signatures (tensor arguments "
                     "and results become memrefs)"),
      llvm::cl::init(true)};
  Option<bool> earlyRows{
      *this, "early-rows",
      llvm::cl::desc("Read the rows only a later column loop reads "
                     "(dresidual) in the first one, into row caches "
                     "(norm-cache-rows early-rows); the GPU mapping reads "
                     "them late again where they would cost a wave "
                     "(norm-map-to-gpu fit-early-rows)"),
      llvm::cl::init(true)};
};

/// The cost model's knobs (norm-choose-geometry) that only it reads; it and
/// norm-map-to-gpu take `chip` from GPUToBinaryOptions.
struct GeometryOptions : public PassPipelineOptions<GeometryOptions> {
  Option<int64_t> threads{
      *this, "threads",
      llvm::cl::desc("Threads per block of row kernels (0: chosen from N)"),
      llvm::cl::init(0)};
  Option<int64_t> maxRegisterElements{
      *this, "max-register-elements",
      llvm::cl::desc("Largest share of a row (elements per thread, per "
                     "cached array) kept in registers"),
      llvm::cl::init(64)};
  Option<int64_t> cluster{
      *this, "cluster",
      llvm::cl::desc("Blocks per cluster that split a row (0: chosen "
                     "from N for a dx row on sm_90; 1: never; 2 to 8: "
                     "forced, forward rows too)"),
      llvm::cl::init(0)};
  Option<int64_t> maxLanes{
      *this, "max-lanes",
      llvm::cl::desc("Most lanes per row of a row kernel (0: no cap)"),
      llvm::cl::init(0)};
  Option<bool> trimIdleWarps{
      *this, "trim-idle-warps",
      llvm::cl::desc("A backward row at one chunk a lane that can be "
                     "16-byte aligned keeps only the warps its chunks need "
                     "(norm-choose-geometry trim-idle-warps)"),
      llvm::cl::init(true)};
  Option<bool> twoChunkRows{
      *this, "two-chunk-rows",
      llvm::cl::desc("A plain deterministic backward row of one chunk a "
                     "lane on 256 lanes takes two chunks on 128 past 2048 "
                     "rows (norm-choose-geometry two-chunk-rows)"),
      llvm::cl::init(true)};
  Option<bool> registerPartials{
      *this, "register-partials",
      llvm::cl::desc("A deterministic backward row of one row in flight "
                     "at two chunks a lane keeps its partial rows in "
                     "registers, not static shared memory, where they keep "
                     "the wave (norm-choose-geometry register-partials)"),
      llvm::cl::init(true)};
  Option<bool> rereadFallback{
      *this, "reread-fallback",
      llvm::cl::desc("A forward kernel of two bodies reads its row again in "
                     "the body for rows not 16-byte aligned, where the "
                     "aligned body reads its row cache (norm-map-to-gpu "
                     "reread-fallback). No result bit depends on it"),
      llvm::cl::init(true)};
  Option<int64_t> forwardFinish{
      *this, "forward-finish",
      llvm::cl::desc("At G = 1, the dx kernel finishes each column of "
                     "dweight / dbias from the partial value the thread "
                     "stored, without a barrier and a load back "
                     "(norm-map-to-gpu forward-finish; 0: never, 1: over a "
                     "cluster, 2: always). No result bit depends on it"),
      llvm::cl::init(1)};
  Option<int64_t> rowBarriers{
      *this, "row-barriers",
      llvm::cl::desc("The barriers of a row's sums across its warps: 0, two "
                     "block barriers; 1, two of the row's own warps; 2, one "
                     "of the row's own warps, the scratch double-buffered "
                     "(norm-map-to-gpu row-barriers). No result bit depends "
                     "on it"),
      llvm::cl::init(2)};
  Option<int64_t> asyncRows{
      *this, "async-rows",
      llvm::cl::desc("Waves of rows a dx kernel copies ahead into shared "
                     "memory with cp.async where that keeps its wave "
                     "(norm-map-to-gpu async-rows; 0: none, 1 to 4). No "
                     "result bit depends on it"),
      llvm::cl::init(2)};
  Option<int64_t> reduceColumns{
      *this, "reduce-columns",
      llvm::cl::desc("Columns a block of the reduce kernel takes: 8, 16 or "
                     "32; 0, the most whose blocks still number the chip's "
                     "SMs (norm-map-to-gpu reduce-columns). No result bit "
                     "depends on it"),
      llvm::cl::init(0)};
  Option<int64_t> reduceUnroll{
      *this, "reduce-unroll",
      llvm::cl::desc("Partial rows a thread of the reduce kernel loads a "
                     "batch, the next batch's loads before this one's adds "
                     "(norm-map-to-gpu reduce-unroll; 1 to 32, 0: 16). No "
                     "result bit depends on it"),
      llvm::cl::init(0)};
  Option<bool> ringDynamic{
      *this, "ring-dynamic",
      llvm::cl::desc("Where the static shared memory has no room for "
                     "async-rows waves, the ring goes to dynamic shared "
                     "memory (norm-map-to-gpu ring-dynamic; off by "
                     "default: measured 0.83-1.43x by kernel, docs/GPU.md). "
                     "No result bit depends on it"),
      llvm::cl::init(false)};
  Option<bool> dependentLaunch{
      *this, "dependent-launch",
      llvm::cl::desc("Kernels wait for the grids before them in their entry "
                     "and are recorded `waits`, for the runtime to launch "
                     "them before those end (sm_90; norm-map-to-gpu "
                     "dependent-launch). No result bit depends on it"),
      llvm::cl::init(true)};
  Option<bool> waveResident{
      *this, "wave-resident",
      llvm::cl::desc("Record in dx kernels the blocks an SM that keep their "
                     "largest launch one wave, for the runtime to ask the "
                     "JIT for where its registers fall short (norm-map-to-"
                     "gpu wave-resident; measured 1.03-1.17x where it acts, "
                     "docs/GPU.md). No result bit depends on it"),
      llvm::cl::init(true)};
  Option<int64_t> prefetch{
      *this, "prefetch",
      llvm::cl::desc("Waves of rows a row kernel's block prefetches into L2 "
                     "ahead (0: none, or the tuning table's; 1 to 4; sm_90)"),
      llvm::cl::init(0)};
  Option<int64_t> partialVector{
      *this, "partial-vector",
      llvm::cl::desc("Partial sums a lane of a dx kernel keeps side by side "
                     "in shared memory, moved that many at a time (0: the "
                     "tuning table's, else 1; 1, 2 or 4). No result bit "
                     "depends on it"),
      llvm::cl::init(0)};
  Option<int64_t> pipeline{
      *this, "pipeline",
      llvm::cl::desc("Waves of rows whose loads a register-regime dx kernel "
                     "issues ahead into registers (0: the tuning table's, "
                     "else the cost model's: 1 for a kernel with early "
                     "rows (dresidual) of one 16-byte chunk a lane, none "
                     "otherwise; 1). No result bit depends on it"),
      llvm::cl::init(0)};
  Option<int64_t> narrowCache{
      *this, "narrow-cache",
      llvm::cl::desc("Row caches of a register-regime row kernel (dx or "
                     "forward) over 16-bit rows kept in the loaded type (0: "
                     "the tuning table's, else f32; 1: an element a "
                     "register; 2: two elements a 32-bit word). No result "
                     "bit depends on it"),
      llvm::cl::init(0)};
  Option<int64_t> holdColumns{
      *this, "hold-columns",
      llvm::cl::desc("Column vectors (weight, bias) a register-regime row "
                     "kernel loads into registers once a program (-1: the "
                     "tuning table's, else the cost model's; 0: at each "
                     "use; 1: held). No result bit depends on it"),
      llvm::cl::init(-1)};
  Option<int64_t> batchRows{
      *this, "batch-rows",
      llvm::cl::desc("Rows per partial-row update of the looped regime (0: "
                     "chosen; 1 to 16)"),
      llvm::cl::init(0)};
  Option<int64_t> rows{
      *this, "rows",
      llvm::cl::desc("Rows M the kernels are built for, a hint for the "
                     "tuning table (0: unknown); kernels stay correct for "
                     "every M"),
      llvm::cl::init(0)};
  Option<bool> tuning{
      *this, "tuning",
      llvm::cl::desc("Consult the chip family's tuning table before the "
                     "cost model"),
      llvm::cl::init(true)};
  Option<std::string> tuningFile{
      *this, "tuning-file",
      llvm::cl::desc("A tuning table (JSON, as tuning/<family>.json) to "
                     "consult instead of the embedded one, for any chip"),
      llvm::cl::init("")};
};

/// Options of the GPU code generation tail (gpu.module -> PTX/cubin).
struct GPUToBinaryOptions : public PassPipelineOptions<GPUToBinaryOptions> {
  Option<std::string> chip{*this, "chip",
                           llvm::cl::desc("Target SM architecture"),
                           llvm::cl::init("sm_90")};
  Option<std::string> features{*this, "features",
                               llvm::cl::desc("PTX features, e.g. +ptx81"),
                               llvm::cl::init("+ptx81")};
  Option<unsigned> optLevel{*this, "opt-level",
                            llvm::cl::desc("LLVM optimisation level (0-3)"),
                            llvm::cl::init(3)};
  Option<std::string> format{
      *this, "format",
      llvm::cl::desc("Output: isa (PTX text), bin (cubin, runs ptxas) or "
                     "fatbin"),
      llvm::cl::init("isa")};
  Option<std::string> toolkit{
      *this, "toolkit",
      llvm::cl::desc("CUDA toolkit root (libdevice, ptxas); empty: "
                     "$CUDA_HOME, $CUDA_PATH, $CUDA_ROOT, then the build's "
                     "default"),
      llvm::cl::init("")};
  // Off until the H200 has timed it: fewer instructions, but more
  // registers in some kernels (docs/NOTES.md; bench/tune.py plan fma).
  Option<bool> fuseMultiplyAdd{
      *this, "fuse-multiply-add",
      llvm::cl::desc("Fuse each f32 multiply into its only add or subtract "
                     "(norm-fuse-multiply-add: explicit fma.rn.f32)"),
      llvm::cl::init(false)};
  Option<bool> reciprocalDivide{
      *this, "reciprocal-divide",
      llvm::cl::desc("Divide by a constant (N) as a multiply by its f32 "
                     "reciprocal (norm-reciprocal-divide; dx, y and the "
                     "statistics within one ulp, dweight/dbias unchanged; "
                     "off by default: measured 1.000x with losses to 0.93x "
                     "at f32 6144, docs/NOTES.md)"),
      llvm::cl::init(false)};
  Option<bool> restrictArguments{
      *this, "restrict-arguments",
      llvm::cl::desc("Give the kernels' pointers llvm.noalias (and "
                     "llvm.readonly for inputs) where the launch contract "
                     "keeps their arguments apart (norm-restrict-kernel-"
                     "arguments); false: may-alias pointers throughout"),
      llvm::cl::init(true)};
  Option<bool> restrictResident{
      *this, "restrict-resident",
      llvm::cl::desc("Give each restricted kernel the blocks an SM its "
                     "launch needs to stay one wave (nvvm.minctasm, "
                     "ptxas's .minnctapersm); off by default: measured "
                     "0.94x, ptxas spills to meet it (docs/NOTES.md)"),
      llvm::cl::init(false)};
};

/// Options of the CPU lowering of the loop nests (for execution tests).
struct CPUToLLVMOptions : public PassPipelineOptions<CPUToLLVMOptions> {};

/// Options of the whole compiler, norm ops -> gpu.binary: every option of
/// its three stages, each once.
struct NormToGPUBinaryOptions
    : public PassPipelineOptions<NormToGPUBinaryOptions>,
      public LowerToLoopsOptions,
      public GeometryOptions,
      public GPUToBinaryOptions {
  using PassPipelineOptions<NormToGPUBinaryOptions>::createFromString;
};

//===----------------------------------------------------------------------===//
// Pipelines
//===----------------------------------------------------------------------===//

/// Lowers norm ops to tagged loop nests on each function:
/// norm-recompute-graph (on tensors), one-shot-bufferize, norm-split (grad
/// ops) then norm-lower-forward (forward ops), norm-recompute-loops,
/// norm-promote, norm-fuse-partials, norm-cache-rows, with norm-check-stage
/// at each stage boundary (`split` after both lowerings). No canonicalization: the
/// output keeps its norm.stage tags for norm-map-to-gpu.
///
/// Post-condition (checked: norm-check-stage{stage=fused}): no norm op and
/// no tensor remain; no [M, N] intermediate; all arithmetic in the nests is
/// f32 (or the ops' accumulation type); x and dy are read once per row.
void buildLowerToLoopsPipeline(OpPassManager &pm,
                               const LowerToLoopsOptions &options);

/// Lowers every `gpu.module` (kernels on scf/arith/math/memref/gpu) to NVVM
/// and serialises it into a `gpu.binary`.
///
/// Post-condition: no `gpu.module` remains; each became a `gpu.binary` whose
/// object is PTX (`format=isa`), a cubin or a fatbin for `chip`, with every
/// libdevice call resolved (compilation fails if the toolkit is missing).
/// `rows`: the M the kernels are built for (norm-choose-geometry's hint; 0:
/// unknown), for norm-restrict-kernel-arguments' cost rule.
void buildGPUToBinaryPipeline(OpPassManager &pm,
                              const GPUToBinaryOptions &options,
                              int64_t rows = 0);

/// norm-lower-to-loops, norm-choose-geometry, norm-map-to-gpu,
/// gpu-kernel-outlining,
/// canonicalize, cse, then the norm-gpu-to-binary tail.
///
/// Post-condition: the host functions hold allocations and
/// gpu.launch_func ops (and a `norm.kernels` record each); the kernels are
/// in one gpu.binary per function.
void buildNormToGPUBinaryPipeline(OpPassManager &pm,
                                  const NormToGPUBinaryOptions &options);

/// Lowers scf/arith/math/memref/func loop nests to the LLVM dialect for the
/// host CPU (bf16 conversions expanded, since Debian's libgcc lacks
/// __truncsfbf2).
///
/// Post-condition: only LLVM dialect ops remain.
void buildCPUToLLVMPipeline(OpPassManager &pm, const CPUToLLVMOptions &options);

/// Registers the pipelines with the global pass registry (norm-opt):
/// norm-lower-to-loops, norm-gpu-to-binary, norm-to-gpu-binary and
/// norm-cpu-to-llvm.
void registerNormPipelines();

} // namespace mlir::norm

#endif // NORM_PIPELINES_PIPELINES_H
