#!/usr/bin/env python3
"""The backward with and without dresidual, as single op calls (GPU).

LayerNorm backward (norm_mlir::layer_norm_bwd), the same with a
dresidual, the dx-into-dy form with it, add_layer_norm's forward, and
torch.compile's add + layer_norm for reference, bf16, at a few (M, N):
CUDA events around each call, median of 30 after 3 of warm-up, L2
flushed (a 256 MB memset) before each. What showed that dresidual,
read in the last column loop, costs 1.9x where its bytes are a third
more (bench/RESULTS.md, tenth session). Needs norm_mlir (the wheel) and
a GPU:

    PYTHONPATH=<site with the wheel> python3 bench/dres_ops.py
"""
import statistics

import torch
import norm_mlir.torch as nt
o = torch.ops.norm_mlir
dev = "cuda"
def t(fn, reps=30):
    for _ in range(3): fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        flush = torch.empty(64 << 20, dtype=torch.int32, device=dev); flush.zero_()
        a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); torch.cuda.synchronize()
        ts.append(a.elapsed_time(b) * 1e3)
    return statistics.median(ts)
for m, n in ((65536, 768), (32768, 1024), (65536, 512)):
    g = torch.Generator(device=dev); g.manual_seed(m + n)
    r = lambda *s: torch.randn(*s, device=dev, dtype=torch.bfloat16, generator=g)
    x, dy, res, dres = r(m, n), r(m, n), r(m, n), r(m, n)
    w, b = r(n), r(n)
    _, mean, rstd = o.layer_norm_fwd(x, w, b, n, 1e-5, False)
    rows = {}
    rows["bwd"] = t(lambda: o.layer_norm_bwd(dy, x, mean, rstd, w, True, n, False))
    rows["bwd+dres"] = t(lambda: o.layer_norm_bwd(dy, x, mean, rstd, w, True, n, False, dres))
    dy2 = dy.clone()
    rows["bwd+dres into dy"] = t(lambda: o.layer_norm_bwd_into_dy(dy2, x, mean, rstd, w, True, n, False, dres))
    xr = x.detach().requires_grad_(); wr = w.detach().requires_grad_(); br = b.detach().requires_grad_()
    def tf():
        h = xr + res
        yy = torch.nn.functional.layer_norm(h, (n,), wr, br)
        return yy, h
    cf = torch.compile(tf)
    def step():
        yy, h = cf()
        torch.autograd.backward([yy, h], [dy, dres])
    rows["torch.compile add+LN fwd+bwd"] = t(step)
    rows["torch.compile add+LN fwd"] = t(lambda: cf())
    xo = x.detach().requires_grad_(); wo = w.detach().requires_grad_(); bo = b.detach().requires_grad_()
    def os_():
        yy, h = nt.add_layer_norm(xo, res, (n,), wo, bo)
        torch.autograd.backward([yy, h], [dy, dres])
    rows["ours add_layer_norm fwd+bwd"] = t(os_)
    rows["ours add_layer_norm fwd"] = t(lambda: nt.add_layer_norm(x, res, (n,), w, b))
    gb = m * n * 2 / 1e3
    print("%d x %d:" % (m, n), "; ".join("%s %.1f us" % kv for kv in rows.items()), " (one pass %.0f MB)" % (gb / 1e3), flush=True)
