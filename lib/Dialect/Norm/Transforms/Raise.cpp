//===- Raise.cpp - decomposed LayerNorm / RMSNorm -> norm ops -------------===//
//
// Part of mlir-norm.
//
// norm-raise. A candidate is a linalg result: a [rows..., N] tensor (y or
// dx) or an [N] column sum (dweight). Its computation (RaiseEval.h) is cut
// at its leaves, or also at values the program computes before any of the
// computation's reductions (x, dy, a residual sum: cutCandidates); each
// assignment of the leaves to the operands of a norm op
// (x, weight, bias; dy, x or xhat, mean, rstd, weight, dresidual), with each
// float constant of the computation as eps, is a hypothesis. A hypothesis
// holds when the computation and the op's definition agree on random inputs
// in f64, on probes chosen so that what only looks similar differs: unit
// data, data whose variance is of the order of eps (where eps placement
// matters) and, for LayerNorm, data far from zero (where E[x^2] - E[x]^2
// cancels). Dtypes are checked on the IR afterwards; the op is built with
// the accumulation type of the computation's reductions.
//
//===----------------------------------------------------------------------===//

#include "norm/Dialect/Norm/IR/NormOps.h"
#include "norm/Dialect/Norm/Transforms/Passes.h"
#include "norm/Dialect/Norm/Transforms/RaiseEval.h"
#include "norm/Dialect/Norm/Transforms/Transforms.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

#include <array>
#include <cmath>
#include <functional>
#include <random>
#include <set>

namespace mlir::norm {
#define GEN_PASS_DEF_NORMRAISE
#include "norm/Dialect/Norm/Transforms/Passes.h.inc"
} // namespace mlir::norm

using namespace mlir;
using namespace mlir::norm;
using namespace mlir::norm::raise;

namespace {

//===----------------------------------------------------------------------===//
// Roles, geometry, probes
//===----------------------------------------------------------------------===//

/// The operands a leaf can be.
enum Role { X, Xhat, W, B, Dy, Mean, Rstd, Dres, NumRoles };

/// How a value is laid out against the rows: [rows..., N], [rows...] or
/// [rows..., 1], [N].
enum class Cls { Full, Row, Col };

/// The row geometry a candidate fixes: its [rows..., N] type, and the
/// concrete extents the probes use.
struct Geometry {
  SmallVector<int64_t> rows; // static type dims (dynamic allowed)
  int64_t n;
  SmallVector<int64_t> rowsC; // concrete
  int64_t nC;
  /// The rows are static and evaluated on fewer (rowsC).
  bool shrunk = false;
  int64_t m() const {
    int64_t p = 1;
    for (int64_t r : rowsC)
      p *= r;
    return p;
  }
};

bool compatible(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  if (a.size() != b.size())
    return false;
  for (auto [x, y] : llvm::zip(a, b))
    if (!ShapedType::isDynamic(x) && !ShapedType::isDynamic(y) && x != y)
      return false;
  return true;
}

bool hasClass(Value v, Cls c, const Geometry &g) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t || !isa<FloatType>(t.getElementType()))
    return false;
  ArrayRef<int64_t> s = t.getShape();
  SmallVector<int64_t> full(g.rows), rows1(g.rows);
  full.push_back(g.n);
  rows1.push_back(1);
  switch (c) {
  case Cls::Full:
    return compatible(s, full);
  case Cls::Row:
    return compatible(s, g.rows) || compatible(s, rows1);
  case Cls::Col:
    return compatible(s, {g.n});
  }
  return false;
}

Cls classOf(Role r) {
  switch (r) {
  case X:
  case Xhat:
  case Dy:
  case Dres:
    return Cls::Full;
  case Mean:
  case Rstd:
    return Cls::Row;
  case W:
  case B:
    return Cls::Col;
  default:
    return Cls::Full;
  }
}

/// One assignment of leaves to roles, and the op's attributes.
struct Hypothesis {
  bool layer = true;
  bool zeroCentered = false;
  /// Backward: the mean is the row mean of x, computed by the program
  /// (a joint graph recomputing it) rather than read.
  bool meanFromX = false;
  double eps = 0.0;
  std::array<Value, NumRoles> leaf{};
  Value get(Role r) const { return leaf[r]; }
};

/// Random inputs for the roles. `kind` 0: unit data; 1: x of variance of
/// the order of eps; 2: x far from zero.
struct Probe {
  std::array<std::vector<double>, NumRoles> data;
};

Probe makeProbe(const Geometry &g, int kind, double eps, unsigned seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  Probe p;
  int64_t mn = g.m() * g.nC;
  auto fill = [&](Role r, int64_t count, double scale, double offset) {
    p.data[r].resize(count);
    for (double &v : p.data[r])
      v = offset + scale * u(gen);
  };
  double xScale = kind == 1 ? std::sqrt(eps) * 1.7 : 1.7;
  double xOffset = kind == 2 ? 1.0e6 : (kind == 1 ? 0.0 : 0.3);
  fill(X, mn, xScale, xOffset);
  fill(Xhat, mn, 1.5, 0.1);
  fill(Dy, mn, 1.3, 0.2);
  fill(Dres, mn, 1.0, 0.0);
  fill(W, g.nC, 0.9, 0.4);
  fill(B, g.nC, 0.8, -0.3);
  fill(Mean, g.m(), 0.7, 0.1);
  fill(Rstd, g.m(), 0.6, 1.2); // positive
  return p;
}

/// Binds the hypothesis' leaves to the probe's data, shaped like each
/// leaf's type.
void bindLeaves(Evaluator &ev, const Hypothesis &h, const Probe &p,
                const Geometry &g) {
  for (unsigned r = 0; r < NumRoles; ++r) {
    Value v = h.leaf[r];
    if (!v)
      continue;
    Array a;
    a.data = p.data[r];
    auto t = cast<RankedTensorType>(v.getType());
    switch (classOf(Role(r))) {
    case Cls::Full:
      a.shape = g.rowsC;
      a.shape.push_back(g.nC);
      break;
    case Cls::Row:
      a.shape = g.rowsC;
      if (t.getRank() == static_cast<int64_t>(g.rows.size()) + 1)
        a.shape.push_back(1);
      break;
    case Cls::Col:
      a.shape = {g.nC};
      break;
    }
    ev.bind(v, std::move(a));
  }
}

//===----------------------------------------------------------------------===//
// The ops' definitions, in f64
//===----------------------------------------------------------------------===//

struct Expected {
  std::vector<double> y, mean, rstd;    // forward
  std::vector<double> dx, dw, db, xhat; // backward (xhat: the forward's too)
};

Expected reference(const Hypothesis &h, const Probe &p, const Geometry &g,
                   bool grad) {
  int64_t m = g.m(), n = g.nC;
  Expected e;
  auto weight = [&](int64_t j) {
    if (!h.get(W))
      return 1.0;
    double w = p.data[W][j];
    return h.zeroCentered ? w + 1.0 : w;
  };
  e.xhat.resize(m * n);
  if (!grad) {
    const std::vector<double> &x = p.data[X];
    e.y.resize(m * n);
    e.mean.resize(m);
    e.rstd.resize(m);
    for (int64_t i = 0; i < m; ++i) {
      const double *row = &x[i * n];
      double mean = 0.0, var = 0.0;
      if (h.layer) {
        for (int64_t j = 0; j < n; ++j)
          mean += row[j];
        mean /= n;
      }
      for (int64_t j = 0; j < n; ++j)
        var += (row[j] - mean) * (row[j] - mean);
      var /= n;
      double rstd = 1.0 / std::sqrt(var + h.eps);
      e.mean[i] = mean;
      e.rstd[i] = rstd;
      for (int64_t j = 0; j < n; ++j) {
        double xh = (row[j] - mean) * rstd;
        e.xhat[i * n + j] = xh;
        e.y[i * n + j] = xh * weight(j) + (h.get(B) ? p.data[B][j] : 0.0);
      }
    }
    return e;
  }
  const std::vector<double> &dy = p.data[Dy];
  e.dx.resize(m * n);
  e.dw.assign(n, 0.0);
  e.db.assign(n, 0.0);
  for (int64_t i = 0; i < m; ++i) {
    double rstd = p.data[Rstd][i];
    double mean = h.get(Mean) ? p.data[Mean][i] : 0.0;
    if (h.meanFromX) {
      for (int64_t j = 0; j < n; ++j)
        mean += p.data[X][i * n + j];
      mean /= n;
    }
    double sumG = 0.0, sumGX = 0.0;
    for (int64_t j = 0; j < n; ++j) {
      double xh = h.get(Xhat) ? p.data[Xhat][i * n + j]
                              : (p.data[X][i * n + j] - mean) * rstd;
      e.xhat[i * n + j] = xh;
      double gj = dy[i * n + j] * weight(j);
      sumG += gj;
      sumGX += gj * xh;
      e.dw[j] += dy[i * n + j] * xh;
      e.db[j] += dy[i * n + j];
    }
    double meanG = h.layer ? sumG / n : 0.0, meanGX = sumGX / n;
    for (int64_t j = 0; j < n; ++j) {
      double gj = dy[i * n + j] * weight(j);
      double d = rstd * (gj - meanG - e.xhat[i * n + j] * meanGX);
      if (h.get(Dres))
        d += p.data[Dres][i * n + j];
      e.dx[i * n + j] = d;
    }
  }
  return e;
}

bool close(const Array &got, const std::vector<double> &want) {
  if (static_cast<int64_t>(want.size()) != got.size())
    return false;
  double scale = 1.0, err = 0.0;
  for (double w : want)
    scale = std::max(scale, std::abs(w));
  for (auto [a, b] : llvm::zip(got.data, want)) {
    double d = std::abs(a - b);
    if (!(d == d)) // NaN: read an uninitialised init, or 0/0
      return false;
    err = std::max(err, d);
  }
  return err <= 1.0e-6 * scale;
}

//===----------------------------------------------------------------------===//
// Matching
//===----------------------------------------------------------------------===//

/// What a candidate computes.
enum class Target { Y, Dx, Dweight };

struct Match {
  Hypothesis h;
  Geometry g;
  Target target;
  Slice slice;
  /// Values of the program the op replaces, with what they are.
  SmallVector<std::pair<Value, Target>> outputs;
  Value dbias;
  SmallVector<std::pair<Value, Role>> stats; // forward: Mean / Rstd values
  Type acc;
};

/// Why the last candidate was not raised (for remarks).
struct Why {
  std::string text;
  LogicalResult fail(const Twine &t) {
    text = t.str();
    return failure();
  }
};

/// A candidate result: the one tensor result of a linalg op, or an [N]
/// reshape (torch keeps a column sum [1, N] and views it as [N]).
Value candidate(Operation *op) {
  if (auto lop = dyn_cast<linalg::LinalgOp>(op))
    return op->getNumResults() == 1 && lop.hasPureTensorSemantics()
               ? op->getResult(0)
               : Value();
  if (isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(op) &&
      cast<RankedTensorType>(op->getResult(0).getType()).getRank() == 1)
    return op->getResult(0);
  return Value();
}

/// Calls `fn` for every assignment of `leaves` to distinct roles among
/// `roles` (each leaf one role of its class) that gives every role of
/// `required` a leaf. Stops when `fn` returns true.
bool forEachAssignment(ArrayRef<Value> leaves, ArrayRef<Role> roles,
                       ArrayRef<Role> required, const Geometry &g,
                       function_ref<bool(std::array<Value, NumRoles> &)> fn) {
  std::array<Value, NumRoles> cur{};
  std::function<bool(unsigned)> rec = [&](unsigned i) -> bool {
    if (i == leaves.size()) {
      for (Role r : required)
        if (!cur[r])
          return false;
      return fn(cur);
    }
    for (Role r : roles) {
      if (cur[r] || !hasClass(leaves[i], classOf(r), g))
        continue;
      cur[r] = leaves[i];
      if (rec(i + 1))
        return true;
      cur[r] = Value();
    }
    return false;
  };
  return rec(0);
}

/// The geometry of a [rows..., N] type; the probes use 3 x 2 ... rows for
/// dynamic row dims and N = 6 for a dynamic N.
FailureOr<Geometry> geometryOf(RankedTensorType t, Why &why) {
  if (t.getRank() < 2)
    return why.fail("rank below 2");
  Geometry g;
  g.rows.assign(t.getShape().begin(), t.getShape().end() - 1);
  g.n = t.getShape().back();
  int64_t dynRow = 3;
  for (int64_t r : g.rows) {
    g.rowsC.push_back(ShapedType::isDynamic(r) ? dynRow : r);
    if (ShapedType::isDynamic(r))
      dynRow = 2;
  }
  g.nC = ShapedType::isDynamic(g.n) ? 6 : g.n;
  // Static rows: evaluated on 3 x 2 ... rows (rows are independent in the
  // definitions; the column sums sum whichever rows there are), unless a
  // [M] statistic could not be told from an [N] vector.
  bool allStatic = llvm::none_of(g.rows, ShapedType::isDynamic);
  bool ambiguous = g.rows.size() == 1 && g.rows[0] == g.n;
  if (allStatic && !ambiguous && g.m() > 3) {
    for (auto [i, r] : llvm::enumerate(g.rowsC))
      r = std::min<int64_t>(r, i == 0 ? 3 : 2);
    g.shrunk = true;
  }
  if (g.m() * g.nC > (int64_t(1) << 20))
    return why.fail("too large to check (more than 2^20 elements in "
                    "the rows evaluated)");
  return g;
}

/// An evaluator on the geometry's concrete rows.
Evaluator evaluatorFor(const Geometry &g) {
  Evaluator ev;
  if (g.shrunk)
    ev.shrinkRows(g.rows, g.rowsC);
  return ev;
}

/// Tests a hypothesis for `target` on every probe.
bool holds(const Hypothesis &h, Value root, Target target, const Geometry &g) {
  SmallVector<int> kinds = {0};
  if (target == Target::Y) {
    kinds.push_back(1);
    if (h.layer)
      kinds.push_back(2);
  } else {
    kinds.push_back(0);
  }
  for (auto [i, kind] : llvm::enumerate(kinds)) {
    Probe p = makeProbe(g, kind, h.eps, 7 + 13 * i);
    Evaluator ev = evaluatorFor(g);
    bindLeaves(ev, h, p, g);
    FailureOr<const Array *> got = ev.eval(root);
    if (failed(got))
      return false;
    Expected e = reference(h, p, g, target != Target::Y);
    const std::vector<double> &want =
        target == Target::Y ? e.y : (target == Target::Dx ? e.dx : e.dw);
    if (!close(**got, want))
      return false;
  }
  return true;
}

bool isStorageFloat(Type t) {
  return isa<Float32Type, Float16Type, BFloat16Type>(t);
}

Type elementType(Value v) { return getElementTypeOrSelf(v.getType()); }

/// The accumulation type of the reductions, or failure for mixed 16-bit
/// types or a non-float reduction.
FailureOr<Type> accumulationOf(ArrayRef<Type> types, Why &why) {
  Type acc;
  for (Type t : types) {
    auto f = dyn_cast<FloatType>(t);
    if (!f)
      return why.fail("a reduction is not over floats");
    if (!acc || f.getWidth() < cast<FloatType>(acc).getWidth())
      acc = f;
    else if (f.getWidth() == cast<FloatType>(acc).getWidth() && f != acc)
      return why.fail("reductions accumulate in two 16-bit types");
  }
  if (!acc)
    return why.fail("no reduction");
  return acc;
}

/// The values a match may cut the computation at, besides its leaves:
/// [rows..., N] values that feed one of the slice's reductions (x, dy, a
/// residual sum, and what they are computed from, up to earlier norms) or
/// that an op after a reduction reads (a residual gradient added to dx);
/// nearest the root first.
SmallVector<Value> cutCandidates(const Slice &slice, const Geometry &g) {
  auto isReduction = [](Operation *op) {
    auto lop = dyn_cast<linalg::LinalgOp>(op);
    return lop && lop.getNumReductionLoops() > 0;
  };
  DenseSet<Operation *> feeds;
  for (Operation *op : llvm::reverse(slice.ops)) {
    if (!isReduction(op) && !feeds.contains(op))
      continue;
    for (Value v : op->getOperands())
      if (Operation *d = v.getDefiningOp(); d && slice.ops.contains(d))
        feeds.insert(d);
  }
  DenseSet<Operation *> afterReduction;
  for (Operation *op : slice.ops) {
    bool dep = isReduction(op);
    for (Value v : op->getOperands())
      if (Operation *d = v.getDefiningOp(); d && afterReduction.contains(d))
        dep = true;
    if (dep)
      afterReduction.insert(op);
  }
  SetVector<Value> out;
  for (Operation *op : llvm::reverse(slice.ops)) {
    if (feeds.contains(op))
      for (Value r : op->getResults())
        if (hasClass(r, Cls::Full, g))
          out.insert(r);
    if (afterReduction.contains(op))
      for (Value v : op->getOperands())
        if (Operation *d = v.getDefiningOp(); d && slice.ops.contains(d) &&
                                              !afterReduction.contains(d) &&
                                              hasClass(v, Cls::Full, g))
          out.insert(v);
  }
  return out.takeVector();
}

/// Whether no leaf of `s` is computed from one of its ops: a raised op
/// reading such a value would leave what it replaces computed anyway (a
/// dresidual that is dx's own image through a matmul).
bool leavesIndependent(const Slice &s) {
  SmallVector<Operation *> work;
  DenseSet<Operation *> seen;
  for (Value l : s.leaves)
    if (Operation *d = l.getDefiningOp())
      work.push_back(d);
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    if (!seen.insert(op).second || seen.size() > 2048)
      continue;
    // Shared sources (a tensor.empty or a zero fill many ops take as their
    // init) carry no data.
    if (isa<tensor::EmptyOp, arith::ConstantOp, linalg::FillOp>(op))
      continue;
    if (s.ops.contains(op))
      return false;
    auto lop = dyn_cast<linalg::LinalgOp>(op);
    for (OpOperand &operand : op->getOpOperands()) {
      if (lop && lop.isDpsInit(&operand) &&
          !lop.payloadUsesValueFromOperand(&operand))
        continue;
      if (Operation *d = operand.get().getDefiningOp();
          d && d->getBlock() == op->getBlock())
        work.push_back(d);
    }
  }
  return true;
}

unsigned countFull(const Slice &s, const Geometry &g) {
  return llvm::count_if(s.leaves,
                        [&](Value l) { return hasClass(l, Cls::Full, g); });
}

/// Forward on one cut of the computation: y = LayerNorm / RMSNorm of its
/// leaves.
FailureOr<Match> matchForwardSlice(Value root, Slice slice, const Geometry &g,
                                   Why &why) {
  SmallVector<Value> leaves(slice.leaves.begin(), slice.leaves.end());
  if (leaves.size() > 3 || countFull(slice, g) != 1)
    return why.fail("reads more than x, weight and bias");
  SmallVector<double> epsCandidates;
  for (double c : sliceConstants(slice))
    if (c > 0.0 && c < 1.0)
      epsCandidates.push_back(c);
  if (epsCandidates.empty())
    return why.fail("no constant eps in (0, 1)");

  Match match;
  match.g = g;
  match.target = Target::Y;
  bool found = false;
  for (bool layer : {true, false}) {
    SmallVector<Role> roles = {X, W};
    if (layer)
      roles.push_back(B);
    auto test = [&](std::array<Value, NumRoles> &a) {
      Hypothesis h;
      h.layer = layer;
      h.leaf = a;
      for (bool zc : {false, true}) {
        if (zc && !a[W])
          continue;
        h.zeroCentered = zc;
        for (double eps : epsCandidates) {
          h.eps = eps;
          if (holds(h, root, Target::Y, g)) {
            match.h = h;
            return true;
          }
        }
      }
      return false;
    };
    found = forEachAssignment(leaves, roles, {X}, g, test);
    if (found)
      break;
  }
  if (!found)
    return why.fail("computes neither LayerNorm nor RMSNorm of its inputs "
                    "(eps placement, reduced dim, mean extent or a term "
                    "differs)");
  match.slice = std::move(slice);
  match.outputs.push_back({root, Target::Y});

  // The statistics the program also computes: Row-shaped results of the
  // computation that are the mean or rstd of x.
  Probe p = makeProbe(g, 0, match.h.eps, 7);
  Evaluator ev = evaluatorFor(g);
  bindLeaves(ev, match.h, p, g);
  Expected e = reference(match.h, p, g, /*grad=*/false);
  for (Operation *op : match.slice.ops) {
    for (Value r : op->getResults()) {
      if (r == root || !hasClass(r, Cls::Row, g))
        continue;
      FailureOr<const Array *> got = ev.eval(r);
      if (failed(got))
        continue;
      if (close(**got, e.rstd))
        match.stats.push_back({r, Rstd});
      else if (match.h.layer && close(**got, e.mean))
        match.stats.push_back({r, Mean});
    }
  }
  return match;
}

LogicalResult checkTypes(Match &match, const RaiseOptions &options, Why &why);

/// Forward: y = LayerNorm / RMSNorm of one value, read as it is (a leaf of
/// the computation) or cut where the program computes it; the match whose
/// dtypes the op can give.
FailureOr<Match> matchForward(Value root, Why &why,
                              const RaiseOptions &options = {}) {
  auto t = dyn_cast<RankedTensorType>(root.getType());
  if (!t || !isa<FloatType>(t.getElementType()))
    return why.fail("not a float tensor");
  FailureOr<Geometry> g = geometryOf(t, why);
  if (failed(g))
    return failure();
  FailureOr<Slice> slice = collectSlice(root);
  if (failed(slice))
    return why.fail("computation too large");
  if (slice->reductionTypes.empty())
    return why.fail("no reduction");
  SmallVector<Value> cuts = cutCandidates(*slice, *g);
  if (cuts.size() > 48)
    cuts.resize(48);
  // Of the cuts that match, the one that takes the most of the program
  // (x where the program has it, not a part of it).
  Why first;
  FailureOr<Match> best = failure();
  for (int64_t i = -1; i < static_cast<int64_t>(cuts.size()); ++i) {
    FailureOr<Slice> s = i < 0 ? slice : collectSlice(root, {cuts[i]});
    if (failed(s) || (i >= 0 && countFull(*s, *g) != 1) ||
        (succeeded(best) && s->ops.size() <= best->slice.ops.size()) ||
        !leavesIndependent(*s))
      continue;
    Why w;
    FailureOr<Match> m = matchForwardSlice(root, std::move(*s), *g, w);
    if (succeeded(m) && succeeded(checkTypes(*m, options, w))) {
      best = std::move(m);
      continue;
    }
    if (first.text.empty() || succeeded(m))
      first = w;
  }
  if (failed(best))
    why = first;
  return best;
}

/// Backward on one cut of the computation: dx (Full root) or dweight (Col
/// root) of its leaves.
FailureOr<Match> matchGradSlice(Value root, Slice slice, Target target,
                                const Geometry &g, Why &why) {
  SmallVector<Value> leaves(slice.leaves.begin(), slice.leaves.end());
  if (leaves.size() > 6)
    return why.fail("too many inputs for a norm backward");
  unsigned full = countFull(slice, g);
  if (full < 2 || full > 3)
    return why.fail("reads other than dy, x (or xhat) and dresidual");

  Match match;
  match.g = g;
  match.target = target;
  bool found = false;
  for (bool layer : {true, false}) {
    // x and its mean, a stored xhat, or x with the mean recomputed.
    for (int form : {0, 1, 2}) {
      bool xhatForm = form == 1, meanFromX = form == 2;
      if (meanFromX && !layer)
        continue;
      SmallVector<Role> roles = {Dy, xhatForm ? Xhat : X, Rstd};
      SmallVector<Role> required = roles;
      if (layer && form == 0) {
        roles.push_back(Mean);
        required.push_back(Mean);
      }
      if (target == Target::Dx)
        roles.append({W, Dres});
      auto test = [&](std::array<Value, NumRoles> &a) {
        Hypothesis h;
        h.layer = layer;
        h.meanFromX = meanFromX;
        h.leaf = a;
        for (bool zc : {false, true}) {
          if (zc && !a[W])
            continue;
          h.zeroCentered = zc;
          if (holds(h, root, target, g)) {
            match.h = h;
            return true;
          }
        }
        return false;
      };
      found = forEachAssignment(leaves, roles, required, g, test);
      if (found)
        break;
    }
    if (found)
      break;
  }
  if (!found)
    return why.fail("computes no LayerNorm / RMSNorm backward output of its "
                    "inputs (a term, the reduced dim or an operand differs)");
  match.slice = std::move(slice);
  match.outputs.push_back({root, target});
  return match;
}

/// Backward: dx (Full root) or dweight (Col root) of values read as they
/// are (leaves) or cut where the program computes them (up to three cuts:
/// dy, x, dresidual).
FailureOr<Match> matchGrad(Value root, Why &why) {
  auto t = dyn_cast<RankedTensorType>(root.getType());
  if (!t || !isa<FloatType>(t.getElementType()))
    return why.fail("not a float tensor");
  FailureOr<Slice> slice = collectSlice(root);
  if (failed(slice))
    return why.fail("computation too large");
  if (slice->reductionTypes.empty())
    return why.fail("no reduction");
  Target target = t.getRank() == 1 ? Target::Dweight : Target::Dx;
  // The geometry: of the root (dx), or of the column sum's input (dweight).
  RankedTensorType fullType = t;
  if (target == Target::Dweight) {
    fullType = nullptr;
    for (Operation *op : slice->ops)
      for (Value v : op->getOperands())
        if (auto lt = dyn_cast<RankedTensorType>(v.getType());
            lt && lt.getRank() >= 2 && isa<FloatType>(lt.getElementType()) &&
            lt.getShape().back() != 1 &&
            compatible({lt.getShape().back()}, {t.getShape()[0]}))
          fullType = lt;
    if (!fullType)
      return why.fail("no [rows, N] input");
  }
  FailureOr<Geometry> g = geometryOf(fullType, why);
  if (failed(g))
    return failure();
  FailureOr<Match> best = failure();
  if (leavesIndependent(*slice))
    best = matchGradSlice(root, *slice, target, *g, why);
  if (succeeded(best))
    return best;
  // Cut sets of one to three values, nearest the reductions first.
  SmallVector<Value> cuts = cutCandidates(*slice, *g);
  if (cuts.size() > 12)
    cuts.resize(12);
  std::set<std::vector<void *>> tried;
  for (unsigned size = 1; size <= 3; ++size) {
    SmallVector<unsigned> idx(size);
    std::function<FailureOr<Match>(unsigned, unsigned)> rec =
        [&](unsigned k, unsigned from) -> FailureOr<Match> {
      if (k == size) {
        SmallVector<Value> cut;
        for (unsigned i : idx)
          cut.push_back(cuts[i]);
        FailureOr<Slice> s = collectSlice(root, cut);
        if (failed(s))
          return failure();
        unsigned full = countFull(*s, *g);
        if (full < 2 || full > 3)
          return failure();
        std::vector<void *> key;
        for (Value l : s->leaves)
          key.push_back(l.getAsOpaquePointer());
        llvm::sort(key);
        if (!tried.insert(key).second)
          return failure();
        if ((succeeded(best) && s->ops.size() <= best->slice.ops.size()) ||
            !leavesIndependent(*s))
          return failure();
        Why w;
        FailureOr<Match> m = matchGradSlice(root, std::move(*s), target, *g, w);
        if (succeeded(m))
          best = std::move(m);
        return failure();
      }
      for (unsigned i = from; i < cuts.size(); ++i) {
        idx[k] = i;
        (void)rec(k + 1, i + 1);
      }
      return failure();
    };
    // Of the cut sets that match, the one that takes the most of the
    // program (dy and the weight, not g = dy * w).
    (void)rec(0, 0);
  }
  if (failed(best))
    return why.fail("computes no LayerNorm / RMSNorm backward output of its "
                    "inputs (a term, the reduced dim or an operand differs)");
  return best;
}

/// Backward: the other outputs of the same op in the block (dx, dweight,
/// dbias under the same leaves).
void findGradSiblings(Match &match, Value root) {
  Block *block = root.getParentBlock();
  Probe p = makeProbe(match.g, 0, 0.0, 7);
  Evaluator ev = evaluatorFor(match.g);
  bindLeaves(ev, match.h, p, match.g);
  Expected e = reference(match.h, p, match.g, /*grad=*/true);
  bool haveDx = match.target == Target::Dx;
  bool haveDw = match.target == Target::Dweight;
  DenseSet<Value> bound;
  for (Value l : match.h.leaf)
    if (l)
      bound.insert(l);
  for (Operation &op : *block) {
    Value r = candidate(&op);
    if (!r || r == root || !isExpressionOp(&op))
      continue;
    auto t = cast<RankedTensorType>(r.getType());
    bool col = t.getRank() == 1;
    if (col ? (haveDw && !match.h.layer) : haveDx)
      continue;
    if (!hasClass(r, col ? Cls::Col : Cls::Full, match.g))
      continue;
    SmallVector<Value> cut(bound.begin(), bound.end());
    FailureOr<Slice> s = collectSlice(r, cut);
    if (failed(s) || s->reductionTypes.empty() ||
        !llvm::all_of(s->leaves, [&](Value l) { return bound.contains(l); }))
      continue;
    FailureOr<const Array *> got = ev.eval(r);
    if (failed(got))
      continue;
    if (!col && close(**got, e.dx)) {
      // The root found a hypothesis without the weight (a dweight root):
      // dx needs the one it reads, found by its own match.
      haveDx = true;
      match.outputs.push_back({r, Target::Dx});
    } else if (col && !haveDw && close(**got, e.dw)) {
      haveDw = true;
      match.outputs.push_back({r, Target::Dweight});
    } else if (col && match.h.layer && !match.dbias && close(**got, e.db)) {
      match.dbias = r;
    }
    llvm::append_range(match.slice.reductionTypes, s->reductionTypes);
    match.slice.ops.insert(s->ops.begin(), s->ops.end());
  }
}

/// Backward, from a dweight match: a dx in the block with the same dy, x
/// or xhat, mean and rstd (its own match, which knows the weight).
FailureOr<Match> findDxFor(const Match &dw, Value root) {
  const Hypothesis &h = dw.h;
  for (Operation &op : *root.getParentBlock()) {
    if (!candidate(&op) || !hasClass(op.getResult(0), Cls::Full, dw.g))
      continue;
    Why why;
    FailureOr<Match> m = matchGrad(op.getResult(0), why);
    if (failed(m) || m->target != Target::Dx)
      continue;
    // dweight = sum(dy * xhat) is symmetric in dy and x for RMSNorm: the
    // dweight match may have them the other way round.
    auto same = [&](Role r) { return m->h.get(r) == h.get(r); };
    bool swapped = m->h.get(Dy) == h.get(X) && m->h.get(X) == h.get(Dy);
    if ((swapped || (same(Dy) && same(X))) && same(Xhat) && same(Mean) &&
        same(Rstd) && m->h.layer == h.layer && !m->h.meanFromX)
      return m;
  }
  return failure();
}

//===----------------------------------------------------------------------===//
// Rewriting
//===----------------------------------------------------------------------===//

/// Right after the last op of `block` that defines one of `values` (block
/// start if none).
void setInsertionAfterDefs(OpBuilder &b, Block *block, ArrayRef<Value> values) {
  Operation *last = nullptr;
  for (Value v : values) {
    Operation *d = v ? v.getDefiningOp() : nullptr;
    if (!d)
      continue;
    Operation *inBlock = block->findAncestorOpInBlock(*d);
    if (!inBlock)
      continue;
    if (!last || last->isBeforeInBlock(inBlock))
      last = inBlock;
  }
  if (last)
    b.setInsertionPointAfter(last);
  else
    b.setInsertionPointToStart(block);
}

/// `v` with every element cast to `elt` (linalg.map), or `v` itself.
Value castElements(OpBuilder &b, Location loc, Value v, Type elt) {
  auto t = cast<RankedTensorType>(v.getType());
  if (t.getElementType() == elt)
    return v;
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, v);
  Value init = tensor::EmptyOp::create(b, loc, sizes, elt);
  bool widen = cast<FloatType>(elt).getWidth() >
               cast<FloatType>(t.getElementType()).getWidth();
  auto map = linalg::MapOp::create(
      b, loc, ValueRange{v}, init,
      [&](OpBuilder &nb, Location l, ValueRange args) {
        Value c = widen ? Value(arith::ExtFOp::create(nb, l, elt, args[0]))
                        : Value(arith::TruncFOp::create(nb, l, elt, args[0]));
        linalg::YieldOp::create(nb, l, c);
      });
  return map->getResult(0);
}

/// A row statistic (f32, [rows...]) in the type `want` ([rows...] or
/// [rows..., 1], any float), and back.
Value statTo(OpBuilder &b, Location loc, Value stat, RankedTensorType want) {
  auto t = cast<RankedTensorType>(stat.getType());
  if (want.getRank() == t.getRank() + 1) {
    SmallVector<ReassociationIndices> groups;
    for (int64_t i = 0; i + 1 < t.getRank(); ++i)
      groups.push_back({i});
    groups.push_back({t.getRank() - 1, t.getRank()});
    auto type = RankedTensorType::get(want.getShape(), t.getElementType());
    stat = tensor::ExpandShapeOp::create(b, loc, type, stat, groups);
  }
  return castElements(b, loc, stat, want.getElementType());
}

Value statFrom(OpBuilder &b, Location loc, Value leaf, const Geometry &g) {
  auto t = cast<RankedTensorType>(leaf.getType());
  if (t.getRank() == static_cast<int64_t>(g.rows.size()) + 1) {
    SmallVector<ReassociationIndices> groups;
    for (int64_t i = 0; i + 2 < t.getRank(); ++i)
      groups.push_back({i});
    groups.push_back({t.getRank() - 2, t.getRank() - 1});
    leaf = tensor::CollapseShapeOp::create(b, loc, leaf, groups);
  }
  return castElements(b, loc, leaf, b.getF32Type());
}

/// Common dtype rules; sets match.acc.
LogicalResult checkTypes(Match &match, const RaiseOptions &options, Why &why) {
  const Hypothesis &h = match.h;
  Value in = h.get(X) ? h.get(X) : h.get(Xhat);
  Type xElt = elementType(in);
  if (!isStorageFloat(xElt))
    return why.fail("x is not f32, f16 or bf16");
  for (Role r : {Dy, Dres})
    if (h.get(r) && elementType(h.get(r)) != xElt)
      return why.fail("dy or dresidual has another element type than x");
  for (Role r : {W, B})
    if (h.get(r) && !isStorageFloat(elementType(h.get(r))))
      return why.fail("weight or bias is not f32, f16 or bf16");
  for (Role r : {Mean, Rstd})
    if (h.get(r) && !isStorageFloat(elementType(h.get(r))))
      return why.fail("mean or rstd is not f32, f16 or bf16");
  for (auto [v, target] : match.outputs) {
    Type t = elementType(v);
    if (target != Target::Dweight && t != xElt)
      return why.fail("the result has another element type than x");
    if (target == Target::Dweight && h.get(W) && t != elementType(h.get(W)))
      return why.fail("dweight has another element type than the weight");
    if (target == Target::Dweight && !isStorageFloat(t))
      return why.fail("dweight is not f32, f16 or bf16");
  }
  if (match.dbias && !isStorageFloat(elementType(match.dbias)))
    match.dbias = Value();
  FailureOr<Type> acc = accumulationOf(match.slice.reductionTypes, why);
  if (failed(acc))
    return failure();
  match.acc =
      options.f32Accumulation ? Float32Type::get(in.getContext()) : *acc;
  return success();
}

TypeAttr accAttr(const Match &match) {
  return match.acc.isF32() ? TypeAttr() : TypeAttr::get(match.acc);
}

void rewriteForward(Match &match, RewriterBase &rewriter) {
  const Hypothesis &h = match.h;
  Value root = match.outputs.front().first;
  Location loc = root.getLoc();
  setInsertionAfterDefs(rewriter, root.getParentBlock(),
                        {h.get(X), h.get(W), h.get(B)});
  auto xType = cast<RankedTensorType>(h.get(X).getType());
  auto statType = RankedTensorType::get(match.g.rows, rewriter.getF32Type());
  UnitAttr zc = h.zeroCentered ? rewriter.getUnitAttr() : UnitAttr();
  FloatAttr eps = rewriter.getF32FloatAttr(static_cast<float>(h.eps));
  Value y, mean, rstd;
  if (h.layer) {
    auto op = LayerNormOp::create(
        rewriter, loc, xType, statType, statType, Type(), h.get(X), h.get(W),
        h.get(B), Value(), Value(), Value(), Value(), eps, zc, accAttr(match));
    y = op.getY(), mean = op.getMean(), rstd = op.getRstd();
  } else {
    auto op = RMSNormOp::create(rewriter, loc, xType, statType, Type(),
                                h.get(X), h.get(W), Value(), Value(), Value(),
                                eps, zc, accAttr(match));
    y = op.getY(), rstd = op.getRstd();
  }
  Value yOut = y;
  if (y.getType() != root.getType())
    yOut = tensor::CastOp::create(rewriter, loc, root.getType(), y);
  for (auto [v, role] : match.stats) {
    // Read only inside the computation, which goes away.
    if (llvm::all_of(v.getUsers(),
                     [&](Operation *u) { return match.slice.ops.contains(u); }))
      continue;
    Value s = statTo(rewriter, loc, role == Mean ? mean : rstd,
                     cast<RankedTensorType>(v.getType()));
    if (s.getType() != v.getType())
      s = tensor::CastOp::create(rewriter, loc, v.getType(), s);
    rewriter.replaceAllUsesWith(v, s);
  }
  rewriter.replaceAllUsesWith(root, yOut);
}

void rewriteGrad(Match &match, RewriterBase &rewriter) {
  const Hypothesis &h = match.h;
  Value root = match.outputs.front().first;
  Location loc = root.getLoc();
  Value dx, dw;
  for (auto [v, target] : match.outputs)
    (target == Target::Dx ? dx : dw) = v;
  SmallVector<Value> leaves(h.leaf.begin(), h.leaf.end());
  // A recomputed mean: the mean of a forward op of the same x (raised
  // before), else of a forward op made for it.
  Value xMean;
  if (h.meanFromX) {
    for (Operation &op : *root.getParentBlock())
      if (auto fwd = dyn_cast<LayerNormOp>(op);
          fwd && fwd.getX() == h.get(X) && fwd.getMean())
        xMean = fwd.getMean();
    if (xMean)
      leaves.push_back(xMean);
  }
  setInsertionAfterDefs(rewriter, root.getParentBlock(), leaves);
  if (h.meanFromX && !xMean) {
    auto t = cast<RankedTensorType>(h.get(X).getType());
    auto statType = RankedTensorType::get(match.g.rows, rewriter.getF32Type());
    xMean = LayerNormOp::create(rewriter, loc, t, statType, statType, Type(),
                                h.get(X), Value(), Value(), Value(), Value(),
                                Value(), Value(), FloatAttr(), UnitAttr(),
                                accAttr(match))
                .getMean();
  }

  Value in = h.get(X) ? h.get(X) : h.get(Xhat);
  auto xType = cast<RankedTensorType>(in.getType());
  Value weight = h.get(W);
  if (!weight && dw) {
    // dweight without a weight in the program: the op needs one to type
    // dweight; ones leave dx as the program's.
    auto wType = RankedTensorType::get({match.g.n}, elementType(dw));
    Value one = arith::ConstantOp::create(
        rewriter, loc, rewriter.getFloatAttr(wType.getElementType(), 1.0));
    SmallVector<OpFoldResult> sizes = {
        tensor::getMixedSize(rewriter, loc, in, xType.getRank() - 1)};
    Value empty =
        tensor::EmptyOp::create(rewriter, loc, sizes, wType.getElementType());
    weight = linalg::FillOp::create(rewriter, loc, one, empty).getResult(0);
    if (weight.getType() != wType)
      weight = tensor::CastOp::create(rewriter, loc, wType, weight);
  }
  Value rstd = statFrom(rewriter, loc, h.get(Rstd), match.g);
  Value mean =
      h.get(Mean) ? statFrom(rewriter, loc, h.get(Mean), match.g) : xMean;
  Type dwType =
      dw ? RankedTensorType::get({match.g.n}, elementType(weight)) : Type();
  Type dbType = match.dbias ? match.dbias.getType() : Type();
  if (dbType)
    dbType = RankedTensorType::get({match.g.n}, elementType(match.dbias));
  UnitAttr zc = h.zeroCentered ? rewriter.getUnitAttr() : UnitAttr();
  Value rdx, rdw, rdb;
  if (h.layer) {
    auto op = LayerNormGradOp::create(
        rewriter, loc, xType, dwType, dbType, h.get(Dy), h.get(X), h.get(Xhat),
        mean, rstd, weight, h.get(Dres), Value(), Value(), Value(),
        ReductionStrategyAttr(), IntegerAttr(), zc, accAttr(match));
    rdx = op.getDx(), rdw = op.getDweight(), rdb = op.getDbias();
  } else {
    auto op = RMSNormGradOp::create(
        rewriter, loc, xType, dwType, h.get(Dy), h.get(X), h.get(Xhat), rstd,
        weight, h.get(Dres), Value(), Value(), ReductionStrategyAttr(),
        IntegerAttr(), zc, accAttr(match));
    rdx = op.getDx(), rdw = op.getDweight();
  }
  auto replace = [&](Value old, Value now) {
    if (!old)
      return;
    if (now.getType() != old.getType())
      now = tensor::CastOp::create(rewriter, loc, old.getType(), now);
    rewriter.replaceAllUsesWith(old, now);
  };
  replace(dx, rdx);
  replace(dw, rdw);
  replace(match.dbias, rdb);
}

/// Erases the ops of a matched computation that nothing uses any more.
void eraseDead(const Slice &slice, RewriterBase &rewriter) {
  SmallVector<Operation *> left(slice.ops.begin(), slice.ops.end());
  for (bool erased = true; erased;) {
    erased = false;
    for (Operation *&op : left) {
      if (op && op->use_empty() && isPure(op)) {
        rewriter.eraseOp(op);
        op = nullptr;
        erased = true;
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// Patterns
//===----------------------------------------------------------------------===//

/// Whether a user of `v` is itself a candidate that `matches`: the larger
/// expression is raised instead.
bool userMatches(Value v, function_ref<bool(Value)> matches) {
  for (Operation *user : v.getUsers()) {
    auto lop = dyn_cast<linalg::LinalgOp>(user);
    if (!lop || lop->getNumResults() != 1 ||
        cast<ShapedType>(lop->getResult(0).getType()).getShape() !=
            cast<ShapedType>(v.getType()).getShape())
      continue;
    if (matches(lop->getResult(0)))
      return true;
  }
  return false;
}

/// Whether `v` ends an expression (a remark is worth giving there).
bool endsExpression(Value v) {
  return llvm::any_of(v.getUsers(),
                      [](Operation *u) { return !isExpressionOp(u); });
}

/// Raises the forward whose y `op` computes, if it is one.
LogicalResult raiseForwardAt(Operation *op, RewriterBase &rewriter,
                             const RaiseOptions &options, Why &why) {
  Value root = candidate(op);
  if (!root || cast<ShapedType>(root.getType()).getRank() < 2)
    return why.fail("not a [rows, N] result");
  FailureOr<Match> match = matchForward(root, why, options);
  if (failed(match))
    return failure();
  if (userMatches(root, [](Value v) {
        Why w;
        return succeeded(matchForward(v, w));
      }))
    return why.fail("a user is a larger match");
  rewriteForward(*match, rewriter);
  eraseDead(match->slice, rewriter);
  return success();
}

/// Raises the backward whose dx or dweight `op` computes (with the other
/// outputs of the same inputs), if it is one.
LogicalResult raiseGradAt(Operation *op, RewriterBase &rewriter,
                          const RaiseOptions &options, Why &why) {
  Value root = candidate(op);
  if (!root)
    return why.fail("not a single tensor result");
  FailureOr<Match> match = matchGrad(root, why);
  if (succeeded(match) && match->target == Target::Dweight) {
    // A dx of the same inputs carries the weight: it is the root then.
    if (FailureOr<Match> dx = findDxFor(*match, root); succeeded(dx)) {
      root = dx->outputs.front().first;
      match = std::move(dx);
    }
  }
  if (succeeded(match)) {
    findGradSiblings(*match, root);
    if (failed(checkTypes(*match, options, why)))
      match = failure();
  }
  if (failed(match))
    return failure();
  if (match->target == Target::Dx && userMatches(root, [](Value v) {
        Why w;
        return succeeded(matchGrad(v, w));
      }))
    return why.fail("a user is a larger match");
  rewriteGrad(*match, rewriter);
  eraseDead(match->slice, rewriter);
  return success();
}

struct RaiseForward : public RewritePattern {
  RaiseForward(MLIRContext *ctx, RaiseOptions options)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx),
        options(options) {}

  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    Why why;
    if (failed(raiseForwardAt(op, rewriter, options, why)))
      return rewriter.notifyMatchFailure(op, why.text);
    return success();
  }

  RaiseOptions options;
};

struct RaiseGrad : public RewritePattern {
  RaiseGrad(MLIRContext *ctx, RaiseOptions options)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx),
        options(options) {}

  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    Why why;
    if (failed(raiseGradAt(op, rewriter, options, why)))
      return rewriter.notifyMatchFailure(op, why.text);
    return success();
  }

  RaiseOptions options;
};

/// Records the ops a rewriter erases.
struct ErasedOps : public RewriterBase::Listener {
  void notifyOperationErased(Operation *op) override { ops.insert(op); }
  DenseSet<Operation *> ops;
};

} // namespace

void mlir::norm::populateNormRaisePatterns(RewritePatternSet &patterns,
                                           const RaiseOptions &options) {
  patterns.add<RaiseForward>(patterns.getContext(), options);
  patterns.add<RaiseGrad>(patterns.getContext(), options);
}

namespace {
struct RaisePass : public norm::impl::NormRaiseBase<RaisePass> {
  using Base::Base;

  void runOnOperation() override {
    int64_t before = 0;
    DenseSet<Operation *> existing;
    getOperation().walk([&](Operation *op) {
      before += isa<NormDialect>(op->getDialect());
      existing.insert(op);
    });
    RaiseOptions options;
    options.f32Accumulation = f32Accumulation;
    // Forward ops first: a backward in the same function then reads the
    // forward's statistics as leaves. Within each, later ops first: the
    // largest expression is tried before its parts (a part of a backward
    // can be a backward of other values, and would break the whole).
    ErasedOps erased;
    IRRewriter rewriter(&getContext(), &erased);
    // Backward: dx candidates before dweight ones (a dx match takes its
    // dweight and dbias along; a dweight alone is ambiguous between
    // LayerNorm and RMSNorm of centred x).
    for (int phase : {0, 1, 2}) {
      bool grad = phase > 0;
      SmallVector<Operation *> ops;
      getOperation().walk([&](Operation *op) {
        Value r = candidate(op);
        if (r && (phase != 1 || cast<ShapedType>(r.getType()).getRank() > 1))
          ops.push_back(op);
      });
      for (Operation *op : llvm::reverse(ops)) {
        if (erased.ops.contains(op))
          continue;
        rewriter.setInsertionPoint(op);
        Why why;
        (void)(grad ? raiseGradAt(op, rewriter, options, why)
                    : raiseForwardAt(op, rewriter, options, why));
      }
    }
    // What the rewrites made and nothing came to use (a reshape of a
    // statistic whose only reader was raised later).
    for (bool erased = true; erased;) {
      erased = false;
      SmallVector<Operation *> dead;
      getOperation().walk([&](Operation *op) {
        if (!existing.contains(op) && op->getNumResults() > 0 &&
            op->use_empty() && isPure(op) &&
            !isa<NormDialect>(op->getDialect()))
          dead.push_back(op);
      });
      for (Operation *op : dead)
        op->erase();
      erased = !dead.empty();
    }
    int64_t raised = 0;
    getOperation().walk(
        [&](Operation *op) { raised += isa<NormDialect>(op->getDialect()); });
    numRaised = raised - before;
    if (reportNearMisses)
      reportLeft();
  }

  /// One remark per expression left that ends in a [rows, N] or [N] result
  /// computed through a reduction: why neither matcher took it.
  void reportLeft() {
    getOperation().walk([&](linalg::LinalgOp op) {
      Value root = candidate(op.getOperation());
      if (!root || !endsExpression(root))
        return;
      FailureOr<Slice> slice = collectSlice(root);
      if (failed(slice) || slice->reductionTypes.empty())
        return;
      RaiseOptions options;
      Why fwd, bwd;
      FailureOr<Match> f = failure();
      if (cast<ShapedType>(root.getType()).getRank() >= 2) {
        f = matchForward(root, fwd);
        if (succeeded(f))
          (void)checkTypes(*f, options, fwd);
      } else {
        fwd.text = "not a [rows, N] result";
      }
      FailureOr<Match> b = matchGrad(root, bwd);
      if (succeeded(b)) {
        findGradSiblings(*b, root);
        (void)checkTypes(*b, options, bwd);
      }
      op->emitRemark() << "norm-raise: not raised: as a forward: " << fwd.text
                       << "; as a backward: " << bwd.text;
    });
  }
};
} // namespace
