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
    import norm_mlir.torch as nt
    from norm_mlir import cache
    # Where the first op's time goes: its kernels (cache + driver load)
    # apart from its first call through torch's dispatcher.
    t0 = time.perf_counter()
    xb = torch.randn(64, 4096, device="cuda", dtype=torch.bfloat16)
    spec = nt._spec("layer_norm", 4096, xb, None, None, 1e-5, False)
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
        import io
        import pstats
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(30)
        print("first call, cProfile (cumulative):")
        print("\n".join(l for l in buf.getvalue().splitlines() if l.strip()))
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
    print("first_use: %s cache" % ("warm" if args.warm else "cold"))


if __name__ == "__main__":
    main()
