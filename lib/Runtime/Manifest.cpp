//===- Manifest.cpp - the launch manifest norm-compile writes -------------===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#include "norm/Runtime/Manifest.h"

#include "norm/Runtime/Json.h"

#include <climits>

using namespace mlir::norm::runtime;

const char *mlir::norm::runtime::dtypeName(Dtype dtype) {
  switch (dtype) {
  case Dtype::F32:
    return "f32";
  case Dtype::F16:
    return "f16";
  case Dtype::BF16:
    return "bf16";
  case Dtype::I32:
    return "i32";
  }
  return "?";
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

  /// `key` of `object` as a string; absent is an error if `required`.
  bool getString(const JsonValue &object, const char *key,
                 const std::string &where, bool required, std::string &out);
  /// `key` of `object` as an integer in [lo, hi].
  bool getInteger(const JsonValue &object, const char *key,
                  const std::string &where, bool required, int64_t lo,
                  int64_t hi, int64_t &out);

  bool readDtype(const JsonValue &object, const std::string &where, Dtype &out);
  bool readArgument(const JsonValue &v, size_t index);
  bool readWorkspace(const JsonValue &v, size_t index);
  bool readKernel(const JsonValue &v, size_t index);
  bool readParam(const JsonValue &v, const std::string &where,
                 KernelParam &out);

  Manifest &m;
};

} // namespace

bool ManifestReader::getString(const JsonValue &object, const char *key,
                               const std::string &where, bool required,
                               std::string &out) {
  const JsonValue *v = object.get(key);
  if (!v)
    return required ? fail(where, std::string("missing \"") + key + "\"")
                    : true;
  if (!v->isString())
    return fail(where, std::string("\"") + key + "\" must be a string, got " +
                           kindOf(*v));
  out = v->getString();
  return true;
}

bool ManifestReader::getInteger(const JsonValue &object, const char *key,
                                const std::string &where, bool required,
                                int64_t lo, int64_t hi, int64_t &out) {
  const JsonValue *v = object.get(key);
  if (!v)
    return required ? fail(where, std::string("missing \"") + key + "\"")
                    : true;
  if (!v->isInteger())
    return fail(where, std::string("\"") + key + "\" must be an integer, got " +
                           kindOf(*v));
  if (v->getInteger() < lo || v->getInteger() > hi)
    return fail(where, std::string("\"") + key + "\" must be in [" +
                           std::to_string(lo) + ", " + std::to_string(hi) +
                           "], got " + std::to_string(v->getInteger()));
  out = v->getInteger();
  return true;
}

bool ManifestReader::readDtype(const JsonValue &object,
                               const std::string &where, Dtype &out) {
  std::string name;
  if (!getString(object, "dtype", where, /*required=*/true, name))
    return false;
  for (Dtype d : {Dtype::F32, Dtype::F16, Dtype::BF16, Dtype::I32})
    if (name == dtypeName(d)) {
      out = d;
      return true;
    }
  return fail(where,
              "unknown dtype '" + name + "' (expected f32, f16, bf16 or i32)");
}

bool ManifestReader::readArgument(const JsonValue &v, size_t index) {
  std::string where = "arguments[" + std::to_string(index) + "]";
  if (!v.isObject())
    return fail(where, "must be an object, got " + kindOf(v));
  ArgumentSpec a;
  if (!getString(v, "name", where, /*required=*/true, a.name))
    return false;
  if (a.name.empty())
    return fail(where, "empty \"name\"");
  where += " ('" + a.name + "')";
  if (m.findArgument(a.name) >= 0)
    return fail(where, "duplicate argument name");
  std::string role = "input";
  if (!getString(v, "role", where, /*required=*/false, role))
    return false;
  if (role != "input" && role != "output")
    return fail(where, "\"role\" must be input or output, got '" + role + "'");
  a.output = role == "output";
  if (!readDtype(v, where, a.dtype))
    return false;
  if (a.dtype == Dtype::I32)
    return fail(where, "dtype i32 is not supported for an argument");
  const JsonValue *shape = v.get("shape");
  if (!shape || !shape->isArray())
    return fail(where, "\"shape\" must be an array");
  if (shape->getArray().empty() || shape->getArray().size() > 2)
    return fail(where, "rank " + std::to_string(shape->getArray().size()) +
                           " is not supported (1 or 2)");
  for (size_t d = 0; d < shape->getArray().size(); ++d) {
    const JsonValue &e = shape->getArray()[d];
    if (e.isString() && e.getString() == "?") {
      // A dynamic trailing extent would be a dynamic N, which "?" cannot
      // tell apart from M.
      if (d != 0)
        return fail(where, "only the leading extent (the row count M) may "
                           "be dynamic");
      a.shape.push_back(kRowsExtent);
    } else if (e.isInteger() && e.getInteger() > 0) {
      a.shape.push_back(e.getInteger());
    } else {
      return fail(where, "shape entries must be positive integers or \"?\"");
    }
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
  const JsonValue *shape = v.get("shape");
  if (!shape || !shape->isArray())
    return fail(where, "\"shape\" must be an array");
  if (shape->getArray().empty() || shape->getArray().size() > 2)
    return fail(where, "rank " + std::to_string(shape->getArray().size()) +
                           " is not supported (1 or 2)");
  for (const JsonValue &e : shape->getArray()) {
    if (e.isString() && e.getString() == "groups")
      w.shape.push_back(kGroupsExtent);
    else if (e.isInteger() && e.getInteger() > 0 &&
             e.getInteger() <= (int64_t(1) << 40))
      w.shape.push_back(e.getInteger());
    else
      return fail(where, "shape entries must be positive integers (at most "
                         "2^40) or \"groups\"");
  }
  m.workspaces.push_back(std::move(w));
  return true;
}

bool ManifestReader::readParam(const JsonValue &v, const std::string &where,
                               KernelParam &out) {
  if (!v.isObject())
    return fail(where, "must be an object, got " + kindOf(v));
  if (v.get("unsupported"))
    return fail(where, "a parameter that is neither a function argument nor "
                       "a workspace; norm-compile could not describe it");
  const JsonValue *arg = v.get("argument");
  const JsonValue *ws = v.get("workspace");
  if (bool(arg) == bool(ws))
    return fail(where, "needs exactly one of \"argument\" and \"workspace\"");
  out.isWorkspace = ws != nullptr;
  const char *key = ws ? "workspace" : "argument";
  size_t count = ws ? m.workspaces.size() : m.arguments.size();
  int64_t index = 0;
  if (!getInteger(v, key, where, /*required=*/true, 0, INT32_MAX, index))
    return false;
  if (size_t(index) >= count)
    return fail(where, std::string(key) + " " + std::to_string(index) +
                           " out of range (" + std::to_string(count) + " " +
                           key + "s)");
  out.index = int32_t(index);
  int64_t rank = 0;
  if (!getInteger(v, "rank", where, /*required=*/true, 0, 8, rank))
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
  if (!getString(v, "name", where, /*required=*/true, k.name))
    return false;
  if (k.name.empty())
    return fail(where, "empty \"name\"");
  where += " ('" + k.name + "')";
  if (!getString(v, "kind", where, /*required=*/false, k.kind))
    return false;
  if (!getInteger(v, "block", where, /*required=*/true, 1, 1024, k.block))
    return false;

  const JsonValue *grid = v.get("grid");
  if (!grid)
    return fail(where, "missing \"grid\"");
  if (grid->isInteger()) {
    if (!getInteger(v, "grid", where, true, 1, INT32_MAX, k.gridConstant))
      return false;
    k.grid = GridRule::Constant;
  } else if (grid->isString()) {
    const std::string &rule = grid->getString();
    if (rule == "workspace_rows")
      k.grid = GridRule::WorkspaceRows;
    else if (rule == "programs")
      k.grid = GridRule::Programs;
    else if (rule == "row_blocks")
      k.grid = GridRule::RowBlocks;
    else if (rule == "columns")
      k.grid = GridRule::Columns;
    else
      return fail(where, "unknown grid rule '" + rule +
                             "' (expected a number, workspace_rows, "
                             "programs, row_blocks or columns)");
  } else {
    return fail(where, "\"grid\" must be an integer or a string, got " +
                           kindOf(*grid));
  }
  if (k.grid == GridRule::RowBlocks &&
      !getInteger(v, "rows", where, /*required=*/true, 1, INT32_MAX, k.rows))
    return false;
  if (k.grid == GridRule::Columns && m.n <= 0)
    return fail(where, "grid 'columns' needs N, but no argument has a static "
                       "trailing extent");

  const JsonValue *params = v.get("params");
  if (!params || !params->isArray())
    return fail(where, "\"params\" must be an array");
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

bool ManifestReader::read(const JsonValue &root) {
  if (!root.isObject())
    return fail("", "the top level must be an object, got " + kindOf(root));
  if (!getInteger(root, "format_version", "", /*required=*/true, INT64_MIN,
                  INT64_MAX, m.formatVersion))
    return false;
  if (m.formatVersion != 1)
    return fail("", "format_version " + std::to_string(m.formatVersion) +
                        " is not supported (this runtime reads 1)");
  if (!getString(root, "function", "", false, m.function) ||
      !getString(root, "chip", "", false, m.chip) ||
      !getString(root, "format", "", false, m.format))
    return false;

  int64_t specN = 0;
  if (const JsonValue *spec = root.get("spec")) {
    if (!spec->isObject())
      return fail("spec", "must be an object, got " + kindOf(*spec));
    if (!getInteger(*spec, "groups", "spec", false, 0, INT32_MAX,
                    m.fixedGroups) ||
        !getInteger(*spec, "n", "spec", false, 0, INT64_MAX, specN))
      return false;
  }

  const JsonValue *arguments = root.get("arguments");
  if (!arguments || !arguments->isArray())
    return fail("", "\"arguments\" must be an array");
  for (size_t i = 0; i < arguments->getArray().size(); ++i)
    if (!readArgument(arguments->getArray()[i], i))
      return false;

  // N and the argument M is read from.
  for (size_t i = 0; i < m.arguments.size(); ++i) {
    const ArgumentSpec &a = m.arguments[i];
    if (a.shape.size() != 2)
      continue;
    if (m.n && a.shape[1] != m.n)
      return fail(
          "arguments[" + std::to_string(i) + "] ('" + a.name + "')",
          "trailing extent " + std::to_string(a.shape[1]) +
              " but an earlier row argument has N = " + std::to_string(m.n));
    m.n = a.shape[1];
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
    return fail("", "no row argument (rank 2, or with a leading \"?\") to "
                    "take M from");

  if (const JsonValue *workspaces = root.get("workspaces")) {
    if (!workspaces->isArray())
      return fail("", "\"workspaces\" must be an array");
    for (size_t i = 0; i < workspaces->getArray().size(); ++i)
      if (!readWorkspace(workspaces->getArray()[i], i))
        return false;
  }

  const JsonValue *kernels = root.get("kernels");
  if (!kernels || !kernels->isArray())
    return fail("", "\"kernels\" must be an array");
  for (size_t i = 0; i < kernels->getArray().size(); ++i)
    if (!readKernel(kernels->getArray()[i], i))
      return false;

  // A workspace no "zero" kernel clears (the atomic strategy's single
  // partial row is zeroed on the host side of the compiled function, which
  // the manifest does not describe) is cleared by the runtime.
  m.clearWorkspace.assign(m.workspaces.size(), true);
  for (const KernelSpec &k : m.kernels)
    if (k.kind == "zero")
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
