//===- Manifest.h - the launch manifest norm-compile writes -----*- C++ -*-===//
//
// Part of mlir-norm.
//
// norm-compile writes, next to the kernels, a JSON manifest of the compiled
// function: its memref arguments, the host workspaces it allocates, and the
// kernels it launches in order, each with its launch configuration as a
// function of M and its parameter list. parseManifest reads and checks it
// once, so a launch only evaluates it.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_RUNTIME_MANIFEST_H
#define NORM_RUNTIME_MANIFEST_H

#include "norm/Support/ManifestSchema.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mlir::norm::runtime {

// The schema's enums (norm/Support/ManifestSchema.h).
using manifest::ArgumentKind;
using manifest::ArgumentShape;
using manifest::Dtype;
using manifest::GridRule;
using manifest::KernelKind;

/// "f32", "f16", "bf16", "i32".
const char *dtypeName(Dtype dtype);
/// Bytes per element.
int64_t dtypeBytes(Dtype dtype);

/// In a shape: a dynamic row extent ("?" in the manifest).
constexpr int64_t kRowsExtent = -1;
/// In a workspace shape: the number of groups G ("groups").
constexpr int64_t kGroupsExtent = -2;

/// The largest rank of an argument and of a kernel parameter (the C API's
/// NORMRT_MAX_RANK): [B, S, N] and the like, with room to spare.
constexpr int32_t kMaxRank = 8;
/// The largest rank of a workspace: [G, N] partial rows or [G] locks.
constexpr int32_t kMaxWorkspaceRank = 2;

/// One memref argument of the compiled function.
struct ArgumentSpec {
  std::string name;
  /// What it is to the op (the manifest's "kind"): the rules below follow
  /// from it and the shape, never from the name.
  ArgumentKind kind = ArgumentKind::Other;
  bool output = false;
  Dtype dtype = Dtype::F32;
  /// Rank 1 to kMaxRank; kRowsExtent for a dynamic extent, only among the
  /// row extents (never N: "?" could not tell it from a row extent).
  std::vector<int64_t> shape;
  /// A row argument: its leading `rowRank` extents are the rows, M their
  /// product (not a vector, and rank 2 or more, a leading "?", or a
  /// statistic: kind 'mean' or 'rstd'), so they must equal the rows
  /// argument's at every launch, whatever the manifest writes.
  bool rows = false;
  /// The number of row extents of a row argument: all but N ([B, S, N]: 2),
  /// all of them for the statistics ([B, S]) and a rank-1 row argument; the
  /// same for every row argument of a manifest. 0 for the others.
  int32_t rowRank = 0;
  /// A per-column vector (kind 'weight', 'bias', 'dweight', 'dbias'): rank
  /// 1 with extent N, checked at load.
  bool vector = false;
  /// The strides the kernels assume (manifest "strides"): per dim a static
  /// stride or kRowsExtent for one read from the tensor. Empty: contiguous
  /// row-major, the tensor's strides are not read.
  std::vector<int64_t> strides;
};

/// One host allocation of the compiled function: contiguous, row-major.
struct WorkspaceSpec {
  Dtype dtype = Dtype::F32;
  /// A kernel writes every element before any reads it (`written`): the
  /// runtime does not clear it.
  bool written = false;
  /// Rank 1 to kMaxWorkspaceRank; kGroupsExtent for G.
  std::vector<int64_t> shape;
};

/// One memref parameter of a kernel: a function argument or a workspace.
struct KernelParam {
  bool isWorkspace = false;
  int32_t index = 0;
  int32_t rank = 0;
};

/// One kernel, in launch order: its launch record (name, kind, block, grid,
/// rows, cluster, dynamic shared bytes, ...; 0 for an absent optional
/// integer) and its parameters.
struct KernelSpec : manifest::KernelRecord {
  /// The grid of GridRule::Constant.
  int64_t gridConstant = 0;
  std::vector<KernelParam> params;

  /// Columns per block of GridRule::Columns (`columns`, else `block`).
  int64_t columnsPerBlock() const { return columns ? columns : block; }
  /// Blocks per thread-block cluster (`cluster`, else 1): a kernel of
  /// GridRule::Programs with C > 1 launches G * C blocks, in clusters of C,
  /// and needs compute capability 9.0.
  int64_t blocksPerCluster() const { return cluster > 1 ? cluster : 1; }
  /// Kernel parameters after MLIR's default memref expansion: 3 + 2 * rank
  /// per memref (allocated and aligned pointers, offset, sizes, strides).
  int64_t numScalarParams() const;
};

/// A parsed, checked manifest.
struct Manifest {
  int64_t formatVersion = 0;
  std::string function;
  /// "sm_90", ... (empty if absent).
  std::string chip;
  /// "isa", "bin", "fatbin" (empty if absent).
  std::string format;
  /// The hidden size N: the static trailing extent of the row arguments
  /// (but the statistics, which have no N).
  int64_t n = 0;
  /// spec.groups when positive (a fixed G), else 0: G = defaultGroups(M, N).
  int64_t fixedGroups = 0;
  std::vector<ArgumentSpec> arguments;
  std::vector<WorkspaceSpec> workspaces;
  std::vector<KernelSpec> kernels;
  /// The argument M is read from: kind 'x' if it has rank 2 or more, else
  /// the first such argument (but the statistics and vectors), else the
  /// first argument with a leading "?"; -1 if none. M is the product of its
  /// row extents.
  int32_t rowsArgument = -1;
  /// Per workspace: neither `written` nor taken by a kernel of kind `zero`,
  /// so the runtime clears it (cuMemsetD8Async) before the first kernel.
  std::vector<bool> clearWorkspace;

  /// The index of the argument called `name`, or -1.
  int32_t findArgument(std::string_view name) const;
  /// The index of the argument of kind `kind` (never Other), or -1.
  int32_t findKind(ArgumentKind kind) const;
};

/// Parses and checks `json`: format_version manifest::kFormatVersion, no
/// key the schema does not list. On failure returns false and sets `error`
/// to a message that starts with "manifest: " and names the offending
/// entry, e.g. "manifest: kernels[1].params[3]: argument 9 out of range (8
/// arguments)".
bool parseManifest(std::string_view json, Manifest &manifest,
                   std::string &error);

} // namespace mlir::norm::runtime

#endif // NORM_RUNTIME_MANIFEST_H
