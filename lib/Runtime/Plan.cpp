//===- Plan.cpp - from tensors and a manifest to kernel launches ----------===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#include "norm/Runtime/Plan.h"

#include "Validate.h"

#include <algorithm>
#include <cinttypes>
#include <climits>
#include <cstdio>

using namespace mlir::norm::runtime;

int64_t mlir::norm::runtime::groupsFor(const Manifest &manifest, int64_t m) {
  return manifest.fixedGroups > 0 ? manifest.fixedGroups
                                  : defaultGroups(m, manifest.n);
}

Status mlir::norm::runtime::planWorkspaces(const Manifest &manifest, int64_t m,
                                           WorkspaceLayout &layout) {
  // Emptied, not replaced: a layout used again keeps its vectors' storage
  // (the launch path plans into a thread's own plan at every call).
  layout.groups = 0;
  layout.offsets.clear();
  layout.bytes.clear();
  layout.total = 0;
  if (m < 0)
    return Status::error(NORMRT_ERROR_INVALID_ARGUMENT,
                         "rows must be >= 0, got " + std::to_string(m));
  if (m == 0)
    return Status::success();
  layout.groups = groupsFor(manifest, m);
  uint64_t end = 0;
  for (size_t k = 0; k < manifest.workspaces.size(); ++k) {
    const WorkspaceSpec &w = manifest.workspaces[k];
    // Extents are at most 2^40 and G at most 2^31, so this cannot overflow
    // before the check.
    uint64_t bytes = uint64_t(dtypeBytes(w.dtype));
    for (int64_t e : w.shape)
      if (__builtin_mul_overflow(
              bytes, uint64_t(e == kGroupsExtent ? layout.groups : e), &bytes))
        return Status::error(NORMRT_ERROR_MANIFEST, "workspace " +
                                                        std::to_string(k) +
                                                        " overflows 64 bits");
    uint64_t offset = (end + kWorkspaceSliceAlignment - 1) /
                      kWorkspaceSliceAlignment * kWorkspaceSliceAlignment;
    if (offset < end || __builtin_add_overflow(offset, bytes, &end) ||
        end > uint64_t(INT64_MAX))
      return Status::error(NORMRT_ERROR_MANIFEST,
                           "the workspaces overflow 63 bits");
    layout.offsets.push_back(offset);
    layout.bytes.push_back(bytes);
  }
  layout.total = end;
  return Status::success();
}

namespace {

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
  return buf;
}

/// The grid of `k` for M rows, or an error if it exceeds the driver's limit.
Status gridOf(const Manifest &manifest, const KernelSpec &k, int64_t m,
              int64_t groups, uint32_t &grid) {
  int64_t g = 0;
  switch (k.grid) {
  case GridRule::Constant:
    g = k.gridConstant;
    break;
  case GridRule::Programs:
    g = groups;
    break;
  case GridRule::RowBlocks:
    g = m / k.rows + (m % k.rows > 0);
    break;
  case GridRule::Columns:
    g = manifest.n / k.columnsPerBlock() +
        (manifest.n % k.columnsPerBlock() > 0);
    break;
  case GridRule::WorkspaceRows:
    for (const KernelParam &p : k.params)
      if (p.isWorkspace) {
        int64_t e = manifest.workspaces[p.index].shape[0];
        g = e == kGroupsExtent ? groups : e;
        break;
      }
    break;
  }
  if (g < 1 || g > INT32_MAX)
    return Status::error(NORMRT_ERROR_INVALID_ARGUMENT,
                         "kernel '" + k.name + "': a grid of " +
                             std::to_string(g) + " blocks for M = " +
                             std::to_string(m) + " is outside [1, 2^31 - 1]");
  // A clustered kernel (`programs` only, checked at load) launches each of
  // its G programs as a cluster of `cluster` blocks. g <= 2^31 - 1 and
  // cluster <= 8: the product fits in 64 bits.
  if (k.cluster > 1) {
    int64_t blocks = g * k.cluster;
    if (blocks > INT32_MAX)
      return Status::error(NORMRT_ERROR_INVALID_ARGUMENT,
                           "kernel '" + k.name + "': " + std::to_string(g) +
                               " programs in clusters of " +
                               std::to_string(k.cluster) +
                               " blocks for M = " + std::to_string(m) +
                               " make a grid of " + std::to_string(blocks) +
                               " blocks, above the CUDA limit of 2^31 - 1");
    g = blocks;
  }
  grid = uint32_t(g);
  return Status::success();
}

/// Appends one memref in MLIR's default expansion: allocated pointer,
/// aligned pointer, offset, sizes, strides.
void appendMemref(std::vector<uint64_t> &params, uint64_t pointer,
                  const int64_t *sizes, const int64_t *strides, int rank) {
  params.push_back(pointer);
  params.push_back(pointer);
  params.push_back(0);
  for (int i = 0; i < rank; ++i)
    params.push_back(uint64_t(sizes[i]));
  for (int i = 0; i < rank; ++i)
    params.push_back(uint64_t(strides[i]));
}

} // namespace

Status mlir::norm::runtime::planLaunch(const Manifest &manifest,
                                       const NormrtTensor *tensors,
                                       int32_t numTensors, void *workspace,
                                       size_t workspaceSize, LaunchPlan &plan) {
  // Emptied, not replaced, and the bound tensors in a thread's own vector:
  // a plan used again (the launch path keeps one per thread) allocates
  // nothing once its vectors have grown, where a fresh one made about ten
  // allocations a launch (docs/NOTES.md, "Issue 22: host time, third
  // pass"). Every field is written again below before it is read.
  plan.m = 0;
  plan.clears.clear();
  thread_local std::vector<const NormrtTensor *> bound;
  if (Status s = bindTensors(manifest, tensors, numTensors, bound, plan.m);
      s.failed())
    return s;
  if (plan.m == 0) {
    plan.launches.clear();
    plan.workspace = WorkspaceLayout();
    // No rows: no kernel runs and no workspace is used, but dweight / dbias
    // are sums over zero rows, so the outputs that do not follow M are
    // cleared (as PyTorch returns zeros). Row outputs have no elements.
    for (size_t i = 0; i < manifest.arguments.size(); ++i) {
      const ArgumentSpec &a = manifest.arguments[i];
      ByteRange r = byteRange(a, *bound[i]);
      if (a.output && !a.rows && !r.empty())
        plan.clears.emplace_back(r.begin, r.end - r.begin);
    }
    return Status::success();
  }
  if (Status s = planWorkspaces(manifest, plan.m, plan.workspace); s.failed())
    return s;

  uint64_t base = reinterpret_cast<uint64_t>(workspace);
  if (plan.workspace.total > 0) {
    std::string needs = std::to_string(plan.workspace.total) +
                        " bytes needed for M = " + std::to_string(plan.m);
    if (!workspace)
      return Status::error(NORMRT_ERROR_WORKSPACE,
                           "workspace is NULL but " + needs +
                               " (see normrt_workspace_bytes)");
    if (base % kWorkspaceAlignment)
      return Status::error(NORMRT_ERROR_WORKSPACE,
                           "workspace pointer " + hex(base) + " not " +
                               std::to_string(kWorkspaceAlignment) +
                               "-byte aligned");
    if (workspaceSize < plan.workspace.total)
      return Status::error(NORMRT_ERROR_WORKSPACE,
                           "workspace of " + std::to_string(workspaceSize) +
                               " bytes < " + needs);
    uint64_t end;
    if (__builtin_add_overflow(base, plan.workspace.total, &end))
      return Status::error(NORMRT_ERROR_WORKSPACE,
                           "workspace " + hex(base) +
                               " wraps around the address space");
    if (Status s = checkWorkspaceOverlaps(manifest, bound, {base, end});
        s.failed())
      return s;
  }
  for (size_t k = 0; k < manifest.workspaces.size(); ++k)
    if (manifest.clearWorkspace[k] && plan.workspace.bytes[k])
      plan.clears.emplace_back(base + plan.workspace.offsets[k],
                               plan.workspace.bytes[k]);

  int64_t groups = plan.workspace.groups;
  plan.launches.resize(manifest.kernels.size());
  for (size_t k = 0; k < manifest.kernels.size(); ++k) {
    const KernelSpec &spec = manifest.kernels[k];
    KernelLaunch &launch = plan.launches[k];
    launch.params.clear();
    launch.kernel = k;
    launch.block = uint32_t(spec.block);
    launch.skipped = spec.skipAtOneGroup.value_or(false) && groups == 1;
    if (Status s = gridOf(manifest, spec, plan.m, groups, launch.grid);
        s.failed())
      return s;
    for (const KernelParam &p : spec.params) {
      if (!p.isWorkspace) {
        // Every size and stride, whatever the rank: a rank-3 kernel takes
        // [B, S, N] and views it as [B * S, N] itself.
        const NormrtTensor &t = *bound[p.index];
        appendMemref(launch.params, reinterpret_cast<uint64_t>(t.data), t.sizes,
                     t.strides, p.rank);
        continue;
      }
      // A contiguous row-major slice of the caller's buffer (the reader
      // keeps workspaces to kMaxWorkspaceRank, and a parameter to its
      // workspace's rank).
      const WorkspaceSpec &w = manifest.workspaces[p.index];
      int64_t sizes[kMaxWorkspaceRank], strides[kMaxWorkspaceRank];
      for (int i = 0; i < p.rank; ++i)
        sizes[i] = w.shape[i] == kGroupsExtent ? groups : w.shape[i];
      strides[p.rank - 1] = 1;
      for (int i = p.rank - 2; i >= 0; --i)
        strides[i] = strides[i + 1] * sizes[i + 1];
      appendMemref(launch.params, base + plan.workspace.offsets[p.index], sizes,
                   strides, p.rank);
    }
  }
  return Status::success();
}

std::string mlir::norm::runtime::describePlan(const Manifest &manifest,
                                              const LaunchPlan &plan) {
  std::string s = "m " + std::to_string(plan.m) + " groups " +
                  std::to_string(plan.workspace.groups) + " workspace " +
                  std::to_string(plan.workspace.total) + "\n";
  for (size_t k = 0; k < plan.workspace.offsets.size(); ++k)
    s += "slice " + std::to_string(k) + " offset " +
         std::to_string(plan.workspace.offsets[k]) + " bytes " +
         std::to_string(plan.workspace.bytes[k]) + "\n";
  for (const auto &[address, bytes] : plan.clears)
    s += "clear " + hex(address) + " " + std::to_string(bytes) + "\n";
  for (const KernelLaunch &l : plan.launches) {
    s += std::string(l.skipped ? "skip " : "launch ") +
         manifest.kernels[l.kernel].name + " grid " +
         std::to_string(l.grid) + " block " + std::to_string(l.block) +
         " params " + std::to_string(l.params.size()) + ":";
    // Memref by memref: pointers in hex, the rest in decimal.
    size_t i = 0;
    for (const KernelParam &p : manifest.kernels[l.kernel].params) {
      s += " [" + hex(l.params[i]) + " " + hex(l.params[i + 1]) + " " +
           std::to_string(int64_t(l.params[i + 2]));
      for (int j = 0; j < 2 * p.rank; ++j)
        s += " " + std::to_string(int64_t(l.params[i + 3 + j]));
      s += "]";
      i += 3 + 2 * p.rank;
    }
    s += "\n";
  }
  return s;
}
