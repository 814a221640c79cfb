//===- Module.cpp - a loaded manifest and its kernels ---------------------===//
//
// Part of mlir-norm.
//
//===----------------------------------------------------------------------===//

#include "Module.h"

#include <cstdlib>
#include <cstring>

using namespace mlir::norm::runtime;
using namespace mlir::norm::runtime::cuda;

namespace {

/// Makes `context` current on this thread for the scope's lifetime, unless
/// it already is, and restores the previous one after.
class ContextScope {
public:
  ContextScope(const Driver &driver, CUcontext context) : driver(driver) {
    CUcontext current = nullptr;
    if (driver.cuCtxGetCurrent(&current) == CUDA_SUCCESS && current == context)
      return;
    result = driver.cuCtxPushCurrent(context);
    pushed = result == CUDA_SUCCESS;
  }
  ~ContextScope() {
    CUcontext popped;
    if (pushed)
      driver.cuCtxPopCurrent(&popped);
  }
  ContextScope(const ContextScope &) = delete;
  ContextScope &operator=(const ContextScope &) = delete;

  /// The push's result.
  CUresult result = CUDA_SUCCESS;

private:
  const Driver &driver;
  bool pushed = false;
};

Status driverError(const Driver &driver, const char *call, CUresult result,
                   const std::string &context = "") {
  return Status::error(NORMRT_ERROR_DRIVER,
                       (context.empty() ? "" : context + ": ") +
                           describeError(driver, call, result));
}

/// 90 for "sm_90" or "sm_90a"; 0 if `chip` is not of that form.
int chipVersion(const std::string &chip) {
  if (chip.rfind("sm_", 0) != 0)
    return 0;
  return std::atoi(chip.c_str() + 3);
}

/// Whether the kernels the manifest marks `waits` may be launched with
/// programmatic stream serialization (NormrtModule::dependentLaunch).
/// NORMRT_DEPENDENT_LAUNCH=0 launches them as any other kernel: their wait
/// then returns at once (docs/GPU.md "Dependent launches").
bool dependentLaunchAllowed(const NormrtModule &m) {
  const char *env = std::getenv("NORMRT_DEPENDENT_LAUNCH");
  if ((env && std::string_view(env) == "0") || !m.driver->cuLaunchKernelEx)
    return false;
  int major = 0;
  return m.driver->cuDeviceGetAttribute(
             &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
             m.device) == CUDA_SUCCESS &&
         major >= 9;
}

/// The device's compute capability must run the kernels: at least the
/// chip's (PTX is JIT-compiled forward), and the same major for a cubin;
/// and 9.0 for a kernel launched in thread-block clusters, whatever the
/// chip (a launch would fail with an unexplained driver error).
Status checkChip(const NormrtModule &m) {
  int target = chipVersion(m.manifest.chip);
  const KernelSpec *clustered = nullptr;
  for (const KernelSpec &k : m.manifest.kernels)
    if (k.cluster > 1) {
      clustered = &k;
      break;
    }
  if (!target && !clustered)
    return Status::success();
  const Driver &d = *m.driver;
  int major = 0, minor = 0;
  if (CUresult r = d.cuDeviceGetAttribute(
          &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, m.device))
    return driverError(d, "cuDeviceGetAttribute", r);
  if (CUresult r = d.cuDeviceGetAttribute(
          &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, m.device))
    return driverError(d, "cuDeviceGetAttribute", r);
  if (clustered && major < 9)
    return Status::error(
        NORMRT_ERROR_DRIVER,
        "kernel '" + clustered->name + "' is launched in clusters of " +
            std::to_string(clustered->cluster) +
            " blocks, which need compute capability 9.0; device " +
            std::to_string(m.device) + " has " + std::to_string(major) + "." +
            std::to_string(minor));
  if (!target)
    return Status::success();
  int device = major * 10 + minor;
  bool cubin = m.manifest.format == "bin";
  if (device < target || (cubin && major != target / 10))
    return Status::error(
        NORMRT_ERROR_DRIVER,
        "the kernels are compiled for " + m.manifest.chip +
            (cubin ? " (cubin)" : "") + " but device " +
            std::to_string(m.device) + " is sm_" + std::to_string(device) +
            "; compile them with --chip=sm_" + std::to_string(device));
  return Status::success();
}

/// Resolves every manifest kernel and checks its block size and, where the
/// driver can tell, its parameter count.
Status resolveKernels(NormrtModule &m) {
  const Driver &d = *m.driver;
  for (const KernelSpec &k : m.manifest.kernels) {
    CUfunction f = nullptr;
    if (CUresult r = d.cuModuleGetFunction(&f, m.module, k.name.c_str()))
      return driverError(d, "cuModuleGetFunction", r,
                         "kernel '" + k.name + "' is not in the image");
    int maxThreads = 0;
    if (CUresult r = d.cuFuncGetAttribute(
            &maxThreads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f))
      return driverError(d, "cuFuncGetAttribute", r, "kernel '" + k.name + "'");
    if (maxThreads < k.block)
      return Status::error(NORMRT_ERROR_DRIVER,
                           "kernel '" + k.name + "' launches with blocks of " +
                               std::to_string(k.block) +
                               " threads but runs at most " +
                               std::to_string(maxThreads) + " on this device");
    if (k.shared > 0) {
      // Opt in to the dynamic shared memory the kernel is launched with;
      // with its static shared memory it must fit the device's opt-in
      // limit per block.
      int optIn = 0, staticBytes = 0;
      if (CUresult r = d.cuDeviceGetAttribute(
              &optIn, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
              m.device))
        return driverError(d, "cuDeviceGetAttribute", r);
      if (CUresult r = d.cuFuncGetAttribute(
              &staticBytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f))
        return driverError(d, "cuFuncGetAttribute", r,
                           "kernel '" + k.name + "'");
      if (int64_t(staticBytes) + k.shared > int64_t(optIn))
        return Status::error(
            NORMRT_ERROR_DRIVER,
            "kernel '" + k.name + "' needs " +
                std::to_string(staticBytes + k.shared) +
                " bytes of shared memory a block (" +
                std::to_string(k.shared) +
                " of them dynamic) but device " + std::to_string(m.device) +
                " gives a block at most " + std::to_string(optIn));
      if (CUresult r = d.cuFuncSetAttribute(
              f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
              int(k.shared)))
        return driverError(d, "cuFuncSetAttribute", r,
                           "kernel '" + k.name + "': " +
                               std::to_string(k.shared) +
                               " bytes of dynamic shared memory");
    }
    if (d.cuFuncGetParamInfo && k.numScalarParams() > 0) {
      // The manifest's last parameter must be the kernel's 8-byte parameter
      // at offset 8 * (count - 1). Only indices that should exist are
      // queried: probing past the end is an API error that sanitizers
      // report.
      size_t expected = size_t(k.numScalarParams());
      size_t offset = 0, size = 0;
      CUresult r = d.cuFuncGetParamInfo(f, expected - 1, &offset, &size);
      if (r != CUDA_SUCCESS || size != 8 || offset != 8 * (expected - 1))
        return Status::error(
            NORMRT_ERROR_MANIFEST,
            "kernel '" + k.name + "' does not take the " +
                std::to_string(expected) + " parameters the manifest's " +
                std::to_string(k.params.size()) +
                " memrefs expand to (manifest and image out of date?)");
    }
    m.functions.push_back(f);
  }
  return Status::success();
}

/// The local memory a thread of a wave-fitted kernel may take (its spills):
/// the kernels measured faster for their wave spilled up to 48 bytes a
/// thread (RMSNorm bf16 N = 1000, 80 -> 64 registers, 1.14-1.17x; LayerNorm
/// 16-bit N = 4096, 70 -> 64, 16 bytes, 1.03-1.10x; H100, docs/NOTES.md).
constexpr int kWaveLocalBytes = 64;

/// `ptx` with `.minnctapersm blocks` among the performance directives of
/// the entry `name` (just before its body); empty where the entry is not
/// there or already states one.
std::string withMinBlocks(const std::string &ptx, const std::string &name,
                          int64_t blocks) {
  std::string entry = ".entry " + name + "(";
  size_t at = ptx.find(entry);
  if (at == std::string::npos)
    return {};
  size_t params = ptx.find(')', at + entry.size());
  size_t body = params == std::string::npos ? params : ptx.find('{', params);
  if (body == std::string::npos ||
      ptx.substr(params, body - params).find(".minnctapersm") !=
          std::string::npos)
    return {};
  return ptx.substr(0, body) + ".minnctapersm " + std::to_string(blocks) +
         "\n" + ptx.substr(body);
}

/// Loads a NUL-terminated image into `module`; the JIT's log in `log`.
CUresult loadImage(const Driver &d, const char *image, CUmodule &module,
                   std::string &log) {
  char buffer[8192] = {0};
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER,
                            CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {buffer,
                    reinterpret_cast<void *>(uintptr_t(sizeof(buffer)))};
  CUresult r = d.cuModuleLoadDataEx(&module, image, 2, options, values);
  if (r)
    module = nullptr;
  buffer[sizeof(buffer) - 1] = 0;
  log = buffer;
  return r;
}

/// The blocks of kernel `i` an SM keeps resident at its launch's block and
/// dynamic shared memory; 0 where the driver cannot tell.
int residentBlocks(const NormrtModule &m, size_t i) {
  const KernelSpec &k = m.manifest.kernels[i];
  int blocks = 0;
  if (!m.driver->cuOccupancyMaxActiveBlocksPerMultiprocessor ||
      m.driver->cuOccupancyMaxActiveBlocksPerMultiprocessor(
          &blocks, m.functions[i], int(k.block), size_t(k.shared)))
    return 0;
  return blocks;
}

/// A PTX module's kernels whose manifest names the blocks an SM their wave
/// needs (`wave_blocks`) and that the JIT left with fewer: loads the PTX
/// again with `.minnctapersm` at that many in their entries, and keeps the
/// new module where the JIT then keeps every such kernel's blocks, spilling
/// at most kWaveLocalBytes a thread; else the first module stays. Only the
/// JIT's registers decide, so a kernel it already fits is never recompiled
/// (measured: asking for the blocks where they already fit perturbs the
/// JIT's code and cost up to 7%). Nothing here fails a load.
void fitWaves(NormrtModule &m, const std::vector<char> &bytes) {
  if (m.manifest.format != "isa")
    return; // a cubin's registers are fixed
  std::string ptx(bytes.data());
  std::vector<size_t> fitted;
  for (size_t i = 0; i < m.manifest.kernels.size(); ++i) {
    const KernelSpec &k = m.manifest.kernels[i];
    if (k.wave <= 0)
      continue;
    int blocks = residentBlocks(m, i);
    if (blocks <= 0 || blocks >= k.wave)
      continue;
    std::string edited = withMinBlocks(ptx, k.name, k.wave);
    if (edited.empty())
      continue;
    ptx = std::move(edited);
    fitted.push_back(i);
  }
  if (fitted.empty())
    return;
  const Driver &d = *m.driver;
  CUmodule first = m.module;
  std::vector<CUfunction> firstFunctions = m.functions;
  std::string log;
  CUmodule second = nullptr;
  if (loadImage(d, ptx.c_str(), second, log))
    return;
  m.module = second;
  m.functions.clear();
  bool keep = !resolveKernels(m).failed();
  for (size_t i : fitted) {
    if (!keep)
      break;
    int local = 0;
    keep = residentBlocks(m, i) >= m.manifest.kernels[i].wave &&
           !d.cuFuncGetAttribute(&local, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES,
                                 m.functions[i]) &&
           local <= kWaveLocalBytes;
  }
  if (keep) {
    d.cuModuleUnload(first);
    return;
  }
  d.cuModuleUnload(second);
  m.module = first;
  m.functions = std::move(firstFunctions);
}

} // namespace

NormrtModule::~NormrtModule() {
  if (!driver)
    return;
  if (module) {
    ContextScope scope(*driver, context);
    driver->cuModuleUnload(module);
  }
  if (retainedPrimary)
    driver->cuDevicePrimaryCtxRelease(device);
}

Status
mlir::norm::runtime::loadManifestOnly(std::string_view manifestJson,
                                      std::unique_ptr<NormrtModule> &module) {
  auto m = std::make_unique<NormrtModule>();
  std::string error;
  if (!parseManifest(manifestJson, m->manifest, error))
    return Status::error(NORMRT_ERROR_MANIFEST, error);
  module = std::move(m);
  return Status::success();
}

Status mlir::norm::runtime::loadModule(const void *image, size_t imageSize,
                                       std::string_view manifestJson,
                                       std::unique_ptr<NormrtModule> &module) {
  std::unique_ptr<NormrtModule> m;
  if (Status s = loadManifestOnly(manifestJson, m); s.failed())
    return s;
  if (!image || !imageSize)
    return Status::error(NORMRT_ERROR_INVALID_ARGUMENT,
                         "the kernel image is NULL or empty");
  std::string error;
  const Driver *d = getDriver(error);
  if (!d)
    return Status::error(NORMRT_ERROR_DRIVER, error);
  m->driver = d;

  // The calling thread's context, or device 0's primary context.
  if (CUresult r = d->cuCtxGetCurrent(&m->context))
    return driverError(*d, "cuCtxGetCurrent", r);
  if (!m->context) {
    if (CUresult r = d->cuDeviceGet(&m->device, 0))
      return driverError(*d, "cuDeviceGet", r);
    if (CUresult r = d->cuDevicePrimaryCtxRetain(&m->context, m->device))
      return driverError(*d, "cuDevicePrimaryCtxRetain", r);
    m->retainedPrimary = true;
  }
  ContextScope scope(*d, m->context);
  if (scope.result)
    return driverError(*d, "cuCtxPushCurrent", scope.result);
  if (CUresult r = d->cuCtxGetDevice(&m->device))
    return driverError(*d, "cuCtxGetDevice", r);
  if (Status s = checkChip(*m); s.failed())
    return s;

  // PTX must be NUL-terminated; a copy with one more byte serves every
  // format.
  std::vector<char> bytes(imageSize + 1, 0);
  std::memcpy(bytes.data(), image, imageSize);
  std::string log;
  if (CUresult r = loadImage(*d, bytes.data(), m->module, log)) {
    Status s =
        driverError(*d, "cuModuleLoadDataEx", r,
                    "loading the " +
                        (m->manifest.format.empty() ? std::string("kernel")
                                                    : m->manifest.format) +
                        " image");
    if (!log.empty())
      s.message += "; JIT log: " + log;
    return s;
  }
  if (Status s = resolveKernels(*m); s.failed())
    return s;
  fitWaves(*m, bytes);
  m->dependentLaunch = dependentLaunchAllowed(*m);
  const char *oneGroup = std::getenv("NORMRT_ONE_GROUP_REDUCE");
  m->launchSkipped = oneGroup && std::string_view(oneGroup) == "1";
  module = std::move(m);
  return Status::success();
}

Status mlir::norm::runtime::launchModule(const NormrtModule &module,
                                         const NormrtTensor *tensors,
                                         int32_t numTensors, void *workspace,
                                         size_t workspaceSize, void *stream) {
  // The thread's own plan and pointer array, used again at every launch:
  // planLaunch empties them without freeing their storage.
  thread_local LaunchPlan plan;
  thread_local std::vector<void *> pointers;
  if (Status s = planLaunch(module.manifest, tensors, numTensors, workspace,
                            workspaceSize, plan);
      s.failed())
    return s;
  if (plan.launches.empty() && plan.clears.empty())
    return Status::success();
  if (!module.driver)
    return Status::error(NORMRT_ERROR_INVALID_ARGUMENT,
                         "the module was loaded without kernels "
                         "(normrt_module_load_manifest_only); it cannot "
                         "launch");
  const Driver &d = *module.driver;
  ContextScope scope(d, module.context);
  if (scope.result)
    return driverError(d, "cuCtxPushCurrent", scope.result);
  auto cuStream = static_cast<CUstream>(stream);
  for (const auto &[address, bytes] : plan.clears)
    if (CUresult r = d.cuMemsetD8Async(address, 0, bytes, cuStream))
      return driverError(d, "cuMemsetD8Async", r, "clearing a workspace");
  for (KernelLaunch &l : plan.launches) {
    if (l.skipped && !module.launchSkipped)
      continue;
    pointers.clear();
    for (uint64_t &p : l.params)
      pointers.push_back(&p);
    const KernelSpec &k = module.manifest.kernels[l.kernel];
    // A kernel that waits for the grids before it in its entry may start
    // before they end: its launch and the scheduling of its blocks overlap
    // their tail.
    bool dependent = module.dependentLaunch && k.waits.value_or(false);
    CUresult r = CUDA_SUCCESS;
    if (dependent) {
      CUlaunchAttribute attribute{};
      attribute.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
      attribute.value.programmaticStreamSerializationAllowed = 1;
      CUlaunchConfig config{unsigned(l.grid), 1, 1, unsigned(l.block), 1, 1,
                            unsigned(k.shared), cuStream, &attribute, 1};
      r = d.cuLaunchKernelEx(&config, module.functions[l.kernel],
                             pointers.data(), nullptr);
    } else {
      r = d.cuLaunchKernel(module.functions[l.kernel], l.grid, 1, 1, l.block,
                           1, 1, unsigned(k.shared), cuStream,
                           pointers.data(), nullptr);
    }
    if (r)
      return driverError(d, dependent ? "cuLaunchKernelEx" : "cuLaunchKernel",
                         r,
                         "launching '" +
                             module.manifest.kernels[l.kernel].name +
                             "' (grid " + std::to_string(l.grid) + ", block " +
                             std::to_string(l.block) + ")");
  }
  return Status::success();
}
