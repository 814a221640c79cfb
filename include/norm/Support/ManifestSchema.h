//===- ManifestSchema.h - the launch manifest's schema ----------*- C++ -*-===//
//
// Part of mlir-norm.
//
// The one definition of the JSON manifest norm-compile writes and libnormrt
// reads (docs/Runtime.md, "The manifest"): its format version, the enums
// with their one set of names, the argument kinds and what each implies,
// and every field (stamped from ManifestSchema.def) with its JSON type,
// whether it is required and, for integers, its range. KernelRecord is a
// kernel's launch record, what the `#norm.kernel` attribute stores; its
// members are the table's kernel fields. norm-compile's writer, the
// runtime's reader (lib/Runtime/Manifest.cpp), the attribute
// (NormDialect.cpp) and the schema libnormrt exports to Python
// (normrt_manifest_schema) all iterate these tables.
//
// No MLIR or LLVM dependency: the runtime includes it.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_SUPPORT_MANIFESTSCHEMA_H
#define NORM_SUPPORT_MANIFESTSCHEMA_H

#include <climits>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

namespace mlir::norm::manifest {

/// The `format_version` written and the only one read. 2: every argument
/// has a "kind"; every kernel a "kind"; unknown keys are refused.
constexpr int64_t kFormatVersion = 2;

//===----------------------------------------------------------------------===//
// Enums and their names
//===----------------------------------------------------------------------===//

/// Element types of arguments and workspaces; the first three equal the C
/// API's NormrtDtype.
enum class Dtype : int32_t { F32 = 0, F16 = 1, BF16 = 2, I32 = 3 };
inline constexpr std::string_view kDtypeNames[] = {"f32", "f16", "bf16",
                                                   "i32"};

/// What a kernel does. The runtime clears a workspace before the first
/// kernel unless a `zero` kernel takes it or it is `written`.
enum class KernelKind : int32_t { Zero, Dx, Reduce, Forward };
inline constexpr std::string_view kKernelKindNames[] = {"zero", "dx", "reduce",
                                                        "forward"};

/// How a kernel's grid (blocks in x) follows from M. In JSON `grid` is a
/// number for Constant, else the rule's name.
enum class GridRule : int32_t {
  Constant,      ///< `grid`: a number
  WorkspaceRows, ///< the leading extent of the kernel's workspaces (G or a
                 ///< constant)
  Programs,      ///< G (G * `cluster` blocks for a clustered kernel)
  RowBlocks,     ///< ceil(M / rows)
  Columns,       ///< ceil(N / columns); `columns` defaults to `block`
};
inline constexpr std::string_view kGridRuleNames[] = {
    "constant", "workspace_rows", "programs", "row_blocks", "columns"};

/// An argument's "role": read or written by the kernels.
enum class Role : int32_t { Input, Output };
inline constexpr std::string_view kRoleNames[] = {"input", "output"};

/// The extents an argument kind has.
enum class ArgumentShape : int32_t {
  Rows,      ///< the row extents, then N: [?, N], [?, ?, N]
  Statistic, ///< the row extents alone, any of them "?": [?], [?, ?]
  Vector,    ///< [N] exactly, checked at load
  Any,       ///< an argument with no role in the op: a row argument when
             ///< it has rank 2 or more or a leading "?"
};
inline constexpr std::string_view kArgumentShapeNames[] = {
    "rows", "statistic", "vector", "any"};

/// What an argument is to the op: the manifest's "kind", the op's keyword
/// for it (NormFunction.h's NormArgRole).
enum class ArgumentKind : int32_t {
  Dy,
  X,
  Mean,
  Rstd,
  Weight,
  Bias,
  Dresidual,
  Dx,
  Dweight,
  Dbias,
  Y,
  Xhat,
  Residual,
  H,
  Other,
};

/// One argument kind: its name, its shape, and the roles it may have.
struct ArgumentKindInfo {
  ArgumentKind kind;
  std::string_view name;
  ArgumentShape shape;
  bool input, output;
};

/// Every argument kind, in enum order. `x` is the rows argument (M is the
/// product of its row extents); `dx` may be `dy` itself (the in-place
/// backward). At most one argument has each kind but `other`.
inline constexpr ArgumentKindInfo kArgumentKinds[] = {
    {ArgumentKind::Dy, "dy", ArgumentShape::Rows, true, false},
    {ArgumentKind::X, "x", ArgumentShape::Rows, true, false},
    {ArgumentKind::Mean, "mean", ArgumentShape::Statistic, true, true},
    {ArgumentKind::Rstd, "rstd", ArgumentShape::Statistic, true, true},
    {ArgumentKind::Weight, "weight", ArgumentShape::Vector, true, false},
    {ArgumentKind::Bias, "bias", ArgumentShape::Vector, true, false},
    {ArgumentKind::Dresidual, "dresidual", ArgumentShape::Rows, true, false},
    {ArgumentKind::Dx, "dx", ArgumentShape::Rows, false, true},
    {ArgumentKind::Dweight, "dweight", ArgumentShape::Vector, false, true},
    {ArgumentKind::Dbias, "dbias", ArgumentShape::Vector, false, true},
    {ArgumentKind::Y, "y", ArgumentShape::Rows, false, true},
    {ArgumentKind::Xhat, "xhat", ArgumentShape::Rows, false, true},
    {ArgumentKind::Residual, "residual", ArgumentShape::Rows, true, false},
    {ArgumentKind::H, "h", ArgumentShape::Rows, false, true},
    {ArgumentKind::Other, "other", ArgumentShape::Any, true, true},
};

constexpr bool argumentKindsInOrder() {
  for (size_t i = 0; i < std::size(kArgumentKinds); ++i)
    if (size_t(kArgumentKinds[i].kind) != i)
      return false;
  return true;
}
static_assert(argumentKindsInOrder(), "kArgumentKinds is in enum order");

constexpr const ArgumentKindInfo &info(ArgumentKind kind) {
  return kArgumentKinds[size_t(kind)];
}

template <typename E, size_t Size>
constexpr std::string_view enumName(const std::string_view (&names)[Size],
                                    E value) {
  return size_t(value) < Size ? names[size_t(value)] : std::string_view("?");
}
template <typename E, size_t Size>
constexpr std::optional<E> enumFromName(const std::string_view (&names)[Size],
                                        std::string_view name) {
  for (size_t i = 0; i < Size; ++i)
    if (names[i] == name)
      return E(i);
  return std::nullopt;
}

constexpr std::string_view toString(Dtype v) { return enumName(kDtypeNames, v); }
constexpr std::string_view toString(KernelKind v) {
  return enumName(kKernelKindNames, v);
}
constexpr std::string_view toString(GridRule v) {
  return enumName(kGridRuleNames, v);
}
constexpr std::string_view toString(Role v) { return enumName(kRoleNames, v); }
constexpr std::string_view toString(ArgumentShape v) {
  return enumName(kArgumentShapeNames, v);
}
constexpr std::string_view toString(ArgumentKind v) { return info(v).name; }
constexpr std::optional<Dtype> parseDtype(std::string_view name) {
  return enumFromName<Dtype>(kDtypeNames, name);
}
constexpr std::optional<KernelKind> parseKernelKind(std::string_view name) {
  return enumFromName<KernelKind>(kKernelKindNames, name);
}
constexpr std::optional<GridRule> parseGridRule(std::string_view name) {
  return enumFromName<GridRule>(kGridRuleNames, name);
}
constexpr std::optional<Role> parseRole(std::string_view name) {
  return enumFromName<Role>(kRoleNames, name);
}
constexpr std::optional<ArgumentKind> parseArgumentKind(std::string_view name) {
  for (const ArgumentKindInfo &k : kArgumentKinds)
    if (k.name == name)
      return k.kind;
  return std::nullopt;
}

/// "a, b, c or d" of names[first..]: for messages.
template <size_t Size>
std::string listNames(const std::string_view (&names)[Size],
                      size_t first = 0) {
  std::string s;
  for (size_t i = first; i < Size; ++i)
    s += std::string(i == first ? "" : i + 1 == Size ? " or " : ", ") +
         std::string(names[i]);
  return s;
}

/// "dy, x, ... or other": for messages.
inline std::string listArgumentKinds() {
  std::string s;
  size_t count = std::size(kArgumentKinds);
  for (size_t i = 0; i < count; ++i)
    s += std::string(i == 0 ? "" : i + 1 == count ? " or " : ", ") +
         std::string(kArgumentKinds[i].name);
  return s;
}

/// Shape entries that are not numbers: M in an argument, G in a workspace.
inline constexpr std::string_view kRowsExtentName = "?";
inline constexpr std::string_view kGroupsExtentName = "groups";
/// The largest static workspace extent.
constexpr int64_t kMaxWorkspaceExtent = int64_t(1) << 40;

//===----------------------------------------------------------------------===//
// Fields
//===----------------------------------------------------------------------===//

/// JSON type of a field; GridValue is an integer (Constant) or a rule name.
enum class FieldType { String, Integer, Bool, Array, Object, GridValue };
inline constexpr std::string_view kFieldTypeNames[] = {
    "string", "integer", "bool", "array", "object", "grid"};

/// The JSON objects of a manifest.
enum class Object { Manifest, Spec, Argument, Workspace, Kernel, Param };
inline constexpr std::string_view kObjectNames[] = {
    "manifest", "spec", "argument", "workspace", "kernel", "param"};

constexpr std::string_view toString(FieldType v) {
  return enumName(kFieldTypeNames, v);
}
constexpr std::string_view toString(Object v) {
  return enumName(kObjectNames, v);
}

struct Field {
  Object object;
  std::string_view key;
  FieldType type;
  bool required;
  /// The range of an Integer (and of a GridValue's number).
  int64_t min;
  int64_t max;
  /// Its key in `#norm.kernel`; empty for a field the attribute lacks.
  std::string_view attrKey;
};

/// `field::k<Object><Id>`: kManifestFormatVersion, kArgumentKind,
/// kKernelBlock, ...
namespace field {
#define NORM_MANIFEST_FIELD(Object_, Id, Key, Type, Required, Min, Max)        \
  inline constexpr Field k##Object_##Id{Object::Object_, Key, FieldType::Type, \
                                        Required, Min, Max, ""};
#define NORM_MANIFEST_KERNEL_FIELD(Id, Key, Type, Required, Min, Max, Member, \
                                   CType, AttrKey)                            \
  inline constexpr Field kKernel##Id{Object::Kernel, Key, FieldType::Type,    \
                                     Required, Min, Max, AttrKey};
#include "norm/Support/ManifestSchema.def"
} // namespace field

/// Every field, in table order.
inline constexpr const Field *kFields[] = {
#define NORM_MANIFEST_FIELD(Object_, Id, Key, Type, Required, Min, Max)        \
  &field::k##Object_##Id,
#define NORM_MANIFEST_KERNEL_FIELD(Id, Key, Type, Required, Min, Max, Member, \
                                   CType, AttrKey)                            \
  &field::kKernel##Id,
#include "norm/Support/ManifestSchema.def"
};

/// The field `key` of `object`, or null.
constexpr const Field *findField(Object object, std::string_view key) {
  for (const Field *f : kFields)
    if (f->object == object && f->key == key)
      return f;
  return nullptr;
}

/// The keys of `object`'s fields, "a, b or c": for messages.
inline std::string listKeys(Object object) {
  std::string s;
  size_t count = 0, total = 0;
  for (const Field *f : kFields)
    total += f->object == object;
  for (const Field *f : kFields) {
    if (f->object != object)
      continue;
    s += std::string(count == 0           ? ""
                     : count + 1 == total ? " or "
                                          : ", ") +
         std::string(f->key);
    ++count;
  }
  return s;
}

/// "<key> must be in [min, max], got v" if an Integer (or GridValue number)
/// `v` of `f` is out of its range, else empty; `key` is the field as the
/// message names it.
inline std::string rangeError(const Field &f, int64_t v, std::string_view key) {
  if (v >= f.min && v <= f.max)
    return "";
  return std::string(key) + " must be in [" + std::to_string(f.min) + ", " +
         std::to_string(f.max) + "], got " + std::to_string(v);
}

//===----------------------------------------------------------------------===//
// The launch record of a kernel
//===----------------------------------------------------------------------===//

/// What the GPU mapping decides for one kernel: the table's kernel fields,
/// one member each. `#norm.kernel` stores one; the writer writes it, the
/// reader reads it (the manifest's `grid` may also be a number:
/// GridRule::Constant, the number beside it).
struct KernelRecord {
#define NORM_MANIFEST_KERNEL_FIELD(Id, Key, Type, Required, Min, Max, Member, \
                                   CType, AttrKey)                            \
  CType Member{};
#include "norm/Support/ManifestSchema.def"

  /// Calls `fn(const Field &, Member &)` for each field, in table order.
  template <typename Fn>
  void forEachField(Fn &&fn) {
#define NORM_MANIFEST_KERNEL_FIELD(Id, Key, Type, Required, Min, Max, Member, \
                                   CType, AttrKey)                            \
  fn(field::kKernel##Id, Member);
#include "norm/Support/ManifestSchema.def"
  }
  template <typename Fn>
  void forEachField(Fn &&fn) const {
#define NORM_MANIFEST_KERNEL_FIELD(Id, Key, Type, Required, Min, Max, Member, \
                                   CType, AttrKey)                            \
  fn(field::kKernel##Id, Member);
#include "norm/Support/ManifestSchema.def"
  }

  bool operator==(const KernelRecord &other) const {
    bool equal = true;
#define NORM_MANIFEST_KERNEL_FIELD(Id, Key, Type, Required, Min, Max, Member, \
                                   CType, AttrKey)                            \
  equal = equal && Member == other.Member;
#include "norm/Support/ManifestSchema.def"
    return equal;
  }
  bool operator!=(const KernelRecord &other) const { return !(*this == other); }
};

/// The number of KernelRecord fields.
constexpr size_t kNumKernelRecordFields = 0
#define NORM_MANIFEST_KERNEL_FIELD(Id, Key, Type, Required, Min, Max, Member, \
                                   CType, AttrKey)                            \
  +1
#include "norm/Support/ManifestSchema.def"
    ;

/// For a `static_assert` in the branch of a field-type switch that no type
/// should reach.
template <typename T>
inline constexpr bool kUnhandledFieldType = false;

/// Whether a record's value of `f` is written: a required field always, an
/// optional integer when not 0, an optional Bool when set.
template <typename T>
bool isPresent(const Field &f, const T &value) {
  if (f.required)
    return true;
  if constexpr (std::is_same_v<T, int64_t>)
    return value != 0;
  else if constexpr (std::is_same_v<T, std::optional<bool>>)
    return value.has_value();
  else if constexpr (std::is_same_v<T, std::string>)
    return !value.empty();
  else
    return true;
}

/// How a message names a kernel field: the manifest's `"key"`, or the
/// attribute's `key`.
enum class Syntax { Manifest, Attribute };

/// `f` named in `syntax`.
inline std::string keyIn(const Field &f, Syntax syntax) {
  return syntax == Syntax::Manifest ? "\"" + std::string(f.key) + "\""
                                    : std::string(f.attrKey);
}

/// The checks of one record that are not a single field's: `columns` only
/// with grid `columns`, grid `row_blocks` with `rows`, `cluster` above 1
/// only with grid `programs` or `row_blocks` (the first and last also with a constant grid,
/// which the writer puts for any rule it could fold), `skip_at_one_group`
/// only on a reduce kernel. Empty if none fails, else the message.
inline std::string checkKernelRecord(const KernelRecord &record,
                                     Syntax syntax) {
  bool json = syntax == Syntax::Manifest;
  auto grid = [&](GridRule rule) {
    std::string name(toString(rule));
    return json ? "grid '" + name + "'" : "grid = " + name;
  };
  auto value = [&](const Field &f, int64_t v) {
    return keyIn(f, syntax) + (json ? ": " : " = ") + std::to_string(v);
  };
  // A constant grid may be any rule folded where N (or G) is known.
  if (record.columns && record.grid != GridRule::Columns &&
      record.grid != GridRule::Constant)
    return keyIn(field::kKernelColumns, syntax) + " only goes with " +
           grid(GridRule::Columns) + " (or a constant grid), got " +
           grid(record.grid);
  if (record.grid == GridRule::RowBlocks && !record.rows)
    return grid(GridRule::RowBlocks) + " needs " +
           keyIn(field::kKernelRows, syntax);
  // Clusters split a program's rows across blocks: the `programs` rule (a
  // dx kernel's G groups), `row_blocks` (a forward kernel's row a
  // program) or a constant number of programs launches that many of them
  // (programs * cluster blocks).
  if (record.cluster > 1 && record.grid != GridRule::Programs &&
      record.grid != GridRule::RowBlocks && record.grid != GridRule::Constant)
    return value(field::kKernelCluster, record.cluster) + " needs " +
           grid(GridRule::Programs) + ", " + grid(GridRule::RowBlocks) +
           " or a constant number of programs (clusters of blocks), got " +
           grid(record.grid);
  // Only a reduce kernel has its work done by the dx kernel at G = 1.
  if (record.skipAtOneGroup.value_or(false) && record.kind != KernelKind::Reduce)
    return keyIn(field::kKernelSkipAtOneGroup, syntax) +
           " only goes with kind reduce, got kind " +
           std::string(toString(record.kind));
  return "";
}

} // namespace mlir::norm::manifest

#endif // NORM_SUPPORT_MANIFESTSCHEMA_H
