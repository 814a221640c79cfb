//===- Compare.h - kernel outputs against float64 references ----*- C++ -*-===//
//
// Part of mlir-norm.
//
// Error measure: the norm-wise relative error ||out - ref||_2 / ||ref||_2
// over a whole output. Bounds follow the output's storage type: 1e-5 for f32
// (f32 arithmetic on these sizes stays near 1e-6), and 1.5 unit roundoffs
// for f16/bf16, whose final rounding alone may cost up to one unit roundoff
// (2^-11, 2^-8) norm-wise. Any NaN or infinity fails, whatever the norms.
// The caller may raise the f32 bound where a correct f32 computation needs
// more (the forward statistics at large N, see CaseRunner.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef NORM_TEST_EXECUTION_COMPARE_H
#define NORM_TEST_EXECUTION_COMPARE_H

#include "HostBuffer.h"

#include <string>
#include <vector>

namespace norm_exec {

/// The verdict on one output of one run.
struct OutputCheck {
  std::string name;
  /// The relative error (see compareOutput).
  double error = 0;
  double bound = 0;
  /// A failure other than the bound (NaN, unwritten element, broken guard,
  /// non-reproducible result); empty if none.
  std::string problem;

  bool ok() const { return problem.empty() && error <= bound; }
};

/// The bound of f32 outputs.
constexpr double kF32Bound = 1e-5;

/// The bound for an output stored in `t`: `f32Bound` for f32,
/// `roundingSlack` unit roundoffs for f16/bf16 (see the file comment).
double errorBound(DType t, double roundingSlack = 1.5,
                  double f32Bound = kF32Bound);

/// The Euclidean norm of `v`.
double norm2(const std::vector<double> &v);

/// Compares the view of `out` with `ref` (row-major) against `bound`. The
/// error is ||out - ref|| / max(||ref||, floor), or the absolute
/// ||out - ref|| when both are 0. `floor` is the size of the terms an
/// ill-conditioned output is a difference of (0: none).
OutputCheck compareOutput(const char *name, const HostBuffer &out,
                          const std::vector<double> &ref, double floor,
                          double bound);

} // namespace norm_exec

#endif // NORM_TEST_EXECUTION_COMPARE_H
