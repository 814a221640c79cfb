#!/usr/bin/env python3
"""Bandwidth benchmark of the norm backward on the GPU (see
/work/.library/device/METHOD.md for the method).

Per (op, dtype, M, N) of configs.bench_shapes() (LayerNorm and RMSNorm
backward; bf16 and f32, weight dtype = x dtype; M x N = 16384 x 4096,
4096 x 8192, 401408 x 24, 1024 x 65536):

  ours deterministic, ours grouped_atomic   compiled kernels via libnormrt
  torch eager       aten.native_layer_norm_backward /
                    aten._fused_rms_norm_backward (else autograd through
                    F.rms_norm)
  torch.compile     inductor on the explicit formulas (dy, x, mean, rstd,
                    w) -> (dx, dw, db), dynamic=False
  triton lesson     bench/triton_lesson.py (grouped atomic partials +
                    reduce kernel; partials zeroed inside the timed call)
  liger             Liger-Kernel's backward (liger_kernel.ops.layer_norm.
                    layer_norm_backward / rms_norm.rms_norm_backward, the
                    functions its autograd Functions call; RMSNorm in its
                    default 'llama' casting mode and in_place=True, dx over
                    dy, as its module runs it; the version pinned in
                    bench/requirements-gpu.txt, carried as a wheel)
  torch add x+dy    the same 3*M*N elements streamed, no reductions: the
                    per-shape bytes floor

Timing: triton.testing.do_bench (CUDA events, L2 flushed before every
repetition by writing a 256 MB buffer), median, warm-up first; each
implementation timed twice (the spread is the noise). GB/s = the minimum
bytes of the backward (read dy and x once, write dx once, plus weight,
mean/rstd, dw/db) / median time: the same bytes for every implementation.
'% copy' is against a device-to-device copy measured in the same run
(1 GiB, bytes read + written). 'bitwise' says whether two runs on the
same inputs gave identical dx/dw/db; 'rel err' is the largest of dx/dw/db's
||out - ref|| / ||ref|| against a float64 reference from the same
statistics.

  python3 bench/bench.py [--out DIR] [--budget-s S] [--no-compile]
  python3 bench/bench.py --dry-run     no GPU/torch: check configs, print
                                       the plan and the bandwidth floor

Writes DIR/bench.md (markdown, as bench/RESULTS.md takes it) and
DIR/bench.json; prints the table last. DIR: --out, else $OUT, else
.dev/gpu/out. A failing row prints its error and the run goes on.
"""

import argparse
import json
import math
import os
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import configs as C  # noqa: E402
import gpu_env as E  # noqa: E402

IMPLS = ("ours deterministic", "ours grouped_atomic", "torch eager",
         "torch.compile", "liger", "triton lesson", "torch add x+dy")
# The forward's bytes floor (the sweep's forward rows).
FWD_FLOOR = "torch copy x->y"
# The peers "best peer" is taken over (issue 9).
PEERS = ("torch eager", "torch.compile", "liger")
SIZE = {"f32": 4, "f16": 2, "bf16": 2}
COPY_GBS_GUESS = 4300.0  # H200 device-to-device copy, KINDS.md


def out(*a):
    print(*a, flush=True)


def _dist_version(name):
    try:
        from importlib.metadata import version
        return version(name)
    except Exception:  # noqa: BLE001
        return "?"


def min_bytes(op, m, n, dt):
    s = SIZE[dt]
    layer = op.startswith("layer")
    b = 3 * m * n * s          # dy, x read; dx written
    b += n * s                 # weight read
    b += m * 4 * (2 if layer else 1)  # mean, rstd read
    b += n * s * (2 if layer else 1)  # dweight (dbias) written
    return b


# ----------------------------------------------------------------- dry run

def launch_plan(rt, gpu_dir, entry, cfg, m):
    """normrt_dry_run's kernels and grids for M rows (no driver needed)."""
    from gpu_check import fake_tensors, FAKE_WS
    import re
    with open(os.path.join(gpu_dir, entry["manifest"])) as f:
        rc, mod, msg = E.status(rt.load_manifest_only, f.read())
    if rc:
        return "manifest rejected: %s" % msg
    try:
        rc, wsb, msg = E.status(mod.workspace_bytes, m)
        if not rc:
            rc, plan, msg = E.status(mod.dry_run,
                                     fake_tensors(C.Case(cfg, m)), FAKE_WS,
                                     wsb)
        if rc:
            return "dry run failed: %s" % msg
        steps = []
        for line in plan.splitlines():
            k = re.match(r"launch (\S+) grid (\d+) block (\d+)", line)
            if k:
                steps.append("%s %sx%s" % (k.group(1).split("_")[-2],
                                           k.group(2), k.group(3)))
            elif line.startswith("clear"):
                steps.append("memset")
        return "workspace %.1f MB; %s" % (wsb / 1e6, ", ".join(steps))
    finally:
        mod.close()


def dry_run(args, index):
    from gpu_check import manifest_problems, load_manifest
    lib = E.find_library(args.gpu_dir)
    rt = E.Runtime(lib) if lib else None
    bad = 0
    out("%-16s %-5s %7s %6s %12s %12s" % ("op", "dtype", "M", "N", "min MB",
                                            "floor us"))
    for op, dt, m, n in C.bench_shapes():
        b = min_bytes(op, m, n, dt)
        out("%-16s %-5s %7d %6d %12.1f %12.1f" % (
            op, dt, m, n, b / 1e6, b / (COPY_GBS_GUESS * 1e3)))
        for st in C.BENCH_STRATEGIES:
            cfg = C.Cfg(op, n, dt, strategy=st)
            e = index["configs"].get(cfg.name)
            if e is None:
                out("  NOT COMPILED %s" % cfg.name)
                bad += 1
                continue
            probs = manifest_problems(cfg, load_manifest(args.gpu_dir, e))
            for p in probs:
                out("  MANIFEST %s: %s" % (cfg.name, p))
            bad += bool(probs)
            dxk = [k for k in e.get("kernels", []) if k.get("kind") == "dx"]
            if dxk:
                k = dxk[0]
                res = e.get("resources", {}).get(k["name"], {})
                groups = C_groups(m, n)
                # A clustered kernel ("cluster": C > 1, grid "programs")
                # launches G * C blocks.
                cluster = k.get("cluster", 1)
                grid = k.get("grid") if cluster == 1 else \
                    "%s x cluster %d = %d blocks" % (k.get("grid"), cluster,
                                                     groups * cluster)
                out("  %-44s dx kernel: grid %s (G=%d for M=%d), block %s, "
                    "rows/block %s, lanes %s, vector %s, registers-row %s, "
                    "regs %s, spills %s/%s" % (
                        cfg.name, grid, groups, m, k.get("block"),
                        k.get("rows"), k.get("lanes"), k.get("vector"),
                        k.get("registers"), res.get("registers", "?"),
                        res.get("spill_stores", "?"),
                        res.get("spill_loads", "?")))
            if rt is not None:
                out("  %-44s launches: %s" % (
                    "", launch_plan(rt, args.gpu_dir, e, cfg, m)))
    out("planned rows: %d (%d shapes x %d implementations)" % (
        len(C.bench_shapes()) * len(IMPLS), len(C.bench_shapes()),
        len(IMPLS)))
    out("runtime: %s" % (lib or "libnormrt.so not found"))
    return 1 if bad else 0


def C_groups(m, n):
    """G of docs/Lowering.md (configs.default_groups)."""
    return C.default_groups(m, n)


# --------------------------------------------------------------- GPU parts

class Ours:
    """A compiled configuration with its workspace and argument list."""

    def __init__(self, rt, gpu_dir, entry, t, image="auto"):
        import torch
        rc, mod, msg, self.image, tried = E.load_config(
            rt, gpu_dir, entry, image)
        if rc:
            raise E.RuntimeLaunchError("normrt_module_load_files", rc, msg)
        if tried:
            out("  (fell back to %s: %s)" % (os.path.basename(self.image),
                                            "; ".join(tried)))
        self.mod = mod
        with open(os.path.join(gpu_dir, entry["manifest"])) as f:
            manifest = json.load(f)
        m = t["x"].shape[0]
        nb = mod.workspace_bytes(m)
        self.ws = torch.empty(max(nb, 1), device="cuda", dtype=torch.uint8)
        self.ws_bytes = nb
        names = [a["name"] for a in manifest["arguments"]]
        self.forward = "y" in names
        if self.forward:
            # The forward: y (x's layout), f32 mean (LayerNorm) and rstd.
            self.outs = {"y": torch.empty_like(t["x"]),
                         "mean": torch.empty(m, device="cuda",
                                             dtype=torch.float32),
                         "rstd": torch.empty(m, device="cuda",
                                             dtype=torch.float32)}
        else:
            self.outs = {"dx": torch.empty_like(t["x"]),
                         "dweight": torch.empty_like(t["weight"]),
                         "dbias": torch.empty_like(t["weight"])}
        src = dict(t)
        src.update(self.outs)
        self.tensors = [E.torch_tensor(a["name"], src[a["name"]])
                        for a in manifest["arguments"]]
        self.has_bias = "dbias" in names
        self.has_mean = "mean" in names
        self.stream = torch.cuda.current_stream().cuda_stream

    def run(self):
        self.mod.launch(self.tensors, self.ws.data_ptr(), self.ws_bytes,
                        self.stream)
        if self.forward:
            return (self.outs["y"],
                    self.outs["mean"] if self.has_mean else None,
                    self.outs["rstd"])
        return (self.outs["dx"], self.outs["dweight"],
                self.outs["dbias"] if self.has_bias else None)

    def close(self):
        self.mod.close()


def min_bytes_fwd(op, m, n, dt):
    """The forward's minimum bytes: x read and y written once, weight
    (and bias) read, the f32 statistics written."""
    s = SIZE[dt]
    layer = op.startswith("layer")
    b = 2 * m * n * s
    b += n * s * (2 if layer else 1)
    b += m * 4 * (2 if layer else 1)
    return b


def ln_fwd_formula(x, w, b, eps):
    xf = x.float()
    mean = xf.mean(1)
    xc = xf - mean[:, None]
    rstd = (xc * xc).mean(1).add(eps).rsqrt()
    y = xc * rstd[:, None] * w.float() + b.float()
    return y.to(x.dtype), mean, rstd


def rms_fwd_formula(x, w, eps):
    xf = x.float()
    rstd = (xf * xf).mean(1).add(eps).rsqrt()
    y = xf * rstd[:, None] * w.float()
    return y.to(x.dtype), rstd


def ln_bwd_formula(dy, x, mean, rstd, w):
    xf, dyf = x.float(), dy.float()
    r = rstd[:, None]
    xhat = (xf - mean[:, None]) * r
    g = dyf * w.float()
    c1 = g.mean(1, keepdim=True)
    c2 = (g * xhat).mean(1, keepdim=True)
    dx = (g - c1 - xhat * c2) * r
    dw = (dyf * xhat).sum(0)
    db = dyf.sum(0)
    return dx.to(x.dtype), dw.to(w.dtype), db.to(w.dtype)


def rms_bwd_formula(dy, x, rstd, w):
    xf, dyf = x.float(), dy.float()
    r = rstd[:, None]
    xhat = xf * r
    g = dyf * w.float()
    c2 = (g * xhat).mean(1, keepdim=True)
    dx = (g - xhat * c2) * r
    dw = (dyf * xhat).sum(0)
    return dx.to(x.dtype), dw.to(w.dtype)


class Bench:
    def __init__(self, args, index):
        import torch
        import triton
        from triton.testing import do_bench
        self.torch, self.triton, self.do_bench = torch, triton, do_bench
        self.args, self.index = args, index
        self.tdt = {"f32": torch.float32, "f16": torch.float16,
                    "bf16": torch.bfloat16}
        lib = E.find_library(args.gpu_dir)
        self.rt = E.Runtime(lib) if lib else None
        self.lib = lib
        self.rows = []
        self.t0 = time.time()
        self._liger_check = None  # a liger row's own correctness call

    def time_us(self, fn):
        a = self.do_bench(fn, warmup=self.args.warmup, rep=self.args.rep,
                          return_mode="median")
        b = self.do_bench(fn, warmup=self.args.warmup, rep=self.args.rep,
                          return_mode="median")
        return a * 1e3, b * 1e3

    def copy_bandwidth(self):
        T = self.torch
        n = 1 << 30
        src = T.randint(0, 256, (n,), device="cuda", dtype=T.uint8)
        dst = T.empty_like(src)
        t1, t2 = self.time_us(lambda: dst.copy_(src))
        src = dst = None
        T.cuda.empty_cache()
        return 2 * n / (min(t1, t2) * 1e-6) / 1e9, t1, t2

    def bits_equal(self, a, b):
        T = self.torch
        if a is None:
            return True
        bt = {T.float32: T.int32, T.float16: T.int16, T.bfloat16: T.int16}
        return bool(T.equal(a.contiguous().view(bt[a.dtype]),
                            b.contiguous().view(bt[b.dtype])))

    def rel_err(self, got, ref):
        T = self.torch
        g = got.double()
        if not bool(T.isfinite(g).all()):
            return math.inf
        d = float(T.linalg.vector_norm((g - ref).flatten()))
        r = float(T.linalg.vector_norm(ref.flatten()))
        return d / r if r else (0.0 if d == 0 else math.inf)

    def measure(self, row, fn, refs, bytes_):
        """Correctness, bitwise repeat, then the two timings."""
        T = self.torch
        check, self._liger_check = self._liger_check or fn, None
        t0 = time.time()
        res = check()
        T.cuda.synchronize()
        row["first_call_s"] = round(time.time() - t0, 3)
        first = [r.clone() if r is not None else None for r in res]
        res2 = check()
        T.cuda.synchronize()
        if refs is not None:
            row["bitwise"] = all(self.bits_equal(a, b)
                                 for a, b in zip(first, res2)
                                 if a is not None)
            row["rel_err"] = max(self.rel_err(g, r) for g, r in
                                 zip(first, refs) if g is not None
                                 and r is not None)
        del first, res, res2
        t1, t2 = self.time_us(fn)
        row["us"], row["us_rerun"] = t1, t2
        row["gbs"] = bytes_ / (t1 * 1e-6) / 1e9
        row["pct_copy"] = 100.0 * row["gbs"] / self.copy_gbs

    def new_row(self, op, dt, m, n, impl, bytes_):
        r = {"op": op, "dtype": dt, "M": m, "N": n, "impl": impl,
             "bytes": bytes_, "note": ""}
        self.rows.append(r)
        return r

    def attempt(self, row, make):
        """make() -> (fn, refs, bytes, note); measures fn into row, or
        records its error (and stops the run if the CUDA context is
        lost)."""
        T = self.torch
        impl = row["impl"]
        try:
            fn, refs_, b_, note = make()
            if note:
                row["note"] = note
            self.measure(row, fn, refs_, b_)
            if impl in ("torch.compile", "triton lesson"):
                row["note"] += " (first call, compiling: %.1f s)" % (
                    row["first_call_s"])
            out("  %-22s %9.1f us (rerun %9.1f) %7.0f GB/s %5.1f%% "
                "bitwise=%s err=%s %s" % (
                    impl, row["us"], row["us_rerun"], row["gbs"],
                    row["pct_copy"], row.get("bitwise", "-"),
                    "%.1e" % row["rel_err"] if "rel_err" in row else "-",
                    row["note"]))
        except Exception as ex:  # noqa: BLE001
            row["error"] = "%s: %s" % (type(ex).__name__,
                                       " ".join(str(ex).split())[:300])
            out("  %-22s ERROR %s" % (impl, row["error"]))
            if self.args.verbose:
                traceback.print_exc()
            try:
                T.cuda.synchronize()
            except Exception:  # noqa: BLE001
                out("  CUDA context lost; stopping")
                raise SystemExit(1)

    def run_shape(self, op, dt, m, n, impls=IMPLS):
        T, F = self.torch, self.torch.nn.functional
        layer = op.startswith("layer")
        tdt = self.tdt[dt]
        eps = C.EPS
        x = (T.randn(m, n, device="cuda") +
             (T.rand(m, 1, device="cuda") * 2 - 1)).to(tdt)
        dy = T.randn(m, n, device="cuda").to(tdt)
        w = (1 + 0.25 * T.randn(n, device="cuda")).to(tdt)
        b = (0.5 * T.randn(n, device="cuda")).to(tdt) if layer else None
        notes = {}
        # Statistics as the framework's forward saves them.
        fused_rms = hasattr(T.ops.aten, "_fused_rms_norm") and hasattr(
            T.ops.aten, "_fused_rms_norm_backward")
        if layer:
            _, mean2, rstd2 = T.ops.aten.native_layer_norm(x, [n], w, b, eps)
        else:
            mean2 = None
            rstd2 = None
            if fused_rms:
                try:
                    _, rstd2 = T.ops.aten._fused_rms_norm(x, [n], w, eps)
                except Exception as ex:  # noqa: BLE001
                    fused_rms = False
                    notes["eager"] = "no _fused_rms_norm (%s)" % type(
                        ex).__name__
            if rstd2 is None:
                rstd2 = T.rsqrt(x.float().pow(2).mean(1, keepdim=True) + eps)
        mean = mean2.reshape(m).float().contiguous() if layer else None
        rstd = rstd2.reshape(m).float().contiguous()
        # float64 reference from the same statistics.
        x64, dy64, r64 = x.double(), dy.double(), rstd.double()[:, None]
        xhat = (x64 - mean.double()[:, None]) * r64 if layer else x64 * r64
        g = dy64 * w.double()
        c2 = (g * xhat).mean(1, keepdim=True)
        dx_ref = r64 * (g - (g.mean(1, keepdim=True) if layer else 0) -
                        xhat * c2)
        refs = [dx_ref, (dy64 * xhat).sum(0), dy64.sum(0) if layer else None]
        del x64, dy64, xhat, g, c2
        bytes_ = min_bytes(op, m, n, dt)
        ins = {"dy": dy, "x": x, "rstd": rstd, "weight": w}
        if layer:
            ins["mean"] = mean

        def row_for(impl):
            return self.new_row(op, dt, m, n, impl, bytes_)

        def attempt(impl, make):
            self.attempt(row_for(impl), make)

        out("%s %s M=%d N=%d: min bytes %.1f MB, floor %.1f us at the copy "
            "bandwidth" % (op, dt, m, n, bytes_ / 1e6,
                           bytes_ / (self.copy_gbs * 1e3)))
        for st in C.BENCH_STRATEGIES:
            if "ours " + st not in impls:
                continue

            def make_ours(st=st):
                if self.rt is None:
                    raise RuntimeError("libnormrt.so not found")
                cfg = C.Cfg(op, n, dt, strategy=st)
                e = self.index["configs"].get(cfg.name)
                if e is None:
                    raise RuntimeError("configuration %s not compiled"
                                       % cfg.name)
                o = Ours(self.rt, self.args.gpu_dir, e, ins, self.args.image)
                self._close.append(o)
                return o.run, refs, bytes_, "G=%d, %s" % (
                    C_groups(m, n), os.path.splitext(o.image)[1][1:])
            attempt("ours " + st, make_ours)

        def make_eager():
            if layer:
                fn = lambda: tuple(T.ops.aten.native_layer_norm_backward(  # noqa
                    dy, x, [n], mean2, rstd2, w, b, [True, True, True]))
                return fn, refs, bytes_, "aten.native_layer_norm_backward"
            why = notes.get("eager", "")
            if fused_rms:
                fn = lambda: tuple(T.ops.aten._fused_rms_norm_backward(  # noqa
                    dy, x, [n], rstd2, w, [True, True])) + (None,)
                try:
                    fn()
                    return fn, refs, bytes_, "aten._fused_rms_norm_backward"
                except Exception as ex:  # noqa: BLE001
                    why = "_fused_rms_norm_backward failed: %s" % (
                        " ".join(str(ex).split())[:120])
            xr = x.detach().requires_grad_()
            wr = w.detach().requires_grad_()
            y = F.rms_norm(xr, [n], wr, eps)
            fn = lambda: T.autograd.grad(y, (xr, wr), dy,  # noqa
                                         retain_graph=True) + (None,)
            return fn, refs, bytes_, ("autograd F.rms_norm " + why).strip()
        if "torch eager" in impls:
            attempt("torch eager", make_eager)

        if "torch.compile" not in impls:
            pass
        elif self.args.no_compile:
            row_for("torch.compile")["note"] = "skipped (--no-compile)"
        elif self.args.budget_s and time.time() - self.t0 > self.args.budget_s:
            row_for("torch.compile")["note"] = "skipped: time budget"
            out("  %-22s skipped: time budget %.0f s" % ("torch.compile",
                                                        self.args.budget_s))
        else:
            def make_compile():
                T._dynamo.reset()
                if layer:
                    f = T.compile(ln_bwd_formula, dynamic=False)
                    fn = lambda: f(dy, x, mean, rstd, w)  # noqa
                else:
                    f = T.compile(rms_bwd_formula, dynamic=False)
                    fn = lambda: tuple(f(dy, x, rstd, w)) + (None,)  # noqa
                return fn, refs, bytes_, "inductor, explicit formulas"
            attempt("torch.compile", make_compile)

        def make_liger():
            import liger_kernel
            ver = getattr(liger_kernel, "__version__", "") or _dist_version(
                "liger-kernel")
            if layer:
                from liger_kernel.ops.layer_norm import layer_norm_backward
                fn = lambda: layer_norm_backward(dy, x, w, b, mean,  # noqa
                                                 rstd)
                return fn, refs, bytes_, "liger-kernel %s" % ver
            from liger_kernel.ops.rms_norm import (rms_norm_backward,
                                                   _str_to_casting_mode)
            from liger_kernel.ops.utils import calculate_settings
            bs, nw = calculate_settings(n)
            mode = _str_to_casting_mode["llama"]
            # in_place=True (its default): dx overwrites dy. Checked on a
            # copy of dy, timed on its own copy (whose values the repeated
            # calls keep replacing by dx: the time does not depend on them).
            dyc = dy.clone()
            fn = lambda: rms_norm_backward(dyc, x, w, rstd, 0.0, mode,  # noqa
                                           bs, nw, True, None) + (None,)

            def checked():
                dyc.copy_(dy)
                return fn()
            self._liger_check = checked
            return fn, refs, bytes_, "liger-kernel %s, in_place" % ver
        if "liger" in impls:
            attempt("liger", make_liger)

        if "triton lesson" not in impls:
            pass
        elif self.args.no_triton:
            row_for("triton lesson")["note"] = "skipped (--no-triton)"
        else:
            def make_triton():
                from triton_lesson import LessonBackward
                lb = LessonBackward(dy, x, w, mean, rstd, has_bias=layer)
                return lb.run, refs, bytes_, "G=%d, %d warps" % (
                    lb.groups, lb.num_warps)
            attempt("triton lesson", make_triton)

        def make_add():
            o = T.empty_like(x)
            return (lambda: (T.add(x, dy, out=o),)), None, 3 * m * n * SIZE[
                dt], "bytes floor: 3*M*N elements, no reduction"
        if "torch add x+dy" in impls:
            attempt("torch add x+dy", make_add)

        for o in self._close:
            o.close()
        self._close = []

    def run_fwd_shape(self, op, dt, m, n, impls=IMPLS):
        """The forward (y plus the f32 statistics) against the peers'
        forwards: ours, torch eager (aten.native_layer_norm /
        aten._fused_rms_norm), torch.compile (the explicit formulas),
        Liger-Kernel's layer_norm_forward / rms_norm_forward ('llama'
        casting, as its module runs it) and the copy x -> y as the bytes
        floor. The seed lesson has no forward kernel."""
        T, F = self.torch, self.torch.nn.functional
        layer = op.startswith("layer")
        tdt = self.tdt[dt]
        eps = C.EPS
        x = (T.randn(m, n, device="cuda") +
             (T.rand(m, 1, device="cuda") * 2 - 1)).to(tdt)
        w = (1 + 0.25 * T.randn(n, device="cuda")).to(tdt)
        b = (0.5 * T.randn(n, device="cuda")).to(tdt) if layer else None
        x64 = x.double()
        mean64 = x64.mean(1) if layer else None
        xc = x64 - mean64[:, None] if layer else x64
        rstd64 = T.rsqrt((xc * xc).mean(1) + eps)
        y64 = xc * rstd64[:, None] * w.double()
        if layer:
            y64 = y64 + b.double()
        refs = [y64, mean64, rstd64]
        del x64, xc
        bytes_ = min_bytes_fwd(op, m, n, dt)
        flat = lambda t: None if t is None else t.reshape(m)  # noqa

        def row_for(impl):
            return self.new_row(op, dt, m, n, impl, bytes_)

        def attempt(impl, make):
            self.attempt(row_for(impl), make)

        out("%s %s M=%d N=%d: min bytes %.1f MB, floor %.1f us at the copy "
            "bandwidth" % (op, dt, m, n, bytes_ / 1e6,
                           bytes_ / (self.copy_gbs * 1e3)))

        def make_ours():
            if self.rt is None:
                raise RuntimeError("libnormrt.so not found")
            cfg = C.Cfg(op, n, dt)
            e = self.index["configs"].get(cfg.name)
            if e is None:
                raise RuntimeError("configuration %s not compiled" % cfg.name)
            ins = {"x": x, "weight": w}
            if layer:
                ins["bias"] = b
            o = Ours(self.rt, self.args.gpu_dir, e, ins, self.args.image)
            self._close.append(o)
            return o.run, refs, bytes_, os.path.splitext(o.image)[1][1:]
        if "ours deterministic" in impls:
            attempt("ours deterministic", make_ours)

        def make_eager():
            if layer:
                fn = lambda: tuple(flat(t) if i else t for i, t in enumerate(  # noqa
                    T.ops.aten.native_layer_norm(x, [n], w, b, eps)))
                return fn, refs, bytes_, "aten.native_layer_norm"
            if hasattr(T.ops.aten, "_fused_rms_norm"):
                try:
                    T.ops.aten._fused_rms_norm(x, [n], w, eps)

                    def fn():
                        y, r = T.ops.aten._fused_rms_norm(x, [n], w, eps)
                        return y, None, flat(r)
                    return fn, refs, bytes_, "aten._fused_rms_norm"
                except Exception:  # noqa: BLE001
                    pass
            fn = lambda: (F.rms_norm(x, [n], w, eps), None, None)  # noqa
            return fn, refs, bytes_, "F.rms_norm (no rstd)"
        if "torch eager" in impls:
            attempt("torch eager", make_eager)

        if "torch.compile" not in impls:
            pass
        elif self.args.budget_s and time.time() - self.t0 > self.args.budget_s:
            row_for("torch.compile")["note"] = "skipped: time budget"
        else:
            def make_compile():
                T._dynamo.reset()
                if layer:
                    f = T.compile(ln_fwd_formula, dynamic=False)
                    fn = lambda: f(x, w, b, eps)  # noqa
                else:
                    f = T.compile(rms_fwd_formula, dynamic=False)

                    def fn():
                        y, r = f(x, w, eps)
                        return y, None, r
                return fn, refs, bytes_, "inductor, explicit formulas"
            attempt("torch.compile", make_compile)

        def make_liger():
            ver = _dist_version("liger-kernel")
            if layer:
                from liger_kernel.ops.layer_norm import layer_norm_forward

                def fn():
                    r = layer_norm_forward(x, w, b, eps)
                    return r[0], r[2], r[3]
                return fn, refs, bytes_, "liger-kernel %s" % ver
            from liger_kernel.ops.rms_norm import rms_norm_forward

            def fn():
                r = rms_norm_forward(x, w, eps, 0.0, "llama", False)
                return r[0], None, r[2]
            return fn, refs, bytes_, "liger-kernel %s, llama" % ver
        if "liger" in impls:
            attempt("liger", make_liger)

        def make_copy():
            o = T.empty_like(x)
            return (lambda: (o.copy_(x),)), None, 2 * m * n * SIZE[dt], (
                "bytes floor: x read, y written")
        if FWD_FLOOR in impls or "torch add x+dy" in impls:
            attempt(FWD_FLOOR, make_copy)

        for o in self._close:
            o.close()
        self._close = []

    def env(self):
        T = self.torch
        p = T.cuda.get_device_properties(0)
        e = {"device": T.cuda.get_device_name(0),
             "sms": p.multi_processor_count,
             "l2_mb": round(getattr(p, "L2_cache_size", 0) / 2**20, 1),
             "torch": T.__version__, "cuda": T.version.cuda,
             "triton": self.triton.__version__,
             "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
             "kernels_git_head": self.index.get("git_head", ""),
             "kernels_git_dirty_files": self.index.get("git_dirty", ""),
             "kernels_generated_utc": self.index.get("generated_utc", ""),
             "runtime": self.lib or ""}
        e["nvidia_smi"] = E.nvidia_smi()
        return e

    def start(self, compiled_shapes):
        """A fresh seed, and room in dynamo's cache for one compiled
        function per shape."""
        T = self.torch
        self._close = []
        T.manual_seed(int.from_bytes(os.urandom(4), "little"))
        try:
            T._dynamo.config.cache_size_limit = compiled_shapes
            if hasattr(T._dynamo.config, "recompile_limit"):
                T._dynamo.config.recompile_limit = compiled_shapes
        except Exception:  # noqa: BLE001
            pass

    def main(self):
        T = self.torch
        self.start(64)
        self.envinfo = self.env()
        out("bench: %s" % json.dumps(self.envinfo))
        self.copy_gbs, c1, c2 = self.copy_bandwidth()
        out("copy bandwidth: %.0f GB/s (1 GiB, read+write; medians %.1f / "
            "%.1f us)" % (self.copy_gbs, c1, c2))
        shapes = C.bench_shapes()
        if self.args.only:
            shapes = [s for s in shapes if self.args.only in
                      "%s-%s-%dx%d" % s]
        for op, dt, m, n in shapes:
            self.run_shape(op, dt, m, n)
            T.cuda.empty_cache()  # the shape's tensors are gone by now
            self.write(final=False)  # a timeout still leaves the files
        return self.write()

    def write(self, final=True):
        md = to_markdown(self.envinfo, self.copy_gbs, self.rows)
        os.makedirs(self.args.out, exist_ok=True)
        with open(os.path.join(self.args.out, "bench.md"), "w") as f:
            f.write(md)
        with open(os.path.join(self.args.out, "bench.json"), "w") as f:
            json.dump({"env": self.envinfo, "copy_gbs": self.copy_gbs,
                       "rows": self.rows, "complete": final}, f, indent=1,
                      default=str)
        if not final:
            return 0
        out("")
        out(md)
        errors = [r for r in self.rows if "error" in r]
        out("bench: %d rows, %d errors, %.0f s; wrote %s/bench.md, bench.json"
            % (len(self.rows), len(errors), time.time() - self.t0,
               self.args.out))
        return 1 if errors else 0


def to_markdown(env, copy_gbs, rows):
    L = []
    L.append("## Norm backward, %s (%s UTC)" % (env.get("device"),
                                                 env.get("date_utc")))
    L.append("")
    L.append("torch %s (CUDA %s), triton %s; kernels from commit %s%s; "
             "%s SMs, %s MB L2; nvidia-smi: %s." % (
                 env.get("torch"), env.get("cuda"), env.get("triton"),
                 env.get("kernels_git_head") or "?",
                 " (+%s uncommitted files)" % env["kernels_git_dirty_files"]
                 if env.get("kernels_git_dirty_files") else "",
                 env.get("sms"), env.get("l2_mb"), env.get("nvidia_smi", "?")))
    L.append("")
    L.append("Device-to-device copy (1 GiB, bytes read + written): **%.0f "
             "GB/s**. GB/s below = minimum bytes of the backward (dy, x read "
             "once, dx written once, plus weight, statistics, dw/db) / "
             "median time, the same bytes for every implementation (the "
             "x+dy row counts its own 3·M·N elements). Median of "
             "triton.testing.do_bench (L2 flushed per repetition); 'rerun' "
             "is a second, independent median. 'bitwise': two runs on the "
             "same inputs gave identical dx/dw/db. 'rel err': largest "
             "‖out − ref‖/‖ref‖ of dx/dw/db against float64." % copy_gbs)
    L.append("")
    L.append("| op | dtype | M | N | implementation | median µs | rerun µs | "
             "GB/s | % copy | bitwise | rel err | note |")
    L.append("| --- | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | "
             "--- | ---: | --- |")
    for r in rows:
        if "error" in r:
            L.append("| %s | %s | %d | %d | %s | - | - | - | - | - | - | "
                     "ERROR: %s |" % (r["op"], r["dtype"], r["M"], r["N"],
                                      r["impl"],
                                      r["error"].replace("|", "/")[:160]))
            continue
        if "us" not in r:
            L.append("| %s | %s | %d | %d | %s | - | - | - | - | - | - | "
                     "%s |" % (r["op"], r["dtype"], r["M"], r["N"],
                               r["impl"], r.get("note", "")))
            continue
        bw = r.get("bitwise")
        L.append("| %s | %s | %d | %d | %s | %.1f | %.1f | %.0f | %.1f | %s "
                 "| %s | %s |" % (
                     r["op"], r["dtype"], r["M"], r["N"], r["impl"], r["us"],
                     r["us_rerun"], r["gbs"], r["pct_copy"],
                     "-" if bw is None else ("yes" if bw else "no"),
                     "%.1e" % r["rel_err"] if "rel_err" in r else "-",
                     r.get("note", "")))
    L.append("")
    return "\n".join(L)


def summarize(path):
    """A compact table from bench.json: one line per shape, µs per
    implementation and % of copy bandwidth for ours."""
    with open(path) as f:
        d = json.load(f)
    shapes = []
    cell = {}
    for r in d["rows"]:
        k = (r["op"], r["dtype"], r["M"], r["N"])
        if k not in cell:
            shapes.append(k)
            cell[k] = {}
        if "error" in r:
            cell[k][r["impl"]] = "ERR"
        elif "us" in r:
            cell[k][r["impl"]] = "%.0f" % r["us"]
            if r["impl"] == "ours deterministic":
                cell[k]["pct"] = "%.0f%%" % r["pct_copy"]
                cell[k]["bitwise"] = "yes" if r.get("bitwise") else "NO"
                cell[k]["err"] = "%.0e" % r.get("rel_err", float("nan"))
            if r["impl"] == "torch add x+dy":
                cell[k]["addpct"] = "%.0f%%" % r["pct_copy"]
        else:
            cell[k][r["impl"]] = "-"
    short = {"ours deterministic": "det", "ours grouped_atomic": "grp",
             "torch eager": "eager", "torch.compile": "compile",
             "liger": "liger", "triton lesson": "lesson",
             "torch add x+dy": "x+dy"}
    print("copy %.0f GB/s; median us per implementation; det%%: ours "
          "deterministic as %% of copy" % d["copy_gbs"])
    print("%-16s %-4s %6s %5s | %6s %6s %6s %7s %6s %6s %6s | %5s %5s %3s %6s"
          % ("op", "dt", "M", "N", "det", "grp", "eager", "compile", "liger",
             "lesson", "x+dy", "det%", "x+dy%", "bit", "err"))
    for k in shapes:
        c = cell[k]
        print("%-16s %-4s %6d %5d | %6s %6s %6s %7s %6s %6s %6s | %5s %5s %3s "
              "%6s"
              % (k + tuple(c.get(i, "-") for i in short) +
                 (c.get("pct", "-"), c.get("addpct", "-"),
                  c.get("bitwise", "-"), c.get("err", "-"))))


def main():
    ap = argparse.ArgumentParser(description="norm backward bandwidth "
                                 "benchmark")
    ap.add_argument("--summarize", metavar="BENCH_JSON", default="",
                    help="print a compact table from a bench.json and exit")
    ap.add_argument("--out", default=os.environ.get("OUT") or os.path.join(
        C.default_gpu_dir(), "out"))
    ap.add_argument("--gpu-dir", default=C.default_gpu_dir())
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--budget-s", type=float, default=0,
                    help="after this many seconds, skip torch.compile rows "
                    "(compiling is the slow part)")
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--no-triton", action="store_true")
    ap.add_argument("--only", default="",
                    help="substring of 'op-dtype-MxN' to run")
    ap.add_argument("--warmup", type=int, default=25, help="ms (do_bench)")
    ap.add_argument("--rep", type=int, default=60, help="ms (do_bench)")
    ap.add_argument("--image", choices=("auto", "cubin", "ptx"),
                    default="auto", help="kernel image to load (auto: the "
                    "cubin when prepared, else/on failure the PTX)")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    if args.summarize:
        summarize(args.summarize)
        return 0
    args.gpu_dir = os.path.abspath(args.gpu_dir)
    try:
        index = C.load_index(args.gpu_dir)
    except OSError as ex:
        out("bench: cannot read %s/configs.json (%s): run "
            "scripts/gpu-prepare.sh and carry .dev/gpu" % (args.gpu_dir, ex))
        if args.dry_run:
            return 2
        index = {"configs": {}}
    if args.dry_run:
        return dry_run(args, index)
    try:
        import importlib
        for mod in ("torch", "triton"):
            importlib.import_module(mod)
    except ImportError as ex:
        out("bench: cannot import torch/triton (%s); --dry-run needs "
            "neither" % ex)
        return 2
    return Bench(args, index).main()


if __name__ == "__main__":
    sys.exit(main())
