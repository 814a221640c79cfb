//===- CaseRunner.h - run a family of kernels over shapes -------*- C++ -*-===//
//
// Part of mlir-norm.
//
// A family is one kernel configuration with every strategy asked for: the
// kernels differ only in the `strategy` attribute, so they are compiled once
// and all run on the same random inputs of each shape. Each (strategy,
// shape) run prints one PASS/FAIL line.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_TEST_EXECUTION_CASERUNNER_H
#define NORM_TEST_EXECUTION_CASERUNNER_H

#include "Kernel.h"
#include "KernelSpec.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace norm_exec {

/// A deliberate defect that a lit test injects to show the checks fire.
enum class SelfTest {
  None,
  /// Puts the poison back into one element of the first output after the
  /// run, as if the kernel had skipped it.
  Unwritten,
  /// Scales the largest element of the first output by 1 + 2^-6.
  Perturb,
  /// Flips the last bit of one dweight (else dx) element in the second run
  /// of the determinism check.
  Nondeterministic,
  /// Compares against a reference computed with rstd * (1 + 2^-10).
  Reference,
  /// Dies of SIGSEGV at the first run (checks the crash report).
  Crash,
  /// Sleeps at the first run (checks the timeout).
  Hang,
  /// Flips the last bit of one element of h (the fused residual add's sum)
  /// after the run: h must match bitwise.
  HBit,
};

/// One kernel configuration and the strategies and shapes to run it on.
struct Family {
  /// The kernel; its strategy is replaced by each of `strategies`.
  KernelSpec spec;
  /// Grad only; the forward family has the single entry "".
  std::vector<std::string> strategies;
  /// Grad: pass the dy buffer as dx too (dx written in place of dy).
  bool inPlace = false;
  std::vector<int64_t> ms, ns;
};

/// PASS/FAIL counts.
struct Tally {
  int64_t passed = 0, failed = 0;
};

/// How a family is run.
struct RunOptions {
  /// JIT-compile the MLIR (the subject) or run the host f32 implementation.
  bool hostBackend = false;
  JitOptions jit;
  uint64_t seed = 0;
  SelfTest selfTest = SelfTest::None;
  /// f16/bf16 outputs may be off by this many unit roundoffs (norm-wise).
  double roundingSlack = 1.5;
  /// Print compile and run times.
  bool timing = false;
  /// Called before each run with its name, the command that reproduces it
  /// and the counts so far (for crash reports).
  std::function<void(const std::string &, const std::string &, const Tally &)>
      onStart;
};

/// Compiles the family's kernels and runs them on every (m, n); prints one
/// line per (strategy, shape) to stdout.
Tally runFamily(const Family &family, const RunOptions &options);

/// "layer_norm_grad bf16 w:f32 w+b dres,zc" and the like.
std::string describeFamily(const Family &family);

} // namespace norm_exec

#endif // NORM_TEST_EXECUTION_CASERUNNER_H
