//===- RaiseMatch.cpp - norm-raise's recognisers --------------------------===//
//
// Part of mlir-norm.
//
// A candidate's computation (RaiseEval.h) is cut at its leaves, or also at
// values the program computes before any of the computation's reductions
// (x, dy, a residual sum: cutCandidates); each assignment of the leaves to
// the operands of a norm op (x, weight, bias; dy, x or xhat, mean, rstd,
// weight, dresidual), with each float constant of the computation as eps,
// is a hypothesis. A hypothesis holds when the computation and the op's
// definition agree on random inputs in f64, on probes chosen so that what
// only looks similar differs: unit data, data whose variance is of the
// order of eps (where eps placement matters) and, for LayerNorm, data far
// from zero (where E[x^2] - E[x]^2 cancels). Dtypes are checked on the IR
// afterwards (checkTypes).
//
//===----------------------------------------------------------------------===//

#include "RaiseMatch.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>
#include <functional>
#include <random>
#include <set>

using namespace mlir;
using namespace mlir::norm;
using namespace mlir::norm::raise;

//===----------------------------------------------------------------------===//
// Roles, geometry, probes
//===----------------------------------------------------------------------===//

static bool compatible(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  if (a.size() != b.size())
    return false;
  for (auto [x, y] : llvm::zip(a, b))
    if (!ShapedType::isDynamic(x) && !ShapedType::isDynamic(y) && x != y)
      return false;
  return true;
}

bool raise::hasClass(Value v, Cls c, const Geometry &g) {
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

static Cls classOf(Role r) {
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

namespace {
/// Random inputs for the roles. `kind` 0: unit data; 1: x of variance of
/// the order of eps; 2: x far from zero.
struct Probe {
  std::array<std::vector<double>, NumRoles> data;
};
} // namespace

static Probe makeProbe(const Geometry &g, int kind, double eps, unsigned seed) {
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
static void bindLeaves(Evaluator &ev, const Hypothesis &h, const Probe &p,
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

namespace {
struct Expected {
  std::vector<double> y, mean, rstd;    // forward
  std::vector<double> dx, dw, db, xhat; // backward (xhat: the forward's too)
};
} // namespace

static Expected reference(const Hypothesis &h, const Probe &p,
                          const Geometry &g, bool grad) {
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

static bool close(const Array &got, const std::vector<double> &want) {
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

/// A candidate result: the one tensor result of a linalg op, or an [N]
/// reshape (torch keeps a column sum [1, N] and views it as [N]).
Value raise::candidate(Operation *op) {
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
static bool
forEachAssignment(ArrayRef<Value> leaves, ArrayRef<Role> roles,
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
static FailureOr<Geometry> geometryOf(RankedTensorType t, Why &why) {
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
static Evaluator evaluatorFor(const Geometry &g) {
  Evaluator ev;
  if (g.shrunk)
    ev.shrinkRows(g.rows, g.rowsC);
  return ev;
}

/// Tests a hypothesis for `target` on every probe.
static bool holds(const Hypothesis &h, Value root, Target target,
                  const Geometry &g) {
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

static bool isStorageFloat(Type t) {
  return isa<Float32Type, Float16Type, BFloat16Type>(t);
}

Type raise::elementType(Value v) { return getElementTypeOrSelf(v.getType()); }

/// The accumulation type of the reductions, or failure for mixed 16-bit
/// types or a non-float reduction.
static FailureOr<Type> accumulationOf(ArrayRef<Type> types, Why &why) {
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
static SmallVector<Value> cutCandidates(const Slice &slice, const Geometry &g) {
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
static bool leavesIndependent(const Slice &s) {
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

static unsigned countFull(const Slice &s, const Geometry &g) {
  return llvm::count_if(s.leaves,
                        [&](Value l) { return hasClass(l, Cls::Full, g); });
}

/// Forward on one cut of the computation: y = LayerNorm / RMSNorm of its
/// leaves.
static FailureOr<Match> matchForwardSlice(Value root, Slice slice,
                                          const Geometry &g, Why &why) {
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

/// Forward: y = LayerNorm / RMSNorm of one value, read as it is (a leaf of
/// the computation) or cut where the program computes it; the match whose
/// dtypes the op can give.
FailureOr<Match> raise::matchForward(Value root, Why &why,
                                     const RaiseOptions &options) {
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
static FailureOr<Match> matchGradSlice(Value root, Slice slice, Target target,
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
FailureOr<Match> raise::matchGrad(Value root, Why &why) {
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
void raise::findGradSiblings(Match &match, Value root) {
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
FailureOr<Match> raise::findDxFor(const Match &dw, Value root) {
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

/// Common dtype rules; sets match.acc.
LogicalResult raise::checkTypes(Match &match, const RaiseOptions &options,
                                Why &why) {
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
