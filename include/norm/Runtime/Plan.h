//===- Plan.h - from tensors and a manifest to kernel launches --*- C++ -*-===//
//
// Part of mlir-norm.
//
// Everything a launch decides before it touches the driver: the number of
// groups G, the workspace layout, the tensors' checks against the manifest
// and every kernel's grid, block and expanded parameters. It is pure (no
// CUDA), so tests exercise it on machines without a GPU, and normrt_launch
// is this plan followed by one cuMemsetD8Async per cleared workspace and one
// cuLaunchKernel per kernel.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_RUNTIME_PLAN_H
#define NORM_RUNTIME_PLAN_H

#include "norm-c/Runtime.h"
#include "norm/Runtime/Manifest.h"
#include "norm/Support/Groups.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir::norm::runtime {

/// G = defaultGroups (norm/Support/Groups.h): the compiler's
/// formula, from the header both include.
using mlir::norm::defaultGroups;

/// Each workspace starts at a multiple of this many bytes inside the
/// caller's buffer.
constexpr uint64_t kWorkspaceSliceAlignment = 256;
/// The alignment the caller's workspace pointer needs.
constexpr uint64_t kWorkspaceAlignment = 16;

/// A NORMRT_* code and, on failure, its message.
struct Status {
  int code = NORMRT_OK;
  std::string message;

  bool failed() const { return code != NORMRT_OK; }
  static Status success() { return {}; }
  static Status error(int code, std::string message) {
    return {code, std::move(message)};
  }
};

/// G for M rows: the manifest's fixed groups, else defaultGroups(M, N).
int64_t groupsFor(const Manifest &manifest, int64_t m);

/// Where each workspace lies in the caller's buffer.
struct WorkspaceLayout {
  int64_t groups = 0;
  std::vector<uint64_t> offsets;
  std::vector<uint64_t> bytes;
  /// Bytes the buffer needs: the end of the last workspace; 0 for M = 0
  /// (nothing is launched) or a module without workspaces.
  uint64_t total = 0;
};

/// The layout for M rows (M >= 0). Non-decreasing in M, so a buffer sized
/// for the largest M serves every smaller one.
Status planWorkspaces(const Manifest &manifest, int64_t m,
                      WorkspaceLayout &layout);

/// One cuLaunchKernel.
struct KernelLaunch {
  size_t kernel = 0;
  uint32_t grid = 0;
  uint32_t block = 0;
  /// True for a reduce kernel marked `skip_at_one_group` when G is 1: the
  /// dx kernel before it has written dweight / dbias (the same bits), so
  /// the launch is left out unless NORMRT_ONE_GROUP_REDUCE=1 at the load.
  bool skipped = false;
  /// The kernel's parameters, each 8 bytes (pointers, offsets, sizes,
  /// strides), in the order of MLIR's memref expansion.
  std::vector<uint64_t> params;
};

/// Everything a launch does, in order.
struct LaunchPlan {
  /// M: the product of the rows argument's row extents (B * S of a rank-3
  /// 'x').
  int64_t m = 0;
  WorkspaceLayout workspace;
  /// Device address and size of each workspace to zero before the kernels.
  std::vector<std::pair<uint64_t, uint64_t>> clears;
  /// Empty for M = 0.
  std::vector<KernelLaunch> launches;
};

/// Binds `tensors` to the manifest's arguments (by name; a tensor without a
/// name binds to the argument at its own index), checks each against its
/// argument and the workspace against the layout, and plans the launches.
/// Errors are NORMRT_ERROR_INVALID_ARGUMENT (tensors) or
/// NORMRT_ERROR_WORKSPACE, with a message naming the argument.
Status planLaunch(const Manifest &manifest, const NormrtTensor *tensors,
                  int32_t numTensors, void *workspace, size_t workspaceSize,
                  LaunchPlan &plan);

/// The plan as text, one line per step, for normrt_dry_run:
///   m 12 groups 1 workspace 32768
///   clear 0x... 16384
///   launch norm_kernel_dx_1 grid 1 block 256 params 50: 0x..., ...
std::string describePlan(const Manifest &manifest, const LaunchPlan &plan);

} // namespace mlir::norm::runtime

#endif // NORM_RUNTIME_PLAN_H
