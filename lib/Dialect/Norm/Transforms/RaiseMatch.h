//===- RaiseMatch.h - norm-raise's recognisers ------------------*- C++ -*-===//
//
// Part of mlir-norm.
//
// What the recognisers of norm-raise (RaiseMatch.cpp) hand to its rewrites
// (Raise.cpp): the operand roles a leaf can play, the row geometry of a
// candidate, a hypothesis (leaves assigned to roles, the op's attributes)
// and a match (the hypothesis, the program values it replaces).
//
//===----------------------------------------------------------------------===//

#ifndef NORM_LIB_DIALECT_NORM_TRANSFORMS_RAISEMATCH_H
#define NORM_LIB_DIALECT_NORM_TRANSFORMS_RAISEMATCH_H

#include "norm/Dialect/Norm/Transforms/RaiseEval.h"
#include "norm/Dialect/Norm/Transforms/Transforms.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"

#include <array>
#include <string>

namespace mlir::norm::raise {

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
  int64_t m() const { return ShapedType::getNumElements(rowsC); }
};

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
Value candidate(Operation *op);

/// Whether `v` is laid out as class `c` of the geometry.
bool hasClass(Value v, Cls c, const Geometry &g);

Type elementType(Value v);

/// Forward: y = LayerNorm / RMSNorm of one value, read as it is (a leaf of
/// the computation) or cut where the program computes it; the match whose
/// dtypes the op can give.
FailureOr<Match> matchForward(Value root, Why &why,
                              const RaiseOptions &options = {});

/// Backward: dx (Full root) or dweight (Col root) of values read as they
/// are (leaves) or cut where the program computes them.
FailureOr<Match> matchGrad(Value root, Why &why);

/// Backward: the other outputs of the same op in the block (dx, dweight,
/// dbias under the same leaves), added to `match`.
void findGradSiblings(Match &match, Value root);

/// Backward, from a dweight match: a dx in the block with the same dy, x
/// or xhat, mean and rstd (its own match, which knows the weight).
FailureOr<Match> findDxFor(const Match &dw, Value root);

/// The dtype rules of the ops; sets `match.acc`.
LogicalResult checkTypes(Match &match, const RaiseOptions &options, Why &why);

} // namespace mlir::norm::raise

#endif // NORM_LIB_DIALECT_NORM_TRANSFORMS_RAISEMATCH_H
