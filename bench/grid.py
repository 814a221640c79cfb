#!/usr/bin/env python3
"""The grid of issue 21 (item 1): ours against every peer over M x N.

LayerNorm and RMSNorm, forward (y and the f32 statistics) and backward
(dx, dweight, dbias), over configs.grid_points(): M in configs.GRID_M plus
"max" (the largest M whose [M, N] tensor stays within 4 GiB) x N in
configs.GRID_N for bf16; configs.GRID_SUB_M x GRID_SUB_N for f16, f32 and
bf16 x with an f32 weight; no point with a tensor above 4 GiB.

Implementations (--impls, comma-separated; default all but compile-max):

  ours         the compiled kernels of .dev/gpu (deterministic strategy)
               through norm_mlir._runtime, as bench.py runs them
  eager        aten.native_layer_norm(_backward), aten._fused_rms_norm
               (_backward) (else autograd through F.rms_norm)
  compile      torch.compile of the explicit formulas, dynamic=False (one
               compile per point: ~2-3 s each, the grid's main cost)
  compile-max  the same with mode="max-autotune-no-cudagraphs" (4-64 s a
               point): opt-in, for calls of their own; skipped when less
               than --autotune-reserve-s is left
  liger        Liger-Kernel's layer_norm/rms_norm forward and backward
  quack        quack-kernels (rmsnorm_fwd/bwd, layernorm_fwd/bwd) when it
               imports (gpu-run.sh installs it from .dev/quack); else
               skipped with the reason in the JSON's env
  lesson       the seed lesson's Triton backward (bench/triton_lesson.py)

The best peer of a point is the fastest of eager, compile, compile-max,
liger and quack that ran there (the lesson is shown, not a peer).

Timing (/work/.library/device/METHOD.md): fresh random inputs per point;
each implementation called twice first (its compile/JIT out of the times;
the two results compared bitwise: `bitwise` over every output,
`bitwise_wb` over dweight/dbias) and checked against an f32 reference
(`err`: largest ||out - ref|| / ||ref|| over the outputs); then the median
of triton.testing.do_bench (CUDA events, L2 flushed before every
repetition), ours twice (the spread is the noise), the peers once
(--reruns 2: twice). GB/s from the point's minimum bytes (x, dy read and
dx/y written once, weight, statistics, dweight/dbias), the same for every
implementation; % of a device-to-device copy measured in the same run.
Every exception is recorded in its row; a lost CUDA context ends the run
(the JSON written so far stays).

  python3 bench/grid.py [--shard K/N] [--budget-s S | --deadline EPOCH]
                        [--impls ...] [--ops ...] [--dtypes ...]
                        [--only-n ...] [--only-m ...] [--resume JSON...]
  python3 bench/grid.py --dry-run [--shards N]   here, no torch.cuda: the
                        points, configs.json against them, time per shard
  python3 bench/grid.py --merge a.json b.json ... --out bench/RESULTS-grid.json
  python3 bench/grid.py --report bench/RESULTS-grid.json   here: the grid
                        section of bench/RESULTS.md, bench/grid.png and
                        bench/grid-copy.png (matplotlib)

A GPU run writes DIR/grid[-K-of-N].json after every point (DIR: --out,
else $OUT, else .dev/gpu/out) and prints a short table last.
"""

import argparse
import importlib
import json
import math
import os
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import configs as C  # noqa: E402

IMPLS = ("ours", "eager", "compile", "compile-max", "liger", "quack",
         "lesson")
DEFAULT_IMPLS = ("ours", "eager", "compile", "liger", "quack", "lesson")
PEERS = ("eager", "compile", "compile-max", "liger", "quack")
SIZE = {"f32": 4, "f16": 2, "bf16": 2}
COPY_GBS_GUESS = 4300.0  # H200 device-to-device copy (bench.py)
LABEL = {"ours": "ours", "eager": "torch eager", "compile": "torch.compile",
         "compile-max": "torch.compile max-autotune", "liger": "Liger-Kernel",
         "quack": "quack-kernels", "lesson": "lesson Triton"}
SECTION_BEGIN = "<!-- grid:begin (bench/grid.py --report writes this) -->"
SECTION_END = "<!-- grid:end -->"

# The dry run's time model (seconds; guesses from bench/sweep runs, to be
# replaced by a first grid run's "wall_s" per point): per implementation
# a fixed cost per point (calls, checks, do_bench's warm-up and repetitions
# at the default 5/20 ms), a cost the first time an (op, N, dtypes) is met
# (JIT), and a compile per point.
EST_START_S = 25.0       # python, torch, CUDA context, copy bandwidth
EST_QUACK_IMPORT_S = 8.0
EST_IMPL_S = 0.12
EST_FIRST_S = {"liger": 2.0, "quack": 6.0, "lesson": 1.5}
EST_COMPILE_S = {"compile": 2.5, "compile-max": 25.0}


def out(*a):
    print(*a, flush=True)


def wbytes(dt, wdt):
    return SIZE[wdt or dt]


def min_bytes(op, m, n, dt, wdt=""):
    """The fewest bytes a point must move: rows read/written once, weight
    (and bias) read, statistics read (backward) or written (forward),
    dweight (and dbias) written."""
    s, sw = SIZE[dt], wbytes(dt, wdt)
    layer = op.startswith("layer")
    stats = m * 4 * (2 if layer else 1)
    if op.endswith("_grad"):
        return 3 * m * n * s + n * sw + stats + n * sw * (2 if layer else 1)
    return 2 * m * n * s + n * sw * (2 if layer else 1) + stats


def pair_name(dt, wdt):
    return dt if not wdt or wdt == dt else "%s/w%s" % (dt, wdt)


def point_key(r):
    return (r["op"], r["dtype"], r.get("wdtype") or r["dtype"], r["M"],
            r["N"])


# ------------------------------------------------------------------ the plan

def select_points(args):
    ops = args.ops.split(",") if args.ops else list(C.GRID_OPS)
    dts = args.dtypes.split(",") if args.dtypes else None
    pts = C.grid_points(ops=ops, dtypes=dts)
    if args.only_n:
        ns = {int(v) for v in args.only_n.split(",")}
        pts = [p for p in pts if p[4] in ns]
    if args.only_m:
        ms = set(args.only_m.split(","))
        pts = [p for p in pts if p[5] in ms or str(p[3]) in ms]
    return pts


def group_of(p):
    return (p[1], p[2], p[0], p[4])  # dtype, wdtype, op, N


def impls_for(op, impls):
    """The lesson has no forward."""
    return [i for i in impls if not (i == "lesson" and
                                     not op.endswith("_grad"))]


COMPILE_DYNAMIC_M = [False]  # --compile-dynamic-m, for the estimate


def est_point_s(p, impls, first):
    op, dt, wdt, m, n, _ = p
    b = min_bytes(op, m, n, dt, wdt)
    s = 0.05 + 40.0 * b / 3e12  # data, reference, checks at ~3 TB/s
    for i in impls_for(op, impls):
        s += EST_IMPL_S + 40.0 * b / 3e12
        if first or not COMPILE_DYNAMIC_M[0] or m <= 2:
            s += EST_COMPILE_S.get(i, 0.0)
        if first:
            s += EST_FIRST_S.get(i, 0.0)
    return s


EST_SCALE = [1.0]  # --calibrate: measured / estimated, for the dry run


def est_group_s(pts, impls):
    return EST_SCALE[0] * sum(est_point_s(p, impls, i == 0)
                              for i, p in enumerate(pts))


def calibrate(paths, impls):
    """Measured / estimated seconds over the points of earlier runs (their
    rows' point_wall_s), for the dry run's totals."""
    meas = est = 0.0
    for path in paths:
        with open(path) as f:
            d = json.load(f)
        seen = {}
        for r in d["rows"]:
            if "point_wall_s" in r:
                seen.setdefault(point_key(r), (r, []))[1].append(r["impl"])
        groups = set()
        for k, (r, imps) in seen.items():
            p = (r["op"], r["dtype"], r.get("wdtype") or r["dtype"], r["M"],
                 r["N"], r.get("m_label", ""))
            meas += r["point_wall_s"]
            est += est_point_s(p, imps, group_of(p) not in groups)
            groups.add(group_of(p))
    if not est:
        out("grid: --calibrate: no timed points in %s" % " ".join(paths))
        return 1.0
    out("grid: --calibrate: %.0f s measured over the points of %s against "
        "%.0f s estimated: estimates x %.2f" % (meas, " ".join(paths), est,
                                                 meas / est))
    return meas / est


def shard_points(pts, impls, k, nshards):
    """Shard k (1-based) of nshards: whole (dtype pair, op, N) groups (one
    JIT per group and shard) assigned to the least loaded shard, largest
    first (deterministic); each shard keeps the plan's order."""
    groups, order = {}, []
    for p in pts:
        g = group_of(p)
        if g not in groups:
            groups[g] = []
            order.append(g)
        groups[g].append(p)
    cost = {g: est_group_s(groups[g], impls) for g in order}
    load = [0.0] * nshards
    owner = {}
    for g in sorted(order, key=lambda g: (-cost[g], order.index(g))):
        j = min(range(nshards), key=lambda j: (load[j], j))
        owner[g] = j
        load[j] += cost[g]
    mine = [p for g in order if owner[g] == k - 1 for p in groups[g]]
    return mine, load


def parse_shard(s):
    try:
        k, n = (int(v) for v in s.split("/"))
    except ValueError:
        raise SystemExit("grid: --shard wants K/N, got %r" % s)
    if not 1 <= k <= n:
        raise SystemExit("grid: --shard %s: K must be in 1..N" % s)
    return k, n


def cfg_for(op, n, dt, wdt, m):
    """Our configuration at a point (configs.grid_cfg: the tuning table's
    for M where it has an entry)."""
    return C.grid_cfg(op, n, dt, wdt or dt, m)


def dry_run(args, pts, impls):
    try:
        index = C.load_index(args.gpu_dir)
    except OSError as ex:
        index = None
        out("dry run: no %s/configs.json (%s): run GRID=1 bash "
            "scripts/gpu-prepare.sh" % (args.gpu_dir, ex))
    missing = set()
    for op, dt, wdt, m, n, _ in pts:
        name = cfg_for(op, n, dt, wdt, m).name
        if index is not None and name not in index["configs"]:
            missing.add(name)
    from collections import Counter
    cnt = Counter((p[0], pair_name(p[1], p[2])) for p in pts)
    out("grid: %d points over %d (op, N, dtypes) configurations; impls %s"
        % (len(pts), len({cfg_for(p[0], p[4], p[1], p[2], p[3]).name
                          for p in pts}), ",".join(impls)))
    for (op, pr), c in sorted(cnt.items()):
        out("  %-16s %-9s %4d points" % (op, pr, c))
    big = max(pts, key=lambda p: p[3] * p[4] * SIZE[p[1]]) if pts else None
    if big:
        out("largest tensor: %s %s M=%d N=%d: %.2f GiB" % (
            big[0], pair_name(big[1], big[2]), big[3], big[4],
            big[3] * big[4] * SIZE[big[1]] / 2**30))
    if index is not None:
        out("configs.json (commit %s): %s" % (
            index.get("git_head"), "every grid configuration compiled"
            if not missing else "%d NOT COMPILED" % len(missing)))
        for name in sorted(missing)[:40]:
            out("  NOT COMPILED %s" % name)
    nsh = args.shards
    if args.shard:
        k, nsh = parse_shard(args.shard)
    total = sum(est_group_s(g, impls) for g in _groups(pts))
    out("estimated %.0f s in all (%.1f min) besides %.0f s start per call"
        % (total, total / 60, EST_START_S + (EST_QUACK_IMPORT_S
                                            if "quack" in impls else 0)))
    want = max(1, math.ceil(total / max(1.0, args.target_s)))
    out("at %.0f s of points per call: %d shards (--shards %d)" % (
        args.target_s, want, want))
    if nsh:
        _, load = shard_points(pts, impls, 1, nsh)
        for j, s in enumerate(load):
            mine, _ = shard_points(pts, impls, j + 1, nsh)
            out("  shard %d/%d: %4d points, ~%.0f s" % (j + 1, nsh,
                                                        len(mine), s))
    if args.verbose:
        for p in pts:
            out("  %s %s M=%d (%s) N=%d" % (p[0], pair_name(p[1], p[2]),
                                            p[3], p[5], p[4]))
    return 1 if missing else 0


def _groups(pts):
    g = {}
    for p in pts:
        g.setdefault(group_of(p), []).append(p)
    return list(g.values())


# ---------------------------------------------------------------- GPU parts

class Grid:
    def __init__(self, args, index, pts, impls):
        import torch
        import triton
        from triton.testing import do_bench
        import bench as B
        import gpu_env as E
        self.T, self.triton, self.do_bench = torch, triton, do_bench
        self.B, self.E = B, E
        self.args, self.index, self.pts, self.impls = args, index, pts, impls
        self.tdt = {"f32": torch.float32, "f16": torch.float16,
                    "bf16": torch.bfloat16}
        lib = E.find_library(args.gpu_dir)
        self.rt, self.rt_error = None, "libnormrt.so not found"
        try:
            if lib:
                self.rt = E.Runtime(lib)
        except Exception as ex:  # noqa: BLE001
            self.rt_error = "%s: %s" % (lib, ex)
            out("grid: runtime: %s (ours will fail)" % self.rt_error)
        self.lib = lib
        self.rows = []
        self.dev = "cpu" if args.smoke_cpu else "cuda"
        self.t0 = time.time()
        self.seen_groups = set()
        self.point_s = []
        self.not_reached = []
        self.stopped = ""
        self._cfns = {}
        try:
            torch._dynamo.config.cache_size_limit = 1 << 16
            if hasattr(torch._dynamo.config, "recompile_limit"):
                torch._dynamo.config.recompile_limit = 1 << 16
        except Exception:  # noqa: BLE001
            pass
        self.seed = args.seed if args.seed is not None else \
            int.from_bytes(os.urandom(4), "little")
        torch.manual_seed(self.seed)

    # --- environment ------------------------------------------------------
    def env(self):
        T = self.T
        if self.dev == "cpu":
            name, sms, l2 = "cpu (--smoke-cpu)", 0, 0
        else:
            p = T.cuda.get_device_properties(0)
            name, sms = T.cuda.get_device_name(0), p.multi_processor_count
            l2 = round(getattr(p, "L2_cache_size", 0) / 2**20, 1)
        e = {"device": name, "sms": sms, "l2_mb": l2,
             "torch": T.__version__, "cuda": T.version.cuda,
             "triton": self.triton.__version__,
             "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
             "kernels_git_head": self.index.get("git_head", ""),
             "kernels_git_dirty_files": self.index.get("git_dirty", ""),
             "kernels_generated_utc": self.index.get("generated_utc", ""),
             "runtime": self.lib or "", "seed": self.seed}
        for mod, dist in (("liger", "liger-kernel"),
                          ("quack", "quack-kernels"),
                          ("cutlass", "nvidia-cutlass-dsl")):
            e[mod + "_version"] = self.B._dist_version(dist)
        e["nvidia_smi"] = self.E.nvidia_smi()
        return e

    def probe_imports(self):
        """Which optional peers import here (the reason goes in the env)."""
        self.have = {}
        if "liger" in self.impls:
            try:
                for mod in ("liger_kernel.ops.layer_norm",
                            "liger_kernel.ops.rms_norm"):
                    importlib.import_module(mod)
                self.have["liger"] = ""
            except Exception as ex:  # noqa: BLE001
                self.have["liger"] = "%s: %s" % (type(ex).__name__, ex)
        if "quack" in self.impls:
            t = time.time()
            try:
                importlib.import_module("quack.rmsnorm")
                self.have["quack"] = ""
            except Exception as ex:  # noqa: BLE001
                self.have["quack"] = "%s: %s" % (
                    type(ex).__name__, " ".join(str(ex).split())[:300])
            self.envinfo["quack_import_s"] = round(time.time() - t, 1)
        for k, why in self.have.items():
            self.envinfo[k] = "available" if not why else \
                "unavailable: " + why
            if why:
                out("grid: %s skipped: %s" % (k, why))

    def copy_bandwidth(self):
        T = self.T
        n = 1 << 30 if self.dev != "cpu" else 1 << 22
        src = T.randint(0, 256, (n,), device=self.dev, dtype=T.uint8)
        dst = T.empty_like(src)
        t1 = self.time_us(lambda: dst.copy_(src))
        t2 = self.time_us(lambda: dst.copy_(src))
        src = dst = None
        self.empty_cache()
        return 2 * n / (min(t1, t2) * 1e-6) / 1e9, t1, t2

    def time_us(self, fn):
        if self.dev == "cpu":  # --smoke-cpu: the harness's logic only
            ts = []
            for _ in range(3):
                t = time.perf_counter()
                fn()
                ts.append(time.perf_counter() - t)
            return 1e6 * sorted(ts)[1]
        return 1e3 * self.do_bench(fn, warmup=self.args.warmup,
                                   rep=self.args.rep, return_mode="median")

    def sync(self):
        if self.dev != "cpu":
            self.T.cuda.synchronize()

    def empty_cache(self):
        if self.dev != "cpu":
            self.T.cuda.empty_cache()

    # --- checks -----------------------------------------------------------
    def bits_equal(self, a, b):
        T = self.T
        bt = {T.float32: T.int32, T.float16: T.int16, T.bfloat16: T.int16}
        return bool(T.equal(a.contiguous().view(bt[a.dtype]),
                            b.contiguous().view(bt[b.dtype])))

    def rel_err(self, got, ref):
        """||got - ref|| / ||ref|| in f32, by row chunks (the largest
        points' f32 copies would be 8 GiB each)."""
        T = self.T
        g2 = got.reshape(got.shape[0], -1) if got.dim() > 1 else \
            got.reshape(-1, 1)
        r2 = ref.reshape(g2.shape)
        rows = max(1, (1 << 26) // g2.shape[1])
        d = r = 0.0
        for i in range(0, g2.shape[0], rows):
            a = g2[i:i + rows].float()
            b = r2[i:i + rows].float()
            if not bool(T.isfinite(a).all()):
                return math.inf
            d += float(T.linalg.vector_norm(a - b)) ** 2
            r += float(T.linalg.vector_norm(b)) ** 2
        return math.sqrt(d / r) if r else (0.0 if d == 0 else math.inf)

    # --- one point --------------------------------------------------------
    def inputs(self, op, dt, wdt, m, n):
        """Fresh random inputs, the statistics (f32, from x) and an f32
        reference of the outputs, computed by row chunks."""
        T, B = self.T, self.B
        layer = op.startswith("layer")
        xdt, wt = self.tdt[dt], self.tdt[wdt]
        x = T.empty(m, n, device=self.dev, dtype=xdt)
        rows = max(1, (1 << 26) // n)
        for i in range(0, m, rows):
            k = min(rows, m - i)
            x[i:i + k] = (T.randn(k, n, device=self.dev) +
                          (T.rand(k, 1, device=self.dev) * 2 - 1)).to(xdt)
        w = (1 + 0.25 * T.randn(n, device=self.dev)).to(wt)
        b = (0.5 * T.randn(n, device=self.dev)).to(wt) if layer else None
        t = {"x": x, "weight": w, "bias": b}
        if op.endswith("_grad"):
            dy = T.empty_like(x)
            for i in range(0, m, rows):
                k = min(rows, m - i)
                dy[i:i + k] = T.randn(k, n, device=self.dev).to(xdt)
            mean = T.empty(m, device=self.dev) if layer else None
            rstd = T.empty(m, device=self.dev)
            dx = T.empty_like(x)
            dw = T.zeros(n, device=self.dev, dtype=T.float64)
            db = T.zeros(n, device=self.dev, dtype=T.float64)
            for i in range(0, m, rows):
                k = min(rows, m - i)
                xf = x[i:i + k].float()
                if layer:
                    mu = xf.mean(1)
                    mean[i:i + k] = mu
                    xf = xf - mu[:, None]
                r = (xf * xf).mean(1).add(C.EPS).rsqrt()
                rstd[i:i + k] = r
                mc = mean[i:i + k] if layer else None
                if layer:
                    a, bw, bb = B.ln_bwd_formula(dy[i:i + k], x[i:i + k],
                                                 mc, r, w.float())
                    db += bb.double()
                else:
                    a, bw = B.rms_bwd_formula(dy[i:i + k], x[i:i + k], r,
                                              w.float())
                dx[i:i + k] = a
                dw += bw.double()
            t.update(dy=dy, mean=mean, rstd=rstd)
            ref = (dx, dw.to(wt), db.to(wt) if layer else None)
        else:
            y = T.empty_like(x)
            mean = T.empty(m, device=self.dev) if layer else None
            rstd = T.empty(m, device=self.dev)
            for i in range(0, m, rows):
                k = min(rows, m - i)
                if layer:
                    a, mu, r = B.ln_fwd_formula(x[i:i + k], w, b, C.EPS)
                    mean[i:i + k] = mu
                else:
                    a, r = B.rms_fwd_formula(x[i:i + k], w, C.EPS)
                y[i:i + k] = a
                rstd[i:i + k] = r
            ref = (y, mean, rstd)
        return t, ref

    def makers(self, op, dt, wdt, m, n, t):
        """impl -> make() returning (fn, note, check_fn or None): fn()
        gives (dx, dw, db) or (y, mean, rstd), None where not computed."""
        T, B = self.T, self.B
        F = T.nn.functional
        layer = op.startswith("layer")
        grad = op.endswith("_grad")
        x, w, b = t["x"], t["weight"], t["bias"]
        eps = C.EPS
        mk = {}

        def flat(v):
            return None if v is None else v.reshape(m)

        def ours():
            if self.rt is None:
                raise RuntimeError(self.rt_error)
            cfg = cfg_for(op, n, dt, wdt, m)
            e = self.index["configs"].get(cfg.name)
            if e is None:
                raise RuntimeError("configuration %s not compiled (GRID=1 "
                                   "bash scripts/gpu-prepare.sh)" % cfg.name)
            ins = {"x": x, "weight": w}
            if grad:
                ins.update(dy=t["dy"], rstd=t["rstd"])
                if layer:
                    ins["mean"] = t["mean"]
            elif layer:
                ins["bias"] = b
            o = B.Ours(self.rt, self.args.gpu_dir, e, ins, self.args.image)
            self._close.append(o)
            note = os.path.splitext(o.image)[1][1:]
            if grad:
                note = "G=%d, %s" % (B.C_groups(m, n), note)
            return o.run, note, None
        mk["ours"] = ours

        def eager():
            if grad:
                # The statistics as the framework's own forward saves them
                # (dtype and shape differ by device and version), else ours.
                mean2 = t["mean"].view(m, 1) if layer else None
                rstd2 = t["rstd"].view(m, 1)
                dy = t["dy"]
                try:
                    if layer:
                        _, mean2, rstd2 = T.ops.aten.native_layer_norm(
                            x, [n], w, b, eps)
                    elif hasattr(T.ops.aten, "_fused_rms_norm"):
                        _, rstd2 = T.ops.aten._fused_rms_norm(x, [n], w, eps)
                except Exception:  # noqa: BLE001
                    pass
                if layer:
                    return (lambda: tuple(
                        T.ops.aten.native_layer_norm_backward(
                            dy, x, [n], mean2, rstd2, w, b,
                            [True, True, True]))), \
                        "aten.native_layer_norm_backward", None
                if hasattr(T.ops.aten, "_fused_rms_norm_backward"):
                    def fn():
                        return tuple(T.ops.aten._fused_rms_norm_backward(
                            dy, x, [n], rstd2, w, [True, True])) + (None,)
                    try:
                        fn()
                        return fn, "aten._fused_rms_norm_backward", None
                    except Exception:  # noqa: BLE001
                        pass
                xr = x.detach().requires_grad_()
                wr = w.detach().requires_grad_()
                y = F.rms_norm(xr, [n], wr, eps)
                return (lambda: T.autograd.grad(y, (xr, wr), dy,
                                                retain_graph=True) +
                        (None,)), "autograd F.rms_norm", None
            if layer:
                def fn():
                    y, mu, r = T.ops.aten.native_layer_norm(x, [n], w, b, eps)
                    return y, flat(mu), flat(r)
                return fn, "aten.native_layer_norm", None
            if hasattr(T.ops.aten, "_fused_rms_norm"):
                def fn():
                    y, r = T.ops.aten._fused_rms_norm(x, [n], w, eps)
                    return y, None, flat(r)
                try:
                    fn()
                    return fn, "aten._fused_rms_norm", None
                except Exception:  # noqa: BLE001
                    pass
            return (lambda: (F.rms_norm(x, [n], w, eps), None, None)), \
                "F.rms_norm (no rstd)", None
        mk["eager"] = eager

        def compiled(mode):
            # --compile-dynamic-m: one compile per (op, N, dtypes) with M
            # symbolic (M = 1 compiles on its own: dynamo specialises 1);
            # else one per point, dynamic=False, as bench.py does.
            dyn = self.args.compile_dynamic_m and m > 1

            def cached(formula, kw):
                if not dyn:
                    T._dynamo.reset()
                    return T.compile(formula, **kw)
                key = (mode, group_of((op, dt, wdt, m, n, "")))
                if key not in self._cfns:
                    self._cfns[key] = T.compile(formula, **kw)
                # maybe_: a hint, not a constraint that fails the compile
                # should inductor specialise M after all.
                mark = getattr(T._dynamo, "maybe_mark_dynamic",
                               T._dynamo.mark_dynamic)
                for v in (x, t.get("dy"), t.get("mean"), t.get("rstd")):
                    if v is not None:
                        mark(v, 0)
                return self._cfns[key]

            def make():
                kw = {"dynamic": None if dyn else False}
                if mode:
                    kw["mode"] = mode
                note = "inductor%s, explicit formulas%s" % (
                    " " + mode if mode else "",
                    ", dynamic M" if dyn else "")
                if grad:
                    dy, mean, rstd = t["dy"], t["mean"], t["rstd"]
                    if layer:
                        f = cached(B.ln_bwd_formula, kw)
                        return (lambda: f(dy, x, mean, rstd, w)), note, None
                    f = cached(B.rms_bwd_formula, kw)
                    return (lambda: tuple(f(dy, x, rstd, w)) + (None,)), \
                        note, None
                if layer:
                    f = cached(B.ln_fwd_formula, kw)
                    return (lambda: f(x, w, b, eps)), note, None
                f = cached(B.rms_fwd_formula, kw)

                def fn():
                    y, r = f(x, w, eps)
                    return y, None, r
                return fn, note, None
            return make
        mk["compile"] = compiled("")
        mk["compile-max"] = compiled("max-autotune-no-cudagraphs")

        def liger():
            ver = self.envinfo.get("liger_version", "?")
            if grad:
                dy, mean, rstd = t["dy"], t["mean"], t["rstd"]
                if layer:
                    from liger_kernel.ops.layer_norm import \
                        layer_norm_backward
                    return (lambda: tuple(layer_norm_backward(
                        dy, x, w, b, mean, rstd))), \
                        "liger-kernel %s" % ver, None
                from liger_kernel.ops.rms_norm import (rms_norm_backward,
                                                       _str_to_casting_mode)
                from liger_kernel.ops.utils import calculate_settings
                bs, nw = calculate_settings(n)
                mode = _str_to_casting_mode["llama"]
                # in_place (its default): dx over dy. Checked on a copy of
                # dy refreshed before each checked call, timed on it.
                dyc = dy.clone()

                def fn():
                    return tuple(rms_norm_backward(
                        dyc, x, w, rstd, 0.0, mode, bs, nw, True,
                        None))[:2] + (None,)

                def check():
                    dyc.copy_(dy)
                    return fn()
                return fn, "liger-kernel %s, llama, in_place" % ver, check
            if layer:
                from liger_kernel.ops.layer_norm import layer_norm_forward

                def fn():
                    r = layer_norm_forward(x, w, b, eps)
                    return r[0], r[2], r[3]
                return fn, "liger-kernel %s" % ver, None
            from liger_kernel.ops.rms_norm import rms_norm_forward

            def fn():
                r = rms_norm_forward(x, w, eps, 0.0, "llama", False)
                return r[0], None, r[2]
            return fn, "liger-kernel %s, llama" % ver, None
        mk["liger"] = liger

        def quack():
            # quack/__init__ binds the name `rmsnorm` to a function, which
            # hides the module of the same name from `from quack import`.
            Q = importlib.import_module("quack.rmsnorm")
            ver = self.envinfo.get("quack_version", "?")
            note = "quack-kernels %s" % ver
            if grad:
                dy, mean, rstd = t["dy"], t["mean"], t["rstd"]
                if layer:
                    return (lambda: tuple(Q.layernorm_bwd(
                        x, w, dy, rstd, mean, has_bias=True))), note, None
                return (lambda: tuple(Q.rmsnorm_bwd(x, w, dy, rstd))[:2] +
                        (None,)), note, None
            if layer:
                # Its LayerNorm forward takes an f32 weight and bias only.
                w32, b32 = w.float(), b.float()
                if w.dtype != T.float32:
                    note += ", weight/bias as f32 (required)"

                def fn():
                    y, r, mu = Q.layernorm_fwd(x, w32, b32, eps,
                                               return_rstd=True,
                                               return_mean=True)
                    return y, mu, r
                return fn, note, None

            def fn():
                y, _, r = Q.rmsnorm_fwd(x, w, eps=eps, store_rstd=True)
                return y, None, r
            return fn, note, None
        mk["quack"] = quack

        def lesson():
            from triton_lesson import LessonBackward
            lb = LessonBackward(t["dy"], x, w, t["mean"], t["rstd"],
                                has_bias=layer)
            return lb.run, "G=%d, %d warps" % (lb.groups, lb.num_warps), None
        mk["lesson"] = lesson
        return mk

    def left_s(self):
        ends = []
        if self.args.deadline:
            ends.append(self.args.deadline - time.time())
        if self.args.budget_s:
            ends.append(self.args.budget_s - (time.time() - self.t0))
        return min(ends) if ends else math.inf

    def run_point(self, p, todo):
        op, dt, wdt, m, n, label = p
        grad = op.endswith("_grad")
        t0 = time.time()
        bytes_ = min_bytes(op, m, n, dt, wdt)
        out("%s %s M=%d%s N=%d: %.1f MB, floor %.1f us" % (
            op, pair_name(dt, wdt), m, " (max)" if label == "max" else "", n,
            bytes_ / 1e6, bytes_ / (self.copy_gbs * 1e3)))
        try:
            t, ref = self.inputs(op, dt, wdt, m, n)
        except Exception as ex:  # noqa: BLE001
            self.sync()
            for impl in todo:
                self.rows.append(self.row(p, impl, bytes_, error="inputs: "
                                          "%s: %s" % (type(ex).__name__,
                                                      str(ex)[:200])))
            self.empty_cache()
            return
        mk = self.makers(op, dt, wdt, m, n, t)
        self._close = []
        first = group_of(p) not in self.seen_groups
        self.seen_groups.add(group_of(p))
        for impl in todo:
            r = self.row(p, impl, bytes_)
            self.rows.append(r)
            if impl in self.have and self.have[impl]:
                r["note"] = "skipped: not importable"
                r["skipped"] = True
                continue
            if impl == "compile-max" and self.left_s() < \
                    self.args.autotune_reserve_s:
                r["note"] = "skipped: less than %.0f s left" % (
                    self.args.autotune_reserve_s)
                r["skipped"] = True
                out("  %-12s skipped: time" % impl)
                continue
            self.attempt(r, mk[impl], ref, grad)
        for o in self._close:
            o.close()
        self._close = []
        del t, ref, mk
        self.empty_cache()
        self.point_s.append((p, time.time() - t0, first))
        for r in self.rows[-len(todo):]:
            r["point_wall_s"] = round(time.time() - t0, 2)

    def row(self, p, impl, bytes_, **kw):
        op, dt, wdt, m, n, label = p
        r = {"op": op, "dtype": dt, "wdtype": wdt, "M": m, "N": n,
             "m_label": label, "impl": impl, "bytes": bytes_, "note": "",
             "copy_gbs": round(self.copy_gbs, 1)}
        r.update(kw)
        return r

    def attempt(self, r, make, ref, grad):
        try:
            t0 = time.time()
            fn, note, check = make()
            r["note"] = note
            check = check or fn
            a = check()
            self.sync()
            r["first_call_s"] = round(time.time() - t0, 3)
            a = [v.clone() if v is not None else None for v in a]
            c = check()
            self.sync()
            r["bitwise"] = all(self.bits_equal(u, v) for u, v in zip(a, c)
                               if u is not None and v is not None)
            if grad:
                r["bitwise_wb"] = all(self.bits_equal(u, v) for u, v in
                                      zip(a[1:], c[1:]) if u is not None
                                      and v is not None)
            errs = [self.rel_err(g, q) for g, q in zip(a, ref)
                    if g is not None and q is not None]
            r["err"] = max(errs) if errs else None
            r["outputs"] = sum(v is not None for v in a)
            del a, c
            r["us"] = self.time_us(fn)
            if r["impl"] == "ours" or self.args.reruns > 1:
                r["us_rerun"] = self.time_us(fn)
            r["gbs"] = r["bytes"] / (r["us"] * 1e-6) / 1e9
            r["pct_copy"] = 100.0 * r["gbs"] / self.copy_gbs
            out("  %-12s %9.1f us%s %6.0f GB/s %5.1f%% bitwise=%s%s err=%s "
                "%s" % (r["impl"], r["us"],
                        " (rerun %.1f)" % r["us_rerun"] if "us_rerun" in r
                        else "", r["gbs"], r["pct_copy"], r["bitwise"],
                        "/wb=%s" % r["bitwise_wb"] if grad else "",
                        "%.1e" % r["err"] if r["err"] is not None else "-",
                        r["note"]))
        except Exception as ex:  # noqa: BLE001
            r["error"] = "%s: %s" % (type(ex).__name__,
                                     " ".join(str(ex).split())[:300])
            out("  %-12s ERROR %s" % (r["impl"], r["error"]))
            if self.args.verbose:
                traceback.print_exc()
            try:
                self.sync()
                self.empty_cache()
            except Exception:  # noqa: BLE001
                out("grid: CUDA context lost; stopping")
                self.stopped = "CUDA context lost after %s" % r["impl"]
                self.write(final=True)
                raise SystemExit(3)

    def main(self):
        self.copy_gbs = COPY_GBS_GUESS
        self.envinfo = self.env()
        out("grid: %s" % json.dumps(self.envinfo))
        self.probe_imports()
        self.copy_gbs, c1, c2 = self.copy_bandwidth()
        self.envinfo["copy_us"] = [round(c1, 1), round(c2, 1)]
        out("copy bandwidth: %.0f GB/s (1 GiB, read+write; medians %.1f / "
            "%.1f us)" % (self.copy_gbs, c1, c2))
        done = load_done(self.args.resume)
        for i, p in enumerate(self.pts):
            todo = [x for x in impls_for(p[0], self.impls)
                    if (p[0], p[1], p[2], p[3], p[4], x) not in done]
            if not todo:
                continue
            est = est_point_s(p, todo, group_of(p) not in self.seen_groups)
            if self.left_s() < 1.3 * est + 3:
                self.not_reached = [list(q) for q in self.pts[i:]]
                self.stopped = "time: %.0f s left, the next point needs ~%.0f" \
                    % (self.left_s(), est)
                out("grid: stopping (%s); %d points not reached" % (
                    self.stopped, len(self.not_reached)))
                break
            self.run_point(p, todo)
            self.write(final=False)
            self.sync()
        return self.write(final=True)

    def write(self, final=True):
        d = {"format": 1, "command": self.args.command,
             "shard": self.args.shard or "", "env": self.envinfo,
             "copy_gbs": self.copy_gbs, "impls": list(self.impls),
             "planned": [list(p) for p in self.pts],
             "not_reached": self.not_reached, "stopped": self.stopped,
             "complete": final and not self.not_reached and
             not self.stopped, "wall_s": round(time.time() - self.t0, 1),
             "rows": self.rows}
        os.makedirs(self.args.out, exist_ok=True)
        path = os.path.join(self.args.out, self.args.json_name)
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(d, f, indent=0, default=str)
        os.replace(tmp, path)
        if not final:
            return 0
        out("")
        out(summary_table(d))
        errs = [r for r in self.rows if "error" in r]
        out("grid: %d rows over %d points, %d errors, %d points not reached, "
            "%.0f s; wrote %s" % (len(self.rows), len(self.point_s),
                                  len(errs), len(self.not_reached),
                                  time.time() - self.t0, path))
        return 0


def load_done(paths):
    """(op, dtype, wdtype, M, N, impl) measured or failed in earlier JSON."""
    done = set()
    for path in paths or ():
        with open(path) as f:
            d = json.load(f)
        for r in d["rows"]:
            if "us" in r or "error" in r:
                done.add(point_key(r) + (r["impl"],))
    return done


# ------------------------------------------------------ merge and report

def merge(paths):
    """One JSON from several runs: the runs' headers, and per (point,
    impl) the row of the last file that measured it (a measured row wins
    over an error, an error over a skip)."""
    runs, rows, planned = [], {}, {}

    def rank(r):
        return 2 if "us" in r else (1 if "error" in r else 0)
    for path in paths:
        with open(path) as f:
            d = json.load(f)
        if "runs" in d:  # an earlier merge
            runs.extend(d["runs"])
        else:
            runs.append({k: d.get(k) for k in (
                "command", "shard", "env", "copy_gbs", "impls", "stopped",
                "complete", "wall_s")})
            runs[-1]["file"] = os.path.basename(path)
            runs[-1]["not_reached"] = len(d.get("not_reached", []))
        for p in d.get("planned", []):
            planned[tuple(p[:5])] = p
        for r in d["rows"]:
            k = point_key(r) + (r["impl"],)
            if k not in rows or rank(r) >= rank(rows[k]):
                rows[k] = r
    return {"format": 1, "merged": True, "runs": runs,
            "planned": list(planned.values()), "rows": list(rows.values())}


def cells(d):
    """{(op, dtype, wdtype, M, N): {impl: row}}."""
    c = {}
    for r in d["rows"]:
        c.setdefault(point_key(r), {})[r["impl"]] = r
    return c


def best_peer(cell):
    best = (None, None)
    for p in PEERS:
        r = cell.get(p)
        if r and "us" in r and (best[1] is None or r["us"] < best[1]):
            best = (p, r["us"])
    return best


def gmean(v):
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else None


def family(k):
    """(norm, direction, dtype pair) of a point key."""
    op, dt, wdt = k[0], k[1], k[2]
    return ("LayerNorm" if op.startswith("layer") else "RMSNorm",
            "backward" if op.endswith("_grad") else "forward",
            pair_name(dt, wdt))


def m_label(cell):
    for r in cell.values():
        return r.get("m_label", str(r["M"]))
    return "?"


def summary_table(d):
    """A short table per (norm, direction, dtypes): points, geometric mean
    against the best peer, slower count, worst point."""
    st = stats(d)
    L = ["| norm | direction | dtypes | points with a ratio | vs best peer "
         "(gmean) | slower | worst | ours % copy (median) |",
         "| --- | --- | --- | ---: | ---: | ---: | --- | ---: |"]
    for fam, s in st["families"].items():
        L.append("| %s | %s | %s | %d | %s | %d | %s | %s |" % (
            fam + (len(s["ratios"]),
                   "%.2fx" % gmean(s["ratios"]) if s["ratios"] else "-",
                   len(s["slower"]),
                   "%.2fx at %dx%d (%s)" % (s["slower"][0][1],
                                            s["slower"][0][0][3],
                                            s["slower"][0][0][4],
                                            s["slower"][0][2])
                   if s["slower"] else "-",
                   "%.0f" % median(s["pct"]) if s["pct"] else "-")))
    if st["ratios"]:
        L.append("")
        L.append("all: %d points, %.2fx the best peer in geometric mean, "
                 "slower at %d" % (len(st["ratios"]), gmean(st["ratios"]),
                                   st["nslower"]))
    return "\n".join(L)


def median(v):
    v = sorted(v)
    return v[len(v) // 2] if len(v) % 2 else 0.5 * (v[len(v) // 2 - 1] +
                                                     v[len(v) // 2])


def stats(d):
    fams = {}
    allr, nslower = [], 0
    for k, c in sorted(cells(d).items(), key=lambda kv: (
            family(kv[0]), kv[0][4], kv[0][3])):
        fam = family(k)
        s = fams.setdefault(fam, {"ratios": [], "slower": [], "pct": [],
                                  "peer_ratios": {p: [] for p in PEERS},
                                  "missing": [], "nondet": [], "errors": [],
                                  "points": 0, "peer_points": {}})
        s["points"] += 1
        o = c.get("ours")
        for p in PEERS:
            if p in c and "us" in c[p]:
                s["peer_points"][p] = s["peer_points"].get(p, 0) + 1
        if o and "error" in o:
            s["errors"].append((k, o["error"]))
        if o and "us" in o:
            s["pct"].append(o["pct_copy"])
            if o.get("bitwise_wb") is False or (
                    not k[0].endswith("_grad") and o.get("bitwise") is False):
                s["nondet"].append(k)
            for p in PEERS:
                if p in c and "us" in c[p]:
                    s["peer_ratios"][p].append(c[p]["us"] / o["us"])
        peer, pus = best_peer(c)
        if o and "us" in o and pus:
            ratio = pus / o["us"]
            s["ratios"].append(ratio)
            allr.append(ratio)
            if ratio < 1.0:
                s["slower"].append((k, ratio, peer, o["us"], pus,
                                    m_label(c)))
                nslower += 1
        else:
            s["missing"].append(k)
    for s in fams.values():
        s["slower"].sort(key=lambda t: t[1])
    return {"families": fams, "ratios": allr, "nslower": nslower}


def targets(d):
    """Where the issue's targets stand (item 4)."""
    st = stats(d)
    L = []
    for direction in ("backward", "forward"):
        for norm in ("LayerNorm", "RMSNorm"):
            rs = [r for f, s in st["families"].items()
                  if f[0] == norm and f[1] == direction
                  for r in s["ratios"]]
            low = sum(r < 0.95 for r in rs)
            if rs:
                L.append("* %s %s: %.2fx the best peer in geometric mean "
                         "over %d points (target >= 1.2x); %d points below "
                         "0.95x (target 0)." % (norm, direction, gmean(rs),
                                                len(rs), low))
    c = cells(d)
    for what, pick, goal in (
            ("bf16, M >= 16384, 1024 <= N <= 16384",
             lambda k: k[1] == "bf16" and k[2] == "bf16" and k[3] >= 16384
             and 1024 <= k[4] <= 16384, 85),
            ("bf16, N >= 32768, M >= 1024",
             lambda k: k[1] == "bf16" and k[2] == "bf16" and k[4] >= 32768
             and k[3] >= 1024, 60)):
        pts = [(k, cc["ours"]["pct_copy"]) for k, cc in c.items()
               if pick(k) and "ours" in cc and "us" in cc["ours"]]
        if pts:
            below = [p for p in pts if p[1] < goal]
            worst = min(pts, key=lambda p: p[1])
            L.append("* %% of copy, %s: %d points, median %.0f%%, lowest "
                     "%.0f%% (%s %dx%d); %d below the %d%% target." % (
                         what, len(pts), median([p[1] for p in pts]),
                         worst[1], worst[0][0], worst[0][3], worst[0][4],
                         len(below), goal))
    return L


def report_md(d, merge_cmd=""):
    st = stats(d)
    runs = d.get("runs", [])
    env = runs[0]["env"] if runs and runs[0].get("env") else {}
    heads = sorted({(r.get("env") or {}).get("kernels_git_head") or "?"
                    for r in runs})
    L = [SECTION_BEGIN, "## The grid (issue 21): %s, %s UTC" % (
        env.get("device", "?"), env.get("date_utc", "?")), ""]
    L.append("Kernels from commit %s; torch %s, triton %s, %s, quack-kernels"
             " %s (%s). Copy bandwidth per run: %s GB/s. Per point: ours "
             "and every peer on the same fresh random inputs; median of "
             "triton.testing.do_bench (L2 flushed per repetition); 'vs best "
             "peer' = the fastest of %s divided by ours (> 1: we are "
             "faster); %% copy = the point's minimum bytes / time against "
             "the run's device-to-device copy. Heat maps: bench/grid.png "
             "(vs best peer), bench/grid-copy.png (ours, %% of copy)." % (
                 ", ".join(heads), env.get("torch", "?"),
                 env.get("triton", "?"),
                 "liger-kernel %s" % env.get("liger_version", "?"),
                 env.get("quack_version", "?"), env.get("quack", "?"),
                 ", ".join("%.0f" % r["copy_gbs"] for r in runs
                           if r.get("copy_gbs")),
                 ", ".join(LABEL[p] for p in PEERS)))
    L.append("")
    L.append("Commands (%d device calls%s):" % (
        len(runs), ", then `%s`" % merge_cmd if merge_cmd else ""))
    L.append("")
    for r in runs:
        L.append("* `%s`%s: %s s%s" % (
            r.get("command") or "?",
            " (shard %s)" % r["shard"] if r.get("shard") else "",
            r.get("wall_s"),
            ", stopped: %s, %s points not reached" % (
                r["stopped"], r.get("not_reached"))
            if r.get("stopped") else ""))
    L.append("")
    L.append("| norm | direction | dtypes | points | vs best peer (gmean) "
             "| slower | " + " | ".join("vs %s" % LABEL[p] for p in PEERS)
             + " | ours % copy (median) |")
    L.append("| --- | --- | --- | ---: | ---: | ---: | " +
             " | ".join("---:" for _ in PEERS) + " | ---: |")
    for fam, s in st["families"].items():
        L.append("| %s | %s | %s | %d | %s | %d | %s | %s |" % (
            fam + (len(s["ratios"]),
                   "**%.2fx**" % gmean(s["ratios"]) if s["ratios"] else "-",
                   len(s["slower"]),
                   " | ".join("%.2fx (%d)" % (gmean(s["peer_ratios"][p]),
                                             len(s["peer_ratios"][p]))
                              if s["peer_ratios"][p] else "-"
                              for p in PEERS),
                   "%.0f%%" % median(s["pct"]) if s["pct"] else "-")))
    L.append("")
    if st["ratios"]:
        L.append("**All: %.2fx the best peer in geometric mean over %d "
                 "points; slower at %d.** 'vs X (n)': geometric mean of X's "
                 "time / ours over the n points X ran." % (
                     gmean(st["ratios"]), len(st["ratios"]), st["nslower"]))
        L.append("")
    L.append("Targets (issue 21, item 4):")
    L.append("")
    L.extend(targets(d) or ["* no points measured"])
    L.append("")
    for fam, s in st["families"].items():
        if not s["slower"]:
            continue
        L.append("Slower than the best peer, %s %s %s (%d of %d points; "
                 "ratio, M x N, ours µs / peer µs):" % (
                     fam + (len(s["slower"]), len(s["ratios"]))))
        L.append("")
        L.append(", ".join("%.2fx %s%s x %d (%.1f/%.1f %s)" % (
            r, "max=" if lab == "max" else "", k[3], k[4], ous, pus, p)
            for k, r, p, ous, pus, lab in s["slower"]))
        L.append("")
    extra = []
    for fam, s in st["families"].items():
        if s["nondet"]:
            extra.append("* %s %s %s: ours NOT bitwise repeatable at %s" % (
                fam + (", ".join("%dx%d" % (k[3], k[4])
                                 for k in s["nondet"]),)))
        if s["errors"]:
            extra.append("* %s %s %s: ours failed at %s" % (
                fam + ("; ".join("%dx%d (%s)" % (k[3], k[4], e[:80])
                                 for k, e in s["errors"][:10]),)))
        if s["missing"]:
            extra.append("* %s %s %s: no ratio at %d points (ours or every "
                         "peer missing): %s" % (
                             fam + (len(s["missing"]), ", ".join(
                                 "%dx%d" % (k[3], k[4])
                                 for k in s["missing"][:30]))))
    pl = {tuple(p[:5]) for p in d.get("planned", [])}
    notrun = pl - set(cells(d))
    if notrun:
        extra.append("* %d planned points have no rows (not reached)" %
                     len(notrun))
    if extra:
        L.append("Determinism, failures, gaps:")
        L.append("")
        L.extend(extra)
        L.append("")
    L.append(SECTION_END)
    return "\n".join(L) + "\n"


def write_section(md_path, section):
    text = ""
    if os.path.isfile(md_path):
        with open(md_path) as f:
            text = f.read()
    b, e = text.find(SECTION_BEGIN), text.find(SECTION_END)
    if b >= 0 and e > b:
        text = text[:b] + section.rstrip("\n") + text[e + len(SECTION_END):]
    else:
        text = text.rstrip("\n") + ("\n\n" if text else "") + section
    with open(md_path, "w") as f:
        f.write(text)


def m_order(lab):
    return (1, 0) if lab == "max" else (0, int(lab))


def plot(d, path, what):
    """Heat maps over M x N, one per (dtypes, norm, direction): what =
    "ratio" (best peer / ours, log colour scale centred on 1) or "copy"
    (ours, % of copy)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.colors import LogNorm, Normalize
    except ImportError as ex:
        return "no plot (%s)" % ex
    c = cells(d)
    fams = sorted({family(k) for k in c},
                  key=lambda f: (["bf16", "f16", "f32", "bf16/wf32"].index(
                      f[2]) if f[2] in ("bf16", "f16", "f32", "bf16/wf32")
                      else 9, f[1] != "backward", f[0]))
    if not fams:
        return "no plot (no points)"
    cols = 2
    rows = -(-len(fams) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(11 * cols, 5.2 * rows),
                             squeeze=False)
    for ax in axes.flat[len(fams):]:
        ax.axis("off")
    im = None
    for ax, fam in zip(axes.flat, fams):
        pts = {k: cc for k, cc in c.items() if family(k) == fam}
        ns = sorted({k[4] for k in pts})
        ms = sorted({m_label(cc) for cc in pts.values()}, key=m_order)
        grid = [[float("nan")] * len(ns) for _ in ms]
        txt = [[""] * len(ns) for _ in ms]
        for k, cc in pts.items():
            i, j = ms.index(m_label(cc)), ns.index(k[4])
            o = cc.get("ours")
            if not o or "us" not in o:
                txt[i][j] = "x"
                continue
            if what == "ratio":
                _, pus = best_peer(cc)
                if pus:
                    v = pus / o["us"]
                    grid[i][j] = v
                    txt[i][j] = "%.2f" % v
            else:
                grid[i][j] = o["pct_copy"]
                txt[i][j] = "%.0f" % o["pct_copy"]
        if what == "ratio":
            im = ax.imshow(grid, cmap="RdYlGn", norm=LogNorm(0.5, 2.0),
                           aspect="auto", origin="lower")
        else:
            im = ax.imshow(grid, cmap="viridis", norm=Normalize(0, 100),
                           aspect="auto", origin="lower")
        fs = 6 if len(ns) > 12 else 8
        for i in range(len(ms)):
            for j in range(len(ns)):
                if txt[i][j]:
                    ax.text(j, i, txt[i][j], ha="center", va="center",
                            fontsize=fs)
        ax.set_xticks(range(len(ns)))
        ax.set_xticklabels([str(n) for n in ns], rotation=60, fontsize=7)
        ax.set_yticks(range(len(ms)))
        ax.set_yticklabels(ms, fontsize=7)
        ax.set_xlabel("N")
        ax.set_ylabel("M (max: the largest within 4 GiB a tensor)")
        ax.set_title("%s %s %s" % fam)
        cb = fig.colorbar(im, ax=ax, fraction=0.03,
                          label="best peer time / ours" if what == "ratio"
                          else "ours, % of device copy")
        if what == "ratio":
            ticks = [0.5, 0.67, 0.8, 0.95, 1.0, 1.2, 1.5, 2.0]
            cb.set_ticks(ticks)
            cb.set_ticklabels(["%g" % v for v in ticks])
            cb.minorticks_off()
    fig.suptitle("bench/grid.py: %s" % (
        "speed against the best peer (> 1: ours faster)" if what == "ratio"
        else "ours as % of the device-to-device copy bandwidth"))
    fig.tight_layout(rect=(0, 0, 1, 0.985))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return "wrote %s" % path


def do_report(args):
    with open(args.report) as f:
        d = json.load(f)
    if "runs" not in d:
        d = merge([args.report])
    sec = report_md(d, merge_cmd=args.merge_command)
    write_section(args.results_md, sec)
    out(sec)
    out("grid: wrote the grid section of %s" % args.results_md)
    for what, name in (("ratio", "grid.png"), ("copy", "grid-copy.png")):
        out("grid: " + plot(d, os.path.join(args.png_dir, name), what))
    return 0


# ---------------------------------------------------------------------- CLI

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="")
    ap.add_argument("--gpu-dir", default=C.default_gpu_dir())
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--shard", default="", help="K/N: the K-th of N shards")
    ap.add_argument("--shards", type=int, default=0,
                    help="dry run: the time of each of N shards")
    ap.add_argument("--calibrate", nargs="*", default=[],
                    help="dry run: scale the time model by measured / "
                    "estimated over these runs' points")
    ap.add_argument("--target-s", type=float, default=400.0,
                    help="dry run: seconds of points per device call")
    ap.add_argument("--budget-s", type=float, default=0,
                    help="start no point after this many seconds")
    ap.add_argument("--deadline", type=float, default=0,
                    help="epoch second after which no point starts")
    ap.add_argument("--compile-dynamic-m", action="store_true",
                    help="torch.compile once per (op, N, dtypes) with M "
                    "symbolic, not once per point (dynamic=False)")
    ap.add_argument("--autotune-reserve-s", type=float, default=75.0,
                    help="compile-max only with this much time left")
    ap.add_argument("--impls", default=",".join(DEFAULT_IMPLS),
                    help="comma-separated of %s" % ",".join(IMPLS))
    ap.add_argument("--ops", default="", help="comma-separated ops")
    ap.add_argument("--dtypes", default="",
                    help="comma-separated: bf16, f16, f32, bf16/wf32")
    ap.add_argument("--only-n", default="")
    ap.add_argument("--only-m", default="", help="M values or 'max'")
    ap.add_argument("--resume", nargs="*", default=[],
                    help="skip (point, impl) measured in these JSON files")
    ap.add_argument("--warmup", type=int, default=5, help="ms (do_bench)")
    ap.add_argument("--rep", type=int, default=20, help="ms (do_bench)")
    ap.add_argument("--reruns", type=int, default=1,
                    help="2: time the peers twice too (ours always twice)")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--image", choices=("auto", "cubin", "ptx"),
                    default="auto")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--smoke-cpu", action="store_true",
                    help="run the harness on the CPU (tiny points; times "
                    "mean nothing): its inputs, calls, checks and JSON")
    ap.add_argument("--merge", nargs="+", metavar="JSON")
    ap.add_argument("--report", metavar="JSON", default="")
    ap.add_argument("--results-md", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "RESULTS.md"))
    ap.add_argument("--png-dir", default=os.path.dirname(
        os.path.abspath(__file__)))
    ap.add_argument("--merge-command", default="",
                    help="report: the merge command to name")
    args = ap.parse_args(argv)
    args.command = "python3 bench/grid.py " + " ".join(
        sys.argv[1:] if argv is None else argv)
    if args.merge:
        if not args.out:
            raise SystemExit("grid: --merge needs --out FILE")
        d = merge(args.merge)
        with open(args.out, "w") as f:
            json.dump(d, f, indent=0)
        out("grid: merged %d runs, %d rows into %s" % (
            len(d["runs"]), len(d["rows"]), args.out))
        out(summary_table(d))
        return 0
    if args.report:
        return do_report(args)
    impls = [i for i in args.impls.split(",") if i]
    bad = [i for i in impls if i not in IMPLS]
    if bad:
        raise SystemExit("grid: unknown impls %s (known: %s)" % (
            ",".join(bad), ",".join(IMPLS)))
    COMPILE_DYNAMIC_M[0] = args.compile_dynamic_m
    pts = select_points(args)
    if args.resume:
        # Before the shards: `--resume <earlier JSON> --shard K/M` splits
        # what is left over M new shards.
        done = load_done(args.resume)
        left = [p for p in pts if any(p[:5] + (i,) not in done
                                      for i in impls_for(p[0], impls))]
        out("grid: --resume: %d of %d points have implementations left" % (
            len(left), len(pts)))
        pts = left
    args.gpu_dir = os.path.abspath(args.gpu_dir)
    if args.dry_run:
        if args.calibrate:
            EST_SCALE[0] = calibrate(args.calibrate, impls)
        return dry_run(args, pts, impls)
    if args.shard:
        k, nsh = parse_shard(args.shard)
        pts, _ = shard_points(pts, impls, k, nsh)
    args.out = args.out or os.environ.get("OUT") or os.path.join(
        args.gpu_dir, "out")
    args.json_name = "grid-%s-of-%s.json" % tuple(args.shard.split("/")) \
        if args.shard else "grid.json"
    try:
        index = C.load_index(args.gpu_dir)
    except OSError as ex:
        out("grid: cannot read %s/configs.json (%s): ours will fail" % (
            args.gpu_dir, ex))
        index = {"configs": {}}
    try:
        import torch
        importlib.import_module("triton")
    except ImportError as ex:
        out("grid: cannot import torch/triton (%s); --dry-run needs "
            "neither" % ex)
        return 2
    if not torch.cuda.is_available() and not args.smoke_cpu:
        out("grid: torch sees no CUDA device")
        return 2
    out("grid: %d points in this call%s" % (
        len(pts), " (shard %s)" % args.shard if args.shard else ""))
    return Grid(args, index, pts, impls).main()


if __name__ == "__main__":
    sys.exit(main())
