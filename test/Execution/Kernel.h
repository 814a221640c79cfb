//===- Kernel.h - test kernels: JIT-compiled MLIR or host C++ ---*- C++ -*-===//
//
// Part of mlir-norm.
//
// A Kernel runs one KernelSpec on buffers bound to its operands. The JIT
// kernel is the subject of the tests: the spec's MLIR, lowered by a pass
// pipeline and compiled by mlir::ExecutionEngine. The host kernel is a plain
// f32 C++ implementation, the positive control that shows the bounds are
// met by a correct f32 computation and that the harness can pass.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_TEST_EXECUTION_KERNEL_H
#define NORM_TEST_EXECUTION_KERNEL_H

#include "HostBuffer.h"
#include "KernelSpec.h"

#include "llvm/Support/Error.h"

#include <array>
#include <memory>
#include <string>
#include <vector>

namespace norm_exec {

/// The buffer bound to each operand (null: not an operand of the kernel).
/// Two operands may share a buffer (dx written in place of dy).
using Bindings =
    std::array<HostBuffer *, static_cast<size_t>(Operand::HOut) + 1>;

inline HostBuffer *&bound(Bindings &b, Operand o) {
  return b[static_cast<size_t>(o)];
}

class Kernel {
public:
  virtual ~Kernel();
  /// Runs on the bound buffers.
  virtual void run(Bindings &buffers) = 0;
};

/// How the JIT kernels are built.
struct JitOptions {
  /// A textual pass pipeline rooted at builtin.module.
  std::string pipeline;
  /// LLVM optimisation level of the JIT (0-3).
  unsigned optLevel = 2;
  /// Shared libraries the JIT resolves symbols in (memrefCopy, ...).
  std::vector<std::string> sharedLibs;
  /// Print the module after the pipeline to stderr.
  bool printLowered = false;
};

/// Parses kernelSource(spec), runs the pipeline, JIT-compiles the result.
/// Errors carry the diagnostics.
llvm::Expected<std::unique_ptr<Kernel>>
compileJitKernel(const KernelSpec &spec, const JitOptions &options);

/// The f32 host implementation of `spec` (ignores the strategy and form).
std::unique_ptr<Kernel> makeHostKernel(const KernelSpec &spec);

/// Registers the passes and initialises the native target; call once.
void initializeJit();

} // namespace norm_exec

#endif // NORM_TEST_EXECUTION_KERNEL_H
