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
the order of magnitude, not a target. The "torch 1x8" column runs torch's
on 1 x 8 (rows of 8: next to no compute), which is torch's host path for
LayerNorm (its CPU kernel is one op, as on CUDA, less the launch); torch's
RMSNorm on the CPU is a composition of several ops (on CUDA one fused op),
so its rows bound nothing. "ours via op" has the eager calls go through
the ops' callables (the Python entry's fast route off: what they did
before it). Ours against ours is what this compares (before / after a
change).
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


def _tensors(m, n):
    def t(*shape):
        return torch.randn(*shape, dtype=torch.bfloat16)
    x, w, b, g, r = t(m, n), t(n), t(n), t(m, n), t(m, n)
    for p in (x, w, b, r):
        p.requires_grad_(True)
    return x, w, b, g, r


def _cases(nt, m, n, who):
    """(name, function, upstream gradient) of each call, torch's or
    ours, at m x n bf16."""
    x, w, b, g, r = _tensors(m, n)
    if who == "torch":
        ln = torch.nn.LayerNorm(n, dtype=torch.bfloat16)
        rms = torch.nn.RMSNorm(n, eps=1e-6, dtype=torch.bfloat16)
        fs = [lambda: F.layer_norm(x, (n,), w, b), lambda: ln(x),
              lambda: F.rms_norm(x, (n,), w, 1e-6), lambda: rms(x),
              lambda: F.layer_norm(x + r, (n,), w, b),
              lambda: F.rms_norm(x + r, (n,), w, 1e-6)]
    else:
        ln = nt.LayerNorm(n, dtype=torch.bfloat16)
        rms = nt.RMSNorm(n, eps=1e-6, dtype=torch.bfloat16)
        fs = [lambda: nt.layer_norm(x, (n,), w, b), lambda: ln(x),
              lambda: nt.rms_norm(x, (n,), w, 1e-6), lambda: rms(x),
              lambda: nt.add_layer_norm(x, r, (n,), w, b)[0],
              lambda: nt.add_rms_norm(x, r, (n,), w, 1e-6)[0]]
    names = ["layer_norm()", "LayerNorm module", "rms_norm()",
             "RMSNorm module", "add_layer_norm()", "add_rms_norm()"]
    xd = x.detach()
    if who == "torch":
        nograd = [lambda: F.layer_norm(xd, (n,), w, b),
                  lambda: F.rms_norm(xd, (n,), w, 1e-6)]
    else:
        nograd = [lambda: nt.layer_norm(xd, (n,), w, b),
                  lambda: nt.rms_norm(xd, (n,), w, 1e-6)]
    return list(zip(names, fs)), list(zip(names[0:3:2], nograd)), g


PHASES = ("forward", "backward", "forward + backward",
          "backward, dy from the graph", "forward, no grad")


def rows(calls, repeat, m=8, n=1024, only=None):
    """{(call, phase): {column: us}}; columns: torch (m x n), torch 1x8,
    ours, ours via op (where the Python entry is there)."""
    import norm_mlir.torch as nt
    torch.manual_seed(0)
    ag = nt._autograd_ext if nt._cpp_autograd else None
    columns = [("torch", "torch", m, n), ("torch 1x8", "torch", 1, 8),
               ("ours", "ours", m, n)]
    if ag is not None and getattr(ag, "_entries", None) is not None and \
            nt._ln_eager is not torch.ops.norm_mlir._eager_layer_norm \
            .default._op:
        columns.append(("ours via op", "ours", m, n))
    out = {}
    for col, who, mm, nn in columns:
        if only and col not in only:
            continue
        before = ag.entry_on(False) if col == "ours via op" else None
        try:
            cases, nograd, g = _cases(nt, mm, nn, who)
            for name, f in cases:
                cell = out.setdefault
                cell((name, "forward"), {})[col] = best(f, calls, repeat)
                cell((name, "backward"), {})[col] = best_backward(
                    f, g, calls, repeat)
                cell((name, "forward + backward"), {})[col] = best(
                    lambda: f().backward(g), calls, repeat)
                # dy made by autograd (the mul's gradient), as in a model:
                # ours may write dx into it.
                cell((name, "backward, dy from the graph"), {})[col] = \
                    best_backward(lambda: f() * 2, g, calls, repeat)
            with torch.no_grad():
                for name, f in nograd:
                    out.setdefault((name, "forward, no grad"), {})[col] = \
                        best(f, calls, repeat)
        finally:
            if before is not None:
                ag.entry_on(before)
    return [c for c, _, _, _ in columns if not only or c in only], out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=30)
    args = ap.parse_args()
    torch.set_num_threads(1)
    import norm_mlir.torch as nt
    with cpu_validation() as native:
        cols, got = rows(args.calls, args.repeat)
    print("host us a call, 8 x 1024 bf16, CPU, launches validated; C++ "
          "bodies %s, C++ autograd %s; best of %d x %d calls" % (
              "in" if native else "absent",
              "in" if nt._cpp_autograd else "absent", args.repeat,
              args.calls))
    print("%-18s %-28s" % ("call", "phase") +
          "".join("%12s" % c for c in cols) + "  ours/torch1x8")
    for (name, phase), v in sorted(got.items(), key=lambda kv: (
            kv[0][0], PHASES.index(kv[0][1]))):
        ratio = v["ours"] / v["torch 1x8"] if "ours" in v and \
            "torch 1x8" in v else float("nan")
        print("%-18s %-28s" % (name, phase) +
              "".join("%12.2f" % v[c] if c in v else "%12s" % ""
                      for c in cols) + "  %6.2f" % ratio)


if __name__ == "__main__":
    main()
