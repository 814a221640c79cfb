//===- Driver.h - the CUDA driver API, loaded at run time -------*- C++ -*-===//
//
// Part of mlir-norm.
//
// The runtime links no CUDA library: libcuda.so.1 (or the file named by
// $NORMRT_LIBCUDA) is opened with dlopen on first use and the few entry
// points it needs are resolved by name. The types and enumerators below are
// the subset of cuda.h (CUDA 12/13) the runtime uses, with the values cuda.h
// gives them; the symbol names are the ones cuda.h maps the API names to
// (cuDevicePrimaryCtxRelease -> cuDevicePrimaryCtxRelease_v2, ...).
//
//===----------------------------------------------------------------------===//

#ifndef NORM_LIB_RUNTIME_DRIVER_H
#define NORM_LIB_RUNTIME_DRIVER_H

#include <cstddef>
#include <string>

namespace mlir::norm::runtime::cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUstream = struct CUstream_st *;
using CUjit_option = int;
using CUdevice_attribute = int;
using CUfunction_attribute = int;

constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUjit_option CU_JIT_ERROR_LOG_BUFFER = 5;
constexpr CUjit_option CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
constexpr CUdevice_attribute
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97;
constexpr CUfunction_attribute CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0;
constexpr CUfunction_attribute CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1;
constexpr CUfunction_attribute CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3;
constexpr CUfunction_attribute CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES =
    8;

/// cuLaunchKernelEx's configuration (cuda.h CUlaunchAttribute, CUlaunchConfig):
/// an attribute is its id, padding to 8 bytes, and a 64-byte value union
/// (8-byte aligned) of which the runtime sets one int.
using CUlaunchAttributeID = int;
constexpr CUlaunchAttributeID
    CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6;
struct CUlaunchAttribute {
  CUlaunchAttributeID id;
  char pad[8 - sizeof(CUlaunchAttributeID)];
  union alignas(8) {
    char bytes[64];
    int programmaticStreamSerializationAllowed;
  } value;
};
static_assert(sizeof(CUlaunchAttribute) == 72, "cuda.h's layout");
struct CUlaunchConfig {
  unsigned gridDimX, gridDimY, gridDimZ;
  unsigned blockDimX, blockDimY, blockDimZ;
  unsigned sharedMemBytes;
  CUstream hStream;
  CUlaunchAttribute *attrs;
  unsigned numAttrs;
};

/// The resolved entry points.
struct Driver {
  CUresult (*cuInit)(unsigned flags);
  CUresult (*cuDeviceGet)(CUdevice *device, int ordinal);
  CUresult (*cuDeviceGetAttribute)(int *value, CUdevice_attribute attribute,
                                   CUdevice device);
  CUresult (*cuCtxGetCurrent)(CUcontext *context);
  CUresult (*cuCtxGetDevice)(CUdevice *device);
  CUresult (*cuCtxPushCurrent)(CUcontext context);
  CUresult (*cuCtxPopCurrent)(CUcontext *context);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *context, CUdevice device);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice device);
  CUresult (*cuModuleLoadDataEx)(CUmodule *module, const void *image,
                                 unsigned numOptions, CUjit_option *options,
                                 void **optionValues);
  CUresult (*cuModuleGetFunction)(CUfunction *function, CUmodule module,
                                  const char *name);
  CUresult (*cuModuleUnload)(CUmodule module);
  CUresult (*cuFuncGetAttribute)(int *value, CUfunction_attribute attribute,
                                 CUfunction function);
  CUresult (*cuFuncSetAttribute)(CUfunction function,
                                 CUfunction_attribute attribute, int value);
  CUresult (*cuLaunchKernel)(CUfunction function, unsigned gridX,
                             unsigned gridY, unsigned gridZ, unsigned blockX,
                             unsigned blockY, unsigned blockZ,
                             unsigned sharedMemBytes, CUstream stream,
                             void **kernelParams, void **extra);
  /// Optional (CUDA 12.0+; null if absent): launches with attributes, for
  /// the kernels the manifest marks `waits` (programmatic stream
  /// serialization).
  CUresult (*cuLaunchKernelEx)(const CUlaunchConfig *config,
                               CUfunction function, void **kernelParams,
                               void **extra);
  CUresult (*cuMemsetD8Async)(CUdeviceptr address, unsigned char value,
                              size_t count, CUstream stream);
  CUresult (*cuGetErrorName)(CUresult error, const char **name);
  CUresult (*cuGetErrorString)(CUresult error, const char **text);
  /// Optional (CUDA 12.4+; null if absent): the parameter layout of a
  /// kernel, used to check the manifest's parameter count.
  CUresult (*cuFuncGetParamInfo)(CUfunction function, size_t index,
                                 size_t *offset, size_t *size);
  /// Optional (null if absent): the blocks of `blockSize` threads an SM
  /// keeps resident, used to fit a kernel's wave (Module.cpp fitWaves).
  CUresult (*cuOccupancyMaxActiveBlocksPerMultiprocessor)(
      int *numBlocks, CUfunction function, int blockSize,
      size_t dynamicSharedBytes);
};

/// The driver, loaded and initialised (cuInit) on the first call; null if
/// that failed, with `error` set to the reason, e.g. "CUDA driver not found
/// (dlopen libcuda.so.1: ...)". Thread-safe; the outcome of the first call
/// is kept.
const Driver *getDriver(std::string &error);

/// "cuModuleGetFunction: CUDA_ERROR_NOT_FOUND (500): named symbol not
/// found".
std::string describeError(const Driver &driver, const char *call,
                          CUresult result);

} // namespace mlir::norm::runtime::cuda

#endif // NORM_LIB_RUNTIME_DRIVER_H
