//===- HostKernel.cpp - plain f32 implementation of the test kernels ------===//
//
// Part of mlir-norm.
//
// What a correct promoted lowering computes, written as simply as possible:
// f32 arithmetic, sequential sums, one rounding at each store. It reads and
// writes the same buffers as the JIT kernels, so it exercises the whole
// harness (layouts, in-place dx, poisoning, comparison) without MLIR.
//
//===----------------------------------------------------------------------===//

#include "Kernel.h"
#include "Reference.h"

#include <cmath>

using namespace norm_exec;

namespace {

class HostKernel : public Kernel {
public:
  explicit HostKernel(const KernelSpec &spec) : spec(spec) {}

  void run(Bindings &buffers) override {
    if (spec.isGrad())
      runGrad(buffers);
    else
      runForward(buffers);
  }

private:
  /// The effective weight of column j as f32.
  float weight(Bindings &b, int64_t j) const {
    if (!spec.weight)
      return 1.0f;
    float w = static_cast<float>(bound(b, Operand::Weight)->get(0, j));
    return spec.zeroCentered ? w + 1.0f : w;
  }

  void runGrad(Bindings &b) {
    HostBuffer &x = *bound(b, Operand::X);
    HostBuffer &dy = *bound(b, Operand::Dy);
    HostBuffer &dx = *bound(b, Operand::Dx);
    int64_t m = x.rows(), n = x.cols();
    std::vector<float> xhat(n), g(n), dyRow(n), dw(n, 0.0f), db(n, 0.0f);
    for (int64_t i = 0; i < m; ++i) {
      float mean = spec.isLayerNorm()
                       ? static_cast<float>(bound(b, Operand::Mean)->get(0, i))
                       : 0.0f;
      float rstd = static_cast<float>(bound(b, Operand::Rstd)->get(0, i));
      float sumG = 0, sumGX = 0;
      for (int64_t j = 0; j < n; ++j) {
        dyRow[j] = static_cast<float>(dy.get(i, j));
        xhat[j] = (static_cast<float>(x.get(i, j)) - mean) * rstd;
        g[j] = dyRow[j] * weight(b, j);
        sumG += g[j];
        sumGX += g[j] * xhat[j];
        dw[j] += dyRow[j] * xhat[j];
        db[j] += dyRow[j];
      }
      float meanG = spec.isLayerNorm() ? sumG / n : 0.0f;
      float meanGX = sumGX / n;
      for (int64_t j = 0; j < n; ++j) {
        float d = rstd * (g[j] - meanG - xhat[j] * meanGX);
        if (spec.dresidual)
          d += static_cast<float>(bound(b, Operand::Dresidual)->get(i, j));
        dx.set(i, j, d);
      }
    }
    for (int64_t j = 0; j < n; ++j) {
      if (HostBuffer *out = bound(b, Operand::Dweight))
        out->set(0, j, dw[j]);
      if (HostBuffer *out = bound(b, Operand::Dbias))
        out->set(0, j, db[j]);
    }
  }

  void runForward(Bindings &b) {
    HostBuffer &x = *bound(b, Operand::X);
    HostBuffer *res = bound(b, Operand::Residual);
    HostBuffer *hOut = bound(b, Operand::HOut);
    int64_t m = x.rows(), n = x.cols();
    std::vector<float> row(n);
    for (int64_t i = 0; i < m; ++i) {
      float mean = 0;
      for (int64_t j = 0; j < n; ++j) {
        row[j] = static_cast<float>(x.get(i, j));
        if (res) { // h = x + residual in f32, stored; the norm reads it
          hOut->set(i, j, row[j] + static_cast<float>(res->get(i, j)));
          row[j] = static_cast<float>(hOut->get(i, j));
        }
        mean += row[j];
      }
      mean = spec.isLayerNorm() ? mean / n : 0.0f;
      float var = 0;
      for (int64_t j = 0; j < n; ++j)
        var += (row[j] - mean) * (row[j] - mean);
      float rstd = 1.0f / std::sqrt(var / n + kEps);
      if (HostBuffer *out = bound(b, Operand::MeanOut))
        out->set(0, i, mean);
      bound(b, Operand::RstdOut)->set(0, i, rstd);
      for (int64_t j = 0; j < n; ++j) {
        float h = (row[j] - mean) * rstd;
        float y = h * weight(b, j);
        if (HostBuffer *bias = bound(b, Operand::Bias))
          y += static_cast<float>(bias->get(0, j));
        bound(b, Operand::Y)->set(i, j, y);
        if (HostBuffer *out = bound(b, Operand::XhatOut))
          out->set(i, j, h);
      }
    }
  }

  KernelSpec spec;
};

} // namespace

std::unique_ptr<Kernel> norm_exec::makeHostKernel(const KernelSpec &spec) {
  return std::make_unique<HostKernel>(spec);
}
