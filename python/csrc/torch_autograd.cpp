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
// kernels here call them below autograd, through the dispatcher, or, where
// the dispatcher would reach libnormtorch's C++ body and nothing else,
// through libnormtorch's direct table ("the bodies, directly" below).
//
//===----------------------------------------------------------------------===//

#include <ATen/autocast_mode.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/record_function.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/core/impl/TorchDispatchModeTLS.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/autograd/forward_grad.h>
#include <torch/csrc/inductor/aoti_torch/utils.h>
#include <torch/library.h>

#include "normtorch_direct.h"

#ifdef NORMTORCH_PYTHON_ENTRY
// CPython's limited API (3.10): the library fits every CPython its torch
// runs on. Nothing of torch's Python headers (they need the full API):
// the two functions of libtorch_python.so used are declared as
// torch/csrc/autograd/python_variable.h and torch/csrc/Exceptions.h do.
#define PY_SSIZE_T_CLEAN
#define Py_LIMITED_API 0x030A0000
#include <Python.h>
#include <ATen/PythonTorchFunctionTLS.h>
#include <variant>
PyObject *THPVariable_Wrap(const at::TensorBase &var);
PyObject *THPVariable_Wrap(at::TensorBase &&var);
namespace torch {
std::string processErrorMsg(std::string str);
} // namespace torch
#endif

#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <memory>
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
// The backward ops with dx written into dy (Tensor(a!) dy).
using LnBwdIntoSig = std::tuple<Tensor, Tensor>(
    const Tensor &, const Tensor &, const Tensor &, const Tensor &,
    const OptTensor &, bool, int64_t, bool, const OptTensor &);
using RmsBwdIntoSig = Tensor(const Tensor &, const Tensor &, const Tensor &,
                             const OptTensor &, int64_t, bool,
                             const OptTensor &);

/// The ops, found once (normtorch_autograd_register) after Python defined
/// them.
struct Ops {
  c10::TypedOperatorHandle<LnFwdSig> lnFwd;
  c10::TypedOperatorHandle<RmsFwdSig> rmsFwd;
  c10::TypedOperatorHandle<LnBwdSig> lnBwd;
  c10::TypedOperatorHandle<RmsBwdSig> rmsBwd;
  c10::TypedOperatorHandle<LnBwdIntoSig> lnBwdIntoDy;
  c10::TypedOperatorHandle<RmsBwdIntoSig> rmsBwdIntoDy;
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

// ------------------------------------------------ the bodies, directly
//
// The kernels below call the op bodies below autograd. Through the
// dispatcher that is a boxed call into libnormtorch's stable-ABI kernel:
// an IValue stack, a new at::Tensor and a torch::stable::Tensor (with its
// shared_ptr) per argument and result, about 15% of a forward's CPU time.
// Where the dispatcher could only reach those bodies, the kernels call them
// through libnormtorch's direct table instead (normtorch_direct.h), with
// borrowed handles of their own tensors: the same code, the same launches,
// the same errors. "Could only reach": the dispatch key set the call would
// compute (the tensors' keys with the thread's included and excluded keys
// applied, less autocast's and BackendSelect's keys, fallthroughs for every
// op) is exactly one dense backend key, CPU or CUDA, for which
// libnormtorch's registration is live; the thread includes no key beyond
// torch's defaults; no TorchDispatchMode is pushed; and no RecordFunction
// callback (the profiler) would record the op. Anything else (a dispatch
// mode, fake, meta or subclass tensors, the Python dispatcher,
// functionalization, functorch's wrappers and layers, the tracer, neg /
// conj views, tensors on several devices, Python bodies registered
// instead) goes through the dispatcher as before.

/// libnormtorch's table (normtorch_autograd_set_direct), or null: every
/// call goes through the dispatcher.
std::atomic<const NormtorchDirect *> directTable{nullptr};
/// Calls of the bodies direct and through the dispatcher (the tests).
std::atomic<uint64_t> directCalls{0}, dispatchedCalls{0};

c10::DispatchKeySet keysOf(const Tensor &t) {
  return t.defined() ? t.key_set() : c10::DispatchKeySet();
}
c10::DispatchKeySet keysOf(const OptTensor &t) {
  return t ? keysOf(*t) : c10::DispatchKeySet();
}

/// Keys whose kernels are fallthroughs for every op (so for ours).
constexpr c10::DispatchKeySet kPassThrough = c10::DispatchKeySet(
    {c10::DispatchKey::AutocastCPU, c10::DispatchKey::AutocastCUDA,
     c10::DispatchKey::BackendSelect});
/// The thread's included keys in plain eager mode (torch's defaults): a
/// key included beyond them (a mode's Python keys, functorch's layer keys,
/// the tracer's, the Python dispatcher's...) and the call goes through the
/// dispatcher, even where it would fall through. (Excluded keys only take
/// keys out of the set computed: autograd's backward excludes Named, the
/// kernels exclude autograd's keys.)
constexpr c10::DispatchKeySet kPlainIncluded = c10::default_included_set;

/// The dispatch keys a call with these tensors computes now (the thread's
/// included and excluded keys applied), less `skip` (keys that fall through
/// for every op).
template <class... T>
c10::DispatchKeySet callKeys(c10::DispatchKeySet skip, const T &...ts) {
  c10::DispatchKeySet ks;
  ((ks = ks | keysOf(ts)), ...);
  c10::impl::LocalDispatchKeySet local =
      c10::impl::tls_local_dispatch_key_set();
  return ((ks | local.included_) - local.excluded_) - skip;
}

/// Whether the thread is in plain eager mode: no key included beyond
/// torch's defaults, no TorchDispatchMode pushed, no RecordFunction
/// callback (the profiler) that would record an op.
bool plainThread() {
  return (c10::impl::tls_local_dispatch_key_set().included_ -
          kPlainIncluded) == c10::DispatchKeySet() &&
         !c10::impl::TorchDispatchModeTLS::any_modes_set() &&
         !at::getStepCallbacksUnlessEmpty(at::RecordScope::FUNCTION)
              .has_value();
}

/// The direct table where a call of a body with these tensors, made now
/// (below autograd), would reach that body through the dispatcher with
/// nothing in between; else null (and the call goes through the
/// dispatcher).
template <class... T> const NormtorchDirect *directFor(const T &...ts) {
  const NormtorchDirect *d = directTable.load(std::memory_order_acquire);
  if (!d)
    return nullptr;
  c10::DispatchKeySet ks = callKeys(kPassThrough, ts...);
  c10::DeviceType type;
  if (ks == c10::DispatchKeySet(c10::DispatchKey::CUDA))
    type = c10::DeviceType::CUDA;
  else if (ks == c10::DispatchKeySet(c10::DispatchKey::CPU))
    type = c10::DeviceType::CPU;
  else
    return nullptr;
  if (!d->registered(int32_t(type)) || !plainThread())
    return nullptr;
  return d;
}

/// A borrowed handle of a tensor (NULL for none): the shim's handle is an
/// at::Tensor * of this torch.
AtenTensorHandle borrow(const Tensor &t) {
  return t.defined() ? torch::aot_inductor::tensor_pointer_to_tensor_handle(
                           const_cast<Tensor *>(&t))
                     : nullptr;
}
AtenTensorHandle borrow(const OptTensor &t) { return t ? borrow(*t) : nullptr; }

/// The tensor of a handle the body made (undefined for NULL), which is
/// freed: what the stable ABI's boxed kernel does with its results.
Tensor adopt(AtenTensorHandle h) {
  if (!h)
    return Tensor();
  std::unique_ptr<Tensor> p(
      torch::aot_inductor::tensor_handle_to_tensor_pointer(h));
  return std::move(*p);
}

/// The forward bodies: y, h (the fused add only), mean (LayerNorm), rstd.
struct Fwd {
  Tensor y, h, mean, rstd;
};

Fwd forwardBody(int32_t op, const Tensor &x, const Tensor &residual,
                const OptTensor &w, const OptTensor &b, int64_t n, double eps,
                bool zc) {
  if (const NormtorchDirect *d = directFor(x, residual, w, b)) {
    directCalls.fetch_add(1, std::memory_order_relaxed);
    AtenTensorHandle o[4] = {nullptr, nullptr, nullptr, nullptr};
    d->forward(op, borrow(x), borrow(residual), borrow(w), borrow(b), n, eps,
               zc, o);
    return {adopt(o[0]), adopt(o[1]), adopt(o[2]), adopt(o[3])};
  }
  dispatchedCalls.fetch_add(1, std::memory_order_relaxed);
  Fwd f;
  if (op == NORMTORCH_LAYER_NORM) {
    if (residual.defined())
      std::tie(f.y, f.h, f.mean, f.rstd) =
          ops->addLnFwd.call(x, residual, w, b, n, eps, zc);
    else
      std::tie(f.y, f.mean, f.rstd) = ops->lnFwd.call(x, w, b, n, eps, zc);
  } else {
    if (residual.defined())
      std::tie(f.y, f.h, f.rstd) =
          ops->addRmsFwd.call(x, residual, w, n, eps, zc);
    else
      std::tie(f.y, f.rstd) = ops->rmsFwd.call(x, w, n, eps, zc);
  }
  return f;
}

/// The backward bodies: dx (undefined where it went into dy), dweight,
/// dbias (LayerNorm).
struct Bwd {
  Tensor dx, dw, db;
};

Bwd backwardBody(int32_t op, const Tensor &dy, const Tensor &x,
                 const Tensor &mean, const Tensor &rstd, const Tensor &w,
                 bool hasBias, int64_t n, bool zc, const Tensor &dres,
                 bool intoDy) {
  if (const NormtorchDirect *d = directFor(dy, x, mean, rstd, w, dres)) {
    directCalls.fetch_add(1, std::memory_order_relaxed);
    AtenTensorHandle o[3] = {nullptr, nullptr, nullptr};
    d->backward(op, borrow(dy), borrow(x), borrow(mean), borrow(rstd),
                borrow(w), hasBias, n, zc, borrow(dres), intoDy, o);
    return {adopt(o[0]), adopt(o[1]), adopt(o[2])};
  }
  dispatchedCalls.fetch_add(1, std::memory_order_relaxed);
  Bwd g;
  OptTensor wo = optional(w), dro = optional(dres);
  if (op == NORMTORCH_LAYER_NORM) {
    if (intoDy)
      std::tie(g.dw, g.db) =
          ops->lnBwdIntoDy.call(dy, x, mean, rstd, wo, hasBias, n, zc, dro);
    else
      std::tie(g.dx, g.dw, g.db) =
          ops->lnBwd.call(dy, x, mean, rstd, wo, hasBias, n, zc, dro);
  } else {
    if (intoDy)
      g.dw = ops->rmsBwdIntoDy.call(dy, x, rstd, wo, n, zc, dro);
    else
      std::tie(g.dx, g.dw) = ops->rmsBwd.call(dy, x, rstd, wo, n, zc, dro);
  }
  return g;
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

/// The same for a shape saved without its tensor (the bias's).
Tensor asShape(const Tensor &g, c10::IntArrayRef shape) {
  return shape.size() == 1 ? g : g.view(shape);
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

/// Whether dx may be written into dy (the kernels' in-place backward)
/// with nobody able to see it: dy is a plain dense tensor, contiguous with
/// x's shape and dtype, held by this backward's gradient list alone (no
/// other reference, weak or strong: not the tensor a user passed to
/// backward(), which the graph's root and the caller hold, nor one a hook
/// kept) and owning its storage alone (no view of it anywhere), with no
/// dispatch mode or tensor subclass around (compiled autograd's tracing, a
/// fake tensor). Autograd then hands dx on as the gradient of x, as it
/// would a new tensor.
bool canTakeDx(const Tensor &dy, const Tensor &x) {
  if (!dy.defined() || dy.use_count() != 1 || dy.weak_use_count() != 1 ||
      dy.is_view() || dy.requires_grad())
    return false;
  constexpr auto plainKeys = c10::DispatchKeySet(
      {c10::DispatchKey::Python, c10::DispatchKey::PythonTLSSnapshot,
       c10::DispatchKey::Functionalize, c10::DispatchKey::FuncTorchBatched,
       c10::DispatchKey::FuncTorchGradWrapper});
  if (dy.key_set().has_any(plainKeys) ||
      c10::impl::tls_local_dispatch_key_set().included_.has_any(plainKeys) ||
      !dy.has_storage())
    return false;
  const c10::Storage &st = dy.storage();
  return st.use_count() == 1 && dy.storage_offset() == 0 &&
         st.nbytes() == size_t(dy.numel()) * dy.element_size() &&
         dy.scalar_type() == x.scalar_type() && dy.sizes() == x.sizes() &&
         dy.device() == x.device() && dy.is_contiguous() &&
         dy.layout() == at::kStrided;
}

bool buildingGraph(const Tensor &dy, const Tensor &x, const Tensor &w) {
  return at::GradMode::is_enabled() &&
         (requiresGrad(dy) || requiresGrad(x) || requiresGrad(w));
}

/// The statistics a forward computes beside y (mean and rstd, or rstd):
/// outputs of the op but not of the autograd Function, which gets a
/// pointer to this and fills it. So they carry no history without being
/// marked non-differentiable, a mark CppNode keeps and compiled autograd
/// refuses (an internal assert in its compiled_args).
struct Stats {
  Tensor mean, rstd;
};

// ------------------------------------------------------------- LayerNorm
//
// Saved: x (h, the sum, for the residual-add op), the weight (undefined
// without one), mean, rstd; n, zero-centred and whether there is a bias
// (one int), eps, and the bias's shape where it is not [n].

void saveLayerNorm(AutogradContext *ctx, const Tensor &x, const OptTensor &w,
                   const OptTensor &b, const Tensor &mean, const Tensor &rstd,
                   int64_t n, double eps, bool zc) {
  ctx->save_for_backward({x, orUndefined(w), mean, rstd});
  // Few entries (each is a hash-map node): n and the flags in one int;
  // the bias's shape only where it is not [n].
  ctx->saved_data["a"] = n << 2 | int64_t(zc) << 1 | int64_t(b.has_value());
  ctx->saved_data["eps"] = eps;
  if (b && b->dim() != 1)
    ctx->saved_data["bshape"] = b->sizes().vec();
}

/// dx, dweight, dbias of a LayerNorm saved by saveLayerNorm; dres (may be
/// undefined) is added into dx: the kernels' dresidual.
std::tuple<Tensor, Tensor, Tensor>
layerNormGrads(AutogradContext *ctx, const Tensor &dy, const Tensor &dres) {
  variable_list saved = ctx->get_saved_variables();
  const Tensor &x = saved[0], &w = saved[1], &mean = saved[2],
               &rstd = saved[3];
  int64_t a = ctx->saved_data["a"].toInt(), n = a >> 2;
  bool zc = a & 2, hasBias = a & 1;
  c10::SmallVector<int64_t, 4> bshape{n};
  if (hasBias) {
    auto bit = ctx->saved_data.find("bshape");
    if (bit != ctx->saved_data.end()) {
      std::vector<int64_t> v = bit->second.toIntVector();
      bshape.assign(v.begin(), v.end());
    }
  }
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
    bool intoDy = canTakeDx(dy, x);
    Bwd g = backwardBody(NORMTORCH_LAYER_NORM, dy, x, mean, rstd, w, hasBias, n,
                         zc, dres, intoDy);
    dx = intoDy ? dy : std::move(g.dx);
    dw = std::move(g.dw);
    db = std::move(g.db);
  }
  return {dx, w.defined() ? asParam(dw, w) : Tensor(),
          hasBias ? asShape(db, bshape) : Tensor()};
}

struct LayerNormFunction : torch::autograd::Function<LayerNormFunction> {
  static variable_list forward(AutogradContext *ctx, const Tensor &x,
                               const OptTensor &w, const OptTensor &b,
                               int64_t n, double eps, bool zc, Stats *st) {
    Tensor y;
    {
      at::AutoDispatchBelowADInplaceOrView below;
      Fwd f = forwardBody(NORMTORCH_LAYER_NORM, x, Tensor(), w, b, n, eps, zc);
      y = std::move(f.y);
      st->mean = std::move(f.mean);
      st->rstd = std::move(f.rstd);
    }
    saveLayerNorm(ctx, x, w, b, st->mean, st->rstd, n, eps, zc);
    return {y};
  }

  static variable_list backward(AutogradContext *ctx,
                                variable_list &grads) {
    auto [dx, dw, db] = layerNormGrads(ctx, grads[0], Tensor());
    return {dx, dw, db, Tensor(), Tensor(), Tensor(), Tensor()};
  }
};

/// The residual-add nodes leave undefined output gradients undefined
/// (set_materialize_grads(false) in their forwards): with CppNode's
/// default, h unused (no gradient reaches it) cost an [M, N] zeros tensor
/// (an allocation and a fill kernel) every backward, then a dresidual
/// operand the kernel read. Now h's undefined gradient is no dresidual;
/// y's, where only h was used, is still zeros (made here, as CppNode did).
void yGradOrZeros(AutogradContext *ctx, variable_list &grads) {
  if (!grads[0].defined())
    grads[0] = at::zeros_like(ctx->get_saved_variables()[0],
                              at::MemoryFormat::Contiguous);
}

/// add_layer_norm_fwd: h = x + residual is an output; its gradient goes
/// into the backward kernel as dresidual, and dx to both x and residual.
struct AddLayerNormFunction
    : torch::autograd::Function<AddLayerNormFunction> {
  static variable_list forward(AutogradContext *ctx, const Tensor &x,
                               const Tensor &residual, const OptTensor &w,
                               const OptTensor &b, int64_t n, double eps,
                               bool zc, Stats *st) {
    Tensor y, h;
    {
      at::AutoDispatchBelowADInplaceOrView below;
      Fwd f = forwardBody(NORMTORCH_LAYER_NORM, x, residual, w, b, n, eps, zc);
      y = std::move(f.y);
      h = std::move(f.h);
      st->mean = std::move(f.mean);
      st->rstd = std::move(f.rstd);
    }
    saveLayerNorm(ctx, h, w, b, st->mean, st->rstd, n, eps, zc);
    ctx->set_materialize_grads(false);
    return {y, h};
  }

  static variable_list backward(AutogradContext *ctx,
                                variable_list &grads) {
    yGradOrZeros(ctx, grads);
    auto [dx, dw, db] = layerNormGrads(ctx, grads[0], grads[1]);
    return {dx, dx, dw, db, Tensor(), Tensor(), Tensor(), Tensor()};
  }
};

std::tuple<Tensor, Tensor, Tensor>
layerNormFwdAutograd(const Tensor &x, const OptTensor &w, const OptTensor &b,
                     int64_t n, double eps, bool zc) {
  if (!wantsGrad(x, w, b)) {
    at::AutoDispatchBelowADInplaceOrView below;
    Fwd f = forwardBody(NORMTORCH_LAYER_NORM, x, Tensor(), w, b, n, eps, zc);
    return {std::move(f.y), std::move(f.mean), std::move(f.rstd)};
  }
  Stats st;
  variable_list out = LayerNormFunction::apply(x, w, b, n, eps, zc, &st);
  return {std::move(out[0]), std::move(st.mean), std::move(st.rstd)};
}

std::tuple<Tensor, Tensor, Tensor, Tensor>
addLayerNormFwdAutograd(const Tensor &x, const Tensor &residual,
                        const OptTensor &w, const OptTensor &b, int64_t n,
                        double eps, bool zc) {
  if (!wantsGrad(x, w, b) && !(at::GradMode::is_enabled() &&
                               residual.requires_grad())) {
    at::AutoDispatchBelowADInplaceOrView below;
    Fwd f = forwardBody(NORMTORCH_LAYER_NORM, x, residual, w, b, n, eps, zc);
    return {std::move(f.y), std::move(f.h), std::move(f.mean),
            std::move(f.rstd)};
  }
  Stats st;
  variable_list out =
      AddLayerNormFunction::apply(x, residual, w, b, n, eps, zc, &st);
  return {std::move(out[0]), std::move(out[1]), std::move(st.mean),
          std::move(st.rstd)};
}

// --------------------------------------------------------------- RMSNorm

void saveRmsNorm(AutogradContext *ctx, const Tensor &x, const OptTensor &w,
                 const Tensor &rstd, int64_t n, double eps, bool zc) {
  ctx->save_for_backward({x, orUndefined(w), rstd});
  ctx->saved_data["a"] = n << 2 | int64_t(zc) << 1;
  ctx->saved_data["eps"] = eps;
}

std::pair<Tensor, Tensor> rmsNormGrads(AutogradContext *ctx, const Tensor &dy,
                                       const Tensor &dres) {
  variable_list saved = ctx->get_saved_variables();
  const Tensor &x = saved[0], &w = saved[1], &rstd = saved[2];
  int64_t a = ctx->saved_data["a"].toInt(), n = a >> 2;
  bool zc = a & 2;
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
    bool intoDy = canTakeDx(dy, x);
    Bwd g = backwardBody(NORMTORCH_RMS_NORM, dy, x, Tensor(), rstd, w, false, n,
                         zc, dres, intoDy);
    dx = intoDy ? dy : std::move(g.dx);
    dw = std::move(g.dw);
  }
  return {dx, w.defined() ? asParam(dw, w) : Tensor()};
}

struct RMSNormFunction : torch::autograd::Function<RMSNormFunction> {
  static variable_list forward(AutogradContext *ctx, const Tensor &x,
                               const OptTensor &w, int64_t n, double eps,
                               bool zc, Stats *st) {
    Tensor y;
    {
      at::AutoDispatchBelowADInplaceOrView below;
      Fwd f = forwardBody(NORMTORCH_RMS_NORM, x, Tensor(), w, std::nullopt, n,
                          eps, zc);
      y = std::move(f.y);
      st->rstd = std::move(f.rstd);
    }
    saveRmsNorm(ctx, x, w, st->rstd, n, eps, zc);
    return {y};
  }

  static variable_list backward(AutogradContext *ctx,
                                variable_list &grads) {
    auto [dx, dw] = rmsNormGrads(ctx, grads[0], Tensor());
    return {dx, dw, Tensor(), Tensor(), Tensor(), Tensor()};
  }
};

struct AddRMSNormFunction : torch::autograd::Function<AddRMSNormFunction> {
  static variable_list forward(AutogradContext *ctx, const Tensor &x,
                               const Tensor &residual, const OptTensor &w,
                               int64_t n, double eps, bool zc,
                               Stats *st) {
    Tensor y, h;
    {
      at::AutoDispatchBelowADInplaceOrView below;
      Fwd f = forwardBody(NORMTORCH_RMS_NORM, x, residual, w, std::nullopt, n,
                          eps, zc);
      y = std::move(f.y);
      h = std::move(f.h);
      st->rstd = std::move(f.rstd);
    }
    saveRmsNorm(ctx, h, w, st->rstd, n, eps, zc);
    ctx->set_materialize_grads(false);
    return {y, h};
  }

  static variable_list backward(AutogradContext *ctx,
                                variable_list &grads) {
    yGradOrZeros(ctx, grads);
    auto [dx, dw] = rmsNormGrads(ctx, grads[0], grads[1]);
    return {dx, dx, dw, Tensor(), Tensor(), Tensor(), Tensor()};
  }
};

std::tuple<Tensor, Tensor> rmsNormFwdAutograd(const Tensor &x,
                                              const OptTensor &w, int64_t n,
                                              double eps, bool zc) {
  if (!wantsGrad(x, w, std::nullopt)) {
    at::AutoDispatchBelowADInplaceOrView below;
    Fwd f = forwardBody(NORMTORCH_RMS_NORM, x, Tensor(), w, std::nullopt, n,
                        eps, zc);
    return {std::move(f.y), std::move(f.rstd)};
  }
  Stats st;
  variable_list out = RMSNormFunction::apply(x, w, n, eps, zc, &st);
  return {std::move(out[0]), std::move(st.rstd)};
}

std::tuple<Tensor, Tensor, Tensor>
addRmsNormFwdAutograd(const Tensor &x, const Tensor &residual,
                      const OptTensor &w, int64_t n, double eps, bool zc) {
  if (!wantsGrad(x, w, std::nullopt) &&
      !(at::GradMode::is_enabled() && residual.requires_grad())) {
    at::AutoDispatchBelowADInplaceOrView below;
    Fwd f = forwardBody(NORMTORCH_RMS_NORM, x, residual, w, std::nullopt, n,
                        eps, zc);
    return {std::move(f.y), std::move(f.h), std::move(f.rstd)};
  }
  Stats st;
  variable_list out =
      AddRMSNormFunction::apply(x, residual, w, n, eps, zc, &st);
  return {std::move(out[0]), std::move(out[1]), std::move(st.rstd)};
}

// ------------------------------------------------------- the eager calls
//
// norm_mlir::_eager_layer_norm / _eager_rms_norm (defined by norm_mlir.torch,
// CompositeImplicitAutograd kernels here): what layer_norm() / rms_norm()
// and the modules call in eager mode, so that one call from Python does
// their checks (shapes, which tensors our kernels take, autocast, torch.func
// and forward-mode AD) and reaches the autograd kernel above without
// Python in between. The same decisions as norm_mlir.torch's Python (its
// _check, _ours and autocast rule), which stays for torch.compile (dynamo
// traces it) and for a torch without this library.

/// Which device types take our kernels (bit 1 << DeviceType): CUDA, and
/// the CPU (or any type) where the CPU tests send tensors through the real
/// bodies (norm_mlir.torch._accept_devices).
std::atomic<uint64_t> acceptedDevices{uint64_t(1)
                                      << int(c10::DeviceType::CUDA)};

/// Whether our kernels run on a CUDA device, per index: 0 unknown (ask
/// Python), 1 yes, 2 no (Python warned once). Python decides
/// (norm_mlir.torch._supported: the chip, ROCm) and clears this with its
/// own cache.
constexpr int kMaxDevices = 64;
std::atomic<int8_t> cudaSupport[kMaxDevices];
using SupportFn = int (*)(int32_t device); // 1 yes, 0 no, -1 error
std::atomic<SupportFn> supportFn{nullptr};

bool onDevice(const Tensor &t) {
  return acceptedDevices.load(std::memory_order_relaxed) >>
             int(t.device().type()) &
         1;
}

bool supported(const c10::Device &d) {
  if (d.type() != c10::DeviceType::CUDA)
    return true; // the CPU tests' tensors (norm_mlir.torch._unsupported_reason)
  int idx = d.has_index() ? d.index() : 0;
  if (idx < 0 || idx >= kMaxDevices)
    return false;
  int8_t s = cudaSupport[idx].load(std::memory_order_relaxed);
  if (s == 0) {
    SupportFn f = supportFn.load();
    int got = f ? f(idx) : -1;
    TORCH_CHECK(got >= 0, "norm_mlir: could not decide whether cuda:", idx,
                " runs our kernels");
    s = got ? 1 : 2;
    cudaSupport[idx].store(s, std::memory_order_relaxed);
  }
  return s == 1;
}

bool normDtype(at::ScalarType t) {
  return t == at::kFloat || t == at::kHalf || t == at::kBFloat16;
}

/// torch.func transforms (grad, vmap, jvp...) or a forward-mode AD level:
/// only torch's own functions see through their tensors (x is one of
/// vmap's batched tensors where the eager calls' FuncTorchBatched kernel
/// runs: below).
bool transformsActive(const Tensor &x) {
  const auto &tls = c10::impl::tls_local_dispatch_key_set().included_;
  return tls.has(c10::DispatchKey::FuncTorchDynamicLayerFrontMode) ||
         tls.has(c10::DispatchKey::FuncTorchDynamicLayerBackMode) ||
         x.key_set().has_any(c10::DispatchKeySet(
             {c10::DispatchKey::FuncTorchBatched,
              c10::DispatchKey::FuncTorchGradWrapper})) ||
         torch::autograd::ForwardADLevel::try_get_by_idx(0) != nullptr;
}

/// norm_mlir.torch._ours: whether a call runs our kernels.
bool ours(const Tensor &x, const OptTensor &w, const OptTensor &b) {
  if (!(onDevice(x) && normDtype(x.scalar_type()) && x.numel() > 0))
    return false;
  if (w && !(onDevice(*w) && normDtype(w->scalar_type()) &&
             w->is_contiguous()))
    return false;
  // A bias of the weight's dtype (else x's): one of ours, then.
  if (b && !(b->scalar_type() == (w ? w->scalar_type() : x.scalar_type()) &&
             onDevice(*b) && b->is_contiguous()))
    return false;
  if (transformsActive(x))
    return false;
  return supported(x.device());
}

std::string listOf(c10::IntArrayRef v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

/// norm_mlir.torch._check: ValueErrors with its messages.
void checkShapes(const Tensor &x, c10::IntArrayRef shape, const OptTensor &w,
                 const OptTensor &b) {
  c10::IntArrayRef xs = x.sizes();
  TORCH_CHECK_VALUE(shape.size() <= xs.size() &&
                        xs.slice(xs.size() - shape.size()) == shape,
                    "normalized_shape ", listOf(shape),
                    " does not match the trailing dimensions of x ",
                    listOf(xs));
  TORCH_CHECK_VALUE(!w || w->sizes() == shape, "weight has shape ",
                    listOf(w->sizes()), ", expected ", listOf(shape));
  TORCH_CHECK_VALUE(!b || b->sizes() == shape, "bias has shape ",
                    listOf(b->sizes()), ", expected ", listOf(shape));
}

int64_t product(c10::IntArrayRef shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// The weight as applied by torch's functions (1 + weight, zero-centred).
OptTensor appliedWeight(const OptTensor &w, bool zc) {
  return zc && w ? OptTensor(w->add(1)) : w;
}

OptTensor toFloat(const OptTensor &t) {
  return t && (t->scalar_type() == at::kHalf ||
               t->scalar_type() == at::kBFloat16)
             ? OptTensor(t->to(at::kFloat))
             : t;
}

Tensor eagerLayerNorm(const Tensor &x0, c10::IntArrayRef shape,
                      const OptTensor &w0, const OptTensor &b0, double eps,
                      bool zc) {
  checkShapes(x0, shape, w0, b0);
  if (shape.empty() || !ours(x0, w0, b0))
    return at::layer_norm(x0, shape, appliedWeight(w0, zc), b0, eps);
  if (x0.is_cuda() && at::autocast::is_autocast_enabled(at::kCUDA)) {
    // torch's layer_norm is on CUDA autocast's fp32 list: its inputs are
    // cast to f32, so its output is f32 (rms_norm's is not).
    OptTensor x = toFloat(x0);
    return std::get<0>(layerNormFwdAutograd(*x, toFloat(w0), toFloat(b0),
                                            product(shape), eps, zc));
  }
  return std::get<0>(
      layerNormFwdAutograd(x0, w0, b0, product(shape), eps, zc));
}

Tensor eagerRmsNorm(const Tensor &x, c10::IntArrayRef shape,
                    const OptTensor &w, std::optional<double> eps, bool zc) {
  checkShapes(x, shape, w, std::nullopt);
  if (shape.empty() || !ours(x, w, std::nullopt))
    return at::rms_norm(x, shape, appliedWeight(w, zc), eps);
  // torch's default: the epsilon of the type it computes in (f32's for
  // f16 / bf16, and f32 is the widest we take).
  double e = eps ? *eps : double(std::numeric_limits<float>::epsilon());
  return std::get<0>(rmsNormFwdAutograd(x, w, product(shape), e, zc));
}

/// norm_mlir.torch._fused_residual: whether x + residual goes into our
/// residual-add op (one shape, dtype and device, outside CUDA autocast,
/// where layer_norm computes in f32 but the sum keeps its dtype).
bool fusedResidual(const Tensor &x, const Tensor &residual) {
  return residual.sizes() == x.sizes() &&
         residual.scalar_type() == x.scalar_type() &&
         residual.device() == x.device() &&
         !at::autocast::is_autocast_enabled(at::kCUDA);
}

/// add_layer_norm() with a residual: (y, h = x + residual) from our fused
/// forward, else torch's add and the eager layer_norm of h.
std::tuple<Tensor, Tensor>
eagerAddLayerNorm(const Tensor &x, const Tensor &residual,
                  c10::IntArrayRef shape, const OptTensor &w,
                  const OptTensor &b, double eps, bool zc) {
  checkShapes(x, shape, w, b);
  if (shape.empty() || !fusedResidual(x, residual) || !ours(x, w, b)) {
    Tensor h = x.add(residual);
    return {eagerLayerNorm(h, shape, w, b, eps, zc), h};
  }
  auto out = addLayerNormFwdAutograd(x, residual, w, b, product(shape), eps,
                                     zc);
  return {std::move(std::get<0>(out)), std::move(std::get<1>(out))};
}

/// add_rms_norm() with a residual, as eagerAddLayerNorm.
std::tuple<Tensor, Tensor>
eagerAddRmsNorm(const Tensor &x, const Tensor &residual,
                c10::IntArrayRef shape, const OptTensor &w,
                std::optional<double> eps, bool zc) {
  checkShapes(x, shape, w, std::nullopt);
  if (shape.empty() || !fusedResidual(x, residual) ||
      !ours(x, w, std::nullopt)) {
    Tensor h = x.add(residual);
    return {eagerRmsNorm(h, shape, w, eps, zc), h};
  }
  double e = eps ? *eps : double(std::numeric_limits<float>::epsilon());
  auto out = addRmsNormFwdAutograd(x, residual, w, product(shape), e, zc);
  return {std::move(std::get<0>(out)), std::move(std::get<1>(out))};
}

// ------------------------------------------------- the Python entry
//
// What Python calls for the eager calls instead of the ops' C++ callables
// (OpOverload._op): on the CPU that entry cost about 1.2 us of a 4.7 us
// forward over a generated torch binding (pybind11's dispatch, a
// __torch_function__ check of every argument, each argument converted to
// an IValue by the schema, a boxed call through the dispatcher, the result
// converted back). These functions take the arguments as they come
// (METH_FASTCALL), and where the call is plain eager (x, weight, bias,
// residual exact torch.Tensor / Parameter objects; no torch function mode;
// no dispatch mode, profiler callback or dispatch key beyond torch's
// defaults: exactly where the dispatcher would call the eager op's
// CompositeImplicitAutograd kernel with nothing around it) call that
// kernel (eagerLayerNorm...) directly, with the GIL released as the op
// call releases it; anything else calls the op's callable (`fallback`), as
// before. Errors become the exceptions torch's bindings raise, C++
// warnings Python warnings.
//
// Built only where Python's headers are found (build_ext.py defines
// NORMTORCH_PYTHON_ENTRY), with the limited API of CPython 3.10, so the
// library still fits every CPython of its torch. A tensor's at::Tensor is
// read from torch's THPVariable layout (PyObject_HEAD, then the
// at::Tensor: torch/csrc/autograd/python_variable.h), which
// normtorch_autograd_python_entries checks against a probe tensor before
// handing the functions out.

#ifdef NORMTORCH_PYTHON_ENTRY

struct PyTensor {
  PyObject_HEAD at::Tensor cdata;
};

struct PyEntry {
  PyObject *tensorType = nullptr, *parameterType = nullptr;
  PyObject *fallback[4] = {nullptr, nullptr, nullptr, nullptr};
  PyObject *oomError = nullptr; // torch.OutOfMemoryError
};
PyEntry pyEntry;
std::atomic<int> pyEntryOn{1};
std::atomic<uint64_t> pyFastCalls{0}, pyFallbackCalls{0};

bool plainTensor(PyObject *o) {
  PyObject *t = reinterpret_cast<PyObject *>(Py_TYPE(o));
  return t == pyEntry.tensorType || t == pyEntry.parameterType;
}

const Tensor *tensorArg(PyObject *o) {
  return plainTensor(o) ? &reinterpret_cast<PyTensor *>(o)->cdata : nullptr;
}

/// An optional tensor: None or a plain tensor; false for anything else.
bool optTensorArg(PyObject *o, OptTensor &out) {
  if (o == Py_None)
    return true;
  const Tensor *t = tensorArg(o);
  if (!t)
    return false;
  out = *t;
  return true;
}

/// int[]: a tuple (torch.Size too) or list of exact ints.
bool shapeArg(PyObject *o, c10::SmallVector<int64_t, 4> &out) {
  bool tuple = PyTuple_Check(o), list = !tuple && PyList_Check(o);
  if (!tuple && !list)
    return false;
  Py_ssize_t n = tuple ? PyTuple_Size(o) : PyList_Size(o);
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject *d = tuple ? PyTuple_GetItem(o, i) : PyList_GetItem(o, i);
    if (!d || !PyLong_CheckExact(d))
      return false;
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(d, &overflow);
    if (overflow || (v == -1 && PyErr_Occurred())) {
      PyErr_Clear();
      return false;
    }
    out.push_back(v);
  }
  return true;
}

bool doubleArg(PyObject *o, double &out) {
  if (PyFloat_CheckExact(o)) {
    out = PyFloat_AsDouble(o);
    return true;
  }
  if (PyLong_CheckExact(o)) {
    out = PyLong_AsDouble(o);
    if (out == -1.0 && PyErr_Occurred()) {
      PyErr_Clear();
      return false;
    }
    return true;
  }
  return false;
}

bool optDoubleArg(PyObject *o, std::optional<double> &out) {
  if (o == Py_None)
    return true;
  double d;
  if (!doubleArg(o, d))
    return false;
  out = d;
  return true;
}

bool boolArg(PyObject *o, bool &out) {
  if (o != Py_True && o != Py_False)
    return false;
  out = o == Py_True;
  return true;
}

/// Whether the dispatcher would call the eager op's kernel
/// (CompositeImplicitAutograd) for these tensors now with nothing before
/// it: the highest key of the set it computes, less the keys that fall
/// through for every op (autocast's, BackendSelect, ADInplaceOrView), is
/// the CPU's or CUDA's autograd or dense key (where that kernel is
/// registered), and the thread includes no key beyond torch's defaults;
/// no dispatch mode; no profiler callback (its trace keeps the op); no
/// torch function mode (which the op's callable consults).
template <class... T> bool plainCall(const T &...ts) {
  if (!plainThread() || at::impl::torch_function_mode_enabled())
    return false;
  c10::DispatchKey top =
      callKeys(kPassThrough | c10::DispatchKeySet(
                                  c10::DispatchKey::ADInplaceOrView),
               ts...)
          .highestPriorityTypeId();
  return top == c10::DispatchKey::AutogradCPU ||
         top == c10::DispatchKey::AutogradCUDA ||
         top == c10::DispatchKey::CPU || top == c10::DispatchKey::CUDA;
}

/// Collects C++ warnings of the call, raised as Python warnings after it.
struct CollectWarnings : c10::WarningHandler {
  std::vector<c10::Warning> got;
  void process(const c10::Warning &w) override { got.push_back(w); }
};

/// Sets the Python exception torch's bindings set for a C++ exception
/// (torch/csrc/Exceptions.h: CATCH_ALL_ERRORS); the GIL is held.
void setPythonError() {
  auto set = [](PyObject *type, const char *what) {
    PyErr_SetString(type, torch::processErrorMsg(what).c_str());
  };
  try {
    throw;
  } catch (const c10::IndexError &e) {
    set(PyExc_IndexError, e.what_without_backtrace());
  } catch (const c10::ValueError &e) {
    set(PyExc_ValueError, e.what_without_backtrace());
  } catch (const c10::TypeError &e) {
    set(PyExc_TypeError, e.what_without_backtrace());
  } catch (const c10::NotImplementedError &e) {
    set(PyExc_NotImplementedError, e.what_without_backtrace());
  } catch (const c10::OutOfMemoryError &e) {
    set(pyEntry.oomError ? pyEntry.oomError : PyExc_RuntimeError,
        e.what_without_backtrace());
  } catch (const c10::Error &e) {
    set(PyExc_RuntimeError, e.what_without_backtrace());
  } catch (const std::exception &e) {
    set(PyExc_RuntimeError, e.what());
  } catch (...) {
    PyErr_SetString(PyExc_RuntimeError, "norm_mlir: unknown C++ exception");
  }
}

/// Runs f (returning a Tensor or a tuple of two) without the GIL; its
/// result as Python objects, or NULL with the exception set.
template <class F> PyObject *runPlain(F &&f) {
  pyFastCalls.fetch_add(1, std::memory_order_relaxed);
  CollectWarnings warnings;
  PyObject *result = nullptr;
  bool failed = false;
  decltype(f()) out;
  PyThreadState *ts = PyEval_SaveThread();
  try {
    c10::WarningUtils::WarningHandlerGuard guard(&warnings);
    out = f();
  } catch (...) {
    PyEval_RestoreThread(ts);
    ts = nullptr;
    setPythonError();
    failed = true;
  }
  if (ts)
    PyEval_RestoreThread(ts);
  // Not with an exception set (torch's bindings then leave them to C++'s
  // handler; they are dropped here), and no more after one that a warning
  // filter turned into an error.
  for (const c10::Warning &w : warnings.got) {
    if (failed)
      break;
    PyObject *cat = std::holds_alternative<c10::DeprecationWarning>(w.type())
                        ? PyExc_DeprecationWarning
                        : PyExc_UserWarning;
    if (PyErr_WarnEx(cat, w.msg().c_str(), 1) < 0)
      failed = true; // a warning turned into an error
  }
  if (failed)
    return nullptr;
  if constexpr (std::is_same_v<decltype(out), Tensor>) {
    result = THPVariable_Wrap(std::move(out));
  } else {
    PyObject *a = THPVariable_Wrap(std::move(std::get<0>(out)));
    PyObject *b = a ? THPVariable_Wrap(std::move(std::get<1>(out))) : nullptr;
    if (!b) {
      Py_XDECREF(a);
      return nullptr;
    }
    result = PyTuple_Pack(2, a, b);
    Py_DECREF(a);
    Py_DECREF(b);
  }
  return result;
}

/// The op's callable with the same arguments (the dispatcher's route).
PyObject *viaOp(int which, PyObject *const *args, Py_ssize_t nargs) {
  pyFallbackCalls.fetch_add(1, std::memory_order_relaxed);
  PyObject *fn = pyEntry.fallback[which];
  if (!fn) {
    PyErr_SetString(PyExc_RuntimeError, "norm_mlir: no eager op");
    return nullptr;
  }
  PyObject *tuple = PyTuple_New(nargs);
  if (!tuple)
    return nullptr;
  for (Py_ssize_t i = 0; i < nargs; ++i) {
    Py_INCREF(args[i]);
    PyTuple_SetItem(tuple, i, args[i]);
  }
  PyObject *r = PyObject_Call(fn, tuple, nullptr);
  Py_DECREF(tuple);
  return r;
}

bool entryOn() { return pyEntryOn.load(std::memory_order_relaxed) != 0; }

// layer_norm(x, normalized_shape, weight, bias, eps, zero_centered)
PyObject *pyLayerNorm(PyObject *, PyObject *const *args, Py_ssize_t nargs) {
  const Tensor *x;
  c10::SmallVector<int64_t, 4> shape;
  OptTensor w, b;
  double eps;
  bool zc;
  if (entryOn() && nargs == 6 && (x = tensorArg(args[0])) &&
      shapeArg(args[1], shape) && optTensorArg(args[2], w) &&
      optTensorArg(args[3], b) && doubleArg(args[4], eps) &&
      boolArg(args[5], zc) && plainCall(*x, w, b))
    return runPlain([&] { return eagerLayerNorm(*x, shape, w, b, eps, zc); });
  return viaOp(0, args, nargs);
}

// rms_norm(x, normalized_shape, weight, eps, zero_centered)
PyObject *pyRmsNorm(PyObject *, PyObject *const *args, Py_ssize_t nargs) {
  const Tensor *x;
  c10::SmallVector<int64_t, 4> shape;
  OptTensor w;
  std::optional<double> eps;
  bool zc;
  if (entryOn() && nargs == 5 && (x = tensorArg(args[0])) &&
      shapeArg(args[1], shape) && optTensorArg(args[2], w) &&
      optDoubleArg(args[3], eps) && boolArg(args[4], zc) && plainCall(*x, w))
    return runPlain([&] { return eagerRmsNorm(*x, shape, w, eps, zc); });
  return viaOp(1, args, nargs);
}

// add_layer_norm(x, residual, normalized_shape, weight, bias, eps, zc)
PyObject *pyAddLayerNorm(PyObject *, PyObject *const *args,
                         Py_ssize_t nargs) {
  const Tensor *x, *r;
  c10::SmallVector<int64_t, 4> shape;
  OptTensor w, b;
  double eps;
  bool zc;
  if (entryOn() && nargs == 7 && (x = tensorArg(args[0])) &&
      (r = tensorArg(args[1])) && shapeArg(args[2], shape) &&
      optTensorArg(args[3], w) && optTensorArg(args[4], b) &&
      doubleArg(args[5], eps) && boolArg(args[6], zc) &&
      plainCall(*x, *r, w, b))
    return runPlain(
        [&] { return eagerAddLayerNorm(*x, *r, shape, w, b, eps, zc); });
  return viaOp(2, args, nargs);
}

// add_rms_norm(x, residual, normalized_shape, weight, eps, zc)
PyObject *pyAddRmsNorm(PyObject *, PyObject *const *args, Py_ssize_t nargs) {
  const Tensor *x, *r;
  c10::SmallVector<int64_t, 4> shape;
  OptTensor w;
  std::optional<double> eps;
  bool zc;
  if (entryOn() && nargs == 6 && (x = tensorArg(args[0])) &&
      (r = tensorArg(args[1])) && shapeArg(args[2], shape) &&
      optTensorArg(args[3], w) && optDoubleArg(args[4], eps) &&
      boolArg(args[5], zc) && plainCall(*x, *r, w))
    return runPlain(
        [&] { return eagerAddRmsNorm(*x, *r, shape, w, eps, zc); });
  return viaOp(3, args, nargs);
}

PyMethodDef pyEntryDefs[] = {
    {"layer_norm", reinterpret_cast<PyCFunction>(
                       reinterpret_cast<void (*)()>(&pyLayerNorm)),
     METH_FASTCALL, "norm_mlir::_eager_layer_norm, eager"},
    {"rms_norm", reinterpret_cast<PyCFunction>(
                     reinterpret_cast<void (*)()>(&pyRmsNorm)),
     METH_FASTCALL, "norm_mlir::_eager_rms_norm, eager"},
    {"add_layer_norm", reinterpret_cast<PyCFunction>(
                           reinterpret_cast<void (*)()>(&pyAddLayerNorm)),
     METH_FASTCALL, "norm_mlir::_eager_add_layer_norm, eager"},
    {"add_rms_norm", reinterpret_cast<PyCFunction>(
                         reinterpret_cast<void (*)()>(&pyAddRmsNorm)),
     METH_FASTCALL, "norm_mlir::_eager_add_rms_norm, eager"},
};

#endif // NORMTORCH_PYTHON_ENTRY

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

/// The registrations normtorch_autograd_register makes (its handle).
struct Registration {
  std::unique_ptr<torch::Library> autograd, eager, batched;
};

/// Registers the forward ops' Autograd kernels and the eager calls'
/// kernels; a handle for normtorch_autograd_unregister, or NULL with a
/// message in err.
NORMTORCH_API void *normtorch_autograd_register(char *err, size_t cap) {
  try {
    ops = Ops{findOp<LnFwdSig>("norm_mlir::layer_norm_fwd"),
              findOp<RmsFwdSig>("norm_mlir::rms_norm_fwd"),
              findOp<LnBwdSig>("norm_mlir::layer_norm_bwd"),
              findOp<RmsBwdSig>("norm_mlir::rms_norm_bwd"),
              findOp<LnBwdIntoSig>("norm_mlir::layer_norm_bwd_into_dy"),
              findOp<RmsBwdIntoSig>("norm_mlir::rms_norm_bwd_into_dy"),
              findOp<AddLnFwdSig>("norm_mlir::add_layer_norm_fwd"),
              findOp<AddRmsFwdSig>("norm_mlir::add_rms_norm_fwd")};
    auto reg = std::make_unique<Registration>();
    reg->autograd = std::make_unique<torch::Library>(
        torch::Library::IMPL, "norm_mlir", c10::DispatchKey::Autograd,
        __FILE__, __LINE__);
    reg->autograd->impl("layer_norm_fwd", TORCH_FN(layerNormFwdAutograd));
    reg->autograd->impl("rms_norm_fwd", TORCH_FN(rmsNormFwdAutograd));
    reg->autograd->impl("add_layer_norm_fwd",
                        TORCH_FN(addLayerNormFwdAutograd));
    reg->autograd->impl("add_rms_norm_fwd", TORCH_FN(addRmsNormFwdAutograd));
    reg->eager = std::make_unique<torch::Library>(
        torch::Library::IMPL, "norm_mlir",
        c10::DispatchKey::CompositeImplicitAutograd, __FILE__, __LINE__);
    reg->eager->impl("_eager_layer_norm", TORCH_FN(eagerLayerNorm));
    reg->eager->impl("_eager_rms_norm", TORCH_FN(eagerRmsNorm));
    reg->eager->impl("_eager_add_layer_norm", TORCH_FN(eagerAddLayerNorm));
    reg->eager->impl("_eager_add_rms_norm", TORCH_FN(eagerAddRmsNorm));
    // Under vmap the op meets FuncTorchBatched first, whose fallback would
    // run it per example on plain tensors (our kernels): the same kernels
    // there see the batched x and take torch's functions, which vmap knows.
    reg->batched = std::make_unique<torch::Library>(
        torch::Library::IMPL, "norm_mlir", c10::DispatchKey::FuncTorchBatched,
        __FILE__, __LINE__);
    reg->batched->impl("_eager_layer_norm", TORCH_FN(eagerLayerNorm));
    reg->batched->impl("_eager_rms_norm", TORCH_FN(eagerRmsNorm));
    reg->batched->impl("_eager_add_layer_norm", TORCH_FN(eagerAddLayerNorm));
    reg->batched->impl("_eager_add_rms_norm", TORCH_FN(eagerAddRmsNorm));
    return reg.release();
  } catch (const std::exception &ex) {
    copyError(ex.what(), err, cap);
    return nullptr;
  }
}

NORMTORCH_API void normtorch_autograd_unregister(void *reg) {
  delete static_cast<Registration *>(reg);
}

/// The device types whose tensors the eager calls take: names separated by
/// commas ("cuda"; the CPU tests add "cpu"), or "*" for any; 0, or 1 with a
/// message in err.
NORMTORCH_API int normtorch_autograd_set_devices(const char *types, char *err,
                                                 size_t cap) {
  try {
    uint64_t mask = 0;
    std::string all(types);
    if (all == "*") {
      mask = ~uint64_t(0);
    } else {
      size_t at = 0;
      while (at <= all.size()) {
        size_t end = std::min(all.find(',', at), all.size());
        if (end > at)
          mask |= uint64_t(1)
                  << int(c10::Device(all.substr(at, end - at)).type());
        at = end + 1;
      }
    }
    acceptedDevices.store(mask);
    return 0;
  } catch (const std::exception &ex) {
    copyError(ex.what(), err, cap);
    return 1;
  }
}

/// libnormtorch's direct table (normtorch_direct(); normtorch_direct.h), or
/// NULL: the bodies through the dispatcher only. 0, or 1 with a message in
/// err (a table of another version).
NORMTORCH_API int normtorch_autograd_set_direct(const void *table, char *err,
                                                size_t cap) {
  auto *d = static_cast<const NormtorchDirect *>(table);
  if (d && (d->version != NORMTORCH_DIRECT_VERSION ||
            d->size < sizeof(NormtorchDirect))) {
    copyError(("libnormtorch's direct table is version " +
               std::to_string(d->version) + ", this library's " +
               std::to_string(NORMTORCH_DIRECT_VERSION))
                  .c_str(),
              err, cap);
    return 1;
  }
  directTable.store(d, std::memory_order_release);
  return 0;
}

/// How many times the kernels called a body directly (out[0]) and through
/// the dispatcher (out[1]) since the library was loaded.
NORMTORCH_API void normtorch_autograd_body_calls(uint64_t out[2]) {
  out[0] = directCalls.load(std::memory_order_relaxed);
  out[1] = dispatchedCalls.load(std::memory_order_relaxed);
}

/// What decides whether a CUDA device runs our kernels (asked once per
/// device until normtorch_autograd_forget_support).
NORMTORCH_API void normtorch_autograd_set_support(SupportFn f) {
  supportFn.store(f);
}

NORMTORCH_API void normtorch_autograd_forget_support(void) {
  for (auto &s : cudaSupport)
    s.store(0);
}

#ifdef NORMTORCH_PYTHON_ENTRY
/// The eager calls' Python entry (above): a new tuple of four functions
/// (layer_norm, rms_norm, add_layer_norm, add_rms_norm), or NULL with a
/// Python exception. types: (torch.Tensor, torch.nn.Parameter,
/// torch.OutOfMemoryError); fallbacks: the four eager ops' callables;
/// probe: a tensor and probe_impl its `_cdata` (its TensorImpl's address),
/// which must be what this library reads from it and wraps back to it.
/// Called through ctypes.PyDLL (the GIL held).
NORMTORCH_API PyObject *normtorch_autograd_python_entries(
    PyObject *types, PyObject *fallbacks, PyObject *probe,
    int64_t probeImpl) {
  if (!PyTuple_Check(types) || PyTuple_Size(types) != 3 ||
      !PyTuple_Check(fallbacks) || PyTuple_Size(fallbacks) != 4) {
    PyErr_SetString(PyExc_TypeError, "norm_mlir: bad entry arguments");
    return nullptr;
  }
  PyObject *tensorType = PyTuple_GetItem(types, 0);
  if (reinterpret_cast<PyObject *>(Py_TYPE(probe)) != tensorType ||
      reinterpret_cast<PyTensor *>(probe)->cdata.unsafeGetTensorImpl() !=
          reinterpret_cast<void *>(probeImpl)) {
    PyErr_SetString(PyExc_RuntimeError,
                    "norm_mlir: torch's Python tensor layout is not the one "
                    "this library was built for");
    return nullptr;
  }
  PyObject *back =
      THPVariable_Wrap(reinterpret_cast<PyTensor *>(probe)->cdata);
  bool same = back == probe;
  Py_XDECREF(back);
  if (!same) {
    if (!PyErr_Occurred())
      PyErr_SetString(PyExc_RuntimeError,
                      "norm_mlir: THPVariable_Wrap does not give the probe "
                      "tensor back");
    return nullptr;
  }
  PyEntry e;
  e.tensorType = tensorType;
  e.parameterType = PyTuple_GetItem(types, 1);
  e.oomError = PyTuple_GetItem(types, 2);
  Py_INCREF(e.tensorType);
  Py_INCREF(e.parameterType);
  Py_INCREF(e.oomError);
  for (int i = 0; i < 4; ++i) {
    e.fallback[i] = PyTuple_GetItem(fallbacks, i);
    Py_INCREF(e.fallback[i]);
  }
  PyEntry old = pyEntry;
  pyEntry = e;
  Py_XDECREF(old.tensorType);
  Py_XDECREF(old.parameterType);
  Py_XDECREF(old.oomError);
  for (PyObject *f : old.fallback)
    Py_XDECREF(f);
  PyObject *out = PyTuple_New(4);
  if (!out)
    return nullptr;
  for (int i = 0; i < 4; ++i) {
    PyObject *f = PyCFunction_NewEx(&pyEntryDefs[i], nullptr, nullptr);
    if (!f) {
      Py_DECREF(out);
      return nullptr;
    }
    PyTuple_SetItem(out, i, f);
  }
  return out;
}

/// Turns the fast route of the Python entry on (1) or off (0: every call
/// through the ops' callables); the previous setting.
NORMTORCH_API int normtorch_autograd_python_entry_on(int on) {
  return pyEntryOn.exchange(on);
}

/// How many calls of the Python entry took the fast route (out[0]) and the
/// ops' callables (out[1]).
NORMTORCH_API void normtorch_autograd_python_entry_calls(uint64_t out[2]) {
  out[0] = pyFastCalls.load(std::memory_order_relaxed);
  out[1] = pyFallbackCalls.load(std::memory_order_relaxed);
}
#endif // NORMTORCH_PYTHON_ENTRY
