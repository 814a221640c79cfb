#!/usr/bin/env python3
"""The host time of norm_mlir.torch's eager calls, piece by piece, on the
CPU (no GPU needed): CPU tensors through the real op bodies, each launch
replaced by normrt_validate (train_step.py's cpu_validation), 8 x 1024
bf16, weight and bias requiring grad. Each row is the fastest of --repeat
batches of --calls calls (us a call): on a shared machine the minimum is
the steadiest estimate of what a call costs, and a change counts only
where its rows move by more than the spread between runs.

    python3 bench/host_pieces.py [--repeat 30] [--calls 200]

torch's rows compute on the CPU (its norms have no validate mode), so they
time torch's Python and dispatch plus a CPU norm of 8 x 1024: a bound on
the order of magnitude, not a target. Ours against ours is what this
compares (before / after a change).
"""

import argparse
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_step import cpu_validation  # noqa: E402


def best(fn, calls, repeat):
    fn()
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        ts.append((time.perf_counter() - t0) / calls * 1e6)
    return min(ts)


def best_backward(make, g, calls, repeat):
    ts = []
    for _ in range(repeat):
        ys = [make() for _ in range(calls)]
        t0 = time.perf_counter()
        for y in ys:
            y.backward(g)
        ts.append((time.perf_counter() - t0) / calls * 1e6)
    return min(ts)


def rows(calls, repeat, m=8, n=1024):
    import norm_mlir.torch as nt
    torch.manual_seed(0)

    def t(*shape):
        return torch.randn(*shape, dtype=torch.bfloat16)
    x, w, b, g, r = t(m, n), t(n), t(n), t(m, n), t(m, n)
    for p in (x, w, b, r):
        p.requires_grad_(True)
    ln_t = torch.nn.LayerNorm(n, dtype=torch.bfloat16)
    ln_o = nt.LayerNorm(n, dtype=torch.bfloat16)
    rms_t = torch.nn.RMSNorm(n, eps=1e-6, dtype=torch.bfloat16)
    rms_o = nt.RMSNorm(n, eps=1e-6, dtype=torch.bfloat16)
    xd = x.detach()
    cases = [
        ("layer_norm()", lambda: F.layer_norm(x, (n,), w, b),
         lambda: nt.layer_norm(x, (n,), w, b)),
        ("LayerNorm module", lambda: ln_t(x), lambda: ln_o(x)),
        ("rms_norm()", lambda: F.rms_norm(x, (n,), w, 1e-6),
         lambda: nt.rms_norm(x, (n,), w, 1e-6)),
        ("RMSNorm module", lambda: rms_t(x), lambda: rms_o(x)),
        ("add_layer_norm()", lambda: F.layer_norm(x + r, (n,), w, b),
         lambda: nt.add_layer_norm(x, r, (n,), w, b)[0]),
        ("add_rms_norm()", lambda: F.rms_norm(x + r, (n,), w, 1e-6),
         lambda: nt.add_rms_norm(x, r, (n,), w, 1e-6)[0]),
    ]
    out = []
    for name, theirs, ours in cases:
        for who, f in (("torch", theirs), ("ours", ours)):
            out.append((name, who, "forward", best(f, calls, repeat)))
            out.append((name, who, "backward",
                        best_backward(f, g, calls, repeat)))
            out.append((name, who, "forward + backward",
                        best(lambda: f().backward(g), calls, repeat)))
            # dy made by autograd (the mul's gradient), as in a model:
            # ours may write dx into it.
            out.append((name, who, "backward, dy from the graph",
                        best_backward(lambda: f() * 2, g, calls, repeat)))
    with torch.no_grad():
        out.append(("layer_norm()", "torch", "forward, no grad",
                    best(lambda: F.layer_norm(xd, (n,), w, b), calls,
                         repeat)))
        out.append(("layer_norm()", "ours", "forward, no grad",
                    best(lambda: nt.layer_norm(xd, (n,), w, b), calls,
                         repeat)))
        out.append(("rms_norm()", "torch", "forward, no grad",
                    best(lambda: F.rms_norm(xd, (n,), w, 1e-6), calls,
                         repeat)))
        out.append(("rms_norm()", "ours", "forward, no grad",
                    best(lambda: nt.rms_norm(xd, (n,), w, 1e-6), calls,
                         repeat)))
    # The op alone (its C++ callable: dispatcher, autograd kernel, body).
    op = torch.ops.norm_mlir.layer_norm_fwd.default._op
    out.append(("layer_norm_fwd op", "ours", "forward",
                best(lambda: op(x, w, b, n, 1e-5, False), calls, repeat)))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=30)
    args = ap.parse_args()
    torch.set_num_threads(1)
    import norm_mlir.torch as nt
    with cpu_validation() as native:
        got = rows(args.calls, args.repeat)
    print("host us a call, 8 x 1024 bf16, CPU, launches validated; C++ "
          "bodies %s, C++ autograd %s; best of %d x %d calls" % (
              "in" if native else "absent",
              "in" if nt._cpp_autograd else "absent", args.repeat,
              args.calls))
    print("%-20s %-6s %-28s %8s" % ("call", "impl", "phase", "us"))
    for name, who, phase, us in got:
        print("%-20s %-6s %-28s %8.2f" % (name, who, phase, us))


if __name__ == "__main__":
    main()
