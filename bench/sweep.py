#!/usr/bin/env python3
"""The N sweep of issue 9: ours against every peer, N = 1 .. 262144.

One device call measures the copy bandwidth, then for LayerNorm and
RMSNorm backward (bf16 x and weight, the deterministic strategy) and every
N of configs.SWEEP_N (every power of two from 1 to 262144 and at least as
many sizes that are not: odd, 3/5/7 * 2^k, primes) at M chosen so the case
moves about 1 GiB (configs.sweep_m), plus M = 1 and M = 64 (< the SM count)
at configs.SWEEP_SMALL_M_N:

  ours deterministic, torch eager, torch.compile, liger, triton lesson,
  torch add x+dy (the streaming floor: 3*M*N elements, no reduction)

timed like bench.py (the same Bench class: do_bench medians, L2 flushed,
fresh random inputs, two medians, bitwise repeat, error against float64).

  python3 bench/sweep.py [--out DIR] [--budget-s S] [--ops ...] [--only-n ...]
  python3 bench/sweep.py --dry-run          the plan (no GPU, no torch)
  python3 bench/sweep.py --report JSON      sweep.md/sweep.png from a JSON

Writes DIR/sweep.json (after every shape), DIR/sweep.md (the table, the
geometric mean of best peer time / our time, every shape where we are
slower) and DIR/sweep.png (% of copy against N, log scale, one line per
implementation and the floor; needs matplotlib, else skipped with a note).
Prints sweep.md last. Exit status 0 when every row ran, else 1.
"""

import argparse
import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench as B  # noqa: E402
import configs as C  # noqa: E402

IMPLS = ("ours deterministic", "torch eager", "torch.compile", "liger",
         "triton lesson", "torch add x+dy", B.FWD_FLOOR)
OURS = "ours deterministic"
FLOOR = "torch add x+dy"  # the backward's; the forward's: B.FWD_FLOOR


def out(*a):
    print(*a, flush=True)


def plan(ops, dtypes, only_n=None):
    """(op, dtype, M, N) in run order: the ~1 GiB cases first (N
    ascending, so a budget cut leaves a contiguous range), then the small-M
    cases."""
    shapes = []
    # --only-n may also name N outside the sweep's list (compiled ones:
    # configs.UNTUNED_N).
    ns = sorted(only_n) if only_n else list(C.SWEEP_N)
    for dt in dtypes:
        for n in ns:
            for op in ops:
                shapes.append((op, dt, C.sweep_m(op, n, dt), n))
    for dt in dtypes:
        for n in C.SWEEP_SMALL_M_N:
            if only_n and n not in only_n:
                continue
            for m in C.SWEEP_SMALL_M:
                for op in ops:
                    shapes.append((op, dt, m, n))
    return shapes


# ------------------------------------------------------------- the report

def shape_table(d):
    """{(op, dt, M, N): {impl: row}} in first-appearance order."""
    cells = {}
    for r in d["rows"]:
        k = (r["op"], r["dtype"], r["M"], r["N"])
        cells.setdefault(k, {})[r["impl"]] = r
    return cells


def best_peer(c):
    """(impl, us) of the fastest peer that ran, or (None, None)."""
    best = None
    for p in B.PEERS:
        r = c.get(p)
        if r and "us" in r and (best is None or r["us"] < best[1]):
            best = (p, r["us"])
    return best or (None, None)


def report(d, command=""):
    cells = shape_table(d)
    env = d.get("env", {})
    L = ["## N sweep, %s (%s UTC)" % (env.get("device", "?"),
                                      env.get("date_utc", "?")), ""]
    L.append("Command: `%s`. Kernels from commit %s%s; torch %s, triton %s, "
             "%s. Device-to-device copy: **%.0f GB/s**. %% = the shape's "
             "minimum bytes (bench.py) / median time, against that copy. "
             "'vs peer' = fastest of torch eager, torch.compile and "
             "Liger-Kernel divided by ours (> 1: we are faster)." % (
                 command or "python3 bench/sweep.py",
                 env.get("kernels_git_head") or "?",
                 " (+%s uncommitted files)" % env["kernels_git_dirty_files"]
                 if env.get("kernels_git_dirty_files") else "",
                 env.get("torch", "?"), env.get("triton", "?"),
                 env.get("liger", "liger-kernel ?"), d["copy_gbs"]))
    L.append("")
    L.append("| op | dtype | M | N | ours µs | ours % | floor % | eager % "
             "| compile % | liger % | lesson % | best peer | vs peer | "
             "bitwise |")
    L.append("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
             "| ---: | ---: | --- | ---: | --- |")
    ratios, slower, missing, fam_ratios = [], [], [], []

    def pct(r):
        if not r:
            return "-"
        if "error" in r:
            return "ERR"
        return "%.0f" % r["pct_copy"] if "us" in r else "-"
    for k, c in cells.items():
        o = c.get(OURS)
        peer, pus = best_peer(c)
        ratio = None
        if o and "us" in o and pus:
            ratio = pus / o["us"]
            ratios.append(ratio)
            fam_ratios.append((k, ratio))
            if ratio < 1.0:
                slower.append((k, ratio, peer))
        else:
            missing.append(k)
        L.append("| %s | %s | %d | %d | %s | %s | %s | %s | %s | %s | %s | "
                 "%s | %s | %s |" % (
                     k[0], k[1], k[2], k[3],
                     "%.1f" % o["us"] if o and "us" in o else "-",
                     pct(o), pct(c.get(FLOOR) or c.get(B.FWD_FLOOR)),
                     pct(c.get("torch eager")),
                     pct(c.get("torch.compile")), pct(c.get("liger")),
                     pct(c.get("triton lesson")), peer or "-",
                     "%.2fx" % ratio if ratio else "-",
                     ("yes" if o.get("bitwise") else "NO")
                     if o and "bitwise" in o else "-"))
    L.append("")
    if ratios:
        gm = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        L.append("**Geometric mean over %d shapes: %.2fx the best peer** "
                 "(best peer time / ours); slower than the best peer on %d."
                 % (len(ratios), gm, len(slower)))
        for fam, pick in (("backward", lambda k: k[0].endswith("_grad")),
                          ("forward", lambda k: not k[0].endswith("_grad"))):
            rs = [r for k, r in fam_ratios if pick(k)]
            if rs and len(rs) < len(ratios):
                L.append("")
                L.append("%s: %.2fx over %d shapes, slower on %d." % (
                    fam.capitalize(),
                    math.exp(sum(math.log(r) for r in rs) / len(rs)),
                    len(rs), sum(r < 1.0 for r in rs)))
    if slower:
        L.append("")
        L.append("Shapes where we are slower than the best peer (ratio, "
                 "peer):")
        L.append("")
        for k, r, p in sorted(slower, key=lambda t: t[1]):
            L.append("* %s %s %d x %d: %.2fx (%s)" % (k + (r, p)))
    if missing:
        L.append("")
        L.append("No ratio (ours or every peer missing or failed): " +
                 ", ".join("%s %s %dx%d" % k for k in missing))
    L.append("")
    return "\n".join(L)


def plot(d, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as ex:
        return "no plot (%s)" % ex
    cells = shape_table(d)
    # Backward first, then the forward; two plots to a line.
    ops = sorted({k[0] for k in cells},
                 key=lambda o: (not o.endswith("_grad"), o))
    cols = min(2, len(ops))
    rows = -(-len(ops) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(7 * cols, 4.8 * rows),
                             squeeze=False)
    for ax, op in zip(axes.flat, ops):
        big = {k: c for k, c in cells.items()
               if k[0] == op and k[2] == C.sweep_m(op, k[3], k[1])}
        for impl in IMPLS:
            pts = sorted((k[3], c[impl]["pct_copy"]) for k, c in big.items()
                         if impl in c and "us" in c[impl])
            if not pts:
                continue
            style = {"linewidth": 2.5} if impl == OURS else (
                {"linestyle": ":", "color": "gray"}
                if impl in (FLOOR, B.FWD_FLOOR) else {})
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=".",
                    label=impl, **style)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("N (row length)")
        ax.set_ylabel("% of copy bandwidth")
        ax.set_ylim(0, 110)
        ax.axhline(90, color="green", linewidth=0.6, linestyle="--")
        ax.set_title("%s, bf16, M x N moving ~1 GiB" % op, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return "wrote " + path


def write(outdir, d, command, final):
    os.makedirs(outdir, exist_ok=True)
    d["complete"] = final
    with open(os.path.join(outdir, "sweep.json"), "w") as f:
        json.dump(d, f, indent=1, default=str)
    md = report(d, command)
    with open(os.path.join(outdir, "sweep.md"), "w") as f:
        f.write(md)
    return md


def main():
    ap = argparse.ArgumentParser(description="the N sweep (issue 9)")
    ap.add_argument("--out", default=os.environ.get("OUT") or os.path.join(
        C.default_gpu_dir(), "out"))
    ap.add_argument("--gpu-dir", default=C.default_gpu_dir())
    ap.add_argument("--budget-s", type=float, default=520,
                    help="start no shape after this many seconds")
    ap.add_argument("--deadline", type=float, default=0,
                    help="epoch seconds: start no shape after it")
    ap.add_argument("--ops", default="layer_norm_grad,rms_norm_grad")
    ap.add_argument("--dtypes", default="bf16")
    ap.add_argument("--only-n", default="",
                    help="comma-separated N values to run")
    ap.add_argument("--impls", default=",".join(IMPLS))
    ap.add_argument("--warmup", type=int, default=10, help="ms (do_bench)")
    ap.add_argument("--rep", type=int, default=40, help="ms (do_bench)")
    ap.add_argument("--image", choices=("auto", "cubin", "ptx"),
                    default="auto")
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--report", metavar="SWEEP_JSON", default="")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    command = "python3 bench/sweep.py " + " ".join(sys.argv[1:])
    ops = [o for o in args.ops.split(",") if o]
    dtypes = [t for t in args.dtypes.split(",") if t]
    only_n = {int(v) for v in args.only_n.split(",") if v}
    impls = tuple(i for i in args.impls.split(",") if i)
    if args.report:
        with open(args.report) as f:
            d = json.load(f)
        outdir = os.path.dirname(os.path.abspath(args.report))
        out(write(outdir, d, d.get("command", command), d.get("complete")))
        out(plot(d, os.path.join(outdir, "sweep.png")))
        return 0
    shapes = plan(ops, dtypes, only_n)
    if args.dry_run:
        index = C.load_index(os.path.abspath(args.gpu_dir))
        miss = 0
        for op, dt, m, n in shapes:
            cfg = C.Cfg(op, n, dt)
            ok = cfg.name in index["configs"]
            miss += not ok
            out("%-16s %-4s M=%-9d N=%-7d %6.0f MB %s" % (
                op, dt, m, n, B.min_bytes(op, m, n, dt) / 1e6,
                "" if ok else "NOT COMPILED"))
        out("sweep plan: %d shapes x %d implementations; %d not compiled" % (
            len(shapes), len(impls), miss))
        return 1 if miss else 0

    args.gpu_dir = os.path.abspath(args.gpu_dir)
    args.no_compile = args.no_triton = False
    index = C.load_index(args.gpu_dir)
    bench = B.Bench(args, index)
    T = bench.torch
    bench.start(512)
    env = bench.env()
    env["liger"] = "liger-kernel " + B._dist_version("liger-kernel")
    bench.copy_gbs, c1, c2 = bench.copy_bandwidth()
    out("sweep: %s" % json.dumps(env))
    out("copy bandwidth: %.0f GB/s (medians %.1f / %.1f us); %d shapes" % (
        bench.copy_gbs, c1, c2, len(shapes)))
    d = {"env": env, "copy_gbs": bench.copy_gbs, "rows": bench.rows,
         "command": command, "skipped": []}
    for op, dt, m, n in shapes:
        if time.time() - bench.t0 > args.budget_s or (
                args.deadline and time.time() > args.deadline):
            d["skipped"].append([op, dt, m, n])
            continue
        if op.endswith("_grad"):
            bench.run_shape(op, dt, m, n, impls=impls)
        else:
            bench.run_fwd_shape(op, dt, m, n, impls=impls)
        T.cuda.empty_cache()
        write(args.out, d, command, final=False)
    if d["skipped"]:
        out("sweep: budget %.0f s spent; %d shapes skipped" % (
            args.budget_s, len(d["skipped"])))
    md = write(args.out, d, command, final=not d["skipped"])
    out(plot(d, os.path.join(args.out, "sweep.png")))
    out("")
    out(md)
    errors = [r for r in bench.rows if "error" in r]
    ours_errors = [r for r in errors if r["impl"] == OURS]
    out("sweep: %d rows, %d errors (%d of ours; a peer's are its own "
        "limits, e.g. Liger-Kernel refuses N > 65536), %d shapes skipped, "
        "%.0f s" % (len(bench.rows), len(errors), len(ours_errors),
                    len(d["skipped"]), time.time() - bench.t0))
    return 1 if ours_errors or d["skipped"] else 0


if __name__ == "__main__":
    sys.exit(main())
