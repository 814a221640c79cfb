//===- Manifest.cpp - the launch manifest norm-compile writes -------------===//
//
// Part of mlir-norm.
//
// The fields, their JSON types, requiredness and integer ranges, the enum
// names and the argument kinds come from norm/Support/ManifestSchema.h,
// read through FieldReader (a key the schema does not list is an error);
// what is left here is what the fields mean: the arguments' kinds, and the
// checks across fields and entries.
//
//===----------------------------------------------------------------------===//

#include "norm/Runtime/Manifest.h"

#include "FieldReader.h"

#include "norm/Runtime/Json.h"

#include <climits>

using namespace mlir::norm::runtime;
namespace manifest = mlir::norm::manifest;
namespace field = mlir::norm::manifest::field;
using mlir::norm::manifest::Field;

// A kernel parameter may have the rank of any argument.
static_assert(field::kParamRank.max == kMaxRank,
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

int32_t Manifest::findKind(ArgumentKind kind) const {
  for (size_t i = 0; kind != ArgumentKind::Other && i < arguments.size(); ++i)
    if (arguments[i].kind == kind)
      return int32_t(i);
  return -1;
}

namespace {

/// The per-row statistics: the row extents alone ([M], or [B, S] for a
/// rank-3 'x'), no N.
bool isStatistic(const ArgumentSpec &a) {
  return manifest::info(a.kind).shape == ArgumentShape::Statistic;
}

/// The per-column vectors, whose extent is N.
bool isVector(const ArgumentSpec &a) {
  return manifest::info(a.kind).shape == ArgumentShape::Vector;
}

/// "arguments[i] ('name')".
std::string argumentWhere(size_t i, const ArgumentSpec &a) {
  return "arguments[" + std::to_string(i) + "] ('" + a.name + "')";
}

/// "[?, 4096]".
std::string formatShape(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + (shape[i] == kRowsExtent ? std::string("?")
                                                    : std::to_string(shape[i]));
  return s + "]";
}

/// Reads one manifest, object by object; every check failure records the
/// first error with the path of the entry it is about.
class ManifestReader : public FieldReader {
public:
  explicit ManifestReader(Manifest &m) : m(m) {}

  bool read(const JsonValue &root);

private:
  /// The dtype field `f` of `object`.
  bool readDtype(const JsonValue &object, const Field &f,
                 const std::string &where, Dtype &out);
  /// The shape field `f` of `object`: rank 1 to `maxRank`, positive extents
  /// up to `maxExtent`, or the string `symbolName` (read as `symbol`); in a
  /// shape of rank 2 or more, the last extent is the symbol only if
  /// `trailingSymbol`.
  bool readShape(const JsonValue &object, const Field &f,
                 const std::string &where, std::string_view symbolName,
                 int64_t symbol, bool trailingSymbol, size_t maxRank,
                 int64_t maxExtent, const char *expected,
                 std::vector<int64_t> &out);
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

bool ManifestReader::readDtype(const JsonValue &object, const Field &f,
                               const std::string &where, Dtype &out) {
  std::string name;
  if (!getString(object, f, where, name))
    return false;
  if (std::optional<Dtype> d = manifest::parseDtype(name)) {
    out = *d;
    return true;
  }
  return fail(where, "unknown dtype '" + name + "' (expected " +
                         manifest::listNames(manifest::kDtypeNames) + ")");
}

bool ManifestReader::readShape(const JsonValue &object, const Field &f,
                               const std::string &where,
                               std::string_view symbolName, int64_t symbol,
                               bool trailingSymbol, size_t maxRank,
                               int64_t maxExtent, const char *expected,
                               std::vector<int64_t> &out) {
  const JsonValue *shape;
  if (!get(object, f, where, shape))
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
  if (!getString(v, field::kArgumentName, where, a.name))
    return false;
  if (a.name.empty())
    return fail(where, "empty \"name\"");
  where += " ('" + a.name + "')";
  if (!checkKeys(v, manifest::Object::Argument, where))
    return false;
  if (m.findArgument(a.name) >= 0)
    return fail(where, "duplicate argument name");

  // The kind, and the role it allows.
  std::string kind;
  if (!getString(v, field::kArgumentKind, where, kind))
    return false;
  std::optional<ArgumentKind> parsed = manifest::parseArgumentKind(kind);
  if (!parsed)
    return fail(where, "unknown kind '" + kind + "' (expected " +
                           manifest::listArgumentKinds() + ")");
  a.kind = *parsed;
  if (int32_t other = m.findKind(a.kind); other >= 0)
    return fail(where, "kind '" + kind + "' again (" +
                           argumentWhere(other, m.arguments[other]) +
                           " has it); only 'other' may be repeated");
  std::string role(manifest::toString(manifest::Role::Input));
  if (!getString(v, field::kArgumentRole, where, role))
    return false;
  std::optional<manifest::Role> parsedRole = manifest::parseRole(role);
  if (!parsedRole)
    return fail(where, "\"role\" must be " +
                           manifest::listNames(manifest::kRoleNames) +
                           ", got '" + role + "'");
  a.output = *parsedRole == manifest::Role::Output;
  const manifest::ArgumentKindInfo &info = manifest::info(a.kind);
  if (a.output ? !info.output : !info.input)
    return fail(where,
                "kind '" + kind + "' is " +
                    (info.output ? "an output" : "an input") +
                    ", but \"role\" is " + role +
                    (v.get(field::kArgumentRole.key) ? "" : " (absent)"));

  if (!readDtype(v, field::kArgumentDtype, where, a.dtype))
    return false;
  if (a.dtype == Dtype::I32)
    return fail(where, "dtype i32 is not supported for an argument");
  // A dynamic trailing extent would be a dynamic N, which "?" cannot tell
  // apart from a row extent: only the row extents may be dynamic, which are
  // all of them for the statistics ([B, S] of a rank-3 'x').
  if (!readShape(v, field::kArgumentShape, where, manifest::kRowsExtentName,
                 kRowsExtent, /*trailingSymbol=*/isStatistic(a), kMaxRank,
                 INT64_MAX, "positive integers or \"?\"", a.shape))
    return false;
  const JsonValue *strides;
  if (!get(v, field::kArgumentStrides, where, strides))
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
  if (!checkKeys(v, manifest::Object::Workspace, where))
    return false;
  WorkspaceSpec w;
  if (!readDtype(v, field::kWorkspaceDtype, where, w.dtype))
    return false;
  if (!readShape(v, field::kWorkspaceShape, where, manifest::kGroupsExtentName,
                 kGroupsExtent,
                 /*trailingSymbol=*/true, kMaxWorkspaceRank,
                 manifest::kMaxWorkspaceExtent,
                 "positive integers (at most 2^40) or \"groups\"", w.shape))
    return false;
  const JsonValue *written = nullptr;
  if (!get(v, field::kWorkspaceWritten, where, written))
    return false;
  w.written = written && written->getBool();
  m.workspaces.push_back(std::move(w));
  return true;
}

bool ManifestReader::readParam(const JsonValue &v, const std::string &where,
                               KernelParam &out) {
  if (!v.isObject())
    return fail(where, "must be an object, got " + kindOf(v));
  if (!checkKeys(v, manifest::Object::Param, where))
    return false;
  if (v.get(field::kParamUnsupported.key))
    return fail(where, "a parameter that is neither a function argument nor "
                       "a workspace; norm-compile could not describe it");
  const JsonValue *arg = v.get(field::kParamArgument.key);
  const JsonValue *ws = v.get(field::kParamWorkspace.key);
  if (bool(arg) == bool(ws))
    return fail(where, "needs exactly one of \"argument\" and \"workspace\"");
  out.isWorkspace = ws != nullptr;
  const Field &f = ws ? field::kParamWorkspace : field::kParamArgument;
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
  if (!getInteger(v, field::kParamRank, where, rank))
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
  if (!getString(v, field::kKernelName, where, k.name))
    return false;
  if (k.name.empty())
    return fail(where, "empty \"name\"");
  where += " ('" + k.name + "')";
  if (!checkKeys(v, manifest::Object::Kernel, where) ||
      !readKernelRecord(v, where, k, k.gridConstant))
    return false;
  if (std::string e =
          manifest::checkKernelRecord(k, manifest::Syntax::Manifest);
      !e.empty())
    return fail(where, e);
  if (k.grid == GridRule::Columns && m.n <= 0)
    return fail(where, "grid 'columns' needs N, but no argument has a static "
                       "trailing extent");

  const JsonValue *params;
  if (!get(v, field::kKernelParams, where, params))
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
  if (!getInteger(root, field::kManifestFormatVersion, "", m.formatVersion))
    return false;
  if (m.formatVersion != manifest::kFormatVersion)
    return fail("", "format_version " + std::to_string(m.formatVersion) +
                        " is not supported (this runtime reads " +
                        std::to_string(manifest::kFormatVersion) + ")" +
                        (m.formatVersion < manifest::kFormatVersion
                             ? ": an older norm-compile wrote it; compile "
                               "the kernels again (version 2 gives every "
                               "argument a \"kind\")"
                             : ""));
  if (!checkKeys(root, manifest::Object::Manifest, "") ||
      !getString(root, field::kManifestFunction, "", m.function) ||
      !getString(root, field::kManifestChip, "", m.chip) ||
      !getString(root, field::kManifestFormat, "", m.format))
    return false;
  int64_t threads = 0;
  if (!getInteger(root, field::kManifestThreads, "", threads))
    return false;

  int64_t specN = 0;
  const JsonValue *spec;
  if (!get(root, field::kManifestSpec, "", spec))
    return false;
  if (spec) {
    std::string ignored;
    if (!checkKeys(*spec, manifest::Object::Spec, "spec") ||
        !getString(*spec, field::kSpecOp, "spec", ignored) ||
        !getString(*spec, field::kSpecDtype, "spec", ignored) ||
        !getString(*spec, field::kSpecWeightDtype, "spec", ignored) ||
        !getString(*spec, field::kSpecStrategy, "spec", ignored) ||
        !getInteger(*spec, field::kSpecGroups, "spec", m.fixedGroups) ||
        !getInteger(*spec, field::kSpecN, "spec", specN))
      return false;
  }

  const JsonValue *arguments;
  if (!get(root, field::kManifestArguments, "", arguments))
    return false;
  for (size_t i = 0; i < arguments->getArray().size(); ++i)
    if (!readArgument(arguments->getArray()[i], i))
      return false;
  // N and the argument M is read from: the rank-2-or-more arguments but
  // the statistics, whose extents are all rows; 'x' if there is one.
  for (size_t i = 0; i < m.arguments.size(); ++i) {
    const ArgumentSpec &a = m.arguments[i];
    if (a.shape.size() < 2 || isStatistic(a))
      continue;
    if (m.n && a.shape.back() != m.n)
      return fail(
          argumentWhere(i, a),
          "trailing extent " + std::to_string(a.shape.back()) +
              " but an earlier row argument has N = " + std::to_string(m.n));
    m.n = a.shape.back();
    if (m.rowsArgument < 0 || a.kind == ArgumentKind::X)
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
  // Which arguments follow M and which N, by their kind; the vectors'
  // extent is checked here, once, the row arguments' row extents at every
  // launch.
  for (size_t i = 0; i < m.arguments.size(); ++i) {
    ArgumentSpec &a = m.arguments[i];
    a.vector = isVector(a);
    bool statistic = isStatistic(a);
    a.rows = !a.vector &&
             (a.shape.size() >= 2 || a.shape[0] == kRowsExtent || statistic);
    if (a.rows)
      a.rowRank =
          int32_t(statistic || a.shape.size() == 1 ? a.shape.size()
                                                   : a.shape.size() - 1);
    if (a.vector && (a.shape.size() != 1 || a.shape[0] != m.n))
      return fail(argumentWhere(i, a),
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
    return fail(argumentWhere(i, a),
                "shape " + formatShape(a.shape) + " has " + dims(a.rowRank) +
                    " but the rows argument '" + rowsArg.name + "' " +
                    formatShape(rowsArg.shape) + " has " +
                    dims(rowsArg.rowRank) +
                    (isStatistic(a)
                         ? "; the statistics have exactly the row extents, " +
                               formatShape(rowDims)
                         : "; every row argument has the same row extents"));
  }

  const JsonValue *workspaces;
  if (!get(root, field::kManifestWorkspaces, "", workspaces))
    return false;
  for (size_t i = 0; workspaces && i < workspaces->getArray().size(); ++i)
    if (!readWorkspace(workspaces->getArray()[i], i))
      return false;

  const JsonValue *kernels;
  if (!get(root, field::kManifestKernels, "", kernels))
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
