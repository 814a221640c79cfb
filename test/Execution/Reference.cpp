//===- Reference.cpp - random problems and float64 references -------------===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#include "Reference.h"

#include <algorithm>
#include <cmath>
#include <random>

using namespace norm_exec;

namespace {

/// Row statistics of x in float64: mean (0 for RMSNorm) and rstd.
void rowStatistics(const KernelSpec &spec, const std::vector<double> &x,
                   int64_t m, int64_t n, std::vector<double> &mean,
                   std::vector<double> &rstd) {
  mean.assign(m, 0.0);
  rstd.assign(m, 0.0);
  for (int64_t i = 0; i < m; ++i) {
    const double *row = &x[i * n];
    double mu = 0;
    if (spec.isLayerNorm()) {
      for (int64_t j = 0; j < n; ++j)
        mu += row[j];
      mu /= n;
    }
    double var = 0;
    for (int64_t j = 0; j < n; ++j)
      var += (row[j] - mu) * (row[j] - mu);
    var /= n;
    mean[i] = mu;
    rstd[i] = 1.0 / std::sqrt(var + static_cast<double>(kEps));
  }
}

/// The weight the op multiplies by: w, w + 1 (zero-centred), or 1.
double effectiveWeight(const KernelSpec &spec, const Problem &p, int64_t j) {
  if (!spec.weight)
    return 1.0;
  return spec.zeroCentered ? p.w[j] + 1.0 : p.w[j];
}

} // namespace

Problem norm_exec::generateProblem(const KernelSpec &spec, int64_t m, int64_t n,
                                   uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  auto draw = [&](DType t, double scale, double shift) {
    return roundTo(t, normal(rng) * scale + shift);
  };

  Problem p;
  p.m = m;
  p.n = n;
  p.x.resize(m * n);
  for (int64_t i = 0; i < m; ++i) {
    double scale = std::exp2(uniform(rng)); // [0.5, 2]
    double offset = uniform(rng);           // [-1, 1]
    for (int64_t j = 0; j < n; ++j)
      p.x[i * n + j] = draw(spec.xType, scale, offset);
  }
  if (spec.isGrad()) {
    p.dy.resize(m * n);
    for (double &v : p.dy)
      v = draw(spec.xType, 1.0, 0.0);
    if (spec.dresidual) {
      p.dres.resize(m * n);
      for (double &v : p.dres)
        v = draw(spec.xType, 1.0, 0.0);
    }
  }
  if (!spec.isGrad() && spec.residual) {
    p.res.resize(m * n);
    for (double &v : p.res)
      v = draw(spec.xType, 1.0, 0.0);
  }
  if (spec.weight) {
    p.w.resize(n);
    for (double &v : p.w)
      v = draw(spec.paramType, 0.1, spec.zeroCentered ? 0.0 : 1.0);
  }
  if (!spec.isGrad() && spec.isLayerNorm() && spec.bias) {
    p.b.resize(n);
    for (double &v : p.b)
      v = draw(spec.paramType, 0.1, 0.0);
  }
  rowStatistics(spec, p.x, m, n, p.mean, p.rstd);
  for (double &v : p.mean)
    v = roundTo(DType::F32, v);
  for (double &v : p.rstd)
    v = roundTo(DType::F32, v);
  return p;
}

GradReference norm_exec::referenceGrad(const KernelSpec &spec,
                                       const Problem &p) {
  int64_t m = p.m, n = p.n;
  GradReference r;
  r.dx.resize(m * n);
  r.dxScale.resize(m * n);
  r.dw.assign(n, 0.0);
  r.db.assign(n, 0.0);
  r.dwAbsSum.assign(n, 0.0);
  r.dbAbsSum.assign(n, 0.0);
  std::vector<double> xhat(n), g(n);
  for (int64_t i = 0; i < m; ++i) {
    double sumG = 0, sumGX = 0;
    for (int64_t j = 0; j < n; ++j) {
      double dy = p.dy[i * n + j];
      xhat[j] = (p.x[i * n + j] - p.mean[i]) * p.rstd[i];
      g[j] = dy * effectiveWeight(spec, p, j);
      sumG += g[j];
      sumGX += g[j] * xhat[j];
      r.dw[j] += dy * xhat[j];
      r.db[j] += dy;
      r.dwAbsSum[j] += std::abs(dy * xhat[j]);
      r.dbAbsSum[j] += std::abs(dy);
    }
    double meanG = spec.isLayerNorm() ? sumG / n : 0.0;
    double meanGX = sumGX / n;
    for (int64_t j = 0; j < n; ++j) {
      double d = p.rstd[i] * (g[j] - meanG - xhat[j] * meanGX);
      if (spec.dresidual)
        d += p.dres[i * n + j];
      r.dx[i * n + j] = d;
      r.dxScale[i * n + j] = p.rstd[i] * std::abs(g[j]);
    }
  }
  return r;
}

ForwardReference norm_exec::referenceForward(const KernelSpec &spec,
                                             const Problem &p) {
  int64_t m = p.m, n = p.n;
  ForwardReference r;
  // The rows the norm reads: x, or h = x + residual as stored.
  const std::vector<double> *rows = &p.x;
  if (!p.res.empty()) {
    r.h.resize(m * n);
    for (int64_t e = 0; e < m * n; ++e)
      r.h[e] = roundTo(spec.xType, p.x[e] + p.res[e]);
    rows = &r.h;
  }
  rowStatistics(spec, *rows, m, n, r.mean, r.rstd);
  r.y.resize(m * n);
  r.xhat.resize(m * n);
  r.meanScale.assign(m, 0.0);
  r.yScale.resize(m * n);
  bool bias = spec.isLayerNorm() && spec.bias;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double x = (*rows)[i * n + j];
      double h = (x - r.mean[i]) * r.rstd[i];
      r.xhat[i * n + j] = h;
      double w = effectiveWeight(spec, p, j);
      r.y[i * n + j] = h * w + (bias ? p.b[j] : 0);
      r.yScale[i * n + j] =
          (std::abs(x) + std::abs(r.mean[i])) * r.rstd[i] * std::abs(w) +
          (bias ? std::abs(p.b[j]) : 0);
      r.meanScale[i] += std::abs(x) / n;
    }
  }
  return r;
}

namespace {

/// sum(dy * y(x, w)) + sum(dres * x): the loss whose gradient the backward
/// computes.
double loss(const KernelSpec &spec, const Problem &p) {
  KernelSpec fwd = spec;
  fwd.dir = Direction::Forward;
  fwd.bias = !p.b.empty();
  ForwardReference f = referenceForward(fwd, p);
  double l = 0;
  for (int64_t e = 0; e < p.m * p.n; ++e) {
    l += p.dy[e] * f.y[e];
    if (spec.dresidual)
      l += p.dres[e] * p.x[e];
  }
  return l;
}

double centralDifference(const KernelSpec &spec, Problem &p, double &v) {
  double h = 1e-6 * std::max(1.0, std::abs(v));
  double saved = v;
  v = saved + h;
  double up = loss(spec, p);
  v = saved - h;
  double down = loss(spec, p);
  v = saved;
  return (up - down) / (2 * h);
}

double relativeDeviation(const std::vector<double> &a,
                         const std::vector<double> &b) {
  double num = 0, den = 0;
  for (size_t k = 0; k < a.size(); ++k) {
    num += (a[k] - b[k]) * (a[k] - b[k]);
    den += b[k] * b[k];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

} // namespace

double norm_exec::finiteDifferenceDeviation(const KernelSpec &spec,
                                            const Problem &problem) {
  // The backward formula is the gradient for the exact statistics of x.
  Problem p = problem;
  rowStatistics(spec, p.x, p.m, p.n, p.mean, p.rstd);
  GradReference r = referenceGrad(spec, p);

  std::vector<double> dx(p.m * p.n), dw(p.n), db(p.n);
  for (int64_t e = 0; e < p.m * p.n; ++e)
    dx[e] = centralDifference(spec, p, p.x[e]);
  double worst = relativeDeviation(dx, r.dx);
  if (spec.weight) {
    for (int64_t j = 0; j < p.n; ++j)
      dw[j] = centralDifference(spec, p, p.w[j]);
    worst = std::max(worst, relativeDeviation(dw, r.dw));
  }
  if (spec.isLayerNorm()) {
    // dbias is the gradient for a bias added to y (zero here).
    p.b.assign(p.n, 0.0);
    for (int64_t j = 0; j < p.n; ++j)
      db[j] = centralDifference(spec, p, p.b[j]);
    worst = std::max(worst, relativeDeviation(db, r.db));
  }
  return worst;
}
