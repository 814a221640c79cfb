//===- NestShapes.cpp - the nests the mapping accepts ---------------------===//
//
// Part of mlir-norm.
//
// A `norm.stage` tag says what a nest is for, never that its shape is what
// norm-split and the passes after it create. The kernel builders clone the
// nest's body by rules that hold for that shape only (pure ops recomputed
// where used, loop results reduced across lanes, ...), so each nest is
// checked here first: anything else is an error that names the nest and
// what is wrong with it, never a crash or a wrong kernel.
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"

#include "norm/Dialect/Norm/IR/StageContract.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace mlir::norm;

namespace {

/// An error on `nest`: it is not of `form`, because `what`.
InFlightDiagnostic malformed(scf::ForOp nest, StringRef stage, StringRef form,
                             const Twine &what) {
  return nest.emitError() << "norm-map-to-gpu: this '" << stage
                          << "' nest is not of the form the lowering creates ("
                          << form << "): " << what;
}

bool isRegionFreePure(Operation &op) {
  return op.getNumRegions() == 0 && isMemoryEffectFree(&op);
}

/// A loop over columns: `for j = 0 to N step 1`, N > 0 when static.
LogicalResult checkColumnLoop(scf::ForOp loop, function_ref<InFlightDiagnostic(
                                                   const Twine &)> fail) {
  if (!isConstantIntValue(loop.getLowerBound(), 0) ||
      !isConstantIntValue(loop.getStep(), 1))
    return fail("a column loop does not run from 0 in steps of 1");
  if (std::optional<int64_t> n = getConstantIntValue(loop.getUpperBound());
      n && *n <= 0)
    return fail("a column loop runs over " + Twine(*n) + " columns");
  return success();
}

/// The ops a row body (and a column loop's body) may hold: what norm-split
/// and the passes after it emit there.
bool isRowBodyOp(Operation &op, bool inColumnLoop) {
  if (isa<memref::LoadOp, memref::StoreOp, memref::AtomicRMWOp, scf::YieldOp>(
          op))
    return true;
  if (!inColumnLoop && isa<scf::WhileOp>(op)) // the lock of `locked`
    return true;
  return isRegionFreePure(op);
}

} // namespace

FailureOr<scf::ForOp> norm::checkRowNestShape(scf::ForOp nest, bool forward) {
  StringRef stage = forward ? "forward" : "dx";
  StringRef form = forward ? "for r { column loops }"
                           : "for p { for r { column loops } }";
  auto fail = [&](const Twine &what) {
    return malformed(nest, stage, form, what);
  };
  if (nest.getNumResults())
    return fail("the nest loop yields values");
  scf::ForOp rows = nest;
  if (!forward) {
    rows = nullptr;
    for (Operation &op : nest.getBody()->without_terminator()) {
      if (auto loop = dyn_cast<scf::ForOp>(op); loop && !rows) {
        rows = loop;
        continue;
      }
      if (!isRegionFreePure(op))
        return fail("the program loop holds '" + op.getName().getStringRef() +
                    "' besides its one row loop");
    }
    if (!rows)
      return fail("no row loop");
    if (rows.getNumResults())
      return fail("the row loop yields values");
  }
  std::optional<Value> n;
  for (Operation &op : rows.getBody()->without_terminator()) {
    auto column = dyn_cast<scf::ForOp>(op);
    if (!column) {
      if (!isRowBodyOp(op, /*inColumnLoop=*/false))
        return fail("the row body holds '" + op.getName().getStringRef() +
                    "'");
      // The lock's acquire (a spin loop) and release (an atomic exchange)
      // are the `locked` strategy's; the row kernel takes them as such
      // only in a nest of that strategy.
      auto rmw = dyn_cast<memref::AtomicRMWOp>(op);
      if ((isa<scf::WhileOp>(op) ||
           (rmw && rmw.getKind() == arith::AtomicRMWKind::assign)) &&
          getNestStrategy(nest) != ReductionStrategy::Locked)
        return fail("the row body holds a lock ('" +
                    op.getName().getStringRef() +
                    "') but the nest's norm.strategy is not locked");
      continue;
    }
    if (n && *n != column.getUpperBound())
      return fail("its column loops have different bounds");
    n = column.getUpperBound();
    if (failed(checkColumnLoop(column, fail)))
      return failure();
    for (Operation &inner : *column.getBody())
      if (!isRowBodyOp(inner, /*inColumnLoop=*/true))
        return fail("a column loop holds '" + inner.getName().getStringRef() +
                    "'");
  }
  if (!n)
    return fail("the row body has no column loop");
  return rows;
}

LogicalResult norm::checkZeroNestShape(scf::ForOp nest) {
  auto fail = [&](const Twine &what) {
    return malformed(nest, "zero", "for w { stores; for j { stores } }", what);
  };
  if (nest.getNumResults())
    return fail("the nest loop yields values");
  for (Operation &op : nest.getBody()->without_terminator()) {
    auto loop = dyn_cast<scf::ForOp>(op);
    if (!loop) {
      if (!isRegionFreePure(op) && !isa<memref::StoreOp>(op))
        return fail("the row loop holds '" + op.getName().getStringRef() +
                    "'");
      continue;
    }
    if (loop.getNumResults())
      return fail("a column loop yields values");
    if (failed(checkColumnLoop(loop, fail)))
      return failure();
    for (Operation &inner : loop.getBody()->without_terminator())
      if (!isRegionFreePure(inner) && !isa<memref::StoreOp>(inner))
        return fail("a column loop holds '" + inner.getName().getStringRef() +
                    "'");
  }
  return success();
}

FailureOr<scf::ForOp> norm::checkReduceNestShape(scf::ForOp nest) {
  auto fail = [&](const Twine &what) {
    return malformed(nest, "reduce",
                     "for j { s = for w { sum of loads }; stores }", what);
  };
  if (nest.getNumResults())
    return fail("the nest loop yields values");
  if (failed(checkColumnLoop(nest, fail)))
    return failure();
  scf::ForOp sum;
  for (Operation &op : nest.getBody()->without_terminator()) {
    if (auto loop = dyn_cast<scf::ForOp>(op)) {
      if (sum || !loop.getNumResults())
        return fail("it holds a loop besides its one sum over partial rows");
      sum = loop;
      for (Operation &inner : loop.getBody()->without_terminator()) {
        if (!isRegionFreePure(inner) && !isa<memref::LoadOp>(inner))
          return fail("the sum holds '" + inner.getName().getStringRef() +
                      "'");
        // The reduce kernel carries a row's values from one step to the
        // next, starting from zeros: numbers only.
        for (Type t : inner.getResultTypes()) {
          Type e = t;
          if (auto v = dyn_cast<VectorType>(t))
            e = v.getElementType();
          if (isa<IntegerType, IndexType, FloatType>(e))
            continue;
          std::string type;
          llvm::raw_string_ostream os(type);
          os << t;
          return fail("the sum's '" + inner.getName().getStringRef() +
                      "' yields " + type + ", not a number");
        }
      }
      continue;
    }
    // Before the sum only its initial values; after it the stores.
    if (!isRegionFreePure(op) && !(sum && isa<memref::StoreOp>(op)))
      return fail("it holds '" + op.getName().getStringRef() + "'" +
                  (sum ? "" : " before its sum"));
  }
  if (!sum)
    return fail("no sum over partial rows");
  return sum;
}
