//===- torch_autograd.cpp - the forward ops' autograd kernels in C++ ------===//
//
// Part of mlir-norm. libnormtorch_autograd.so: the Autograd kernels of
// norm_mlir::layer_norm_fwd, rms_norm_fwd and the residual-add forms
// (add_layer_norm_fwd, add_rms_norm_fwd: h = x + residual is an output
// whose gradient the backward kernel adds into dx as dresidual), so that a
// call records a C++ node and the backward runs without Python (no GIL
// taken on autograd's worker thread, no Python frames around the backward
// op).
//
// Unlike libnormtorch.so (torch_ops.cpp, the stable ABI: one binary for
// every torch >= 2.10) this uses torch's full C++ API (torch::autograd::
// Function, the dispatcher's typed handles), which the stable ABI does not
// have, so the binary fits only the torch it was built against:
// python/csrc/build_ext.py bakes that torch's version and git revision in
// (normtorch_autograd_torch_version) and writes them beside the library,
// and norm_mlir.torch loads it only into that torch, else keeps its Python
// autograd formulas (torch.library.register_autograd). The formulas are
// the same as Python's: the backward op (the kernels) for a plain backward;
// torch ops in f32 where the backward builds a graph (create_graph=True),
// so double backward is right.
//
// The ops themselves (schemas, fakes) are defined by norm_mlir.torch; their
// bodies (CUDA key) are whichever are registered there, C++ or Python: the
// kernels here call them through the dispatcher below autograd.
//
//===----------------------------------------------------------------------===//

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

#include <cstring>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#ifndef NORMTORCH_TORCH_VERSION
#define NORMTORCH_TORCH_VERSION "unknown"
#endif

#define NORMTORCH_API extern "C" __attribute__((visibility("default")))

namespace {

using at::Tensor;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;
using OptTensor = std::optional<Tensor>;

using LnFwdSig = std::tuple<Tensor, Tensor, Tensor>(
    const Tensor &, const OptTensor &, const OptTensor &, int64_t, double,
    bool);
using RmsFwdSig = std::tuple<Tensor, Tensor>(const Tensor &, const OptTensor &,
                                             int64_t, double, bool);
using AddLnFwdSig = std::tuple<Tensor, Tensor, Tensor, Tensor>(
    const Tensor &, const Tensor &, const OptTensor &, const OptTensor &,
    int64_t, double, bool);
using AddRmsFwdSig = std::tuple<Tensor, Tensor, Tensor>(
    const Tensor &, const Tensor &, const OptTensor &, int64_t, double, bool);
using LnBwdSig = std::tuple<Tensor, Tensor, Tensor>(
    const Tensor &, const Tensor &, const Tensor &, const Tensor &,
    const OptTensor &, bool, int64_t, bool, const OptTensor &);
using RmsBwdSig = std::tuple<Tensor, Tensor>(const Tensor &, const Tensor &,
                                             const Tensor &, const OptTensor &,
                                             int64_t, bool, const OptTensor &);

/// The ops, found once (normtorch_autograd_register) after Python defined
/// them.
struct Ops {
  c10::TypedOperatorHandle<LnFwdSig> lnFwd;
  c10::TypedOperatorHandle<RmsFwdSig> rmsFwd;
  c10::TypedOperatorHandle<LnBwdSig> lnBwd;
  c10::TypedOperatorHandle<RmsBwdSig> rmsBwd;
  c10::TypedOperatorHandle<AddLnFwdSig> addLnFwd;
  c10::TypedOperatorHandle<AddRmsFwdSig> addRmsFwd;
};
std::optional<Ops> ops;

template <class Sig> c10::TypedOperatorHandle<Sig> findOp(const char *name) {
  return c10::Dispatcher::singleton()
      .findSchemaOrThrow(name, "")
      .template typed<Sig>();
}

Tensor orUndefined(const OptTensor &t) { return t ? *t : Tensor(); }
OptTensor optional(const Tensor &t) {
  return t.defined() ? OptTensor(t) : std::nullopt;
}

bool requiresGrad(const Tensor &t) { return t.defined() && t.requires_grad(); }

/// Whether the call records a node (grad mode on and an input that wants a
/// gradient); else the kernels below autograd run alone.
bool wantsGrad(const Tensor &x, const OptTensor &w, const OptTensor &b) {
  return at::GradMode::is_enabled() &&
         (x.requires_grad() || (w && requiresGrad(*w)) ||
          (b && requiresGrad(*b)));
}

/// A gradient of [n] as the parameter's shape (a view only where the
/// parameter has more dimensions).
Tensor asParam(const Tensor &g, const Tensor &param) {
  return param.dim() == 1 ? g : g.view(param.sizes());
}

/// dx and dweight (undefined where not wanted) of the norm as
/// differentiable torch ops in f32, as the kernels compute them: what a
/// backward that builds a graph returns (norm_mlir.torch._graphed).
std::pair<Tensor, Tensor> graphed(const Tensor &dy, const Tensor &x0,
                                  const Tensor &w0, int64_t n, double eps,
                                  bool zc, bool rms) {
  at::AutoGradMode on(true);
  // Differentiated through fresh views: autograd::grad runs every node
  // between y and what it differentiates by, and x may be this node's own
  // output (the residual-add ops' h) with the weight its input, which
  // would run this backward again, without end.
  Tensor x = x0.view_as(x0), w = w0.defined() ? w0.view_as(w0) : Tensor();
  Tensor xr = x.reshape({-1, n}).to(at::kFloat);
  if (!rms)
    xr = xr.sub(xr.mean({-1}, true));
  Tensor y = xr.mul(xr.square().mean({-1}, true).add(eps).rsqrt());
  if (w.defined()) {
    Tensor wf = w.reshape({n}).to(at::kFloat);
    y = y.mul(zc ? wf.add(1) : wf);
  }
  bool gx = x.requires_grad(), gw = requiresGrad(w);
  variable_list wrt;
  if (gx)
    wrt.push_back(x);
  if (gw)
    wrt.push_back(w);
  Tensor dx, dw;
  if (!wrt.empty()) {
    variable_list got = torch::autograd::grad(
        {y}, wrt, {dy.reshape({-1, n}).to(at::kFloat)}, std::nullopt,
        /*create_graph=*/true);
    size_t i = 0;
    if (gx)
      dx = got[i++].to(x.scalar_type());
    if (gw)
      dw = got[i++].to(w.scalar_type());
  }
  return {dx, dw};
}

// The residual-add forms call their own forward op below autograd: one
// fused kernel writes h = x + residual (contiguous) and normalises it
// (docs/NOTES.md, "Fused residual add forward").

bool buildingGraph(const Tensor &dy, const Tensor &x, const Tensor &w) {
  return at::GradMode::is_enabled() &&
         (requiresGrad(dy) || requiresGrad(x) || requiresGrad(w));
}

// ------------------------------------------------------------- LayerNorm
//
// Saved: x (h, the sum, for the residual-add op), the weight (undefined
// without one), mean, rstd; n, eps, zero-centred and the bias's shape
// (only with a bias).

void saveLayerNorm(AutogradContext *ctx, const Tensor &x, const OptTensor &w,
                   const OptTensor &b, const Tensor &mean, const Tensor &rstd,
                   int64_t n, double eps, bool zc) {
  ctx->save_for_backward({x, orUndefined(w), mean, rstd});
  ctx->saved_data["n"] = n;
  ctx->saved_data["eps"] = eps;
  ctx->saved_data["zc"] = zc;
  if (b)
    ctx->saved_data["bshape"] = b->sizes().vec();
  ctx->mark_non_differentiable({mean, rstd});
}

/// dx, dweight, dbias of a LayerNorm saved by saveLayerNorm; dres (may be
/// undefined) is added into dx: the kernels' dresidual.
std::tuple<Tensor, Tensor, Tensor>
layerNormGrads(AutogradContext *ctx, const Tensor &dy, const Tensor &dres) {
  variable_list saved = ctx->get_saved_variables();
  const Tensor &x = saved[0], &w = saved[1], &mean = saved[2],
               &rstd = saved[3];
  int64_t n = ctx->saved_data["n"].toInt();
  bool zc = ctx->saved_data["zc"].toBool();
  auto bit = ctx->saved_data.find("bshape");
  bool hasBias = bit != ctx->saved_data.end();
  std::vector<int64_t> bshape;
  if (hasBias)
    bshape = bit->second.toIntVector();
  Tensor dx, dw, db;
  if (buildingGraph(dy, x, w) || requiresGrad(dres)) {
    std::tie(dx, dw) =
        graphed(dy, x, w, n, ctx->saved_data["eps"].toDouble(), zc, false);
    if (hasBias)
      db = dy.reshape({-1, n})
               .to(at::kFloat)
               .sum(0)
               .to(w.defined() ? w.scalar_type() : x.scalar_type())
               .view(bshape);
    if (dres.defined())
      dx = dx.defined() ? dx.add(dres) : dres;
    return {dx, dw, db};
  }
  {
    at::AutoDispatchBelowADInplaceOrView below;
    std::tie(dx, dw, db) = ops->lnBwd.call(dy, x, mean, rstd, optional(w),
                                           hasBias, n, zc, optional(dres));
  }
  return {dx, w.defined() ? asParam(dw, w) : Tensor(),
          hasBias ? db.view(bshape) : Tensor()};
}

struct LayerNormFunction : torch::autograd::Function<LayerNormFunction> {
  static variable_list forward(AutogradContext *ctx, const Tensor &x,
                               const OptTensor &w, const OptTensor &b,
                               int64_t n, double eps, bool zc) {
    Tensor y, mean, rstd;
    {
      at::AutoDispatchBelowADInplaceOrView below;
      std::tie(y, mean, rstd) = ops->lnFwd.call(x, w, b, n, eps, zc);
    }
    saveLayerNorm(ctx, x, w, b, mean, rstd, n, eps, zc);
    return {y, mean, rstd};
  }

  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    auto [dx, dw, db] = layerNormGrads(ctx, grads[0], Tensor());
    return {dx, dw, db, Tensor(), Tensor(), Tensor()};
  }
};

/// add_layer_norm_fwd: h = x + residual is an output; its gradient goes
/// into the backward kernel as dresidual, and dx to both x and residual.
struct AddLayerNormFunction
    : torch::autograd::Function<AddLayerNormFunction> {
  static variable_list forward(AutogradContext *ctx, const Tensor &x,
                               const Tensor &residual, const OptTensor &w,
                               const OptTensor &b, int64_t n, double eps,
                               bool zc) {
    Tensor y, h, mean, rstd;
    {
      at::AutoDispatchBelowADInplaceOrView below;
      std::tie(y, h, mean, rstd) =
          ops->addLnFwd.call(x, residual, w, b, n, eps, zc);
    }
    saveLayerNorm(ctx, h, w, b, mean, rstd, n, eps, zc);
    return {y, h, mean, rstd};
  }

  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    auto [dx, dw, db] = layerNormGrads(ctx, grads[0], grads[1]);
    return {dx, dx, dw, db, Tensor(), Tensor(), Tensor()};
  }
};

std::tuple<Tensor, Tensor, Tensor>
layerNormFwdAutograd(const Tensor &x, const OptTensor &w, const OptTensor &b,
                     int64_t n, double eps, bool zc) {
  if (!wantsGrad(x, w, b)) {
    at::AutoDispatchBelowADInplaceOrView below;
    return ops->lnFwd.call(x, w, b, n, eps, zc);
  }
  variable_list out = LayerNormFunction::apply(x, w, b, n, eps, zc);
  return {out[0], out[1], out[2]};
}

std::tuple<Tensor, Tensor, Tensor, Tensor>
addLayerNormFwdAutograd(const Tensor &x, const Tensor &residual,
                        const OptTensor &w, const OptTensor &b, int64_t n,
                        double eps, bool zc) {
  if (!wantsGrad(x, w, b) && !(at::GradMode::is_enabled() &&
                               residual.requires_grad())) {
    at::AutoDispatchBelowADInplaceOrView below;
    return ops->addLnFwd.call(x, residual, w, b, n, eps, zc);
  }
  variable_list out =
      AddLayerNormFunction::apply(x, residual, w, b, n, eps, zc);
  return {out[0], out[1], out[2], out[3]};
}

// --------------------------------------------------------------- RMSNorm

void saveRmsNorm(AutogradContext *ctx, const Tensor &x, const OptTensor &w,
                 const Tensor &rstd, int64_t n, double eps, bool zc) {
  ctx->save_for_backward({x, orUndefined(w), rstd});
  ctx->saved_data["n"] = n;
  ctx->saved_data["eps"] = eps;
  ctx->saved_data["zc"] = zc;
  ctx->mark_non_differentiable({rstd});
}

std::pair<Tensor, Tensor> rmsNormGrads(AutogradContext *ctx, const Tensor &dy,
                                       const Tensor &dres) {
  variable_list saved = ctx->get_saved_variables();
  const Tensor &x = saved[0], &w = saved[1], &rstd = saved[2];
  int64_t n = ctx->saved_data["n"].toInt();
  bool zc = ctx->saved_data["zc"].toBool();
  Tensor dx, dw;
  if (buildingGraph(dy, x, w) || requiresGrad(dres)) {
    std::tie(dx, dw) =
        graphed(dy, x, w, n, ctx->saved_data["eps"].toDouble(), zc, true);
    if (dres.defined())
      dx = dx.defined() ? dx.add(dres) : dres;
    return {dx, dw};
  }
  {
    at::AutoDispatchBelowADInplaceOrView below;
    std::tie(dx, dw) =
        ops->rmsBwd.call(dy, x, rstd, optional(w), n, zc, optional(dres));
  }
  return {dx, w.defined() ? asParam(dw, w) : Tensor()};
}

struct RMSNormFunction : torch::autograd::Function<RMSNormFunction> {
  static variable_list forward(AutogradContext *ctx, const Tensor &x,
                               const OptTensor &w, int64_t n, double eps,
                               bool zc) {
    Tensor y, rstd;
    {
      at::AutoDispatchBelowADInplaceOrView below;
      std::tie(y, rstd) = ops->rmsFwd.call(x, w, n, eps, zc);
    }
    saveRmsNorm(ctx, x, w, rstd, n, eps, zc);
    return {y, rstd};
  }

  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    auto [dx, dw] = rmsNormGrads(ctx, grads[0], Tensor());
    return {dx, dw, Tensor(), Tensor(), Tensor()};
  }
};

struct AddRMSNormFunction : torch::autograd::Function<AddRMSNormFunction> {
  static variable_list forward(AutogradContext *ctx, const Tensor &x,
                               const Tensor &residual, const OptTensor &w,
                               int64_t n, double eps, bool zc) {
    Tensor y, h, rstd;
    {
      at::AutoDispatchBelowADInplaceOrView below;
      std::tie(y, h, rstd) = ops->addRmsFwd.call(x, residual, w, n, eps, zc);
    }
    saveRmsNorm(ctx, h, w, rstd, n, eps, zc);
    return {y, h, rstd};
  }

  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    auto [dx, dw] = rmsNormGrads(ctx, grads[0], grads[1]);
    return {dx, dx, dw, Tensor(), Tensor(), Tensor()};
  }
};

std::tuple<Tensor, Tensor> rmsNormFwdAutograd(const Tensor &x,
                                              const OptTensor &w, int64_t n,
                                              double eps, bool zc) {
  if (!wantsGrad(x, w, std::nullopt)) {
    at::AutoDispatchBelowADInplaceOrView below;
    return ops->rmsFwd.call(x, w, n, eps, zc);
  }
  variable_list out = RMSNormFunction::apply(x, w, n, eps, zc);
  return {out[0], out[1]};
}

std::tuple<Tensor, Tensor, Tensor>
addRmsNormFwdAutograd(const Tensor &x, const Tensor &residual,
                      const OptTensor &w, int64_t n, double eps, bool zc) {
  if (!wantsGrad(x, w, std::nullopt) &&
      !(at::GradMode::is_enabled() && residual.requires_grad())) {
    at::AutoDispatchBelowADInplaceOrView below;
    return ops->addRmsFwd.call(x, residual, w, n, eps, zc);
  }
  variable_list out = AddRMSNormFunction::apply(x, residual, w, n, eps, zc);
  return {out[0], out[1], out[2]};
}

void copyError(const char *what, char *err, size_t cap) {
  if (err && cap) {
    std::strncpy(err, what, cap - 1);
    err[cap - 1] = 0;
  }
}

} // namespace

// ------------------------------------------------------------ the C side
//
// Bound by norm_mlir.torch with ctypes, after it defined the ops and only
// in the torch this library was built against.

/// The torch this was built against: "<version> <git revision>" (the
/// version without its local tag, torch.version.git_version).
NORMTORCH_API const char *normtorch_autograd_torch_version(void) {
  return NORMTORCH_TORCH_VERSION;
}

/// Registers the forward ops' Autograd kernels; a handle for
/// normtorch_autograd_unregister, or NULL with a message in err.
NORMTORCH_API void *normtorch_autograd_register(char *err, size_t cap) {
  try {
    ops = Ops{findOp<LnFwdSig>("norm_mlir::layer_norm_fwd"),
              findOp<RmsFwdSig>("norm_mlir::rms_norm_fwd"),
              findOp<LnBwdSig>("norm_mlir::layer_norm_bwd"),
              findOp<RmsBwdSig>("norm_mlir::rms_norm_bwd"),
              findOp<AddLnFwdSig>("norm_mlir::add_layer_norm_fwd"),
              findOp<AddRmsFwdSig>("norm_mlir::add_rms_norm_fwd")};
    auto *lib = new torch::Library(torch::Library::IMPL, "norm_mlir",
                                   c10::DispatchKey::Autograd, __FILE__,
                                   __LINE__);
    lib->impl("layer_norm_fwd", TORCH_FN(layerNormFwdAutograd));
    lib->impl("rms_norm_fwd", TORCH_FN(rmsNormFwdAutograd));
    lib->impl("add_layer_norm_fwd", TORCH_FN(addLayerNormFwdAutograd));
    lib->impl("add_rms_norm_fwd", TORCH_FN(addRmsNormFwdAutograd));
    return lib;
  } catch (const std::exception &ex) {
    copyError(ex.what(), err, cap);
    return nullptr;
  }
}

NORMTORCH_API void normtorch_autograd_unregister(void *lib) {
  delete static_cast<torch::Library *>(lib);
}
