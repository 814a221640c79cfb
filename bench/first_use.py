#!/usr/bin/env python3
"""First-use cost of norm_mlir.torch: compile (norm_mlir.cache, PTX), load
(the driver builds the PTX), and the first call, per op; then the same op
from the disk cache in a fresh process. Prints one table (docs/Python.md).

    NORM_MLIR_CACHE=/tmp/c python3 bench/first_use.py          (cold cache)
    NORM_MLIR_CACHE=/tmp/c python3 bench/first_use.py --warm   (disk hits)

--profile runs the first call of the first op under cProfile and prints
where its time went (the functions with the most cumulative time).
"""

import argparse
import time

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--warm", action="store_true")
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    torch.empty(1, device="cuda")  # CUDA initialised outside the timings
    t0 = time.perf_counter()
    import norm_mlir.torch as nt
    print("import norm_mlir.torch: %.1f ms" % ((time.perf_counter() - t0)
                                               * 1e3))
    from norm_mlir import cache
    # Where the first op's time goes: its kernels (cache + driver load)
    # apart from its first call through torch's dispatcher.
    t0 = time.perf_counter()
    xb = torch.randn(64, 4096, device="cuda", dtype=torch.bfloat16)
    spec = nt._spec("layer_norm", 4096, xb, None, False, 1e-5, False)
    nt._module(spec, xb.device)
    prof = None
    if args.profile:
        import cProfile
        prof = cProfile.Profile()
    t1 = time.perf_counter()
    if prof:
        prof.enable()
    nt.layer_norm(xb, (4096,))
    torch.cuda.synchronize()
    if prof:
        prof.disable()
    t2 = time.perf_counter()
    nt.layer_norm(xb, (4096,))
    torch.cuda.synchronize()
    t3 = time.perf_counter()
    print("first op, no weight: kernels %.1f ms, first call %.1f ms, second "
          "call %.2f ms" % ((t1 - t0) * 1e3, (t2 - t1) * 1e3,
                           (t3 - t2) * 1e3))
    if prof:
        print_profile(prof, "cumulative", 30, "first call, cProfile")
    rows = []
    for name, n, dt in (("layer_norm", 4096, torch.bfloat16),
                        ("rms_norm", 4096, torch.bfloat16),
                        ("layer_norm", 1000, torch.float32),
                        ("rms_norm", 65536, torch.bfloat16)):
        x = torch.randn(64, n, device="cuda", dtype=dt, requires_grad=True)
        w = torch.ones(n, device="cuda", dtype=dt, requires_grad=True)
        fn = (lambda: nt.layer_norm(x, (n,), w)) if name == "layer_norm" \
            else (lambda: nt.rms_norm(x, (n,), w))
        before = dict(cache.stats)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        y = fn()
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        y.sum().backward()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        for _ in range(3):
            fn().sum().backward()
        torch.cuda.synchronize()
        t3 = time.perf_counter()
        y = fn()
        y.sum().backward()
        torch.cuda.synchronize()
        t4 = time.perf_counter()
        got = {k: cache.stats[k] - before[k] for k in cache.stats}
        rows.append((name, n, str(dt).split(".")[-1], (t1 - t0) * 1e3,
                     (t2 - t1) * 1e3, (t4 - t3) * 1e3, got))
    print("%-10s %6s %-8s | %12s %13s %10s | %s" % (
        "op", "N", "dtype", "forward ms", "backward ms", "warm ms",
        "cache (compiled/disk/memory)"))
    for r in rows:
        print("%-10s %6d %-8s | %12.1f %13.1f %10.2f | %d/%d/%d" % (
            r[:6] + (r[6]["compiled"], r[6]["disk"], r[6]["memory"])))
    overhead(nt, args.profile)
    print("first_use: %s cache" % ("warm" if args.warm else "cold"))


def small_problem(m=8, n=1024):
    """n, then x, weight, bias (all requiring grad) and an upstream
    gradient: bf16 on the GPU, a size whose kernels take microseconds."""
    def t(make, *shape):
        return make(*shape, device="cuda", dtype=torch.bfloat16)
    x, w, b = (t(torch.randn, m, n), t(torch.ones, n), t(torch.zeros, n))
    for p in (x, w, b):
        p.requires_grad_(True)
    return n, x, w, b, t(torch.randn, m, n)


def per_call(fn, calls=200):
    """Host microseconds a call of fn: the median of 5 batches of `calls`
    calls, queued without synchronizing, synchronized at each batch's end
    (after one call outside the timing)."""
    import statistics
    fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        ts.append((time.perf_counter() - t0) / calls * 1e6)
    return statistics.median(ts)


def print_profile(prof, sort, lines, title):
    import io
    import pstats
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats(sort).print_stats(lines)
    print("%s (%s):" % (title, sort))
    print("\n".join(l for l in buf.getvalue().splitlines() if l.strip()))


def overhead(nt, profile=False):
    """Host time per call once everything is loaded: a tiny problem (8 x
    1024 bf16), so the kernels take a few microseconds and the rest is
    the Python layer, torch's dispatcher and the launches. Each row is the
    median over 5 batches of 200 calls, queued without synchronizing
    (wall clock over the batch, synchronized at its end)."""
    F = torch.nn.functional
    n, x, w, b, g = small_problem()

    def fb(f):
        def run():
            f().backward(g)
        return run

    rows = [
        ("layer_norm forward, no grad",
         lambda: nt.layer_norm(x.detach(), (n,), w.detach(), b.detach()),
         lambda: F.layer_norm(x.detach(), (n,), w.detach(), b.detach())),
        ("layer_norm forward + backward",
         fb(lambda: nt.layer_norm(x, (n,), w, b)),
         fb(lambda: F.layer_norm(x, (n,), w, b))),
        ("rms_norm forward + backward",
         fb(lambda: nt.rms_norm(x, (n,), w, 1e-6)),
         fb(lambda: F.rms_norm(x, (n,), w, 1e-6))),
    ]
    print("host time per call, 8 x %d bf16 (us, median of 5 x 200):" % n)
    print("%-32s %8s %8s" % ("", "ours", "torch"))
    for name, ours, theirs in rows:
        print("%-32s %8.1f %8.1f" % (name, per_call(ours), per_call(theirs)))

    # Where a backward's host time goes: the op body alone (no autograd),
    # autograd with a Python backward around torch ops (the engine and
    # its Python node, no kernels of ours), and the GPU time of our
    # forward + backward (events around 200 calls).
    with torch.no_grad():
        _, mean, rstd = nt._ln_fwd_impl(x, w, b, n, 1e-5, False)

    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t * 2

        @staticmethod
        def backward(ctx, gy):
            return gy * 2

    split = [
        ("layer_norm backward body alone",
         lambda: nt._ln_bwd_impl(g, x.detach(), mean, rstd, w.detach(), True,
                                 n, False)),
        ("autograd.Function of torch ops", fb(lambda: Scale.apply(x))),
        ("torch ops, no autograd.Function", fb(lambda: x * 2)),
    ]
    for name, fn in split:
        print("%-32s %8.1f" % (name, per_call(fn)))
    # The kernels' own time in one forward + backward (torch.profiler's
    # device times): what the GPU needs, against the host's time above.
    from torch.profiler import ProfilerActivity, profile
    run = rows[1][1]
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(50):
            run()
        torch.cuda.synchronize()
    kernels = [(e.key, e.self_device_time_total / 50, e.count // 50)
               for e in prof.key_averages() if e.self_device_time_total > 0]
    kernels.sort(key=lambda k: -k[1])
    print("layer_norm forward + backward, device time a call: %.1f us (%s)"
          % (sum(k[1] for k in kernels), ", ".join(
              "%s x%d %.1f" % (k[0][:40], k[2], k[1]) for k in kernels[:6])))
    if profile:
        import cProfile
        prof = cProfile.Profile()
        fn = rows[1][1]
        prof.enable()
        for _ in range(200):
            fn()
        torch.cuda.synchronize()
        prof.disable()
        print_profile(prof, "tottime", 25,
                      "200 x layer_norm forward + backward, cProfile")


if __name__ == "__main__":
    main()
