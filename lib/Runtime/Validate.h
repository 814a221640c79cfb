//===- Validate.h - tensors checked against the manifest --------*- C++ -*-===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_LIB_RUNTIME_VALIDATE_H
#define NORM_LIB_RUNTIME_VALIDATE_H

#include "norm/Runtime/Plan.h"

namespace mlir::norm::runtime {

/// Binds `tensors` to the manifest's arguments and checks them; on success
/// `bound[i]` is the tensor of argument i and `m` the row count.
Status bindTensors(const Manifest &manifest, const NormrtTensor *tensors,
                   int32_t numTensors, std::vector<const NormrtTensor *> &bound,
                   int64_t &m);

} // namespace mlir::norm::runtime

#endif // NORM_LIB_RUNTIME_VALIDATE_H
