//===- Compare.cpp - kernel outputs against float64 references ------------===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#include "Compare.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>

using namespace norm_exec;

double norm_exec::errorBound(DType t, double roundingSlack, double f32Bound) {
  if (t == DType::F32)
    return f32Bound;
  return roundingSlack * unitRoundoff(t);
}

double norm_exec::norm2(const std::vector<double> &v) {
  double s = 0;
  for (double e : v)
    s += e * e;
  return std::sqrt(s);
}

namespace {

/// One pass over an output: the squared error and the non-finite elements.
struct Scan {
  double squaredError = 0;
  int64_t nonFinite = 0, firstI = -1, firstJ = -1;
  bool firstIsPoison = false;

  Scan(const HostBuffer &out, const std::vector<double> &ref) {
    uint32_t poison = poisonBits(out.type());
    for (int64_t i = 0; i < out.rows(); ++i)
      for (int64_t j = 0; j < out.cols(); ++j) {
        uint32_t bits = out.getBits(i, j);
        double v = decode(out.type(), bits);
        if (std::isfinite(v)) {
          double d = v - ref[i * out.cols() + j];
          squaredError += d * d;
        } else if (nonFinite++ == 0) {
          firstI = i;
          firstJ = j;
          firstIsPoison = bits == poison;
        }
      }
  }

  std::string problem() const {
    if (!nonFinite)
      return "";
    std::string s;
    llvm::raw_string_ostream os(s);
    os << nonFinite << " non-finite, first at (" << firstI << ", " << firstJ
       << ")" << (firstIsPoison ? " still poisoned: not written" : "");
    return s;
  }
};

} // namespace

OutputCheck norm_exec::compareOutput(const char *name, const HostBuffer &out,
                                     const std::vector<double> &ref,
                                     double floor, double bound) {
  OutputCheck c;
  c.name = name;
  c.bound = bound;
  Scan scan(out, ref);
  c.problem = scan.problem();
  if (!c.problem.empty()) {
    c.error = INFINITY;
    return c;
  }
  if (std::optional<int64_t> e = out.brokenGuard()) {
    c.problem = "wrote outside its view (allocation element " +
                std::to_string(*e) + ")";
    c.error = INFINITY;
    return c;
  }
  double den = std::max(norm2(ref), floor);
  double diff = std::sqrt(scan.squaredError);
  c.error = den > 0 ? diff / den : diff;
  return c;
}
