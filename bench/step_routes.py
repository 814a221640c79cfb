#!/usr/bin/env python3
"""One eager training step (bench/train_step.py's model) with torch's
norms and with ours through each of norm_mlir.torch's host routes, the
routes interleaved round by round: which route a host-bound step wants.
Per route: ms a step (CUDA events, median) and ms the host takes to queue
it (perf_counter from the step's call to its return, median).

    python3 bench/step_routes.py [--width 512] [--norm layer_norm]
                                 [--rounds 16] [--steps 8]

Routes: "ours" (the default: the C++ autograd kernels, the Python entry's
fast route, the bodies called directly), "ours, no direct" (the bodies
through the dispatcher), "ours, no entry" (the eager calls through the
ops' callables), "ours, Python autograd" (torch.library's formulas).
"""

import argparse
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_step import SHAPES, batch, build, make_step  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--norm", default="layer_norm")
    ap.add_argument("--rounds", type=int, default=16)
    ap.add_argument("--steps", type=int, default=8)
    args = ap.parse_args()
    import norm_mlir.torch as nt
    dev = torch.device("cuda")
    b, t, layers = SHAPES[args.width]
    theirs, ours = build(args.width, layers, args.norm, "bf16", dev)
    st = {"torch": make_step(theirs, "eager", "bf16", dev)}
    step_ours = make_step(ours, "eager", "bf16", dev)
    ag = nt._autograd_ext if nt._cpp_autograd else None

    def route(name):
        nt._use_direct(name != "ours, no direct")
        if ag is not None:
            ag.entry_on(name != "ours, no entry")
        want = None if name == "ours, Python autograd" else ag
        if (nt._autograd_ext if nt._cpp_autograd else None) is not want:
            nt._use_autograd(want)
    routes = ["torch", "ours"]
    if ag is not None:
        routes += ["ours, no entry", "ours, Python autograd"]
    if nt._native is not None and getattr(nt._native, "direct", None):
        routes.append("ours, no direct")
    ms = {r: [] for r in routes}
    host = {r: [] for r in routes}
    i = 0
    for rnd in range(args.rounds + 1):
        order = routes if rnd % 2 == 0 else routes[::-1]
        for r in order:
            if r != "torch":
                route(r)
            s = st.get(r, step_ours)
            for _ in range(args.steps):
                data = batch(i, b, t, dev)
                i += 1
                e0 = torch.cuda.Event(enable_timing=True)
                e1 = torch.cuda.Event(enable_timing=True)
                e0.record()
                h0 = time.perf_counter()
                s(*data)
                h1 = time.perf_counter()
                e1.record()
                if rnd:  # round 0 warms every route up
                    ms[r].append((e0, e1))
                    host[r].append((h1 - h0) * 1e3)
            torch.cuda.synchronize()
    route("ours")
    print("width %d %s bf16 eager, %d rounds of %d steps a route" % (
        args.width, args.norm, args.rounds, args.steps))
    print("%-24s %8s %8s %8s" % ("route", "ms", "host ms", "vs torch"))
    base = None
    for r in routes:
        m = statistics.median(a.elapsed_time(z) for a, z in ms[r])
        base = base or m
        print("%-24s %8.3f %8.3f %7.3fx" % (r, m, statistics.median(host[r]),
                                             base / m))


if __name__ == "__main__":
    main()
