//===- torch_ops.cpp - norm_mlir's four torch ops, bodies in C++ ----------===//
//
// Part of mlir-norm. libnormtorch.so: the bodies of the ops norm_mlir.torch
// defines (norm_mlir::layer_norm_fwd, rms_norm_fwd, layer_norm_bwd,
// rms_norm_bwd), through the LibTorch stable ABI only (torch/csrc/stable and
// its C shim, TORCH_TARGET_VERSION 2.10: one binary for every torch from
// 2.10 on), calling libnormrt's C API (include/norm-c/Runtime.h) directly.
// No Python C API: Python binds the few extern "C" functions at the end
// with ctypes.
//
// Per call: the rows of x (and dy) as a strided [M, N] view without a copy
// where the kernels take it (as norm_mlir.torch._rows), the outputs from
// torch's allocator (aoti_torch_empty_strided: the caching allocator, a
// CUDA graph's pool under capture), the compiled module from a table keyed
// by (op, N, dtypes, flags, eps, device), the workspace (backward only) as
// a uint8 tensor freed after the launch (stream-ordered), and one
// normrt_launch on torch's current CUDA stream. A key the table misses is
// resolved once by a callback Python registers (norm_mlir.torch._module:
// the kernel cache, compile on a miss, load), outside the table's lock.
//
// The ops are registered for a dispatch key by normtorch_register ("CUDA"
// when norm_mlir.torch binds the library; "CPU" in the CPU tests, with
// normtorch_set_mode(1, hook): each launch replaced by normrt_validate and a
// callback that sees the descriptors). The same bodies are also exported
// without the dispatcher (normtorch_direct, normtorch_direct.h): the C++
// autograd kernels call them with borrowed handles where the dispatcher
// would reach nothing else.
//
//===----------------------------------------------------------------------===//

#ifndef TORCH_TARGET_VERSION
#define TORCH_TARGET_VERSION (((0ULL + 2) << 56) | ((0ULL + 10) << 48))
#endif

#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/tensor.h>

#include "norm-c/Runtime.h"
#include "normtorch_direct.h"

#include <dlfcn.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

using torch::stable::Tensor;
using torch::stable::detail::StableLibrary;

#define NORMTORCH_API extern "C" __attribute__((visibility("default")))

namespace {

// ---------------------------------------------------------------- libnormrt
//
// Resolved from the library Python already loaded (normtorch_init names
// it), so both bind one instance and the modules Python loads are the
// handles launched here.

struct Normrt {
  decltype(&normrt_launch) launch = nullptr;
  decltype(&normrt_validate) validate = nullptr;
  decltype(&normrt_workspace_bytes) workspaceBytes = nullptr;
  decltype(&normrt_last_error) lastError = nullptr;
};
Normrt rt;

// aoti_torch_get_current_cuda_stream lives in libtorch_cuda.so (declared in
// the shim only under USE_CUDA); resolved on first use, so this library
// loads on a CPU-only torch too.
using CurrentStreamFn = AOTITorchError (*)(int32_t, void **);
std::atomic<CurrentStreamFn> currentStreamFn{nullptr};

void *currentCudaStream(int32_t device) {
  CurrentStreamFn fn = currentStreamFn.load(std::memory_order_acquire);
  if (!fn) {
    void *sym = nullptr;
    if (void *h = dlopen("libtorch_cuda.so", RTLD_LAZY | RTLD_NOLOAD))
      sym = dlsym(h, "aoti_torch_get_current_cuda_stream");
    if (!sym)
      sym = dlsym(RTLD_DEFAULT, "aoti_torch_get_current_cuda_stream");
    if (!sym)
      throw std::runtime_error(
          "norm_mlir: aoti_torch_get_current_cuda_stream not found (a torch "
          "without CUDA?)");
    fn = reinterpret_cast<CurrentStreamFn>(sym);
    currentStreamFn.store(fn, std::memory_order_release);
  }
  void *stream = nullptr;
  if (fn(device, &stream) != AOTI_TORCH_SUCCESS)
    throw std::runtime_error("norm_mlir: no current CUDA stream for cuda:" +
                             std::to_string(device));
  return stream;
}

// ------------------------------------------------------------ torch codes

struct Codes {
  int32_t f32, f16, bf16, u8, cpu, cuda;
};
const Codes &codes() {
  static const Codes c{aoti_torch_dtype_float32(), aoti_torch_dtype_float16(),
                       aoti_torch_dtype_bfloat16(), aoti_torch_dtype_uint8(),
                       aoti_torch_device_type_cpu(),
                       aoti_torch_device_type_cuda()};
  return c;
}

/// NormrtDtype of a torch dtype code, -1 if none.
int32_t normrtDtype(int32_t torchDtype) {
  const Codes &c = codes();
  if (torchDtype == c.f32)
    return NORMRT_F32;
  if (torchDtype == c.f16)
    return NORMRT_F16;
  if (torchDtype == c.bf16)
    return NORMRT_BF16;
  return -1;
}

[[noreturn]] void fail(const std::string &msg) {
  throw std::runtime_error("norm_mlir: " + msg);
}

void check(AOTITorchError err, const char *what) {
  if (err != AOTI_TORCH_SUCCESS)
    fail(std::string(what) + " failed");
}

/// A tensor's metadata, read once through the C shim.
struct Meta {
  AtenTensorHandle h;
  int64_t dim;
  const int64_t *sizes, *strides;
  int32_t dtype, deviceType, device;
  void *data;

  explicit Meta(AtenTensorHandle t) : h(t) {
    int64_t *sz, *st;
    check(aoti_torch_get_dim(h, &dim), "aoti_torch_get_dim");
    check(aoti_torch_get_sizes(h, &sz), "aoti_torch_get_sizes");
    check(aoti_torch_get_strides(h, &st), "aoti_torch_get_strides");
    check(aoti_torch_get_dtype(h, &dtype), "aoti_torch_get_dtype");
    check(aoti_torch_get_device_type(h, &deviceType),
          "aoti_torch_get_device_type");
    check(aoti_torch_get_device_index(h, &device),
          "aoti_torch_get_device_index");
    check(aoti_torch_get_data_ptr(h, &data), "aoti_torch_get_data_ptr");
    sizes = sz;
    strides = st;
  }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d = 0; d < dim; ++d)
      n *= sizes[d];
    return n;
  }
};

std::string deviceName(int32_t type, int32_t index) {
  const Codes &c = codes();
  if (type == c.cpu)
    return "cpu";
  if (type == aoti_torch_device_type_meta())
    return "meta";
  std::string s =
      type == c.cuda ? "cuda" : "device type " + std::to_string(type);
  return index >= 0 ? s + ":" + std::to_string(index) : s;
}

/// A tensor handle owned here, deleted unless released: what the shim's
/// allocations return, one owner and no shared_ptr (torch::stable::Tensor
/// makes one per tensor; the boxed ops wrap only what they return).
class Owned {
public:
  Owned() = default;
  explicit Owned(AtenTensorHandle h) : h_(h) {}
  Owned(Owned &&o) noexcept : h_(o.h_) { o.h_ = nullptr; }
  Owned &operator=(Owned &&o) noexcept {
    if (this != &o) {
      reset();
      h_ = o.h_;
      o.h_ = nullptr;
    }
    return *this;
  }
  Owned(const Owned &) = delete;
  Owned &operator=(const Owned &) = delete;
  ~Owned() { reset(); }
  AtenTensorHandle get() const { return h_; }
  explicit operator bool() const { return h_ != nullptr; }
  AtenTensorHandle release() {
    AtenTensorHandle h = h_;
    h_ = nullptr;
    return h;
  }
  void reset() {
    if (h_)
      aoti_torch_delete_tensor_object(h_);
    h_ = nullptr;
  }

private:
  AtenTensorHandle h_ = nullptr;
};

/// A new contiguous tensor from torch's allocator (the caching allocator
/// on CUDA; a CUDA graph's private pool under capture).
Owned emptyContiguous(int64_t dim, const int64_t *sizes, int32_t dtype,
                      int32_t deviceType, int32_t device) {
  int64_t strides[16];
  if (dim > 16)
    fail("rank " + std::to_string(dim) + " is above 16");
  int64_t s = 1;
  for (int64_t d = dim - 1; d >= 0; --d) {
    strides[d] = s;
    s *= sizes[d] > 1 ? sizes[d] : 1;
  }
  AtenTensorHandle out = nullptr;
  check(aoti_torch_empty_strided(dim, sizes, strides, dtype, deviceType,
                                 device, &out),
        "aoti_torch_empty_strided");
  return Owned(out);
}

Owned empty1d(int64_t n, int32_t dtype, const Meta &like) {
  return emptyContiguous(1, &n, dtype, like.deviceType, like.device);
}

/// ATen's computeStride: the strides of a view of (sizes, strides) as
/// newShape, if one exists (Tensor.view's rule, numel > 0 or not).
bool viewStrides(int64_t dim, const int64_t *sizes, const int64_t *strides,
                 int64_t newDim, const int64_t *newShape, int64_t *out) {
  if (dim == 0) {
    for (int64_t d = 0; d < newDim; ++d)
      out[d] = 1;
    return true;
  }
  int64_t numel = 1;
  for (int64_t d = 0; d < dim; ++d)
    numel *= sizes[d];
  if (numel == 0) {
    bool same = dim == newDim;
    for (int64_t d = 0; same && d < dim; ++d)
      same = sizes[d] == newShape[d];
    if (same) {
      for (int64_t d = 0; d < dim; ++d)
        out[d] = strides[d];
      return true;
    }
    for (int64_t d = newDim - 1; d >= 0; --d)
      out[d] = d == newDim - 1
                   ? 1
                   : std::max<int64_t>(newShape[d + 1], 1) * out[d + 1];
    return true;
  }
  int64_t viewD = newDim - 1;
  int64_t chunkBaseStride = strides[dim - 1];
  int64_t tensorNumel = 1, viewNumel = 1;
  for (int64_t d = dim - 1; d >= 0; --d) {
    tensorNumel *= sizes[d];
    if (d == 0 || (sizes[d - 1] != 1 &&
                   strides[d - 1] != tensorNumel * chunkBaseStride)) {
      while (viewD >= 0 && (viewNumel < tensorNumel || newShape[viewD] == 1)) {
        out[viewD] = viewNumel * chunkBaseStride;
        viewNumel *= newShape[viewD];
        --viewD;
      }
      if (viewNumel != tensorNumel)
        return false;
      if (d > 0) {
        chunkBaseStride = strides[d - 1];
        tensorNumel = 1;
        viewNumel = 1;
      }
    }
  }
  return viewD == -1;
}

Owned contiguousCopy(const Meta &t) {
  Owned out = emptyContiguous(t.dim, t.sizes, t.dtype, t.deviceType, t.device);
  AtenTensorHandle src = t.h;
  check(aoti_torch_copy_(out.get(), src, 0), "aoti_torch_copy_");
  return out;
}

/// One argument of a launch: a NormrtTensor (rank <= 2 here, or a
/// statistic's own rank) and, where one was made, the tensor behind it.
struct Rows {
  void *data;
  int64_t m, s0, s1;
  Owned copy; // where one was made: kept alive until the launch is queued
};

/// x as [M, n] rows without a copy where its rows are evenly strided,
/// apart, with unit inner stride (norm_mlir.torch._rows, exactly).
Rows rowsOf(const Meta &x, int64_t n) {
  auto fits = [n](int64_t m, int64_t s0, int64_t s1) {
    return (m <= 1 || s0 >= n) && (s1 == 1 || n == 1);
  };
  int64_t numel = x.numel();
  if (n <= 0 || numel % n != 0)
    fail("cannot view a tensor of " + std::to_string(numel) +
         " elements as rows of " + std::to_string(n));
  if (x.dim == 2 && x.sizes[1] == n &&
      fits(x.sizes[0], x.strides[0], x.strides[1]))
    return {x.data, x.sizes[0], x.strides[0], x.strides[1], Owned()};
  int64_t shape[2] = {numel / n, n}, st[2];
  if (viewStrides(x.dim, x.sizes, x.strides, 2, shape, st) &&
      fits(shape[0], st[0], st[1]))
    return {x.data, shape[0], st[0], st[1], Owned()};
  Owned c = contiguousCopy(x);
  void *p = nullptr;
  check(aoti_torch_get_data_ptr(c.get(), &p), "aoti_torch_get_data_ptr");
  return {p, numel / n, n, 1, std::move(c)};
}

/// A parameter (weight, bias) as [n] (param.reshape(n)).
Rows paramOf(const Meta &p, int64_t n) {
  if (p.numel() != n)
    fail("a parameter of " + std::to_string(p.numel()) +
         " elements for rows of " + std::to_string(n));
  int64_t st;
  if (viewStrides(p.dim, p.sizes, p.strides, 1, &n, &st))
    return {p.data, n, st, 1, Owned()};
  Owned c = contiguousCopy(p);
  void *ptr = nullptr;
  check(aoti_torch_get_data_ptr(c.get(), &ptr), "aoti_torch_get_data_ptr");
  return {ptr, n, 1, 1, std::move(c)};
}

// ------------------------------------------------------------ descriptors

struct Args {
  NormrtTensor t[12]; // a backward with everything: 9
  int32_t count = 0;

  NormrtTensor &add(const char *name, void *data, int32_t torchDtype) {
    if (count == 12)
      fail("too many arguments");
    int32_t dt = normrtDtype(torchDtype);
    if (dt < 0)
      fail(std::string("'") + name + "' has a dtype the kernels do not take");
    NormrtTensor &d = t[count++];
    d.name = name;
    d.data = data;
    d.dtype = dt;
    return d;
  }
  void rows(const char *name, const Rows &r, int64_t n, int32_t dtype) {
    NormrtTensor &d = add(name, r.data, dtype);
    d.rank = 2;
    d.sizes[0] = r.m;
    d.sizes[1] = n;
    d.strides[0] = r.s0;
    d.strides[1] = r.s1;
  }
  void vec(const char *name, const Rows &r, int32_t dtype) {
    NormrtTensor &d = add(name, r.data, dtype);
    d.rank = 1;
    d.sizes[0] = r.m;
    d.strides[0] = r.s0;
  }
  /// A tensor as it is (its own rank, sizes and strides).
  void whole(const char *name, const Meta &m) {
    if (m.dim < 1 || m.dim > NORMRT_MAX_RANK)
      fail(std::string(name) + ": rank " + std::to_string(m.dim) +
           " is outside [1, " + std::to_string(NORMRT_MAX_RANK) + "]");
    NormrtTensor &d = add(name, m.data, m.dtype);
    d.rank = int32_t(m.dim);
    for (int64_t i = 0; i < m.dim; ++i) {
      d.sizes[i] = m.sizes[i];
      d.strides[i] = m.strides[i];
    }
  }
  /// A fresh contiguous output viewed as [m, n].
  void out2d(const char *name, AtenTensorHandle t, int64_t m, int64_t n,
             int32_t dtype) {
    void *p = nullptr;
    check(aoti_torch_get_data_ptr(t, &p), "aoti_torch_get_data_ptr");
    rows(name, Rows{p, m, n, 1, Owned()}, n, dtype);
  }
  void out1d(const char *name, AtenTensorHandle t, int64_t len, int32_t dtype) {
    void *p = nullptr;
    check(aoti_torch_get_data_ptr(t, &p), "aoti_torch_get_data_ptr");
    vec(name, Rows{p, len, 1, 1, Owned()}, dtype);
  }
};

/// The weight and the bias (either may be absent) as the kernels' vectors:
/// Args keeps their data pointers, sizes and strides, not the Rows.
void addParams(Args &a, const std::optional<Meta> &wm,
               const std::optional<Meta> &bm, int64_t n) {
  if (wm)
    a.vec("weight", paramOf(*wm, n), wm->dtype);
  if (bm)
    a.vec("bias", paramOf(*bm, n), bm->dtype);
}

// ---------------------------------------------------------- kernel table

enum Op : int32_t { LayerNorm = 0, RmsNorm = 1, LayerNormGrad = 2,
                    RmsNormGrad = 3 };

/// The rows M where the tuning tables' M ranges end
/// (lib/Conversion/NormToGPU/Tuning.h kTuningRowEdges; norm_mlir.torch
/// _ROW_EDGES): every M of one bucket gets the same kernels, compiled with
/// the bucket's first M as the `rows` hint.
constexpr int64_t kRowEdges[] = {128, 512, 2048, 8192};

int8_t rowBucket(int64_t m) {
  int8_t b = 0;
  for (int64_t e : kRowEdges)
    b += m > e;
  return b;
}

int64_t bucketFirstRow(int8_t b) { return b ? kRowEdges[b - 1] + 1 : 1; }

struct Key {
  int64_t n;
  uint64_t epsBits;
  int32_t op, xDtype, wDtype, deviceType, device;
  int8_t bias, zc, dres, rows; // rows: rowBucket(M)
  bool operator==(const Key &o) const {
    return n == o.n && epsBits == o.epsBits && op == o.op &&
           xDtype == o.xDtype && wDtype == o.wDtype &&
           deviceType == o.deviceType && device == o.device &&
           bias == o.bias && zc == o.zc && dres == o.dres && rows == o.rows;
  }
};
struct KeyHash {
  size_t operator()(const Key &k) const {
    uint64_t h = 1469598103934665603ull;
    auto mix = [&h](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
    mix(uint64_t(k.n));
    mix(k.epsBits);
    mix(uint64_t(k.op) | uint64_t(uint32_t(k.xDtype)) << 8 |
        uint64_t(uint32_t(k.wDtype + 1)) << 16 |
        uint64_t(uint32_t(k.deviceType)) << 24 | uint64_t(k.bias) << 32 |
        uint64_t(k.zc) << 33 | uint64_t(k.dres) << 34 |
        uint64_t(uint8_t(k.rows)) << 40);
    mix(uint64_t(uint32_t(k.device)));
    return size_t(h);
  }
};

struct Entry {
  const NormrtModule *module;
  bool workspace; // whether any M needs one (the backward's partials)
};

// What Python registers: resolves a key to a loaded module (kept alive by
// Python until normtorch_clear), or returns NULL with a message in err.
// flags: bit 0 bias, bit 1 zero-centred, bit 2 dresidual (a backward that
// adds a residual's gradient into dx) or, for a forward, the fused residual
// add (h = x + residual written by the kernel); rows: the first M of the key's row
// bucket, the compile's `rows` hint (the tuning table's M ranges).
using Resolver = const void *(*)(int32_t op, int64_t n, int64_t rows,
                                 int32_t xDtype,
                                 int32_t wDtype, int32_t flags, double eps,
                                 int32_t deviceType, int32_t device,
                                 char *err, size_t cap);
// Validate mode's callback: sees each launch's descriptors (tests).
using Hook = int (*)(const void *module, const NormrtTensor *tensors,
                     int32_t count, void *workspace, size_t workspaceBytes);

std::mutex tableMutex;
std::unordered_map<Key, Entry, KeyHash> table;
std::atomic<uint64_t> generation{0}; // bumped by normtorch_clear
std::atomic<Resolver> resolver{nullptr};
std::atomic<int> mode{0}; // 0: launch, 1: validate (+ hook)
std::atomic<Hook> hook{nullptr};
std::atomic<int> cpuAllowed{0}; // a CPU registration is live (tests)
std::atomic<int> cudaRegistered{0}; // live registrations for CUDA

Entry lookup(const Key &key, double eps) {
  {
    std::lock_guard<std::mutex> g(tableMutex);
    auto it = table.find(key);
    if (it != table.end())
      return it->second;
  }
  Resolver r = resolver.load();
  if (!r)
    fail("no kernel resolver registered (import norm_mlir.torch)");
  char err[2048] = {0};
  const void *mod =
      r(key.op, key.n, bucketFirstRow(key.rows), key.xDtype, key.wDtype,
        key.bias | key.zc << 1 | key.dres << 2, eps,
        key.deviceType == codes().cuda ? 1 : 0, key.device, err,
        sizeof(err));
  if (!mod)
    throw std::runtime_error(err[0] ? std::string(err)
                                    : std::string("norm_mlir: no kernels"));
  Entry e{static_cast<const NormrtModule *>(mod), true};
  size_t bytes = 0;
  if (rt.workspaceBytes(e.module, int64_t(1) << 40, &bytes) == 0 &&
      bytes == 0)
    e.workspace = false; // never decreasing in M: none for any M
  std::lock_guard<std::mutex> g(tableMutex);
  return table.emplace(key, e).first->second;
}

Key makeKey(Op op, int64_t n, int64_t m, const Meta &x, const Meta *w,
            bool bias, double eps, bool zc, bool dres = false) {
  Key k{};
  k.n = n;
  k.rows = rowBucket(m);
  if (op == LayerNorm || op == RmsNorm)
    std::memcpy(&k.epsBits, &eps, sizeof(eps));
  k.op = op;
  k.xDtype = normrtDtype(x.dtype);
  k.wDtype = w ? normrtDtype(w->dtype) : -1;
  k.deviceType = x.deviceType;
  k.device = x.device;
  k.bias = bias;
  k.zc = zc;
  k.dres = dres;
  if (k.xDtype < 0 || (w && k.wDtype < 0))
    fail("x and the weight must be f32, f16 or bf16");
  return k;
}

// ---------------------------------------------------------------- checks

/// Every tensor on x's device, x on one the ops run on (CUDA; the CPU
/// while a test registration is live).
void sameDevice(const Meta &x, std::initializer_list<const Meta *> others) {
  const Codes &c = codes();
  if (x.deviceType != c.cuda && !(x.deviceType == c.cpu && cpuAllowed))
    fail("x is on " + deviceName(x.deviceType, x.device) +
         "; the kernels run on CUDA devices");
  for (const Meta *t : others)
    if (t && (t->deviceType != x.deviceType || t->device != x.device))
      fail("tensors on " + deviceName(x.deviceType, x.device) + " and " +
           deviceName(t->deviceType, t->device) +
           "; all must be on one device");
}

// ---------------------------------------------------------------- launch

/// normrt_workspace_bytes(module, rows), remembered per thread for the
/// last (module, rows): a training loop's backward repeats its M, so the
/// runtime is asked once, not at every call.
size_t workspaceBytes(const NormrtModule *module, int64_t rows) {
  thread_local const NormrtModule *lastModule = nullptr;
  thread_local int64_t lastRows = -1;
  thread_local uint64_t lastGeneration = 0;
  thread_local size_t lastBytes = 0;
  uint64_t gen = generation.load(std::memory_order_acquire);
  if (module == lastModule && rows == lastRows && gen == lastGeneration)
    return lastBytes;
  size_t bytes = 0;
  if (rt.workspaceBytes(module, rows, &bytes) != 0)
    fail(std::string("normrt_workspace_bytes: ") + rt.lastError());
  lastModule = module;
  lastRows = rows;
  lastGeneration = gen;
  lastBytes = bytes;
  return bytes;
}

void launch(const Entry &e, const Args &a, int64_t rows, const Meta &x) {
  size_t wsBytes = e.workspace ? workspaceBytes(e.module, rows) : 0;
  Owned ws;
  void *wsPtr = nullptr;
  if (wsBytes) {
    ws = empty1d(int64_t(wsBytes), codes().u8, x);
    check(aoti_torch_get_data_ptr(ws.get(), &wsPtr), "aoti_torch_get_data_ptr");
  }
  if (mode.load(std::memory_order_relaxed) == 1) {
    if (rt.validate(e.module, a.t, a.count, wsPtr, wsBytes) != 0)
      fail(std::string("normrt_validate: ") + rt.lastError());
    if (Hook h = hook.load())
      if (h(e.module, a.t, a.count, wsPtr, wsBytes) != 0)
        fail("the launch hook failed");
    return;
  }
  void *stream =
      x.deviceType == codes().cuda ? currentCudaStream(x.device) : nullptr;
  if (rt.launch(e.module, a.t, a.count, wsPtr, wsBytes, stream) != 0)
    fail(std::string("normrt_launch: ") + rt.lastError());
  // ws is released here: torch's allocator reuses it only for work queued
  // on this stream after the launch.
}

// ----------------------------------------------------------------- bodies
//
// Each body works on borrowed handles (NULL: an absent optional tensor) and
// returns the tensors it makes as Owned handles. Two callers: the boxed ops
// the dispatcher calls (further down: the stable ABI's Tensor in and out),
// and the direct table (normtorch_direct, normtorch_direct.h), through
// which the C++ autograd kernels call them with their own tensors where
// nothing would stand between the dispatcher and these bodies. Both reach
// the same code, so both launch the same kernels and throw the same errors.

/// A residual's gradient as rows beside x's: x's shape and dtype (the
/// kernels add it into dx). `name` for the message.
Rows residualRows(const Meta &r, const Meta &x, int64_t n, const char *name) {
  bool same = r.dim == x.dim && r.dtype == x.dtype;
  for (int64_t d = 0; same && d < x.dim; ++d)
    same = r.sizes[d] == x.sizes[d];
  if (!same)
    fail(std::string(name) + " must have x's shape and dtype");
  return rowsOf(r, n);
}

/// A forward's outputs; h (the fused residual add's sum) and mean
/// (LayerNorm) only where made.
struct FwdOut {
  Owned y, h, mean, rstd;
};

/// The forwards: op LayerNorm or RmsNorm; with the fused residual add
/// where residual is not NULL (the kernel reads x and residual, writes h =
/// x + residual, contiguous with x's shape, and normalises h).
FwdOut forward(Op op, AtenTensorHandle x, AtenTensorHandle residual,
               AtenTensorHandle weight, AtenTensorHandle bias, int64_t n,
               double eps, bool zc) {
  Meta xm(x);
  std::optional<Meta> rsm, wm, bm;
  if (residual)
    rsm.emplace(residual);
  if (weight)
    wm.emplace(weight);
  if (bias)
    bm.emplace(bias);
  sameDevice(xm,
             {rsm ? &*rsm : nullptr, wm ? &*wm : nullptr, bm ? &*bm : nullptr});
  Rows xr = rowsOf(xm, n);
  std::optional<Rows> rr;
  if (rsm)
    rr.emplace(residualRows(*rsm, xm, n, "residual"));
  int64_t m = xr.m;
  const int32_t f32 = codes().f32;
  FwdOut o;
  o.y = emptyContiguous(xm.dim, xm.sizes, xm.dtype, xm.deviceType, xm.device);
  if (rsm)
    o.h = emptyContiguous(xm.dim, xm.sizes, xm.dtype, xm.deviceType, xm.device);
  if (op == LayerNorm)
    o.mean = empty1d(m, f32, xm);
  o.rstd = empty1d(m, f32, xm);
  if (m) {
    Entry e = lookup(makeKey(op, n, m, xm, wm ? &*wm : nullptr, bm.has_value(),
                             eps, zc, rsm.has_value()),
                     eps);
    Args a;
    a.rows("x", xr, n, xm.dtype);
    if (rr)
      a.rows("residual", *rr, n, rsm->dtype);
    a.out2d("y", o.y.get(), m, n, xm.dtype);
    if (o.h)
      a.out2d("h", o.h.get(), m, n, xm.dtype);
    if (o.mean)
      a.out1d("mean", o.mean.get(), m, f32);
    a.out1d("rstd", o.rstd.get(), m, f32);
    addParams(a, wm, bm, n);
    launch(e, a, m, xm);
  }
  return o;
}

/// Whether dy can take dx in place: contiguous, with x's shape and dtype
/// (the kernels' in-place backward: dx is dy itself).
bool fitsDx(const Meta &dy, const Meta &x) {
  if (dy.dim != x.dim || dy.dtype != x.dtype)
    return false;
  int64_t s = 1;
  for (int64_t d = dy.dim - 1; d >= 0; --d) {
    if (dy.sizes[d] != x.sizes[d] || (dy.sizes[d] != 1 && dy.strides[d] != s))
      return false;
    s *= dy.sizes[d];
  }
  return true;
}

/// A backward's outputs: dx (not made where it went into dy), dweight
/// (empty without a weight), dbias (LayerNorm; empty without a bias).
struct BwdOut {
  Owned dx, dw, db;
};

/// The backwards: op LayerNorm (mean given) or RmsNorm (mean NULL);
/// dresidual (may be NULL) is added into dx; intoDy: dx is written over dy.
BwdOut backward(Op op, AtenTensorHandle dy, AtenTensorHandle x,
                AtenTensorHandle mean, AtenTensorHandle rstd,
                AtenTensorHandle weight, bool hasBias, int64_t n, bool zc,
                AtenTensorHandle dresidual, bool intoDy) {
  Meta dym(dy), xm(x);
  std::optional<Meta> mm;
  if (mean)
    mm.emplace(mean);
  Meta rm(rstd);
  std::optional<Meta> wm, rsm;
  if (weight)
    wm.emplace(weight);
  if (dresidual)
    rsm.emplace(dresidual);
  sameDevice(xm, {&dym, mm ? &*mm : nullptr, &rm, wm ? &*wm : nullptr,
                  rsm ? &*rsm : nullptr});
  Rows xr = rowsOf(xm, n), dyr = rowsOf(dym, n);
  if (intoDy && !fitsDx(dym, xm))
    fail("dx goes into dy only where dy is contiguous with x's shape and "
         "dtype");
  BwdOut o;
  if (!intoDy)
    o.dx =
        emptyContiguous(xm.dim, xm.sizes, xm.dtype, xm.deviceType, xm.device);
  int32_t wdt = wm ? wm->dtype : xm.dtype;
  o.dw = empty1d(wm ? n : 0, wdt, xm);
  bool ln = op == LayerNorm;
  if (ln)
    o.db = empty1d(hasBias ? n : 0, wdt, xm);
  int64_t m = xr.m;
  Entry e = lookup(makeKey(ln ? LayerNormGrad : RmsNormGrad, n, m, xm,
                           wm ? &*wm : nullptr, ln && hasBias, 0.0, zc,
                           rsm.has_value()),
                   0.0);
  Args a;
  a.rows("dy", dyr, n, dym.dtype);
  a.rows("x", xr, n, xm.dtype);
  if (mm)
    a.whole("mean", *mm);
  a.whole("rstd", rm);
  std::optional<Rows> rr;
  if (rsm) {
    rr.emplace(residualRows(*rsm, xm, n, "dresidual"));
    a.rows("dresidual", *rr, n, rsm->dtype);
  }
  a.out2d("dx", intoDy ? dy : o.dx.get(), m, n, xm.dtype);
  std::optional<Rows> wr;
  if (wm) {
    wr.emplace(paramOf(*wm, n));
    a.vec("weight", *wr, wm->dtype);
    a.out1d("dweight", o.dw.get(), n, wdt);
  }
  if (ln && hasBias)
    a.out1d("dbias", o.db.get(), n, wdt);
  launch(e, a, m, xm);
  return o;
}

// ------------------------------------------------------ the boxed ops
//
// What the dispatcher calls (registered by normtorch_register through the
// stable ABI's boxed kernels): the stable Tensor in and out.

AtenTensorHandle handleOf(const std::optional<Tensor> &t) {
  return t ? t->get() : nullptr;
}

Tensor out(Owned &t) { return Tensor(t.release()); }

std::tuple<Tensor, Tensor, Tensor>
layerNormFwd(Tensor x, std::optional<Tensor> weight, std::optional<Tensor> bias,
             int64_t n, double eps, bool zc) {
  FwdOut o = forward(LayerNorm, x.get(), nullptr, handleOf(weight),
                     handleOf(bias), n, eps, zc);
  return {out(o.y), out(o.mean), out(o.rstd)};
}

std::tuple<Tensor, Tensor> rmsNormFwd(Tensor x, std::optional<Tensor> weight,
                                      int64_t n, double eps, bool zc) {
  FwdOut o =
      forward(RmsNorm, x.get(), nullptr, handleOf(weight), nullptr, n, eps, zc);
  return {out(o.y), out(o.rstd)};
}

/// The fused residual add + norm forwards (add_layer_norm_fwd,
/// add_rms_norm_fwd): y, h, then [mean,] rstd.
std::tuple<Tensor, Tensor, Tensor, Tensor>
addLayerNormFwd(Tensor x, Tensor residual, std::optional<Tensor> weight,
                std::optional<Tensor> bias, int64_t n, double eps, bool zc) {
  FwdOut o = forward(LayerNorm, x.get(), residual.get(), handleOf(weight),
                     handleOf(bias), n, eps, zc);
  return {out(o.y), out(o.h), out(o.mean), out(o.rstd)};
}

std::tuple<Tensor, Tensor, Tensor> addRmsNormFwd(Tensor x, Tensor residual,
                                                 std::optional<Tensor> weight,
                                                 int64_t n, double eps,
                                                 bool zc) {
  FwdOut o = forward(RmsNorm, x.get(), residual.get(), handleOf(weight),
                     nullptr, n, eps, zc);
  return {out(o.y), out(o.h), out(o.rstd)};
}

std::tuple<Tensor, Tensor, Tensor>
layerNormBwd(Tensor dy, Tensor x, Tensor mean, Tensor rstd,
             std::optional<Tensor> weight, bool hasBias, int64_t n, bool zc,
             std::optional<Tensor> dresidual) {
  BwdOut o =
      backward(LayerNorm, dy.get(), x.get(), mean.get(), rstd.get(),
               handleOf(weight), hasBias, n, zc, handleOf(dresidual), false);
  return {out(o.dx), out(o.dw), out(o.db)};
}

std::tuple<Tensor, Tensor> rmsNormBwd(Tensor dy, Tensor x, Tensor rstd,
                                      std::optional<Tensor> weight, int64_t n,
                                      bool zc,
                                      std::optional<Tensor> dresidual) {
  BwdOut o =
      backward(RmsNorm, dy.get(), x.get(), nullptr, rstd.get(),
               handleOf(weight), false, n, zc, handleOf(dresidual), false);
  return {out(o.dx), out(o.dw)};
}

/// layer_norm_bwd_into_dy: dx written into dy (Tensor(a!)); returns
/// dweight, dbias.
std::tuple<Tensor, Tensor>
layerNormBwdIntoDy(Tensor dy, Tensor x, Tensor mean, Tensor rstd,
                   std::optional<Tensor> weight, bool hasBias, int64_t n,
                   bool zc, std::optional<Tensor> dresidual) {
  BwdOut o =
      backward(LayerNorm, dy.get(), x.get(), mean.get(), rstd.get(),
               handleOf(weight), hasBias, n, zc, handleOf(dresidual), true);
  return {out(o.dw), out(o.db)};
}

Tensor rmsNormBwdIntoDy(Tensor dy, Tensor x, Tensor rstd,
                        std::optional<Tensor> weight, int64_t n, bool zc,
                        std::optional<Tensor> dresidual) {
  BwdOut o =
      backward(RmsNorm, dy.get(), x.get(), nullptr, rstd.get(),
               handleOf(weight), false, n, zc, handleOf(dresidual), true);
  return out(o.dw);
}

// ------------------------------------------------------ the direct table

/// Whether the bodies are the kernels a device type's tensors reach (a
/// registration of them for its key is live: CUDA, or the CPU in tests).
int directRegistered(int32_t deviceType) {
  const Codes &c = codes();
  if (deviceType == c.cuda)
    return cudaRegistered.load(std::memory_order_relaxed) > 0;
  if (deviceType == c.cpu)
    return cpuAllowed.load(std::memory_order_relaxed) > 0;
  return 0;
}

void directForward(int32_t op, AtenTensorHandle x, AtenTensorHandle residual,
                   AtenTensorHandle weight, AtenTensorHandle bias, int64_t n,
                   double eps, bool zc, AtenTensorHandle out[4]) {
  if (op != LayerNorm && op != RmsNorm)
    fail("no such forward");
  FwdOut o = forward(Op(op), x, residual, weight,
                     op == LayerNorm ? bias : nullptr, n, eps, zc);
  out[0] = o.y.release();
  out[1] = o.h.release();
  out[2] = o.mean.release();
  out[3] = o.rstd.release();
}

void directBackward(int32_t op, AtenTensorHandle dy, AtenTensorHandle x,
                    AtenTensorHandle mean, AtenTensorHandle rstd,
                    AtenTensorHandle weight, bool hasBias, int64_t n, bool zc,
                    AtenTensorHandle dresidual, bool intoDy,
                    AtenTensorHandle out[3]) {
  if (op != LayerNorm && op != RmsNorm)
    fail("no such backward");
  BwdOut o =
      backward(Op(op), dy, x, op == LayerNorm ? mean : nullptr, rstd, weight,
               op == LayerNorm && hasBias, n, zc, dresidual, intoDy);
  out[0] = o.dx.release();
  out[1] = o.dw.release();
  out[2] = o.db.release();
}

const NormtorchDirect directTable = {NORMTORCH_DIRECT_VERSION,
                                     sizeof(NormtorchDirect), &directRegistered,
                                     &directForward, &directBackward};

void copyError(const std::exception &ex, char *err, size_t cap) {
  if (err && cap) {
    std::strncpy(err, ex.what(), cap - 1);
    err[cap - 1] = 0;
  }
}

} // namespace

// ------------------------------------------------------------ the C side
//
// Bound by norm_mlir.torch with ctypes. Every function returns 0 or an
// error (its message in err) and throws nothing.

/// Binds libnormrt (already loaded by Python: the same instance).
NORMTORCH_API int normtorch_init(const char *normrtPath, char *err,
                                 size_t cap) {
  void *h = dlopen(normrtPath, RTLD_NOW | RTLD_NOLOAD);
  if (!h)
    h = dlopen(normrtPath, RTLD_NOW);
  if (!h) {
    copyError(std::runtime_error(std::string("dlopen: ") + dlerror()), err,
              cap);
    return 1;
  }
  Normrt r;
  r.launch = reinterpret_cast<decltype(r.launch)>(dlsym(h, "normrt_launch"));
  r.validate =
      reinterpret_cast<decltype(r.validate)>(dlsym(h, "normrt_validate"));
  r.workspaceBytes = reinterpret_cast<decltype(r.workspaceBytes)>(
      dlsym(h, "normrt_workspace_bytes"));
  r.lastError =
      reinterpret_cast<decltype(r.lastError)>(dlsym(h, "normrt_last_error"));
  if (!r.launch || !r.validate || !r.workspaceBytes || !r.lastError) {
    copyError(std::runtime_error("libnormrt lacks a function of "
                                 "norm-c/Runtime.h"),
              err, cap);
    return 1;
  }
  rt = r;
  return 0;
}

NORMTORCH_API void normtorch_set_resolver(Resolver r) { resolver.store(r); }

/// Forgets every cached module (Python then drops its references).
NORMTORCH_API void normtorch_clear(void) {
  std::lock_guard<std::mutex> g(tableMutex);
  table.clear();
  generation.fetch_add(1, std::memory_order_acq_rel);
}

NORMTORCH_API int normtorch_cached(void) {
  std::lock_guard<std::mutex> g(tableMutex);
  return int(table.size());
}

/// 0: launch (normrt_launch on the current stream); 1: validate
/// (normrt_validate, then hook if not NULL): the CPU tests.
NORMTORCH_API void normtorch_set_mode(int m, Hook h) {
  hook.store(h);
  mode.store(m);
}

/// Registers the six bodies (the four ops and the two fused residual-add
/// forwards) for a dispatch key ("CUDA"; "CPU" in tests)
/// through the stable ABI's library object (what STABLE_TORCH_LIBRARY_IMPL
/// constructs statically); NULL on failure. normtorch_unregister removes
/// the registration.
NORMTORCH_API void *normtorch_register(const char *key, char *err,
                                       size_t cap) {
  try {
    auto *lib = new StableLibrary(StableLibrary::Kind::IMPL, "norm_mlir", key,
                                  __FILE__, __LINE__);
    lib->impl("layer_norm_fwd", TORCH_BOX(&layerNormFwd));
    lib->impl("rms_norm_fwd", TORCH_BOX(&rmsNormFwd));
    lib->impl("layer_norm_bwd", TORCH_BOX(&layerNormBwd));
    lib->impl("rms_norm_bwd", TORCH_BOX(&rmsNormBwd));
    lib->impl("layer_norm_bwd_into_dy", TORCH_BOX(&layerNormBwdIntoDy));
    lib->impl("rms_norm_bwd_into_dy", TORCH_BOX(&rmsNormBwdIntoDy));
    lib->impl("add_layer_norm_fwd", TORCH_BOX(&addLayerNormFwd));
    lib->impl("add_rms_norm_fwd", TORCH_BOX(&addRmsNormFwd));
    if (std::strcmp(key, "CPU") == 0)
      cpuAllowed.fetch_add(1);
    else if (std::strcmp(key, "CUDA") == 0)
      cudaRegistered.fetch_add(1);
    return lib;
  } catch (const std::exception &ex) {
    copyError(ex, err, cap);
    return nullptr;
  }
}

NORMTORCH_API void normtorch_unregister(void *lib, const char *key) {
  delete static_cast<StableLibrary *>(lib);
  if (key && std::strcmp(key, "CPU") == 0)
    cpuAllowed.fetch_sub(1);
  else if (key && std::strcmp(key, "CUDA") == 0)
    cudaRegistered.fetch_sub(1);
}

/// The bodies without the dispatcher, for libnormtorch_autograd.so
/// (normtorch_direct.h): norm_mlir.torch hands this table to it.
NORMTORCH_API const NormtorchDirect *normtorch_direct(void) {
  return &directTable;
}

/// The stable ABI version this library was built for (TORCH_TARGET_VERSION)
/// and against (the headers' TORCH_ABI_VERSION).
NORMTORCH_API uint64_t normtorch_target_version(void) {
  return TORCH_FEATURE_VERSION;
}
NORMTORCH_API uint64_t normtorch_build_version(void) {
  return TORCH_ABI_VERSION;
}
