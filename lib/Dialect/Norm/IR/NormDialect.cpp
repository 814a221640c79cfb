//===- NormDialect.cpp - norm dialect ---------------------------*- C++ -*-===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#include "norm/Dialect/Norm/IR/NormDialect.h"
#include "norm/Dialect/Norm/IR/NormOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::norm;

#include "norm/Dialect/Norm/IR/NormDialect.cpp.inc"
#include "norm/Dialect/Norm/IR/NormEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "norm/Dialect/Norm/IR/NormAttrs.cpp.inc"

/// The stage contract's attributes (StageContract.h): each must have its
/// declared type and sit where the contract puts it.
LogicalResult NormDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  Attribute value = attr.getValue();
  auto expect = [&](bool ok, StringRef what) -> LogicalResult {
    if (ok)
      return success();
    return op->emitError() << "'" << name << "' must be " << what << ", got "
                           << value;
  };
  if (name == getStageAttrHelper().getName()) {
    if (failed(expect(isa<StageAttr>(value), "a #norm.stage")))
      return failure();
    if (op->getNumRegions() == 0)
      return op->emitError() << "'" << name
                             << "' belongs on a loop nest, not on '"
                             << op->getName() << "'";
    return success();
  }
  if (name == getIdAttrHelper().getName())
    return expect(isa<IntegerAttr>(value), "an integer");
  if (name == getAccumulateAttrHelper().getName()) {
    auto t = dyn_cast<TypeAttr>(value);
    return expect(t && isa<FloatType>(t.getValue()), "a float type");
  }
  if (name == getStrategyAttrHelper().getName())
    return expect(isa<ReductionStrategyAttr>(value), "a #norm.strategy");
  if (name == getRowCacheAttrHelper().getName() ||
      name == getRecomputableAttrHelper().getName()) {
    if (failed(expect(isa<UnitAttr>(value), "a unit attribute")))
      return failure();
    if (op->getNumResults() != 1 || !isa<MemRefType>(op->getResult(0).getType()))
      return op->emitError() << "'" << name
                             << "' belongs on a buffer allocation, not on '"
                             << op->getName() << "'";
    return success();
  }
  if (name == getKernelsAttrHelper().getName())
    return expect(isa<ArrayAttr>(value), "an array");
  return op->emitError() << "unknown norm dialect attribute '" << name
                         << "' (known: norm.stage, norm.id, norm.accumulate, "
                            "norm.strategy, norm.row_cache, "
                            "norm.recomputable, norm.kernels)";
}

void NormDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "norm/Dialect/Norm/IR/NormAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "norm/Dialect/Norm/IR/NormOps.cpp.inc"
      >();
}
