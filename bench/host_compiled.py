#!/usr/bin/env python3
"""The host time of our ops as torch.compile calls them, against torch's
own: a small LayerNorm / RMSNorm (8 x 1024 bf16, kernels of a few
microseconds, so the host time is what a call costs) called through the
dispatcher as inductor's wrapper calls it, and inside a compiled function
(the residual add and the norm; forward alone, then forward + backward).
Each row: host microseconds a call, the median of 5 batches of 200 calls
(first_use.per_call). Issue 22: the compiled training steps spent 1-4 ms
more host time a step with our modules than with torch's while their
CUDA runtime calls took the same time.

    python3 bench/host_compiled.py        (with the wheel on PYTHONPATH)
"""

import sys

import torch

from first_use import per_call, small_problem  # bench/, this directory


def main():
    import norm_mlir.torch as nt
    F = torch.nn.functional
    n, x, w, b, g = small_problem()
    r = torch.randn_like(x)
    xd, wd, bd = x.detach(), w.detach(), b.detach()
    eps = 1e-5
    rows = []

    def add(name, theirs, ours):
        rows.append((name, per_call(theirs), per_call(ours)))

    ln = torch.ops.norm_mlir.layer_norm_fwd.default
    rms = torch.ops.norm_mlir.rms_norm_fwd.default
    add("layer_norm forward, the op through the dispatcher",
        lambda: torch.ops.aten.native_layer_norm.default(xd, (n,), wd, bd,
                                                         eps),
        lambda: ln(xd, wd, bd, n, eps, False))
    add("rms_norm forward, the op through the dispatcher",
        lambda: torch.ops.aten._fused_rms_norm.default(xd, (n,), wd, eps)
        if hasattr(torch.ops.aten, "_fused_rms_norm")
        else F.rms_norm(xd, (n,), wd, eps),
        lambda: rms(xd, wd, n, eps, False))

    def compiled(norm):
        return torch.compile(norm, dynamic=False)

    for name, mod_t, mod_o in (
            ("layer_norm", torch.nn.LayerNorm, nt.LayerNorm),
            ("rms_norm", torch.nn.RMSNorm, nt.RMSNorm)):
        mt = mod_t(n, device="cuda", dtype=torch.bfloat16)
        mo = mod_o(n, device="cuda", dtype=torch.bfloat16)
        ft = compiled(lambda h, m=mt: m(h + r))
        fo = compiled(lambda h, m=mo: m(h + r))
        with torch.no_grad():
            add("%s: compiled add + norm, forward" % name,
                lambda: ft(xd), lambda: fo(xd))
        add("%s: compiled add + norm, forward + backward" % name,
            lambda: ft(x).backward(g), lambda: fo(x).backward(g))
    print("| call (8 x 1024 bf16) | torch us | ours us | ours / torch |")
    print("| --- | ---: | ---: | ---: |")
    for name, t, o in rows:
        print("| %s | %.1f | %.1f | %.2fx |" % (name, t, o, o / t))
    return 0


if __name__ == "__main__":
    sys.exit(main())
