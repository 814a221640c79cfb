//===- CudaToolkit.cpp - locating the CUDA toolkit --------------*- C++ -*-===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#include "norm/Pipelines/CudaToolkit.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"

#ifndef NORM_DEFAULT_CUDA_TOOLKIT
#define NORM_DEFAULT_CUDA_TOOLKIT "/usr/local/cuda"
#endif

using namespace mlir;

std::string norm::getLibdevicePath(llvm::StringRef root) {
  llvm::SmallString<256> path(root);
  llvm::sys::path::append(path, "nvvm", "libdevice", "libdevice.10.bc");
  return std::string(path);
}

norm::CudaToolkitSearch norm::findCudaToolkit(llvm::StringRef explicitRoot) {
  CudaToolkitSearch search;
  auto tryRoot = [&](llvm::StringRef root) {
    if (root.empty() || !search.root.empty())
      return;
    search.tried.push_back(root.str());
    if (llvm::sys::fs::exists(getLibdevicePath(root)))
      search.root = root.str();
  };
  if (!explicitRoot.empty()) {
    tryRoot(explicitRoot);
    return search;
  }
  for (const char *var : {"CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"})
    if (std::optional<std::string> value = llvm::sys::Process::GetEnv(var))
      tryRoot(*value);
  tryRoot(NORM_DEFAULT_CUDA_TOOLKIT);
  return search;
}
