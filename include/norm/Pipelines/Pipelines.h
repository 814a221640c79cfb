//===- Pipelines.h - norm pass pipelines ------------------------*- C++ -*-===//
//
// Part of mlir-norm.
//
// Each pipeline is an options struct, a build function that embedders call
// on their own OpPassManager, and a registration for norm-opt.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_PIPELINES_PIPELINES_H
#define NORM_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir::norm {

/// Options of the GPU code generation tail (gpu.module -> PTX/cubin).
struct GPUToBinaryOptions : public PassPipelineOptions<GPUToBinaryOptions> {
  PassOptions::Option<std::string> chip{
      *this, "chip", llvm::cl::desc("Target SM architecture"),
      llvm::cl::init("sm_90")};
  PassOptions::Option<std::string> features{
      *this, "features", llvm::cl::desc("PTX features, e.g. +ptx80"),
      llvm::cl::init("+ptx80")};
  PassOptions::Option<unsigned> optLevel{
      *this, "opt-level", llvm::cl::desc("LLVM optimisation level (0-3)"),
      llvm::cl::init(3)};
  PassOptions::Option<std::string> format{
      *this, "format",
      llvm::cl::desc("Output: isa (PTX text), bin (cubin, runs ptxas) or "
                     "fatbin"),
      llvm::cl::init("isa")};
  PassOptions::Option<std::string> toolkit{
      *this, "toolkit",
      llvm::cl::desc("CUDA toolkit root (libdevice, ptxas); empty: "
                     "$CUDA_HOME, $CUDA_PATH, $CUDA_ROOT, then the build's "
                     "default"),
      llvm::cl::init("")};
};

/// Lowers every `gpu.module` (kernels on scf/arith/math/memref/gpu) to NVVM
/// and serialises it into a `gpu.binary`.
///
/// Post-condition: no `gpu.module` remains; each became a `gpu.binary` whose
/// object is PTX (`format=isa`), a cubin or a fatbin for `chip`, with every
/// libdevice call resolved (compilation fails if the toolkit is missing).
void buildGPUToBinaryPipeline(OpPassManager &pm,
                              const GPUToBinaryOptions &options);

/// Options of the lowering from norm ops to loop nests.
struct LowerToLoopsOptions : public PassPipelineOptions<LowerToLoopsOptions> {
  PassOptions::Option<int64_t> groups{
      *this, "groups",
      llvm::cl::desc("Partial rows G for ops without a `groups` attribute "
                     "(0: chosen from M and N)"),
      llvm::cl::init(0)};
  PassOptions::Option<std::string> strategy{
      *this, "strategy",
      llvm::cl::desc("Override the ops' reduction strategy (deterministic, "
                     "grouped_atomic, atomic, locked); empty keeps them"),
      llvm::cl::init("")};
  PassOptions::Option<bool> bufferizeFunctionBoundaries{
      *this, "bufferize-function-boundaries",
      llvm::cl::desc("Also bufferize function signatures (tensor arguments "
                     "and results become memrefs)"),
      llvm::cl::init(true)};
};

/// Value-form ops are bufferized (One-Shot Bufferize), then norm-split,
/// norm-recompute, norm-promote and norm-fuse-partials run on each function.
/// Graph-level recomputation runs first, on tensors. No canonicalization:
/// the output keeps its norm.stage tags for norm-map-to-gpu.
///
/// Post-condition: no norm op and no tensor remain; x and dy are read once
/// per row; all arithmetic is f32 (or the ops' accumulation type).
void buildLowerToLoopsPipeline(OpPassManager &pm,
                               const LowerToLoopsOptions &options);

/// Options of the CPU lowering of the loop nests (for execution tests).
struct CPUToLLVMOptions : public PassPipelineOptions<CPUToLLVMOptions> {};

/// Lowers scf/arith/math/memref/func loop nests to the LLVM dialect for the
/// host CPU (bf16 conversions expanded, since Debian's libgcc lacks
/// __truncsfbf2).
///
/// Post-condition: only LLVM dialect ops remain.
void buildCPUToLLVMPipeline(OpPassManager &pm, const CPUToLLVMOptions &options);

/// Options of the whole compiler: norm ops -> PTX / cubin.
struct NormToNVVMOptions : public PassPipelineOptions<NormToNVVMOptions> {
  PassOptions::Option<std::string> chip{
      *this, "chip", llvm::cl::desc("Target SM architecture"),
      llvm::cl::init("sm_90")};
  PassOptions::Option<std::string> features{
      *this, "features", llvm::cl::desc("PTX features, e.g. +ptx80"),
      llvm::cl::init("+ptx80")};
  PassOptions::Option<unsigned> optLevel{
      *this, "opt-level", llvm::cl::desc("LLVM optimisation level (0-3)"),
      llvm::cl::init(3)};
  PassOptions::Option<std::string> format{
      *this, "format",
      llvm::cl::desc("Output: isa (PTX text), bin (cubin) or fatbin"),
      llvm::cl::init("isa")};
  PassOptions::Option<std::string> toolkit{
      *this, "toolkit",
      llvm::cl::desc("CUDA toolkit root; empty: $CUDA_HOME, $CUDA_PATH, "
                     "$CUDA_ROOT, then the build's default"),
      llvm::cl::init("")};
  PassOptions::Option<std::string> strategy{
      *this, "strategy",
      llvm::cl::desc("Override the ops' reduction strategy; empty keeps "
                     "them"),
      llvm::cl::init("")};
  PassOptions::Option<int64_t> groups{
      *this, "groups",
      llvm::cl::desc("Partial rows for ops without a `groups` attribute "
                     "(0: chosen from M and N)"),
      llvm::cl::init(0)};
  PassOptions::Option<int64_t> threads{
      *this, "threads", llvm::cl::desc("Threads per block of row kernels"),
      llvm::cl::init(256)};
};

/// norm-lower-to-loops, norm-map-to-gpu, gpu-kernel-outlining, then the
/// norm-gpu-to-binary tail.
///
/// Post-condition: the host functions hold allocations and
/// gpu.launch_func ops (and a `norm.kernels` record each); the kernels are
/// in one gpu.binary per function.
void buildNormToNVVMPipeline(OpPassManager &pm,
                             const NormToNVVMOptions &options);

/// Registers the pipelines with the global pass registry (norm-opt).
void registerNormPipelines();

} // namespace mlir::norm

#endif // NORM_PIPELINES_PIPELINES_H
