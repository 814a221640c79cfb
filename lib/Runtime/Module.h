//===- Module.h - a loaded manifest and its kernels -------------*- C++ -*-===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_LIB_RUNTIME_MODULE_H
#define NORM_LIB_RUNTIME_MODULE_H

#include "Driver.h"

#include "norm/Runtime/Plan.h"

#include <memory>
#include <string_view>
#include <vector>

/// The C API's opaque module: the manifest, and unless loaded manifest-only,
/// the CUDA module and one function per manifest kernel.
struct NormrtModule {
  mlir::norm::runtime::Manifest manifest;
  /// Null for a manifest-only module.
  const mlir::norm::runtime::cuda::Driver *driver = nullptr;
  mlir::norm::runtime::cuda::CUcontext context = nullptr;
  mlir::norm::runtime::cuda::CUdevice device = 0;
  /// The load retained device 0's primary context (released on destroy).
  bool retainedPrimary = false;
  mlir::norm::runtime::cuda::CUmodule module = nullptr;
  std::vector<mlir::norm::runtime::cuda::CUfunction> functions;
  /// Kernels marked `waits` are launched with programmatic stream
  /// serialization: the driver has cuLaunchKernelEx, the device compute
  /// capability 9.0 or later, and NORMRT_DEPENDENT_LAUNCH is not "0".
  bool dependentLaunch = false;
  /// A launch planned as skipped (a reduce kernel whose dx kernel finished
  /// at G = 1) is launched all the same: NORMRT_ONE_GROUP_REDUCE is "1" at
  /// the load (an A/B of the same kernels; the results are the same).
  bool launchSkipped = false;

  NormrtModule() = default;
  NormrtModule(const NormrtModule &) = delete;
  NormrtModule &operator=(const NormrtModule &) = delete;
  /// Unloads the kernels and releases a retained primary context.
  ~NormrtModule();
};

namespace mlir::norm::runtime {

/// Parses `manifestJson` into a manifest-only module.
Status loadManifestOnly(std::string_view manifestJson,
                        std::unique_ptr<NormrtModule> &module);

/// Parses the manifest, then loads the driver and the image.
Status loadModule(const void *image, size_t imageSize,
                  std::string_view manifestJson,
                  std::unique_ptr<NormrtModule> &module);

/// Validates, plans and launches.
Status launchModule(const NormrtModule &module, const NormrtTensor *tensors,
                    int32_t numTensors, void *workspace, size_t workspaceSize,
                    void *stream);

} // namespace mlir::norm::runtime

#endif // NORM_LIB_RUNTIME_MODULE_H
