#!/usr/bin/env python3
"""Our row kernels under other pass options, ours only.

For LayerNorm and RMSNorm (backward at configs.VARIANT_N, forward at
configs.VARIANT_FWD), M so the case moves about 1 GiB, every
variant of configs.variant_cfgs() (pass
options: `threads`, `max-register-elements`, `cluster`, `batch-rows`,
`max-lanes`),
plus the default configuration:
median time (bench.py's method: do_bench, L2 flushed), % of the copy
bandwidth measured in the same run, and the dx kernel's registers / spills
from .dev/gpu/configs.json (ptxas -v) of the dx or forward kernel. It is how the cost model's constants
are chosen from measurements (docs/NOTES.md).

  python3 bench/variants.py [--out DIR] [--deadline EPOCH]

Writes DIR/variants.md and prints it last.
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench as B  # noqa: E402
import configs as C  # noqa: E402


def out(*a):
    print(*a, flush=True)


def options(cfg):
    """The pass options of a variant that are not the default."""
    o = [(k, v) for k, v in (("threads", cfg.threads), ("mre", cfg.mre),
                             ("cluster", cfg.cluster),
                             ("batch-rows", cfg.batch),
                             ("max-lanes", cfg.lanes)) if v]
    return " ".join("%s=%d" % kv for kv in o) or "default"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT") or os.path.join(
        C.default_gpu_dir(), "out"))
    ap.add_argument("--gpu-dir", default=C.default_gpu_dir())
    ap.add_argument("--deadline", type=float, default=0)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--rep", type=int, default=30)
    ap.add_argument("--image", default="auto")
    args = ap.parse_args()
    args.gpu_dir = os.path.abspath(args.gpu_dir)
    index = C.load_index(args.gpu_dir)
    bench = B.Bench(args, index)
    T = bench.torch
    copy_gbs, _, _ = bench.copy_bandwidth()
    bench.copy_gbs = copy_gbs
    out("copy bandwidth: %.0f GB/s" % copy_gbs)
    rows = []
    groups = {}
    for cfg in C.variant_cfgs():
        groups.setdefault((cfg.op, cfg.n, cfg.dtype), []).append(cfg)
    for (op, n, dt), cfgs in groups.items():
        cfgs = [C.Cfg(op, n, dt)] + cfgs
        m = C.sweep_m(op, n, dt)
        tdt = bench.tdt[dt]
        layer = op.startswith("layer")
        grad = op.endswith("_grad")
        x = (T.randn(m, n, device="cuda") +
             (T.rand(m, 1, device="cuda") * 2 - 1)).to(tdt)
        w = (1 + 0.25 * T.randn(n, device="cuda")).to(tdt)
        if grad:
            dy = T.randn(m, n, device="cuda").to(tdt)
            xf = x.float()
            mean = xf.mean(1)
            var = ((xf - mean[:, None]) ** 2).mean(1) if layer else \
                (xf ** 2).mean(1)
            rstd = T.rsqrt(var + C.EPS).contiguous()
            del xf
            ins = {"dy": dy, "x": x, "rstd": rstd, "weight": w}
            if layer:
                ins["mean"] = mean.contiguous()
            bytes_ = B.min_bytes(op, m, n, dt)
        else:
            dy = None
            ins = {"x": x, "weight": w}
            if layer:
                ins["bias"] = (0.5 * T.randn(n, device="cuda")).to(
                    tdt)
            bytes_ = B.min_bytes_fwd(op, m, n, dt)
        for cfg in cfgs:
            if args.deadline and time.time() > args.deadline:
                rows.append((cfg, m, None, "skipped: deadline"))
                continue
            e = index["configs"].get(cfg.name)
            if e is None:
                rows.append((cfg, m, None, "not compiled"))
                continue
            try:
                o = B.Ours(bench.rt, args.gpu_dir, e, ins, args.image)
                o.run()
                T.cuda.synchronize()
                t1, t2 = bench.time_us(o.run)
                o.close()
                res = {}
                for k in e.get("kernels", []):
                    if k.get("kind") in ("dx", "forward"):
                        r = e.get("resources", {}).get(k["name"], {})
                        res = {"block": k.get("block"),
                               "lanes": k.get("lanes"),
                               "rows": k.get("rows"),
                               "registers_regime": k.get("registers"),
                               "cluster": k.get("cluster", 1),
                               "regs": r.get("registers"),
                               "spills": r.get("spill_stores")}
                rows.append((cfg, m, (t1, t2, res), ""))
                out("%-60s %8.1f us %5.1f%% %s" % (
                    cfg.name, t1, 100 * bytes_ / (t1 * 1e-6) / 1e9 / copy_gbs,
                    json.dumps(res)))
            except Exception as ex:  # noqa: BLE001
                rows.append((cfg, m, None, "%s: %s" % (type(ex).__name__,
                                                        str(ex)[:200])))
                out("%-60s ERROR %s" % (cfg.name, rows[-1][3]))
                T.cuda.synchronize()
        del x, dy, w, ins
        T.cuda.empty_cache()
    L = ["## Row-kernel variants, %s" % T.cuda.get_device_name(), "",
         "Copy %.0f GB/s; kernels from commit %s. Ours only; options = "
         "the pass options that differ from the default." % (
             copy_gbs, index.get("git_head", "?")), "",
         "| op | dtype | N | M | options | µs | rerun | % copy | block | "
         "lanes | rows | registers regime | regs | spill bytes |",
         "| --- | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | "
         "---: | ---: | --- | ---: | ---: |"]
    for cfg, m, r, note in rows:
        if r is None:
            L.append("| %s | %s | %d | %d | %s | %s | | | | | | | | |" % (
                cfg.op, cfg.dtype, cfg.n, m, options(cfg), note))
            continue
        t1, t2, res = r
        L.append("| %s | %s | %d | %d | %s | %.1f | %.1f | %.1f | %s | "
                 "%s | %s | %s | %s | %s |" % (
                     cfg.op, cfg.dtype, cfg.n, m, options(cfg), t1, t2,
                     100 * (B.min_bytes if cfg.grad else B.min_bytes_fwd)(
                         cfg.op, m, cfg.n, cfg.dtype) /
                     (t1 * 1e-6) / 1e9 / copy_gbs,
                     res.get("block"), res.get("lanes"), res.get("rows"),
                     res.get("registers_regime"), res.get("regs"),
                     res.get("spills")))
    md = "\n".join(L) + "\n"
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "variants.md"), "w") as f:
        f.write(md)
    out("")
    out(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
