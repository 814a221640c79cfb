#!/usr/bin/env python3
"""Host time of one norm call on CUDA, by variant, against torch's: where a
backward's extra microseconds come from. Each variant queues --calls calls
without synchronizing (a backward's graphs built first, untimed); the
variants are interleaved over --rounds rounds and each row is the median
over them (us a call). "gpu" is the wall time of the same batch with its
final synchronization, a call: where it exceeds the host time the batch
was GPU-bound and the host time is not the host's alone.

    python3 bench/host_cuda.py [--shape 8x1024 8192x512] [--rounds 9]

Variants: autograd backwards (y.backward(g)) of torch's and our
layer_norm with weight and bias, weight only, none, and rms_norm; the
backward ops called alone (no autograd: aten.native_layer_norm_backward
against norm_mlir::layer_norm_bwd with and without the bias's gradient,
rms_norm_bwd); one aten.add as the cost of a launch from Python.
"""

import argparse
import statistics
import time

import torch
import torch.nn.functional as F


def timed(fn, calls):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    return (t1 - t0) / calls * 1e6, (t2 - t0) / calls * 1e6


def timed_backward(make, g, calls):
    ys = [make() for _ in range(calls)]
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for y in ys:
        y.backward(g)
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    return (t1 - t0) / calls * 1e6, (t2 - t0) / calls * 1e6


def variants(m, n):
    import norm_mlir.torch as nt
    dev = torch.device("cuda")

    def t(*shape, grad=False):
        return torch.randn(*shape, device=dev, dtype=torch.bfloat16
                           ).requires_grad_(grad)
    x, w, b = t(m, n, grad=True), t(n, grad=True), t(n, grad=True)
    g = t(m, n)
    xd, wd, bd = x.detach(), w.detach(), b.detach()
    _, mean, rstd = torch.ops.aten.native_layer_norm(xd, (n,), wd, bd, 1e-5)
    _, omean, orstd = torch.ops.norm_mlir.layer_norm_fwd(xd, wd, bd, n, 1e-5,
                                                         False)
    _, rrstd = torch.ops.norm_mlir.rms_norm_fwd(xd, wd, n, 1e-6, False)
    bwd = {
        "bwd LN w,b torch": lambda: F.layer_norm(x, (n,), w, b),
        "bwd LN w,b ours": lambda: nt.layer_norm(x, (n,), w, b),
        "bwd LN w torch": lambda: F.layer_norm(x, (n,), w, None),
        "bwd LN w ours": lambda: nt.layer_norm(x, (n,), w, None),
        "bwd LN - torch": lambda: F.layer_norm(x, (n,)),
        "bwd LN - ours": lambda: nt.layer_norm(x, (n,)),
        "bwd RMS w torch": lambda: F.rms_norm(x, (n,), w, 1e-6),
        "bwd RMS w ours": lambda: nt.rms_norm(x, (n,), w, 1e-6),
    }
    ops = {
        "op LN bwd torch": lambda: torch.ops.aten.native_layer_norm_backward(
            g, xd, (n,), mean, rstd, wd, bd, [True, True, True]),
        "op LN bwd ours": lambda: torch.ops.norm_mlir.layer_norm_bwd(
            g, xd, omean, orstd, wd, True, n, False),
        "op LN bwd ours, no db": lambda: torch.ops.norm_mlir.layer_norm_bwd(
            g, xd, omean, orstd, wd, False, n, False),
        "op RMS bwd ours": lambda: torch.ops.norm_mlir.rms_norm_bwd(
            g, xd, rrstd, wd, n, False),
        "op LN fwd torch": lambda: torch.ops.aten.native_layer_norm(
            xd, (n,), wd, bd, 1e-5),
        "op LN fwd ours": lambda: torch.ops.norm_mlir.layer_norm_fwd(
            xd, wd, bd, n, 1e-5, False),
        "aten.add": lambda: torch.ops.aten.add(xd, xd),
    }
    return bwd, ops, g, (x, w, b)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shape", nargs="+", default=["8x1024", "8192x512"])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--calls", type=int, default=200)
    args = ap.parse_args()
    for shape in args.shape:
        m, n = map(int, shape.split("x"))
        bwd, ops, g, params = variants(m, n)
        got = {}
        for k, f in bwd.items():  # warm-up: compiles, caches
            f().backward(g)
        for k, f in ops.items():
            f()
        for _ in range(args.rounds):
            for k, f in bwd.items():
                got.setdefault(k, []).append(
                    timed_backward(f, g, args.calls))
            for p in params:
                p.grad = None
            for k, f in ops.items():
                got.setdefault(k, []).append(timed(f, args.calls))
        print("\n%s bf16 (us a call, median of %d rounds of %d calls)" % (
            shape, args.rounds, args.calls))
        print("%-26s %8s %8s %8s" % ("variant", "host", "min", "gpu"))
        for k, v in got.items():
            hs = [h for h, _ in v]
            print("%-26s %8.2f %8.2f %8.2f" % (
                k, statistics.median(hs), min(hs),
                statistics.median(w for _, w in v)))


if __name__ == "__main__":
    main()
