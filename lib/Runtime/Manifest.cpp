//===- Manifest.cpp - the launch manifest norm-compile writes -------------===//
//
// Part of mlir-norm.
//
// The fields, their JSON types, requiredness and integer ranges, and the
// enum names come from norm/Support/ManifestSchema.h; what is left here are
// the checks across fields and entries.
//
//===----------------------------------------------------------------------===//

#include "norm/Runtime/Manifest.h"

#include "norm/Runtime/Json.h"

#include <climits>

using namespace mlir::norm::runtime;
namespace manifest = mlir::norm::manifest;
namespace field = mlir::norm::manifest::field;
using mlir::norm::manifest::Field;
using mlir::norm::manifest::FieldType;

// A kernel parameter may have the rank of any argument.
static_assert(field::kRank.max == kMaxRank,
              "the schema's parameter ranks and the runtime's argument ranks");

const char *mlir::norm::runtime::dtypeName(Dtype dtype) {
  return manifest::toString(dtype).data();
}

int64_t mlir::norm::runtime::dtypeBytes(Dtype dtype) {
  return dtype == Dtype::F16 || dtype == Dtype::BF16 ? 2 : 4;
}

int64_t KernelSpec::numScalarParams() const {
  int64_t count = 0;
  for (const KernelParam &p : params)
    count += 3 + 2 * int64_t(p.rank);
  return count;
}

int32_t Manifest::findArgument(std::string_view name) const {
  for (size_t i = 0; i < arguments.size(); ++i)
    if (arguments[i].name == name)
      return int32_t(i);
  return -1;
}

namespace {

/// The per-column vectors, whose extent is N.
bool isVectorName(std::string_view name) {
  return name == "weight" || name == "bias" || name == "dweight" ||
         name == "dbias";
}

/// The per-row statistics: the row extents alone ([M], or [B, S] for a
/// rank-3 'x'), no N.
bool isRowStatisticName(std::string_view name) {
  return name == "mean" || name == "rstd";
}

/// "[?, 4096]".
std::string formatShape(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + (shape[i] == kRowsExtent ? std::string("?")
                                                    : std::to_string(shape[i]));
  return s + "]";
}

/// Reads one manifest; every check failure records the first error with the
/// path of the entry it is about.
class ManifestReader {
public:
  explicit ManifestReader(Manifest &m) : m(m) {}

  bool read(const JsonValue &root);
  std::string error;

private:
  bool fail(const std::string &where, const std::string &what) {
    if (error.empty())
      error = "manifest: " + (where.empty() ? "" : where + ": ") + what;
    return false;
  }

  static std::string kindOf(const JsonValue &v) {
    return JsonValue::describe(v.getKind());
  }

  /// `f` of `object`, checked against its schema type (and range); `out` is
  /// null if it is absent and optional. False after a failure.
  bool get(const JsonValue &object, const Field &f, const std::string &where,
           const JsonValue *&out);
  bool getString(const JsonValue &object, const Field &f,
                 const std::string &where, std::string &out);
  bool getInteger(const JsonValue &object, const Field &f,
                  const std::string &where, int64_t &out);

  bool readDtype(const JsonValue &object, const std::string &where, Dtype &out);
  /// The "shape" of `object`: rank 1 to `maxRank`, positive extents up to
  /// `maxExtent`, or the string `symbolName` (read as `symbol`); in a shape
  /// of rank 2 or more, the last extent is the symbol only if
  /// `trailingSymbol`.
  bool readShape(const JsonValue &object, const std::string &where,
                 std::string_view symbolName, int64_t symbol,
                 bool trailingSymbol, size_t maxRank, int64_t maxExtent,
                 const char *expected, std::vector<int64_t> &out);
  bool readArgument(const JsonValue &v, size_t index);
  bool readWorkspace(const JsonValue &v, size_t index);
  bool readKernel(const JsonValue &v, size_t index);
  bool readParam(const JsonValue &v, const std::string &where,
                 KernelParam &out);
  /// The kernels' parameter lists against the arguments: none taken twice
  /// by one kernel, a `dx` kernel takes every row argument, a `forward`
  /// kernel every argument, and every argument some kernel.
  bool checkKernelParams();

  Manifest &m;
};

} // namespace

bool ManifestReader::get(const JsonValue &object, const Field &f,
                         const std::string &where, const JsonValue *&out) {
  std::string key = "\"" + std::string(f.key) + "\"";
  out = object.get(f.key);
  // Arrays and objects have one message for absent and mistyped.
  switch (f.type) {
  case FieldType::Array:
    if (out ? out->isArray() : !f.required)
      return true;
    return fail(where, key + " must be an array");
  case FieldType::Object:
    if (!out || out->isObject())
      return out || !f.required ? true : fail(where, "missing " + key);
    return fail(where.empty() ? std::string(f.key) : where + "." + std::string(f.key),
                "must be an object, got " + kindOf(*out));
  default:
    break;
  }
  if (!out)
    return f.required ? fail(where, "missing " + key) : true;
  const char *expected = nullptr;
  switch (f.type) {
  case FieldType::String:
    if (!out->isString())
      expected = "a string";
    break;
  case FieldType::Integer:
    if (!out->isInteger())
      expected = "an integer";
    break;
  case FieldType::Bool:
    if (!out->isBool())
      expected = "a boolean";
    break;
  case FieldType::GridValue:
    if (!out->isInteger() && !out->isString())
      expected = "an integer or a string";
    break;
  default:
    break;
  }
  if (expected)
    return fail(where, key + " must be " + expected + ", got " + kindOf(*out));
  if (out->isInteger() &&
      (out->getInteger() < f.min || out->getInteger() > f.max))
    return fail(where, key + " must be in [" + std::to_string(f.min) + ", " +
                           std::to_string(f.max) + "], got " +
                           std::to_string(out->getInteger()));
  return true;
}

bool ManifestReader::getString(const JsonValue &object, const Field &f,
                               const std::string &where, std::string &out) {
  const JsonValue *v;
  if (!get(object, f, where, v))
    return false;
  if (v)
    out = v->getString();
  return true;
}

bool ManifestReader::getInteger(const JsonValue &object, const Field &f,
                                const std::string &where, int64_t &out) {
  const JsonValue *v;
  if (!get(object, f, where, v))
    return false;
  if (v)
    out = v->getInteger();
  return true;
}

bool ManifestReader::readDtype(const JsonValue &object,
                               const std::string &where, Dtype &out) {
  std::string name;
  if (!getString(object, field::kDtype, where, name))
    return false;
  if (std::optional<Dtype> d = manifest::parseDtype(name)) {
    out = *d;
    return true;
  }
  return fail(where, "unknown dtype '" + name + "' (expected " +
                         manifest::listNames(manifest::kDtypeNames) + ")");
}

bool ManifestReader::readShape(const JsonValue &object,
                               const std::string &where,
                               std::string_view symbolName, int64_t symbol,
                               bool trailingSymbol, size_t maxRank,
                               int64_t maxExtent, const char *expected,
                               std::vector<int64_t> &out) {
  const JsonValue *shape;
  if (!get(object, field::kShape, where, shape))
    return false;
  const std::vector<JsonValue> &dims = shape->getArray();
  if (dims.empty() || dims.size() > maxRank)
    return fail(where, "rank " + std::to_string(dims.size()) +
                           " is not supported (" +
                           (maxRank == 2 ? std::string("1 or 2")
                                         : "1 to " + std::to_string(maxRank)) +
                           ")");
  for (size_t d = 0; d < dims.size(); ++d) {
    const JsonValue &e = dims[d];
    if (e.isString() && e.getString() == symbolName) {
      if (!trailingSymbol && d != 0 && d + 1 == dims.size())
        return fail(where, "only the row extents (all but the last, N) may "
                           "be dynamic");
      out.push_back(symbol);
    } else if (e.isInteger() && e.getInteger() > 0 &&
               e.getInteger() <= maxExtent) {
      out.push_back(e.getInteger());
    } else {
      return fail(where, std::string("shape entries must be ") + expected);
    }
  }
  return true;
}

bool ManifestReader::readArgument(const JsonValue &v, size_t index) {
  std::string where = "arguments[" + std::to_string(index) + "]";
  if (!v.isObject())
    return fail(where, "must be an object, got " + kindOf(v));
  ArgumentSpec a;
  if (!getString(v, field::kName, where, a.name))
    return false;
  if (a.name.empty())
    return fail(where, "empty \"name\"");
  where += " ('" + a.name + "')";
  if (m.findArgument(a.name) >= 0)
    return fail(where, "duplicate argument name");
  std::string role(manifest::kRoleInput);
  if (!getString(v, field::kRole, where, role))
    return false;
  if (role != manifest::kRoleInput && role != manifest::kRoleOutput)
    return fail(where, "\"role\" must be input or output, got '" + role + "'");
  a.output = role == manifest::kRoleOutput;
  if (!readDtype(v, where, a.dtype))
    return false;
  if (a.dtype == Dtype::I32)
    return fail(where, "dtype i32 is not supported for an argument");
  // A dynamic trailing extent would be a dynamic N, which "?" cannot tell
  // apart from a row extent: only the row extents may be dynamic, which are
  // all of them for the statistics ([B, S] of a rank-3 'x').
  if (!readShape(v, where, manifest::kRowsExtentName, kRowsExtent,
                 /*trailingSymbol=*/isRowStatisticName(a.name), kMaxRank,
                 INT64_MAX, "positive integers or \"?\"", a.shape))
    return false;
  const JsonValue *strides;
  if (!get(v, field::kStrides, where, strides))
    return false;
  if (strides) {
    const std::vector<JsonValue> &list = strides->getArray();
    if (list.size() != a.shape.size())
      return fail(where, "\"strides\" has " + std::to_string(list.size()) +
                             " entries for a shape of rank " +
                             std::to_string(a.shape.size()));
    for (const JsonValue &e : list) {
      if (e.isString() && e.getString() == manifest::kRowsExtentName)
        a.strides.push_back(kRowsExtent);
      else if (e.isInteger() && e.getInteger() >= 0)
        a.strides.push_back(e.getInteger());
      else
        return fail(where, "\"strides\" entries must be non-negative "
                           "integers or \"?\"");
    }
    if (a.strides.back() != 1)
      return fail(where, "the innermost stride must be 1");
  }
  m.arguments.push_back(std::move(a));
  return true;
}

bool ManifestReader::readWorkspace(const JsonValue &v, size_t index) {
  std::string where = "workspaces[" + std::to_string(index) + "]";
  if (!v.isObject())
    return fail(where, "must be an object, got " + kindOf(v));
  WorkspaceSpec w;
  if (!readDtype(v, where, w.dtype))
    return false;
  if (!readShape(v, where, manifest::kGroupsExtentName, kGroupsExtent,
                 /*trailingSymbol=*/true, kMaxWorkspaceRank,
                 manifest::kMaxWorkspaceExtent,
                 "positive integers (at most 2^40) or \"groups\"", w.shape))
    return false;
  const JsonValue *written = nullptr;
  if (!get(v, field::kWritten, where, written))
    return false;
  w.written = written && written->getBool();
  m.workspaces.push_back(std::move(w));
  return true;
}

bool ManifestReader::readParam(const JsonValue &v, const std::string &where,
                               KernelParam &out) {
  if (!v.isObject())
    return fail(where, "must be an object, got " + kindOf(v));
  if (v.get(field::kUnsupported.key))
    return fail(where, "a parameter that is neither a function argument nor "
                       "a workspace; norm-compile could not describe it");
  const JsonValue *arg = v.get(field::kArgument.key);
  const JsonValue *ws = v.get(field::kWorkspace.key);
  if (bool(arg) == bool(ws))
    return fail(where, "needs exactly one of \"argument\" and \"workspace\"");
  out.isWorkspace = ws != nullptr;
  const Field &f = ws ? field::kWorkspace : field::kArgument;
  std::string key(f.key);
  size_t count = ws ? m.workspaces.size() : m.arguments.size();
  int64_t index = 0;
  if (!getInteger(v, f, where, index))
    return false;
  if (size_t(index) >= count)
    return fail(where, key + " " + std::to_string(index) + " out of range (" +
                           std::to_string(count) + " " + key + "s)");
  out.index = int32_t(index);
  int64_t rank = 0;
  if (!getInteger(v, field::kRank, where, rank))
    return false;
  size_t expected =
      ws ? m.workspaces[index].shape.size() : m.arguments[index].shape.size();
  if (size_t(rank) != expected)
    return fail(where, "rank " + std::to_string(rank) + " but " + key + " " +
                           std::to_string(index) + " has rank " +
                           std::to_string(expected));
  out.rank = int32_t(rank);
  return true;
}

bool ManifestReader::readKernel(const JsonValue &v, size_t index) {
  std::string where = "kernels[" + std::to_string(index) + "]";
  if (!v.isObject())
    return fail(where, "must be an object, got " + kindOf(v));
  KernelSpec k;
  if (!getString(v, field::kName, where, k.name))
    return false;
  if (k.name.empty())
    return fail(where, "empty \"name\"");
  where += " ('" + k.name + "')";
  const JsonValue *kind;
  if (!get(v, field::kKind, where, kind))
    return false;
  if (kind && !(k.kind = manifest::parseKernelKind(kind->getString())))
    return fail(where, "unknown kind '" + kind->getString() + "' (expected " +
                           manifest::listNames(manifest::kKernelKindNames) +
                           ")");
  if (!getInteger(v, field::kBlock, where, k.block))
    return false;

  const JsonValue *grid;
  if (!get(v, field::kGrid, where, grid))
    return false;
  if (grid->isInteger()) {
    k.grid = GridRule::Constant;
    k.gridConstant = grid->getInteger();
  } else {
    // A constant grid is a number, never the rule's name.
    std::optional<GridRule> rule = manifest::parseGridRule(grid->getString());
    if (!rule || *rule == GridRule::Constant)
      return fail(where, "unknown grid rule '" + grid->getString() +
                             "' (expected a number, " +
                             manifest::listNames(manifest::kGridRuleNames, 1) +
                             ")");
    k.grid = *rule;
  }
  if (k.grid == GridRule::RowBlocks) {
    Field rows = field::kRows;
    rows.required = true;
    if (!getInteger(v, rows, where, k.rows))
      return false;
  }
  k.columns = k.block;
  if (!getInteger(v, field::kColumns, where, k.columns))
    return false;
  if (k.grid == GridRule::Columns && m.n <= 0)
    return fail(where, "grid 'columns' needs N, but no argument has a static "
                       "trailing extent");
  // Clusters split a program's rows across blocks: only the `programs`
  // rule, or a constant number of programs (a fixed G), launches G of them
  // (G * cluster blocks).
  if (!getInteger(v, field::kCluster, where, k.cluster))
    return false;
  if (!getInteger(v, field::kDynamicShared, where, k.dynamicSharedBytes))
    return false;
  if (k.cluster > 1 && k.grid != GridRule::Programs &&
      k.grid != GridRule::Constant)
    return fail(where, "\"cluster\": " + std::to_string(k.cluster) +
                           " needs grid 'programs' or a constant number of "
                           "programs (clusters of blocks), got grid '" +
                           std::string(manifest::toString(k.grid)) + "'");

  const JsonValue *params;
  if (!get(v, field::kParams, where, params))
    return false;
  for (size_t i = 0; i < params->getArray().size(); ++i) {
    KernelParam p;
    if (!readParam(params->getArray()[i],
                   where + ".params[" + std::to_string(i) + "]", p))
      return false;
    k.params.push_back(p);
  }

  if (k.grid == GridRule::WorkspaceRows) {
    const WorkspaceSpec *first = nullptr;
    for (const KernelParam &p : k.params) {
      if (!p.isWorkspace)
        continue;
      const WorkspaceSpec &w = m.workspaces[p.index];
      if (first && first->shape[0] != w.shape[0])
        return fail(where, "grid 'workspace_rows' is ambiguous: its "
                           "workspaces differ in their leading extent");
      first = &w;
    }
    if (!first)
      return fail(where, "grid 'workspace_rows' but no workspace parameter");
  }
  m.kernels.push_back(std::move(k));
  return true;
}

bool ManifestReader::checkKernelParams() {
  std::vector<bool> taken(m.arguments.size(), false);
  for (size_t k = 0; k < m.kernels.size(); ++k) {
    const KernelSpec &spec = m.kernels[k];
    std::string where =
        "kernels[" + std::to_string(k) + "] ('" + spec.name + "')";
    std::vector<int32_t> param(m.arguments.size(), -1);
    for (size_t j = 0; j < spec.params.size(); ++j) {
      const KernelParam &p = spec.params[j];
      if (p.isWorkspace)
        continue;
      if (param[p.index] >= 0)
        return fail(where, "params[" + std::to_string(param[p.index]) +
                               "] and params[" + std::to_string(j) +
                               "] both take argument " +
                               std::to_string(p.index) + " ('" +
                               m.arguments[p.index].name + "')");
      param[p.index] = int32_t(j);
      taken[p.index] = true;
    }
    if (spec.kind != KernelKind::Dx && spec.kind != KernelKind::Forward)
      continue;
    bool dx = spec.kind == KernelKind::Dx;
    for (size_t i = 0; i < m.arguments.size(); ++i)
      if (param[i] < 0 && (!dx || m.arguments[i].rows))
        return fail(where, std::string("a '") + (dx ? "dx" : "forward") +
                               "' kernel takes every " +
                               (dx ? "row argument" : "argument") +
                               ", but not argument " + std::to_string(i) +
                               " ('" + m.arguments[i].name + "')");
  }
  for (size_t i = 0; i < m.arguments.size(); ++i)
    if (!taken[i])
      return fail("arguments[" + std::to_string(i) + "] ('" +
                      m.arguments[i].name + "')",
                  "no kernel takes it as a parameter");
  return true;
}

bool ManifestReader::read(const JsonValue &root) {
  if (!root.isObject())
    return fail("", "the top level must be an object, got " + kindOf(root));
  if (!getInteger(root, field::kFormatVersion, "", m.formatVersion))
    return false;
  if (m.formatVersion != manifest::kFormatVersion)
    return fail("", "format_version " + std::to_string(m.formatVersion) +
                        " is not supported (this runtime reads " +
                        std::to_string(manifest::kFormatVersion) + ")");
  if (!getString(root, field::kFunction, "", m.function) ||
      !getString(root, field::kChip, "", m.chip) ||
      !getString(root, field::kFormat, "", m.format))
    return false;

  int64_t specN = 0;
  const JsonValue *spec;
  if (!get(root, field::kSpec, "", spec))
    return false;
  if (spec && (!getInteger(*spec, field::kSpecGroups, "spec", m.fixedGroups) ||
               !getInteger(*spec, field::kSpecN, "spec", specN)))
    return false;

  const JsonValue *arguments;
  if (!get(root, field::kArguments, "", arguments))
    return false;
  for (size_t i = 0; i < arguments->getArray().size(); ++i)
    if (!readArgument(arguments->getArray()[i], i))
      return false;
  // N and the argument M is read from: the rank-2-or-more arguments but
  // the statistics, whose extents are all rows.
  for (size_t i = 0; i < m.arguments.size(); ++i) {
    const ArgumentSpec &a = m.arguments[i];
    if (a.shape.size() < 2 || isRowStatisticName(a.name))
      continue;
    if (m.n && a.shape.back() != m.n)
      return fail(
          "arguments[" + std::to_string(i) + "] ('" + a.name + "')",
          "trailing extent " + std::to_string(a.shape.back()) +
              " but an earlier row argument has N = " + std::to_string(m.n));
    m.n = a.shape.back();
    if (m.rowsArgument < 0 || a.name == "x")
      m.rowsArgument = int32_t(i);
  }
  if (m.rowsArgument < 0)
    for (size_t i = 0; i < m.arguments.size(); ++i)
      if (m.arguments[i].shape[0] == kRowsExtent) {
        m.rowsArgument = int32_t(i);
        break;
      }
  if (specN && m.n && specN != m.n)
    return fail("spec",
                "n = " + std::to_string(specN) +
                    " but the row arguments have N = " + std::to_string(m.n));
  if (!m.n)
    m.n = specN;
  if (m.rowsArgument < 0)
    return fail("", "no row argument (rank 2 or more, or with a leading "
                    "\"?\") to take M from");
  // Which arguments follow M and which N; the vectors' extent is checked
  // here, once, the row arguments' row extents at every launch.
  for (size_t i = 0; i < m.arguments.size(); ++i) {
    ArgumentSpec &a = m.arguments[i];
    a.vector = isVectorName(a.name);
    bool statistic = isRowStatisticName(a.name);
    a.rows = !a.vector &&
             (a.shape.size() >= 2 || a.shape[0] == kRowsExtent || statistic);
    if (a.rows)
      a.rowRank =
          int32_t(statistic || a.shape.size() == 1 ? a.shape.size()
                                                   : a.shape.size() - 1);
    if (a.vector && (a.shape.size() != 1 || a.shape[0] != m.n))
      return fail("arguments[" + std::to_string(i) + "] ('" + a.name + "')",
                  "a per-column vector must have shape [N] = [" +
                      (m.n ? std::to_string(m.n) : std::string("?")) +
                      "], got " + formatShape(a.shape) +
                      (m.n ? "" : " (the manifest gives no N)"));
  }
  // Every row argument has the rows argument's row extents (a launch
  // compares them one by one), so as many of them: the kernels index each
  // row argument with the same row. A manifest where they differ could
  // never be launched; say so now.
  const ArgumentSpec &rowsArg = m.arguments[m.rowsArgument];
  std::vector<int64_t> rowDims(rowsArg.shape.begin(),
                               rowsArg.shape.begin() + rowsArg.rowRank);
  for (size_t i = 0; i < m.arguments.size(); ++i) {
    const ArgumentSpec &a = m.arguments[i];
    if (!a.rows || a.rowRank == rowsArg.rowRank)
      continue;
    auto dims = [](int32_t k) {
      return std::to_string(k) + (k == 1 ? " row extent" : " row extents");
    };
    return fail("arguments[" + std::to_string(i) + "] ('" + a.name + "')",
                "shape " + formatShape(a.shape) + " has " + dims(a.rowRank) +
                    " but the rows argument '" + rowsArg.name + "' " +
                    formatShape(rowsArg.shape) + " has " +
                    dims(rowsArg.rowRank) +
                    (isRowStatisticName(a.name)
                         ? "; the statistics have exactly the row extents, " +
                               formatShape(rowDims)
                         : "; every row argument has the same row extents"));
  }

  const JsonValue *workspaces;
  if (!get(root, field::kWorkspaces, "", workspaces))
    return false;
  for (size_t i = 0; workspaces && i < workspaces->getArray().size(); ++i)
    if (!readWorkspace(workspaces->getArray()[i], i))
      return false;

  const JsonValue *kernels;
  if (!get(root, field::kKernels, "", kernels))
    return false;
  for (size_t i = 0; i < kernels->getArray().size(); ++i)
    if (!readKernel(kernels->getArray()[i], i))
      return false;
  if (m.kernels.empty())
    return fail("", "\"kernels\" is empty; a function launches at least "
                    "one kernel");
  if (!checkKernelParams())
    return false;

  // A workspace no `zero` kernel clears (the atomic strategy's single
  // partial row is zeroed on the host side of the compiled function, which
  // the manifest does not describe) is cleared by the runtime, unless a
  // kernel writes it whole first (`written`).
  m.clearWorkspace.assign(m.workspaces.size(), true);
  for (size_t i = 0; i < m.workspaces.size(); ++i)
    if (m.workspaces[i].written)
      m.clearWorkspace[i] = false;
  for (const KernelSpec &k : m.kernels)
    if (k.kind == KernelKind::Zero)
      for (const KernelParam &p : k.params)
        if (p.isWorkspace)
          m.clearWorkspace[p.index] = false;
  return true;
}

bool mlir::norm::runtime::parseManifest(std::string_view json,
                                        Manifest &manifest,
                                        std::string &error) {
  JsonValue root;
  std::string jsonError;
  if (!parseJson(json, root, jsonError)) {
    error = "manifest: invalid JSON: " + jsonError;
    return false;
  }
  manifest = Manifest();
  ManifestReader reader(manifest);
  if (!reader.read(root)) {
    error = reader.error;
    return false;
  }
  return true;
}
