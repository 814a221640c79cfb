/*===- fake-libcuda.c - a stand-in CUDA driver for the runtime's tests ----===*/
//
// Part of mlir-norm.
//
// libnormrt opens the driver named by $NORMRT_LIBCUDA; this library answers
// the entry points it resolves (lib/Runtime/Driver.cpp) without a GPU, so
// tests reach the checks a load makes against the device. The device's
// compute capability is $NORMRT_FAKE_CC ("80": 8.0; default 90). Loads,
// lookups and memsets succeed, every kernel runs up to 1024 threads, and
// cuLaunchKernel prints "fake cuLaunchKernel grid G block B" to stdout
// instead of launching (and, with $NORMRT_FAKE_PARAMS = K, a line with
// the first K 8-byte parameters in hex). Contexts are a stack of one fake
// context.
//
// Registers, for the runtime's wave fitting (lib/Runtime/Module.cpp
// fitWaves): a kernel has $NORMRT_FAKE_REGS registers a thread (default
// 32) and no local memory; an image with `.minnctapersm` loads as a second
// module whose kernels have $NORMRT_FAKE_FITTED_REGS (default 64) and
// $NORMRT_FAKE_LOCAL bytes of local memory (default 0). Blocks an SM:
// min(2048 / block, 65536 / (registers x block)). With NORMRT_FAKE_REGS
// set, loads of such an image, unloads and launches say which module.
//
//===----------------------------------------------------------------------===*/

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef int CUresult;
typedef void *CUhandle;

enum { OK = 0, INVALID_VALUE = 1, INVALID_CONTEXT = 201 };

static int fakeContext, fakeModule, fakeFunction;
static int fakeFittedModule, fakeFittedFunction;

static int envInt(const char *name, int otherwise) {
  const char *v = getenv(name);
  return v && *v ? atoi(v) : otherwise;
}

static int tellModules(void) { return getenv("NORMRT_FAKE_REGS") != NULL; }
static void *contextStack[16];
static int depth;

static int computeCapability(void) {
  const char *cc = getenv("NORMRT_FAKE_CC");
  return cc && *cc ? atoi(cc) : 90;
}

EXPORT CUresult cuInit(unsigned flags) {
  (void)flags;
  return OK;
}
EXPORT CUresult cuDeviceGet(int *device, int ordinal) {
  *device = ordinal;
  return OK;
}
EXPORT CUresult cuDeviceGetAttribute(int *value, int attribute, int device) {
  (void)device;
  if (attribute == 75) // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
    *value = computeCapability() / 10;
  else if (attribute == 76) // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
    *value = computeCapability() % 10;
  else if (attribute == 97) // ..._MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
    *value = computeCapability() >= 90 ? 227 * 1024 : 99 * 1024;
  else
    return INVALID_VALUE;
  return OK;
}
EXPORT CUresult cuCtxGetCurrent(CUhandle *context) {
  *context = depth ? contextStack[depth - 1] : NULL;
  return OK;
}
EXPORT CUresult cuCtxGetDevice(int *device) {
  if (!depth)
    return INVALID_CONTEXT;
  *device = 0;
  return OK;
}
EXPORT CUresult cuCtxPushCurrent_v2(CUhandle context) {
  if (depth == 16)
    return INVALID_VALUE;
  contextStack[depth++] = context;
  return OK;
}
EXPORT CUresult cuCtxPopCurrent_v2(CUhandle *context) {
  if (!depth)
    return INVALID_CONTEXT;
  *context = contextStack[--depth];
  return OK;
}
EXPORT CUresult cuDevicePrimaryCtxRetain(CUhandle *context, int device) {
  (void)device;
  *context = &fakeContext;
  return OK;
}
EXPORT CUresult cuDevicePrimaryCtxRelease_v2(int device) {
  (void)device;
  return OK;
}
EXPORT CUresult cuModuleLoadDataEx(CUhandle *module, const void *image,
                                   unsigned numOptions, int *options,
                                   void **values) {
  (void)numOptions, (void)options, (void)values;
  const char *min = strstr((const char *)image, ".minnctapersm ");
  *module = min ? (CUhandle)&fakeFittedModule : (CUhandle)&fakeModule;
  if (min && tellModules())
    printf("fake cuModuleLoadDataEx .minnctapersm %d\n", atoi(min + 14));
  return OK;
}
EXPORT CUresult cuModuleGetFunction(CUhandle *function, CUhandle module,
                                    const char *name) {
  (void)name;
  *function = module == &fakeFittedModule ? (CUhandle)&fakeFittedFunction
                                          : (CUhandle)&fakeFunction;
  return OK;
}
EXPORT CUresult cuModuleUnload(CUhandle module) {
  if (tellModules())
    printf("fake cuModuleUnload %s\n",
           module == &fakeFittedModule ? "fitted" : "first");
  return OK;
}
EXPORT CUresult cuFuncGetAttribute(int *value, int attribute,
                                   CUhandle function) {
  if (attribute == 0) // CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK
    *value = 1024;
  else if (attribute == 1) // CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES
    *value = 1024;
  else if (attribute == 3) // CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES
    *value = function == &fakeFittedFunction ? envInt("NORMRT_FAKE_LOCAL", 0)
                                             : 0;
  else
    return INVALID_VALUE;
  return OK;
}
EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(
    int *blocks, CUhandle function, int blockSize, size_t dynamicShared) {
  (void)dynamicShared;
  if (blockSize <= 0)
    return INVALID_VALUE;
  int regs = function == &fakeFittedFunction
                 ? envInt("NORMRT_FAKE_FITTED_REGS", 64)
                 : envInt("NORMRT_FAKE_REGS", 32);
  int byRegs = 65536 / ((regs > 0 ? regs : 1) * blockSize);
  int byThreads = 2048 / blockSize;
  *blocks = byRegs < byThreads ? byRegs : byThreads;
  return OK;
}
EXPORT CUresult cuFuncSetAttribute(CUhandle function, int attribute,
                                   int value) {
  (void)function;
  if (attribute != 8) // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    return INVALID_VALUE;
  printf("fake cuFuncSetAttribute max dynamic shared %d\n", value);
  return OK;
}
EXPORT CUresult cuLaunchKernel(CUhandle function, unsigned gridX,
                               unsigned gridY, unsigned gridZ, unsigned blockX,
                               unsigned blockY, unsigned blockZ,
                               unsigned sharedMemBytes, CUhandle stream,
                               void **kernelParams, void **extra) {
  (void)gridY, (void)gridZ, (void)blockY, (void)blockZ;
  (void)stream, (void)extra;
  if (tellModules())
    printf("(%s module) ",
           function == &fakeFittedFunction ? "fitted" : "first");
  if (sharedMemBytes)
    printf("fake cuLaunchKernel grid %u block %u shared %u\n", gridX, blockX,
           sharedMemBytes);
  else
    printf("fake cuLaunchKernel grid %u block %u\n", gridX, blockX);
  const char *k = getenv("NORMRT_FAKE_PARAMS");
  int count = k && *k ? atoi(k) : 0;
  if (count > 0) {
    printf("fake params");
    for (int i = 0; i < count; ++i)
      printf(" %llx", *(const unsigned long long *)kernelParams[i]);
    printf("\n");
  }
  return OK;
}
EXPORT CUresult cuMemsetD8Async(unsigned long long address, unsigned char value,
                                size_t count, CUhandle stream) {
  (void)address, (void)value, (void)count, (void)stream;
  return OK;
}
EXPORT CUresult cuGetErrorName(CUresult error, const char **name) {
  *name = error == INVALID_CONTEXT ? "CUDA_ERROR_INVALID_CONTEXT"
                                   : "CUDA_ERROR_INVALID_VALUE";
  return OK;
}
EXPORT CUresult cuGetErrorString(CUresult error, const char **text) {
  (void)error;
  *text = "from the fake driver";
  return OK;
}
