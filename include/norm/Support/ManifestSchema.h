//===- ManifestSchema.h - the launch manifest's schema ----------*- C++ -*-===//
//
// Part of mlir-norm.
//
// The one definition of the JSON manifest norm-compile writes and libnormrt
// reads (docs/Runtime.md, "The manifest"): its format version, the enums
// with their one set of names, and every field with its JSON type, whether
// it is required and, for integers, its range. norm-compile's writer, the
// runtime's reader (lib/Runtime/Manifest.cpp) and the `#norm.kernel`
// attribute the GPU mapping records (NormAttrs.td) all use it.
//
// No MLIR or LLVM dependency: the runtime includes it.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_SUPPORT_MANIFESTSCHEMA_H
#define NORM_SUPPORT_MANIFESTSCHEMA_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace mlir::norm::manifest {

/// The `format_version` written and the only one read.
constexpr int64_t kFormatVersion = 1;

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
constexpr std::optional<Dtype> parseDtype(std::string_view name) {
  return enumFromName<Dtype>(kDtypeNames, name);
}
constexpr std::optional<KernelKind> parseKernelKind(std::string_view name) {
  return enumFromName<KernelKind>(kKernelKindNames, name);
}
constexpr std::optional<GridRule> parseGridRule(std::string_view name) {
  return enumFromName<GridRule>(kGridRuleNames, name);
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

/// Argument roles.
inline constexpr std::string_view kRoleInput = "input";
inline constexpr std::string_view kRoleOutput = "output";
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

struct Field {
  std::string_view key;
  FieldType type;
  bool required;
  /// The range of an Integer (and of a GridValue's number).
  int64_t min = INT64_MIN;
  int64_t max = INT64_MAX;
};

namespace field {
// The top level.
inline constexpr Field kFormatVersion{"format_version", FieldType::Integer,
                                      true};
inline constexpr Field kFunction{"function", FieldType::String, false};
inline constexpr Field kChip{"chip", FieldType::String, false};
inline constexpr Field kFormat{"format", FieldType::String, false};
// The `threads` pipeline option the kernels were compiled with: 0 when
// each row kernel's block was chosen from N (its "block" says which).
inline constexpr Field kThreads{"threads", FieldType::Integer, false, 0, 1024};
inline constexpr Field kSpec{"spec", FieldType::Object, false};
inline constexpr Field kArguments{"arguments", FieldType::Array, true};
inline constexpr Field kWorkspaces{"workspaces", FieldType::Array, false};
inline constexpr Field kKernels{"kernels", FieldType::Array, true};

// `spec`: the command-line spec norm-compile compiled (informative but for
// n and groups).
inline constexpr Field kSpecOp{"op", FieldType::String, false};
inline constexpr Field kSpecN{"n", FieldType::Integer, false, 0, INT64_MAX};
inline constexpr Field kSpecDtype{"dtype", FieldType::String, false};
inline constexpr Field kSpecWeightDtype{"weight_dtype", FieldType::String,
                                        false};
inline constexpr Field kSpecStrategy{"strategy", FieldType::String, false};
inline constexpr Field kSpecGroups{"groups", FieldType::Integer, false, 0,
                                   INT32_MAX};

// `arguments[i]` and `workspaces[i]`.
inline constexpr Field kName{"name", FieldType::String, true};
inline constexpr Field kRole{"role", FieldType::String, false};
inline constexpr Field kDtype{"dtype", FieldType::String, true};
inline constexpr Field kShape{"shape", FieldType::Array, true};
// The strides the kernels assume, one per dim: an integer (static in the
// kernel: the tensor must have it wherever its extent exceeds 1) or "?"
// (read from the tensor at launch). Absent: the kernels assume contiguous
// row-major strides (an identity-layout memref).
inline constexpr Field kStrides{"strides", FieldType::Array, false};

// `workspaces[i]`: true when a kernel writes every element before any
// kernel reads it (the `deterministic` partial rows, which the dx kernel
// writes whole), so nothing clears it (absent: false).
inline constexpr Field kWritten{"written", FieldType::Bool, false};

// `kernels[i]` (name as above). lanes, vector and registers describe the
// row kernels' geometry; the runtime does not need them.
inline constexpr Field kKind{"kind", FieldType::String, false};
inline constexpr Field kBlock{"block", FieldType::Integer, true, 1, 1024};
inline constexpr Field kGrid{"grid", FieldType::GridValue, true, 1, INT32_MAX};
inline constexpr Field kColumns{"columns", FieldType::Integer, false, 1,
                                INT32_MAX};
inline constexpr Field kRows{"rows", FieldType::Integer, false, 1, INT32_MAX};
inline constexpr Field kLanes{"lanes", FieldType::Integer, false, 1, 1024};
inline constexpr Field kVector{"vector", FieldType::Integer, false, 1, 64};
inline constexpr Field kRegisters{"registers", FieldType::Bool, false};
// Blocks per thread-block cluster of a `programs` kernel that splits each
// row across a cluster (absent: 1, no cluster): the launch has G * cluster
// blocks, and the kernel, compiled with `.reqnctapercluster cluster, 1, 1`,
// needs compute capability 9.0. Only written when above 1.
inline constexpr Field kCluster{"cluster", FieldType::Integer, false, 1, 8};
// Bytes of dynamic shared memory a kernel is launched with (absent: 0): the
// runtime opts the kernel in (cuFuncSetAttribute) and passes them to every
// launch. Only written when above 0.
inline constexpr Field kDynamicShared{"dynamic_shared_bytes",
                                      FieldType::Integer, false, 1, INT32_MAX};
inline constexpr Field kParams{"params", FieldType::Array, true};

// `kernels[i].params[j]`: exactly one of argument and workspace.
inline constexpr Field kArgument{"argument", FieldType::Integer, false, 0,
                                 INT32_MAX};
inline constexpr Field kWorkspace{"workspace", FieldType::Integer, false, 0,
                                  INT32_MAX};
inline constexpr Field kRank{"rank", FieldType::Integer, true, 0, 8};
/// Written for a parameter norm-compile cannot describe; the reader rejects
/// it.
inline constexpr Field kUnsupported{"unsupported", FieldType::Bool, false};
} // namespace field

} // namespace mlir::norm::manifest

#endif // NORM_SUPPORT_MANIFESTSCHEMA_H
