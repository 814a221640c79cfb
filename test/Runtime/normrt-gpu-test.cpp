//===- normrt-gpu-test.cpp - compiled kernels launched on a GPU -----------===//
//
// Part of mlir-norm.
//
// Loads a kernel image and its manifest through libnormrt, fills random
// inputs (rounded to their storage types), launches twice on the same
// workspace (garbage-filled first, so the kernels or the runtime must clear
// it) and compares every output with a float64 reference computed from the
// very values the kernels read. Outputs start as NaN bytes, so a value the
// kernels skip fails, and the padding of strided rows must stay untouched.
//
//   normrt-gpu-test --image k.ptx --manifest k.json --rows M
//       [--batch B]      rank-3 activations are [B, M / B, N] and rank-2
//                        statistics [B, M / B] (default 1)
//       [--pad P]        row stride N + P
//       [--offset K]     views start K elements into their buffers
//       [--alias]        dx is written into dy's buffer
//       [--zero-centered] [--seed S] [--graph] [--bench ITERS]
//
// It opens libcuda itself for memory and streams (the runtime does not
// manage memory). Prints "PASS" or the worst mismatches and exits 1.
//
//===----------------------------------------------------------------------===//

#include "norm-c/Runtime.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <map>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

namespace {

//===----------------------------------------------------------------------===//
// Storage types
//===----------------------------------------------------------------------===//

uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float bitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t toBF16(float f) {
  uint32_t u = floatBits(f);
  if (std::isnan(f))
    return 0x7FC0;
  u += 0x7FFF + ((u >> 16) & 1);
  return uint16_t(u >> 16);
}
float fromBF16(uint16_t h) { return bitsFloat(uint32_t(h) << 16); }

float fromF16(uint16_t h) {
  uint32_t sign = uint32_t(h >> 15) << 31, exp = (h >> 10) & 0x1F,
           man = h & 0x3FF;
  if (exp == 0x1F)
    return bitsFloat(sign | 0x7F800000 | (man << 13));
  if (exp == 0) {
    float v = std::ldexp(float(man), -24);
    return sign ? -v : v;
  }
  return bitsFloat(sign | ((exp + 112) << 23) | (man << 13));
}
uint16_t toF16(float f) {
  uint32_t x = floatBits(f);
  uint16_t sign = uint16_t((x >> 16) & 0x8000);
  uint32_t ax = x & 0x7FFFFFFF;
  if (ax > 0x7F800000)
    return sign | 0x7E00; // NaN
  if (ax >= 0x477FF000)
    return sign | 0x7C00; // >= 65520 rounds to infinity
  if (ax < 0x38800000)    // below 2^-14: a subnormal, in units of 2^-24
    return sign | uint16_t(std::nearbyint(bitsFloat(ax) * 16777216.0f));
  uint32_t h = ((ax >> 23) - 112) << 10 | ((ax & 0x7FFFFF) >> 13);
  uint32_t rest = ax & 0x1FFF;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
    ++h; // a carry into the exponent is still right
  return uint16_t(sign | h);
}

int32_t elementBytes(int32_t dtype) { return dtype == NORMRT_F32 ? 4 : 2; }

/// Rounds `v` to `dtype` and returns the rounded value.
double roundTo(int32_t dtype, double v) {
  switch (dtype) {
  case NORMRT_BF16:
    return fromBF16(toBF16(float(v)));
  case NORMRT_F16:
    return fromF16(toF16(float(v)));
  default:
    return float(v);
  }
}

void store(int32_t dtype, void *base, int64_t i, double v) {
  if (dtype == NORMRT_F32) {
    static_cast<float *>(base)[i] = float(v);
  } else {
    uint16_t h = dtype == NORMRT_BF16 ? toBF16(float(v)) : toF16(float(v));
    static_cast<uint16_t *>(base)[i] = h;
  }
}

double load(int32_t dtype, const void *base, int64_t i) {
  if (dtype == NORMRT_F32)
    return static_cast<const float *>(base)[i];
  uint16_t h = static_cast<const uint16_t *>(base)[i];
  return dtype == NORMRT_BF16 ? fromBF16(h) : fromF16(h);
}

/// Half an ulp, relative, of a stored result.
double relativeRounding(int32_t dtype) {
  return dtype == NORMRT_BF16  ? std::ldexp(1.0, -8)
         : dtype == NORMRT_F16 ? std::ldexp(1.0, -11)
                               : std::ldexp(1.0, -24);
}

//===----------------------------------------------------------------------===//
// The driver (memory, streams, graphs, events)
//===----------------------------------------------------------------------===//

using CUresult = int;
using CUdeviceptr = unsigned long long;
using Handle = void *;

struct Cuda {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGet)(int *, int);
  CUresult (*cuDevicePrimaryCtxRetain)(Handle *, int);
  CUresult (*cuCtxSetCurrent)(Handle);
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuStreamCreate)(Handle *, unsigned);
  CUresult (*cuStreamSynchronize)(Handle);
  CUresult (*cuStreamBeginCapture)(Handle, int);
  CUresult (*cuStreamEndCapture)(Handle, Handle *);
  CUresult (*cuGraphInstantiateWithFlags)(Handle *, Handle, unsigned long long);
  CUresult (*cuGraphLaunch)(Handle, Handle);
  CUresult (*cuEventCreate)(Handle *, unsigned);
  CUresult (*cuEventRecord)(Handle, Handle);
  CUresult (*cuEventSynchronize)(Handle);
  CUresult (*cuEventElapsedTime)(float *, Handle, Handle);
  CUresult (*cuDeviceGetName)(char *, int, int);
};

Cuda cuda;

bool loadCuda() {
  void *h = dlopen("libcuda.so.1", RTLD_NOW);
  if (!h) {
    std::printf("no CUDA driver: %s\n", dlerror());
    return false;
  }
  bool ok = true;
  auto get = [&](auto &fn, const char *name) {
    fn = reinterpret_cast<std::decay_t<decltype(fn)>>(dlsym(h, name));
    if (!fn) {
      std::printf("missing %s\n", name);
      ok = false;
    }
  };
  get(cuda.cuInit, "cuInit");
  get(cuda.cuDeviceGet, "cuDeviceGet");
  get(cuda.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  get(cuda.cuCtxSetCurrent, "cuCtxSetCurrent");
  get(cuda.cuMemAlloc, "cuMemAlloc_v2");
  get(cuda.cuMemFree, "cuMemFree_v2");
  get(cuda.cuMemcpyHtoD, "cuMemcpyHtoD_v2");
  get(cuda.cuMemcpyDtoH, "cuMemcpyDtoH_v2");
  get(cuda.cuCtxSynchronize, "cuCtxSynchronize");
  get(cuda.cuStreamCreate, "cuStreamCreate");
  get(cuda.cuStreamSynchronize, "cuStreamSynchronize");
  get(cuda.cuStreamBeginCapture, "cuStreamBeginCapture_v2");
  get(cuda.cuStreamEndCapture, "cuStreamEndCapture");
  get(cuda.cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags");
  get(cuda.cuGraphLaunch, "cuGraphLaunch");
  get(cuda.cuEventCreate, "cuEventCreate");
  get(cuda.cuEventRecord, "cuEventRecord");
  get(cuda.cuEventSynchronize, "cuEventSynchronize");
  get(cuda.cuEventElapsedTime, "cuEventElapsedTime");
  get(cuda.cuDeviceGetName, "cuDeviceGetName");
  return ok;
}

#define CU(call)                                                               \
  do {                                                                         \
    if (CUresult r_ = (call)) {                                                \
      std::printf("%s failed: %d\n", #call, r_);                               \
      std::exit(2);                                                            \
    }                                                                          \
  } while (0)

#define RT(call)                                                               \
  do {                                                                         \
    if (int r_ = (call)) {                                                     \
      std::printf("%s failed (%d): %s\n", #call, r_, normrt_last_error());     \
      std::exit(2);                                                            \
    }                                                                          \
  } while (0)

//===----------------------------------------------------------------------===//
// Problems and references
//===----------------------------------------------------------------------===//

struct Options {
  std::string image, manifest;
  int64_t m = 0, batch = 1, pad = 0, offset = 0, bench = 0;
  bool alias = false, zeroCentered = false, graph = false;
  uint64_t seed = 1;
  double eps = 1e-5;
};

/// One argument: its host values (as read or as expected) and its buffer.
struct Buffer {
  NormrtArgumentInfo info;
  /// [rows, N] (activations, of rank 2 or 3), else one row: a vector or the
  /// statistics (of rank 1 or 2).
  bool rowsOfN = false;
  int64_t rows = 1, cols = 1, stride = 1; // a vector is one row
  std::vector<double> values;             // [rows, cols], rounded
  std::vector<char> host;                 // the device image
  CUdeviceptr device = 0;
  size_t bytes = 0;
  bool aliased = false;
};

struct Mismatch {
  double worst = 0; // error / tolerance
  int64_t count = 0;
  int64_t where = -1;
  double got = 0, want = 0;
};

} // namespace

int main(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> const char * { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--image")
      o.image = next();
    else if (a == "--manifest")
      o.manifest = next();
    else if (a == "--rows")
      o.m = std::atoll(next());
    else if (a == "--batch")
      o.batch = std::atoll(next());
    else if (a == "--pad")
      o.pad = std::atoll(next());
    else if (a == "--offset")
      o.offset = std::atoll(next());
    else if (a == "--bench")
      o.bench = std::atoll(next());
    else if (a == "--seed")
      o.seed = std::strtoull(next(), nullptr, 0);
    else if (a == "--alias")
      o.alias = true;
    else if (a == "--zero-centered")
      o.zeroCentered = true;
    else if (a == "--graph")
      o.graph = true;
    else {
      std::printf("unknown option %s\n", a.c_str());
      return 2;
    }
  }
  if (!loadCuda())
    return 2;
  CU(cuda.cuInit(0));
  int dev;
  Handle ctx;
  CU(cuda.cuDeviceGet(&dev, 0));
  CU(cuda.cuDevicePrimaryCtxRetain(&ctx, dev));
  CU(cuda.cuCtxSetCurrent(ctx));

  NormrtModule *module = nullptr;
  RT(normrt_module_load_files(o.image.c_str(), o.manifest.c_str(), &module));
  int32_t numArgs = 0;
  RT(normrt_module_num_arguments(module, &numArgs));
  std::map<std::string, Buffer> args;
  std::vector<std::string> order;
  int64_t n = 0;
  for (int32_t i = 0; i < numArgs; ++i) {
    Buffer b;
    RT(normrt_module_argument(module, i, &b.info));
    std::string name = b.info.name;
    bool statistic = name == "mean" || name == "rstd";
    b.rowsOfN = b.info.rank >= 2 && !statistic;
    if (b.info.rank > (statistic ? 2 : 3)) {
      std::printf("'%s': rank %d is not supported here\n", b.info.name,
                  b.info.rank);
      return 2;
    }
    if (b.rowsOfN)
      n = b.info.shape[b.info.rank - 1];
    order.push_back(b.info.name);
    args[b.info.name] = b;
  }
  auto has = [&](const char *name) { return args.count(name) > 0; };
  bool grad = has("dy");
  bool layer = has("mean");
  int64_t m = o.m;
  if (o.batch < 1 || m % o.batch) {
    std::printf("--batch %" PRId64 " does not divide M = %" PRId64 "\n",
                o.batch, m);
    return 2;
  }
  std::printf("%s %s N = %" PRId64 " M = %" PRId64 "%s%s%s\n",
              layer ? "layer_norm" : "rms_norm", grad ? "grad" : "forward", n,
              m, o.pad ? " padded" : "", o.offset ? " offset" : "",
              o.alias ? " aliased" : "");

  // Shapes and storage: rows get stride N + pad and start `offset` in.
  for (auto &[name, b] : args) {
    if (b.rowsOfN) {
      b.rows = m;
      b.cols = n;
      b.stride = n + o.pad;
    } else {
      b.rows = 1;
      b.cols = b.info.shape[0] < 0 ? m : b.info.shape[0];
      b.stride = b.cols;
    }
    b.values.assign(size_t(b.rows * b.cols), 0.0);
    int64_t elems =
        o.offset + (b.rows ? (b.rows - 1) * b.stride : 0) + b.cols + 8;
    b.bytes = size_t(elems * elementBytes(b.info.dtype));
    b.host.assign(b.bytes, char(0xFF)); // NaN everywhere
  }

  // Inputs.
  std::mt19937_64 rng(o.seed);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> uniform(0.5, 2.0);
  auto fill = [&](Buffer &b, auto gen) {
    for (int64_t r = 0; r < b.rows; ++r)
      for (int64_t c = 0; c < b.cols; ++c)
        b.values[r * b.cols + c] = roundTo(b.info.dtype, gen(r, c));
  };
  std::vector<double> rowScale(static_cast<size_t>(m)),
      rowShift(static_cast<size_t>(m));
  for (int64_t r = 0; r < m; ++r) {
    rowScale[r] = uniform(rng);
    rowShift[r] = 0.5 * normal(rng);
  }
  fill(args["x"], [&](int64_t r, int64_t) {
    return normal(rng) * rowScale[r] + rowShift[r];
  });
  double wShift = o.zeroCentered ? 0.0 : 1.0;
  if (has("weight"))
    fill(args["weight"],
         [&](int64_t, int64_t) { return wShift + 0.1 * normal(rng); });
  if (has("bias"))
    fill(args["bias"], [&](int64_t, int64_t) { return 0.1 * normal(rng); });
  if (grad) {
    fill(args["dy"], [&](int64_t, int64_t) { return normal(rng); });
    if (has("dresidual"))
      fill(args["dresidual"], [&](int64_t, int64_t) { return normal(rng); });
  }
  auto weightAt = [&](int64_t c) {
    if (!has("weight"))
      return 1.0;
    return args["weight"].values[c] + (o.zeroCentered ? 1.0 : 0.0);
  };

  // Statistics of x in float64 (the forward's reference; the backward reads
  // them rounded to f32).
  std::vector<double> mean(size_t(m), 0.0), rstd(static_cast<size_t>(m));
  {
    const std::vector<double> &x = args["x"].values;
    for (int64_t r = 0; r < m; ++r) {
      double s = 0, s2 = 0;
      for (int64_t c = 0; c < n; ++c)
        s += x[r * n + c];
      double mu = layer ? s / n : 0.0;
      for (int64_t c = 0; c < n; ++c)
        s2 += (x[r * n + c] - mu) * (x[r * n + c] - mu);
      mean[r] = mu;
      rstd[r] = 1.0 / std::sqrt(s2 / n + o.eps);
    }
  }
  if (grad) {
    for (int64_t r = 0; r < m; ++r) {
      if (layer)
        args["mean"].values[r] = mean[r] = float(mean[r]);
      args["rstd"].values[r] = rstd[r] = float(rstd[r]);
    }
  }

  // References (and the size of the terms each result sums, for tolerances).
  std::map<std::string, std::vector<double>> want, scale;
  if (grad) {
    const auto &x = args["x"].values, &dy = args["dy"].values;
    auto &dx = want["dx"], &dxs = scale["dx"];
    dx.assign(size_t(m * n), 0);
    dxs.assign(size_t(m * n), 0);
    std::vector<double> dw(static_cast<size_t>(n), 0),
        db(static_cast<size_t>(n), 0), dws(static_cast<size_t>(n), 0),
        dbs(static_cast<size_t>(n), 0);
    std::vector<double> xhat(static_cast<size_t>(n)), g(static_cast<size_t>(n));
    for (int64_t r = 0; r < m; ++r) {
      double c1 = 0, c2 = 0, a1 = 0;
      for (int64_t c = 0; c < n; ++c) {
        xhat[c] = (x[r * n + c] - mean[r]) * rstd[r];
        g[c] = dy[r * n + c] * weightAt(c);
        c1 += g[c] * xhat[c];
        a1 += std::fabs(g[c] * xhat[c]);
        c2 += g[c];
        dw[c] += dy[r * n + c] * xhat[c];
        dws[c] += std::fabs(dy[r * n + c] * xhat[c]);
        db[c] += dy[r * n + c];
        dbs[c] += std::fabs(dy[r * n + c]);
      }
      c1 /= n;
      c2 = layer ? c2 / n : 0.0;
      a1 /= n;
      for (int64_t c = 0; c < n; ++c) {
        double v = rstd[r] * (g[c] - c2 - xhat[c] * c1);
        double s = rstd[r] * (std::fabs(g[c]) + std::fabs(c2) +
                              std::fabs(xhat[c]) * (std::fabs(c1) + a1));
        if (has("dresidual")) {
          v += args["dresidual"].values[r * n + c];
          s += std::fabs(args["dresidual"].values[r * n + c]);
        }
        dx[r * n + c] = v;
        dxs[r * n + c] = s;
      }
    }
    if (has("dweight")) {
      want["dweight"] = dw;
      scale["dweight"] = dws;
    }
    if (has("dbias")) {
      want["dbias"] = db;
      scale["dbias"] = dbs;
    }
  } else {
    const auto &x = args["x"].values;
    auto &y = want["y"], &ys = scale["y"];
    y.assign(size_t(m * n), 0);
    ys.assign(size_t(m * n), 0);
    if (has("xhat")) {
      want["xhat"].assign(size_t(m * n), 0);
      scale["xhat"].assign(size_t(m * n), 0);
    }
    for (int64_t r = 0; r < m; ++r)
      for (int64_t c = 0; c < n; ++c) {
        double xh = (x[r * n + c] - mean[r]) * rstd[r];
        double b = has("bias") ? args["bias"].values[c] : 0.0;
        y[r * n + c] = xh * weightAt(c) + b;
        // The statistics' f32 error carries into every element.
        double s = (std::fabs(xh) + 1) * std::fabs(weightAt(c)) + std::fabs(b);
        ys[r * n + c] = s;
        if (has("xhat")) {
          want["xhat"][r * n + c] = xh;
          scale["xhat"][r * n + c] = std::fabs(xh) + 1;
        }
      }
    want["rstd"] = rstd;
    scale["rstd"] = rstd;
    if (layer) {
      want["mean"] = mean;
      scale["mean"].assign(size_t(m), 0);
      for (int64_t r = 0; r < m; ++r)
        scale["mean"][r] = rowScale[r] + std::fabs(rowShift[r]);
    }
  }

  // Device buffers.
  for (auto &[name, b] : args) {
    for (int64_t r = 0; r < b.rows; ++r)
      for (int64_t c = 0; c < b.cols; ++c)
        if (!b.info.is_output)
          store(b.info.dtype, b.host.data(), o.offset + r * b.stride + c,
                b.values[r * b.cols + c]);
    CU(cuda.cuMemAlloc(&b.device, b.bytes));
    CU(cuda.cuMemcpyHtoD(b.device, b.host.data(), b.bytes));
  }
  if (o.alias && grad) {
    args["dx"].aliased = true;
    args["dx"].device = args["dy"].device;
  }

  std::vector<NormrtTensor> tensors;
  for (const std::string &name : order) {
    Buffer &b = args[name];
    NormrtTensor t = {};
    t.name = b.info.name;
    t.data = reinterpret_cast<void *>(
        uintptr_t(b.device + o.offset * elementBytes(b.info.dtype)));
    t.dtype = b.info.dtype;
    t.rank = b.info.rank;
    // The same storage at every rank: a rank-3 activation [B, M / B, N] or
    // a rank-2 statistic [B, M / B] splits the rows.
    std::vector<int64_t> sizes = {b.cols}, strides = {1};
    if (b.rowsOfN) {
      sizes = {b.rows, b.cols};
      strides = {b.stride, 1};
    }
    if (int32_t(sizes.size()) < b.info.rank) {
      sizes[0] /= o.batch;
      sizes.insert(sizes.begin(), o.batch);
      strides.insert(strides.begin(), sizes[1] * strides[0]);
    }
    for (size_t d = 0; d < sizes.size(); ++d) {
      t.sizes[d] = sizes[d];
      t.strides[d] = strides[d];
    }
    tensors.push_back(t);
  }
  size_t wsBytes = 0;
  RT(normrt_workspace_bytes(module, m, &wsBytes));
  CUdeviceptr ws = 0;
  if (wsBytes) {
    CU(cuda.cuMemAlloc(&ws, wsBytes));
    std::vector<char> garbage(wsBytes, char(0x5A));
    CU(cuda.cuMemcpyHtoD(ws, garbage.data(), wsBytes));
  }
  std::printf("workspace %zu bytes\n", wsBytes);

  // Launch twice: the second run must not see the first's partial sums.
  Handle stream = nullptr;
  auto launch = [&] {
    RT(normrt_launch(module, tensors.data(), int32_t(tensors.size()),
                     reinterpret_cast<void *>(uintptr_t(ws)), wsBytes, stream));
  };
  auto download = [&](Buffer &b) {
    std::vector<char> out(b.bytes);
    CU(cuda.cuMemcpyDtoH(out.data(), b.device, b.bytes));
    return out;
  };
  std::map<std::string, std::vector<char>> first;
  launch();
  CU(cuda.cuCtxSynchronize());
  for (auto &[name, b] : args)
    if (b.info.is_output)
      first[name] = download(b);
  if (o.graph) {
    CU(cuda.cuStreamCreate(&stream, 1));
    Handle graph, exec;
    CU(cuda.cuStreamBeginCapture(stream, 0));
    launch();
    CU(cuda.cuStreamEndCapture(stream, &graph));
    CU(cuda.cuGraphInstantiateWithFlags(&exec, graph, 0));
    CU(cuda.cuGraphLaunch(exec, stream));
    CU(cuda.cuStreamSynchronize(stream));
    std::printf("graph: captured and replayed\n");
  } else if (!o.alias) {
    launch();
    CU(cuda.cuCtxSynchronize());
  }

  // Compare.
  bool pass = true;
  for (auto &[name, b] : args) {
    if (!b.info.is_output)
      continue;
    std::vector<char> out = download(b);
    const std::vector<double> &ref = want[name];
    const std::vector<double> &sc = scale[name];
    double rel = relativeRounding(b.info.dtype);
    // f32 arithmetic over N (rows) or M (columns) terms.
    double terms = b.rowsOfN || name == "rstd" || name == "mean" ? 1e-5 : 2e-6;
    Mismatch mm;
    int64_t padTouched = 0, nondeterministic = 0;
    for (int64_t r = 0; r < b.rows; ++r) {
      for (int64_t c = 0; c < b.cols; ++c) {
        int64_t at = o.offset + r * b.stride + c;
        double got = load(b.info.dtype, out.data(), at);
        double w = ref[r * b.cols + c];
        double tol = rel * std::fabs(w) + terms * sc[r * b.cols + c] + 1e-30;
        double err = std::fabs(got - w);
        double ratio = err / tol;
        if (!(err <= tol))
          ++mm.count;
        if (!(ratio <= mm.worst)) {
          mm.worst = std::isnan(ratio) ? INFINITY : ratio;
          mm.where = r * b.cols + c;
          mm.got = got;
          mm.want = w;
        }
        if (std::memcmp(out.data() + at * elementBytes(b.info.dtype),
                        first[name].data() + at * elementBytes(b.info.dtype),
                        size_t(elementBytes(b.info.dtype))))
          ++nondeterministic;
      }
      if (!b.aliased)
        for (int64_t c = b.cols; c < b.stride && r + 1 < b.rows; ++c) {
          int64_t at =
              (o.offset + r * b.stride + c) * elementBytes(b.info.dtype);
          for (int k = 0; k < elementBytes(b.info.dtype); ++k)
            padTouched += out[size_t(at + k)] != char(0xFF);
        }
    }
    if (!b.aliased)
      for (int64_t k = 0; k < o.offset * elementBytes(b.info.dtype); ++k)
        padTouched += out[size_t(k)] != char(0xFF);
    bool ok = mm.count == 0 && padTouched == 0;
    pass &= ok;
    std::printf("%-8s %s: worst error/tolerance %.3g", name.c_str(),
                ok ? "ok" : "FAIL", mm.worst);
    if (mm.count)
      std::printf(", %" PRId64 " mismatches, e.g. [%" PRId64 "] got %.8g want "
                  "%.8g",
                  mm.count, mm.where, mm.got, mm.want);
    if (padTouched)
      std::printf(", %" PRId64 " padding bytes written", padTouched);
    std::printf(", %s across runs\n",
                nondeterministic ? "differs" : "bitwise identical");
  }

  if (o.bench > 0) {
    Handle start, stop;
    CU(cuda.cuEventCreate(&start, 0));
    CU(cuda.cuEventCreate(&stop, 0));
    for (int i = 0; i < 3; ++i)
      launch();
    CU(cuda.cuEventRecord(start, stream));
    for (int64_t i = 0; i < o.bench; ++i)
      launch();
    CU(cuda.cuEventRecord(stop, stream));
    CU(cuda.cuEventSynchronize(stop));
    float ms = 0;
    CU(cuda.cuEventElapsedTime(&ms, start, stop));
    double bytes = 0;
    for (auto &[name, b] : args)
      bytes += double(b.rows * b.cols * elementBytes(b.info.dtype));
    double us = 1000.0 * ms / double(o.bench);
    std::printf("bench: %.2f us per launch, %.0f GB/s of argument traffic\n",
                us, bytes / (us * 1e3));
  }
  std::printf("%s\n", pass ? "PASS" : "FAIL");
  normrt_module_destroy(module);
  return pass ? 0 : 1;
}
