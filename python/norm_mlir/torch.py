"""PyTorch LayerNorm / RMSNorm whose forward and backward run mlir-norm's
kernels.

    import norm_mlir.torch as nt
    ln = nt.LayerNorm(4096, device="cuda", dtype=torch.bfloat16)
    y = ln(x)                       # forward: y, and f32 mean/rstd saved
    y.sum().backward()              # backward: the deterministic strategy

``layer_norm`` / ``rms_norm`` follow ``torch.nn.functional``; the modules
take torch's constructor arguments and have its parameters (``weight``,
``bias``), so a torch model's state dict loads unchanged. The ops are
``torch.library`` custom ops (``norm_mlir::layer_norm_fwd`` ...) with fake
implementations and an autograd formula, so ``torch.compile`` keeps them in
its graph, and they allocate their workspace from torch's allocator on the
current stream, so a CUDA graph captures them. Kernels are compiled on
first use per (op, N, dtypes, flags, chip) through norm_mlir.cache.
Tensors off the GPU (or of other dtypes), chips older than sm_80 and ROCm
devices (one warning each) and calls inside torch.func transforms take
torch's own functions. A backward that builds a graph (create_graph=True)
computes its gradients with torch ops, so double backward is right; under
CUDA autocast layer_norm runs in f32 and returns f32, as torch's does.
The op bodies (rows, outputs, workspace, launch) are C++ where the wheel
carries libnormtorch.so (python/csrc/torch_ops.cpp), else Python; the
autograd kernels are C++ where it carries libnormtorch_autograd.so built
for the running torch (python/csrc/torch_autograd.cpp), else Python; with
both in C++, the autograd kernels call the bodies without the dispatcher
where it would reach them and nothing else (python/csrc/normtorch_direct.h).

    y, h = nt.add_layer_norm(x, residual, 4096, w, b)   # h = x + residual

``add_layer_norm`` / ``add_rms_norm`` are the residual-add forms of pre-norm
blocks: one forward kernel writes h and normalises it, and their backward
adds h's own gradient into dx inside the backward kernel.
"""

import ctypes
import functools
import math
import os
import threading
import warnings

import torch

from . import CompileError
from . import cache as _cache
from . import _libs, _runtime

_DT = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}
_modules = {}
_modules_lock = threading.Lock()


def _capability(device):
    """(major, minor) of a CUDA device (a test replaces it)."""
    return torch.cuda.get_device_capability(device)


def _chip(device):
    major, minor = _capability(device)
    return "sm_%d%d" % (major, minor)


def _capability_of(chip):
    digits = chip[3:].rstrip("abf")
    return (int(digits[:-1]), int(digits[-1])) if digits.isdigit() else (0, 0)


# ------------------------------------------------- devices we can run on
#
# The kernels are PTX for sm_80 and later. Older NVIDIA chips (sm_70, sm_75)
# and ROCm devices (whose tensors are is_cuda too) take torch's own
# functions, with one warning per device and process.

_support = {}
_cuda_available = torch.cuda.is_available  # tests replace it (and _capability)
_device_types = ("cuda",)  # whose tensors take our kernels (_accept_devices)


def _on_device(t):
    """Whether t is on a device our kernels run on (the CUDA GPUs)."""
    return t.is_cuda


def _accept_devices(types):
    """Which device types' tensors take our kernels: ("cuda",), the
    default, or more: the CPU tests send CPU tensors through the real bodies
    (("cuda", "cpu")), "*" any type. Sets the Python checks (_on_device)
    and the eager calls' C++ ones; returns the previous setting."""
    global _on_device, _device_types
    before, types = _device_types, tuple(types)
    if types == ("cuda",):
        def _on_device(t):
            return t.is_cuda
    elif "*" in types:
        types = ("*",)

        def _on_device(t):
            return True
    else:
        def _on_device(t, _types=frozenset(types)):
            return t.device.type in _types
    _device_types = types
    if _cpp_autograd:
        _autograd_reg[0].set_devices(types)
    return before


def _reset_support():
    """Forgets which devices run our kernels (the CPU tests change the
    chips _capability reports): asked again, and warned again, at the next
    call."""
    _support.clear()
    if _cpp_autograd:
        _autograd_reg[0].forget_support()


def _unsupported_reason(device):
    """Why our kernels cannot run on `device`, a CUDA device, or None."""
    if device.type != "cuda":
        return None  # CPU tensors the CPU tests send through the op bodies
    if getattr(torch.version, "hip", None):
        return ("a ROCm device (torch %s, HIP %s); the kernels are PTX for "
                "NVIDIA GPUs" % (torch.__version__, torch.version.hip))
    if not _cuda_available():
        return None  # fake CUDA tensors on a host without a GPU: tracing
    major, minor = _capability(device)
    if (major, minor) < (8, 0):
        return ("compute capability %d.%d (sm_%d%d); the kernels need 8.0 "
                "or newer" % (major, minor, major, minor))
    return None


@torch.compiler.assume_constant_result
def _supported(device):
    """Whether our kernels run on `device` (a CUDA device), decided once
    per device and process; the first refusal warns. torch.compile takes
    the answer as a constant of the graph."""
    ok = _support.get(device)
    if ok is None:
        reason = _unsupported_reason(device)
        ok = _support[device] = reason is None
        if reason:
            warnings.warn("norm_mlir: %s is %s: LayerNorm and RMSNorm take "
                          "torch's own functions there" % (device, reason),
                          RuntimeWarning, stacklevel=4)
    return ok


def _pipeline_options(text):
    """{name: value} of NORM_MLIR_PIPELINE_OPTIONS: pipeline options
    (norm-compile's --NAME=VALUE, without the dashes) for every kernel the
    package compiles, e.g. ``early-rows=true`` or ``threads=256
    hold-columns=1``, separated by spaces or commas. They are part of the
    kernel cache's key. ``rows`` is the package's own (the M bucket's
    hint) and may not be given."""
    opts = {}
    for word in text.replace(",", " ").split():
        name, eq, value = word.partition("=")
        name = name.lstrip("-")
        if not eq or not name or not value or \
                not name.replace("-", "").isalnum():
            raise ValueError("NORM_MLIR_PIPELINE_OPTIONS: %r is not "
                             "NAME=VALUE" % word)
        if name == "rows":
            raise ValueError("NORM_MLIR_PIPELINE_OPTIONS: rows is the "
                             "package's own (each M bucket's hint)")
        opts[name] = value
    return opts


# Read once, at import: every kernel of the process is compiled alike.
_EXTRA_OPTIONS = _pipeline_options(
    os.environ.get("NORM_MLIR_PIPELINE_OPTIONS", ""))


def _compiled(spec, chip):
    """The kernels of `spec` (a dict of compile_spec's arguments) for
    `chip`, through the cache: PTX, which the driver builds at load (no
    ptxas on the GPU host); the backward takes the deterministic strategy.
    A chip from sm_80 on that the compiler does not know (sm_100, sm_120)
    takes sm_80's PTX, which every later chip's driver builds; older chips
    never get here (_supported)."""
    strategy = "deterministic" if spec["op"].endswith("_grad") else None
    spec = dict(spec)
    rows = spec.pop("rows", 0)
    options = dict(_EXTRA_OPTIONS)
    if rows:  # the tuning table's M range (a pipeline option)
        options["rows"] = rows
    if options:
        spec["options"] = options
    try:
        return _cache.get(chip=chip, format="ptx", strategy=strategy, **spec)
    except CompileError as ex:
        if "chip" not in str(ex) or _capability_of(chip) < (8, 0):
            raise
        return _cache.get(chip="sm_80", format="ptx", strategy=strategy,
                          **spec)


def _module(spec, device):
    """The loaded runtime module of `spec` on `device`, compiled on first
    use."""
    idx = device.index if device.index is not None else \
        torch.cuda.current_device()
    key = (tuple(sorted(spec.items())), idx)
    with _modules_lock:
        m = _modules.get(key)
        if m is not None:
            return m
    reason = _unsupported_reason(torch.device("cuda", idx))
    if reason:  # an op called directly (the functions fall back first)
        raise RuntimeError("norm_mlir: no kernels for cuda:%d, %s; use "
                           "torch's layer_norm / rms_norm there" % (idx,
                                                                   reason))
    k = _compiled(spec, _chip(idx))
    with torch.cuda.device(idx):
        torch.cuda.current_stream(idx)  # the primary context is current
        mod = _libs.runtime().load(k.image, k.manifest_text)
    mod.compiled = k
    with _modules_lock:
        _modules.setdefault(key, mod)
        return _modules[key]


# The per-call path looks a module up by a flat tuple (op, N, dtypes,
# flags, device) instead of building the spec dict and its sorted key.
_kernels_by_key = {}


# The rows M where the tuning tables' M ranges end (the compiler's
# kTuningRowEdges, lib/Conversion/NormToGPU/Tuning.h; libnormtorch's
# kRowEdges): the kernels of every M of one bucket are compiled once, with
# the bucket's first M as the `rows` hint, so they are the table's choice
# for that M range (test_torch_cpu checks the edges against the table).
_ROW_EDGES = (128, 512, 2048, 8192)


def _rows_hint(m):
    """The first M of m's bucket (1, 129, 513, 2049 or 8193)."""
    first = 1
    for e in _ROW_EDGES:
        if m > e:
            first = e + 1
    return first


def _kernels(op, n, x, weight, has_bias, eps, zero_centered, dres=False,
             residual=False):
    rows = _rows_hint(x.numel() // n if n else 0)
    key = (op, n, x.dtype, None if weight is None else weight.dtype,
           has_bias, eps, zero_centered, x.device, dres, rows, residual)
    mod = _kernels_by_key.get(key)
    if mod is None:
        mod = _module(_spec(op, n, x, weight, has_bias, eps, zero_centered,
                            dres, rows, residual), x.device)
        _kernels_by_key[key] = mod
    return mod


def _tensor(name, t):
    return _runtime.make_tensor(name, t.data_ptr(),
                                _runtime.DTYPE_CODES[_DT[t.dtype]],
                                list(t.shape), list(t.stride()))


def _rows(x, n):
    """x as [M, N] rows, without a copy when its rows are evenly strided,
    apart, with unit inner stride (2-D strided rows, a column slice of a
    wider tensor, or leading dims that flatten)."""

    def fits(r):
        return (r.shape[0] <= 1 or r.stride(0) >= n) and (
            r.stride(1) == 1 or n == 1)
    if x.dim() == 2 and x.shape[1] == n and fits(x):
        return x
    try:
        r = x.view(-1, n)
        if fits(r):
            return r
    except RuntimeError:
        pass
    return x.reshape(-1, n).contiguous()


# One descriptor array per module and thread, rewritten in place at each
# launch (pointers, sizes, strides); rebuilt when a call's names, dtypes or
# ranks differ from the array's, so the runtime always checks the real ones.
_tls = threading.local()
_CODES = {t: _runtime.DTYPE_CODES[c] for t, c in _DT.items()}
_W, _D = _runtime.WORDS, _runtime.DATA
_SZ, _ST = _runtime.SIZES, _runtime.STRIDES


def _fill(entry, args):
    arr, expect = entry
    if len(expect) != len(args):
        return False
    q, b = arr.words, 0
    for (name, t), (ename, edt, erank) in zip(args, expect):
        if t.dtype is not edt or name != ename or t.dim() != erank:
            return False
        q[b + _D] = t.data_ptr()
        sh, st = t.shape, t.stride()
        for d in range(erank):
            q[b + _SZ + d] = sh[d]
            q[b + _ST + d] = st[d]
        b += _W
    return True


def _arguments(mod, args):
    """The runtime's descriptors of `args`, (name, tensor) pairs, for a
    launch of `mod` (any hashable key: one array per key and thread)."""
    arrays = getattr(_tls, "arrays", None)
    if arrays is None:
        arrays = _tls.arrays = {}
    entry = arrays.get(mod)
    if entry is None or not _fill(entry, args):
        entry = arrays[mod] = (
            _runtime.Arguments([name for name, _ in args],
                               [_CODES[t.dtype] for _, t in args],
                               [t.dim() for _, t in args]),
            [(name, t.dtype, t.dim()) for name, t in args])
        _fill(entry, args)
    return entry[0]


try:
    _raw_stream = torch._C._cuda_getCurrentRawStream  # what inductor calls
except AttributeError:  # a torch without it
    def _raw_stream(idx):
        return torch.cuda.current_stream(idx).cuda_stream


def _launch(mod, args, rows, device):
    """Launches `mod` on `args`, (name, tensor) pairs, on the current
    stream. The workspace (the backward's partial rows; the forward has
    none) comes from torch's stream-ordered allocator: freed when this
    returns, reused only by work queued after the launch; in a CUDA graph
    capture, from the graph's pool."""
    ws_bytes = mod.workspace_bytes(rows)
    ws = torch.empty(ws_bytes, dtype=torch.uint8, device=device) \
        if ws_bytes else None
    idx = device.index if device.index is not None else \
        torch.cuda.current_device()
    mod.launch(_arguments(mod, args), ws.data_ptr() if ws_bytes else 0,
               ws_bytes, _raw_stream(idx))


def _spec(op, n, x, weight, has_bias, eps, zero_centered, dres=False,
          rows=0, residual=False):
    return _spec_of(op, n, _DT[x.dtype],
                    None if weight is None else _DT[weight.dtype], has_bias,
                    eps, zero_centered, dres, rows, residual)


def _spec_of(op, n, dtype, weight_dtype, has_bias, eps, zero_centered,
             dres=False, rows=0, residual=False):
    """compile_spec's arguments for an op on x of `dtype` ("bf16"...) with
    a weight of `weight_dtype` (None: no weight); dres: a backward that adds
    a residual's gradient (dresidual) into dx; rows: the `rows` hint (the
    first M of the call's bucket, _rows_hint; 0: none, the kernels for any
    M); residual: a forward with the fused residual add (h = x + residual
    written by the kernel)."""
    s = {"op": op, "n": int(n), "dtype": dtype,
         "weight": weight_dtype is not None,
         "zero_centered": bool(zero_centered)}
    if weight_dtype is not None and weight_dtype != dtype:
        s["weight_dtype"] = weight_dtype
    if op.startswith("layer_norm"):
        s["bias"] = bool(has_bias)
    if eps is not None and not op.endswith("_grad"):
        s["eps"] = float(eps)
    if dres:
        s["dresidual"] = True
    if residual:
        s["residual"] = True
    if rows > 0:
        s["rows"] = int(rows)
    return s


def _same_device(x, *ts):
    """Every tensor on x's device: a kernel given another device's (or the
    host's) pointer would fault, so this is refused with a message."""
    if not _on_device(x):
        raise ValueError("norm_mlir: x is on %s; the kernels run on CUDA "
                         "devices" % x.device)
    for t in ts:
        if t is not None and t.device != x.device:
            raise ValueError("norm_mlir: tensors on %s and %s; all must be "
                             "on one device" % (x.device, t.device))


# ----------------------------------------------------------- custom ops
#
# Defined with torch.library's define/impl (for CUDA tensors; meta and fake
# tensors take the fake implementations), with autograd formulas from
# torch.library.register_autograd: torch.compile keeps them in its graph
# and opcheck passes. Not @torch.library.custom_op: its wrappers (aliasing
# checks, a dynamo guard, default filling) cost tens of microseconds a call
# (docs/Python.md, "Host overhead").

_lib = torch.library.Library("norm_mlir", "DEF")
_python_impls = {}  # op name -> its Python body (CUDA, without the C++ ones)


def _define(schema, impl, fake):
    name = schema.split("(", 1)[0]
    _lib.define(schema)
    _python_impls[name] = impl
    torch.library.register_fake("norm_mlir::" + name, fake, lib=_lib)
    return getattr(torch.ops.norm_mlir, name).default


def _ln_fwd_impl(x, weight, bias, n, eps, zero_centered):
    _same_device(x, weight, bias)
    xr = _rows(x, n)
    m = xr.shape[0]
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    mean = torch.empty(m, dtype=torch.float32, device=x.device)
    rstd = torch.empty(m, dtype=torch.float32, device=x.device)
    if m:
        mod = _kernels("layer_norm", n, x, weight, bias is not None, eps,
                       zero_centered)
        args = [("x", xr), ("y", y.view(m, n)), ("mean", mean),
                ("rstd", rstd)]
        if weight is not None:
            args.append(("weight", weight.reshape(n)))
        if bias is not None:
            args.append(("bias", bias.reshape(n)))
        _launch(mod, args, m, x.device)
    return y, mean, rstd


def _ln_fwd_fake(x, weight, bias, n, eps, zero_centered):
    m = x.numel() // n if n else 0
    return (torch.empty_like(x, memory_format=torch.contiguous_format),
            x.new_empty((m,), dtype=torch.float32),
            x.new_empty((m,), dtype=torch.float32))


_ln_fwd = _define(
    "layer_norm_fwd(Tensor x, Tensor? weight, Tensor? bias, int n, "
    "float eps, bool zero_centered) -> (Tensor, Tensor, Tensor)",
    _ln_fwd_impl, _ln_fwd_fake)


def _rms_fwd_impl(x, weight, n, eps, zero_centered):
    _same_device(x, weight)
    xr = _rows(x, n)
    m = xr.shape[0]
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    rstd = torch.empty(m, dtype=torch.float32, device=x.device)
    if m:
        mod = _kernels("rms_norm", n, x, weight, False, eps, zero_centered)
        args = [("x", xr), ("y", y.view(m, n)), ("rstd", rstd)]
        if weight is not None:
            args.append(("weight", weight.reshape(n)))
        _launch(mod, args, m, x.device)
    return y, rstd


def _rms_fwd_fake(x, weight, n, eps, zero_centered):
    m = x.numel() // n if n else 0
    return (torch.empty_like(x, memory_format=torch.contiguous_format),
            x.new_empty((m,), dtype=torch.float32))


_rms_fwd = _define(
    "rms_norm_fwd(Tensor x, Tensor? weight, int n, float eps, "
    "bool zero_centered) -> (Tensor, Tensor)",
    _rms_fwd_impl, _rms_fwd_fake)


def _grad_rows(dy, x, weight, n, into_dy=False):
    """A backward's rows of x and dy, M, and its dx (x's shape; dy itself
    with into_dy) and dweight (empty without a weight; the weight's dtype,
    else x's)."""
    xr, dyr = _rows(x, n), _rows(dy, n)
    if into_dy:
        if dy.shape != x.shape or dy.dtype != x.dtype or \
                not dy.is_contiguous():
            raise ValueError("norm_mlir: dx goes into dy only where dy is "
                             "contiguous with x's shape and dtype")
        dx = dy
    else:
        dx = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    wdt = weight.dtype if weight is not None else x.dtype
    dw = torch.empty(n if weight is not None else 0, dtype=wdt,
                     device=x.device)
    return xr, dyr, xr.shape[0], dx, dw


def _dresidual_rows(dresidual, x, n):
    """A residual's gradient as rows (x's shape and dtype), or None."""
    if dresidual is None:
        return None
    _same_device(x, dresidual)
    if dresidual.shape != x.shape or dresidual.dtype != x.dtype:
        raise ValueError("norm_mlir: dresidual must have x's shape and "
                         "dtype")
    return _rows(dresidual, n)


def _ln_bwd_impl(dy, x, mean, rstd, weight, has_bias, n, zero_centered,
                 dresidual=None, into_dy=False):
    _same_device(x, dy, mean, rstd, weight)
    rr = _dresidual_rows(dresidual, x, n)
    xr, dyr, m, dx, dw = _grad_rows(dy, x, weight, n, into_dy)
    db = torch.empty(n if has_bias else 0, dtype=dw.dtype, device=x.device)
    mod = _kernels("layer_norm_grad", n, x, weight, has_bias, None,
                   zero_centered, rr is not None)
    args = [("dy", dyr), ("x", xr), ("mean", mean), ("rstd", rstd)]
    if rr is not None:
        args.append(("dresidual", rr))
    args.append(("dx", dx.view(m, n)))
    if weight is not None:
        args += [("weight", weight.reshape(n)), ("dweight", dw)]
    if has_bias:
        args.append(("dbias", db))
    _launch(mod, args, m, x.device)
    return dx, dw, db


def _ln_bwd_fake(dy, x, mean, rstd, weight, has_bias, n, zero_centered,
                 dresidual=None):
    wdt = weight.dtype if weight is not None else x.dtype
    return (torch.empty_like(x, memory_format=torch.contiguous_format),
            x.new_empty((n if weight is not None else 0,), dtype=wdt),
            x.new_empty((n if has_bias else 0,), dtype=wdt))


_ln_bwd = _define(
    "layer_norm_bwd(Tensor dy, Tensor x, Tensor mean, Tensor rstd, "
    "Tensor? weight, bool has_bias, int n, bool zero_centered, "
    "Tensor? dresidual=None) -> (Tensor, Tensor, Tensor)",
    _ln_bwd_impl, _ln_bwd_fake)


def _rms_bwd_impl(dy, x, rstd, weight, n, zero_centered, dresidual=None,
                  into_dy=False):
    _same_device(x, dy, rstd, weight)
    rr = _dresidual_rows(dresidual, x, n)
    xr, dyr, m, dx, dw = _grad_rows(dy, x, weight, n, into_dy)
    mod = _kernels("rms_norm_grad", n, x, weight, False, None, zero_centered,
                   rr is not None)
    args = [("dy", dyr), ("x", xr), ("rstd", rstd)]
    if rr is not None:
        args.append(("dresidual", rr))
    args.append(("dx", dx.view(m, n)))
    if weight is not None:
        args += [("weight", weight.reshape(n)), ("dweight", dw)]
    _launch(mod, args, m, x.device)
    return dx, dw


def _rms_bwd_fake(dy, x, rstd, weight, n, zero_centered, dresidual=None):
    wdt = weight.dtype if weight is not None else x.dtype
    return (torch.empty_like(x, memory_format=torch.contiguous_format),
            x.new_empty((n if weight is not None else 0,), dtype=wdt))


_rms_bwd = _define(
    "rms_norm_bwd(Tensor dy, Tensor x, Tensor rstd, Tensor? weight, int n, "
    "bool zero_centered, Tensor? dresidual=None) -> (Tensor, Tensor)",
    _rms_bwd_impl, _rms_bwd_fake)


# The eager calls (layer_norm() / rms_norm() and the modules, outside
# torch.compile) with the C++ autograd kernels: one op whose C++ kernel
# (CompositeImplicitAutograd, libnormtorch_autograd.so) makes the
# functions' checks and calls the forward's autograd kernel, so an eager
# call runs no Python after its first line. No kernel without that library
# (the functions then run their Python, below); torch.compile traces the
# Python.
_lib.define("_eager_layer_norm(Tensor x, int[] normalized_shape, "
            "Tensor? weight, Tensor? bias, float eps, bool zero_centered) "
            "-> Tensor")
_lib.define("_eager_rms_norm(Tensor x, int[] normalized_shape, "
            "Tensor? weight, float? eps, bool zero_centered) -> Tensor")
# add_layer_norm() / add_rms_norm() with a residual: (y, h).
_lib.define("_eager_add_layer_norm(Tensor x, Tensor residual, "
            "int[] normalized_shape, Tensor? weight, Tensor? bias, float eps, "
            "bool zero_centered) -> (Tensor, Tensor)")
_lib.define("_eager_add_rms_norm(Tensor x, Tensor residual, "
            "int[] normalized_shape, Tensor? weight, float? eps, "
            "bool zero_centered) -> (Tensor, Tensor)")


# The backward ops with dx written into dy (the kernels' documented
# in-place backward: dx may be dy itself). Only the C++ autograd kernels
# call them, and only where nothing but autograd's own buffer holds dy
# (docs/Python.md, "dx into dy"); dy must be contiguous with x's shape and
# dtype. They return the parameters' gradients.

def _ln_bwd_into_impl(dy, x, mean, rstd, weight, has_bias, n, zero_centered,
                      dresidual=None):
    _, dw, db = _ln_bwd_impl(dy, x, mean, rstd, weight, has_bias, n,
                             zero_centered, dresidual, into_dy=True)
    return dw, db


def _ln_bwd_into_fake(dy, x, mean, rstd, weight, has_bias, n, zero_centered,
                      dresidual=None):
    return _ln_bwd_fake(dy, x, mean, rstd, weight, has_bias, n,
                        zero_centered)[1:]


_ln_bwd_into = _define(
    "layer_norm_bwd_into_dy(Tensor(a!) dy, Tensor x, Tensor mean, "
    "Tensor rstd, Tensor? weight, bool has_bias, int n, bool zero_centered, "
    "Tensor? dresidual=None) -> (Tensor, Tensor)",
    _ln_bwd_into_impl, _ln_bwd_into_fake)


def _rms_bwd_into_impl(dy, x, rstd, weight, n, zero_centered,
                       dresidual=None):
    return _rms_bwd_impl(dy, x, rstd, weight, n, zero_centered, dresidual,
                         into_dy=True)[1]


def _rms_bwd_into_fake(dy, x, rstd, weight, n, zero_centered,
                       dresidual=None):
    return _rms_bwd_fake(dy, x, rstd, weight, n, zero_centered)[1]


_rms_bwd_into = _define(
    "rms_norm_bwd_into_dy(Tensor(a!) dy, Tensor x, Tensor rstd, "
    "Tensor? weight, int n, bool zero_centered, Tensor? dresidual=None) "
    "-> Tensor",
    _rms_bwd_into_impl, _rms_bwd_into_fake)


# Residual add + norm (add_layer_norm / add_rms_norm): h = x + residual, then
# the norm of h; both y and h are outputs, so the backward gets h's own
# gradient and hands it to the backward kernel as dresidual (added into
# dx there), and x and residual both get that dx. x and residual have one
# shape and dtype (the functions compose torch's add otherwise).
#
# The forward is one kernel (the ops' `residual` operand, docs/NOTES.md
# "Fused residual add forward"): it reads x and residual once, writes h
# (added in f32 and rounded once, as torch's add: the same bits) and
# normalises h as stored, from registers.

def _residual_fwd(op, x, residual, weight, bias, n, eps, zero_centered):
    """The fused forward: y, h (contiguous, x's shape), [mean], rstd."""
    _same_device(x, residual, weight, bias)
    if residual.shape != x.shape or residual.dtype != x.dtype:
        raise ValueError("norm_mlir: residual must have x's shape and dtype")
    xr, rr = _rows(x, n), _rows(residual, n)
    m = xr.shape[0]
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    h = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    stats = [torch.empty(m, dtype=torch.float32, device=x.device)
             for _ in range(2 if op == "layer_norm" else 1)]
    if m:
        mod = _kernels(op, n, x, weight, bias is not None, eps,
                       zero_centered, residual=True)
        args = [("x", xr), ("residual", rr), ("y", y.view(m, n)),
                ("h", h.view(m, n)), ("rstd", stats[-1])]
        if op == "layer_norm":
            args.append(("mean", stats[0]))
        if weight is not None:
            args.append(("weight", weight.reshape(n)))
        if bias is not None:
            args.append(("bias", bias.reshape(n)))
        _launch(mod, args, m, x.device)
    return (y, h) + tuple(stats)


def _add_ln_fwd_impl(x, residual, weight, bias, n, eps, zero_centered):
    return _residual_fwd("layer_norm", x, residual, weight, bias, n, eps,
                         zero_centered)


def _add_ln_fwd_fake(x, residual, weight, bias, n, eps, zero_centered):
    y, mean, rstd = _ln_fwd_fake(x, weight, bias, n, eps, zero_centered)
    return y, torch.empty_like(x, memory_format=torch.contiguous_format), \
        mean, rstd


_add_ln_fwd = _define(
    "add_layer_norm_fwd(Tensor x, Tensor residual, Tensor? weight, "
    "Tensor? bias, int n, float eps, bool zero_centered) "
    "-> (Tensor, Tensor, Tensor, Tensor)",
    _add_ln_fwd_impl, _add_ln_fwd_fake)


def _add_rms_fwd_impl(x, residual, weight, n, eps, zero_centered):
    return _residual_fwd("rms_norm", x, residual, weight, None, n, eps,
                         zero_centered)


def _add_rms_fwd_fake(x, residual, weight, n, eps, zero_centered):
    y, rstd = _rms_fwd_fake(x, weight, n, eps, zero_centered)
    return y, torch.empty_like(x, memory_format=torch.contiguous_format), \
        rstd


_add_rms_fwd = _define(
    "add_rms_norm_fwd(Tensor x, Tensor residual, Tensor? weight, int n, "
    "float eps, bool zero_centered) -> (Tensor, Tensor, Tensor)",
    _add_rms_fwd_impl, _add_rms_fwd_fake)


# ----------------------------------------------------- the C++ op bodies
#
# libnormtorch.so (python/csrc/torch_ops.cpp, built into the wheel beside
# the other two libraries when torch's headers are there at build time):
# the same four bodies in C++ through torch's stable ABI, calling libnormrt
# directly on the current stream, with the module table in C++. A key the
# table misses comes back here once (_Native._resolve: _module, so the
# kernel cache and the compile are this file's). With it, the ops' CUDA
# kernels are the C++ bodies and the eager path below calls them below
# autograd (a redispatch to the CUDA key: no Python between the call and
# the launch); without it (not built, or NORM_MLIR_NATIVE=0) the Python
# bodies above serve both, as before.

_OP_NAMES = ("layer_norm", "rms_norm", "layer_norm_grad", "rms_norm_grad")
_DT_NAMES = ("f32", "f16", "bf16")  # NormrtDtype order
_ERR = 4096

# op, n, rows (the first M of the call's bucket), x dtype, weight dtype,
# flags (bit 0 bias, 1 zero-centred, 2 dresidual for a backward, the fused
# residual add for a forward), eps, device type,
# device, error buffer, its size.
_RESOLVER = ctypes.CFUNCTYPE(
    ctypes.c_void_p, ctypes.c_int32, ctypes.c_int64, ctypes.c_int64,
    ctypes.c_int32, ctypes.c_int32, ctypes.c_int32, ctypes.c_double,
    ctypes.c_int32, ctypes.c_int32, ctypes.c_void_p, ctypes.c_size_t)
# Validate mode's callback (tests): module, NormrtTensor array, count,
# workspace, workspace bytes; non-zero fails the call.
HOOK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                        ctypes.c_int32, ctypes.c_void_p, ctypes.c_size_t)


class _Native:
    """libnormtorch.so, bound (one per process: its table, resolver and
    mode are the library's globals)."""

    instance = None

    def __init__(self, path):
        lib = ctypes.CDLL(path)  # after torch: libtorch_cpu.so is loaded
        vp, sz, cp = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p
        for name, args, res in (
                ("normtorch_init", [cp, vp, sz], ctypes.c_int),
                ("normtorch_set_resolver", [_RESOLVER], None),
                ("normtorch_clear", [], None),
                ("normtorch_cached", [], ctypes.c_int),
                ("normtorch_set_mode", [ctypes.c_int, HOOK], None),
                ("normtorch_register", [cp, vp, sz], vp),
                ("normtorch_unregister", [vp, cp], None),
                ("normtorch_target_version", [], ctypes.c_uint64),
                ("normtorch_build_version", [], ctypes.c_uint64)):
            f = getattr(lib, name)
            f.argtypes, f.restype = args, res
        # The bodies without the dispatcher (normtorch_direct.h), for the
        # C++ autograd kernels; None in a library without the table.
        direct = getattr(lib, "normtorch_direct", None)
        if direct is not None:
            direct.argtypes, direct.restype = [], vp
            self.direct = direct()
        else:
            self.direct = None
        self.lib, self.path = lib, path
        self.modules = {}  # what the C++ table holds, kept alive here
        self._lock = threading.Lock()
        err = ctypes.create_string_buffer(_ERR)
        if lib.normtorch_init(_libs.runtime_path().encode(), err, _ERR):
            raise OSError(err.value.decode("utf-8", "replace"))
        self._resolver = _RESOLVER(self._resolve)  # ctypes keeps no ref
        lib.normtorch_set_resolver(self._resolver)

    @classmethod
    def bind(cls, path):
        if cls.instance is None:
            cls.instance = cls(path)
            _connect_direct()
        return cls.instance

    def _resolve(self, op, n, rows, xdt, wdt, flags, eps, dev_type, dev,
                 err, cap):
        try:
            name = _OP_NAMES[op]
            bias, zc, bit2 = bool(flags & 1), bool(flags & 2), bool(flags & 4)
            grad = name.endswith("_grad")
            spec = _spec_of(name, n, _DT_NAMES[xdt],
                            _DT_NAMES[wdt] if wdt >= 0 else None, bias, eps,
                            zc, bit2 and grad, rows, bit2 and not grad)
            device = torch.device("cuda", dev) if dev_type == 1 else \
                torch.device("cpu")
            mod = _module(spec, device)
            with self._lock:
                self.modules[(op, n, rows, xdt, wdt, flags, eps, dev_type,
                              dev)] = mod
            return mod.handle.value
        except BaseException as ex:  # noqa: BLE001 (into a C++ exception)
            msg = str(ex)
            if not msg.startswith("norm_mlir"):
                msg = "norm_mlir: %s: %s" % (type(ex).__name__, msg)
            data = msg.encode("utf-8", "replace")[:cap - 1] + b"\0"
            ctypes.memmove(err, data, len(data))
            return None

    def register(self, key):
        """Registers the C++ bodies for a dispatch key; a handle for
        unregister."""
        err = ctypes.create_string_buffer(_ERR)
        h = self.lib.normtorch_register(key.encode(), err, _ERR)
        if not h:
            raise OSError(err.value.decode("utf-8", "replace"))
        return h

    def unregister(self, handle, key):
        self.lib.normtorch_unregister(handle, key.encode())

    def set_mode(self, mode, hook=None):
        """0: launch; 1: normrt_validate instead, then hook (a HOOK)."""
        self._hook = hook or HOOK()
        self.lib.normtorch_set_mode(mode, self._hook)

    def clear(self):
        """Forgets the cached modules (C++ first, then their references)."""
        self.lib.normtorch_clear()
        with self._lock:
            self.modules.clear()


# Whether the C++ autograd kernels call the C++ bodies through
# libnormtorch's direct table where the dispatcher could reach nothing else
# (normtorch_direct.h; docs/Python.md, "The bodies without the
# dispatcher"); NORM_MLIR_DIRECT=0, or _use_direct(False): always through
# the dispatcher.
_direct_on = os.environ.get("NORM_MLIR_DIRECT", "1") != "0"


def _connect_direct():
    """Hands libnormtorch's direct table to the C++ autograd kernels where
    both are bound and _direct_on, else takes it back."""
    ag = globals().get("_CppAutograd")  # not yet defined at import
    ag = ag.instance if ag is not None else None
    if ag is None:
        return
    native = _Native.instance
    table = native.direct if native is not None and _direct_on else None
    try:
        ag.set_direct(table)
    except OSError as ex:
        warnings.warn("norm_mlir: the autograd kernels call the op bodies "
                      "through the dispatcher (%s)" % ex, RuntimeWarning)
        ag.set_direct(None)


def _use_direct(on):
    """Switches the direct calls on or off (tests, benchmarks); returns
    the previous setting."""
    global _direct_on
    before, _direct_on = _direct_on, bool(on)
    _connect_direct()
    return before


def _torch_version():
    try:
        return tuple(int(p) for p in
                     torch.__version__.split("+")[0].split(".")[:2])
    except ValueError:
        return (0, 0)


def _bind_native():
    """The C++ bodies registered for CUDA, or None: no libnormtorch.so (a
    wheel built without torch), NORM_MLIR_NATIVE=0, or a library that does
    not load here (a warning says why)."""
    if os.environ.get("NORM_MLIR_NATIVE", "1") == "0" or \
            _torch_version() < (2, 10):  # the stable ABI it was built for
        return None
    path = _libs.find_optional("libnormtorch.so")
    if path is None:
        return None
    try:
        native = _Native.bind(path)
        native.register("CUDA")
        return native
    except OSError as ex:
        warnings.warn("norm_mlir: %s not used (%s); the op bodies run in "
                      "Python" % (path, ex), RuntimeWarning)
        return None


# Every op's body, the residual-add ops' fused forwards included, is C++
# where libnormtorch is loaded, else Python.
_native = _bind_native()
for _name, _impl in _python_impls.items():
    if _native is None:
        _lib.impl(_name, _impl, "CUDA")

# The bodies the eager path calls: the C++ ones through a redispatch to
# the CUDA key (below autograd and autocast, as the direct Python calls
# were), else the Python ones. _use_bodies(keyset) switches (the CPU tests
# take the CPU key; None: the Python bodies).
_CUDA_KEYS = torch._C.DispatchKeySet(torch._C.DispatchKey.CUDA)


def _redispatcher(op, keyset):
    handle = getattr(op, "_handle", None)
    if handle is not None and hasattr(handle, "redispatch_boxed"):
        return functools.partial(handle.redispatch_boxed, keyset)
    return functools.partial(op.redispatch, keyset)


def _use_bodies(keyset):
    global _ln_fwd_body, _rms_fwd_body, _ln_bwd_body, _rms_bwd_body
    if keyset is None:
        _ln_fwd_body, _rms_fwd_body = _ln_fwd_impl, _rms_fwd_impl
        _ln_bwd_body, _rms_bwd_body = _ln_bwd_impl, _rms_bwd_impl
    else:
        _ln_fwd_body = _redispatcher(_ln_fwd, keyset)
        _rms_fwd_body = _redispatcher(_rms_fwd, keyset)
        _ln_bwd_body = _redispatcher(_ln_bwd, keyset)
        _rms_bwd_body = _redispatcher(_rms_bwd, keyset)


_default_keys = _CUDA_KEYS if _native is not None else None
_use_bodies(_default_keys)


# ------------------------------------------------------------- autograd
#
# The kernels' gradients carry no graph. A backward that builds one
# (create_graph=True: double backward, gradient penalties, Hessian-vector
# products) computes the same gradients with torch ops instead (_graphed),
# which autograd can differentiate again.

def _building_graph(*ts):
    """Whether this backward runs under create_graph=True (autograd sets
    grad mode to it) with something to differentiate."""
    return torch.is_grad_enabled() and any(
        t is not None and t.requires_grad for t in ts)


def _graphed(dy, x, weight, n, eps, zc, rms):
    """dx and dweight (None where not asked) of the norm as differentiable
    torch ops in f32, as the kernels compute them."""
    with torch.enable_grad():
        # Differentiated through fresh views: autograd.grad runs every node
        # between y and the tensors it differentiates by, and x may be
        # this very node's output (the residual-add ops' h) with the weight
        # its input, which would run this backward again, without end.
        x, weight = x.view_as(x), None if weight is None else \
            weight.view_as(weight)
        xr = x.reshape(-1, n).float()
        if not rms:
            xr = xr - xr.mean(-1, keepdim=True)
        xhat = xr * torch.rsqrt(xr.square().mean(-1, keepdim=True) + eps)
        y = xhat
        if weight is not None:
            w = weight.reshape(n).float()
            y = y * (w + 1 if zc else w)
        wrt = [t for t in (x, weight) if t is not None and t.requires_grad]
        got = iter(torch.autograd.grad(
            y, wrt, dy.reshape(-1, n).float(), create_graph=True)
            if wrt else ())
    dx = next(got).to(x.dtype) if x.requires_grad else None
    dw = next(got).to(weight.dtype) if weight is not None and \
        weight.requires_grad else None
    return dx, dw


def _ln_setup(ctx, inputs, output):
    x, weight, bias, n, eps, zc = inputs
    _, mean, rstd = output
    ctx.save_for_backward(x, weight, mean, rstd)
    ctx.has_bias, ctx.n, ctx.eps, ctx.zc = bias is not None, n, eps, zc
    ctx.wshape = None if weight is None else weight.shape
    ctx.bshape = None if bias is None else bias.shape


def _ln_backward(ctx, dy, dmean, drstd):
    x, weight, mean, rstd = ctx.saved_tensors
    if _building_graph(dy, x, weight):
        dx, dwo = _graphed(dy, x, weight, ctx.n, ctx.eps, ctx.zc, False)
        # The bias's dtype is the weight's, else x's (_ours).
        dbo = dy.reshape(-1, ctx.n).float().sum(0).to(
            x.dtype if weight is None else weight.dtype).view(
                ctx.bshape) if ctx.has_bias else None
        return dx, dwo, dbo, None, None, None
    bwd = _ln_bwd_body if _direct(dy, x) else _ln_bwd
    dx, dw, db = bwd(dy, x, mean, rstd, weight, ctx.has_bias, ctx.n, ctx.zc)
    # dweight / dbias are [n]: viewed as the parameters only when those
    # have more dimensions (a view costs a couple of microseconds).
    dwo = None if weight is None else dw if weight.dim() == 1 else \
        dw.view(ctx.wshape)
    dbo = None if not ctx.has_bias else db if len(ctx.bshape) == 1 else \
        db.view(ctx.bshape)
    return dx, dwo, dbo, None, None, None


def _rms_setup(ctx, inputs, output):
    x, weight, n, eps, zc = inputs
    _, rstd = output
    ctx.save_for_backward(x, weight, rstd)
    ctx.n, ctx.eps, ctx.zc = n, eps, zc
    ctx.wshape = None if weight is None else weight.shape


# The residual-add forms' backwards get None for an unused output's
# gradient (set_materialize_grads(False)): h unused costs no zeros tensor
# and no dresidual operand; y unused (h alone used) gets zeros here, as
# autograd made them (the C++ kernels' yGradOrZeros).

def _add_ln_setup(ctx, inputs, output):
    x, residual, weight, bias, n, eps, zc = inputs
    _, h, mean, rstd = output
    _ln_setup(ctx, (h, weight, bias, n, eps, zc), (None, mean, rstd))
    ctx.set_materialize_grads(False)


def _add_ln_backward(ctx, dy, dh, dmean, drstd):
    h, weight, mean, rstd = ctx.saved_tensors
    if dy is None:
        dy = torch.zeros_like(h, memory_format=torch.contiguous_format)
    if _building_graph(dy, h, weight, dh):
        dx, dw, db = _ln_backward(ctx, dy, None, None)[:3]
        if dh is not None:
            dx = dh if dx is None else dx + dh
        return dx, dx, dw, db, None, None, None
    bwd = _ln_bwd_body if _direct(dy, h) else _ln_bwd
    dx, dw, db = bwd(dy, h, mean, rstd, weight, ctx.has_bias, ctx.n, ctx.zc,
                     dh)
    dwo = None if weight is None else dw if weight.dim() == 1 else \
        dw.view(ctx.wshape)
    dbo = None if not ctx.has_bias else db if len(ctx.bshape) == 1 else \
        db.view(ctx.bshape)
    return dx, dx, dwo, dbo, None, None, None


def _add_rms_setup(ctx, inputs, output):
    x, residual, weight, n, eps, zc = inputs
    _, h, rstd = output
    _rms_setup(ctx, (h, weight, n, eps, zc), (None, rstd))
    ctx.set_materialize_grads(False)


def _add_rms_backward(ctx, dy, dh, drstd):
    h, weight, rstd = ctx.saved_tensors
    if dy is None:
        dy = torch.zeros_like(h, memory_format=torch.contiguous_format)
    if _building_graph(dy, h, weight, dh):
        dx, dw = _rms_backward(ctx, dy, None)[:2]
        if dh is not None:
            dx = dh if dx is None else dx + dh
        return dx, dx, dw, None, None, None
    bwd = _rms_bwd_body if _direct(dy, h) else _rms_bwd
    dx, dw = bwd(dy, h, rstd, weight, ctx.n, ctx.zc, dh)
    dwo = None if weight is None else dw if weight.dim() == 1 else \
        dw.view(ctx.wshape)
    return dx, dx, dwo, None, None, None


def _rms_backward(ctx, dy, drstd):
    x, weight, rstd = ctx.saved_tensors
    if _building_graph(dy, x, weight):
        dx, dw = _graphed(dy, x, weight, ctx.n, ctx.eps, ctx.zc, True)
        return dx, dw, None, None, None
    bwd = _rms_bwd_body if _direct(dy, x) else _rms_bwd
    dx, dw = bwd(dy, x, rstd, weight, ctx.n, ctx.zc)
    dwo = None if weight is None else dw if weight.dim() == 1 else \
        dw.view(ctx.wshape)
    return dx, dwo, None, None, None


# ------------------------------------------- the C++ autograd kernels
#
# libnormtorch_autograd.so (python/csrc/torch_autograd.cpp): the forward
# ops' Autograd kernels in C++ (torch::autograd::Function), so a call
# records a C++ node and its backward runs the backward op without Python
# (no GIL on autograd's worker thread). It uses torch's full C++ API, so it
# fits only the torch it was built against (the version and git revision in
# libnormtorch_autograd.torch beside it, checked before loading); with
# another torch, without it, or with NORM_MLIR_NATIVE_AUTOGRAD=0, the
# formulas above are registered (torch.library.register_autograd) and the
# eager path calls the bodies through the autograd.Function below.

_AUTOGRAD_LIB = "libnormtorch_autograd.so"
_SUPPORT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int32)  # device -> 1/0/-1
_AUTOGRAD_STAMP = "libnormtorch_autograd.torch"


class _CppAutograd:
    """libnormtorch_autograd.so, bound."""

    instance = None

    def __init__(self, path):
        lib = ctypes.CDLL(path)  # after torch: libtorch_cpu.so is loaded
        lib.normtorch_autograd_torch_version.argtypes = []
        lib.normtorch_autograd_torch_version.restype = ctypes.c_char_p
        lib.normtorch_autograd_register.argtypes = [ctypes.c_char_p,
                                                    ctypes.c_size_t]
        lib.normtorch_autograd_register.restype = ctypes.c_void_p
        lib.normtorch_autograd_unregister.argtypes = [ctypes.c_void_p]
        lib.normtorch_autograd_unregister.restype = None
        lib.normtorch_autograd_set_devices.argtypes = [
            ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
        lib.normtorch_autograd_set_devices.restype = ctypes.c_int
        lib.normtorch_autograd_set_support.argtypes = [_SUPPORT]
        lib.normtorch_autograd_set_support.restype = None
        lib.normtorch_autograd_forget_support.argtypes = []
        lib.normtorch_autograd_forget_support.restype = None
        lib.normtorch_autograd_set_direct.argtypes = [
            ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
        lib.normtorch_autograd_set_direct.restype = ctypes.c_int
        lib.normtorch_autograd_body_calls.argtypes = [
            ctypes.POINTER(ctypes.c_uint64 * 2)]
        lib.normtorch_autograd_body_calls.restype = None
        # The eager calls' Python entry (torch_autograd.cpp, "the Python
        # entry"): functions called from Python directly instead of the
        # eager ops' callables; absent from a library built without
        # Python's headers. Bound through PyDLL: the GIL held, a Python
        # exception raised as such.
        self._entries = getattr(lib, "normtorch_autograd_python_entries",
                                None)
        if self._entries is not None:
            py = ctypes.PyDLL(path)
            self._entries = py.normtorch_autograd_python_entries
            self._entries.argtypes = [ctypes.py_object] * 3 + [
                ctypes.c_int64]
            self._entries.restype = ctypes.py_object
            lib.normtorch_autograd_python_entry_on.argtypes = [ctypes.c_int]
            lib.normtorch_autograd_python_entry_on.restype = ctypes.c_int
            lib.normtorch_autograd_python_entry_calls.argtypes = [
                ctypes.POINTER(ctypes.c_uint64 * 2)]
            lib.normtorch_autograd_python_entry_calls.restype = None
        built = lib.normtorch_autograd_torch_version().decode()
        if built != _torch_build():
            raise OSError("built for torch %s, running %s" % (
                built, _torch_build()))
        self.lib, self.path = lib, path
        self._support = _SUPPORT(self._supported)  # ctypes keeps no ref
        lib.normtorch_autograd_set_support(self._support)

    @classmethod
    def bind(cls, path):
        if cls.instance is None:
            cls.instance = cls(path)
            _connect_direct()
        return cls.instance

    @staticmethod
    def _supported(idx):
        """The eager calls' question for a CUDA device they have not seen
        (or since _reset_support): _supported's answer (its warning
        included)."""
        try:
            return int(_supported(torch.device("cuda", idx)))
        except BaseException:  # noqa: BLE001 (the call raises instead)
            return -1

    def register(self):
        err = ctypes.create_string_buffer(_ERR)
        h = self.lib.normtorch_autograd_register(err, _ERR)
        if not h:
            raise OSError(err.value.decode("utf-8", "replace"))
        self.set_devices(_device_types)
        self.forget_support()  # asked again: _support may have changed
        return h

    def set_devices(self, types):
        err = ctypes.create_string_buffer(_ERR)
        if self.lib.normtorch_autograd_set_devices(
                ",".join(types).encode(), err, _ERR):
            raise ValueError(err.value.decode("utf-8", "replace"))

    def forget_support(self):
        self.lib.normtorch_autograd_forget_support()

    def set_direct(self, table):
        """libnormtorch's direct table (an address), or None: the bodies
        only through the dispatcher."""
        err = ctypes.create_string_buffer(_ERR)
        if self.lib.normtorch_autograd_set_direct(table, err, _ERR):
            raise OSError(err.value.decode("utf-8", "replace"))

    def body_calls(self):
        """(direct, dispatched): how many times the kernels called an op
        body without and with the dispatcher."""
        out = (ctypes.c_uint64 * 2)()
        self.lib.normtorch_autograd_body_calls(ctypes.byref(out))
        return out[0], out[1]

    def unregister(self, handle):
        self.lib.normtorch_autograd_unregister(handle)

    def entries(self, ops):
        """The Python entry's four functions, each calling the kernel of
        the eager op of `ops` (its callable: the fallback) directly where
        the call is plain eager; None where the library has none or its
        check of torch's tensor layout fails (a warning)."""
        if self._entries is None or os.environ.get(
                "NORM_MLIR_PY_ENTRY", "1") == "0":
            return None
        import sysconfig
        if sysconfig.get_config_var("Py_GIL_DISABLED"):
            return None  # a free-threaded CPython: not the limited API's
        probe = torch.empty(0)
        try:
            return self._entries(
                (torch.Tensor, torch.nn.Parameter,
                 getattr(torch, "OutOfMemoryError", RuntimeError)),
                tuple(ops), probe, probe._cdata)
        except Exception as ex:  # noqa: BLE001 (the ops' callables stay)
            warnings.warn("norm_mlir: the eager calls go through the "
                          "dispatcher (%s)" % ex, RuntimeWarning)
            return None

    def entry_on(self, on):
        """Whether the Python entry takes its fast route (else every call
        goes to the ops' callables); returns the previous setting."""
        return bool(self.lib.normtorch_autograd_python_entry_on(int(on)))

    def entry_calls(self):
        """(fast, through the ops' callables): the Python entry's calls."""
        out = (ctypes.c_uint64 * 2)()
        self.lib.normtorch_autograd_python_entry_calls(ctypes.byref(out))
        return out[0], out[1]


def _torch_build():
    """The running torch as libnormtorch_autograd.torch records one: its
    version without the local tag (+cu130: builds of one source for other
    CUDA versions share the C++ API) and its git revision."""
    return "%s %s" % (torch.__version__.split("+")[0],
                      getattr(torch.version, "git_version", "unknown"))


def _autograd_stamp(path):
    try:
        with open(os.path.join(os.path.dirname(path), _AUTOGRAD_STAMP)) as f:
            return f.read().strip()
    except OSError:
        return None


def _find_cpp_autograd():
    """The bound library where it fits the running torch, else None (a
    warning only where it should have fitted and did not load)."""
    if os.environ.get("NORM_MLIR_NATIVE_AUTOGRAD", "1") == "0":
        return None
    path = _libs.find_optional(_AUTOGRAD_LIB)
    if path is None or _autograd_stamp(path) != _torch_build():
        return None  # not built, or for another torch: Python's formulas
    try:
        return _CppAutograd.bind(path)
    except OSError as ex:
        warnings.warn("norm_mlir: %s not used (%s); the autograd formulas "
                      "run in Python" % (path, ex), RuntimeWarning)
        return None


_cpp_autograd = False  # whether the C++ Autograd kernels are registered
_autograd_reg = None   # their handle, or the Library of Python's formulas
# The eager calls' C++ callables (_eager_layer_norm / _eager_rms_norm and
# the residual-add forms), with the C++ autograd kernels; else None.
_ln_eager = _rms_eager = _add_ln_eager = _add_rms_eager = None


def _use_autograd(ext):
    """Registers the forward ops' Autograd kernels: ext's (a _CppAutograd)
    or, with None, the Python formulas above. The CPU tests switch."""
    global _cpp_autograd, _autograd_reg, _ln_eager, _rms_eager
    global _add_ln_eager, _add_rms_eager
    if _autograd_reg is not None:
        _ln_eager = _rms_eager = _add_ln_eager = _add_rms_eager = None
        if _cpp_autograd:
            _autograd_reg[0].unregister(_autograd_reg[1])
        else:
            _autograd_reg._destroy()
        _autograd_reg, _cpp_autograd = None, False
    if ext is not None:
        _autograd_reg, _cpp_autograd = (ext, ext.register()), True
        ops = (torch.ops.norm_mlir._eager_layer_norm.default._op,
               torch.ops.norm_mlir._eager_rms_norm.default._op,
               torch.ops.norm_mlir._eager_add_layer_norm.default._op,
               torch.ops.norm_mlir._eager_add_rms_norm.default._op)
        # The library's Python entry where it has one (the same kernels
        # without the op call's boxing: docs/Python.md, "The Python
        # entry"), else the ops' callables.
        _ln_eager, _rms_eager, _add_ln_eager, _add_rms_eager = \
            ext.entries(ops) or ops
        return
    lib = torch.library.Library("norm_mlir", "IMPL")
    torch.library.register_autograd("norm_mlir::layer_norm_fwd",
                                    _ln_backward, setup_context=_ln_setup,
                                    lib=lib)
    torch.library.register_autograd("norm_mlir::rms_norm_fwd",
                                    _rms_backward, setup_context=_rms_setup,
                                    lib=lib)
    torch.library.register_autograd("norm_mlir::add_layer_norm_fwd",
                                    _add_ln_backward,
                                    setup_context=_add_ln_setup, lib=lib)
    torch.library.register_autograd("norm_mlir::add_rms_norm_fwd",
                                    _add_rms_backward,
                                    setup_context=_add_rms_setup, lib=lib)
    _autograd_reg = lib


_autograd_ext = _find_cpp_autograd()
try:
    _use_autograd(_autograd_ext)
except OSError as _ex:
    warnings.warn("norm_mlir: %s not used (%s); the autograd formulas run "
                  "in Python" % (_autograd_ext.path, _ex), RuntimeWarning)
    _autograd_ext = None
    _use_autograd(None)


# ------------------------------------------------ eager: straight calls
#
# In eager mode on plain tensors the functions below call the op bodies
# from Python, through torch.autograd.Function (its apply is C++) with the
# same setup and backward formulas, skipping the dispatcher's Python hops
# (the registered autograd kernel and its redispatch): the host time of a
# call is then mostly the launch (docs/Python.md, "Host overhead").
# torch.compile, make_fx, fake tensors and any other tensor subclass or
# dispatch mode take the registered ops.

_PLAIN = (torch.Tensor, torch.nn.Parameter)
_dispatch_modes = torch._C._len_torch_dispatch_stack


def _direct(*ts):
    """Whether a call may run the op bodies directly."""
    # is_compiling first: dynamo folds it and never sees the C call.
    if torch.compiler.is_compiling() or _dispatch_modes():
        return False
    for t in ts:
        if t is not None and type(t) not in _PLAIN:
            return False
    return True


def _wants_grad(*ts):
    return torch.is_grad_enabled() and any(
        t is not None and t.requires_grad for t in ts)


class _LayerNormFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, n, eps, zero_centered):
        out = _ln_fwd_body(x, weight, bias, n, eps, zero_centered)
        _ln_setup(ctx, (x, weight, bias, n, eps, zero_centered), out)
        ctx.mark_non_differentiable(out[1], out[2])
        return out

    @staticmethod
    def backward(ctx, dy, dmean, drstd):
        return _ln_backward(ctx, dy, dmean, drstd)


class _RMSNormFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, n, eps, zero_centered):
        out = _rms_fwd_body(x, weight, n, eps, zero_centered)
        _rms_setup(ctx, (x, weight, n, eps, zero_centered), out)
        ctx.mark_non_differentiable(out[1])
        return out

    @staticmethod
    def backward(ctx, dy, drstd):
        return _rms_backward(ctx, dy, drstd)


def _c_apply(cls):
    """cls.apply without torch.autograd.Function.apply's Python layer (the
    unwrapping of dead torch.func wrappers and default arguments: the
    direct path only takes plain tensors, outside transforms, with every
    argument given), a few microseconds a call."""
    try:
        return super(torch.autograd.Function, cls).apply
    except AttributeError:  # a torch without _C._FunctionBase.apply
        return cls.apply


_ln_apply = _c_apply(_LayerNormFunction)
_rms_apply = _c_apply(_RMSNormFunction)


# With the C++ Autograd kernels an eager call is one call of the op (the
# dispatcher's C++ callable, without OpOverload.__call__'s frame; the op
# itself under torch.compile).
_ln_fwd_c, _rms_fwd_c = _ln_fwd._op, _rms_fwd._op
_add_ln_fwd_c, _add_rms_fwd_c = _add_ln_fwd._op, _add_rms_fwd._op


def _layer_norm_rows(x, weight, bias, n, eps, zero_centered):
    """y, mean, rstd through the fastest path the call allows."""
    if _cpp_autograd:
        if torch.compiler.is_compiling():
            return _ln_fwd(x, weight, bias, n, eps, zero_centered)
        return _ln_fwd_c(x, weight, bias, n, eps, zero_centered)
    if not _direct(x, weight, bias):
        return _ln_fwd(x, weight, bias, n, eps, zero_centered)
    if _wants_grad(x, weight, bias):
        return _ln_apply(x, weight, bias, n, eps, zero_centered)
    return _ln_fwd_body(x, weight, bias, n, eps, zero_centered)


def _rms_norm_rows(x, weight, n, eps, zero_centered):
    if _cpp_autograd:
        if torch.compiler.is_compiling():
            return _rms_fwd(x, weight, n, eps, zero_centered)
        return _rms_fwd_c(x, weight, n, eps, zero_centered)
    if not _direct(x, weight):
        return _rms_fwd(x, weight, n, eps, zero_centered)
    if _wants_grad(x, weight):
        return _rms_apply(x, weight, n, eps, zero_centered)
    return _rms_fwd_body(x, weight, n, eps, zero_centered)


# ------------------------------------------------------------ functions

_functorch_active = torch._C._are_functorch_transforms_active
_forward_ad = torch.autograd.forward_ad  # _current_level >= 0: dual tensors
_HALF = (torch.float16, torch.bfloat16)


def _ours(x, weight, bias=None):
    """Whether a call runs our kernels: a CUDA tensor of f32/f16/bf16 on a
    chip we support (_supported), contiguous parameters there of one dtype
    (a bias alone: x's, as the kernels take it), and no torch.func
    transform (grad, vmap, jvp...) or forward-mode AD level active: their
    tensors wrap others or carry tangents, which only torch's own functions
    see through."""
    if not (_on_device(x) and x.dtype in _DT and x.numel() > 0):
        return False
    if weight is not None and not (_on_device(weight) and
                                   weight.dtype in _DT and
                                   weight.is_contiguous()):
        return False
    # A bias of the weight's dtype (else x's): one of ours, then.
    if bias is not None and not (
            bias.dtype is (x.dtype if weight is None else weight.dtype) and
            _on_device(bias) and bias.is_contiguous()):
        return False
    # is_compiling first: dynamo folds it and never sees the C call.
    if not torch.compiler.is_compiling() and (
            _functorch_active() or _forward_ad._current_level >= 0):
        return False
    return _supported(x.device)


def _fp32(t):
    return t.float() if t is not None and t.dtype in _HALF else t


# Tested first: dynamo folds it, so under torch.compile the eager calls'
# C++ callables are never looked at.
_is_compiling = torch.compiler.is_compiling
_SHAPES = (tuple, list, torch.Size)  # what the eager calls' int[] takes


def _normalized(normalized_shape):
    if type(normalized_shape) is tuple and all(
            type(d) is int for d in normalized_shape):
        return normalized_shape  # the modules' (torch's constructors')
    if isinstance(normalized_shape, int):
        return (normalized_shape,)
    return tuple(int(d) for d in normalized_shape)


def _check(x, shape, weight, bias):
    # torch.Size compares with a tuple as a tuple does.
    if x.shape[x.dim() - len(shape):] != shape:
        raise ValueError("normalized_shape %s does not match the trailing "
                         "dimensions of x %s" % (list(shape), list(x.shape)))
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None and p.shape != shape:
            raise ValueError("%s has shape %s, expected %s"
                             % (name, list(p.shape), list(shape)))


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5,
               zero_centered=False):
    """torch.nn.functional.layer_norm, on our kernels for CUDA tensors of
    f32/f16/bf16. zero_centered: the weight is applied as 1 + weight.
    Under CUDA autocast the output is f32, as torch's is."""
    if not _is_compiling() and _ln_eager is not None:
        # One C++ call: the checks below, then the autograd kernel.
        return _ln_eager(x, normalized_shape if type(normalized_shape) in
                         _SHAPES else _normalized(normalized_shape),
                         weight, bias, eps, bool(zero_centered))
    shape = _normalized(normalized_shape)
    _check(x, shape, weight, bias)
    if not shape or not _ours(x, weight, bias):
        w = weight + 1 if (zero_centered and weight is not None) else weight
        return torch.nn.functional.layer_norm(x, shape, w, bias, eps)
    if torch.is_autocast_enabled("cuda") and x.device.type == "cuda":
        # torch's layer_norm is on CUDA autocast's fp32 list: its inputs
        # are cast to f32, so its output is f32 (rms_norm's is not).
        x, weight, bias = _fp32(x), _fp32(weight), _fp32(bias)
    y, _, _ = _layer_norm_rows(x, weight, bias, math.prod(shape),
                               float(eps), bool(zero_centered))
    return y


def rms_norm(x, normalized_shape, weight=None, eps=None,
             zero_centered=False):
    """torch.nn.functional.rms_norm, on our kernels for CUDA tensors of
    f32/f16/bf16. eps None is torch's default: the epsilon of the type it
    computes in (f32's for f16 / bf16 x, not x's own, whatever its docs
    say). zero_centered: the weight is applied as 1 + weight (Gemma)."""
    if not _is_compiling() and _rms_eager is not None:
        return _rms_eager(x, normalized_shape if type(normalized_shape) in
                          _SHAPES else _normalized(normalized_shape),
                          weight, eps, bool(zero_centered))
    shape = _normalized(normalized_shape)
    _check(x, shape, weight, None)
    if not shape or not _ours(x, weight):
        w = weight + 1 if (zero_centered and weight is not None) else weight
        return torch.nn.functional.rms_norm(x, shape, w, eps)
    if eps is None:
        eps = torch.finfo(torch.float32 if x.dtype in _HALF else x.dtype).eps
    y, _ = _rms_norm_rows(x, weight, math.prod(shape), float(eps),
                          bool(zero_centered))
    return y


def _fused_residual(x, residual):
    """Whether x + residual can go into our residual-add op: one shape,
    dtype and device, outside CUDA autocast (where layer_norm computes in
    f32 but the sum keeps its dtype)."""
    return (residual.shape == x.shape and residual.dtype == x.dtype and
            residual.device == x.device and
            not torch.is_autocast_enabled("cuda"))


def _add_op(c_op, op):
    """The op to call: its C++ callable in eager mode with the C++ autograd
    kernels (as _layer_norm_rows), else the op."""
    if _cpp_autograd and not torch.compiler.is_compiling():
        return c_op
    return op


def add_layer_norm(x, residual, normalized_shape, weight=None, bias=None,
                   eps=1e-5, zero_centered=False):
    """Residual add + LayerNorm, as pre-norm blocks use it (Liger's,
    Transformer Engine's and quack's fused forms): h = x + residual, then
    (layer_norm(h, ...), h); residual None: h is x. On our kernels the
    backward adds h's own gradient into dx inside the backward kernel (its
    dresidual operand), and x and residual both get that dx. x and
    residual of different shapes or dtypes, tensors we do not take and
    CUDA autocast compose torch's add with layer_norm() instead."""
    if residual is None:
        return layer_norm(x, normalized_shape, weight, bias, eps,
                          zero_centered), x
    if not _is_compiling() and _add_ln_eager is not None:
        # One C++ call: the checks below, then the autograd kernel.
        return _add_ln_eager(x, residual, normalized_shape if type(
            normalized_shape) in _SHAPES else _normalized(normalized_shape),
            weight, bias, eps, bool(zero_centered))
    shape = _normalized(normalized_shape)
    _check(x, shape, weight, bias)
    if not (shape and _fused_residual(x, residual) and
            _ours(x, weight, bias)):
        h = x + residual
        return layer_norm(h, shape, weight, bias, eps, zero_centered), h
    y, h, _, _ = _add_op(_add_ln_fwd_c, _add_ln_fwd)(
        x, residual, weight, bias, math.prod(shape), float(eps),
        bool(zero_centered))
    return y, h


def add_rms_norm(x, residual, normalized_shape, weight=None, eps=None,
                 zero_centered=False):
    """Residual add + RMSNorm: h = x + residual, then (rms_norm(h, ...), h);
    residual None: h is x. As add_layer_norm (the backward's dresidual)."""
    if residual is None:
        return rms_norm(x, normalized_shape, weight, eps, zero_centered), x
    if not _is_compiling() and _add_rms_eager is not None:
        return _add_rms_eager(x, residual, normalized_shape if type(
            normalized_shape) in _SHAPES else _normalized(normalized_shape),
            weight, eps, bool(zero_centered))
    shape = _normalized(normalized_shape)
    _check(x, shape, weight, None)
    if not (shape and _fused_residual(x, residual) and _ours(x, weight)):
        h = x + residual
        return rms_norm(h, shape, weight, eps, zero_centered), h
    if eps is None:
        eps = torch.finfo(torch.float32 if x.dtype in _HALF else x.dtype).eps
    y, h, _ = _add_op(_add_rms_fwd_c, _add_rms_fwd)(
        x, residual, weight, math.prod(shape), float(eps),
        bool(zero_centered))
    return y, h


# -------------------------------------------------------------- modules

class _ZeroCentered:
    """zero_centered for the modules: the weight is applied as 1 + weight,
    so it starts (and resets: reset_parameters, which meta-device and FSDP2
    initialisation call) at 0, the identity; repr shows the flag when set."""

    zero_centered = False  # a class default, also for modules patch() swaps

    def reset_parameters(self):
        super().reset_parameters()
        if self.zero_centered and self.weight is not None:
            with torch.no_grad():
                self.weight.zero_()

    def extra_repr(self):
        r = super().extra_repr()
        return r + ", zero_centered=True" if self.zero_centered else r


class LayerNorm(_ZeroCentered, torch.nn.LayerNorm):
    """torch.nn.LayerNorm (same constructor, parameters and state-dict
    keys) whose forward and backward run our kernels. zero_centered: the
    weight is applied as 1 + weight and initialised to 0."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True,
                 bias=True, device=None, dtype=None, zero_centered=False):
        super().__init__(normalized_shape, eps, elementwise_affine, bias,
                         device, dtype)
        self.zero_centered = bool(zero_centered)
        if self.zero_centered:
            self.reset_parameters()

    def forward(self, x):
        if not _is_compiling() and _ln_eager is not None:
            return _ln_eager(x, self.normalized_shape, self.weight,
                             self.bias, self.eps, self.zero_centered)
        return layer_norm(x, self.normalized_shape, self.weight, self.bias,
                          self.eps, self.zero_centered)


class RMSNorm(_ZeroCentered, torch.nn.RMSNorm):
    """torch.nn.RMSNorm (same constructor, parameters and state-dict keys)
    whose forward and backward run our kernels. zero_centered (Gemma): the
    weight is applied as 1 + weight and initialised to 0."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True,
                 device=None, dtype=None, zero_centered=False):
        super().__init__(normalized_shape, eps, elementwise_affine, device,
                         dtype)
        self.zero_centered = bool(zero_centered)
        if self.zero_centered:
            self.reset_parameters()

    def forward(self, x):
        if not _is_compiling() and _rms_eager is not None:
            return _rms_eager(x, self.normalized_shape, self.weight,
                              self.eps, self.zero_centered)
        return rms_norm(x, self.normalized_shape, self.weight, self.eps,
                        self.zero_centered)


# ---------------------------------------------------------------- patch

_SWAPS = ((torch.nn.LayerNorm, LayerNorm), (torch.nn.RMSNorm, RMSNorm))


def _patch_refusal(module):
    """Why patch() leaves `module`, an instance of torch's LayerNorm or
    RMSNorm (or of a subclass), as it is; None when it swaps it."""
    if isinstance(module, (LayerNorm, RMSNorm)):
        return "already norm_mlir's"
    if type(module) not in (torch.nn.LayerNorm, torch.nn.RMSNorm):
        return ("%s.%s subclasses torch's %s (its forward or state may "
                "differ from torch's)" % (
                    type(module).__module__, type(module).__qualname__,
                    "LayerNorm" if isinstance(module, torch.nn.LayerNorm)
                    else "RMSNorm"))
    shape = tuple(module.normalized_shape)
    if not shape or math.prod(shape) <= 0:
        return "normalized_shape %s is empty" % (list(shape),)
    for name, p in module.named_parameters(recurse=False):
        if type(p) not in _PLAIN:
            return ("its %s is a %s (ours take plain tensors; patch before "
                    "sharding or wrapping)" % (name, type(p).__name__))
    return None


def patch(model):
    """Swaps every torch.nn.LayerNorm / torch.nn.RMSNorm of `model` (itself
    included) for ours, in place: the module objects stay (their class
    becomes norm_mlir's, which only changes forward), so parameters,
    buffers, hooks, state-dict keys and references to them are unchanged,
    and an optimiser built before keeps working. Subclasses of torch's
    norms, norms whose parameters are not plain tensors (DTensor after
    sharding) and empty shapes are left alone, one warning each with the
    reason. Returns `model`."""
    for name, m in model.named_modules():
        if not isinstance(m, (torch.nn.LayerNorm, torch.nn.RMSNorm)):
            continue
        reason = _patch_refusal(m)
        if reason is None:
            m.__class__ = dict(_SWAPS)[type(m)]
        elif not isinstance(m, (LayerNorm, RMSNorm)):
            warnings.warn("norm_mlir.torch.patch: %s left as it is: %s"
                          % (name or type(m).__name__, reason),
                          stacklevel=2)
    return model


# ------------------------------------------------------- torch.compile
#
# Inductor cannot fuse into our ops, so the residual adds around a norm
# stayed kernels of their own (two launches a norm and step more than
# torch's fused norms); a post-grad graph pass folds them into the ops'
# residual-add forward and the backward's dresidual (norm_mlir/_inductor.py;
# NORM_MLIR_INDUCTOR_PASS=0: not installed).
from . import _inductor  # noqa: E402

_inductor.install()
