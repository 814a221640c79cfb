//===- Validate.h - tensors checked against the manifest --------*- C++ -*-===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_LIB_RUNTIME_VALIDATE_H
#define NORM_LIB_RUNTIME_VALIDATE_H

#include "norm/Runtime/Plan.h"

namespace mlir::norm::runtime {

/// The bytes a view spans, from its first element to one past its last
/// (for a strided view, the gaps between rows included); empty if it has
/// no elements.
struct ByteRange {
  uint64_t begin = 0, end = 0;
  bool empty() const { return begin == end; }
  bool overlaps(const ByteRange &o) const {
    return !empty() && !o.empty() && begin < o.end && o.begin < end;
  }
};

/// The range of `t`, a checked tensor of argument `a`.
ByteRange byteRange(const ArgumentSpec &a, const NormrtTensor &t);

/// No output overlaps an input or another output, except 'dx' that is
/// exactly 'dy' (the same pointer, dtype, shape and strides).
Status checkOverlaps(const Manifest &manifest,
                     const std::vector<const NormrtTensor *> &bound);

/// The workspace bytes a launch uses overlap no argument.
Status checkWorkspaceOverlaps(const Manifest &manifest,
                              const std::vector<const NormrtTensor *> &bound,
                              ByteRange workspace);

/// Binds `tensors` to the manifest's arguments and checks them; on success
/// `bound[i]` is the tensor of argument i and `m` the row count. The
/// checks: each tensor against its argument, every row argument's leading
/// extent against M, then checkOverlaps.
Status bindTensors(const Manifest &manifest, const NormrtTensor *tensors,
                   int32_t numTensors, std::vector<const NormrtTensor *> &bound,
                   int64_t &m);

} // namespace mlir::norm::runtime

#endif // NORM_LIB_RUNTIME_VALIDATE_H
