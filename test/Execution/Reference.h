//===- Reference.h - random problems and float64 references -----*- C++ -*-===//
//
// Part of mlir-norm.
//
// A Problem is one set of random inputs, already rounded to the storage
// types the kernel reads them in; the references are computed in float64
// from exactly those values, so the only differences a correct kernel shows
// are its own rounding (f32 arithmetic, the final store).
//
//===----------------------------------------------------------------------===//

#ifndef NORM_TEST_EXECUTION_REFERENCE_H
#define NORM_TEST_EXECUTION_REFERENCE_H

#include "KernelSpec.h"

#include <cstdint>
#include <vector>

namespace norm_exec {

/// The eps of the forward ops (their default) and of the statistics the
/// backward tests are fed.
constexpr float kEps = 1.0e-5f;

/// Random inputs of one shape, rounded to their storage types. Matrices are
/// row-major [m, n].
struct Problem {
  int64_t m = 0, n = 0;
  std::vector<double> x, dy, dres; ///< [m, n], x's type
  /// [m, n], x's type: the residual of a fused forward (else empty).
  std::vector<double> res;
  std::vector<double> w, b;        ///< [n], the parameter type
  /// [m]: statistics of x in float64, rounded to f32 (what a forward pass
  /// would have saved); the backward reads them. RMSNorm has mean = 0.
  std::vector<double> mean, rstd;
};

/// Draws a problem: x = N(0,1) * scale + offset with a random scale and
/// offset per row, dy and dresidual N(0,1), w = 1 + 0.1 N(0,1) (0.1 N(0,1)
/// with a zero-centred weight: its effective weight is w + 1), b =
/// 0.1 N(0,1).
Problem generateProblem(const KernelSpec &spec, int64_t m, int64_t n,
                        uint64_t seed);

/// Float64 backward of `spec` on `p`, using p.mean and p.rstd as given.
struct GradReference {
  std::vector<double> dx, dw, db;
  /// [m, n]: rstd * |g|, the size of the terms dx is the difference of.
  std::vector<double> dxScale;
  /// [n]: the sums over rows of |dy * xhat| and |dy|, the size of the terms
  /// dweight and dbias add up.
  std::vector<double> dwAbsSum, dbAbsSum;
};
GradReference referenceGrad(const KernelSpec &spec, const Problem &p);

/// Float64 forward of `spec` on `p` (eps = kEps). With a residual, the
/// norm is of h = x + residual, added exactly and rounded to x's type
/// through f32 (as torch's add rounds a 16-bit sum); `h` is that sum.
struct ForwardReference {
  std::vector<double> y, mean, rstd, xhat, h;
  /// [m]: the mean of |x| per row, the size of the terms the mean sums.
  std::vector<double> meanScale;
  /// [m, n]: (|x| + |mean|) rstd |w| + |b|: the size of what y is
  /// computed from (x - mean rounds at the size of x and of the mean).
  std::vector<double> yScale;
};
ForwardReference referenceForward(const KernelSpec &spec, const Problem &p);

/// Checks referenceGrad against central differences of referenceForward
/// (loss = sum(dy * y) + sum(dres * x)) on `p`; returns the largest
/// relative deviation over dx, dw and db.
double finiteDifferenceDeviation(const KernelSpec &spec, const Problem &p);

} // namespace norm_exec

#endif // NORM_TEST_EXECUTION_REFERENCE_H
