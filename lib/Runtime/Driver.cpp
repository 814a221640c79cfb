//===- Driver.cpp - the CUDA driver API, loaded at run time ---------------===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include <cstdlib>
#include <dlfcn.h>
#include <type_traits>

using namespace mlir::norm::runtime::cuda;

namespace {

/// The outcome of loading the driver, computed once.
struct Loaded {
  Driver driver = {};
  bool ok = false;
  std::string error;
};

Loaded load() {
  Loaded l;
  const char *path = std::getenv("NORMRT_LIBCUDA");
  if (!path || !*path)
    path = "libcuda.so.1";
  // Never closed: the driver stays loaded for the life of the process.
  void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    l.error = std::string("CUDA driver not found (dlopen ") + path + ": " +
              (why ? why : "unknown error") + ")";
    return l;
  }
  std::string missing;
  auto resolve = [&](auto &fn, const char *symbol, bool required = true) {
    fn = reinterpret_cast<std::decay_t<decltype(fn)>>(dlsym(handle, symbol));
    if (!fn && required && missing.empty())
      missing = symbol;
  };
  Driver &d = l.driver;
  resolve(d.cuInit, "cuInit");
  resolve(d.cuDeviceGet, "cuDeviceGet");
  resolve(d.cuDeviceGetAttribute, "cuDeviceGetAttribute");
  resolve(d.cuCtxGetCurrent, "cuCtxGetCurrent");
  resolve(d.cuCtxGetDevice, "cuCtxGetDevice");
  resolve(d.cuCtxPushCurrent, "cuCtxPushCurrent_v2");
  resolve(d.cuCtxPopCurrent, "cuCtxPopCurrent_v2");
  resolve(d.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  resolve(d.cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
  resolve(d.cuModuleLoadDataEx, "cuModuleLoadDataEx");
  resolve(d.cuModuleGetFunction, "cuModuleGetFunction");
  resolve(d.cuModuleUnload, "cuModuleUnload");
  resolve(d.cuFuncGetAttribute, "cuFuncGetAttribute");
  resolve(d.cuFuncSetAttribute, "cuFuncSetAttribute");
  resolve(d.cuLaunchKernel, "cuLaunchKernel");
  resolve(d.cuMemsetD8Async, "cuMemsetD8Async");
  resolve(d.cuGetErrorName, "cuGetErrorName");
  resolve(d.cuGetErrorString, "cuGetErrorString");
  resolve(d.cuLaunchKernelEx, "cuLaunchKernelEx", /*required=*/false);
  resolve(d.cuFuncGetParamInfo, "cuFuncGetParamInfo", /*required=*/false);
  resolve(d.cuOccupancyMaxActiveBlocksPerMultiprocessor,
          "cuOccupancyMaxActiveBlocksPerMultiprocessor", /*required=*/false);
  if (!missing.empty()) {
    l.error = std::string("CUDA driver ") + path + " lacks " + missing +
              " (not a CUDA driver, or one older than CUDA 12)";
    return l;
  }
  if (CUresult r = d.cuInit(0); r != CUDA_SUCCESS) {
    l.error = describeError(d, "cuInit", r);
    return l;
  }
  l.ok = true;
  return l;
}

} // namespace

const Driver *mlir::norm::runtime::cuda::getDriver(std::string &error) {
  static const Loaded loaded = load();
  if (!loaded.ok) {
    error = loaded.error;
    return nullptr;
  }
  return &loaded.driver;
}

std::string mlir::norm::runtime::cuda::describeError(const Driver &driver,
                                                     const char *call,
                                                     CUresult result) {
  const char *name = nullptr, *text = nullptr;
  if (driver.cuGetErrorName(result, &name) != CUDA_SUCCESS || !name)
    name = "unknown CUDA error";
  if (driver.cuGetErrorString(result, &text) != CUDA_SUCCESS || !text)
    text = "";
  return std::string(call) + ": " + name + " (" + std::to_string(result) + ")" +
         (*text ? std::string(": ") + text : std::string());
}
