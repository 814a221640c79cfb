"""norm_mlir.torch on a GPU: gradients against float64, determinism, CUDA
graphs, torch.compile, torch.library.opcheck, a short training run, the
README example. Skipped without torch or a CUDA device (state dicts and the
fake implementations are test_torch_cpu.py's, which runs here too).

    python3 -m pytest python/tests/test_torch_gpu.py -q
"""


import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

import norm_mlir.torch as nt  # noqa: E402

DEV = "cuda"
DTYPES = [torch.float32, torch.float16, torch.bfloat16]
# Tolerances of the output against float64, as a multiple of the dtype's
# epsilon over the reference's norm (peers land in the same range).
TOL = {torch.float32: 1e-5, torch.float16: 3e-3, torch.bfloat16: 2e-2}


def rel(a, b):
    a, b = a.double(), b.double()
    return float((a - b).norm() / b.norm().clamp_min(1e-30))


def ref_ln(x, shape, w, b, eps, zc=False):
    dims = tuple(range(x.dim() - len(shape), x.dim()))
    x64 = x.double()
    mean = x64.mean(dims, keepdim=True)
    var = ((x64 - mean) ** 2).mean(dims, keepdim=True)
    y = (x64 - mean) * torch.rsqrt(var + eps)
    if w is not None:
        y = y * ((1 + w.double()) if zc else w.double())
    if b is not None:
        y = y + b.double()
    return y


def ref_rms(x, shape, w, eps, zc=False):
    dims = tuple(range(x.dim() - len(shape), x.dim()))
    x64 = x.double()
    y = x64 * torch.rsqrt((x64 * x64).mean(dims, keepdim=True) + eps)
    if w is not None:
        y = y * ((1 + w.double()) if zc else w.double())
    return y


def leaves(*ts):
    return [t.detach().clone().requires_grad_(True) if t is not None
            else None for t in ts]


def check_grads(ours_fn, ref_fn, inputs, dtype, what):
    """Forward and backward of ours against float64 autograd of the same
    formula on the same inputs and the same upstream gradient."""
    ours_in = leaves(*inputs)
    ref_in = [t.detach().double().requires_grad_(True) if t is not None
              else None for t in inputs]
    y = ours_fn(*ours_in)
    y64 = ref_fn(*ref_in)
    g = torch.randn_like(y64).to(y.dtype)
    y.backward(g)
    y64.backward(g.double())
    tol = TOL[dtype]
    assert rel(y, y64) < tol, (what, "y", rel(y, y64))
    for i, (a, b) in enumerate(zip(ours_in, ref_in)):
        if a is None:
            continue
        assert a.grad is not None, (what, i)
        assert a.grad.dtype == a.dtype and a.grad.shape == a.shape
        assert rel(a.grad, b.grad) < tol * 4, (what, i, rel(a.grad, b.grad))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [64, 1000, 4096])
def test_layer_norm_grads(dtype, n):
    torch.manual_seed(n)
    x = (torch.randn(3, 37, n, device=DEV) + 0.5).to(dtype)
    w = (1 + 0.2 * torch.randn(n, device=DEV)).to(dtype)
    b = (0.1 * torch.randn(n, device=DEV)).to(dtype)
    check_grads(lambda x, w, b: nt.layer_norm(x, (n,), w, b, 1e-5),
                lambda x, w, b: ref_ln(x, (n,), w, b, 1e-5), [x, w, b],
                dtype, "ln %s %d" % (dtype, n))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [24, 1536, 8192])
def test_rms_norm_grads(dtype, n):
    torch.manual_seed(n)
    x = torch.randn(301, n, device=DEV).to(dtype)
    w = (1 + 0.2 * torch.randn(n, device=DEV)).to(dtype)
    check_grads(lambda x, w: nt.rms_norm(x, (n,), w, 1e-6),
                lambda x, w: ref_rms(x, (n,), w, 1e-6), [x, w], dtype,
                "rms %s %d" % (dtype, n))


def test_options():
    torch.manual_seed(1)
    n = 768
    bf = torch.bfloat16
    x = torch.randn(2, 50, n, device=DEV).to(bf)
    w32 = 1 + 0.2 * torch.randn(n, device=DEV)
    b32 = 0.1 * torch.randn(n, device=DEV)
    # bf16 x with f32 weight and bias.
    check_grads(lambda x, w, b: nt.layer_norm(x, (n,), w, b),
                lambda x, w, b: ref_ln(x, (n,), w, b, 1e-5),
                [x, w32, b32], bf, "ln bf16/f32")
    check_grads(lambda x, w: nt.rms_norm(x, (n,), w, 1e-5),
                lambda x, w: ref_rms(x, (n,), w, 1e-5), [x, w32], bf,
                "rms bf16/f32")
    # No bias; no weight.
    check_grads(lambda x, w: nt.layer_norm(x, (n,), w, None),
                lambda x, w: ref_ln(x, (n,), w, None, 1e-5), [x, w32], bf,
                "ln no bias")
    check_grads(lambda x: nt.layer_norm(x, (n,)),
                lambda x: ref_ln(x, (n,), None, None, 1e-5), [x], bf,
                "ln no affine")
    check_grads(lambda x: nt.rms_norm(x, (n,), None, 1e-5),
                lambda x: ref_rms(x, (n,), None, 1e-5), [x], bf,
                "rms no weight")
    # Gemma's zero-centred weight.
    wz = 0.1 * torch.randn(n, device=DEV)
    check_grads(lambda x, w: nt.rms_norm(x, (n,), w, 1e-6,
                                         zero_centered=True),
                lambda x, w: ref_rms(x, (n,), w, 1e-6, zc=True), [x, wz], bf,
                "rms zero-centred")
    check_grads(lambda x, w, b: nt.layer_norm(x, (n,), w, b,
                                              zero_centered=True),
                lambda x, w, b: ref_ln(x, (n,), w, b, 1e-5, zc=True),
                [x, wz, b32], bf, "ln zero-centred")
    # f16 x with f32 weight.
    check_grads(lambda x, w: nt.rms_norm(x, (n,), w, 1e-5),
                lambda x, w: ref_rms(x, (n,), w, 1e-5),
                [x.to(torch.float16), w32], torch.float16, "rms f16/f32")
    # Multi-dim normalized_shape.
    x4 = torch.randn(5, 7, 16, 48, device=DEV).to(bf)
    w2 = (1 + 0.2 * torch.randn(16, 48, device=DEV)).to(bf)
    b2 = (0.1 * torch.randn(16, 48, device=DEV)).to(bf)
    check_grads(lambda x, w, b: nt.layer_norm(x, (16, 48), w, b),
                lambda x, w, b: ref_ln(x, (16, 48), w, b, 1e-5),
                [x4, w2, b2], bf, "ln 2-d shape")
    # One row, no leading dims.
    check_grads(lambda x, w, b: nt.layer_norm(x, (n,), w, b),
                lambda x, w, b: ref_ln(x, (n,), w, b, 1e-5),
                [x[0, 0], w32, b32], bf, "ln rank 1")


@pytest.mark.parametrize("norm", ["layer_norm", "rms_norm"])
def test_strided_rows_grads(norm):
    """A column slice of a wider tensor (rows passed to the kernels without
    a copy, forward and backward): gradients reach the wide tensor."""
    torch.manual_seed(4)
    n, bf = 1000, torch.bfloat16
    wide = torch.randn(300, n + 64, device=DEV).to(bf)
    w = (1 + 0.2 * torch.randn(n, device=DEV))

    def ours(wide, w):
        xs = wide[:, 32:32 + n]
        assert not xs.is_contiguous()
        return nt.layer_norm(xs, (n,), w) if norm == "layer_norm" else \
            nt.rms_norm(xs, (n,), w, 1e-6)

    def ref(wide, w):
        xs = wide[:, 32:32 + n]
        return ref_ln(xs, (n,), w, None, 1e-5) if norm == "layer_norm" \
            else ref_rms(xs, (n,), w, 1e-6)

    check_grads(ours, ref, [wide, w], bf, "strided " + norm)


def test_opcheck():
    """torch.library.opcheck on each op: schema, fake against real
    outputs, autograd registration, AOT dispatch (static and dynamic
    shapes), the checks torch.compile relies on."""
    torch.manual_seed(5)
    n, bf = 768, torch.bfloat16
    wide = torch.randn(64, n + 32, device=DEV, dtype=bf)
    for x in (torch.randn(2, 32, n, device=DEV, dtype=bf),
              wide[:, 16:16 + n]):
        x = x.detach().requires_grad_(True)
        w = torch.randn(n, device=DEV, requires_grad=True)
        b = torch.randn(n, device=DEV, requires_grad=True)
        dy = torch.randn(x.shape, device=DEV, dtype=bf)
        with torch.no_grad():
            _, mean, rstd = nt._ln_fwd(x, w, b, n, 1e-5, False)
            _, rrstd = nt._rms_fwd(x, w, n, 1e-6, False)
        xd, wd = x.detach(), w.detach()
        for op, args in (
                (nt._ln_fwd, (x, w, b, n, 1e-5, False)),
                (nt._ln_fwd, (x, None, None, n, 1e-5, False)),
                (nt._rms_fwd, (x, w, n, 1e-6, True)),
                (nt._ln_bwd, (dy, xd, mean, rstd, wd, True, n, False)),
                (nt._rms_bwd, (dy, xd, rrstd, None, n, False))):
            torch.library.opcheck(op, args)


def test_backward_is_bitwise_repeatable():
    torch.manual_seed(2)
    n = 2048
    x = torch.randn(4099, n, device=DEV, dtype=torch.bfloat16)
    g = torch.randn_like(x)
    for make in (lambda: nt.LayerNorm(n, device=DEV, dtype=torch.bfloat16),
                 lambda: nt.RMSNorm(n, device=DEV, dtype=torch.bfloat16)):
        m = make()
        grads = []
        for _ in range(3):
            m.zero_grad()
            xi = x.clone().requires_grad_(True)
            m(xi).backward(g)
            grads.append([xi.grad.clone()] +
                         [p.grad.clone() for p in m.parameters()])
        for other in grads[1:]:
            for a, b in zip(grads[0], other):
                assert torch.equal(a.view(torch.int16), b.view(torch.int16))


@pytest.mark.parametrize("norm", ["layer_norm", "rms_norm"])
def test_cuda_graph_capture_replays(norm):
    torch.manual_seed(3)
    n = 1024
    m = nt.LayerNorm(n, device=DEV) if norm == "layer_norm" else \
        nt.RMSNorm(n, eps=1e-6, device=DEV)
    x = torch.randn(513, n, device=DEV, requires_grad=True)
    g = torch.randn(513, n, device=DEV)
    # Warm up (compile, load, allocate) on a side stream, as torch asks.
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            m.zero_grad(set_to_none=False)
            x.grad = None
            m(x).backward(g)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    m.zero_grad(set_to_none=False)
    x.grad = None
    with torch.cuda.graph(graph):
        y = m(x)
        y.backward(g)
    for _ in range(3):
        with torch.no_grad():
            x.copy_(torch.randn_like(x))
            g.copy_(torch.randn_like(g))
        m.zero_grad(set_to_none=False)
        x.grad.zero_()
        graph.replay()
        torch.cuda.synchronize()
        xr = x.detach().clone().requires_grad_(True)
        ref = torch.nn.functional.layer_norm(
            xr, (n,), m.weight.detach(), m.bias.detach()) \
            if norm == "layer_norm" else torch.nn.functional.rms_norm(
                xr, (n,), m.weight.detach(), 1e-6)
        ref.backward(g)
        assert rel(y, ref) < 1e-5
        assert rel(x.grad, xr.grad) < 1e-4


def test_torch_compile_has_no_graph_breaks():
    n = 512

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.ln = nt.LayerNorm(n)
            self.fc = torch.nn.Linear(n, n)
            self.rms = nt.RMSNorm(n)

        def forward(self, x):
            return self.rms(self.fc(self.ln(x)) + x)

    model = Block().to(DEV)
    x = torch.randn(64, n, device=DEV, requires_grad=True)
    torch._dynamo.reset()
    explain = torch._dynamo.explain(model)(x)
    assert explain.graph_break_count == 0, explain.break_reasons
    compiled = torch.compile(model)
    y = compiled(x)
    y.sum().backward()
    ref = model(x.detach())
    assert rel(y, ref) < 1e-5


@pytest.mark.parametrize("variant", ["layer_norm", "rms_norm"])
def test_training_follows_torch_modules(variant):
    """200 steps of a 2-layer block whose norms are all LayerNorm or all
    RMSNorm, ours against torch's modules from the same initial weights and
    data: the loss curves agree within bf16 noise."""

    def make(norm_ln, norm_rms, seed):
        torch.manual_seed(seed)
        d = 256

        class Layer(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.n1 = norm_ln(d)
                self.attn = torch.nn.MultiheadAttention(d, 4,
                                                        batch_first=True)
                self.n2 = norm_rms(d)
                self.mlp = torch.nn.Sequential(torch.nn.Linear(d, 4 * d),
                                               torch.nn.GELU(),
                                               torch.nn.Linear(4 * d, d))

            def forward(self, x):
                h = self.n1(x)
                x = x + self.attn(h, h, h, need_weights=False)[0]
                return x + self.mlp(self.n2(x))

        return torch.nn.Sequential(Layer(), Layer(), norm_ln(d),
                                   torch.nn.Linear(d, 16)).to(DEV)

    if variant == "layer_norm":
        ours = make(nt.LayerNorm, nt.LayerNorm, 0)
        theirs = make(torch.nn.LayerNorm, torch.nn.LayerNorm, 0)
    else:
        ours = make(nt.RMSNorm, nt.RMSNorm, 0)
        theirs = make(torch.nn.RMSNorm, torch.nn.RMSNorm, 0)
    theirs.load_state_dict(ours.state_dict())
    losses = {}
    for name, model in (("ours", ours), ("torch", theirs)):
        gen = torch.Generator(device=DEV).manual_seed(7)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        curve = []
        for _ in range(200):
            x = torch.randn(16, 32, 256, device=DEV, generator=gen)
            target = torch.randint(0, 16, (16, 32), device=DEV,
                                   generator=gen)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                out = model(x)
            loss = torch.nn.functional.cross_entropy(
                out.float().reshape(-1, 16), target.reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
            curve.append(float(loss))
        losses[name] = curve
    a, b = losses["ours"], losses["torch"]
    # Mean of the last 20 steps within 2% (bf16 autocast noise), and the
    # model learned something (loss fell).
    tail_a, tail_b = sum(a[-20:]) / 20, sum(b[-20:]) / 20
    assert abs(tail_a - tail_b) / tail_b < 0.02, (tail_a, tail_b)
    assert tail_a < a[0]

# ------------------------------------------------ issue 22: the bugs

@pytest.mark.parametrize("norm", ["layer_norm", "rms_norm"])
def test_double_backward_against_float64(norm):
    """create_graph=True: first and second derivatives as float64
    autograd's (the graphed backward; the first derivatives of a plain
    backward stay the kernels')."""
    torch.manual_seed(11)
    n = 512
    x0 = torch.randn(64, n, device=DEV)
    w0 = 1 + 0.2 * torch.randn(n, device=DEV)
    b0 = 0.1 * torch.randn(n, device=DEV)
    g, v = torch.randn(64, n, device=DEV), torch.randn(64, n, device=DEV)

    def run(dt, ours):
        x, w, b = (t.detach().to(dt).requires_grad_() for t in (x0, w0, b0))
        if norm == "layer_norm":
            y = nt.layer_norm(x, n, w, b) if ours else ref_ln(x, (n,), w, b,
                                                             1e-5)
        else:
            y = nt.rms_norm(x, n, w, 1e-6) if ours else ref_rms(x, (n,), w,
                                                                1e-6)
        gx, gw = torch.autograd.grad(y, (x, w), g.to(dt), create_graph=True)
        (gx * v.to(dt)).sum().backward()
        return gx, gw, x.grad, w.grad

    for a, r in zip(run(torch.float32, True), run(torch.float64, False)):
        assert a is not None and rel(a, r) < 1e-4


def test_bias_without_weight_grads():
    torch.manual_seed(12)
    n, bf = 1000, torch.bfloat16
    x = torch.randn(3, 37, n, device=DEV).to(bf)
    b = (0.1 * torch.randn(n, device=DEV)).to(bf)
    check_grads(lambda x, b: nt.layer_norm(x, (n,), None, b),
                lambda x, b: ref_ln(x, (n,), None, b, 1e-5), [x, b], bf,
                "ln bias only")


def test_autocast_matches_torch():
    """Under torch.autocast("cuda"): output and gradient dtypes as torch's
    functions give (layer_norm f32 out, rms_norm x's dtype), numbers close;
    under torch.compile too, without graph breaks."""
    torch.manual_seed(13)
    n, F = 768, torch.nn.functional
    x0 = torch.randn(8, 64, n, device=DEV, dtype=torch.bfloat16)
    w0 = 1 + 0.2 * torch.randn(n, device=DEV)
    b0 = 0.1 * torch.randn(n, device=DEV)
    for ours, theirs in (
            (lambda x, w, b: nt.layer_norm(x, n, w, b),
             lambda x, w, b: F.layer_norm(x, (n,), w, b)),
            (lambda x, w, b: nt.rms_norm(x, n, w, 1e-6),
             lambda x, w, b: F.rms_norm(x, (n,), w, 1e-6))):
        outs = []
        for fn in (ours, theirs):
            x, w, b = leaves(x0, w0, b0)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                y = fn(x, w, b)
            y.float().square().sum().backward()
            outs.append((y, x.grad, w.grad))
        for a, r in zip(*outs):
            assert a.dtype == r.dtype and rel(a, r) < 2e-2
    torch._dynamo.reset()

    def step(x, w, b):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            return nt.layer_norm(x, n, w, b) + nt.rms_norm(x, n, w)

    ex = torch._dynamo.explain(step)(x0, w0, b0)
    assert ex.graph_break_count == 0, ex.break_reasons
    y = torch.compile(step)(x0, w0, b0)
    assert y.dtype == torch.float32
    assert rel(y, step(x0, w0, b0)) < 1e-2


@pytest.mark.parametrize("cls", [nt.LayerNorm, nt.RMSNorm])
def test_zero_centered_meta_init(cls):
    """Meta-device construction, to_empty on the GPU, reset_parameters
    (FSDP2's path): weight 0, the module the identity."""
    with torch.device("meta"):
        m = cls(256, zero_centered=True)
    m.to_empty(device=DEV)
    m.reset_parameters()
    assert torch.count_nonzero(m.weight) == 0
    x = torch.randn(4, 256, device=DEV)
    ref = torch.nn.LayerNorm(256, device=DEV) if cls is nt.LayerNorm \
        else torch.nn.RMSNorm(256, device=DEV)
    assert rel(m(x), ref(x)) < 1e-5


def test_torch_func_on_the_gpu():
    import torch.func as tf
    torch.manual_seed(14)
    n, F = 256, torch.nn.functional
    x = torch.randn(8, n, device=DEV)
    w = torch.randn(n, device=DEV)
    got = tf.vmap(tf.grad(lambda r: nt.layer_norm(r, n, w).square().sum()))(x)
    want = tf.vmap(tf.grad(
        lambda r: F.layer_norm(r, (n,), w).square().sum()))(x)
    assert torch.equal(got, want)
    t = torch.randn_like(x)
    assert torch.equal(tf.jvp(lambda r: nt.rms_norm(r, n, w), (x,), (t,))[1],
                       tf.jvp(lambda r: F.rms_norm(r, (n,), w), (x,), (t,))[1])


def test_old_chip_falls_back_with_one_warning(monkeypatch):
    """This GPU taken for an sm_75: torch's functions, one warning."""
    import warnings
    nt._reset_support()  # the C++ eager calls' answers too
    monkeypatch.setattr(nt, "_capability", lambda device: (7, 5))
    x = torch.randn(16, 512, device=DEV, requires_grad=True)
    m = nt.LayerNorm(512, device=DEV)
    try:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            y = m(x)
            y.sum().backward()
            m(x)
    finally:
        monkeypatch.undo()
        nt._reset_support()
    ours = [w for w in seen if "norm_mlir" in str(w.message)]
    assert len(ours) == 1 and "sm_75" in str(ours[0].message)
    assert torch.equal(y, torch.nn.functional.layer_norm(
        x, (512,), m.weight, m.bias))
    assert "NativeLayerNorm" in type(y.grad_fn).__name__


def test_patch_on_the_gpu():
    """nt.patch of a torch model: the same forward and gradients (within
    the kernels' rounding), our kernels running."""
    torch.manual_seed(15)
    d = 512

    def model():
        torch.manual_seed(0)
        return torch.nn.Sequential(
            torch.nn.Linear(d, d), torch.nn.LayerNorm(d), torch.nn.GELU(),
            torch.nn.Linear(d, d), torch.nn.RMSNorm(d)).to(DEV)

    theirs, ours = model(), nt.patch(model())
    assert isinstance(ours[1], nt.LayerNorm) and isinstance(ours[4],
                                                            nt.RMSNorm)
    x = torch.randn(64, d, device=DEV)
    ya, yb = ours(x), theirs(x)
    # Our autograd node: the C++ one (torch::autograd::Function, named
    # CppFunction) where the wheel's library fits this torch, else the
    # Python autograd.Function's.
    assert type(ya.grad_fn).__name__ == (
        "CppFunction" if nt._cpp_autograd else "_RMSNormFunctionBackward")
    # A random projection of the output: the sum of squares of an RMSNorm
    # with unit weight is N per row whatever its input, so its gradient
    # below the norm is rounding noise (the first device run of this test
    # failed on that: 9% apart in the first Linear's weight gradient).
    proj = torch.randn(64, d, device=DEV)
    (ya * proj).sum().backward()
    (yb * proj).sum().backward()
    assert rel(ya, yb) < 1e-5
    for (na, a), (nb, b) in zip(ours.named_parameters(),
                                theirs.named_parameters()):
        assert na == nb and rel(a.grad, b.grad) < 1e-4, na


# ------------------------------------------------- the C++ op bodies

def test_wheel_bodies_are_cpp():
    """Where the package carries libnormtorch.so (the wheel built with
    torch there), its bodies are the ops' CUDA kernels and the eager
    path's; NORM_MLIR_NATIVE=0 is the only way to the Python bodies."""
    import os
    from norm_mlir import _libs
    if _libs.find_optional("libnormtorch.so") is None or \
            os.environ.get("NORM_MLIR_NATIVE") == "0":
        pytest.skip("no libnormtorch.so here")
    assert nt._native is not None and nt._default_keys is not None
    for op in ("rms_norm_bwd", "layer_norm_bwd_into_dy",
               "rms_norm_bwd_into_dy"):
        dump = torch._C._dispatch_dump("norm_mlir::" + op)
        assert "torch_ops.cpp" in [ln for ln in dump.splitlines()
                                   if ln.startswith("CUDA:")][0], dump


@pytest.mark.parametrize("layout", ["contiguous", "strided", "copied"])
def test_cpp_and_python_bodies_agree(layout):
    """The C++ bodies (eager path and registered ops) give the Python
    bodies' outputs and gradients bit for bit: the same kernels on the
    same arguments (the CPU tests compare the launch plans)."""
    if nt._native is None:
        pytest.skip("no libnormtorch.so")
    torch.manual_seed(9)
    n, bf = 768, torch.bfloat16
    base = torch.randn(300, n + 64, device=DEV, dtype=bf)
    x0 = {"contiguous": base[:, :n].contiguous(),
          "strided": base[:, 32:32 + n],
          "copied": base[:, :n].t().contiguous().t()}[layout]
    w0 = torch.randn(n, device=DEV)
    b0 = torch.randn(n, device=DEV)
    g = torch.randn(300, n, device=DEV, dtype=bf)

    def run():
        out = []
        x, w, b = (t.detach().requires_grad_(True) for t in (x0, w0, b0))
        y = nt.layer_norm(x, n, w, b)
        y.backward(g)
        out += [y, x.grad, w.grad, b.grad]
        x, w = x0.detach().requires_grad_(True), w0.bfloat16().requires_grad_()
        y = nt.rms_norm(x, n, w, 1e-6, zero_centered=True)
        y.backward(g)
        out += [y, x.grad, w.grad]
        return out

    cpp = run()
    direct = nt._direct
    try:
        nt._direct = lambda *ts: False  # the registered ops: C++ kernels
        ops = run()
    finally:
        nt._direct = direct
    nt._use_bodies(None)
    nt._use_autograd(None)  # the Python bodies only below Python autograd
    try:
        py = run()
    finally:
        nt._use_bodies(nt._default_keys)
        nt._use_autograd(nt._autograd_ext)
    for a, b, c in zip(cpp, ops, py):
        assert torch.equal(a, c) and torch.equal(b, c)


# ------------------------------------------ the C++ autograd kernels

def test_wheel_autograd_is_cpp():
    """Where the package carries libnormtorch_autograd.so built for this
    torch, the forward ops' Autograd kernels are its C++ ones."""
    import os
    from norm_mlir import _libs
    path = _libs.find_optional(nt._AUTOGRAD_LIB)
    if path is None or os.environ.get("NORM_MLIR_NATIVE_AUTOGRAD") == "0":
        pytest.skip("no libnormtorch_autograd.so here")
    assert nt._autograd_stamp(path) == nt._torch_build()
    assert nt._cpp_autograd
    for op in ("layer_norm_fwd", "rms_norm_fwd", "add_layer_norm_fwd",
               "add_rms_norm_fwd"):
        dump = torch._C._dispatch_dump("norm_mlir::" + op)
        assert "torch_autograd.cpp" in [
            ln for ln in dump.splitlines()
            if ln.startswith("Autograd")][0], dump


def _norm_forms(norm, x, r, n, w, b):
    """(y, h) of one of the three forms the tests below run: h is the
    residual sum of add_layer_norm, None for the other two."""
    if norm == "layer_norm":
        return nt.layer_norm(x, n, w, b), None
    if norm == "rms_norm":
        return nt.rms_norm(x, n, w, 1e-6), None
    return nt.add_layer_norm(x, r, n, w, b)


@pytest.mark.parametrize("norm", ["layer_norm", "rms_norm",
                                  "add_layer_norm"])
def test_cpp_and_python_autograd_agree(norm):
    """The C++ autograd kernels give the Python formulas' outputs and
    gradients bit for bit (the same kernels), also inside a CUDA graph."""
    if nt._autograd_ext is None:
        pytest.skip("no libnormtorch_autograd.so")
    torch.manual_seed(10)
    n, bf = 1024, torch.bfloat16
    x0 = torch.randn(257, n, device=DEV, dtype=bf)
    r0 = torch.randn(257, n, device=DEV, dtype=bf)
    w0 = torch.randn(n, device=DEV)
    b0 = torch.randn(n, device=DEV)
    g = torch.randn(257, n, device=DEV, dtype=bf)

    def run():
        x, r, w, b = (t.detach().requires_grad_(True)
                      for t in (x0, r0, w0, b0))
        y, h = _norm_forms(norm, x, r, n, w, b)
        y = y if h is None else y + h
        y.backward(g.to(y.dtype))
        return [y] + [t.grad for t in (x, r, w, b) if t.grad is not None]

    cpp = run()
    nt._use_autograd(None)
    try:
        py = run()
    finally:
        nt._use_autograd(nt._autograd_ext)
    assert len(cpp) == len(py)
    for a, b in zip(cpp, py):
        assert torch.equal(a, b)


def test_eager_calls_are_the_cpp_op():
    """With the C++ autograd kernels the functions and modules reach the
    kernels through one op call (norm_mlir::_eager_layer_norm /
    _eager_rms_norm), with the registered op's numbers bit for bit."""
    if not nt._cpp_autograd:
        pytest.skip("no libnormtorch_autograd.so")
    torch.manual_seed(11)
    n, bf = 1024, torch.bfloat16
    x = torch.randn(64, n, device=DEV, dtype=bf)
    ln = nt.LayerNorm(n, device=DEV, dtype=bf)
    rms = nt.RMSNorm(n, device=DEV, dtype=bf)
    with torch.no_grad():
        ln.weight.normal_(), ln.bias.normal_(), rms.weight.normal_()
    with torch.profiler.profile() as prof:
        ys = [ln(x), rms(x), nt.layer_norm(x, n, ln.weight, ln.bias),
              nt.rms_norm(x, n, rms.weight)]
    names = [e.name for e in prof.events() if "_eager_" in e.name]
    assert names == ["norm_mlir::_eager_layer_norm",
                     "norm_mlir::_eager_rms_norm"] * 2, names
    want_ln = nt._ln_fwd(x, ln.weight, ln.bias, n, 1e-5, False)[0]
    want_rms = nt._rms_fwd(x, rms.weight, n, torch.finfo(torch.float32).eps,
                           False)[0]
    for y, want in zip(ys, (want_ln, want_rms) * 2):
        assert torch.equal(y, want)


def check_route(switch, calls, run, reset, data, calls_each, in_graph):
    """A fast route's checks: run() (after reset()) with the route on and
    off gives the same tensors bit for bit and counts `calls_each` calls of
    it on the route (calls()[0]) and as many off it (calls()[1]); under the
    profiler a LayerNorm forward keeps off the route; a RMSNorm forward and
    backward captured in a CUDA graph take it `in_graph` times and replay
    to the eager result. switch(on) turns the route on or off and returns
    the previous setting."""
    x0, n, w0, b0, g = data
    got, counted = {}, []
    before = switch(True)
    try:
        for on in (True, False):
            switch(on)
            reset()
            start = calls()
            got[on] = run()
            torch.cuda.synchronize()
            counted.append(tuple(a - b for a, b in zip(calls(), start)))
        switch(True)
        start = calls()
        with torch.profiler.profile():
            nt.layer_norm(x0, n, w0, b0)
        assert calls()[0] == start[0]
        # A captured step: the route inside the capture too.
        xg = x0.detach().clone().requires_grad_(True)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(2):
                nt.rms_norm(xg, n, w0).backward(g)
        torch.cuda.current_stream().wait_stream(s)
        graph = torch.cuda.CUDAGraph()
        xg.grad = None
        start = calls()
        with torch.cuda.graph(graph):
            yg = nt.rms_norm(xg, n, w0)
            yg.backward(g)
        assert calls()[0] - start[0] == in_graph
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(yg, nt.rms_norm(x0, n, w0))
    finally:
        switch(before)
    assert counted == [(calls_each, 0), (0, calls_each)], counted
    for a, b in zip(got[True], got[False]):
        assert torch.equal(a, b)


def test_direct_calls_on_cuda_tensors():
    """With both C++ libraries the autograd kernels call the C++ bodies
    without the dispatcher on CUDA tensors, the forward and the backward
    (on autograd's CUDA worker thread), also under CUDA autocast and while
    a CUDA graph is captured; with the direct table taken back the same
    calls go through the dispatcher, bit for bit the same numbers. Under
    the profiler they go through the dispatcher (it records the ops)."""
    if not nt._cpp_autograd or nt._native is None or \
            nt._native.direct is None:
        pytest.skip("no libnormtorch.so / libnormtorch_autograd.so")
    ag = nt._autograd_ext
    torch.manual_seed(13)
    n, bf = 1024, torch.bfloat16
    x0 = torch.randn(64, n, device=DEV, dtype=bf)
    r0 = torch.randn(64, n, device=DEV, dtype=bf)
    w0, b0 = torch.randn(n, device=DEV), torch.randn(n, device=DEV)
    g = torch.randn(64, n, device=DEV, dtype=bf)

    def run():
        out = []
        x, r, w, b = (t.detach().requires_grad_(True)
                      for t in (x0, r0, w0, b0))
        for y in (nt.layer_norm(x, n, w, b), nt.rms_norm(x, n, w),
                  sum(nt.add_rms_norm(x, r, n, w))):
            (y * 2).backward(g)
            out.append(y)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out.append(nt.rms_norm(x, n, w.bfloat16()))
        return out + [x.grad, r.grad, w.grad, b.grad]

    check_route(nt._use_direct, ag.body_calls, run, lambda: None,
                (x0, n, w0, b0, g), calls_each=7, in_graph=2)


def test_python_entry_on_cuda_tensors():
    """The eager calls on CUDA tensors enter through the Python entry's
    fast route (forward with grad, without, under CUDA autocast, inside a
    CUDA graph capture), with the numbers and gradients of the route
    through the eager ops' callables bit for bit; under the profiler they
    take the callables (its trace keeps the ops)."""
    ag = nt._autograd_ext
    if not nt._cpp_autograd or getattr(ag, "_entries", None) is None or \
            nt._ln_eager is torch.ops.norm_mlir._eager_layer_norm.default._op:
        pytest.skip("no Python entry in this wheel's autograd library")
    torch.manual_seed(17)
    n, bf = 1024, torch.bfloat16
    x0 = torch.randn(64, n, device=DEV, dtype=bf)
    r0 = torch.randn(64, n, device=DEV, dtype=bf)
    w0, b0 = torch.randn(n, device=DEV), torch.randn(n, device=DEV)
    g = torch.randn(64, n, device=DEV, dtype=bf)
    ln = nt.LayerNorm(n, device=DEV, dtype=bf)

    def run():
        x, r, w, b = (t.detach().requires_grad_(True)
                      for t in (x0, r0, w0, b0))
        out = []
        for y in (nt.layer_norm(x, n, w, b), nt.rms_norm(x, n, w),
                  sum(nt.add_layer_norm(x, r, n, w, b)), ln(x)):
            (y * 2).backward(g)
            out.append(y)
        with torch.no_grad():
            out.append(nt.rms_norm(x0, n, w0))
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out.append(nt.layer_norm(x0, n, w0, b0))
        return out + [x.grad, r.grad, w.grad, b.grad, ln.weight.grad]

    def reset():
        ln.weight.grad = ln.bias.grad = None

    check_route(ag.entry_on, ag.entry_calls, run, reset, (x0, n, w0, b0, g),
                calls_each=6, in_graph=1)


@pytest.mark.parametrize("m,n", [(300, 2048), (8, 65536), (5000, 768)])
@pytest.mark.parametrize("norm", ["layer_norm", "rms_norm",
                                  "add_layer_norm"])
def test_dx_into_dy_agrees(norm, m, n):
    """dx written into dy (a gradient autograd alone holds: here the mul's)
    is bit for bit the dx of a new tensor (the user's gradient, which is
    never written), and leaves the user's gradient as it was; rows of one
    block, few wide rows (a row split over a cluster), many short rows."""
    if not nt._cpp_autograd:
        pytest.skip("no libnormtorch_autograd.so")
    torch.manual_seed(12)
    bf = torch.bfloat16
    x0 = torch.randn(m, n, device=DEV, dtype=bf)
    r0 = torch.randn(m, n, device=DEV, dtype=bf)
    w0 = torch.randn(n, device=DEV)
    b0 = torch.randn(n, device=DEV)
    g = torch.randn(m, n, device=DEV, dtype=bf)

    def run(into):
        x, r, w, b = (t.detach().requires_grad_(True)
                      for t in (x0, r0, w0, b0))
        y = _norm_forms(norm, x, r, n, w, b)[0]
        g2 = g * 2
        with torch.profiler.profile() as prof:
            if into:
                (y * 2).backward(g)  # dy: the mul's gradient, g * 2
            else:
                y.backward(g2)  # the same values, held here
        ops = [e.name for e in prof.events() if "_bwd" in e.name]
        assert any("_into_dy" in o for o in ops) == into, ops
        return [t.grad for t in (x, r, w, b) if t.grad is not None]

    g0 = g.clone()
    got, want = run(True), run(False)
    assert torch.equal(g, g0)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert torch.equal(a, b)


# ------------------------------------------- residual add + norm

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("norm", ["layer_norm", "rms_norm"])
def test_add_norm_grads(dtype, norm):
    """add_layer_norm / add_rms_norm against float64 x + residual then the
    norm: y, h, and the gradients of x, residual and the parameters, with
    both outputs used (h's gradient reaches dx through the kernel's
    dresidual)."""
    torch.manual_seed(12)
    n = 1536
    x0 = torch.randn(3, 97, n, device=DEV, dtype=dtype)
    r0 = torch.randn(3, 97, n, device=DEV, dtype=dtype)
    w0 = torch.randn(n, device=DEV, dtype=dtype)
    b0 = torch.randn(n, device=DEV, dtype=dtype)
    ours = leaves(x0, r0, w0, b0)
    ref = [t.detach().double().requires_grad_(True)
           for t in (x0, r0, w0, b0)]
    if norm == "layer_norm":
        y, h = nt.add_layer_norm(ours[0], ours[1], n, ours[2], ours[3])
        h64 = ref[0] + ref[1]
        y64 = ref_ln(h64, (n,), ref[2], ref[3], 1e-5)
    else:
        y, h = nt.add_rms_norm(ours[0], ours[1], n, ours[2], 1e-6)
        h64 = ref[0] + ref[1]
        y64 = ref_rms(h64, (n,), ref[2], 1e-6)
    gy, gh = torch.randn_like(y64), torch.randn_like(h64)
    torch.autograd.backward((y, h), (gy.to(dtype), gh.to(dtype)))
    torch.autograd.backward((y64, h64), (gy, gh))
    tol = TOL[dtype]
    assert rel(y, y64) < tol and rel(h, h64) < tol
    used = 4 if norm == "layer_norm" else 3
    for i, (a, b) in enumerate(zip(ours[:used], ref[:used])):
        assert a.grad.dtype == dtype and a.grad.shape == a.shape
        assert rel(a.grad, b.grad) < tol * 4, (i, rel(a.grad, b.grad))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("norm", ["layer_norm", "rms_norm"])
@pytest.mark.parametrize("n", [1000, 1024, 4096, 8192, 32768, 65536,
                               131072])
@pytest.mark.parametrize("m", [5, 257])
def test_add_norm_fused_forward_matches_torch(dtype, norm, n, m):
    """The fused forward (one kernel: x and residual read once, h written
    once, y from h in registers): h is torch's x + residual bitwise, y
    is torch's own F.layer_norm / F.rms_norm of that sum (torch's kernel,
    same dtype) within the dtype's tolerance, and the statistics match
    the unfused path's (our norm of h) exactly. Few rows and wide ones
    take the sm_90 table's row split over a cluster (N >= 32768 at M <=
    128, N = 131072 at every M)."""
    torch.manual_seed(14)
    x = torch.randn(m, n, device=DEV, dtype=dtype)
    r = torch.randn(m, n, device=DEV, dtype=dtype)
    w = torch.randn(n, device=DEV, dtype=dtype)
    b = torch.randn(n, device=DEV, dtype=dtype)
    with torch.no_grad():
        if norm == "layer_norm":
            y, h = nt.add_layer_norm(x, r, n, w, b)
            want = torch.nn.functional.layer_norm(x + r, (n,), w, b, 1e-5)
            y2 = nt.layer_norm(x + r, n, w, b)
        else:
            y, h = nt.add_rms_norm(x, r, n, w, 1e-6)
            want = torch.nn.functional.rms_norm(x + r, (n,), w, 1e-6)
            y2 = nt.rms_norm(x + r, n, w, 1e-6)
    assert torch.equal(h, x + r)
    assert rel(y, want.double()) < TOL[dtype]
    # The same statistics from h as stored: the fused y is the unfused y.
    assert torch.equal(y, y2)


def test_add_norm_opcheck_compile_and_graphs():
    """opcheck on the residual-add ops and the backward ops with
    dresidual; torch.compile of a pre-norm block using add_rms_norm
    without graph breaks and with eager's numbers; CUDA graph replay."""
    torch.manual_seed(13)
    n, bf = 512, torch.bfloat16
    x = torch.randn(64, n, device=DEV, dtype=bf, requires_grad=True)
    r = torch.randn(64, n, device=DEV, dtype=bf, requires_grad=True)
    w = torch.randn(n, device=DEV, requires_grad=True)
    b = torch.randn(n, device=DEV, requires_grad=True)
    dy = torch.randn(64, n, device=DEV, dtype=bf)
    with torch.no_grad():
        _, h, mean, rstd = nt._add_ln_fwd(x, r, w, b, n, 1e-5, False)
        _, _, rrstd = nt._add_rms_fwd(x, r, w, n, 1e-6, False)
    for op, args in (
            (nt._add_ln_fwd, (x, r, w, b, n, 1e-5, False)),
            (nt._add_rms_fwd, (x, r, w, n, 1e-6, True)),
            (nt._ln_bwd, (dy, h, mean, rstd, w.detach(), True, n, False,
                          dy)),
            (nt._rms_bwd, (dy, h, rrstd, None, n, False, dy))):
        torch.library.opcheck(op, args)

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.rms = nt.RMSNorm(n)
            self.fc = torch.nn.Linear(n, n)

        def forward(self, x, residual):
            y, h = nt.add_rms_norm(x, residual, n, self.rms.weight)
            return self.fc(y) + h

    model = Block().to(DEV)
    xf = torch.randn(64, n, device=DEV, requires_grad=True)
    rf = torch.randn(64, n, device=DEV, requires_grad=True)
    torch._dynamo.reset()
    explain = torch._dynamo.explain(model)(xf, rf)
    assert explain.graph_break_count == 0, explain.break_reasons
    out = torch.compile(model)(xf, rf)
    ref = model(xf.detach(), rf.detach())
    assert rel(out, ref) < 1e-5

    m = nt.LayerNorm(n, device=DEV)
    xg = torch.randn(100, n, device=DEV, requires_grad=True)
    rg = torch.randn(100, n, device=DEV, requires_grad=True)
    g = torch.randn(100, n, device=DEV)

    def step():
        y, h = nt.add_layer_norm(xg, rg, n, m.weight, m.bias)
        torch.autograd.backward((y, h), (g, g))
        return y
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            xg.grad = rg.grad = None
            step()
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    xg.grad = rg.grad = None
    m.zero_grad(set_to_none=False)
    with torch.cuda.graph(graph):
        y = step()
    with torch.no_grad():
        xg.copy_(torch.randn_like(xg))
    xg.grad.zero_()
    rg.grad.zero_()
    graph.replay()
    torch.cuda.synchronize()
    xe, re_ = (t.detach().clone().requires_grad_(True) for t in (xg, rg))
    he = xe + re_
    ye = torch.nn.functional.layer_norm(he, (n,), m.weight.detach(),
                                        m.bias.detach())
    torch.autograd.backward((ye, he), (g, g))
    assert rel(y, ye) < 1e-5
    assert rel(xg.grad, xe.grad) < 1e-4 and rel(rg.grad, re_.grad) < 1e-4


def test_rms_norm_default_eps_on_the_gpu():
    """eps=None as torch's RMSNorm on CUDA: f32's epsilon for bf16 x
    (small rows show it: bf16's eps would shrink them about tenfold)."""
    torch.manual_seed(10)
    x = (torch.randn(64, 512, device=DEV) * 0.01).bfloat16()
    ours = nt.RMSNorm(512, device=DEV, dtype=torch.bfloat16)(x)
    theirs = torch.nn.RMSNorm(512, device=DEV, dtype=torch.bfloat16)(x)
    assert rel(ours, theirs) < 2e-2


def test_readme_example():
    # The README's example, as written there.
    import torch
    import norm_mlir.torch as nt
    model = torch.nn.Sequential(torch.nn.Linear(1024, 1024), torch.nn.LayerNorm(1024)).cuda()
    model[1] = nt.LayerNorm(1024).cuda()  # same parameters and state-dict keys
    model(torch.randn(8, 1024, device="cuda")).sum().backward()
    assert model[1].weight.grad is not None
