#!/usr/bin/env python3
"""NaN and Inf in one row of the backward's inputs, against PyTorch.

For LayerNorm and RMSNorm backward, bf16 and f32, the deterministic and the
atomic strategy, N in {24, 4096, 65536, 4095} (bench/configs.py NAN_*):
clean random inputs (never zero; mean/rstd the float64 statistics of the
clean x, stored as f32 like a forward saves them), then ONE injection per
scenario: NaN, +Inf or -Inf into one element x[r, c], or dy[r, c], or the
saved rstd[r], or (LayerNorm) mean[r]. Each scenario runs

  * ours: libnormrt, outputs poisoned with a finite sentinel (-1.5 * 2^100)
    before the first launch, so "the kernel did not write" (sentinel left)
    is told apart from "the kernel wrote NaN"; a second launch with NaN
    poison must give the same classes (bitwise the same for deterministic);
  * the reference: the explicit formulas in float64 from the same (injected)
    inputs, so its NaN/Inf pattern is the mathematically defined one:
      xhat = (x - mean) * rstd  (RMSNorm: x * rstd),  g = dy * w
      dx = rstd * (g - mean_j(g) - xhat * mean_j(g * xhat))  (RMSNorm
           without mean_j(g)),  dweight = sum_i dy * xhat,  dbias = sum_i dy
  * torch's own kernel: aten.native_layer_norm_backward /
    aten._fused_rms_norm_backward on the same tensors.

and compares per element of dx and per column of dweight/dbias the classes
NaN / +Inf / -Inf / finite (exactly), and the finite values where both are
finite (gpu_check's bounds: dx 1e-5 f32, 1.5 * 2^-8 bf16, against
max(||ref||, ||rstd * g||); dw/db gpu_check.reduce_bound).

A scenario PASSes when ours matches the float64 reference (classes and
finite values); "PASS~torch" when it differs from the float64 formula's
classes but matches torch's kernel exactly (both are reported); FAIL
otherwise, or when an output element was not written, or the two launches
disagree. torch-vs-float64 differences are reported in their own column
(torch's kernels use other, algebraically equal formulas, e.g.
rstd^2 * sum(g * (x - mean)) instead of xhat * mean(g * xhat), which
differ once rstd or mean is infinite).

Which outputs a NaN in one input element reaches (the float64 reference
shows it, and the table prints it per scenario): x[r, c] or dy[r, c] -> the
whole row r of dx (through the row sums mean_j), but only column c of
dweight (dbias: only through dy); rstd[r] or mean[r] -> row r of dx and
every column of dweight (each column's sum has a term of row r); dbias
never depends on x, mean or rstd.

  python3 bench/nan_check.py            on the GPU machine (.dev/gpu carried)
  python3 bench/nan_check.py --dry-run  no GPU, no torch: the scenario list
                                        and whether every configuration is
                                        compiled

Exit status: 0 all passed, 1 a failure, 2 setup error.
"""

import argparse
import collections
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import configs as C  # noqa: E402
import gpu_env as E  # noqa: E402

SENTINEL = -1.5 * 2.0 ** 100  # exact in bf16, f16 and f32
CLASS_NAMES = ("finite", "nan", "+inf", "-inf")
VALUES = (("nan", float("nan")), ("+inf", float("inf")),
          ("-inf", float("-inf")))
ROW_BOUND = {"f32": 1e-5, "f16": 1.5 * 2.0 ** -11, "bf16": 1.5 * 2.0 ** -8}


def out(*a):
    print(*a, flush=True)


def targets(cfg):
    t = ["x", "dy", "rstd"]
    if cfg.layer:
        t.append("mean")
    return t


def scenarios():
    """(cfg, M, target, value name, value) in run order."""
    s = []
    for cfg in C.nan_cfgs():
        m = dict(C.NAN_ROWS)[cfg.n]
        for tgt in targets(cfg):
            for vname, v in VALUES:
                s.append((cfg, m, tgt, vname, v))
    return s


def reduce_bound(cfg, m):
    """gpu_check.reduce_bound (kept equal; gpu_check is not imported so that
    this file runs on its own)."""
    b = 1e-5 if cfg.dtype == "f32" else 1e-3
    if cfg.weight_dtype != "f32":
        b = max(b, 1.5 * {"f16": 2.0 ** -11, "bf16": 2.0 ** -8}[
            cfg.weight_dtype])
    return max(b, 4 * 2.0 ** -24 * math.sqrt(m))


# ---------------------------------------------------------------- torch part

class Checker:
    def __init__(self, torch, rt, gpu_dir, index, seed, image):
        self.T, self.rt, self.gpu_dir, self.index = torch, rt, gpu_dir, index
        self.image = image
        self.gen = torch.Generator(device="cuda")
        self.gen.manual_seed(seed)
        T = torch
        self.tdt = {"f32": T.float32, "f16": T.float16, "bf16": T.bfloat16}
        self.ibits = {T.float32: T.int32, T.float16: T.int16,
                      T.bfloat16: T.int16}
        self.stream = T.cuda.current_stream().cuda_stream
        self.has_fused_rms = hasattr(T.ops.aten, "_fused_rms_norm_backward")

    def randn(self, *shape):
        return self.T.randn(*shape, device="cuda", dtype=self.T.float32,
                            generator=self.gen)

    def rand(self, *shape):
        return self.T.rand(*shape, device="cuda", dtype=self.T.float32,
                           generator=self.gen)

    # -- classes
    def classes(self, t):
        """int8 per element: 0 finite, 1 NaN, 2 +Inf, 3 -Inf."""
        T = self.T
        t = t.double()
        c = T.zeros(t.shape, dtype=T.int8, device=t.device)
        c[T.isnan(t)] = 1
        c[t == math.inf] = 2
        c[t == -math.inf] = 3
        return c

    def class_diff(self, a, b, an, bn):
        """'' when the class tensors agree, else a description."""
        T = self.T
        bad = a != b
        n = int(bad.sum())
        if n == 0:
            return ""
        pairs = (a[bad].to(T.int32) * 4 + b[bad].to(T.int32))
        vals, counts = T.unique(pairs, return_counts=True)
        parts = ["%s %s/%s %s: %d" % (an, CLASS_NAMES[int(v) // 4], bn,
                                      CLASS_NAMES[int(v) % 4], int(k))
                 for v, k in zip(vals.tolist(), counts.tolist())]
        where = ""
        if a.dim() == 2:
            rows = T.nonzero(bad.any(1)).flatten().tolist()
            where = " rows %s%s" % (rows[:4], "..." if len(rows) > 4 else "")
        else:
            cols = T.nonzero(bad).flatten().tolist()
            where = " cols %s%s" % (cols[:4], "..." if len(cols) > 4 else "")
        return "%d differ (%s)%s" % (n, ", ".join(parts), where)

    def pattern(self, c, r, col):
        """A short description of a class tensor's non-finite elements."""
        T = self.T
        nf = c != 0
        if not bool(nf.any()):
            return "all finite"
        vals, counts = T.unique(c[nf].to(T.int32), return_counts=True)
        kinds = ", ".join("%d %s" % (k, CLASS_NAMES[int(v)]) for v, k in
                         zip(vals.tolist(), counts.tolist()))
        if c.dim() == 2:
            rows = T.nonzero(nf.any(1)).flatten().tolist()
            where = ("row r" if rows == [r] else "rows %s" % rows[:4])
        else:
            cols = T.nonzero(nf).flatten().tolist()
            where = ("col c" if cols == [col] else
                     "every col" if len(cols) == c.numel() else
                     "cols %s" % cols[:4])
        return "%s in %s" % (kinds, where)

    def finite_err(self, got, ref, scale=0.0):
        """||got - ref|| / max(||ref||, scale) over the elements both have
        finite (float64)."""
        T = self.T
        g, r = got.double(), ref.double()
        mask = T.isfinite(g) & T.isfinite(r)
        if not bool(mask.any()):
            return 0.0
        d = float(T.linalg.vector_norm((g - r)[mask]))
        den = max(float(T.linalg.vector_norm(r[mask])), scale)
        if den == 0.0:
            return 0.0 if d == 0.0 else math.inf
        return d / den

    # -- one configuration
    def inputs(self, cfg, m):
        T, n = self.T, cfg.n
        x = (self.randn(m, n) + (self.rand(m, 1) * 2 - 1)).to(
            self.tdt[cfg.dtype])
        dy = self.randn(m, n).to(self.tdt[cfg.dtype])
        w = (1 + 0.25 * self.randn(n)).to(self.tdt[cfg.weight_dtype])
        x64 = x.double()
        if cfg.layer:
            mu = x64.mean(1)
            var = ((x64 - mu[:, None]) ** 2).mean(1)
            mean = mu.float()
        else:
            var = (x64 ** 2).mean(1)
            mean = None
        rstd = (1.0 / T.sqrt(var + C.EPS)).float()
        return {"x": x, "dy": dy, "weight": w, "mean": mean, "rstd": rstd}

    def reference(self, cfg, t):
        T = self.T
        x, dy = t["x"].double(), t["dy"].double()
        w = t["weight"].double()
        r = t["rstd"].double()[:, None]
        xhat = (x - t["mean"].double()[:, None]) * r if cfg.layer else x * r
        g = dy * w
        c2 = (g * xhat).mean(1, keepdim=True)
        if cfg.layer:
            dx = r * (g - g.mean(1, keepdim=True) - xhat * c2)
        else:
            dx = r * (g - xhat * c2)
        res = {"dx": dx, "dweight": (dy * xhat).sum(0)}
        if cfg.layer:
            res["dbias"] = dy.sum(0)
        # The scale gpu_check measures dx against, over the finite rows.
        rg = (r * g)
        res["_dx_scale"] = float(T.linalg.vector_norm(rg[T.isfinite(rg)]))
        return res

    def torch_backward(self, cfg, t):
        """(outputs, name) of torch's own kernel, or (None, why)."""
        T, m, n = self.T, t["x"].shape[0], cfg.n
        try:
            if cfg.layer:
                b = T.zeros(n, device="cuda", dtype=t["weight"].dtype)
                dx, dw, db = T.ops.aten.native_layer_norm_backward(
                    t["dy"], t["x"], [n], t["mean"].view(m, 1),
                    t["rstd"].view(m, 1), t["weight"], b, [True, True, True])
                T.cuda.synchronize()
                return {"dx": dx, "dweight": dw, "dbias": db}, \
                    "aten.native_layer_norm_backward"
            if not self.has_fused_rms:
                return None, "torch has no aten._fused_rms_norm_backward"
            dx, dw = T.ops.aten._fused_rms_norm_backward(
                t["dy"], t["x"], [n], t["rstd"].view(m, 1), t["weight"],
                [True, True])
            T.cuda.synchronize()
            return {"dx": dx, "dweight": dw}, "aten._fused_rms_norm_backward"
        except Exception as ex:  # noqa: BLE001
            try:
                T.cuda.synchronize()
            except Exception:  # noqa: BLE001
                raise
            return None, "%s: %s" % (type(ex).__name__,
                                     " ".join(str(ex).split())[:160])

    def run_ours(self, mod, manifest, cfg, t, ws, ws_bytes, poison):
        T, m, n = self.T, t["x"].shape[0], cfg.n
        outs = {"dx": T.empty(m, n, device="cuda",
                              dtype=self.tdt[cfg.dtype])}
        if cfg.has_weight:
            outs["dweight"] = T.empty(n, device="cuda",
                                      dtype=self.tdt[cfg.weight_dtype])
        if cfg.has_bias:
            outs["dbias"] = T.empty(n, device="cuda",
                                    dtype=self.tdt[cfg.weight_dtype])
        for v in outs.values():
            v.fill_(poison)
        allt = dict(t)
        allt.update(outs)
        tensors = [E.torch_tensor(a["name"], allt[a["name"]])
                   for a in manifest["arguments"]]
        T.cuda.synchronize()
        rc, _, msg = E.status(mod.launch, tensors,
                              ws.data_ptr() if ws is not None else 0,
                              ws_bytes, self.stream)
        if rc:
            raise RuntimeError("normrt_launch -> %d (%s): %s" % (
                rc, E.ERROR_NAMES.get(rc, "?"), msg))
        T.cuda.synchronize()  # raises on an asynchronous CUDA error
        return outs

    def unwritten(self, o):
        """Elements still holding the sentinel."""
        T = self.T
        s = T.full((1,), SENTINEL, device="cuda", dtype=o.dtype)
        bt = self.ibits[o.dtype]
        return int((o.contiguous().view(bt) == s.view(bt)).sum())

    def same_bits(self, a, b):
        bt = self.ibits[a.dtype]
        return bool(self.T.equal(a.contiguous().view(bt),
                                 b.contiguous().view(bt)))

    def run_config(self, cfg, m, scen, results, deadline):
        T = self.T
        e = self.index["configs"].get(cfg.name)
        if e is None:
            for s in scen:
                results.append(row(s, "FAIL", "configuration not compiled"))
            return
        import json
        with open(os.path.join(self.gpu_dir, e["manifest"])) as f:
            manifest = json.load(f)
        rc, mod, msg, _, _ = E.load_config(self.rt, self.gpu_dir, e,
                                           self.image)
        if rc:
            for s in scen:
                results.append(row(s, "FAIL", "module load: %s" % msg))
            return
        try:
            rc, ws_bytes, msg = E.status(mod.workspace_bytes, m)
            if rc:
                raise RuntimeError("normrt_workspace_bytes: " + msg)
            ws = None
            if ws_bytes:
                ws = T.empty(ws_bytes, device="cuda", dtype=T.uint8)
                ws.fill_(0xFF)  # NaN as f32: the kernels initialise it
            clean = self.inputs(cfg, m)
            r, c = m // 2, (2 * cfg.n) // 3
            for s in scen:
                if deadline and time.time() > deadline:
                    results.append(row(s, "SKIP", "deadline passed"))
                    continue
                results.append(self.scenario(cfg, m, s, clean, r, c, mod,
                                             manifest, ws, ws_bytes))
                out(fmt_row(results[-1]))
        finally:
            mod.close()

    def scenario(self, cfg, m, s, clean, r, c, mod, manifest, ws, ws_bytes):
        _, _, tgt, vname, v = s
        t = {k: (val.clone() if val is not None else None)
             for k, val in clean.items()}
        if tgt in ("x", "dy"):
            t[tgt][r, c] = v
        else:
            t[tgt][r] = v
        if not cfg.layer:
            t.pop("mean")
        ref = self.reference(cfg, t)
        tor, tname = self.torch_backward(cfg, t)
        probs = []
        o1 = self.run_ours(mod, manifest, cfg, t, ws, ws_bytes, SENTINEL)
        o2 = self.run_ours(mod, manifest, cfg, t, ws, ws_bytes,
                           float("nan"))
        keys = [k for k in ("dx", "dweight", "dbias") if k in o1]
        for k in keys:
            nu = self.unwritten(o1[k])
            if nu:
                probs.append("%s: %d elements not written (sentinel left)"
                             % (k, nu))
            c1, c2 = self.classes(o1[k]), self.classes(o2[k])
            d = self.class_diff(c1, c2, "launch1", "launch2")
            if d:
                probs.append("%s: the two launches differ: %s" % (k, d))
            elif cfg.strat == "deterministic" and not self.same_bits(
                    o1[k], o2[k]):
                probs.append("%s: deterministic launches differ bitwise" % k)
        vs_ref, vs_torch, torch_ref, errs, pats = {}, {}, {}, {}, {}
        for k in keys:
            co, cr = self.classes(o1[k]), self.classes(ref[k])
            pats[k] = self.pattern(cr, r, c)
            vs_ref[k] = self.class_diff(co, cr, "ours", "f64")
            if tor is not None:
                ct = self.classes(tor[k])
                vs_torch[k] = self.class_diff(co, ct, "ours", "torch")
                torch_ref[k] = self.class_diff(ct, cr, "torch", "f64")
            if k == "dx":
                errs[k] = (self.finite_err(o1[k], ref[k], ref["_dx_scale"]),
                           ROW_BOUND[cfg.dtype])
            else:
                errs[k] = (self.finite_err(o1[k], ref[k]),
                           reduce_bound(cfg, m))
            if not errs[k][0] <= errs[k][1]:
                probs.append("%s: finite values error %.3g > %.3g" % (
                    k, errs[k][0], errs[k][1]))
        ref_ok = not any(vs_ref.values())
        torch_ok = tor is not None and not any(vs_torch.values())
        if probs:
            status = "FAIL"
        elif ref_ok:
            status = "PASS"
        elif torch_ok:
            status = "PASS~torch"
        else:
            status = "FAIL"
            probs.append("classes differ from the float64 reference%s" % (
                " and from torch" if tor is not None else
                " (torch not available: %s)" % tname))
        return {
            "cfg": cfg, "m": m, "target": tgt, "value": vname,
            "status": status, "probs": probs, "pattern": pats,
            "vs_ref": vs_ref, "vs_torch": vs_torch if tor is not None
            else None, "torch_ref": torch_ref if tor is not None else None,
            "torch": tname, "errs": errs, "keys": keys,
        }


def row(s, status, why):
    cfg, m, tgt, vname, _ = s
    return {"cfg": cfg, "m": m, "target": tgt, "value": vname,
            "status": status, "probs": [why], "pattern": {}, "vs_ref": {},
            "vs_torch": None, "torch_ref": None, "torch": "", "errs": {},
            "keys": []}


def short_pattern(p):
    """A pattern without its counts: '1 nan, 3 +inf in row r' -> 'nan,+inf
    in row r'."""
    if " in " not in p:
        return p
    kinds, where = p.split(" in ", 1)
    return "%s in %s" % (",".join(k.split(" ", 1)[1] for k in
                                   kinds.split(", ") if " " in k), where)


def cmp_cell(d, keys):
    """'=' per output (dx/dw/db) when the classes agree, else 'x'."""
    if d is None:
        return "n/a"
    return "/".join("=" if not d.get(k) else "x" for k in keys) or "-"


def fmt_row(res):
    cfg = res["cfg"]
    keys = res["keys"]
    name = "%s %s %s N=%d M=%d %s=%s" % (cfg.op, cfg.dtype, cfg.strat,
                                         cfg.n, res["m"], res["target"],
                                         res["value"])
    line = "%-10s %-62s ours=f64 %s ours=torch %s torch=f64 %s" % (
        res["status"], name, cmp_cell(res["vs_ref"], keys),
        cmp_cell(res["vs_torch"], keys), cmp_cell(res["torch_ref"], keys))
    if res["errs"]:
        line += " err " + " ".join("%s %.1e" % (k, e[0])
                                   for k, e in res["errs"].items())
    details = list(res["probs"])
    for label, d in (("ours vs f64", res["vs_ref"]),
                     ("ours vs torch", res["vs_torch"]),
                     ("torch vs f64", res["torch_ref"])):
        if d:
            details += ["%s %s: %s" % (label, k, v) for k, v in d.items()
                        if v]
    if details:
        line += "\n           " + "\n           ".join(details)
    return line


def report(results, seed, elapsed, torch_names):
    out("")
    out("Reference patterns (float64 explicit formulas; r = row M/2, "
        "c = column 2N/3; one configuration per op shown, the same in all):")
    seen = set()
    for res in results:
        cfg = res["cfg"]
        key = (cfg.op, res["target"], res["value"])
        if key in seen or not res["pattern"]:
            continue
        seen.add(key)
        out("  %-16s %4s=%-4s  %s" % (cfg.op, res["target"], res["value"],
                                      " | ".join("%s: %s" % kv for kv in
                                                 res["pattern"].items())))
    out("")
    out("torch kernels compared: %s" % (", ".join(sorted(torch_names))
                                        or "none"))
    out("")
    out("| op | dtype | strategy | N | inject | ours = f64 (dx/dw/db) | "
        "ours = torch | torch = f64 | status |")
    out("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    # One table row per (op, dtype, strategy, N, target): the three values.
    grouped = collections.OrderedDict()
    for res in results:
        cfg = res["cfg"]
        grouped.setdefault((cfg.op, cfg.dtype, cfg.strat, cfg.n,
                            res["target"]), []).append(res)
    for (op, dt, st, n, tgt), rs in grouped.items():
        def cell(field):
            return " ".join("%s:%s" % (r["value"], cmp_cell(r[field],
                                                             r["keys"]))
                            for r in rs)
        sts = collections.Counter(r["status"] for r in rs)
        out("| %s | %s | %s | %d | %s | %s | %s | %s | %s |" % (
            op, dt, st, n, tgt, cell("vs_ref"), cell("vs_torch"),
            cell("torch_ref"), ", ".join("%d %s" % (v, k) for k, v in
                                         sorted(sts.items()))))
    diffs = [r for r in results if r["torch_ref"] and
             any(r["torch_ref"].values())]
    if diffs:
        out("")
        out("torch's kernel vs the float64 formula (%d scenarios differ):"
            % len(diffs))
        for r in diffs[:40]:
            cfg = r["cfg"]
            for k, v in r["torch_ref"].items():
                if v:
                    out("  %s %s %s N=%d %s=%s %s: %s" % (
                        cfg.op, cfg.dtype, cfg.strat, cfg.n, r["target"],
                        r["value"], k, v))
    # The compact table (gpu-run.sh copies it into summary.txt).
    out("")
    out("nan_check summary: per op, injected input and value, over its %d "
        "configurations (%s x %s x N %s): how many match" % (
            len(C.NAN_DTYPES) * len(C.NAN_STRATEGIES) * len(C.NAN_ROWS),
            "/".join(C.NAN_DTYPES), "/".join(C.NAN_STRATEGIES),
            "/".join(str(n) for n, _ in C.NAN_ROWS)))
    out("| op | inject | ours = f64 | ours = torch | torch = f64 | status "
        "| f64 pattern (first configuration): dx; dweight; dbias |")
    out("| --- | --- | --- | --- | --- | --- | --- |")
    comp = collections.OrderedDict()
    for res in results:
        comp.setdefault((res["cfg"].op, res["target"], res["value"]),
                        []).append(res)

    def agree(rs, field):
        have = [r for r in rs if r[field] is not None and r["keys"]]
        if not have:
            return "n/a"
        return "%d/%d" % (sum(1 for r in have if not any(
            r[field].values())), len(have))
    for (op, tgt, val), rs in comp.items():
        sts = collections.Counter(r["status"] for r in rs)
        pat = next((r["pattern"] for r in rs if r["pattern"]), {})
        out("| %s | %s=%s | %s | %s | %s | %s | %s |" % (
            op, tgt, val, agree(rs, "vs_ref"), agree(rs, "vs_torch"),
            agree(rs, "torch_ref"), ", ".join(
                "%d %s" % (v, k) for k, v in sorted(sts.items())),
            "; ".join(short_pattern(p) for p in pat.values())))
    out("")
    fails = [r for r in results if r["status"] == "FAIL"]
    if fails:
        out("")
        out("failures (%d):" % len(fails))
        for r in fails[:40]:
            out("  " + fmt_row(r).replace("\n", "\n  "))
    tot = collections.Counter(r["status"] for r in results)
    out("nan_check: seed %d, %.0f s; %d PASS (= float64 reference), %d "
        "PASS~torch (= torch's kernel only), %d FAIL, %d SKIP" % (
            seed, elapsed, tot["PASS"], tot["PASS~torch"], tot["FAIL"],
            tot["SKIP"]))
    out("%d passed, %d failed, %d skipped" % (
        tot["PASS"] + tot["PASS~torch"], tot["FAIL"], tot["SKIP"]))


def dry_run(args, index):
    sc = scenarios()
    cfgs = C.nan_cfgs()
    missing = [c.name for c in cfgs if c.name not in index["configs"]]
    out("nan_check: %d scenarios over %d configurations (%s)" % (
        len(sc), len(cfgs), ", ".join("N=%d M=%d" % nm for nm in
                                      C.NAN_ROWS)))
    for name in missing:
        out("NOT COMPILED %s" % name)
    out("nan_check dry run: %d configurations not compiled" % len(missing))
    return 1 if missing else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpu-dir", default=C.default_gpu_dir())
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--deadline", type=float, default=0,
                    help="epoch seconds: run no scenario after it")
    ap.add_argument("--image", choices=("auto", "cubin", "ptx"),
                    default="auto")
    args = ap.parse_args()
    args.gpu_dir = os.path.abspath(args.gpu_dir)
    try:
        index = C.load_index(args.gpu_dir)
    except OSError as ex:
        out("nan_check: cannot read %s/configs.json (%s)" % (args.gpu_dir, ex))
        return 2
    if args.dry_run:
        return dry_run(args, index)
    started = E.start_on_gpu(args.gpu_dir, "nan_check", out, args.seed)
    if not started:
        return 2
    torch, rt, seed = started
    ck = Checker(torch, rt, args.gpu_dir, index, seed, args.image)
    sc = scenarios()
    out("nan_check: %d scenarios, seed %d, %s, torch %s" % (
        len(sc), seed, torch.cuda.get_device_name(), torch.__version__))
    t0 = time.time()
    results = []
    by = collections.OrderedDict()
    for s in sc:
        by.setdefault((s[0].name, s[1]), []).append(s)
    for (_, m), ss in by.items():
        try:
            ck.run_config(ss[0][0], m, ss, results, args.deadline)
        except Exception as ex:  # noqa: BLE001 (CUDA errors surface here)
            done = {(r["cfg"].name, r["target"], r["value"]) for r in results}
            why = "%s: %s" % (type(ex).__name__, " ".join(str(ex).split()))
            for s in ss:
                if (s[0].name, s[2], s[3]) not in done:
                    results.append(row(s, "FAIL", why))
            out("FAIL %s: %s" % (ss[0][0].name, why))
            try:
                torch.cuda.synchronize()
            except Exception:  # noqa: BLE001
                out("nan_check: CUDA context lost; stopping")
                break
    torch_names = {r["torch"] for r in results
                   if r["torch"].startswith("aten.")}
    report(results, seed, time.time() - t0, torch_names)
    return 1 if any(r["status"] == "FAIL" for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
