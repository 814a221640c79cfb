"""norm_mlir.torch without a GPU (CI; needs torch, which `dev.sh test`
installs): the modules' constructors and state dicts against torch's, the
fallback off the GPU, the rows passed without a copy, the ops' real bodies
on CPU tensors with each launch replaced by the runtime's validation
against the compiled manifest, and the custom ops under fake CUDA tensors
(what torch.compile traces). test_torch_gpu.py checks the numbers on a GPU.
"""

import inspect
import math

import pytest

torch = pytest.importorskip("torch")

import norm_mlir.torch as nt  # noqa: E402
from norm_mlir import _libs, cache  # noqa: E402
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


def test_off_the_gpu_is_torch():
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
        assert torch.equal(nt.rms_norm(x, (48,), w),
                           F.rms_norm(x, (48,), w, torch.finfo(dt).eps))
        assert torch.equal(nt.rms_norm(x, [7, 48], None, 1e-6),
                           F.rms_norm(x, (7, 48), None, 1e-6))


def test_shape_errors():
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

@pytest.fixture
def validated(monkeypatch):
    """The ops' real bodies on CPU tensors (registered for the CPU here;
    the package registers them for CUDA only): kernels compiled for sm_90
    as on the GPU (nt._compiled), each launch replaced by normrt_validate
    against the manifest (every check normrt_launch makes: names, dtypes,
    shapes, strides, aliasing, the workspace; no driver). Records
    (spec, argument names, rows) per launch."""
    calls = []
    rt = _libs.runtime()

    def module(spec, device):
        mod = rt.load_manifest_only(nt._compiled(spec, "sm_90").manifest_text)
        mod.spec = spec
        return mod

    def launch(mod, args, rows, device):
        ws_bytes = mod.workspace_bytes(rows)
        ws = torch.empty(ws_bytes + 16, dtype=torch.uint8)
        ptr = (ws.data_ptr() + 15) // 16 * 16
        mod.validate(nt._arguments(mod, args), ptr if ws_bytes else 0,
                     ws_bytes)
        calls.append((mod.spec, [name for name, _ in args], rows))

    monkeypatch.setattr(nt, "_module", module)
    monkeypatch.setattr(nt, "_launch", launch)
    monkeypatch.setattr(nt, "_on_device", lambda t: True)
    monkeypatch.setattr(nt, "_kernels_by_key", {})
    lib = torch.library.Library("norm_mlir", "IMPL")
    for name in ("layer_norm_fwd", "rms_norm_fwd", "layer_norm_bwd",
                 "rms_norm_bwd"):
        short = {"layer_norm": "ln", "rms_norm": "rms"}[name[:-4]]
        lib.impl(name, getattr(nt, "_%s_%s_impl" % (short, name[-3:])),
                 "CPU")
    yield calls
    lib._destroy()


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
    assert fs["eps"] == torch.finfo(x.dtype).eps
    assert (fs["op"], bs["op"]) == ("rms_norm", "rms_norm_grad")
    assert ("dweight" in bnames) == (w is not None)
    assert x.grad.shape == x.shape


def test_strided_rows_reach_the_kernels_uncopied(validated, monkeypatch):
    """A column slice of a wider tensor goes to the forward and backward
    kernels as strided rows (the runtime accepts the stride), not copied."""
    n = 512
    wide = torch.randn(64, n + 64, dtype=torch.bfloat16)
    x = wide[:, 32:32 + n].requires_grad_(True)
    w = torch.randn(n, dtype=torch.bfloat16, requires_grad=True)
    seen = []
    real = nt._arguments

    def spy(mod, args):
        seen.extend((name, t.data_ptr(), t.stride()) for name, t in args)
        return real(mod, args)

    monkeypatch.setattr(nt, "_arguments", spy)
    nt.rms_norm(x, (n,), w, 1e-6).sum().backward()
    xs = [s for s in seen if s[0] == "x"]
    assert len(xs) == 2
    assert all(p == x.data_ptr() and st == (n + 64, 1) for _, p, st in xs)


def test_rejected_launches_raise(validated):
    """The validation is real, also through the reused descriptors: a
    weight of another dtype than the compiled kernels' is refused, after
    a launch of the same op went through."""
    from norm_mlir._runtime import RuntimeLaunchError
    x = torch.randn(8, 64, dtype=torch.bfloat16)
    w = torch.randn(64, dtype=torch.bfloat16)
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


def test_descriptors_are_rewritten_per_call(validated):
    """Reused descriptor arrays carry each call's pointers, sizes and
    strides; another dtype, rank or name builds them again."""
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
    x = torch.randn(4, 64)
    with pytest.raises(ValueError, match="one device"):
        nt._ln_fwd_impl(x, torch.empty(64, device="meta"), None, 64, 1e-5,
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
    monkeypatch.setattr(nt, "_on_device",
                        lambda t: t.is_cuda or t.device.type == "meta")
    monkeypatch.setattr(nt, "_direct", lambda *ts: False)


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


def test_fake_cuda_tensors_take_our_ops():
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
def test_fake_layer_norm_traces_our_ops(meta_is_ours, zc):
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


def test_fake_rms_norm_traces_our_ops(meta_is_ours):
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

def test_eager_path_launches_what_the_ops_launch(validated, monkeypatch):
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
    validated.clear()
    monkeypatch.setattr(nt, "_direct", lambda *ts: False)
    ops = run()
    assert [c[0]["op"] for c in eager] == [
        "layer_norm", "layer_norm_grad", "rms_norm", "rms_norm_grad",
        "layer_norm"]
    assert eager == ops


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
