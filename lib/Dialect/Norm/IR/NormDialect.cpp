//===- NormDialect.cpp - norm dialect ---------------------------*- C++ -*-===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#include "norm/Dialect/Norm/IR/NormDialect.h"
#include "norm/Dialect/Norm/IR/NormOps.h"
#include "norm/Dialect/Norm/IR/StageContract.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/Hashing.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::norm;
namespace manifest = mlir::norm::manifest;

#include "norm/Dialect/Norm/IR/NormDialect.cpp.inc"
#include "norm/Dialect/Norm/IR/NormEnums.cpp.inc"

namespace mlir::norm::manifest {
/// The hash of a launch record, for the uniquing of #norm.kernel.
static llvm::hash_code hash_value(const KernelRecord &record) {
  llvm::hash_code hash = llvm::hash_value(kNumKernelRecordFields);
  record.forEachField([&](const Field &, const auto &value) {
    using T = std::decay_t<decltype(value)>;
    if constexpr (std::is_same_v<T, std::optional<bool>>)
      hash = llvm::hash_combine(hash, value ? int(*value) + 1 : 0);
    else
      hash = llvm::hash_combine(hash, value);
  });
  return hash;
}
} // namespace mlir::norm::manifest

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
      name == getEarlyRowAttrHelper().getName() ||
      name == getRecomputableAttrHelper().getName() ||
      name == getWorkspaceAttrHelper().getName() ||
      name == getWrittenAttrHelper().getName()) {
    if (failed(expect(isa<UnitAttr>(value), "a unit attribute")))
      return failure();
    if (op->getNumResults() != 1 || !isa<MemRefType>(op->getResult(0).getType()))
      return op->emitError() << "'" << name
                             << "' belongs on a buffer allocation, not on '"
                             << op->getName() << "'";
    return success();
  }
  if (name == getGeometryAttrHelper().getName()) {
    if (failed(expect(isa<RowGeometryAttr>(value), "a #norm.row_geometry")))
      return failure();
    std::optional<Stage> stage = getStage(op);
    bool rowNest = stage && (*stage == Stage::Dx || *stage == Stage::Forward);
    if (!rowNest && !isa<NormDialect>(op->getDialect()))
      return op->emitError()
             << "'" << name
             << "' belongs on a norm op or its 'dx' / 'forward' nest, not on '"
             << op->getName() << "'";
    return success();
  }
  if (name == getKernelsAttrHelper().getName())
    return expect(isa<ArrayAttr>(value), "an array");
  return op->emitError() << "unknown norm dialect attribute '" << name
                         << "' (known: norm.stage, norm.id, norm.accumulate, "
                            "norm.strategy, norm.row_cache, "
                            "norm.recomputable, norm.workspace, norm.written, "
                            "norm.kernels)";
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

//===----------------------------------------------------------------------===//
// #norm.kernel: `key = value` pairs, one per KernelRecord field of
// norm/Support/ManifestSchema.def (its attribute key, range and enum
// names), printed in table order.
//===----------------------------------------------------------------------===//

namespace {

StringRef str(std::string_view s) { return StringRef(s.data(), s.size()); }

/// An enum keyword by the schema's names.
template <typename E>
FailureOr<E> parseEnum(AsmParser &p, StringRef what,
                       std::optional<E> (*fromName)(std::string_view)) {
  SMLoc loc = p.getCurrentLocation();
  StringRef word;
  if (p.parseKeyword(&word))
    return failure();
  if (std::optional<E> e = fromName(std::string_view(word.data(), word.size())))
    return *e;
  return p.emitError(loc) << "unknown " << what << " '" << word << "'";
}

/// The value of one record field, by its C++ type.
template <typename T>
ParseResult parseValue(AsmParser &p, const manifest::Field &f, T &value) {
  SMLoc loc = p.getCurrentLocation();
  if constexpr (std::is_same_v<T, std::string>) {
    return p.parseString(&value);
  } else if constexpr (std::is_same_v<T, int64_t>) {
    return p.parseInteger(value);
  } else if constexpr (std::is_same_v<T, std::optional<bool>>) {
    StringRef word;
    if (p.parseKeyword(&word))
      return failure();
    if (word != "true" && word != "false")
      return p.emitError(loc)
             << "'" << str(f.attrKey) << "' must be true or false";
    value = word == "true";
    return success();
  } else if constexpr (std::is_same_v<T, manifest::KernelKind>) {
    FailureOr<T> e = parseEnum<T>(p, "kernel kind", manifest::parseKernelKind);
    if (failed(e))
      return failure();
    value = *e;
    return success();
  } else if constexpr (std::is_same_v<T, manifest::GridRule>) {
    FailureOr<T> e = parseEnum<T>(p, "grid rule", manifest::parseGridRule);
    if (failed(e))
      return failure();
    value = *e;
    return success();
  } else {
    static_assert(manifest::kUnhandledFieldType<T>,
                  "a kernel field of an unhandled type");
  }
}

/// One record field as the attribute writes it.
template <typename T>
void printValue(AsmPrinter &p, const T &value) {
  if constexpr (std::is_same_v<T, std::string>)
    p.printString(value);
  else if constexpr (std::is_same_v<T, int64_t>)
    p << value;
  else if constexpr (std::is_same_v<T, std::optional<bool>>)
    p << (*value ? "true" : "false");
  else
    p << str(manifest::toString(value));
}

} // namespace

Attribute KernelAttr::parse(AsmParser &p, Type) {
  manifest::KernelRecord record;
  llvm::StringSet<> seen;
  SMLoc start = p.getCurrentLocation();
  auto parseField = [&]() -> ParseResult {
    SMLoc loc = p.getCurrentLocation();
    StringRef key;
    if (p.parseKeyword(&key) || p.parseEqual())
      return failure();
    if (!seen.insert(key).second)
      return p.emitError(loc) << "duplicate '" << key << "'";
    std::optional<ParseResult> result;
    record.forEachField([&](const manifest::Field &f, auto &value) {
      if (!result && str(f.attrKey) == key)
        result = parseValue(p, f, value);
    });
    if (!result)
      return p.emitError(loc) << "unknown key '" << key << "'";
    return *result;
  };
  if (p.parseCommaSeparatedList(AsmParser::Delimiter::LessGreater, parseField))
    return {};
  std::string required;
  bool missing = false;
  record.forEachField([&](const manifest::Field &f, const auto &) {
    if (!f.required)
      return;
    required += (required.empty() ? "" : ", ") + std::string(f.attrKey);
    missing |= !seen.contains(str(f.attrKey));
  });
  if (missing) {
    size_t comma = required.rfind(", ");
    if (comma != std::string::npos)
      required.replace(comma, 2, " and ");
    p.emitError(start) << "#norm.kernel needs " << required;
    return {};
  }
  return getChecked([&] { return p.emitError(start); }, p.getContext(), record);
}

void KernelAttr::print(AsmPrinter &p) const {
  p << "<";
  bool first = true;
  getRecord().forEachField([&](const manifest::Field &f, const auto &value) {
    if (!manifest::isPresent(f, value))
      return;
    p << (first ? "" : ", ") << str(f.attrKey) << " = ";
    printValue(p, value);
    first = false;
  });
  p << ">";
}

LogicalResult
KernelAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                   manifest::KernelRecord record) {
  std::string error;
  record.forEachField([&](const manifest::Field &f, const auto &value) {
    using T = std::decay_t<decltype(value)>;
    if (!error.empty())
      return;
    if constexpr (std::is_same_v<T, std::string>) {
      if (f.required && value.empty())
        error = "empty " + std::string(f.attrKey);
    } else if constexpr (std::is_same_v<T, int64_t>) {
      // An optional integer is absent when 0.
      if (f.required || value)
        error = manifest::rangeError(f, value, f.attrKey);
    }
  });
  if (error.empty())
    error = manifest::checkKernelRecord(record, manifest::Syntax::Attribute);
  if (!error.empty())
    return emitError() << "#norm.kernel: " << error;
  return success();
}

//===----------------------------------------------------------------------===//
// #norm.row_geometry: what holds whatever the row (the rest is checked by
// norm-choose-geometry against N, the element types and the chip).
//===----------------------------------------------------------------------===//

LogicalResult RowGeometryAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, RowRegime regime,
    int64_t threads, int64_t lanes, int64_t rows, int64_t vector,
    int64_t chunks, RowLayout layout, RowPartials partials, int64_t cluster,
    int64_t batch, int64_t prefetch, int64_t partialVector, int64_t pipeline,
    int64_t narrowCache, int64_t holdColumns, int64_t shared,
    int64_t dynamicShared) {
  auto fail = [&]() { return emitError() << "#norm.row_geometry: "; };
  // Bounds far past any chip's, so that every product of them fits.
  // Whole warps of every chip's 32 lanes, or a power of two (a block
  // below a warp); norm-choose-geometry checks them against the chip.
  auto blockSized = [](int64_t v) {
    return llvm::isPowerOf2_64(v) || v % 32 == 0;
  };
  if (threads < 1 || !blockSized(threads) || threads > (1 << 16))
    return fail() << "threads must be a power of two or a multiple of 32, "
                     "up to 65536, got "
                  << threads;
  if (chunks < 0 || chunks > (1 << 16) || vector > (1 << 8) ||
      cluster > (1 << 10) || batch > (1 << 10))
    return fail() << "chunks (at most 65536), vector (256), cluster (1024) "
                     "or batch (1024) out of range";
  if (lanes < 1 || !blockSized(lanes) || lanes > threads)
    return fail() << "lanes must be a power of two or a multiple of 32 "
                     "(whole warps), at most threads ("
                  << threads << "), got " << lanes;
  if (rows * lanes != threads)
    return fail() << "rows x lanes must be threads: " << rows << " x "
                  << lanes << " != " << threads;
  if (vector < 1 || !llvm::isPowerOf2_64(vector))
    return fail() << "vector must be a power of two, got " << vector;
  if (cluster < 1)
    return fail() << "cluster must be at least 1, got " << cluster;
  if (batch < 1)
    return fail() << "batch must be at least 1, got " << batch;
  if (prefetch < 0 || prefetch > 1024)
    return fail() << "prefetch must be 0 to 1024 waves ahead, got "
                  << prefetch;
  if (partialVector != 1 && partialVector != 2 && partialVector != 4)
    return fail() << "partial_vector must be 1, 2 or 4, got "
                  << partialVector;
  if (partialVector > 1 && partials != RowPartials::Shared)
    return fail() << "partial_vector groups partial sums in shared memory "
                     "(partials = shared), got partials = "
                  << stringifyRowPartials(partials);
  if (partialVector > vector)
    return fail() << "partial_vector (" << partialVector
                  << ") must be at most vector (" << vector << ")";
  if (pipeline != 0 && pipeline != 1)
    return fail() << "pipeline must be 0 or 1 waves loaded ahead, got "
                  << pipeline;
  if (pipeline && regime != RowRegime::Registers)
    return fail() << "pipeline loads the next row into registers, which "
                     "needs regime = registers";
  if (pipeline && layout != RowLayout::Both)
    return fail() << "pipeline loads the next row in the aligned body of "
                     "layout = both, got layout = "
                  << stringifyRowLayout(layout);
  if (narrowCache < 0 || narrowCache > 2)
    return fail() << "narrow_cache must be 0, 1 or 2, got " << narrowCache;
  if (narrowCache && regime != RowRegime::Registers)
    return fail() << "narrow_cache keeps the register regime's row caches "
                     "narrow, which needs regime = registers";
  if (holdColumns != 0 && holdColumns != 1)
    return fail() << "hold_columns must be 0 or 1, got " << holdColumns;
  if (holdColumns && regime != RowRegime::Registers)
    return fail() << "hold_columns holds a lane's unrolled chunks of the "
                     "columns, which needs regime = registers";
  if (holdColumns && layout == RowLayout::Interleaved)
    return fail() << "hold_columns holds the vector layout's 16-byte loads, "
                     "and layout = interleaved has none";
  if (shared < 0 || dynamicShared < 0)
    return fail() << "shared memory sizes must not be negative";
  if (regime == RowRegime::Looped) {
    if (rows != 1)
      return fail() << "the looped regime takes one row per block (lanes = "
                       "threads), got rows = "
                    << rows;
    if (cluster == 1 && chunks != 0)
      return fail() << "the looped regime has no fixed chunks per lane, got "
                       "chunks = "
                    << chunks;
    if (cluster > 1 && chunks < 1)
      return fail() << "a looped row split over a cluster walks slices of "
                       "chunks x lanes x vector columns: chunks >= 1 needed";
    if (cluster > 1 && batch != 1)
      return fail() << "a looped row split over a cluster takes one row at "
                       "a time (batch = 1), got batch = "
                    << batch;
    if (partials == RowPartials::Registers || partials == RowPartials::Shared)
      return fail() << "the looped regime keeps its partial rows in global "
                       "memory, got partials = "
                    << stringifyRowPartials(partials);
  } else {
    if (chunks < 1)
      return fail() << "the registers regime needs chunks >= 1, got "
                    << chunks;
    if (partials == RowPartials::Global)
      return fail() << "partials = global is the looped regime's";
    if (partials == RowPartials::Shared && rows != 1)
      return fail() << "partials = shared takes one row in flight (rows = "
                       "1), got rows = "
                    << rows;
  }
  if (batch != 1 && partials != RowPartials::Global)
    return fail() << "batch > 1 only goes with partials = global";
  if (cluster > 1 && rows != 1)
    return fail() << "a row split over a cluster takes one row in flight "
                     "(rows = 1), got rows = "
                  << rows;
  return success();
}
