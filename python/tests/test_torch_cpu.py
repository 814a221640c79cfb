"""norm_mlir.torch without a GPU (CI; needs torch, which `dev.sh test`
installs): the modules' constructors and state dicts against torch's, the
fallback off the GPU, the rows passed without a copy, the ops' real bodies
on CPU tensors with each launch replaced by the runtime's validation
against the compiled manifest, and the custom ops under fake CUDA tensors
(what torch.compile traces). test_torch_gpu.py checks the numbers on a GPU.
"""

import atexit
import contextlib
import ctypes
import functools
import importlib.util
import inspect
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

import pytest

torch = pytest.importorskip("torch")

import norm_mlir  # noqa: E402
import norm_mlir.torch as nt  # noqa: E402
from norm_mlir import _libs, _runtime, cache  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402
from torch.fx.experimental.proxy_tensor import make_fx  # noqa: E402


@pytest.fixture(autouse=True)
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NORM_MLIR_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(nt, "_kernels_by_key", {})
    cache.clear_memory()
    yield
    cache.clear_memory()


# ------------------------------------------------- modules and state dicts

MODULE_PAIRS = [
    (lambda m: m.LayerNorm((8, 32))),
    (lambda m: m.LayerNorm(64, bias=False)),
    (lambda m: m.LayerNorm(64, elementwise_affine=False)),
    (lambda m: m.LayerNorm(64, eps=1e-6, dtype=torch.bfloat16)),
    (lambda m: m.RMSNorm(64, eps=1e-6)),
    (lambda m: m.RMSNorm([4, 16])),
    (lambda m: m.RMSNorm(64, elementwise_affine=False)),
]


@pytest.mark.parametrize("make", MODULE_PAIRS)
def test_state_dict_matches_torch(make):
    ours, theirs = make(nt), make(torch.nn)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for (ka, a), (kb, b) in zip(ours.named_parameters(),
                                theirs.named_parameters()):
        assert ka == kb and a.shape == b.shape and a.dtype == b.dtype
    with torch.no_grad():
        for p in theirs.parameters():
            p.uniform_()
    ours.load_state_dict(theirs.state_dict())  # strict: same keys
    for a, b in zip(ours.parameters(), theirs.parameters()):
        assert torch.equal(a, b)
    theirs.load_state_dict(ours.state_dict())
    assert repr(ours) == repr(theirs)
    assert isinstance(ours, type(theirs))
    # A torch model's state dict with ours swapped in, and back.
    seq_t = torch.nn.Sequential(torch.nn.Identity(), theirs)
    seq_o = torch.nn.Sequential(torch.nn.Identity(), ours)
    seq_o.load_state_dict(seq_t.state_dict())


@pytest.mark.parametrize("ours,theirs", [(nt.LayerNorm, torch.nn.LayerNorm),
                                         (nt.RMSNorm, torch.nn.RMSNorm)])
def test_constructor_matches_torch(ours, theirs):
    """Torch's parameters, names, order and defaults, then zero_centered."""
    a = list(inspect.signature(ours.__init__).parameters.values())
    b = list(inspect.signature(theirs.__init__).parameters.values())
    assert [(p.name, p.default) for p in a[:len(b)]] == \
        [(p.name, p.default) for p in b]
    assert [(p.name, p.default) for p in a[len(b):]] == \
        [("zero_centered", False)]


def test_zero_centered_modules_start_at_the_identity():
    x = torch.randn(5, 64)
    for m in (nt.RMSNorm(64, zero_centered=True),
              nt.LayerNorm(64, zero_centered=True)):
        assert torch.count_nonzero(m.weight) == 0
        ref = torch.nn.RMSNorm(64) if isinstance(m, nt.RMSNorm) \
            else torch.nn.LayerNorm(64)
        assert torch.allclose(m(x), ref(x))


def test_off_the_gpu_is_torch(autograd):
    """CPU tensors (and dtypes we have no kernels for) take torch's own
    functions: the same numbers, bit for bit."""
    torch.manual_seed(0)
    F = torch.nn.functional
    for dt in (torch.float32, torch.float64, torch.bfloat16):
        x = torch.randn(3, 7, 48, dtype=dt)
        w = torch.randn(48, dtype=dt)
        b = torch.randn(48, dtype=dt)
        assert torch.equal(nt.layer_norm(x, (48,), w, b, 1e-3),
                           F.layer_norm(x, (48,), w, b, 1e-3))
        assert torch.equal(nt.layer_norm(x, 48, w, b, zero_centered=True),
                           F.layer_norm(x, (48,), w + 1, b))
        assert torch.equal(nt.rms_norm(x, (48,), w), F.rms_norm(x, (48,), w))
        assert torch.equal(nt.rms_norm(x, [7, 48], None, 1e-6),
                           F.rms_norm(x, (7, 48), None, 1e-6))


def test_rms_norm_default_eps_is_torchs(autograd):
    """eps=None is what torch's rms_norm and RMSNorm use: the epsilon of
    the type they compute in, f32's for f16 / bf16 x (1.2e-7, not bf16's
    7.8e-3, which moves small rows' outputs by whole units of bf16); ours
    took x's own (torch's docs say so; its code does not)."""
    torch.manual_seed(4)
    for dt in (torch.bfloat16, torch.float16, torch.float32, torch.float64):
        x = (torch.randn(6, 64) * 0.01).to(dt)
        w = torch.randn(64).to(dt)
        want = torch.finfo(torch.float32 if dt in (
            torch.bfloat16, torch.float16) else dt).eps
        assert torch.equal(torch.nn.RMSNorm(64, dtype=dt)(x),
                           torch.nn.functional.rms_norm(x, (64,), None, want))
        assert torch.equal(nt.rms_norm(x, 64, w),
                           torch.nn.functional.rms_norm(x, (64,), w, want))
        assert torch.equal(nt.RMSNorm(64, dtype=dt)(x),
                           torch.nn.RMSNorm(64, dtype=dt)(x))


def test_shape_errors(autograd):
    x = torch.randn(4, 64)
    with pytest.raises(ValueError, match="trailing dimensions"):
        nt.layer_norm(x, (32,))
    with pytest.raises(ValueError, match="weight has shape"):
        nt.rms_norm(x, (64,), torch.ones(32))
    with pytest.raises(ValueError, match="bias has shape"):
        nt.layer_norm(x, (64,), torch.ones(64), torch.ones(63))


# --------------------------------------------------- rows without a copy

def test_rows_are_views_where_the_kernels_allow():
    n = 96
    wide = torch.randn(10, 6, n + 32)
    cases = {
        "contiguous 3-d": (torch.randn(4, 5, n), True),
        "column slice": (wide[:, 0, 16:16 + n], True),
        "column slice, 3-d": (wide[:, :, 16:16 + n], True),
        "every other row": (torch.randn(20, n)[::2], True),
        "one row": (torch.randn(n), True),
        "transposed": (torch.randn(n, 8).t(), False),
        "expanded": (torch.randn(1, n).expand(6, n), False),
        "inner stride 2": (torch.randn(7, 2 * n)[:, ::2], False),
        "rows of a permuted 3-d": (torch.randn(5, 4, n).transpose(0, 1),
                                   False),
    }
    for what, (x, view) in cases.items():
        r = nt._rows(x, n)
        assert r.shape == (x.numel() // n, n), what
        assert torch.equal(r, x.reshape(-1, n)), what
        assert (r.data_ptr() == x.data_ptr()) == view, what
        assert r.stride(1) == 1 and (r.shape[0] <= 1 or r.stride(0) >= n)


# -------------------------------------- real bodies, launches validated
#
# Two sets of op bodies: Python's (torch.py) and the C++ ones of
# libnormtorch.so (python/csrc/torch_ops.cpp; built here into a temporary
# directory when no built copy is found, a few seconds). The `validated`
# fixture runs each test on both.

_NATIVE = {}


def _native_ext():
    """The bound C++ bodies (nt._Native), or None where they cannot be
    built (no C++ compiler or torch headers; NORM_MLIR_REQUIRE_NATIVE=1
    makes that a failure)."""
    if "ext" not in _NATIVE:
        ext = nt._native
        if ext is None:
            path = _libs.find_optional("libnormtorch.so")
            if path is None:
                path = _build_native(tempfile.mkdtemp(prefix="normtorch-"))
            ext = nt._Native.bind(path) if path else None
        _NATIVE["ext"] = ext
    if _NATIVE["ext"] is None and os.environ.get("NORM_MLIR_REQUIRE_NATIVE"):
        pytest.fail("libnormtorch.so could not be built")
    return _NATIVE["ext"]


def _build_native(out_dir, what="build"):
    """build_ext.build (libnormtorch.so) or build_autograd (what) into
    out_dir; None without python/csrc, a compiler or torch's headers."""
    spec = importlib.util.spec_from_file_location(
        "build_ext", os.path.join(os.path.dirname(__file__), "..", "csrc",
                                  "build_ext.py"))
    if spec is None or not os.path.isfile(spec.origin):
        return None  # an installed package's tests without python/csrc
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    path = getattr(mod, what)(out_dir)
    atexit.register(shutil.rmtree, out_dir, True)
    return path


_AUTOGRAD = {}


def _autograd_ext():
    """The bound C++ autograd kernels (nt._CppAutograd): the package's,
    else built here into a temporary directory (about 20 s), or None."""
    if "ext" not in _AUTOGRAD:
        ext = nt._autograd_ext
        if ext is None:
            path = _libs.find_optional(nt._AUTOGRAD_LIB)
            if path is None or nt._autograd_stamp(path) != nt._torch_build():
                path = _build_native(tempfile.mkdtemp(prefix="normtorch-"),
                                     "build_autograd")
            ext = nt._CppAutograd.bind(path) if path else None
        _AUTOGRAD["ext"] = ext
    if _AUTOGRAD["ext"] is None and os.environ.get("NORM_MLIR_REQUIRE_NATIVE"):
        pytest.fail("libnormtorch_autograd.so could not be built")
    return _AUTOGRAD["ext"]


@contextlib.contextmanager
def autograd_kernels(kind):
    """The forward ops' Autograd kernels: "python" (register_autograd's
    formulas) or "cpp" (libnormtorch_autograd.so); the package's choice
    again afterwards."""
    ext = None
    if kind == "cpp":
        ext = _autograd_ext()
        if ext is None:
            pytest.skip("libnormtorch_autograd.so not available (no "
                        "compiler or torch headers)")
    nt._use_autograd(ext)
    try:
        yield kind
    finally:
        nt._use_autograd(nt._autograd_ext)


@pytest.fixture(params=["python", "cpp"])
def autograd(request):
    with autograd_kernels(request.param) as kind:
        yield kind


def _needs_native():
    ext = _native_ext()
    if ext is None:
        pytest.skip("libnormtorch.so not available (no compiler or torch "
                    "headers)")
    return ext


_DESC_DTYPES = {0: torch.float32, 1: torch.float16, 2: torch.bfloat16}


def _tensor_at(d):
    """The CPU tensor a NormrtTensor describes (its memory, not a copy)."""
    dtype = _DESC_DTYPES[d.dtype]
    sizes = list(d.sizes[:d.rank])
    strides = list(d.strides[:d.rank])
    if not d.data or 0 in sizes:
        return torch.empty(sizes, dtype=dtype)
    span = 1 + sum((s - 1) * st for s, st in zip(sizes, strides))
    nbytes = span * torch.empty((), dtype=dtype).element_size()
    buf = (ctypes.c_char * nbytes).from_address(d.data)
    base = torch.frombuffer(buf, dtype=torch.uint8).view(dtype)
    return base.as_strided(sizes, strides)


@functools.lru_cache(None)
def _dry_run_lib():
    """libnormrt through a CDLL of its own (its own argtypes: the package's
    binding keeps its)."""
    return ctypes.CDLL(_libs.runtime_path())


def _dry_run(handle, array, count, ws, ws_bytes):
    """normrt_dry_run's text: the launches normrt_launch would make."""
    f = _dry_run_lib().normrt_dry_run
    f.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32,
                  ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p,
                  ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t)]
    f.restype = ctypes.c_int
    n = ctypes.c_size_t()
    buf = ctypes.create_string_buffer(1 << 16)
    assert f(handle, array, count, ws or None, ws_bytes, buf, len(buf),
             ctypes.byref(n)) == 0
    assert n.value < len(buf)
    return buf.value.decode()


def normalized(plan):
    """A dry run with each address replaced by its order of first
    appearance: launches of two runs compare equal when they run the same
    kernels, grids and blocks on the same arguments (by position, size,
    stride and which buffer), wherever torch put the buffers."""
    seen = {}
    return re.sub(r"0x[0-9a-f]+",
                  lambda m: "p%d" % seen.setdefault(m.group(0), len(seen)),
                  plan)


class _Calls(list):
    """(spec, argument names, rows) per launch; .details per launch:
    "args" (name, data pointer, sizes, strides) and "plan" (the dry run);
    .after: functions called with (spec, [(name, tensor)]) after each
    validated launch (the emulation); .kind: "python" or "native"."""

    def __init__(self, kind):
        super().__init__()
        self.kind, self.details, self.after = kind, [], []

    def clear(self):
        super().clear()
        self.details.clear()

    def record(self, mod, pairs, array, count, ws, ws_bytes, rows):
        self.append((mod.spec, [name for name, _ in pairs], rows))
        self.details.append({
            "args": [(name, t.data_ptr(), tuple(t.shape), tuple(t.stride()))
                     for name, t in pairs],
            "plan": _dry_run(mod.handle, array, count, ws, ws_bytes)})
        for f in self.after:
            f(mod.spec, pairs)


@contextlib.contextmanager
def validation(kind, monkeypatch):
    """The ops' real bodies, Python's or C++ ("python" / "native"), on CPU
    tensors (registered for the CPU here; the package registers them for
    CUDA only), kernels compiled for sm_90 as on the GPU (nt._compiled),
    each launch replaced by normrt_validate against the manifest (every
    check normrt_launch makes: names, dtypes, shapes, strides, aliasing,
    the workspace; no driver). Records each launch (_Calls)."""
    calls = _Calls(kind)
    rt = _libs.runtime()

    def module(spec, device):
        mod = rt.load_manifest_only(nt._compiled(spec, "sm_90").manifest_text)
        mod.spec = spec
        return mod

    monkeypatch.setattr(nt, "_module", module)
    monkeypatch.setattr(nt, "_kernels_by_key", {})
    with accepting(["*"]):
        with _validation_bodies(kind, monkeypatch, calls, rt) as c:
            yield c


@contextlib.contextmanager
def accepting(types):
    """Tensors of these device types take our kernels (nt._accept_devices:
    the Python checks and the C++ eager calls'), as CUDA tensors do."""
    before = nt._accept_devices(types)
    try:
        yield
    finally:
        nt._accept_devices(before)


@contextlib.contextmanager
def _validation_bodies(kind, monkeypatch, calls, rt):
    """validation's bodies: Python's or C++'s registered for the CPU."""
    if kind == "python":
        def launch(mod, args, rows, device):
            ws_bytes = mod.workspace_bytes(rows)
            ws = torch.empty(ws_bytes + 16, dtype=torch.uint8)
            ptr = (ws.data_ptr() + 15) // 16 * 16 if ws_bytes else 0
            arr = nt._arguments(mod, args)
            mod.validate(arr, ptr, ws_bytes)
            calls.record(mod, args, arr.array, arr.count, ptr, ws_bytes, rows)

        monkeypatch.setattr(nt, "_launch", launch)
        lib = torch.library.Library("norm_mlir", "IMPL")
        for name, impl in nt._python_impls.items():
            lib.impl(name, impl, "CPU")
        nt._use_bodies(None)
        try:
            yield calls
        finally:
            lib._destroy()
            nt._use_bodies(nt._default_keys)
        return
    ext = _needs_native()
    errors = []

    def hook(handle, tensors, count, ws, ws_bytes):
        try:
            mods = {m.handle.value: m for m in ext.modules.values()}
            arr = ctypes.cast(tensors, ctypes.POINTER(_runtime.Tensor))
            pairs = [(arr[i].name.decode(), _tensor_at(arr[i]))
                     for i in range(count)]
            rows = dict(pairs).get("x", pairs[0][1]).shape[0]
            calls.record(mods[handle], pairs, tensors, count, ws, ws_bytes,
                         rows)
            return 0
        except BaseException as ex:  # noqa: BLE001 (raised at the end)
            errors.append(ex)
            return 1

    ext.clear()
    cb = nt.HOOK(hook)
    ext.set_mode(1, cb)
    reg = ext.register("CPU")
    nt._use_bodies(torch._C.DispatchKeySet(torch._C.DispatchKey.CPU))
    try:
        yield calls
    finally:
        ext.unregister(reg, "CPU")
        ext.set_mode(0)
        ext.clear()
        nt._use_bodies(nt._default_keys)
    if errors:
        raise errors[0]


@pytest.fixture(params=["python", "native"])
def validated(request, monkeypatch):
    with validation(request.param, monkeypatch) as calls:
        yield calls


def _leaf(t):
    return None if t is None else t.detach().clone().requires_grad_(True)


LN_CASES = [  # x shape, normalized shape, x / weight / bias dtypes, zc
    ((3, 37, 64), (64,), "bf16", "bf16", "bf16", False),
    ((301, 1000), (1000,), "f32", "f32", "f32", False),
    ((2, 50, 768), (768,), "bf16", "f32", "f32", False),
    ((2, 50, 768), (768,), "bf16", "f32", None, False),
    ((2, 50, 768), (768,), "f16", None, None, False),
    ((2, 50, 768), (768,), "bf16", "f32", "f32", True),
    ((5, 7, 16, 48), (16, 48), "bf16", "bf16", "bf16", False),
    ((768,), (768,), "f16", "f16", "f16", False),
]
TD = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


def _make(shape, nshape, xd, wd, bd):
    x = torch.randn(shape).to(TD[xd])
    w = None if wd is None else torch.randn(nshape).to(TD[wd])
    b = None if bd is None else torch.randn(nshape).to(TD[bd])
    return x, w, b


@pytest.mark.parametrize("case", LN_CASES)
def test_layer_norm_launches_validate(validated, case):
    shape, nshape, xd, wd, bd, zc = case
    x, w, b = (_leaf(t) for t in _make(shape, nshape, xd, wd, bd))
    y = nt.layer_norm(x, nshape, w, b, 1e-5, zero_centered=zc)
    assert y.shape == x.shape and y.dtype == x.dtype
    y.backward(torch.randn_like(y))
    (fs, fnames, m), (bs, bnames, bm) = validated
    n = math.prod(nshape)
    assert m == bm == x.numel() // n
    assert (fs["op"], bs["op"]) == ("layer_norm", "layer_norm_grad")
    for s in (fs, bs):
        assert s["n"] == n and s["dtype"] == xd and s["zero_centered"] == zc
        assert s["weight"] == (wd is not None) and s["bias"] == (bd is not None)
        assert s.get("weight_dtype", xd) == (wd or xd)
    assert fnames[:4] == ["x", "y", "mean", "rstd"]
    assert ("weight" in fnames) == (w is not None)
    assert ("dbias" in bnames) == (b is not None)
    for t in (x, w, b):
        if t is not None:
            assert t.grad.shape == t.shape and t.grad.dtype == t.dtype


@pytest.mark.parametrize("case", [c for c in LN_CASES if c[4] is None or
                                  c[3] == c[4]])
def test_rms_norm_launches_validate(validated, case):
    shape, nshape, xd, wd, _, zc = case
    x, w, _ = (_leaf(t) for t in _make(shape, nshape, xd, wd, None))
    y = nt.rms_norm(x, nshape, w, None, zero_centered=zc)
    y.backward(torch.randn_like(y))
    (fs, fnames, _), (bs, bnames, _) = validated
    # torch's default eps: f32's for f16 / bf16 (its compute type).
    assert fs["eps"] == torch.finfo(torch.float32).eps
    assert (fs["op"], bs["op"]) == ("rms_norm", "rms_norm_grad")
    assert ("dweight" in bnames) == (w is not None)
    assert x.grad.shape == x.shape


def test_strided_rows_reach_the_kernels_uncopied(validated):
    """A column slice of a wider tensor goes to the forward and backward
    kernels as strided rows (the runtime accepts the stride), not copied."""
    n = 512
    wide = torch.randn(64, n + 64, dtype=torch.bfloat16)
    x = wide[:, 32:32 + n].requires_grad_(True)
    w = torch.randn(n, dtype=torch.bfloat16, requires_grad=True)
    nt.rms_norm(x, (n,), w, 1e-6).sum().backward()
    xs = [a for d in validated.details for a in d["args"] if a[0] == "x"]
    assert len(xs) == 2
    assert all(p == x.data_ptr() and st == (n + 64, 1) for _, p, _, st in xs)


def test_rejected_launches_raise(validated):
    """The validation is real, also through the reused descriptors (the
    Python bodies) and the C++ bodies' own: a weight of another dtype than
    the compiled kernels' is refused, after a launch of the same op went
    through; a short rstd too."""
    from norm_mlir._runtime import RuntimeLaunchError
    x = torch.randn(8, 64, dtype=torch.bfloat16)
    w = torch.randn(64, dtype=torch.bfloat16)
    if validated.kind == "native":
        y, r = nt._rms_fwd_body(x, w, 64, 1e-6, False)
        dy = torch.randn_like(x)
        nt._rms_bwd_body(dy, x, r, w, 64, False)
        with pytest.raises(RuntimeError, match="normrt_validate.*rstd"):
            nt._rms_bwd_body(dy, x, r[:4], w, 64, False)
        nt._rms_bwd_body(dy, x, r, w, 64, False)  # and the good one again
        assert len(validated) == 3
        return
    spec = nt._spec("rms_norm", 64, x, w, False, 1e-6, False)
    mod = nt._module(spec, x.device)
    y, r = torch.empty_like(x), torch.empty(8)
    good = [("x", x), ("y", y), ("rstd", r), ("weight", w)]
    nt._launch(mod, good, 8, x.device)
    with pytest.raises(RuntimeLaunchError, match="weight"):
        nt._launch(mod, good[:3] + [("weight", w.float())], 8, x.device)
    with pytest.raises(RuntimeLaunchError, match="rstd"):
        nt._launch(mod, good[:2] + [("rstd", r[:4]), ("weight", w)], 8,
                   x.device)
    nt._launch(mod, good, 8, x.device)  # and the good one again


def test_descriptors_are_rewritten_per_call():
    """The Python bodies' reused descriptor arrays carry each call's
    pointers, sizes and strides; another dtype, rank or name builds them
    again."""
    a = torch.randn(6, 32)
    b = torch.randn(9, 64)[:, :32]
    key = object()

    def first(arr):
        t = arr.array[0]
        return (t.name, t.data, t.dtype, t.rank, list(t.sizes[:t.rank]),
                list(t.strides[:t.rank]))

    arr1 = nt._arguments(key, [("x", a)])
    assert first(arr1) == (b"x", a.data_ptr(), 0, 2, [6, 32], [32, 1])
    arr2 = nt._arguments(key, [("x", b)])
    assert arr2 is arr1
    assert first(arr2) == (b"x", b.data_ptr(), 0, 2, [9, 32], [64, 1])
    for other, want in (([("x", a.half())], (b"x", 1, 2)),
                        ([("x", a[0])], (b"x", 0, 1)),
                        ([("y", a)], (b"y", 0, 2))):
        arr3 = nt._arguments(key, other)
        assert arr3 is not arr1
        t = arr3.array[0]
        assert (t.name, t.dtype, t.rank) == want
    assert nt._arguments(object(), [("x", a)]) is not arr1  # another key


def test_ops_refuse_other_devices(validated):
    """Python's bodies raise ValueError, the C++ ones RuntimeError (what a
    C++ exception becomes), with the same words."""
    x = torch.randn(4, 64)
    with pytest.raises((ValueError, RuntimeError), match="cpu and meta; "
                       "all must be on one device"):
        nt._ln_fwd_body(x, torch.empty(64, device="meta"), None, 64, 1e-5,
                        False)
    with pytest.raises((ValueError, RuntimeError), match="one device"):
        nt._rms_bwd_body(x, x, torch.empty(4, device="meta"), None, 64,
                         False)


def test_ops_have_no_cpu_kernel():
    """Called directly on CPU tensors, an op says so (the functions and
    modules take torch's path there instead)."""
    with pytest.raises(NotImplementedError, match="CPU"):
        nt._rms_fwd(torch.randn(4, 64), None, 64, 1e-6, False)


# ------------------------------------------------ fake CUDA tensors

@pytest.fixture
def meta_is_ours(monkeypatch):
    """Meta tensors take our registered ops (their fake implementations),
    as torch.compile does, also outside make_fx: autograd's engine runs
    them on the CPU, where fake CUDA tensors' backward needs a CUDA
    device."""
    monkeypatch.setattr(nt, "_direct", lambda *ts: False)
    with accepting(["cuda", "meta"]):
        yield


def _trace(fn, *shapes_dtypes):
    """make_fx of fn, forward and backward, on meta tensors: the graph
    torch.compile's AOTAutograd would get, and the outputs' metadata."""
    args = [torch.empty(s, device="meta", dtype=d, requires_grad=True)
            for s, d in shapes_dtypes]
    gm = make_fx(fn)(*args)
    outs = fn(*args)
    targets = [str(nd.target) for nd in gm.graph.nodes
               if nd.op == "call_function"]
    return targets, args, outs


def test_fake_cuda_tensors_take_our_ops(autograd):
    """CUDA tensors (here fake ones: no GPU) dispatch to our forward ops,
    as torch.compile sees them."""
    with FakeTensorMode():
        x = torch.empty(4, 100, 256, device="cuda", dtype=torch.bfloat16)
        w = torch.empty(256, device="cuda")
        gm = make_fx(lambda x, w: (nt.layer_norm(x, 256, w),
                                   nt.rms_norm(x, (100, 256))))(x, w)
        y, z = nt.layer_norm(x, 256, w), nt.rms_norm(x, (100, 256))
    targets = [str(nd.target) for nd in gm.graph.nodes
               if nd.op == "call_function" and "getitem" not in
               str(nd.target)]
    assert targets == ["norm_mlir.layer_norm_fwd.default",
                       "norm_mlir.rms_norm_fwd.default"], targets
    assert y.shape == z.shape == x.shape and y.is_cuda and z.is_cuda


@pytest.mark.parametrize("zc", [False, True])
def test_fake_layer_norm_traces_our_ops(meta_is_ours, autograd, zc):
    n, bf, f32 = 768, torch.bfloat16, torch.float32

    def fwd_bwd(x, w, b):
        y = nt.layer_norm(x, (n,), w, b, zero_centered=zc)
        return (y,) + torch.autograd.grad(y, (x, w, b), torch.ones_like(y))

    targets, (x, w, b), (y, gx, gw, gb) = _trace(
        fwd_bwd, ((2, 50, n), bf), ((n,), f32), ((n,), f32))
    ours = [t for t in targets if t.startswith("norm_mlir.")]
    assert ours == ["norm_mlir.layer_norm_fwd.default",
                    "norm_mlir.layer_norm_bwd.default"], targets
    assert not any("native_layer_norm" in t for t in targets)
    assert y.shape == x.shape and y.dtype == bf and y.is_meta
    assert gx.shape == x.shape and gx.dtype == bf
    assert gw.shape == (n,) and gw.dtype == f32
    assert gb.shape == (n,) and gb.dtype == f32


def test_fake_rms_norm_traces_our_ops(meta_is_ours, autograd):
    def fwd_bwd(x, w):
        y = nt.rms_norm(x, (16, 48), w)
        return (y,) + torch.autograd.grad(y, (x, w), torch.ones_like(y))

    targets, (x, w), (y, gx, gw) = _trace(
        fwd_bwd, ((5, 7, 16, 48), torch.float16), ((16, 48), torch.float16))
    ours = [t for t in targets if t.startswith("norm_mlir.")]
    assert ours == ["norm_mlir.rms_norm_fwd.default",
                    "norm_mlir.rms_norm_bwd.default"], targets
    assert gx.shape == x.shape and gw.shape == w.shape


def test_fake_outputs_match_the_real_bodies(validated):
    """Each fake implementation gives the shapes, dtypes and strides the
    real body returns (what torch.library.opcheck's fake check compares;
    the GPU run does opcheck itself)."""
    n = 768
    wide = torch.randn(100, n + 64, dtype=torch.bfloat16)
    x = wide[:, 32:32 + n]
    w = torch.randn(n)
    b = torch.randn(n)
    dy = torch.randn(100, n, dtype=torch.bfloat16)
    y, mean, rstd = nt._ln_fwd(x, w, b, n, 1e-5, False)
    _, rrstd = nt._rms_fwd(x, w, n, 1e-5, False)
    calls = {
        "ln_fwd": (nt._ln_fwd, (x, w, b, n, 1e-5, False)),
        "rms_fwd": (nt._rms_fwd, (x, w, n, 1e-5, False)),
        "ln_bwd": (nt._ln_bwd, (dy, x, mean, rstd, w, True, n, False)),
        "ln_bwd no bias": (nt._ln_bwd, (dy, x, mean, rstd, w, False, n,
                                        False)),
        "rms_bwd": (nt._rms_bwd, (dy, x, rrstd, w, n, False)),
        "rms_bwd no weight": (nt._rms_bwd, (dy, x, rrstd, None, n, False)),
    }
    for what, (op, args) in calls.items():
        real = op(*args)
        with FakeTensorMode(allow_non_fake_inputs=True) as mode:
            fargs = [mode.from_tensor(a) if isinstance(a, torch.Tensor)
                     else a for a in args]
            fake = op(*fargs)
        for r, f in zip(real, fake):
            assert (r.shape, r.dtype, r.stride()) == \
                (f.shape, f.dtype, f.stride()), what


# ------------------------------------------- eager path and registered ops

def test_eager_path_launches_what_the_ops_launch(validated, autograd,
                                                  monkeypatch):
    """The straight eager path (autograd.Function over the op bodies) and
    the registered ops (what torch.compile runs) launch the same kernels
    on the same arguments, forward and backward."""
    torch.manual_seed(0)
    x0 = torch.randn(3, 20, 256, dtype=torch.bfloat16)
    w0, b0 = torch.randn(256), torch.randn(256)
    g = torch.randn(3, 20, 256, dtype=torch.bfloat16)

    def run():
        x, w, b = _leaf(x0), _leaf(w0), _leaf(b0)
        nt.layer_norm(x, 256, w, b).backward(g)
        nt.rms_norm(x, 256, w).backward(g)
        with torch.no_grad():
            nt.layer_norm(x, 256, w, b)
        return [c for c in validated]

    eager = run()
    eager_plans = [normalized(d["plan"]) for d in validated.details]
    validated.clear()
    monkeypatch.setattr(nt, "_direct", lambda *ts: False)
    ops = run()
    assert [c[0]["op"] for c in eager] == [
        "layer_norm", "layer_norm_grad", "rms_norm", "rms_norm_grad",
        "layer_norm"]
    assert eager == ops
    assert eager_plans == [normalized(d["plan"]) for d in validated.details]


# ------------------------------------------- the C++ bodies against Python's

_WIDE = torch.randn(40, 3, 448)
SAME_CASES = {  # x, normalized shape, weight / bias dtypes ("x": x's), zc
    "bf16, f32 parameters": (torch.randn(3, 20, 256).bfloat16(), (256,),
                             "f32", "f32", False),
    "f32": (torch.randn(301, 1000), (1000,), "x", "x", False),
    "f16, no parameters": (torch.randn(7, 384).half(), (384,), None, None,
                           False),
    "bias alone": (torch.randn(6, 192), (192,), None, "x", False),
    "zero-centred, no bias": (torch.randn(2, 9, 512).bfloat16(), (512,),
                              "f32", None, True),
    "2-d normalized shape": (torch.randn(5, 7, 16, 48).bfloat16(), (16, 48),
                             "x", "x", False),
    "rank 1": (torch.randn(768).half(), (768,), "x", "x", False),
    "column slice (strided rows)": (_WIDE[:, 0, 64:64 + 320], (320,), "x",
                                    "x", False),
    "column slice, 3-d": (_WIDE[:, :, 64:64 + 320], (320,), "x", "x", False),
    "every other row": (torch.randn(30, 128)[::2], (128,), "x", "x", False),
    "transposed (copied)": (torch.randn(128, 12).t(), (128,), "x", "x",
                            False),
    "inner stride 2 (copied)": (torch.randn(9, 256)[:, ::2], (128,), "x",
                                "x", False),
    "permuted 3-d (copied)": (torch.randn(5, 4, 96).transpose(0, 1), (96,),
                              "x", "x", False),
}


def _same_case_run(kind, monkeypatch, case):
    """Forward and backward of both norms on `case` under one path, with
    the launches emulated: (calls, normalized plans, outputs, gradients)."""
    x0, shape, wd, bd, zc = case
    torch.manual_seed(11)
    dt = {"x": x0.dtype, "f32": torch.float32, None: None}
    w0 = None if wd is None else torch.randn(shape).to(dt[wd])
    b0 = None if bd is None else torch.randn(shape).to(dt[bd])
    g = torch.randn(x0.shape).to(x0.dtype)
    out = []
    with monkeypatch.context() as mp, validation(kind, mp) as calls:
        calls.after.append(_emulate)
        # x keeps its layout (a clone would make strided rows contiguous).
        x, w, b = x0.detach().requires_grad_(True), _leaf(w0), _leaf(b0)
        y = nt.layer_norm(x, shape, w, b, 1e-5, zero_centered=zc)
        y.backward(g)
        out += [y, x.grad] + [t.grad for t in (w, b) if t is not None]
        if bd is None:
            x, w = x0.detach().requires_grad_(True), _leaf(w0)
            y = nt.rms_norm(x, shape, w, 1e-6, zero_centered=zc)
            y.backward(g)
            out += [y, x.grad] + ([w.grad] if w is not None else [])
        with torch.no_grad():
            out.append(nt.layer_norm(x0, shape, w0, b0, 1e-5,
                                     zero_centered=zc))
        plans = [normalized(d["plan"]) for d in calls.details]
        return list(calls), plans, out


@pytest.mark.parametrize("what", list(SAME_CASES))
def test_cpp_and_python_bodies_launch_the_same(monkeypatch, what):
    """The C++ bodies make exactly the Python bodies' launches: the same
    kernels, grids, blocks and arguments (normrt_dry_run's plan, addresses
    by order of first appearance: the same buffer in the same place),
    rows passed uncopied in both or copied in both; and with the kernels
    emulated, the same outputs and gradients, bit for bit."""
    _needs_native()
    case = SAME_CASES[what]
    py = _same_case_run("python", monkeypatch, case)
    cc = _same_case_run("native", monkeypatch, case)
    assert py[0] == cc[0]
    assert py[1] == cc[1]
    x, n = case[0], math.prod(case[1])
    strides = re.search(r"launch \S+ .*?: \[p0 p0 0 (\d+) (\d+) (\d+) 1\]",
                        py[1][0]).groups()
    assert int(strides[2]) == nt._rows(x, n).stride(0)
    for a, b in zip(py[2], cc[2]):
        assert a.shape == b.shape and a.dtype == b.dtype and \
            a.stride() == b.stride()
        assert torch.equal(a, b)
    # The layouts reach the kernels uncopied, or copied, as labelled.
    assert ("(copied)" not in what) == (
        nt._rows(x, n).data_ptr() == x.data_ptr())


def test_workspace_follows_the_rows(validated):
    """One backward module at changing M: each launch gets the workspace
    its M needs (the C++ bodies remember the last M's bytes per thread)."""
    n, ms = 256, (8, 3000, 8, 1, 3000, 0)
    w = torch.randn(n)
    for m in ms:
        x = torch.randn(m, n)
        rstd = torch.rand(m) + 0.5
        nt._rms_bwd_body(torch.randn(m, n), x, rstd, w, n, False)
    mod = nt._module(nt._spec("rms_norm_grad", n, x, w, False, None, False),
                     x.device)
    got = [re.match(r"m (\d+) groups \d+ workspace (\d+)",
                    d["plan"]).groups() for d in validated.details]
    assert got == [(str(m), str(mod.workspace_bytes(m) if m else 0))
                   for m in ms]
    assert len(set(got)) == 4


def test_cpp_table_resolves_each_key_once(monkeypatch):
    """The C++ table asks Python once per (op, N, dtypes, flags, eps,
    device); normtorch_clear forgets them."""
    ext = _needs_native()
    with validation("native", monkeypatch) as calls:
        asked = []
        module = nt._module
        monkeypatch.setattr(nt, "_module", lambda spec, device: (
            asked.append(spec["op"]), module(spec, device))[1])
        x = torch.randn(4, 64, requires_grad=True)
        w = torch.randn(64, requires_grad=True)
        for _ in range(3):
            nt.layer_norm(x, 64, w).sum().backward()
            nt.rms_norm(x, 64, w, 1e-6).sum().backward()
        nt.rms_norm(x, 64, w, 1e-5).sum().backward()  # another eps
        assert asked == ["layer_norm", "layer_norm_grad", "rms_norm",
                         "rms_norm_grad", "rms_norm"]
        assert ext.lib.normtorch_cached() == 5 and len(ext.modules) == 5
        assert len(calls) == 14
        ext.clear()
        assert ext.lib.normtorch_cached() == 0 and not ext.modules
        nt.layer_norm(x, 64, w)
        assert asked[-1] == "layer_norm" and len(asked) == 6


def test_row_buckets_match_the_tuning_tables():
    """The tuning table's M ranges end at the compiler's kTuningRowEdges;
    the Python and C++ kernel tables bucket M by the same edges (three
    copies of one fact, tied here), and every entry of the embedded sm_90
    table starts and ends on them."""
    root = os.path.join(os.path.dirname(__file__), "..", "..")

    def edges_in(path, name):
        with open(os.path.join(root, path)) as f:
            text = f.read()
        m = re.search(name + r"\[\] = \{([0-9, ]+)\}", text)
        return tuple(int(v) for v in m.group(1).split(","))

    assert edges_in("lib/Conversion/NormToGPU/Tuning.h",
                    "kTuningRowEdges") == nt._ROW_EDGES
    assert edges_in("python/csrc/torch_ops.cpp", "kRowEdges") == \
        nt._ROW_EDGES
    with open(os.path.join(root, "lib/Conversion/NormToGPU/tuning/"
                                 "sm_90.json")) as f:
        entries = json.load(f)["entries"]
    assert entries
    for e in entries:
        lo, hi = e.get("rows", [1, 0])
        assert lo == 1 or lo - 1 in nt._ROW_EDGES, e
        assert hi == 0 or hi in nt._ROW_EDGES, e
    assert [nt._rows_hint(m) for m in (0, 1, 128, 129, 512, 513, 2048,
                                       2049, 8192, 8193, 10 ** 9)] == \
        [1, 1, 1, 129, 129, 513, 513, 2049, 2049, 8193, 8193]


@pytest.mark.parametrize("kind", ["python", "native"])
def test_kernels_per_row_bucket(kind, monkeypatch):
    """One compile per (op, N, ..., M bucket): M = 100 and 128 share one
    module, M = 129 and 500 another, each compiled with its bucket's first
    M as the `rows` hint; both bodies, Python's and C++'s."""
    with validation(kind, monkeypatch):
        specs = []
        module = nt._module
        monkeypatch.setattr(nt, "_module", lambda spec, device: (
            specs.append(dict(spec)), module(spec, device))[1])
        w = torch.randn(64)
        for m in (100, 128, 129, 500, 100):
            nt.rms_norm(torch.randn(m, 64), 64, w, 1e-6)
        assert [s.get("rows") for s in specs] == [1, 129]
        compiled = []
        real = nt._cache.get
        monkeypatch.setattr(nt._cache, "get", lambda **kw: (
            compiled.append(kw.get("options")), real(**kw))[1])
        nt._compiled(dict(specs[1]), "sm_90")
        assert compiled == [{"rows": 129}]


def test_cpp_bodies_report_python_errors(monkeypatch):
    """A miss whose compile (or load) fails raises at the call, with
    Python's message; the next call asks again."""
    _needs_native()
    with validation("native", monkeypatch):
        def broken(spec, device):
            raise norm_mlir.CompileError("no kernels for this one")

        monkeypatch.setattr(nt, "_module", broken)
        x = torch.randn(4, 64)
        with pytest.raises(RuntimeError, match="CompileError: no kernels "
                           "for this one"):
            nt.layer_norm(x, 64)
        with pytest.raises(RuntimeError, match="no kernels for this one"):
            nt._ln_fwd(x, None, None, 64, 1e-5, False)


_FAKE_DRIVER_RUN = """
import sys, torch
import norm_mlir.torch as nt
from norm_mlir import _libs
kind, ext_path = sys.argv[1], sys.argv[2]
rt = _libs.runtime()


def module(spec, device):  # loaded through the fake driver, as on a GPU
    k = nt._compiled(spec, "sm_90")
    return rt.load(k.image, k.manifest_text)


nt._module = module
nt._accept_devices(["*"])
if kind == "python":
    nt._raw_stream = lambda idx: 0
    torch.cuda.current_device = lambda: 0
    lib = torch.library.Library("norm_mlir", "IMPL")
    for name, impl in nt._python_impls.items():
        lib.impl(name, impl, "CPU")
    nt._use_bodies(None)
else:
    nt._Native.bind(ext_path).register("CPU")
    nt._use_bodies(torch._C.DispatchKeySet(torch._C.DispatchKey.CPU))
torch.manual_seed(0)
for m, n in ((8, 1024), (300, 768), (0, 256)):
    x = torch.randn(m, n, dtype=torch.bfloat16, requires_grad=True)
    w = torch.randn(n, requires_grad=True)
    b = torch.randn(n, requires_grad=True)
    g = torch.randn(m, n, dtype=torch.bfloat16)
    nt.layer_norm(x, (n,), w, b).backward(g)
    nt.rms_norm(x, (n,), w.bfloat16().detach().requires_grad_()).backward(g)
print("done", kind, flush=True)
"""


def test_cpp_bodies_launch_through_the_driver():
    """Launch mode, not validation: the C++ bodies call normrt_launch
    (workspace from torch's allocator, the stream) and the CUDA driver
    launches what the Python bodies' launches do. The repository's fake
    driver (libnormrt-fake-cuda.so, $NORMRT_LIBCUDA) prints each
    cuLaunchKernel; both paths, in fresh processes, print the same."""
    ext = _needs_native()
    fake = _libs.find_optional("libnormrt-fake-cuda.so")
    if fake is None:
        pytest.skip("no libnormrt-fake-cuda.so (a build tree's lib/)")
    out = {}
    for kind in ("python", "native"):
        env = dict(os.environ, NORMRT_LIBCUDA=fake, NORM_MLIR_NATIVE="0",
                   PYTHONPATH=os.pathsep.join(
                       [os.path.dirname(os.path.dirname(nt.__file__))] +
                       os.environ.get("PYTHONPATH", "").split(os.pathsep)))
        r = subprocess.run([sys.executable, "-c", _FAKE_DRIVER_RUN, kind,
                            ext.path], env=env, capture_output=True,
                           text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]
        assert "done " + kind in r.stdout
        out[kind] = [ln for ln in r.stdout.splitlines()
                     if ln.startswith("fake cuLaunchKernel")]
    # 2 sizes x (LN forward 1 + backward 2, RMS 1 + 2) launches; M = 0
    # launches nothing (its dweight / dbias are cleared).
    assert len(out["python"]) == 12, out["python"]
    assert out["python"] == out["native"]


def test_package_binds_the_cpp_bodies(tmp_path):
    """With libnormtorch.so beside the other two libraries, importing
    norm_mlir.torch registers its bodies as the ops' CUDA kernels and the
    eager path calls them; NORM_MLIR_NATIVE=0 keeps the Python bodies."""
    ext = _needs_native()
    lib = tmp_path / "lib"
    lib.mkdir()
    for name, path in (("libnormcompile.so", _libs.find("libnormcompile.so")),
                       ("libnormrt.so", _libs.runtime_path()),
                       ("libnormtorch.so", ext.path)):
        os.symlink(path, lib / name)
    code = ("import torch, norm_mlir.torch as nt\n"
            "dump = torch._C._dispatch_dump('norm_mlir::layer_norm_fwd')\n"
            "cuda = [l for l in dump.splitlines() if l.startswith('CUDA:')]\n"
            "print(nt._native is not None, type(nt._ln_bwd_body).__name__, "
            "cuda[0].split()[3].rsplit('/', 1)[-1].split(':')[0])\n")
    got = []
    for flag in ("1", "0"):
        env = dict(os.environ, NORM_MLIR_LIB_DIR=str(lib),
                   NORM_MLIR_NATIVE=flag, PYTHONPATH=os.pathsep.join(
                       [os.path.dirname(os.path.dirname(nt.__file__))] +
                       os.environ.get("PYTHONPATH", "").split(os.pathsep)))
        r = subprocess.run([sys.executable, "-c", code], env=env,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]
        got.append(r.stdout.split())
    assert got == [["True", "partial", "torch_ops.cpp"],
                   ["False", "function", "torch.py"]]


def test_cpp_bodies_refuse_bad_shapes(validated):
    """What x.view / reshape refuse in the Python bodies, the C++ ones
    refuse too (no launch)."""
    x = torch.randn(8, 100)
    with pytest.raises(RuntimeError):
        nt._ln_fwd_body(x, None, None, 64, 1e-5, False)
    with pytest.raises(RuntimeError):
        nt._rms_fwd_body(x, torch.randn(99), 100, 1e-5, False)
    assert validated == []


def test_outputs_are_not_views(validated):
    """y (and dx) are tensors of their own, as torch's are: in-place ops
    on them work under autograd."""
    x = torch.randn(4, 5, 64, requires_grad=True)
    w = torch.randn(64, requires_grad=True)
    for y in (nt.layer_norm(x, 64, w), nt.rms_norm(x, 64, w)):
        assert y._base is None and y.shape == x.shape and y.is_contiguous()
        y.mul_(2)
        y.sum().backward()
    assert x.grad._base is None


def test_direct_path_only_for_plain_eager_tensors():
    x = torch.randn(4, 64)
    assert nt._direct(x, None, torch.nn.Parameter(torch.randn(64)))
    with FakeTensorMode():
        assert not nt._direct(torch.empty(4, 64))

    class Sub(torch.Tensor):
        pass

    assert not nt._direct(x.as_subclass(Sub))


# ------------------------------------- the eager calls (C++ checks)

def test_eager_calls_are_one_cpp_op(validated):
    """With the C++ autograd kernels, layer_norm(), rms_norm() and the
    modules reach the kernels through one op call each
    (norm_mlir::_eager_layer_norm / _eager_rms_norm: the checks in C++);
    with the Python formulas they call none of it."""
    n = 64
    x = torch.randn(3, 5, n, dtype=torch.bfloat16, requires_grad=True)
    w = torch.randn(n, dtype=torch.bfloat16, requires_grad=True)
    b = torch.randn(n, dtype=torch.bfloat16, requires_grad=True)
    ln, rms = nt.LayerNorm(n, dtype=torch.bfloat16), nt.RMSNorm(
        n, dtype=torch.bfloat16)
    for kind in ("cpp", "python"):
        with autograd_kernels(kind):
            with torch.profiler.profile() as prof:
                ys = [nt.layer_norm(x, (n,), w, b), nt.rms_norm(x, [n], w),
                      ln(x), rms(x)]
            names = [e.name for e in prof.events()
                     if e.name.startswith("norm_mlir::")]
            eager = [m for m in names if "_eager_" in m]
            if kind == "cpp":
                assert eager == ["norm_mlir::_eager_layer_norm",
                                 "norm_mlir::_eager_rms_norm"] * 2, names
            else:
                assert eager == [], names
            validated.clear()
            torch.autograd.backward(ys, [torch.ones_like(y) for y in ys])
            assert [c[0]["op"] for c in validated] == [
                "rms_norm_grad", "layer_norm_grad", "rms_norm_grad",
                "layer_norm_grad"]
            x.grad = w.grad = b.grad = None


def _value_errors(*calls):
    """The ValueError message of each call (each must raise one)."""
    msgs = []
    for call in calls:
        with pytest.raises(ValueError) as got:
            call()
        msgs.append(str(got.value))
    return msgs


def test_eager_calls_check_as_python_does(validated, autograd):
    """The eager calls' C++ checks decide as the Python ones (the other
    kind of the autograd fixture): the same errors, word for word; the
    default epsilon; empty shapes and other dtypes to torch's functions;
    shapes as ints, lists and torch.Size."""
    x = torch.randn(4, 64)
    msgs = _value_errors(
        lambda: nt.layer_norm(x, (32,)),
        lambda: nt.layer_norm(x, (2, 4, 64)),
        lambda: nt.rms_norm(x, (64,), torch.ones(32)),
        lambda: nt.LayerNorm(64)(torch.randn(4, 32)),
        lambda: nt.layer_norm(x, (64,), torch.ones(64), torch.ones(63)))
    assert msgs == [
        "normalized_shape [32] does not match the trailing dimensions of "
        "x [4, 64]",
        "normalized_shape [2, 4, 64] does not match the trailing "
        "dimensions of x [4, 64]",
        "weight has shape [32], expected [64]",
        "normalized_shape [64] does not match the trailing dimensions of "
        "x [4, 32]",
        "bias has shape [63], expected [64]"], msgs
    # Empty normalized_shape: torch's functions, and their error.
    for call in (lambda: nt.layer_norm(x, ()), lambda: nt.rms_norm(x, [])):
        with pytest.raises(RuntimeError, match="at least 1-dimensional"):
            call()
    assert not validated
    # Ours: the default epsilon of rms_norm is f32's for every dtype.
    for dt in (torch.bfloat16, torch.float16, torch.float32):
        validated.clear()
        nt.rms_norm(x.to(dt), 64, torch.randn(64).to(dt))
        nt.RMSNorm(64, dtype=dt)(x.to(dt))
        assert [c[0]["eps"] for c in validated] == [
            torch.finfo(torch.float32).eps] * 2
    validated.clear()
    for shape in (64, [64], (64,), torch.Size([64])):
        nt.layer_norm(x, shape, eps=1e-3)
        nt.layer_norm(x, shape, eps=1)  # an int epsilon
    assert [c[0]["eps"] for c in validated] == [1e-3, 1.0] * 4
    # f64 and int64 tensors: torch's (nothing launched).
    validated.clear()
    xd = torch.randn(4, 64, dtype=torch.float64)
    assert torch.equal(nt.layer_norm(xd, 64),
                       torch.nn.functional.layer_norm(xd, (64,)))
    assert not validated


def test_eager_add_calls_are_one_cpp_op(validated):
    """add_layer_norm() / add_rms_norm() with a residual: with the C++
    autograd kernels one op call each (norm_mlir::_eager_add_layer_norm /
    _eager_add_rms_norm: the checks in C++, then the fused forward); with
    the Python formulas none of it. Both launch the same fused forwards
    and the same backwards (launches validated, not run)."""
    n = 64
    torch.manual_seed(5)
    x0 = torch.randn(3, 5, n, dtype=torch.bfloat16)
    r0 = torch.randn(3, 5, n, dtype=torch.bfloat16)
    w0 = torch.randn(n, dtype=torch.bfloat16)
    b0 = torch.randn(n, dtype=torch.bfloat16)
    for kind in ("cpp", "python"):
        x, r, w, b = (t.clone().requires_grad_(True)
                      for t in (x0, r0, w0, b0))
        with autograd_kernels(kind):
            validated.clear()
            with torch.profiler.profile() as prof:
                outs = [nt.add_layer_norm(x, r, (n,), w, b),
                        nt.add_rms_norm(x, r, [n], w)]
            names = [e.name for e in prof.events()
                     if e.name.startswith("norm_mlir::")]
            eager = [m for m in names if "_eager_" in m]
            assert eager == (["norm_mlir::_eager_add_layer_norm",
                              "norm_mlir::_eager_add_rms_norm"]
                             if kind == "cpp" else []), names
            assert [c[0]["op"] for c in validated] == [
                "layer_norm", "rms_norm"]
            assert all(c[0].get("residual") for c in validated), validated
            validated.clear()
            ys = [t for pair in outs for t in pair]
            torch.autograd.backward(ys, [torch.ones_like(y) for y in ys])
            assert sorted(c[0]["op"] for c in validated) == [
                "layer_norm_grad", "rms_norm_grad"], validated
            assert all(c[0].get("dresidual") for c in validated), validated


def test_eager_add_calls_check_as_python_does(validated, autograd):
    """The residual forms' C++ checks decide as the Python ones: the same
    errors; a residual of another dtype or shape, and an empty shape, take
    torch's add and then layer_norm() / rms_norm() of h."""
    x = torch.randn(4, 64)
    msgs = _value_errors(
        lambda: nt.add_layer_norm(x, x, (32,)),
        lambda: nt.add_rms_norm(x, x, (64,), torch.ones(32)),
        lambda: nt.add_layer_norm(x, x, (64,), torch.ones(64),
                                  torch.ones(63)))
    assert msgs == [
        "normalized_shape [32] does not match the trailing dimensions of "
        "x [4, 64]",
        "weight has shape [32], expected [64]",
        "bias has shape [63], expected [64]"], msgs
    for call in (lambda: nt.add_layer_norm(x, x, ()),
                 lambda: nt.add_rms_norm(x, x, [])):
        with pytest.raises(RuntimeError, match="at least 1-dimensional"):
            call()
    assert not validated
    # Another dtype of residual: torch's add (promoting), then ours on h.
    r = torch.randn(4, 64, dtype=torch.float64)
    for fn in (nt.add_layer_norm, nt.add_rms_norm):
        validated.clear()
        y, h = fn(x.to(torch.float32), torch.randn(4, 64), 64)
        assert [c[0].get("residual", False) for c in validated] == [True]
        validated.clear()
        y, h = fn(x.to(torch.bfloat16), r, 64)
        assert h.dtype == torch.float64 and not validated
        assert torch.equal(h, x.to(torch.bfloat16) + r)


def test_eager_calls_ask_python_once_per_device(gpu_of, autograd):
    """Whether a CUDA device runs our kernels is Python's decision
    (_supported: the chip, ROCm), asked once per device and remembered
    until _reset_support, by the C++ checks too."""
    asked = []
    real = nt._unsupported_reason

    def reason(device):
        asked.append(device)
        return real(device)

    nt._unsupported_reason, before = reason, nt._unsupported_reason
    try:
        with FakeTensorMode():
            x = torch.empty(4, 256, device="cuda", dtype=torch.bfloat16)
            for _ in range(3):
                nt.layer_norm(x, 256)
                nt.RMSNorm(256, device="cuda")(x)
            assert len(asked) == 1
            nt._reset_support()
            nt.rms_norm(x, 256)
            assert len(asked) == 2
    finally:
        nt._unsupported_reason = before


# ------------------------------- emulated kernels: numbers on the CPU
#
# The `validated` fixture with each launch, once validated, also computed
# in float64 from the manifest's argument names (the kernels' formulas), so
# the wrapper's own arithmetic (shapes, dtypes, which gradient goes where)
# is checked against torch here; the GPU run checks the kernels.

def _emulate(spec, args):
    a = dict(args)
    op = spec["op"]
    w = a.get("weight")
    wf = None if w is None else w.double() + (1 if spec["zero_centered"]
                                               else 0)
    if not op.endswith("_grad"):
        x = a["x"].double()
        if "residual" in a:  # the fused add: h as torch's add rounds it
            xs = a["x"]
            a["h"].copy_((xs.float() + a["residual"].float()).to(xs.dtype))
            x = a["h"].double()
        if op == "layer_norm":
            mean = x.mean(-1)
            a["mean"].copy_(mean)
            x = x - mean[:, None]
        rstd = torch.rsqrt(x.square().mean(-1) + spec["eps"])
        a["rstd"].copy_(rstd)
        y = x * rstd[:, None]
        if wf is not None:
            y = y * wf
        if "bias" in a:
            y = y + a["bias"].double()
        a["y"].copy_(y)
        return
    x, dy = a["x"].double(), a["dy"].double()
    rstd = a["rstd"].double()[:, None]
    if op == "layer_norm_grad":
        x = x - a["mean"].double()[:, None]
    xhat = x * rstd
    g = dy * wf if wf is not None else dy
    dx = g - xhat * (g * xhat).mean(-1, keepdim=True)
    if op == "layer_norm_grad":
        dx = dx - g.mean(-1, keepdim=True)
    dx = dx * rstd
    if "dresidual" in a:
        dx = dx + a["dresidual"].double()
    a["dx"].copy_(dx)
    if "dweight" in a:
        a["dweight"].copy_((dy * xhat).sum(0))
    if "dbias" in a:
        a["dbias"].copy_(dy.sum(0))


@pytest.fixture
def emulated(validated):
    validated.after.append(_emulate)
    return validated


def _ref_ln(x, shape, w, b, eps, zc=False):
    w = None if w is None else (w + 1 if zc else w)
    return torch.nn.functional.layer_norm(x, shape, w, b, eps)


def _ref_rms(x, shape, w, eps, zc=False):
    w = None if w is None else (w + 1 if zc else w)
    return torch.nn.functional.rms_norm(x, shape, w, eps)


def _close(a, b, tol=1e-5):
    assert a.dtype == b.dtype or b.dtype == torch.float64
    a, b = a.detach().double(), b.detach().double()
    err = float((a - b).norm() / b.norm().clamp_min(1e-30))
    assert err < tol, err


def test_emulation_matches_torch(emulated, autograd):
    """The emulation is right (else the tests below prove nothing)."""
    torch.manual_seed(0)
    x, w, b = (_leaf(t) for t in _make((4, 9, 96), (96,), "f32", "f32",
                                       "f32"))
    g = torch.randn(4, 9, 96)
    ours = [_leaf(t) for t in (x, w, b)]
    nt.layer_norm(ours[0], 96, ours[1], ours[2], 1e-5).backward(g)
    _ref_ln(x, (96,), w, b, 1e-5).backward(g)
    for a, r in zip(ours, (x, w, b)):
        _close(a.grad, r.grad)
    ours = [_leaf(t) for t in (x, w)]
    nt.rms_norm(ours[0], 96, ours[1], 1e-6).backward(g)
    x.grad = w.grad = None
    _ref_rms(x, (96,), w, 1e-6).backward(g)
    for a, r in zip(ours, (x, w)):
        _close(a.grad, r.grad)



# ------------------------------------------------ dx into dy in place

def _dx_is_dy(calls):
    """For each backward launch: whether dx was written into dy."""
    out = []
    for (spec, _, _), d in zip(calls, calls.details):
        if spec["op"].endswith("_grad"):
            ptr = {name: p for name, p, _, _ in d["args"]}
            out.append(ptr["dx"] == ptr["dy"])
    return out


@pytest.mark.parametrize("norm", ["layer_norm", "rms_norm", "add"])
def test_dx_goes_into_dy_only_where_nobody_sees_dy(emulated, autograd,
                                                     norm):
    """With the C++ autograd kernels, dx is written into dy where autograd
    alone holds dy (a gradient another node made, here the mul's, also
    where retain_grad() keeps a copy of it); never into a tensor the user
    passed to backward(), one a hook kept, or a view; the Python formulas
    never do it. The
    gradients are right either way (float64 torch)."""
    torch.manual_seed(0)
    n = 96
    x, w, b = (_leaf(t) for t in _make((4, 9, n), (n,), "f32", "f32",
                                       "f32"))
    r = _leaf(torch.randn(4, 9, n))
    g = torch.randn(4, 9, n)
    x64, w64, b64, r64 = (_leaf(t.double()) for t in (x, w, b, r))

    def ours(x, w, b, r):
        if norm == "layer_norm":
            return nt.layer_norm(x, n, w, b)
        if norm == "rms_norm":
            return nt.rms_norm(x, n, w, 1e-5)
        return nt.add_layer_norm(x, r, n, w, b)[0]

    def ref(x, w, b, r):
        if norm == "layer_norm":
            return _ref_ln(x, (n,), w, b, 1e-5)
        if norm == "rms_norm":
            return _ref_rms(x, (n,), w, 1e-5)
        return _ref_ln(x + r, (n,), w, b, 1e-5)

    leaves = (x, w, b, r)
    refs = (x64, w64, b64, r64)
    cases = {
        "from the graph": (lambda y: (y * 2).backward(g), True),
        "the user's": (lambda y: y.backward(g), False),
        "kept by a hook": (lambda y: (y.register_hook(kept.append),
                                      (y * 2).backward(g)), False),
        # retain_grad() keeps a clone: dy is still autograd's alone.
        "retained": (lambda y: (y.retain_grad(), (y * 2).backward(g)),
                     True),
        "a view": (lambda y: (y.view(-1) * 2).view(y.shape).backward(g),
                   False),
    }
    for what, (run, inplace) in cases.items():
        kept, g0 = [], g.clone()
        for t in leaves + refs:
            t.grad = None
        emulated.clear()
        y = ours(x, w, b, r)
        run(y)
        want = inplace and autograd == "cpp"
        assert _dx_is_dy(emulated) == [want], what
        assert torch.equal(g, g0), what
        y64 = ref(x64, w64, b64, r64)
        (y64 * 2 if what != "the user's" else y64).backward(g.double())
        for a, ref_t in zip(leaves, refs):
            if ref_t.grad is not None:
                _close(a.grad, ref_t.grad)
        if what == "kept by a hook":
            _close(kept[0], 2 * g.double())
        if what == "retained":
            _close(y.grad, 2 * g.double())


@pytest.mark.parametrize("norm", ["layer_norm", "rms_norm", "add"])
def test_compiled_autograd(emulated, autograd, norm):
    """torch.compile's compiled autograd runs our backward (C++ or
    Python autograd kernels) with eager's gradients. The C++ Functions'
    mean / rstd were marked non-differentiable, which CppNode keeps and
    compiled autograd's compiled_args refused (an internal assert); they
    are now not outputs of the Function at all."""
    from torch._dynamo import compiled_autograd
    torch.manual_seed(3)
    n = 64
    x, w, b = (_leaf(t) for t in _make((6, n), (n,), "f32", "f32", "f32"))
    r = _leaf(torch.randn(6, n))
    g = torch.randn(6, n)

    def run(x, w, b, r):
        if norm == "layer_norm":
            y = nt.layer_norm(x, n, w, b)
        elif norm == "rms_norm":
            y = nt.rms_norm(x, n, w, 1e-5)
        else:
            y = nt.add_layer_norm(x, r, n, w, b)[0]
        return y

    eager = [_leaf(t) for t in (x, w, b, r)]
    run(*eager).backward(g)
    torch._dynamo.reset()
    try:
        with compiled_autograd._enable(torch.compile(backend="eager")):
            run(x, w, b, r).backward(g)
    finally:
        torch._dynamo.reset()
    for a, e in zip((x, w, b, r), eager):
        assert (a.grad is None) == (e.grad is None)
        if a.grad is not None:
            _close(a.grad, e.grad.double())
    assert any(c[0]["op"].endswith("_grad") for c in emulated)


def test_into_dy_ops_refuse_what_cannot_take_dx(validated):
    """The in-place backward ops refuse a dy that is not contiguous with
    x's shape and dtype (what the autograd kernels check before calling
    them)."""
    n = 64
    x = torch.randn(8, n)
    mean, rstd = torch.randn(8), torch.randn(8)
    w = torch.randn(n)
    for dy in (torch.randn(n, 8).t(), torch.randn(8, n, dtype=torch.float64),
               torch.randn(4, 2, n)):
        with pytest.raises((ValueError, RuntimeError),
                           match="dx goes into dy only"):
            torch.ops.norm_mlir.layer_norm_bwd_into_dy(
                dy, x, mean, rstd, w, True, n, False)
        with pytest.raises((ValueError, RuntimeError),
                           match="dx goes into dy only"):
            torch.ops.norm_mlir.rms_norm_bwd_into_dy(dy, x, rstd, w, n,
                                                      False)
    dy = torch.randn(8, n)
    dw, db = torch.ops.norm_mlir.layer_norm_bwd_into_dy(
        dy, x, mean, rstd, w, True, n, False)
    assert dw.shape == db.shape == (n,)
    assert _dx_is_dy(validated) == [True]


def test_multi_dim_parameters_grads(emulated, autograd):
    """A 2-D normalized_shape: the gradients of the weight and the bias
    come back in their shapes (the C++ kernels keep the bias's shape only
    where it is not [n]) with float64 torch's numbers."""
    torch.manual_seed(5)
    shape = (4, 24)
    x, w, b = (_leaf(t) for t in _make((5, 4, 24), shape, "f32", "f32",
                                       "f32"))
    g = torch.randn(5, 4, 24)
    refs = [_leaf(t.double()) for t in (x, w, b)]
    nt.layer_norm(x, shape, w, b).backward(g)
    _ref_ln(refs[0], shape, refs[1], refs[2], 1e-5).backward(g.double())
    for a, r in zip((x, w, b), refs):
        assert a.grad.shape == a.shape
        _close(a.grad, r.grad)
    for t in (x, w) + tuple(refs):
        t.grad = None
    nt.rms_norm(x, shape, w, 1e-5).backward(g)
    _ref_rms(refs[0], shape, refs[1], 1e-5).backward(g.double())
    for a, r in zip((x, w), refs):
        assert a.grad.shape == a.shape
        _close(a.grad, r.grad)


# ------------------------------------- residual add + norm (issue 22, 2.)

def _add_norm(norm, x, r, w, b, n):
    if norm == "layer_norm":
        return nt.add_layer_norm(x, r, n, w, b, 1e-5)
    return nt.add_rms_norm(x, r, n, w, 1e-6)


@pytest.mark.parametrize("norm", ["layer_norm", "rms_norm"])
def test_add_norm_fuses_the_residual_gradient(emulated, autograd, norm):
    """add_layer_norm / add_rms_norm: y and h = x + residual are the
    composition's (float64 torch), and so are the gradients of x,
    residual, weight and bias, from one forward and one backward launch
    whose dresidual is h's own gradient (added into dx by the kernel)."""
    torch.manual_seed(3)
    n = 64
    x0, w0, b0 = _make((3, 5, n), (n,), "f32", "f32", "f32")
    r0 = torch.randn(3, 5, n)
    gy, gh = torch.randn(3, 5, n), torch.randn(3, 5, n)
    ours = [_leaf(t) for t in (x0, r0, w0, b0)]
    y, h = _add_norm(norm, *ours, n)
    torch.autograd.backward((y, h), (gy, gh))
    ref = [t.double().requires_grad_() for t in (x0, r0, w0, b0)]
    h64 = ref[0] + ref[1]
    y64 = _ref_ln(h64, (n,), ref[2], ref[3], 1e-5) if norm == "layer_norm" \
        else _ref_rms(h64, (n,), ref[2], 1e-6)
    torch.autograd.backward((y64, h64), (gy.double(), gh.double()))
    _close(y, y64)
    _close(h, h64)
    used = 4 if norm == "layer_norm" else 3
    for a, r in zip(ours[:used], ref[:used]):
        assert a.grad is not None and a.grad.dtype == a.dtype
        _close(a.grad, r.grad)
    assert [c[0]["op"] for c in emulated] == [norm, norm + "_grad"]
    # One fused forward launch: x and residual in, h and y out.
    assert emulated[0][0].get("residual") is True
    assert {"x", "residual", "y", "h"} <= set(emulated[0][1])
    assert emulated[1][0].get("dresidual") is True
    assert "dresidual" in emulated[1][1]


@pytest.mark.parametrize("dtype", ["bf16", "f16", "f32"])
@pytest.mark.parametrize("norm", ["layer_norm", "rms_norm"])
def test_add_norm_forward_is_one_fused_launch(emulated, norm, dtype):
    """The forward of add_layer_norm / add_rms_norm is one launch of the
    fused kernel (spec residual, manifest arguments x, residual -> y, h,
    validated against the compiled manifest), rows strided and rank 3; h
    is what the kernel wrote (torch's x + residual bitwise, which the
    emulation computes as the kernel does: f32 add, one rounding) and y
    is the norm of that h."""
    torch.manual_seed(11)
    n, td = 96, TD[dtype]
    x = torch.randn(2, 7, 2 * n).to(td)[..., :n]  # strided rows
    r = torch.randn(2, 7, n).to(td)
    w = torch.randn(n).to(td)
    b = torch.randn(n).to(td)
    with torch.no_grad():
        y, h = _add_norm(norm, x, r, w, b, n)
    assert [c[0]["op"] for c in emulated] == [norm]
    spec, names, rows = emulated[0]
    assert spec.get("residual") is True and rows == 14
    assert {"x", "residual", "y", "h"} <= set(names)
    assert h.shape == x.shape and h.dtype == td and h.is_contiguous()
    assert torch.equal(h, x + r)
    ref = (_ref_ln(h.double(), (n,), w.double(), b.double(), 1e-5)
           if norm == "layer_norm" else
           _ref_rms(h.double(), (n,), w.double(), 1e-6))
    _close(y, ref, 1e-2 if dtype != "f32" else 1e-5)


@pytest.mark.parametrize("norm", ["layer_norm", "rms_norm"])
def test_add_norm_unused_output_costs_no_zeros(emulated, autograd, norm):
    """h unused: no gradient reaches it, and the backward launch has no
    dresidual (autograd used to materialize h's gradient as an [M, N]
    zeros tensor, an allocation and a fill, and the kernel read it as
    dresidual); y unused, h used: y's gradient is zeros, as before. The
    gradients are the composition's (float64 torch) either way."""
    torch.manual_seed(12)
    n = 48
    x0, w0, b0 = _make((5, n), (n,), "f32", "f32", "f32")
    r0, g = torch.randn(5, n), torch.randn(5, n)
    for used in ("y", "h"):
        emulated.clear()
        ours = [_leaf(t) for t in (x0, r0, w0, b0)]
        y, h = _add_norm(norm, *ours, n)
        (y if used == "y" else h).backward(g)
        ref = [t.double().requires_grad_() for t in (x0, r0, w0, b0)]
        h64 = ref[0] + ref[1]
        y64 = _ref_ln(h64, (n,), ref[2], ref[3], 1e-5) \
            if norm == "layer_norm" else _ref_rms(h64, (n,), ref[2], 1e-6)
        (y64 if used == "y" else h64).backward(g.double())
        for a, r in zip(ours[:2], ref[:2]):
            _close(a.grad, r.grad)
        if used == "y":
            for a, r in zip(ours[2:3 if norm == "rms_norm" else 4],
                            ref[2:]):
                _close(a.grad, r.grad)
        ops = [c[0]["op"] for c in emulated]
        assert ops == [norm, norm + "_grad"], ops
        bspec, bnames, _ = emulated[1]
        # h's gradient is the kernel's dresidual only where h was used.
        assert bool(bspec.get("dresidual")) == (used == "h"), bspec
        assert ("dresidual" in bnames) == (used == "h"), bnames


@pytest.mark.parametrize("norm", ["layer_norm", "rms_norm"])
def test_add_norm_with_h_unused_and_without_grad(emulated, autograd, norm):
    """Only y used (no gradient reaches h), and no grad at all: the same
    numbers, one forward launch without grad."""
    torch.manual_seed(4)
    n = 32
    x0, w0, b0 = _make((6, n), (n,), "f32", "f32", "f32")
    r0 = torch.randn(6, n)
    g = torch.randn(6, n)
    ours = [_leaf(t) for t in (x0, r0, w0, b0)]
    y, _ = _add_norm(norm, *ours, n)
    y.backward(g)
    ref = [_leaf(t) for t in (x0, r0, w0, b0)]
    y2 = (nt.layer_norm(ref[0] + ref[1], n, ref[2], ref[3], 1e-5)
          if norm == "layer_norm" else
          nt.rms_norm(ref[0] + ref[1], n, ref[2], 1e-6))
    y2.backward(g)
    _close(y, y2)
    for a, r in zip(ours[:2], ref[:2]):
        _close(a.grad, r.grad)
    emulated.clear()
    with torch.no_grad():
        y3, h3 = _add_norm(norm, *ours, n)
    _close(y3, y2)
    _close(h3, x0 + r0)
    assert [c[0]["op"] for c in emulated] == [norm]


def test_add_norm_composes_what_it_cannot_fuse(emulated):
    """residual None (h is x itself), a residual of another dtype or a
    broadcast one: torch's add, then our norm; the backward has no
    dresidual."""
    torch.manual_seed(5)
    x = _leaf(torch.randn(4, 48))
    w = _leaf(torch.randn(48))
    y, h = nt.add_rms_norm(x, None, 48, w)
    assert h is x
    r = torch.randn(48, dtype=torch.float16)  # another dtype, broadcast
    y, h = nt.add_layer_norm(x, r, 48, w)
    assert h.dtype == torch.float32 and h.shape == x.shape
    _close(h, x + r.float())
    y.sum().backward()
    assert x.grad is not None
    grads = [c for c in emulated if c[0]["op"].endswith("_grad")]
    assert grads and all("dresidual" not in c[1] for c in grads)


def test_add_norm_double_backward(emulated, autograd):
    """create_graph through the residual-add op: first and second
    derivatives against float64 torch's."""
    torch.manual_seed(6)
    n = 40
    x0, w0, b0 = _make((5, n), (n,), "f32", "f32", "f32")
    r0 = torch.randn(5, n)
    gy, gh, v = torch.randn(5, n), torch.randn(5, n), torch.randn(5, n)

    def run(fn, dt):
        x, r, w, b = (t.detach().to(dt).requires_grad_()
                      for t in (x0, r0, w0, b0))
        y, h = fn(x, r, w, b)
        gx, gw = torch.autograd.grad((y, h), (x, w), (gy.to(dt), gh.to(dt)),
                                     create_graph=True)
        ((gx * v.to(dt)).sum() + gw.square().sum()).backward()
        return gx, gw, x.grad, r.grad, w.grad

    ours = run(lambda x, r, w, b: nt.add_layer_norm(x, r, n, w, b),
               torch.float32)

    def ref_fn(x, r, w, b):
        h = x + r
        return _ref_ln(h, (n,), w, b, 1e-5), h
    ref = run(ref_fn, torch.float64)
    for a, r in zip(ours, ref):
        _close(a, r, 1e-4)


def test_fake_add_norm_traces_our_ops(meta_is_ours, autograd):
    """What torch.compile's AOTAutograd sees: the residual-add forward op
    and the backward op (with dresidual), shapes and dtypes of all
    outputs and gradients."""
    n, bf, f32 = 256, torch.bfloat16, torch.float32

    def fwd_bwd(x, r, w, b):
        y, h = nt.add_layer_norm(x, r, (n,), w, b)
        return (y, h) + torch.autograd.grad(
            (y, h), (x, r, w, b), (torch.ones_like(y), torch.ones_like(h)))

    targets, (x, r, w, b), outs = _trace(
        fwd_bwd, ((2, 9, n), bf), ((2, 9, n), bf), ((n,), f32), ((n,), f32))
    # Both autograd forms call the add op (one fused kernel), no aten add.
    fwd = "norm_mlir.add_layer_norm_fwd.default"
    ours = [t for t in targets if t.startswith("norm_mlir.")]
    assert ours == [fwd, "norm_mlir.layer_norm_bwd.default"], targets
    assert "aten.add.Tensor" not in targets, targets
    y, h, gx, gr, gw, gb = outs
    assert y.shape == h.shape == gx.shape == gr.shape == x.shape
    assert y.dtype == h.dtype == gx.dtype == gr.dtype == bf
    assert gw.shape == gb.shape == (n,) and gw.dtype == gb.dtype == f32

    def rms(x, r, w):
        y, h = nt.add_rms_norm(x, r, (n,), w)
        return (y, h) + torch.autograd.grad((y, h), (x, r, w),
                                            (torch.ones_like(y),
                                             torch.ones_like(h)))

    targets, _, outs = _trace(rms, ((3, n), f32), ((3, n), f32),
                              ((n,), f32))
    assert [t for t in targets if t.startswith("norm_mlir.")] == [
        "norm_mlir.add_rms_norm_fwd.default",
        "norm_mlir.rms_norm_bwd.default"], targets



def test_opcheck_on_emulated_kernels(emulated, autograd):
    """torch.library.opcheck (schema, fakes against the bodies, autograd
    registration, AOT dispatch with static and dynamic shapes) on the
    residual-add ops, a forward op and the backward ops with dresidual,
    the kernels emulated so the outputs are real numbers."""
    torch.manual_seed(7)
    n = 64
    x, r, w, b = (_leaf(t) for t in (torch.randn(4, n), torch.randn(4, n),
                                     torch.randn(n), torch.randn(n)))
    dy = torch.randn(4, n)
    with torch.no_grad():
        _, h, mean, rstd = nt._add_ln_fwd(x, r, w, b, n, 1e-5, False)
        _, _, rrstd = nt._add_rms_fwd(x, r, w, n, 1e-6, False)
    for op, args in ((nt._add_ln_fwd, (x, r, w, b, n, 1e-5, False)),
                     (nt._add_rms_fwd, (x, r, w, n, 1e-6, True)),
                     (nt._ln_fwd, (x, w, b, n, 1e-5, False)),
                     (nt._ln_bwd, (dy, h, mean, rstd, w.detach(), True, n,
                                   False, dy)),
                     (nt._rms_bwd, (dy, h, rrstd, None, n, False, dy))):
        torch.library.opcheck(op, args)

# --------------------------------------------- issue 22: the bugs

def test_bias_without_weight_backward(emulated):
    """layer_norm(x, shape, None, bias): the backward gives dbias in the
    bias's shape (it raised TypeError: the bias was viewed as the absent
    weight's shape), gradients as float64 torch's."""
    torch.manual_seed(1)
    x0, _, b0 = _make((3, 5, 16, 12), (16, 12), "f32", None, "f32")
    x, b = _leaf(x0), _leaf(b0)
    g = torch.randn(x0.shape)
    y = nt.layer_norm(x, (16, 12), None, b)
    y.backward(g)
    (fs, fnames, _), (bs, bnames, _) = emulated
    assert fs["weight"] is False and fs["bias"] is True
    assert "dbias" in bnames and "dweight" not in bnames
    x64, b64 = x0.double().requires_grad_(), b0.double().requires_grad_()
    y64 = _ref_ln(x64, (16, 12), None, b64, 1e-5)
    y64.backward(g.double())
    _close(y, y64)
    _close(x.grad, x64.grad)
    assert b.grad.shape == b.shape and b.grad.dtype == b.dtype
    _close(b.grad, b64.grad)


def test_bias_of_another_dtype_than_the_weight_takes_torch(validated,
                                                          autograd):
    """The kernels take one parameter dtype: a bias of another (or a lone
    bias not of x's dtype) goes to torch's function (which decides what
    it does with it), not to a launch the runtime would refuse."""
    x = torch.randn(4, 64, dtype=torch.bfloat16)
    w = torch.randn(64)
    b = torch.randn(64, dtype=torch.bfloat16)
    with pytest.raises(RuntimeError, match="expected scalar type"):
        nt.layer_norm(x, 64, w.bfloat16(), b.float())  # as torch's does
    assert not nt._ours(x, None, w)
    assert not nt._ours(x, w, b)
    assert validated == []


@pytest.mark.parametrize("direct", [True, False])
@pytest.mark.parametrize("norm", ["layer_norm", "rms_norm"])
def test_double_backward_is_right(emulated, autograd, monkeypatch, norm,
                                  direct):
    """create_graph=True (gradient penalties, Hessian-vector products):
    the gradients carry a graph and the second derivatives are float64
    torch's, through the eager path and the registered ops (torch.compile's
    path). The kernels' gradients carried none: silently wrong before."""
    if not direct:
        monkeypatch.setattr(nt, "_direct", lambda *ts: False)
    torch.manual_seed(2)
    n = 48
    x0, w0, b0 = _make((6, n), (n,), "f32", "f32", "f32")
    w0 = 1 + 0.3 * w0
    g, v = torch.randn(6, n), torch.randn(6, n)
    u = torch.randn(n)

    def run(fn, dt):
        x, w, b = (t.detach().to(dt).requires_grad_() for t in (x0, w0, b0))
        gd = g.detach().to(dt).requires_grad_()
        y = fn(x, w, b)
        gx, gw = torch.autograd.grad(y, (x, w), gd, create_graph=True)
        ((gx * v.to(dt)).sum() + (gw * u.to(dt)).sum()).backward()
        return gx, gw, x.grad, w.grad, gd.grad

    if norm == "layer_norm":
        ours = run(lambda x, w, b: nt.layer_norm(x, n, w, b, 1e-5,
                                                 zero_centered=True),
                   torch.float32)
        ref = run(lambda x, w, b: _ref_ln(x, (n,), w, b, 1e-5, True),
                  torch.float64)
    else:
        ours = run(lambda x, w, b: nt.rms_norm(x, n, w, 1e-6), torch.float32)
        ref = run(lambda x, w, b: _ref_rms(x, (n,), w, 1e-6), torch.float64)
    for a, r in zip(ours, ref):
        assert a is not None and a.dtype == torch.float32
        _close(a, r, 1e-4)
    # The forward ran our kernel; the graphed backward took torch's ops.
    assert [c[0]["op"] for c in emulated] == [norm]


def test_single_backward_still_takes_the_kernels(emulated, autograd):
    """Only a backward that builds a graph leaves the kernels."""
    x = torch.randn(5, 32, requires_grad=True)
    w = torch.randn(32, requires_grad=True)
    torch.autograd.grad(nt.rms_norm(x, 32, w).sum(), (x, w))
    with torch.no_grad():
        gx = torch.randn(5, 32)
    torch.autograd.grad(nt.layer_norm(x, 32, w), (x,), gx)
    assert [c[0]["op"] for c in emulated] == [
        "rms_norm", "rms_norm_grad", "layer_norm", "layer_norm_grad"]


@pytest.mark.parametrize("cls", [nt.LayerNorm, nt.RMSNorm])
def test_zero_centered_reset_parameters(cls):
    """reset_parameters (what meta-device / FSDP2 initialisation and
    to_empty + init call) keeps a zero-centred module at the identity:
    weight 0 in storage, applied as 1; it reset it to 1 (applied as 2)."""
    torch.manual_seed(3)
    m = cls(64, zero_centered=True)
    with torch.no_grad():
        m.weight.fill_(3)
    m.reset_parameters()
    assert torch.count_nonzero(m.weight) == 0
    x = torch.randn(4, 64)
    ref = torch.nn.LayerNorm(64) if cls is nt.LayerNorm else \
        torch.nn.RMSNorm(64)
    assert torch.allclose(m(x), ref(x))
    with torch.device("meta"):
        meta = cls(64, zero_centered=True)
    assert meta.weight.is_meta
    meta.to_empty(device="cpu")
    meta.reset_parameters()
    assert torch.count_nonzero(meta.weight) == 0
    # Without zero_centered, torch's reset (weight 1).
    plain = cls(64)
    with torch.no_grad():
        plain.weight.fill_(3)
    plain.reset_parameters()
    assert torch.equal(plain.weight, torch.ones(64))


def test_zero_centered_shows_in_repr():
    for cls, torch_cls in ((nt.LayerNorm, torch.nn.LayerNorm),
                           (nt.RMSNorm, torch.nn.RMSNorm)):
        assert repr(cls(64, zero_centered=True)) == \
            repr(torch_cls(64))[:-1] + ", zero_centered=True)"
        assert repr(cls(64)) == repr(torch_cls(64))


@pytest.fixture
def gpu_of(monkeypatch):
    """Fake CUDA tensors on a host that claims a GPU of the capability
    (or ROCm build) a test sets: what _supported decides from."""
    nt._reset_support()
    monkeypatch.setattr(nt, "_cuda_available", lambda: True)
    state = {"cap": (9, 0)}
    monkeypatch.setattr(nt, "_capability", lambda device: state["cap"])
    yield state
    monkeypatch.undo()
    nt._reset_support()


def _ops_called(fn, *args):
    gm = make_fx(fn)(*args)
    return [str(nd.target) for nd in gm.graph.nodes
            if nd.op == "call_function" and "getitem" not in str(nd.target)]


@pytest.mark.parametrize("cap", [(7, 0), (7, 5), "rocm"])
def test_unsupported_gpus_take_torch_with_one_warning(gpu_of, monkeypatch,
                                                      autograd, cap):
    """sm_70 / sm_75 (no kernels: the compiler knows sm_80 on) and ROCm
    (whose tensors are is_cuda) take torch's functions, with one warning
    per device and process; before, they compiled for an unknown chip
    (retried as sm_80) or loaded PTX on ROCm."""
    if cap == "rocm":
        monkeypatch.setattr(torch.version, "hip", "6.2.41133")
    else:
        gpu_of["cap"] = cap
    import warnings
    with FakeTensorMode():
        x = torch.empty(4, 256, device="cuda", dtype=torch.bfloat16)
        w = torch.empty(256, device="cuda", dtype=torch.bfloat16)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            targets = _ops_called(lambda x, w: (nt.layer_norm(x, 256, w, w),
                                                nt.rms_norm(x, 256, w)), x, w)
            nt.RMSNorm(256, device="cuda")(x)
    assert not any(t.startswith("norm_mlir") for t in targets), targets
    assert "aten.native_layer_norm.default" in targets
    ours = [w for w in seen if "norm_mlir" in str(w.message)]
    assert len(ours) == 1, [str(w.message) for w in seen]
    msg = str(ours[0].message)
    assert "cuda:0" in msg and "torch's own functions" in msg
    assert ("ROCm" in msg) if cap == "rocm" else ("sm_%d%d" % cap in msg)


def test_supported_gpus_take_our_ops(gpu_of, autograd):
    for cap in ((8, 0), (8, 6), (9, 0), (10, 0), (12, 0)):
        gpu_of["cap"] = cap
        nt._reset_support()
        with FakeTensorMode():
            x = torch.empty(4, 256, device="cuda", dtype=torch.bfloat16)
            targets = _ops_called(lambda x: nt.layer_norm(x, 256), x)
        assert targets == ["norm_mlir.layer_norm_fwd.default"], (cap, targets)


def test_ops_refuse_unsupported_gpus(gpu_of):
    """An op called directly on such a device says why (no compile)."""
    gpu_of["cap"] = (7, 5)
    spec = nt._spec("rms_norm", 64, torch.empty(1, dtype=torch.bfloat16),
                    None, False, 1e-6, False)
    with pytest.raises(RuntimeError, match=r"compute capability 7\.5"):
        nt._module(spec, torch.device("cuda", 0))


def test_unknown_chips_from_sm80_take_sm80_ptx():
    from norm_mlir import CompileError
    spec = nt._spec("rms_norm", 64, torch.empty(1, dtype=torch.bfloat16),
                    None, False, 1e-6, False)
    assert nt._compiled(spec, "sm_100").chip == "sm_80"
    assert nt._compiled(spec, "sm_120").chip == "sm_80"
    with pytest.raises(CompileError, match="sm_75"):
        nt._compiled(spec, "sm_75")


def _with_cuda_autocast(dtype, fn):
    torch.set_autocast_enabled("cuda", True)
    old = torch.get_autocast_dtype("cuda")
    torch.set_autocast_dtype("cuda", dtype)
    try:
        return fn()
    finally:
        torch.set_autocast_enabled("cuda", False)
        torch.set_autocast_dtype("cuda", old)


@pytest.mark.parametrize("ac", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("xd,wd", [(torch.bfloat16, torch.float32),
                                   (torch.bfloat16, torch.bfloat16),
                                   (torch.float16, torch.float32),
                                   (torch.float32, torch.float32)])
def test_autocast_dtypes_are_torchs(autograd, ac, xd, wd):
    """Under CUDA autocast our outputs have the dtypes torch's functions
    give (layer_norm is on autocast's fp32 list: f32 out; rms_norm is not);
    the kernels still run (f32 for layer_norm; the casts carry the
    gradients back to each input's dtype: test_torch_gpu.py). Before,
    layer_norm returned x's dtype."""
    F = torch.nn.functional

    def run():
        with FakeTensorMode():
            x = torch.empty(4, 256, device="cuda", dtype=xd,
                            requires_grad=True)
            w = torch.empty(256, device="cuda", dtype=wd, requires_grad=True)
            got = {}
            for name, ours, theirs in (
                    ("ln", lambda: nt.layer_norm(x, 256, w, w),
                     lambda: F.layer_norm(x, (256,), w, w)),
                    ("rms", lambda: nt.rms_norm(x, 256, w),
                     lambda: F.rms_norm(x, (256,), w))):
                got[name] = (ours().dtype, theirs().dtype)
            targets = _ops_called(lambda x, w: nt.layer_norm(x, 256, w), x, w)
            return got, targets

    got, targets = _with_cuda_autocast(ac, run)
    for name, (ours, theirs) in got.items():
        assert ours == theirs, (name, ours, theirs)
    assert got["ln"][0] == torch.float32
    assert "norm_mlir.layer_norm_fwd.default" in targets


@pytest.mark.parametrize("transform", ["grad", "vmap", "jvp", "jacrev",
                                       "vmap_grad"])
def test_torch_func_transforms_take_torch(validated, autograd, transform):
    """torch.func transforms (their tensors wrap others: no data pointer
    for a kernel) run torch's functions, the same numbers; before, the
    autograd.Function refused them for want of setup_context, or the
    wrapped tensors' data pointers failed."""
    import torch.func as tf
    torch.manual_seed(5)
    F = torch.nn.functional
    x = torch.randn(3, 32)
    w, b = torch.randn(32), torch.randn(32)
    t = torch.randn(3, 32)
    for ours, theirs in (
            (lambda x: nt.layer_norm(x, 32, w, b),
             lambda x: F.layer_norm(x, (32,), w, b)),
            (lambda x: nt.rms_norm(x, 32, w, 1e-6),
             lambda x: F.rms_norm(x, (32,), w, 1e-6))):
        def run(f):
            if transform == "grad":
                return tf.grad(lambda x: f(x).square().sum())(x)
            if transform == "vmap":
                return tf.vmap(f)(x)
            if transform == "jvp":
                return tf.jvp(f, (x,), (t,))[1]
            if transform == "jacrev":
                return tf.jacrev(f)(x[0])
            return tf.vmap(tf.grad(lambda r: f(r).square().sum()))(x)
        assert torch.equal(run(ours), run(theirs))
    assert validated == []  # no launch inside the transforms
    nt.layer_norm(x, 32, w, b)
    assert len(validated) == 1  # and ours outside them


def test_forward_mode_ad_takes_torch(validated, autograd):
    """Dual tensors (torch.autograd.forward_ad): torch's functions, the
    same tangents; before, the autograd.Function had no jvp."""
    import torch.autograd.forward_ad as fwAD
    torch.manual_seed(6)
    F = torch.nn.functional
    x, t = torch.randn(3, 32), torch.randn(3, 32)
    w = torch.randn(32)
    for ours, theirs in ((lambda x: nt.layer_norm(x, 32, w, w),
                          lambda x: F.layer_norm(x, (32,), w, w)),
                         (lambda x: nt.rms_norm(x, 32, w),
                          lambda x: F.rms_norm(x, (32,), w,
                                               torch.finfo(x.dtype).eps))):
        got = []
        for fn in (ours, theirs):
            with fwAD.dual_level():
                got.append(fwAD.unpack_dual(fn(fwAD.make_dual(x, t))))
        assert torch.equal(got[0].primal, got[1].primal)
        assert torch.equal(got[0].tangent, got[1].tangent)
    assert validated == []


def test_compile_traces_the_checks_without_breaks(validated, autograd):
    """The device and transform checks fold under torch.compile (dynamo):
    no graph break, our op in the graph (the functions' Python and the
    modules', not the eager calls' C++ op)."""
    x = torch.randn(8, 64, dtype=torch.bfloat16)
    w = torch.randn(64, dtype=torch.bfloat16)
    ln, rms = nt.LayerNorm(64, dtype=torch.bfloat16), nt.RMSNorm(
        64, dtype=torch.bfloat16)

    def fn(x, w):
        return nt.rms_norm(x, 64, w) + nt.layer_norm(x, 64, w, w) + \
            ln(x) + rms(x)

    torch._dynamo.reset()
    try:
        ex = torch._dynamo.explain(fn)(x, w)
    finally:
        torch._dynamo.reset()
    assert ex.graph_break_count == 0, ex.break_reasons
    code = "".join(g.code for g in ex.graphs)
    assert "norm_mlir.rms_norm_fwd" in code and "layer_norm_fwd" in code
    assert "_eager_" not in code


# ------------------------------ torch.compile: the residual adds folded

class _PreNorm(torch.nn.Module):
    """Two pre-norm residual blocks and a final norm, as a transformer's:
    the norms after the first read a residual sum, and in the backward
    each norm's dx meets the residual stream's gradient in an add."""

    def __init__(self, d):
        super().__init__()
        self.n1, self.n2, self.n3 = (nt.LayerNorm(d), nt.RMSNorm(d),
                                     nt.LayerNorm(d))
        self.l1, self.l2 = torch.nn.Linear(d, d), torch.nn.Linear(d, d)

    def forward(self, x):
        x = x + self.l1(self.n1(x))
        x = x + self.l2(self.n2(x))
        return self.n3(x)


def _pre_norm_run(d=64):
    """(run, inputs): _PreNorm as a function of x and its parameters (the
    inputs: x first), so the gradients compared are all of them."""
    torch.manual_seed(5)
    model = _PreNorm(d)
    names = [k for k, _ in model.named_parameters()]

    def run(x, *params):
        return torch.func.functional_call(model, dict(zip(names, params)),
                                          (x,))
    return run, [torch.randn(3, 4, d)] + [p.detach()
                                          for p in model.parameters()]


def _launch_kinds(calls):
    """(forward launches with the fused residual add, backward launches
    with dresidual, all launches)."""
    fwd = sum(1 for spec, _, _ in calls
              if not spec["op"].endswith("_grad") and spec.get("residual"))
    bwd = sum(1 for spec, _, _ in calls
              if spec["op"].endswith("_grad") and spec.get("dresidual"))
    return fwd, bwd, len(calls)


def _compiled_vs_eager(calls, run, *inputs):
    """run(*inputs) eager and compiled by `run.compiled` (a function of
    the eager one): outputs and the inputs' gradients close (emulated
    kernels), and the compiled run's launch kinds (_launch_kinds)."""
    g = None
    outs = []
    for compiled in (False, True):
        ins = [_leaf(t) for t in inputs]
        calls.clear()
        fn = run.compiled(run) if compiled else run
        y = fn(*ins)
        g = torch.randn_like(y) if g is None else g
        y.backward(g)
        outs.append((y, [t.grad for t in ins]))
    (ye, ge), (yc, gc) = outs
    _close(yc, ye.double(), 1e-4)
    for a, e in zip(gc, ge):
        _close(a, e.double(), 1e-4)
    return _launch_kinds(calls)


def _aot_with_the_pass(fn):
    """fn through AOTAutograd (the forward and backward graphs inductor
    gets) with only norm_mlir's pass applied to each, run as FX."""
    from torch._functorch.aot_autograd import aot_function, make_boxed_func

    def compiler(gm, example_inputs):
        nt._inductor.fuse_residual_adds(gm.graph)
        gm.recompile()
        return make_boxed_func(gm)
    return aot_function(fn, compiler)


def test_residual_adds_fold_into_the_ops(emulated):
    """The pass on AOTAutograd's graphs of two pre-norm blocks: the two
    norms after a residual add run the fused residual-add forward, and in
    the backward the two whose dx meets the residual gradient take it as
    dresidual; no separate add launches are left to make, and the outputs
    and gradients are eager's."""
    run, inputs = _pre_norm_run()
    run.compiled = _aot_with_the_pass
    fwd, bwd, n = _compiled_vs_eager(emulated, run, *inputs)
    assert (fwd, bwd) == (2, 2), list(emulated)
    assert n == 6  # three forward launches, three backward


@pytest.mark.parametrize("case", ["broadcast", "alpha", "promotion",
                                  "transposed term", "dx read twice"])
def test_residual_adds_the_ops_cannot_take_stay(emulated, case):
    """Adds the fused ops cannot stand for stay adds: a broadcast term, an
    alpha, type promotion, a term whose rows the op would have to copy
    (forward); a dx that something else reads too
    (backward: y + x makes x's gradient dx + g, an add, while residual's
    is dx itself; the forward add folds). The numbers are eager's either
    way."""
    torch.manual_seed(6)
    d = 32
    w = torch.randn(d)
    x, r = torch.randn(5, d), torch.randn(5, d)
    if case == "broadcast":
        r = torch.randn(d)
    elif case == "promotion":
        x = x.to(torch.bfloat16)
    elif case == "transposed term":
        r = torch.randn(d, 5)

    def run(x, r, w):
        if case == "transposed term":
            r = r.t()
        h = torch.add(x, r, alpha=2) if case == "alpha" else x + r
        y = nt.layer_norm(h, d, w)
        return y + x if case == "dx read twice" else y
    run.compiled = _aot_with_the_pass
    kinds = _compiled_vs_eager(emulated, run, x, r, w)
    assert kinds == ((1, 0, 2) if case == "dx read twice" else (0, 0, 2))


@pytest.mark.parametrize("write", [False, True])
def test_residual_adds_fold_only_where_no_write_is_passed(write):
    """The fused op stands where the add stood, so the norm's weight is
    read there: a node between the two that writes a tensor (here the
    weight, in place) keeps them apart."""
    import operator
    n = 32
    with FakeTensorMode() as mode:
        vals = {"a": torch.empty(4, n), "b": torch.empty(4, n),
                "w": torch.empty(n)}
    graph = torch.fx.Graph()
    p = {}
    for k, v in vals.items():
        p[k] = graph.placeholder(k)
        p[k].meta["val"] = v
    with mode:
        h = graph.call_function(torch.ops.aten.add.Tensor, (p["a"], p["b"]))
        h.meta["val"] = vals["a"] + vals["b"]
        if write:
            m = graph.call_function(torch.ops.aten.mul_.Tensor,
                                    (p["w"], 2.0))
            m.meta["val"] = vals["w"]
        y = graph.call_function(nt._rms_fwd, (h, p["w"], n, 1e-5, False))
        y.meta["val"] = nt._rms_fwd(h.meta["val"], vals["w"], n, 1e-5,
                                    False)
    outs = [graph.call_function(operator.getitem, (y, i)) for i in (0, 1)]
    graph.output((outs[0], outs[1], h))
    assert nt._inductor.fuse_residual_adds(graph) == (0 if write else 1)
    targets = [str(nd.target) for nd in graph.nodes
               if nd.op == "call_function"]
    assert ("norm_mlir.add_rms_norm_fwd.default" in targets) != write


def test_compiled_model_runs_the_fused_forms(emulated):
    """torch.compile (inductor, the default backend) of the pre-norm
    blocks: the package installed its pass as inductor's
    post_grad_custom_post_pass, so the compiled graph's norms after a
    residual add run the fused forward and the backward takes dresidual
    (without the pass: separate add kernels, and no such launches), with
    eager's outputs and gradients."""
    from torch._inductor import config
    if not any(shutil.which(c) for c in (os.environ.get("CXX") or "c++",
                                         "g++", "clang++")):
        pytest.skip("no C++ compiler for inductor's CPU kernels")
    assert getattr(config.post_grad_custom_post_pass, "norm_mlir", False)
    run, inputs = _pre_norm_run()
    run.compiled = torch.compile
    torch._dynamo.reset()
    try:
        fwd, bwd, n = _compiled_vs_eager(emulated, run, *inputs)
    finally:
        torch._dynamo.reset()
    assert (fwd, bwd, n) == (2, 2, 6), list(emulated)


def test_inductor_pass_runs_after_one_set_before(monkeypatch):
    """A post-grad pass set before the package's install runs first, and
    the uuid that keys inductor's caches carries it (None, caches off,
    where it had none); NORM_MLIR_INDUCTOR_PASS=0 installs nothing."""
    from torch._inductor import config
    from torch._inductor.custom_graph_pass import CustomGraphPass
    seen = []

    class Theirs(CustomGraphPass):
        def __call__(self, graph):
            seen.append(graph)

        def uuid(self):
            return "theirs"

    monkeypatch.setattr(config, "post_grad_custom_post_pass", Theirs())
    assert nt._inductor.install()
    ours = config.post_grad_custom_post_pass
    assert ours.norm_mlir and isinstance(ours.prev, Theirs)
    assert ours.uuid()[-1] == "theirs"
    graph = torch.fx.Graph()
    graph.output(graph.placeholder("x"))
    ours(graph)
    assert seen == [graph]
    assert nt._inductor.install() and config.post_grad_custom_post_pass \
        is ours  # not twice
    monkeypatch.setattr(config, "post_grad_custom_post_pass",
                        lambda graph: None)
    nt._inductor.install()
    assert config.post_grad_custom_post_pass.uuid() is None
    monkeypatch.setattr(config, "post_grad_custom_post_pass", None)
    monkeypatch.setenv("NORM_MLIR_INDUCTOR_PASS", "0")
    assert not nt._inductor.install()
    assert config.post_grad_custom_post_pass is None


# ---------------------------------------------------------------- patch

class _Block(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm1 = torch.nn.LayerNorm(d)
        self.fc = torch.nn.Linear(d, d)
        self.norm2 = torch.nn.RMSNorm(d, eps=1e-6)
        self.inner = torch.nn.Sequential(torch.nn.LayerNorm(d, bias=False),
                                         torch.nn.GELU())

    def forward(self, x):
        x = x + self.fc(self.norm1(x))
        return self.inner(self.norm2(x))


class _Model(torch.nn.Module):
    def __init__(self, d=32, layers=3):
        super().__init__()
        self.blocks = torch.nn.ModuleList(_Block(d) for _ in range(layers))
        self.plain = torch.nn.LayerNorm(d, elementwise_affine=False)
        self.rms_plain = torch.nn.RMSNorm(d, elementwise_affine=False)
        self.grid = torch.nn.LayerNorm((4, d // 4))
        self.final = torch.nn.RMSNorm(d)

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        x = self.rms_plain(self.plain(x))
        x = self.grid(x.view(*x.shape[:-1], 4, -1)).flatten(-2)
        return self.final(x)


def _randomised(model):
    torch.manual_seed(7)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_()
    return model


def test_patch_swaps_in_place():
    """Every torch LayerNorm / RMSNorm (nested, in a ModuleList and a
    Sequential) becomes ours; the module objects, their parameter objects,
    state-dict keys and values, requires_grad and the forward are those of
    before (the CPU takes torch's functions: bit for bit)."""
    model = _randomised(_Model())
    model.blocks[1].norm1.weight.requires_grad_(False)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    params = {k: p for k, p in model.named_parameters()}
    grads = {k: p.requires_grad for k, p in model.named_parameters()}
    norms = {k: m for k, m in model.named_modules()
             if isinstance(m, (torch.nn.LayerNorm, torch.nn.RMSNorm))}
    x = torch.randn(2, 5, 32)
    y0 = model(x)
    assert nt.patch(model) is model
    for k, m in model.named_modules():
        if k in norms:
            assert m is norms[k]
            assert type(m) is (nt.LayerNorm if isinstance(
                m, torch.nn.LayerNorm) else nt.RMSNorm), k
            assert m.zero_centered is False
    assert len(norms) == 3 * 3 + 4
    after = model.state_dict()
    assert list(after) == list(before)
    for k in before:
        assert torch.equal(after[k], before[k]) and \
            after[k].dtype == before[k].dtype, k
    for k, p in model.named_parameters():
        assert p is params[k] and p.requires_grad == grads[k]
    assert torch.equal(model(x), y0)
    # A torch model's state dict loads strictly, and ours into torch's.
    model.load_state_dict(_Model().state_dict())
    _Model().load_state_dict(model.state_dict())


def test_patch_keeps_hooks_optimiser_and_repr():
    model = _randomised(torch.nn.Sequential(torch.nn.Linear(16, 16),
                                            torch.nn.LayerNorm(16)))
    text = repr(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    calls = []
    model[1].register_forward_hook(lambda m, i, o: calls.append(type(m)))
    nt.patch(model)
    assert repr(model) == text
    model(torch.randn(3, 16)).square().sum().backward()
    opt.step()
    assert calls == [nt.LayerNorm]
    assert model[1].weight.grad is not None


def test_patch_takes_a_norm_itself_and_a_meta_model():
    ln = torch.nn.RMSNorm(64)
    assert nt.patch(ln) is ln and type(ln) is nt.RMSNorm
    with torch.device("meta"):
        model = _Model()
    nt.patch(model)
    model.to_empty(device="cpu")
    for m in model.modules():
        if isinstance(m, (nt.LayerNorm, nt.RMSNorm)):
            m.reset_parameters()
            if m.weight is not None:
                assert torch.equal(m.weight, torch.ones_like(m.weight))


def test_patch_routes_to_our_kernels(validated, autograd):
    """After patch the norms launch our kernels (where they run)."""
    model = _randomised(_Model(d=32, layers=1))
    nt.patch(model)
    model(torch.randn(2, 3, 32)).sum().backward()
    ops = [c[0]["op"] for c in validated]
    assert ops.count("layer_norm") == 4 and ops.count("rms_norm") == 3
    assert ops.count("layer_norm_grad") == 4 and \
        ops.count("rms_norm_grad") == 3


def test_patch_leaves_what_it_cannot_take_with_a_reason():
    """A subclass of torch's norms (its own forward), a parameter of a
    tensor subclass (DTensor, after sharding), an empty normalized_shape:
    left, one warning each naming the module and why; ours, already
    there: left silently."""
    import warnings

    class MyNorm(torch.nn.LayerNorm):
        def forward(self, x):
            return super().forward(x) * 2

    class OddParam(torch.nn.Parameter):
        pass

    model = torch.nn.Sequential(MyNorm(8), torch.nn.RMSNorm(8),
                                nt.LayerNorm(8, zero_centered=True),
                                torch.nn.LayerNorm(8), torch.nn.LayerNorm(0))
    model[1].weight = OddParam(torch.ones(8))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        nt.patch(model)
    msgs = sorted(str(w.message) for w in seen)
    assert len(msgs) == 3, msgs
    assert msgs[0].startswith("norm_mlir.torch.patch: 0 left as it is:") \
        and "MyNorm subclasses torch's LayerNorm" in msgs[0]
    assert msgs[1].startswith("norm_mlir.torch.patch: 1 left as it is:") \
        and "OddParam" in msgs[1]
    assert msgs[2] == ("norm_mlir.torch.patch: 4 left as it is: "
                       "normalized_shape [0] is empty")
    assert [type(m) for m in model] == [MyNorm, torch.nn.RMSNorm,
                                        nt.LayerNorm, nt.LayerNorm,
                                        torch.nn.LayerNorm]
    assert model[2].zero_centered is True


def _train_step_module():
    bench = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), "bench", "train_step.py")
    spec = importlib.util.spec_from_file_location("_train_step", bench)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_train_step_cpu_validation_runs():
    """bench/train_step.py --cpu and bench/host_pieces.py run our calls on
    the CPU through its cpu_validation(); the fused-add merge removed a
    name it read, and both failed at their first line until fixed."""
    mod = _train_step_module()
    n = 64
    x = torch.randn(4, n, dtype=torch.bfloat16, requires_grad=True)
    r = torch.randn(4, n, dtype=torch.bfloat16)
    w = torch.randn(n, dtype=torch.bfloat16, requires_grad=True)
    with mod.cpu_validation():
        y = nt.layer_norm(x, (n,), w)
        y2, h = nt.add_rms_norm(x, r, (n,), w)
        (y.float().sum() + y2.float().sum()).backward()
    assert x.grad is not None and w.grad is not None


def _event(name, thread, start, end, self_us, cuda=False):
    """A profiler event as train_step.host_events reads one."""
    from types import SimpleNamespace
    DT = torch.autograd.DeviceType
    return SimpleNamespace(
        name=name, thread=thread,
        device_type=DT.CUDA if cuda else DT.CPU,
        time_range=SimpleNamespace(start=start, end=end),
        cpu_time_total=0 if cuda else end - start,
        self_cpu_time_total=0 if cuda else self_us)


def _synthetic_steps(key, empty_us):
    """Two steps of 100 us on thread 1 (an aten::empty of empty_us in
    forward, a CompiledFxGraph named by key, the backward waiting for
    thread 2's node), a synchronization and a kernel outside them."""
    evs = []
    for s in (0, 1000):
        evs += [
            _event("step", 1, s, s + 100, 10),
            _event("forward", 1, s + 5, s + 40, 35 - empty_us - 10),
            _event("aten::empty", 1, s + 6, s + 6 + empty_us, empty_us),
            _event("## Call CompiledFxGraph %s ##" % key, 1, s + 30,
                   s + 40, 10),
            _event("backward", 1, s + 40, s + 80, 40),
            _event("CompiledFunctionBackward", 2, s + 41, s + 79, 38),
            _event("optimizer", 1, s + 80, s + 95, 15),
            _event("triton_poi_fused_0", 1, s + 30, s + 38, 0, cuda=True)]
    return evs + [_event("cudaDeviceSynchronize", 1, 3000, 3500, 500)]


def test_train_step_host_tables_of_a_synthetic_profile():
    """train_step.py --profile's host side: per model the events inside
    the steps by self CPU time a step (another thread's marked), the
    spans of the ranges, and ours minus torch's by event (inductor's cache
    keys merged), as text and markdown."""
    mod = _train_step_module()
    t = mod.host_events(_synthetic_steps("fabc", 5))
    o = mod.host_events(_synthetic_steps("fxyz", 15))
    assert t["steps"] == 2
    assert t["phases"] == {"step": 100, "forward": 35, "backward": 40,
                           "optimizer": 15}
    assert t["self_us"] == (100, 38)  # the span, on the steps' thread
    assert t["events"]["aten::empty"] == (5, 1)
    assert t["events"]["CompiledFunctionBackward" + mod.OTHER_THREAD] == \
        (38, 1)
    assert "cudaDeviceSynchronize" not in t["events"]
    assert "triton_poi_fused_0" not in t["events"]
    diff = mod.host_diff(t, o)
    assert diff["aten::empty"] == ((5, 1), (15, 1))
    assert diff["## Call CompiledFxGraph * ##"] == ((10, 1), (10, 1))
    res = {"profile": [{"host": t, "gpu": False}, {"host": o, "gpu": False}]}
    text = mod.profile_table(res)  # the CPU: the host tables alone
    assert text == mod.host_tables(res)
    first = text.index(next(line for line in text
                            if "differing most" in line))
    assert "aten::empty" in text[first + 1]  # +10 us, the largest
    assert re.search(r"\+\s*10\.0\s+5\.0\s+15\.0", text[first + 1])
    md = mod.host_tables(res, md=True)
    assert "| `aten::empty` | +10.0 | 5.0 | 15.0 | 1.0 / 1.0 |" in md


def test_train_step_shapes_and_norm_share():
    """--shape adds a model shape (a GPU-bound step where the norms are a
    larger share) that --widths and --config then pick; bad ones are
    refused. norm_share counts torch's eager norm kernels, inductor's fused
    ones and ours, and the step table gets the share column with
    --profile."""
    mod = _train_step_module()
    saved = dict(mod.SHAPES)
    try:
        args = mod.parse(["--shape", "768=32x2048x4", "--config",
                          "768:rms_norm:bf16:eager", "--no-host"])
        assert mod.SHAPES[768] == (32, 2048, 4)
        assert args.configs == [("eager", 768, "rms_norm", "bf16")]
        for bad in (["--shape", "768=32x2048"], ["--shape", "700=1x2x3"],
                    ["--shape", "768=0x2x3"], ["--widths", "640"]):
            with pytest.raises(SystemExit):
                mod.parse(bad)
    finally:
        mod.SHAPES.clear()
        mod.SHAPES.update(saved)
    kernels = {
        "void at::native::(anonymous namespace)::vectorized_layer_norm_"
        "kernel<c10::BFloat16, float>(int, float, ...)": (30.0, 3),
        "void at::native::GammaBetaBackwardCUDAKernelTemplate<...>": (20.0, 3),
        "triton_per_fused_add_native_layer_norm_3": (10.0, 2),
        "norm_kernel_dx_1": (5.0, 3),
        "ampere_bf16_s16816gemm_bf16_128x128": (900.0, 30),
        "multi_tensor_apply_kernel<clip_norm>": (35.0, 1)}
    norm, total = mod.norm_share(kernels)
    assert (norm, total) == (65.0, 1000.0)
    row = {"width": 768, "shape": "32x2048x4", "norm": "layer_norm",
           "precision": "bf16", "mode": "eager", "torch_ms": 2.0,
           "ours_ms": 1.9, "round_ratios": [1.05], "loss": [9.0, 9.0],
           "norm_share": [(65.0, 1000.0), (20.0, 950.0)]}
    skipped = {"width": 512, "shape": "16x512x4", "norm": "rms_norm",
               "precision": "bf16", "mode": "compile", "skipped": "budget"}
    table = mod.training_table([row, skipped])
    assert "norm kernels" in table[0]
    assert "| 6.5%, 65 / 20 |" in table[2]
    cols = len(table[0].split("|"))
    assert all(len(line.split("|")) == cols for line in table)
    assert "norm kernels" not in mod.training_table([skipped])[0]


def test_train_step_host_events_of_a_real_profile():
    """kernel_times on the CPU profiles make_step's ranges: the self CPU
    times on the step's thread add up to its span."""
    mod = _train_step_module()
    torch.manual_seed(0)
    model = mod.Model(32, 1, torch.nn.LayerNorm)
    cpu = torch.device("cpu")
    step = mod.make_step(model, "eager", "autocast", cpu)
    step(*mod.batch(0, 2, 8, cpu))
    p = mod.kernel_times(step, 2, 1, 2, 8, cpu)
    assert not step.profiled and not p["gpu"] and not p["kernels"]
    h = p["host"]
    assert h["steps"] == 2 and set(h["phases"]) == set(mod.PHASES)
    assert h["self_us"][0] == pytest.approx(h["phases"]["step"], rel=1e-3)
    # a step: a block's two and the final one
    assert h["events"]["aten::native_layer_norm"][1] == 3
    assert any(name.startswith("aten::mm") for name in h["events"])


# ------------------------- the C++ bodies without the dispatcher (direct)

@contextlib.contextmanager
def direct_calls(on):
    """The C++ autograd kernels with libnormtorch's direct table handed
    over (on) or not; yields a function giving the (direct, dispatched)
    body calls the kernels made since entry."""
    ag = _autograd_ext()
    if ag is None:
        pytest.skip("libnormtorch_autograd.so not available")
    _needs_native()
    before = nt._use_direct(on)
    try:
        with autograd_kernels("cpp"):
            start = ag.body_calls()
            yield lambda: tuple(a - b for a, b in zip(ag.body_calls(), start))
    finally:
        nt._use_direct(before)


def _four_forms(g_scale=2):
    """Forward and backward of layer_norm, rms_norm, add_layer_norm and
    add_rms_norm (dy made by the graph, so dx goes into dy; h's gradient as
    dresidual), then two forwards without grad: 10 body calls. Returns
    every output and gradient."""
    torch.manual_seed(21)
    n = 96
    x0, r0 = torch.randn(4, 5, n).bfloat16(), torch.randn(4, 5, n).bfloat16()
    w0, b0 = torch.randn(n), torch.randn(n)
    g = torch.randn(4, 5, n).bfloat16()
    out = []
    for form in ("layer_norm", "rms_norm", "add_layer_norm", "add_rms_norm"):
        x, r, w, b = (_leaf(t) for t in (x0, r0, w0, b0))
        h = None
        if form == "layer_norm":
            y = nt.layer_norm(x, n, w, b)
        elif form == "rms_norm":
            y = nt.rms_norm(x, n, w)
        elif form == "add_layer_norm":
            y, h = nt.add_layer_norm(x, r, n, w, b)
        else:
            y, h = nt.add_rms_norm(x, r, n, w)
        ys, gs = [y * g_scale], [g]
        if h is not None:
            ys.append(h)
            gs.append(g)
        torch.autograd.backward(ys, gs)
        out += [y, x.grad, w.grad]
        if form.endswith("layer_norm"):
            out.append(b.grad)
        if h is not None:
            out += [h, r.grad]
    with torch.no_grad():
        out += [nt.layer_norm(x0, n, w0, b0), nt.rms_norm(x0, n, w0)]
    return out


def test_direct_calls_in_plain_eager_mode(monkeypatch):
    """In plain eager mode the C++ autograd kernels call every body (four
    forms, forward and backward, dx into dy, no grad) through libnormtorch's
    direct table, none through the dispatcher; with the table taken back,
    all through the dispatcher. The launches (dry-run plans) and, with the
    kernels emulated, every output and gradient are the same bit for bit."""
    runs = {}
    for on in (True, False):
        with monkeypatch.context() as mp, validation("native", mp) as calls:
            calls.after.append(_emulate)
            with direct_calls(on) as counted:
                out = _four_forms()
                runs[on] = (counted(), list(calls),
                            [normalized(d["plan"]) for d in calls.details],
                            out)
    assert runs[True][0] == (10, 0)
    assert runs[False][0] == (0, 10)
    assert runs[True][1] == runs[False][1]
    assert runs[True][2] == runs[False][2]
    for a, b in zip(runs[True][3], runs[False][3]):
        assert a.shape == b.shape and a.dtype == b.dtype and \
            a.stride() == b.stride()
        assert torch.equal(a, b)


@contextlib.contextmanager
def python_entry(on):
    """The C++ autograd kernels with their Python entry's fast route on or
    off (off: every eager call through the ops' callables, as before);
    yields a function giving the entry's (fast, through the op) calls since
    entry."""
    ag = _autograd_ext()
    if ag is None:
        pytest.skip("libnormtorch_autograd.so not available")
    if os.environ.get("NORM_MLIR_PY_ENTRY", "1") == "0":
        pytest.skip("the Python entry is turned off (NORM_MLIR_PY_ENTRY=0)")
    if getattr(ag, "_entries", None) is None:
        import sysconfig
        inc = sysconfig.get_paths().get("include") or ""
        if os.path.isfile(os.path.join(inc, "Python.h")):
            pytest.fail("libnormtorch_autograd.so has no Python entry, "
                        "though Python's headers are there to build it")
        pytest.skip("libnormtorch_autograd.so built without Python's headers")
    with autograd_kernels("cpp"):
        assert nt._ln_eager is not \
            torch.ops.norm_mlir._eager_layer_norm.default._op
        before = ag.entry_on(on)
        try:
            start = ag.entry_calls()
            yield lambda: tuple(a - b for a, b in zip(ag.entry_calls(),
                                                      start))
        finally:
            ag.entry_on(before)


def _entry_calls_of(fn):
    """fn() with the kernels validated and emulated, the Python entry on
    and off: ({on: (fast, through the op)}, {on: fn's outputs})."""
    counts, outs = {}, {}
    for on in (True, False):
        with pytest.MonkeyPatch.context() as mp, validation("native", mp) \
                as calls:
            calls.after.append(_emulate)
            with python_entry(on) as counted:
                outs[on] = fn()
                counts[on] = counted()
    return counts, outs


def _modules_too():
    """_four_forms, then a LayerNorm and an RMSNorm module's forward and
    backward (2 more eager calls)."""
    out = _four_forms()
    torch.manual_seed(5)
    x = torch.randn(3, 96).bfloat16().requires_grad_(True)
    for m in (nt.LayerNorm(96, dtype=torch.bfloat16),
              nt.RMSNorm(96, dtype=torch.bfloat16)):
        y = m(x)
        y.float().sum().backward()
        out += [y, x.grad, m.weight.grad]
        x.grad = None
    return out


def test_python_entry_in_plain_eager_mode():
    """In plain eager mode the eager calls (layer_norm(), rms_norm(), the
    residual-add forms, without grad too, and the modules: 8 calls) enter
    the C++ kernels through the Python entry's fast route, none through
    the ops' callables; with the route off, all through them, with the
    same outputs and gradients bit for bit (kernels emulated)."""
    counts, outs = _entry_calls_of(_modules_too)
    assert counts[True] == (8, 0)
    assert counts[False] == (0, 8)
    for a, b in zip(outs[True], outs[False]):
        assert a.shape == b.shape and a.dtype == b.dtype and \
            a.stride() == b.stride()
        assert torch.equal(a, b)


class _PassFunctionMode(torch.overrides.TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.seen = getattr(self, "seen", []) + [func]
        return func(*args, **(kwargs or {}))


class _PassDispatchMode(torch.utils._python_dispatch.TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


class _Sub(torch.Tensor):
    pass


def test_python_entry_keeps_the_op_where_anything_is_around():
    """A torch function mode (which sees the eager op), a dispatch mode,
    the profiler (whose trace keeps the op), a tensor subclass, a shape of
    another kind, an eps given as a bool: the Python entry calls the op's
    callable, with the fast route's numbers."""
    n = 64
    x0 = torch.randn(4, n).bfloat16()
    w0 = torch.randn(n).bfloat16()

    def cases():
        x, w = _leaf(x0), _leaf(w0)
        out = []
        tf = _PassFunctionMode()
        with tf:
            out.append(nt.layer_norm(x, (n,), w))
        assert torch.ops.norm_mlir._eager_layer_norm.default in tf.seen
        with _PassDispatchMode():
            out.append(nt.rms_norm(x, (n,), w))
        with torch.profiler.profile() as prof:
            out.append(nt.layer_norm(x, (n,), w))
        assert "norm_mlir::_eager_layer_norm" in [
            e.name for e in prof.events()]
        out.append(nt.layer_norm(x.detach().as_subclass(_Sub), (n,), w))
        out.append(nt._ln_eager(x, torch.tensor([n]).tolist() + [], w,
                                None, True, False))  # eps: a bool
        return out
    counts, outs = _entry_calls_of(cases)
    assert counts[True] == (0, 5), counts
    assert counts[False] == (0, 5)
    for a, b in zip(outs[True], outs[False]):
        assert torch.equal(a, b)


def test_python_entry_raises_what_the_op_raises():
    """Errors through the Python entry's fast route are the op call's:
    the same exception types and messages (shape errors, a body's error,
    a wrong argument count or type), and its result types are the op's."""
    n = 64
    x = torch.randn(4, n, requires_grad=True)
    r = torch.randn(4, n)
    cases = {
        "shape": lambda: nt.layer_norm(x, (32,)),
        "weight": lambda: nt.rms_norm(x, (n,), torch.ones(32)),
        "bias": lambda: nt.add_layer_norm(x, r, (n,), torch.ones(n),
                                          torch.ones(n - 1)),
        "arguments": lambda: nt._ln_eager(x, (n,)),
        "argument type": lambda: nt._rms_eager(x, "n", None, None, False),
        "residual": lambda: nt.add_rms_norm(x, r, (n,), None)[1].shape,
        "no grad": lambda: nt.rms_norm(x.detach(), (n,)).dtype,
    }
    got = {}
    for on in (True, False):
        with pytest.MonkeyPatch.context() as mp, validation("native", mp):
            with python_entry(on):
                got[on] = {k: _outcome(f) for k, f in cases.items()}
    assert got[True] == got[False]
    assert got[True]["shape"][0] is ValueError


def _outcome(fn):
    """fn()'s result, or its exception's type and message."""
    try:
        return fn()
    except Exception as ex:  # noqa: BLE001 (compared)
        return (type(ex), str(ex))


def test_direct_calls_raise_what_the_dispatcher_raises(monkeypatch):
    """A body's error (rows that do not divide, a dtype without kernels, a
    kernel that does not compile) is the same exception with the same
    message whether the kernels call the body directly or through the
    dispatcher; tensors on two device types are not called directly."""
    n = 64
    x = torch.randn(4, n, requires_grad=True)
    cases = {
        "rows": lambda: nt._ln_fwd_c(x, None, None, n + 1, 1e-5, False),
        "rows, no grad": lambda: nt._rms_fwd_c(x.detach(), None, n + 1, 1e-5,
                                               False),
        "dtype": lambda: nt._ln_fwd_c(x.double(), None, None, n, 1e-5,
                                      False),
        "backward": lambda: nt._rms_bwd_body(torch.randn(4, n), x.detach(),
                                             torch.rand(3), None, n, False),
        "two device types": lambda: nt._rms_fwd_c(
            x.detach(), torch.empty(n, device="meta"), n, 1e-5, False)[0],
    }
    got = {}
    for on in (True, False):
        with monkeypatch.context() as mp, validation("native", mp):
            with direct_calls(on) as counted:
                for what, call in cases.items():
                    r = _outcome(call)
                    got[(on, what)] = (r if isinstance(r, tuple) else
                                       (r.shape, r.dtype, r.device))
                got[(on, "calls")] = counted()

                def broken(spec, device):
                    raise norm_mlir.CompileError("no kernels for this one")

                mp.setattr(nt, "_module", broken)
                got[(on, "compile")] = _outcome(
                    lambda: nt.layer_norm(torch.randn(3, 32), 32))
    for what in list(cases) + ["compile"]:
        assert got[(True, what)] == got[(False, what)], what
    for what in ("rows", "rows, no grad", "dtype", "compile"):
        assert got[(True, what)][0] is RuntimeError, got[(True, what)]
    assert "rows of 65" in got[(True, "rows")][1]
    assert "CompileError: no kernels for this one" in \
        got[(True, "compile")][1]
    # rows, rows no grad, dtype direct (they reach the body and fail
    # there); the two device types through the dispatcher (to the Meta
    # kernel, our fake, whose outputs are x's device's).
    # ("backward" calls the body from Python: no kernel of ours.)
    assert got[(True, "calls")] == (3, 1)
    assert got[(False, "calls")] == (0, 4)


class _Recorder(torch.utils._python_dispatch.TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(str(func))
        return func(*args, **(kwargs or {}))


def test_no_direct_calls_under_modes_fakes_transforms_or_the_profiler(
        monkeypatch):
    """Where the dispatcher would not go straight to libnormtorch's body
    the kernels call the ops through it, as before: a TorchDispatchMode
    (it sees our ops, and the numbers are plain eager's), FakeTensorMode
    (fake outputs), meta tensors, the profiler (it records our ops), the
    Python bodies registered instead (validation "python"), and torch.func
    transforms (the eager calls take torch's functions; an op called
    under vmap runs per example below the transform, where the dispatcher
    would reach the body too, and the result is the same either way)."""
    import torch.func as tf
    n = 64
    torch.manual_seed(3)
    x0 = torch.randn(3, n)
    w0, b0 = torch.randn(n), torch.randn(n)
    with monkeypatch.context() as mp, validation("native", mp) as calls:
        calls.after.append(_emulate)
        with direct_calls(True) as counted:
            x, w, b = _leaf(x0), _leaf(w0), _leaf(b0)
            plain = nt.layer_norm(x, n, w, b)
            plain.backward(torch.ones_like(plain))
            plain_grads = [t.grad for t in (x, w, b)]
            assert counted() == (2, 0)

            with _Recorder() as rec:
                x, w, b = _leaf(x0), _leaf(w0), _leaf(b0)
                y = nt.layer_norm(x, n, w, b)
                y.backward(torch.ones_like(y))
            assert "norm_mlir.layer_norm_fwd.default" in rec.ops, rec.ops
            assert any(o.startswith("norm_mlir.layer_norm_bwd")
                       for o in rec.ops), rec.ops
            assert torch.equal(y, plain)
            for a, p in zip((x.grad, w.grad, b.grad), plain_grads):
                assert torch.equal(a, p)
            assert counted() == (2, 2)

            with FakeTensorMode():
                xf = torch.empty(3, n, requires_grad=True)
                wf = torch.empty(n, requires_grad=True)
                yf = nt.rms_norm(xf, n, wf)
                yf.sum().backward()
            assert yf.shape == (3, n) and xf.grad.shape == (3, n)
            assert counted() == (2, 4)

            xm = torch.empty(3, n, device="meta", requires_grad=True)
            ym = nt.layer_norm(xm, n)
            assert ym.is_meta and counted() == (2, 5)

            with torch.profiler.profile() as prof:
                nt.rms_norm(x0, n, w0)
            assert "norm_mlir::rms_norm_fwd" in [e.name for e in
                                                 prof.events()]
            assert counted() == (2, 6)

            before = counted()
            got = tf.vmap(lambda t: nt.layer_norm(t, n, w0, b0))(x0)
            assert torch.equal(got, torch.nn.functional.layer_norm(
                x0, (n,), w0, b0))
            assert counted() == before  # torch's function, no op of ours

            def per_example(t):
                return nt._ln_fwd(t, w0, b0, n, 1e-5, False)[0]

            xs = x0.reshape(3, 1, n)
            on = tf.vmap(per_example)(xs)
            nt._use_direct(False)
            off = tf.vmap(per_example)(xs)
            assert torch.equal(on, off)
    with monkeypatch.context() as mp, validation("python", mp):
        with direct_calls(True) as counted:
            x, w = _leaf(x0), _leaf(w0)
            nt.rms_norm(x, n, w).sum().backward()
            assert counted() == (0, 2)  # the Python bodies are the CPU's


def test_cpp_bodies_are_the_kernels_the_direct_table_stands_for(
        monkeypatch):
    """The direct table calls libnormtorch's bodies where its registration
    for the device type is live: the dispatcher's CPU kernels are then
    torch_ops.cpp's (the CPU tests' registration), and CUDA's where the
    package registered them; a CPU registration that ends ends the direct
    calls on CPU tensors."""
    ext = _needs_native()
    with monkeypatch.context() as mp, validation("native", mp):
        for op in ("layer_norm_fwd", "rms_norm_bwd", "add_rms_norm_fwd",
                   "layer_norm_bwd_into_dy"):
            table = torch._C._dispatch_dump_table("norm_mlir::" + op)
            cpu = [ln for ln in table.splitlines() if ln.startswith("CPU:")]
            assert cpu and "torch_ops.cpp" in cpu[0], table
        table = ctypes.cast(ext.direct, ctypes.POINTER(ctypes.c_uint32 * 2))
        assert tuple(table.contents)[1] >= 8  # version, size: a table
        with direct_calls(True) as counted:
            nt.rms_norm(torch.randn(2, 32), 32)
            assert counted() == (1, 0)
    with accepting(["*"]):
        with direct_calls(True) as counted:
            with pytest.raises(NotImplementedError):
                nt.rms_norm(torch.randn(2, 32), 32)  # no CPU kernel now
            assert counted() == (0, 1)


def test_pipeline_options_from_the_environment(monkeypatch):
    """NORM_MLIR_PIPELINE_OPTIONS: pipeline options for every kernel the
    package compiles (an A/B of a compiler option on a whole training step
    with one wheel), merged with the M bucket's rows hint into the cache's
    options; malformed words and `rows` are refused."""
    parse = nt._pipeline_options
    assert parse("") == {}
    assert parse("early-rows=true") == {"early-rows": "true"}
    assert parse(" --threads=256, hold-columns=1 ") == {
        "threads": "256", "hold-columns": "1"}
    for bad in ("early-rows", "=1", "threads=", "a b=1", "x;y=1",
                "rows=8193"):
        with pytest.raises(ValueError):
            parse(bad)
    seen = []
    monkeypatch.setattr(nt._cache, "get", lambda **kw: seen.append(kw))
    spec = {"op": "rms_norm_grad", "n": 512, "dtype": "bf16", "rows": 129}
    monkeypatch.setattr(nt, "_EXTRA_OPTIONS", {})
    nt._compiled(spec, "sm_90")
    assert seen[-1]["options"] == {"rows": 129}
    monkeypatch.setattr(nt, "_EXTRA_OPTIONS", {"early-rows": "true"})
    nt._compiled(spec, "sm_90")
    assert seen[-1]["options"] == {"early-rows": "true", "rows": 129}
    nt._compiled(dict(spec, rows=0), "sm_90")
    assert seen[-1]["options"] == {"early-rows": "true"}
    assert spec["rows"] == 129  # the caller's spec is left as it was
