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

double norm_exec::errorBound(DType t) {
  if (t == DType::F32)
    return 1e-5;
  return 1.5 * unitRoundoff(t);
}

double norm_exec::norm2(const std::vector<double> &v) {
  double s = 0;
  for (double e : v)
    s += e * e;
  return std::sqrt(s);
}

namespace {

/// Describes the first non-finite element of `out`, and how many there are.
std::string nonFiniteProblem(const HostBuffer &out) {
  int64_t count = 0, firstI = -1, firstJ = -1;
  bool firstIsPoison = false;
  uint32_t poison = poisonBits(out.type());
  for (int64_t i = 0; i < out.rows(); ++i)
    for (int64_t j = 0; j < out.cols(); ++j) {
      uint32_t bits = out.getBits(i, j);
      if (std::isfinite(decode(out.type(), bits)))
        continue;
      if (count++ == 0) {
        firstI = i;
        firstJ = j;
        firstIsPoison = bits == poison;
      }
    }
  if (!count)
    return "";
  std::string s;
  llvm::raw_string_ostream os(s);
  os << count << " non-finite, first at (" << firstI << ", " << firstJ << ")"
     << (firstIsPoison ? " still poisoned: not written" : "");
  return s;
}

} // namespace

OutputCheck norm_exec::compareOutput(const char *name, const HostBuffer &out,
                                     const std::vector<double> &ref,
                                     double floor) {
  OutputCheck c;
  c.name = name;
  c.bound = errorBound(out.type());
  c.problem = nonFiniteProblem(out);
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
  double diff = 0;
  std::vector<double> got = out.values();
  for (size_t k = 0; k < got.size(); ++k)
    diff += (got[k] - ref[k]) * (got[k] - ref[k]);
  double den = std::max(norm2(ref), floor);
  c.error = den > 0 ? std::sqrt(diff) / den : std::sqrt(diff);
  return c;
}
