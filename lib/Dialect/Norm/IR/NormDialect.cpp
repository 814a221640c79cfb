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
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::norm;
namespace manifest = mlir::norm::manifest;

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
// #norm.kernel: `key = value` pairs, the enums by the names of
// norm/Support/ManifestSchema.h.
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

} // namespace

Attribute KernelAttr::parse(AsmParser &p, Type) {
  std::string name;
  std::optional<manifest::KernelKind> kind;
  std::optional<manifest::GridRule> grid;
  std::optional<int64_t> block;
  int64_t columns = 0, lanes = 0, rows = 0, vector = 0, cluster = 0, shared = 0;
  std::optional<bool> registers;
  llvm::StringSet<> seen;
  SMLoc start = p.getCurrentLocation();
  auto parseField = [&]() -> ParseResult {
    SMLoc loc = p.getCurrentLocation();
    StringRef key;
    if (p.parseKeyword(&key) || p.parseEqual())
      return failure();
    if (!seen.insert(key).second)
      return p.emitError(loc) << "duplicate '" << key << "'";
    if (key == "name")
      return p.parseString(&name);
    if (key == "kind") {
      auto k = parseEnum<manifest::KernelKind>(p, "kernel kind",
                                               manifest::parseKernelKind);
      if (failed(k))
        return failure();
      kind = *k;
      return success();
    }
    if (key == "grid") {
      auto g = parseEnum<manifest::GridRule>(p, "grid rule",
                                             manifest::parseGridRule);
      if (failed(g))
        return failure();
      grid = *g;
      return success();
    }
    if (key == "registers") {
      StringRef word;
      if (p.parseKeyword(&word))
        return failure();
      if (word != "true" && word != "false")
        return p.emitError(loc) << "'registers' must be true or false";
      registers = word == "true";
      return success();
    }
    int64_t *slot = key == "block"     ? &block.emplace()
                    : key == "columns" ? &columns
                    : key == "lanes"   ? &lanes
                    : key == "rows"    ? &rows
                    : key == "vector"  ? &vector
                    : key == "cluster" ? &cluster
                    : key == "shared"  ? &shared
                                       : nullptr;
    if (!slot)
      return p.emitError(loc) << "unknown key '" << key << "'";
    return p.parseInteger(*slot);
  };
  if (p.parseCommaSeparatedList(AsmParser::Delimiter::LessGreater, parseField))
    return {};
  if (!seen.contains("name") || !kind || !block || !grid) {
    p.emitError(start) << "#norm.kernel needs name, kind, block and grid";
    return {};
  }
  return getChecked([&] { return p.emitError(start); }, p.getContext(), name,
                    *kind, *block, *grid, columns, lanes, rows, vector,
                    registers, cluster, shared);
}

void KernelAttr::print(AsmPrinter &p) const {
  p << "<name = ";
  p.printString(getName());
  p << ", kind = " << str(manifest::toString(getKind()))
    << ", block = " << getBlock()
    << ", grid = " << str(manifest::toString(getGrid()));
  auto optional = [&](StringRef key, int64_t v) {
    if (v)
      p << ", " << key << " = " << v;
  };
  optional("columns", getColumns());
  optional("lanes", getLanes());
  optional("rows", getRows());
  optional("vector", getVector());
  if (getRegisters())
    p << ", registers = " << (*getRegisters() ? "true" : "false");
  optional("cluster", getCluster());
  optional("shared", getShared());
  p << ">";
}

LogicalResult
KernelAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                   StringRef name, manifest::KernelKind kind, int64_t block,
                   manifest::GridRule grid, int64_t columns, int64_t lanes,
                   int64_t rows, int64_t vector, std::optional<bool>,
                   int64_t cluster, int64_t shared) {
  if (name.empty())
    return emitError() << "#norm.kernel: empty name";
  if (block < 1)
    return emitError() << "#norm.kernel: block must be positive, got "
                       << block;
  for (int64_t v : {columns, lanes, rows, vector})
    if (v < 0)
      return emitError() << "#norm.kernel: columns, lanes, rows and vector "
                            "must be positive when present";
  if (columns && grid != manifest::GridRule::Columns)
    return emitError() << "#norm.kernel: columns only go with grid = columns";
  if (grid == manifest::GridRule::RowBlocks && !rows)
    return emitError() << "#norm.kernel: grid = row_blocks needs rows";
  // 0: absent (1 block per cluster, no cluster).
  if (cluster && (cluster < manifest::field::kCluster.min ||
                  cluster > manifest::field::kCluster.max))
    return emitError() << "#norm.kernel: cluster must be in ["
                       << manifest::field::kCluster.min << ", "
                       << manifest::field::kCluster.max << "], got "
                       << cluster;
  if (shared < 0 || shared > manifest::field::kDynamicShared.max)
    return emitError() << "#norm.kernel: shared (dynamic shared memory "
                          "bytes) must be in [0, "
                       << manifest::field::kDynamicShared.max << "], got "
                       << shared;
  if (cluster > 1 && grid != manifest::GridRule::Programs)
    return emitError() << "#norm.kernel: cluster > 1 only goes with grid = "
                          "programs (G clusters of blocks), got grid = "
                       << str(manifest::toString(grid));
  return success();
}

//===----------------------------------------------------------------------===//
// #norm.row_geometry: what holds whatever the row (the rest is checked by
// norm-choose-geometry against N, the element types and the chip).
//===----------------------------------------------------------------------===//

LogicalResult RowGeometryAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, RowRegime regime,
    int64_t threads, int64_t lanes, int64_t rows, int64_t vector,
    int64_t chunks, RowLayout, RowPartials partials, int64_t cluster,
    int64_t batch, int64_t shared, int64_t dynamicShared) {
  auto fail = [&]() { return emitError() << "#norm.row_geometry: "; };
  // Bounds far past any chip's, so that every product of them fits.
  if (threads < 1 || !llvm::isPowerOf2_64(threads) || threads > (1 << 16))
    return fail() << "threads must be a power of two up to 65536, got "
                  << threads;
  if (chunks < 0 || chunks > (1 << 16) || vector > (1 << 8) ||
      cluster > (1 << 10) || batch > (1 << 10))
    return fail() << "chunks (at most 65536), vector (256), cluster (1024) "
                     "or batch (1024) out of range";
  if (lanes < 1 || !llvm::isPowerOf2_64(lanes) || lanes > threads)
    return fail() << "lanes must be a power of two of at most threads ("
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
  if (shared < 0 || dynamicShared < 0)
    return fail() << "shared memory sizes must not be negative";
  if (regime == RowRegime::Looped) {
    if (rows != 1)
      return fail() << "the looped regime takes one row per block (lanes = "
                       "threads), got rows = "
                    << rows;
    if (chunks != 0)
      return fail() << "the looped regime has no fixed chunks per lane, got "
                       "chunks = "
                    << chunks;
    if (partials == RowPartials::Registers || partials == RowPartials::Shared)
      return fail() << "the looped regime keeps its partial rows in global "
                       "memory, got partials = "
                    << stringifyRowPartials(partials);
    if (cluster != 1)
      return fail() << "a row split over a cluster is a registers-regime "
                       "row, got cluster = "
                    << cluster << " with regime = looped";
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
