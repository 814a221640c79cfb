//===- CudaToolkit.h - locating the CUDA toolkit ----------------*- C++ -*-===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_PIPELINES_CUDATOOLKIT_H
#define NORM_PIPELINES_CUDATOOLKIT_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace mlir::norm {

/// Where a CUDA toolkit was looked for and what was found.
struct CudaToolkitSearch {
  /// The toolkit root holding nvvm/libdevice/libdevice.10.bc; empty if none.
  std::string root;
  /// Every root that was tried, in order.
  llvm::SmallVector<std::string> tried;
};

/// Finds the CUDA toolkit: `explicitRoot` alone when non-empty (a user who
/// names a path means it), otherwise $CUDA_HOME, $CUDA_PATH, $CUDA_ROOT and
/// the default configured at build time, in that order.
CudaToolkitSearch findCudaToolkit(llvm::StringRef explicitRoot);

/// Path of libdevice inside a toolkit root.
std::string getLibdevicePath(llvm::StringRef root);

} // namespace mlir::norm

#endif // NORM_PIPELINES_CUDATOOLKIT_H
