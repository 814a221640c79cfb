#!/usr/bin/env python3
"""Correctness of the compiled norm kernels on the GPU, through libnormrt.

Runs every case of bench/configs.py (LayerNorm/RMSNorm backward and
forward; f32/f16/bf16; every dw/db strategy; M=1, N=1, N=24 with
M=401408, N=4095, N=65536; strided and offset rows; dresidual; bf16 x with
f32 weight; zero-centred weight; no weight / no bias; dx written over dy)
against a float64 reference computed with torch on the GPU.

Per case: fresh random inputs (never zeros; the seed is printed), input
padding and outputs poisoned with NaN before each launch, the runtime's
return code checked (normrt_last_error printed), torch.cuda.synchronize()
after each launch, inputs and padding checked unchanged afterwards. Every
case launches twice with the same workspace (allocated once per
configuration, poisoned with 0xFF bytes, never cleared by us): both results
are checked, and `deterministic` must give bitwise identical dx/dw/db.

Bounds (relative error ||out - ref|| / ||ref||):
  f32 outputs 1e-5; f16/bf16 rows (dx, y, xhat) 1.5 * unit roundoff
  (2^-11, 2^-8); dw/db 1e-3 for f16/bf16 activations, 1e-5 for f32, raised
  to 1.5 * the unit roundoff of a narrow weight dtype and to
  4 * 2^-24 * sqrt(M) (f32 summation of M random-sign terms). dx is
  measured against max(||ref||, ||rstd * g|| + ||dresidual||), y against
  max(||ref||, ||xhat * w|| + ||b||) and dw/db against max(||ref||,
  ||sum over rows of |term||| / sqrt(M)), so a cancellation that the math
  itself makes ill-conditioned (RMSNorm with N=1; a column sum that is
  small by chance under an atomic order) does not count as error.
  NaN/Inf never passes.

Then the error path: wrong dtype, shape, rows, stride, rank, a null
pointer, a missing tensor, a small or misaligned workspace must each return
a non-zero code with a message naming the argument, and launch nothing.

  python3 bench/gpu_check.py               all cases
  python3 bench/gpu_check.py --quick       a subset
  python3 bench/gpu_check.py --sanitizer-subset   16 small cases
  python3 bench/gpu_check.py --sanitizer full --tool memcheck|initcheck
                                           every case and the error path,
                                           for compute-sanitizer (spread
                                           order, coverage line at the end)
  python3 bench/gpu_check.py --sanitizer rows --tool racecheck
                                           one case per configuration, rows
                                           from the kernels' geometry
                                           (configs.rows_for_racecheck)
  --tool racecheck launches each case once; --tool initcheck gives each
  launch a fresh, never written workspace; --deadline EPOCH starts no
  configuration after it (the rest reported skipped).
  python3 bench/gpu_check.py --dry-run     no GPU, no torch: check the
                                           manifests, and every case's
                                           tensors and the error path through
                                           normrt_validate (stand-in pointers)

Exit status: 0 all passed, 1 a failure, 2 setup error (no kernels, no
runtime library, no GPU).
"""

import argparse
import collections
import math
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import configs as C  # noqa: E402
import gpu_env as E  # noqa: E402

UNIT = {"f32": 2.0 ** -24, "f16": 2.0 ** -11, "bf16": 2.0 ** -8}


def out(*a):
    print(*a, flush=True)


# ------------------------------------------------------------ the manifest

def manifest_problems(cfg, manifest):
    """Differences between what the checks expect and the manifest; also
    outputs no kernel writes and dangling parameter references."""
    probs = []
    if manifest.get("format_version") != E.FORMAT_VERSION:
        probs.append("format_version %s, but the runtime reads %d (compile "
                     "the kernels again)" % (manifest.get("format_version"),
                                             E.FORMAT_VERSION))
    exp = cfg.expected_args()
    got = manifest.get("arguments", [])
    if [a[0] for a in exp] != [a.get("name") for a in got]:
        probs.append("arguments %s, expected %s" % (
            [a.get("name") for a in got], [a[0] for a in exp]))
    else:
        for (name, role, dt, shape), a in zip(exp, got):
            if a.get("role") != role or a.get("dtype") != dt or \
                    list(a.get("shape", [])) != list(shape):
                probs.append("argument '%s' is %s %s %s, expected %s %s %s" % (
                    name, a.get("role"), a.get("dtype"), a.get("shape"),
                    role, dt, shape))
            # The checks name each argument by its kind.
            if a.get("kind") != name:
                probs.append("argument '%s' has kind %r, expected %r" % (
                    name, a.get("kind"), name))
    nws = len(manifest.get("workspaces", []))
    used = set()
    for k in manifest.get("kernels", []):
        for p in k.get("params", []):
            if "argument" in p:
                if not 0 <= p["argument"] < len(got):
                    probs.append("kernel %s: parameter argument %s out of "
                                 "range" % (k.get("name"), p["argument"]))
                used.add(p["argument"])
            elif "workspace" in p:
                if not 0 <= p["workspace"] < nws:
                    probs.append("kernel %s: workspace %s out of range" % (
                        k.get("name"), p["workspace"]))
            else:
                probs.append("kernel %s: unsupported parameter %s" % (
                    k.get("name"), p))
    for i, a in enumerate(got):
        if i not in used:
            probs.append("%s '%s' is not a parameter of any kernel%s" % (
                a.get("role"), a.get("name"),
                " (never written)" if a.get("role") == "output" else ""))
    return probs


def load_manifest(gpu_dir, entry):
    import json
    with open(os.path.join(gpu_dir, entry["manifest"])) as f:
        return json.load(f)


# ----------------------------------------------------------------- dry run

ESIZE = {"f32": 4, "f16": 2, "bf16": 2}
FAKE_WS = 0x7e0000000000  # a 256-byte aligned stand-in address


class FakeMemory:
    """Stand-in device addresses for normrt_validate (nothing is read)."""

    def __init__(self):
        self.next = 0x7f0000000000

    def alloc(self, nbytes):
        p = self.next
        self.next += (nbytes + 511) // 256 * 256 + 256
        return p


def fake_tensors(case):
    """NormrtTensors with the layouts build_case makes on the GPU."""
    cfg, m, n, lay = case.cfg, case.m, case.cfg.n, case.layout
    mem, descs = FakeMemory(), {}
    for name, role, dt, shape in cfg.expected_args(m):
        es, code = ESIZE[dt], E.DTYPE_CODES[dt]
        if name == "dx" and case.inplace:
            continue
        if len(shape) == 2:
            width = {"contig": n, "strided": n + 8, "offset": n + 5}[lay]
            base = mem.alloc(m * width * es)
            ptr = base + (es if lay == "offset" else 0)
            descs[name] = (ptr, code, [m, n], [width, 1])
        else:
            ext = shape[0]
            base = mem.alloc((ext + 1) * es)
            ptr = base + (es if lay == "offset" else 0)
            descs[name] = (ptr, code, [ext], [1])
    if case.inplace:
        descs["dx"] = descs["dy"]
    return [E.make_tensor(name, *descs[name])
            for name, _, _, _ in cfg.expected_args(m)]


def refusal_problems(rc, msg, name):
    """What is wrong with a refusal of a bad argument `name`: it must not
    return 0 and its message must name the argument."""
    probs = []
    if rc == 0:
        probs.append("returned 0")
    if not re.search(r"(?<![A-Za-z0-9_])%s(?![A-Za-z0-9_])"
                     % re.escape(name), msg):
        probs.append("message does not name '%s'" % name)
    return probs

def offline_error_checks(mod, cfg):
    """The error-path checks of error_path_checks, on stand-in pointers."""
    m, n = 64, cfg.n
    good = {t.name.decode(): t for t in fake_tensors(C.Case(cfg, m))}
    order = [a[0] for a in cfg.expected_args(m)]
    wsb = mod.workspace_bytes(m)
    xd, wd = E.DTYPE_CODES[cfg.dtype], E.DTYPE_CODES[cfg.weight_dtype]
    P = 0x7d0000000000
    mk = E.make_tensor
    checks = [
        ("wrong dtype", "x", {"x": mk("x", P, E.F16, [m, n], [n, 1])},
         None),
        ("wrong shape", "weight", {"weight": mk("weight", P, wd, [n - 1],
                                                [1])}, None),
        ("wrong rows", "mean", {"mean": mk("mean", P, E.F32, [m - 1],
                                           [1])}, None),
        ("inner stride 2", "dx", {"dx": mk("dx", P, xd, [m, n],
                                           [2 * n, 2])}, None),
        ("wrong rank", "dweight", {"dweight": mk("dweight", P, wd, [1, n],
                                                 [n, 1])}, None),
        ("null pointer", "dy", {"dy": mk("dy", 0, xd, [m, n], [n, 1])},
         None),
        ("missing tensor", "rstd", {"rstd": None}, None),
        ("workspace too small", "workspace", {}, (FAKE_WS, wsb - 16)),
        ("workspace NULL", "workspace", {}, (0, 0)),
        ("workspace misaligned", "workspace", {}, (FAKE_WS + 4, wsb)),
    ]
    bad = 0
    for what, name, repl, wsarg in checks:
        tl = [repl[k] if k in repl else good[k] for k in order
              if not (k in repl and repl[k] is None)]
        p, sz = wsarg if wsarg is not None else (FAKE_WS, wsb)
        rc, _, msg = E.status(mod.validate, tl, p, sz)
        probs = refusal_problems(rc, msg, name)
        bad += bool(probs)
        out("%s error-path %s (%s): rc=%d (%s) %r%s" % (
            "FAIL" if probs else "ok  ", what, name, rc,
            E.ERROR_NAMES.get(rc, "?"), msg,
            " -- " + "; ".join(probs) if probs else ""))
    return bad


def offline_validate(args, index, cases, rt):
    """normrt_validate on every case's tensors (stand-in pointers), the
    error-path checks, and one launch plan; no driver needed."""
    bad, mods = 0, {}
    for c in cases:
        e = index["configs"].get(c.cfg.name)
        if e is None:
            continue
        if c.cfg.name not in mods:
            with open(os.path.join(args.gpu_dir, e["manifest"])) as f:
                rc, mod, msg = E.status(rt.load_manifest_only, f.read())
            if rc:
                out("VALIDATE %s: manifest rejected: %d %s" % (c.cfg.name,
                                                             rc, msg))
                bad += 1
                mods[c.cfg.name] = None
                continue
            mods[c.cfg.name] = mod
        mod = mods[c.cfg.name]
        if mod is None:
            continue
        rc, wsb, msg = E.status(mod.workspace_bytes, c.m)
        if rc:
            out("VALIDATE %s: workspace_bytes -> %d %s" % (c.name, rc, msg))
            bad += 1
            continue
        rc, _, msg = E.status(mod.validate, fake_tensors(c), FAKE_WS, wsb)
        if rc:
            out("VALIDATE %s: normrt_validate -> %d (%s) %s" % (
                c.name, rc, E.ERROR_NAMES.get(rc, "?"), msg))
            bad += 1
    out("normrt_validate: %d of %d cases rejected" % (bad, len(cases)))
    e = index["configs"].get(C.ERROR_PATH_CFG.name)
    if e is not None:
        with open(os.path.join(args.gpu_dir, e["manifest"])) as f:
            rc, mod, msg = E.status(rt.load_manifest_only, f.read())
        if mod:
            nb = offline_error_checks(mod, C.ERROR_PATH_CFG)
            out("error path (offline): %d of 10 checks failed" % nb)
            bad += nb
            c = C.Case(C.ERROR_PATH_CFG, 16384, "strided", inplace=True)
            rc, plan, msg = E.status(mod.dry_run, fake_tensors(c), FAKE_WS,
                                     mod.workspace_bytes(c.m))
            out("normrt_dry_run %s:\n  %s" % (c.name, (plan or msg).strip(
                ).replace("\n", "\n  ")))
            mod.close()
    for mod in mods.values():
        if mod:
            mod.close()
    return bad


def dry_run(args, index, cases):
    problems = collections.OrderedDict()
    missing = []
    for c in cases:
        e = index["configs"].get(c.cfg.name)
        if e is None:
            missing.append(c.cfg.name)
            continue
        if c.cfg.name in problems:
            continue
        problems[c.cfg.name] = manifest_problems(
            c.cfg, load_manifest(args.gpu_dir, e))
    out("%d cases over %d configurations (%s)" % (
        len(cases), len({c.cfg.name for c in cases}), args.subset))
    bad = {k: v for k, v in problems.items() if v}
    for name in sorted(set(missing)):
        out("NOT COMPILED %s: %s" % (name, index.get("failed", {}).get(
            name, {}).get("error", "not in configs.json").splitlines()[0]
            if index.get("failed", {}).get(name, {}).get("error") else
            "not in configs.json"))
    for name, ps in bad.items():
        for p in ps:
            out("MANIFEST %s: %s" % (name, p))
    # The error-path configuration too.
    e = index["configs"].get(C.ERROR_PATH_CFG.name)
    if e is None:
        out("NOT COMPILED %s (error-path checks)" % C.ERROR_PATH_CFG.name)
    lib = E.find_library(args.gpu_dir)
    nvalid = 0
    if lib:
        try:
            rt = E.Runtime(lib)
            out("runtime %s: symbols bound, schema agrees; last_error=%r" % (
                lib, rt.last_error()))
            nvalid = offline_validate(args, index, cases, rt)
            if e is not None and args.dry_run_load:
                rc, mod, msg, _, _ = E.load_config(rt, args.gpu_dir, e,
                                                   args.image)
                out("normrt_module_load_files(%s) -> %d (%s) %s" % (
                    C.ERROR_PATH_CFG.name, rc,
                    E.ERROR_NAMES.get(rc, "?"), msg))
                if mod:
                    rc, nb, msg = E.status(mod.workspace_bytes, 16384)
                    out("normrt_workspace_bytes(M=16384) -> %d, %s bytes %s"
                        % (rc, nb, msg))
                    mod.close()
        except (OSError, RuntimeError) as ex:
            out("runtime %s: cannot bind: %s" % (lib, ex))
            nvalid += 1
    else:
        out("runtime: libnormrt.so not found (%s)"
            % E.where_searched(args.gpu_dir))
    out("dry run: %d configurations with manifest problems, %d not "
        "compiled, %d validation failures" % (len(bad), len(set(missing)),
                                              nvalid))
    return 1 if bad or missing or nvalid else 0


# ------------------------------------------------------------- GPU checks

class Ctx:
    """Per-run state: torch, runtime, generator, device."""

    def __init__(self, torch, rt, gen, stream):
        self.torch, self.rt, self.gen, self.stream = torch, rt, gen, stream
        T = torch
        self.tdt = {"f32": T.float32, "f16": T.float16, "bf16": T.bfloat16}
        self.bits = {T.float32: T.int32, T.float16: T.int16,
                     T.bfloat16: T.int16}
        self.launches = 2  # per case; 1 under racecheck
        self.fresh_ws = False  # initcheck: a new workspace per launch
        # Host data (the sanitizer runs): inputs drawn and references
        # computed on the CPU, every device buffer written and read back
        # with cudaMemcpy only, so the only kernels on the GPU are ours.
        self.host = gen.device.type == "cpu"
        self.dev = "cpu" if self.host else "cuda"

    def randn(self, *shape):
        return self.torch.randn(*shape, device=self.dev,
                                dtype=self.torch.float32, generator=self.gen)

    def rand(self, *shape):
        return self.torch.rand(*shape, device=self.dev,
                               dtype=self.torch.float32, generator=self.gen)

    def fetch(self, buf, whole=False, keep=False):
        """The values of a buffer's view (or its whole allocation) for the
        checks: on the device, the tensor itself (a clone with keep=True,
        for values that must outlive the next launch); under host data a
        copy to the CPU of the whole allocation (one cudaMemcpy) and the
        view taken there."""
        if not self.host:
            t = buf.base if whole else buf.v
            return t.clone() if keep else t
        b = buf.base.cpu()
        return b if whole else buf.view_of(b)

    def store(self, buf, cpu_base):
        """Writes a whole allocation from a CPU tensor of its shape (one
        cudaMemcpy; under host data the only way memory gets written)."""
        buf.base.copy_(cpu_base)

    def poison(self, buf, value=float("nan")):
        if not self.host:
            buf.base.fill_(value)
            return
        self.store(buf, self.torch.full(buf.base.shape, value,
                                        dtype=buf.base.dtype))


class Buf:
    """A tensor view `v` over an allocation `base` (layout padding);
    `view_of` takes the same view of another tensor shaped like `base`."""

    def __init__(self, base, view_of):
        self.base, self.view_of = base, view_of
        self.v = view_of(base)


def rows_buf(ctx, m, n, dt, layout):
    T = ctx.torch
    if layout == "contig":
        b = T.empty(m, n, device="cuda", dtype=ctx.tdt[dt])
        return Buf(b, lambda t: t)
    if layout == "strided":
        b = T.empty(m, n + 8, device="cuda", dtype=ctx.tdt[dt])
        return Buf(b, lambda t: t[:, :n])
    if layout == "offset":
        b = T.empty(m, n + 5, device="cuda", dtype=ctx.tdt[dt])
        return Buf(b, lambda t: t[:, 1:n + 1])
    raise ValueError(layout)


def col_buf(ctx, n, dt, layout):
    T = ctx.torch
    if layout == "offset":
        b = T.empty(n + 1, device="cuda", dtype=ctx.tdt[dt])
        return Buf(b, lambda t: t[1:])
    b = T.empty(n, device="cuda", dtype=ctx.tdt[dt])
    return Buf(b, lambda t: t)


def stat_buf(ctx, m, layout):
    T = ctx.torch
    if layout == "offset":
        b = T.empty(m + 1, device="cuda", dtype=T.float32)
        return Buf(b, lambda t: t[1:])
    b = T.empty(m, device="cuda", dtype=T.float32)
    return Buf(b, lambda t: t)


def input_buf(ctx, buf, values):
    """Fills an input: NaN padding around `values` (made on the CPU and
    written with one cudaMemcpy under host data)."""
    if not ctx.host:
        buf.base.fill_(float("nan"))
        buf.v.copy_(values)
        return buf
    host = ctx.torch.full(buf.base.shape, float("nan"), dtype=buf.base.dtype)
    buf.view_of(host).copy_(values)
    ctx.store(buf, host)
    return buf


def rel_err(torch, got, ref, scale=0.0):
    """||got - ref|| / max(||ref||, scale) in float64; inf on NaN/Inf."""
    g = got.double()
    if not bool(torch.isfinite(g).all()):
        return math.inf
    d = float(torch.linalg.vector_norm((g - ref).flatten()))
    den = max(float(torch.linalg.vector_norm(ref.flatten())), float(scale))
    if den == 0.0:
        return 0.0 if d == 0.0 else math.inf
    return d / den


def same_bits(ctx, a, b):
    bt = ctx.bits[a.dtype]
    return bool(ctx.torch.equal(a.contiguous().view(bt),
                                b.contiguous().view(bt)))


def row_bound(dt):
    return 1e-5 if dt == "f32" else 1.5 * UNIT[dt]


def reduce_bound(cfg, m):
    b = 1e-5 if cfg.dtype == "f32" else 1e-3
    if cfg.weight_dtype != "f32":
        b = max(b, 1.5 * UNIT[cfg.weight_dtype])
    return max(b, 4 * UNIT["f32"] * math.sqrt(m))


class CaseFailure(Exception):
    pass


def build_case(ctx, case):
    """Inputs, outputs (poisoned later), references and error scales."""
    T, cfg, m, n, lay = ctx.torch, case.cfg, case.m, case.cfg.n, case.layout
    f64 = T.float64
    x = (ctx.randn(m, n) + (ctx.rand(m, 1) * 2 - 1)).to(ctx.tdt[cfg.dtype])
    bufs, inputs, outputs, refs, scales, bounds = {}, [], [], {}, {}, {}
    w = None
    if cfg.has_weight:
        wv = (0.1 * ctx.randn(n)) if cfg.zc else (1 + 0.25 * ctx.randn(n))
        w = wv.to(ctx.tdt[cfg.weight_dtype])
        bufs["weight"] = input_buf(ctx, col_buf(ctx, n, cfg.weight_dtype, lay), w)
        inputs.append("weight")
    weff = None
    if w is not None:
        weff = w.to(f64) + (1.0 if cfg.zc else 0.0)
    x64 = x.to(f64)
    if cfg.layer:
        mean64 = x64.mean(1)
        var64 = ((x64 - mean64[:, None]) ** 2).mean(1)
    else:
        mean64 = None
        var64 = (x64 ** 2).mean(1)
    rstd64 = 1.0 / T.sqrt(var64 + C.EPS)

    if cfg.grad:
        dy = ctx.randn(m, n).to(ctx.tdt[cfg.dtype])
        bufs["x"] = input_buf(ctx, rows_buf(ctx, m, n, cfg.dtype, lay), x)
        bufs["dy"] = input_buf(ctx, rows_buf(ctx, m, n, cfg.dtype, lay), dy)
        inputs += ["x", "dy"]
        # The stored statistics are f32: the reference uses exactly those.
        rstd = rstd64.float()
        bufs["rstd"] = input_buf(ctx, stat_buf(ctx, m, lay), rstd)
        inputs.append("rstd")
        r = rstd.to(f64)[:, None]
        if cfg.layer:
            mean = mean64.float()
            bufs["mean"] = input_buf(ctx, stat_buf(ctx, m, lay), mean)
            inputs.append("mean")
            xhat = (x64 - mean.to(f64)[:, None]) * r
        else:
            xhat = x64 * r
        dy64 = dy.to(f64)
        g = dy64 * weff if weff is not None else dy64
        c2 = (g * xhat).mean(1, keepdim=True)
        if cfg.layer:
            dx = r * (g - g.mean(1, keepdim=True) - xhat * c2)
        else:
            dx = r * (g - xhat * c2)
        dscale = float(T.linalg.vector_norm((r * g).flatten()))
        if cfg.dres:
            dres = ctx.randn(m, n).to(ctx.tdt[cfg.dtype])
            bufs["dresidual"] = input_buf(ctx, rows_buf(ctx, m, n, cfg.dtype, lay),
                                          dres)
            inputs.append("dresidual")
            dx = dx + dres.to(f64)
            dscale += float(T.linalg.vector_norm(dres.to(f64).flatten()))
        refs["dx"], scales["dx"], bounds["dx"] = dx, dscale, row_bound(
            cfg.dtype)
        if case.inplace:
            bufs["dx"] = bufs["dy"]
        else:
            bufs["dx"] = rows_buf(ctx, m, n, cfg.dtype, lay)
            outputs.append("dx")
        rb = reduce_bound(cfg, m)
        # dw/db against max(||ref||, ||sum_i |term_i||| / sqrt(M)): the size
        # a column sum of M random-sign terms has; a column whose sum
        # cancels to less by chance (N = 1: one column) is ill-conditioned,
        # and its f32 rounding is relative to the terms, not to the sum.
        sq = math.sqrt(max(m, 1))
        if cfg.has_weight:
            refs["dweight"] = (dy64 * xhat).sum(0)
            scales["dweight"] = float(T.linalg.vector_norm(
                (dy64 * xhat).abs().sum(0))) / sq
            bounds["dweight"] = rb
            bufs["dweight"] = col_buf(ctx, n, cfg.weight_dtype, lay)
            outputs.append("dweight")
        if cfg.has_bias:
            refs["dbias"] = dy64.sum(0)
            scales["dbias"] = float(T.linalg.vector_norm(
                dy64.abs().sum(0))) / sq
            bounds["dbias"] = rb
            bufs["dbias"] = col_buf(ctx, n, cfg.weight_dtype, lay)
            outputs.append("dbias")
    else:
        bufs["x"] = input_buf(ctx, rows_buf(ctx, m, n, cfg.dtype, lay), x)
        inputs.append("x")
        xhat = (x64 - mean64[:, None]) * rstd64[:, None] if cfg.layer \
            else x64 * rstd64[:, None]
        y = xhat * weff if weff is not None else xhat.clone()
        yscale = float(T.linalg.vector_norm(y.flatten()))
        if cfg.has_bias:
            bv = (0.5 * ctx.randn(n)).to(ctx.tdt[cfg.weight_dtype])
            bufs["bias"] = input_buf(ctx, col_buf(ctx, n, cfg.weight_dtype, lay), bv)
            inputs.append("bias")
            y = y + bv.to(f64)
            yscale += float(T.linalg.vector_norm(bv.to(f64)))
        refs["y"], scales["y"], bounds["y"] = y, yscale, row_bound(cfg.dtype)
        bufs["y"] = rows_buf(ctx, m, n, cfg.dtype, lay)
        outputs.append("y")
        if cfg.layer:
            refs["mean"], bounds["mean"] = mean64, 1e-5
            bufs["mean"] = stat_buf(ctx, m, lay)
            outputs.append("mean")
        refs["rstd"], bounds["rstd"] = rstd64, 1e-5
        bufs["rstd"] = stat_buf(ctx, m, lay)
        outputs.append("rstd")
        if cfg.xhat:
            refs["xhat"], bounds["xhat"] = xhat, row_bound(cfg.dtype)
            bufs["xhat"] = rows_buf(ctx, m, n, cfg.dtype, lay)
            outputs.append("xhat")
    return bufs, inputs, outputs, refs, scales, bounds


def run_case(ctx, case, mod, manifest, ws, ws_bytes, other=None,
             other_label="other-chip"):
    """Launches `case` ctx.launches times and checks every output against
    the float64 reference, bitwise repetition, inputs and padding. With
    `other` (a module of the same configuration compiled for another chip,
    `--compare-dir`; or the same kernels loaded to launch the reduce
    kernel at G = 1 too, `--one-group-reduce`): one more launch through it,
    whose dweight/dbias must equal ours bitwise (the sum order is
    chip-independent, docs/GPU.md; the dx kernel's finish at G = 1 is the
    reduce kernel's arithmetic); dx and the forward's outputs are compared
    and reported too."""
    T, cfg = ctx.torch, case.cfg
    probs = manifest_problems(cfg, manifest)
    if probs:
        raise CaseFailure("manifest: " + "; ".join(probs))
    bufs, inputs, outputs, refs, scales, bounds = build_case(ctx, case)
    # Snapshots of every input allocation (padding included).
    snap = {k: ctx.fetch(bufs[k], whole=True, keep=True) for k in inputs}
    tensors = [E.torch_tensor(a["name"], bufs[a["name"]].v)
               for a in manifest["arguments"]]

    def launch_once(mod=mod):
        for k in outputs:
            ctx.poison(bufs[k])
        if case.inplace:
            ctx.store(bufs["dy"], snap["dy"])
        # Under initcheck a fresh, never written workspace per launch (its
        # own cudaMalloc): a kernel reading workspace it did not write
        # first is reported. Otherwise the configuration's one workspace.
        w = ws
        if ctx.fresh_ws and ws_bytes:
            w = T.empty(ws_bytes, device="cuda", dtype=T.uint8)
        ws_ptr = w.data_ptr() if w is not None else 0
        T.cuda.synchronize()
        rc, _, msg = E.status(mod.launch, tensors, ws_ptr, ws_bytes,
                              ctx.stream)
        if rc != 0:
            raise CaseFailure("normrt_launch -> %d (%s): %s" % (
                rc, E.ERROR_NAMES.get(rc, "?"), msg))
        T.cuda.synchronize()  # raises on an asynchronous CUDA error
        del w
        return {k: ctx.fetch(bufs[k], keep=True) for k in refs}

    runs = [launch_once() for _ in range(ctx.launches)]
    errs, fails = {}, []
    for k in refs:
        e = max(rel_err(T, r[k], refs[k], scales.get(k, 0.0)) for r in runs)
        errs[k] = e
        if not e <= bounds[k]:
            fails.append("%s error %.3g > %.3g" % (k, e, bounds[k]))
    identical = all(same_bits(ctx, runs[0][k], runs[-1][k]) for k in refs)
    # The forward has no cross-block sums: it must repeat bitwise too.
    if (not cfg.grad or cfg.strat == "deterministic") and not identical:
        diff = [k for k in refs if not same_bits(ctx, runs[0][k],
                                                 runs[-1][k])]
        fails.append("runs differ bitwise in " + ",".join(diff))
    # Nothing written outside the outputs' views; inputs untouched.
    for k in inputs:
        if case.inplace and k == "dy":
            continue
        if not same_bits(ctx, ctx.fetch(bufs[k], whole=True), snap[k]):
            fails.append("input '%s' was modified" % k)
    for k in outputs + (["dx"] if case.inplace else []):
        base = ctx.fetch(bufs[k], whole=True)
        v = bufs[k].view_of(base)
        if base.data_ptr() == v.data_ptr() and base.numel() == v.numel():
            continue
        mask = T.ones_like(base, dtype=T.bool)
        if base.dim() == 2:
            lo = (v.data_ptr() - base.data_ptr()) // base.element_size()
            mask[:, lo:lo + v.shape[1]] = False
        else:
            lo = (v.data_ptr() - base.data_ptr()) // base.element_size()
            mask[lo:lo + v.shape[0]] = False
        if not bool(T.isnan(base[mask]).all()):
            fails.append("'%s' written outside its view (padding)" % k)
    chips = ""
    if other is not None:
        theirs = launch_once(other)
        differ = [k for k in refs if not same_bits(ctx, runs[0][k], theirs[k])]
        chips = " %s=" % other_label + (
            "same" if not differ else "DIFFERS(" + ",".join(differ) + ")")
        if set(differ) & {"dweight", "dbias"}:
            fails.append("dweight/dbias differ bitwise from %s: %s" % (
                other_label, ",".join(differ)))
    detail = " ".join("%s %.2e/%.0e" % (k, errs[k], bounds[k]) for k in refs)
    detail += chips
    detail += " bitwise=%s" % (("yes" if identical else "no")
                               if len(runs) > 1 else "- (1 launch)")
    if fails:
        raise CaseFailure("; ".join(fails) + " | " + detail)
    return detail


# ----------------------------------------------------------- error paths

def error_path_checks(ctx, index, gpu_dir, results):
    T, cfg = ctx.torch, C.ERROR_PATH_CFG
    e = index["configs"].get(cfg.name)
    if e is None:
        results.append(("error-path", "FAIL", "configuration %s not compiled"
                        % cfg.name, 0.0))
        return
    rc, mod, msg, _, _ = E.load_config(ctx.rt, gpu_dir, e, ctx.image)
    if rc:
        results.append(("error-path", "FAIL", "module load -> %d: %s" % (
            rc, msg), 0.0))
        return
    manifest = load_manifest(gpu_dir, e)
    m, n = 64, cfg.n
    case = C.Case(cfg, m)
    bufs, inputs, outputs, refs, scales, bounds = build_case(ctx, case)
    wsb = mod.workspace_bytes(m)
    ws = T.empty(max(wsb, 64) + 64, device="cuda", dtype=T.uint8)
    good = {a["name"]: E.torch_tensor(a["name"], bufs[a["name"]].v)
            for a in manifest["arguments"]}
    order = [a["name"] for a in manifest["arguments"]]
    wide = T.empty(m, 2 * n, device="cuda", dtype=ctx.tdt[cfg.dtype])
    f16x = bufs["x"].v.to(T.float16)
    short_w = T.ones(n - 1, device="cuda", dtype=ctx.tdt[cfg.weight_dtype])
    short_mean = T.zeros(m - 1, device="cuda", dtype=T.float32)
    rank2_dw = T.empty(1, n, device="cuda", dtype=ctx.tdt[cfg.weight_dtype])
    checks = [
        ("wrong dtype", "x", dict(x=E.torch_tensor("x", f16x)), None),
        ("wrong shape", "weight",
         dict(weight=E.torch_tensor("weight", short_w)), None),
        ("wrong rows", "mean",
         dict(mean=E.torch_tensor("mean", short_mean)), None),
        ("inner stride 2", "dx",
         dict(dx=E.torch_tensor("dx", wide[:, ::2])), None),
        ("wrong rank", "dweight",
         dict(dweight=E.torch_tensor("dweight", rank2_dw)), None),
        ("null pointer", "dy", dict(dy=E.make_tensor(
            "dy", 0, E.DTYPE_CODES[cfg.dtype], [m, n], [n, 1])), None),
        ("missing tensor", "rstd", dict(rstd=None), None),
        ("workspace too small", "workspace", {}, (ws.data_ptr(), wsb - 16)),
        ("workspace NULL", "workspace", {}, (0, 0)),
        ("workspace misaligned", "workspace", {}, (ws.data_ptr() + 4, wsb)),
    ]
    for what, name, repl, wsarg in checks:
        t0 = time.time()
        if wsarg is not None and wsb == 0:
            results.append(("error-path %s" % what, "SKIP",
                            "module needs no workspace", 0.0))
            continue
        tl = []
        for k in order:
            if k in repl:
                if repl[k] is not None:
                    tl.append(repl[k])
            else:
                tl.append(good[k])
        ctx.poison(bufs["dx"])
        T.cuda.synchronize()
        p, s = wsarg if wsarg is not None else (ws.data_ptr(), wsb)
        rc, _, msg = E.status(mod.launch, tl, p, s, ctx.stream)
        T.cuda.synchronize()
        probs = refusal_problems(rc, msg, name)
        if not bool(T.isnan(bufs["dx"].v).all()):
            probs.append("dx was written: a kernel ran")
        line = "rc=%d (%s) %r" % (rc, E.ERROR_NAMES.get(rc, "?"), msg)
        results.append(("error-path %s (%s)" % (what, name),
                        "FAIL" if probs else "PASS",
                        ("; ".join(probs) + " | " if probs else "") + line,
                        time.time() - t0))
        out("%-4s %-60s %s" % (results[-1][1], results[-1][0], results[-1][2]))
    # The module still works after the rejected calls.
    rc, _, msg = E.status(mod.launch, [good[k] for k in order],
                          ws.data_ptr(), wsb, ctx.stream)
    T.cuda.synchronize()
    ok = rc == 0 and bool(T.isfinite(bufs["dx"].v).all())
    results.append(("error-path valid launch after errors",
                    "PASS" if ok else "FAIL",
                    "rc=%d %s" % (rc, msg), 0.0))
    out("%-4s %-60s %s" % (results[-1][1], results[-1][0], results[-1][2]))
    mod.close()


# ------------------------------------------------------ sanitizer matrix

def racecheck_case(case, index):
    """The rows matrix's case with the row count of
    configs.rows_for_racecheck (from the kernels' rows per iteration in
    configs.json; unchanged when the configuration is not compiled)."""
    e = index["configs"].get(case.cfg.name)
    if e is None:
        return case
    m = C.rows_for_racecheck(case.cfg, case.m, e.get("kernels", []))
    return C.Case(case.cfg, m, case.layout, case.inplace)


def describe_matrix(args, cases):
    """Prints which cases this sanitizer run covers."""
    cfgs = {c.cfg.name for c in cases}
    what = {"full": "every case of the full matrix (382 cases normally) "
                    "and the error path",
            "rows": "one case per configuration of the full matrix (dx "
                    "over dy, else strided/offset, else the most rows), "
                    "rows from the kernels' geometry: every program runs "
                    "its row loop at least twice, with a partial last "
                    "iteration and block; no error path"}[args.sanitizer]
    out("sanitizer matrix '%s' (tool %s): %d cases over %d configurations: "
        "%s; %d launch(es) per case%s" % (
            args.sanitizer, args.tool or "-", len(cases), len(cfgs), what,
            1 if args.tool in ("racecheck", "synccheck") else 2,
            "; a fresh unwritten workspace per launch"
            if args.tool == "initcheck" else ""))
    byop = collections.Counter("%s %s" % (c.cfg.op, c.cfg.dtype)
                               for c in cases)
    out("  by op/dtype: " + ", ".join("%s %d" % kv for kv in byop.items()))
    rows = collections.Counter((c.cfg.n, c.m) for c in cases)
    out("  cases per M x N: " + ", ".join("%dx%d: %d" % (m, n, k)
                                          for (n, m), k in
                                          sorted(rows.items())))


def coverage(args, cases, results):
    """The closing coverage line of a sanitizer run (gpu-run.sh reads it)."""
    st = {name: s for name, s, _, _ in results}
    ran = [c for c in cases if st.get(c.name) in ("PASS", "FAIL")]
    skipped = [c for c in cases if st.get(c.name) == "SKIP"]
    cfg_all = {c.cfg.name for c in cases}
    cfg_ran = {c.cfg.name for c in ran}
    if skipped:
        out("not covered (skipped): %d cases over %d configurations:" % (
            len(skipped), len({c.cfg.name for c in skipped})))
        for c in skipped[:60]:
            out("  SKIP %s" % c.name)
        if len(skipped) > 60:
            out("  ... %d more" % (len(skipped) - 60))
    ep = [s for n, s, _, _ in results if n.startswith("error-path")]
    out("sanitizer coverage: %d of %d cases (%d of %d configurations) of "
        "matrix %s%s" % (len(ran), len(cases), len(cfg_ran), len(cfg_all),
                         args.sanitizer,
                         ", error path %d checks" % len(ep) if ep else ""))


# ------------------------------------------------------------------ main

def summarize(results, seed, elapsed):
    by = collections.OrderedDict()
    for name, status, _, _ in results:
        key = name.split(" ")[0]
        parts = key.split("-")
        if name.startswith("error-path"):
            group = "error-path"
        elif parts[0].endswith("_grad"):
            group = "%s %s %s" % (parts[0], parts[2],
                                  next((p for p in parts if p in
                                        C.STRATEGIES), "?"))
        else:
            group = "%s %s" % (parts[0], parts[2])
        d = by.setdefault(group, collections.Counter())
        d[status] += 1
    out("")
    out("| group | pass | fail | skipped |")
    out("| --- | --- | --- | --- |")
    for g, d in by.items():
        out("| %s | %d | %d | %d |" % (g, d["PASS"], d["FAIL"], d["SKIP"]))
    tot = collections.Counter(s for _, s, _, _ in results)
    fails = [(n, m) for n, s, m, _ in results if s == "FAIL"]
    if fails:
        out("")
        out("failures (%d):" % len(fails))
        for n, m in fails[:40]:
            out("  FAIL %s: %s" % (n, m[:400]))
        if len(fails) > 40:
            out("  ... %d more" % (len(fails) - 40))
    out("gpu_check: seed %d, %.0f s" % (seed, elapsed))
    # The plain closing line.
    out("%d passed, %d failed, %d skipped" % (tot["PASS"], tot["FAIL"],
                                             tot["SKIP"]))


def main():
    ap = argparse.ArgumentParser(
        description="GPU correctness of the compiled norm kernels")
    ap.add_argument("--quick", action="store_true", help="a small subset")
    ap.add_argument("--sanitizer-subset", action="store_true",
                    help="16 small cases (the former compute-sanitizer "
                    "subset)")
    ap.add_argument("--sanitizer", choices=("full", "rows"), default=None,
                    help="the matrix to run under compute-sanitizer: full "
                    "(every case, memcheck/initcheck) or rows (one case per "
                    "configuration, rows set from the kernels' geometry, "
                    "racecheck); cases in spread order, coverage printed")
    ap.add_argument("--tool", choices=("memcheck", "initcheck", "racecheck",
                                       "synccheck"),
                    default=None, help="the compute-sanitizer tool this "
                    "runs under: initcheck gives every launch a fresh "
                    "workspace (never written, so a kernel reading "
                    "workspace it did not write is reported); racecheck "
                    "and synccheck (the barriers, named ones included) "
                    "launch each case once")
    ap.add_argument("--host-data", action="store_true",
                    help="draw inputs and compute references on the CPU and "
                    "move every buffer with cudaMemcpy, so only our kernels "
                    "run on the GPU (the default with --sanitizer: "
                    "initcheck then needs no other kernel instrumented, "
                    "and torch's float64 reductions stay off the GPU)")
    ap.add_argument("--shard", default="",
                    help="K/N: only the cases whose index in the (spread) "
                    "order is K mod N, for a matrix split over device calls")
    ap.add_argument("--deadline", type=float, default=0,
                    help="epoch seconds: start no configuration after it "
                    "(the rest reported skipped)")
    ap.add_argument("--dry-run", action="store_true",
                    help="no GPU/torch: check configs and manifests")
    ap.add_argument("--dry-run-load", action="store_true",
                    help="with --dry-run: also call normrt_module_load_files "
                    "(needs a GPU to succeed; shows the error otherwise)")
    ap.add_argument("--gpu-dir", default=C.default_gpu_dir())
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--filter", default="",
                    help="regex on case names")
    ap.add_argument("--no-error-path", action="store_true")
    ap.add_argument("--budget-s", type=float, default=0,
                    help="skip remaining cases after this many seconds")
    ap.add_argument("--compare-dir", default="",
                    help="a kernels directory of --gpu-dir compiled for "
                    "another chip (gpu-prepare's kernels-sm80: PTX, JIT "
                    "here): cases of configurations it has also run "
                    "through it; dweight/dbias must match bitwise")
    ap.add_argument("--one-group-reduce", action="store_true",
                    help="only the cases at G = 1 (M = 1, or groups=1), "
                    "each launched once more through the same kernels "
                    "loaded with NORMRT_ONE_GROUP_REDUCE=1 (the reduce "
                    "kernel launched after the dx kernel that finished "
                    "dweight/dbias itself): every output must match "
                    "bitwise")
    ap.add_argument("--image", choices=("auto", "cubin", "ptx"),
                    default="auto", help="kernel image to load (auto: the "
                    "cubin when prepared, else/on failure the PTX)")
    args = ap.parse_args()
    args.gpu_dir = os.path.abspath(args.gpu_dir)
    if args.sanitizer:
        args.host_data = True
    args.subset = args.sanitizer or (
        "sanitizer" if args.sanitizer_subset else (
            "quick" if args.quick else "full"))
    try:
        index = C.load_index(args.gpu_dir)
    except OSError as ex:
        out("gpu_check: cannot read %s/configs.json (%s): run "
            "scripts/gpu-prepare.sh and carry .dev/gpu" % (args.gpu_dir, ex))
        return 2
    cases = C.check_cases(args.subset)
    if args.sanitizer:
        cases = C.spread_order(cases)
    if args.sanitizer == "rows":
        cases = [racecheck_case(c, index) for c in cases]
    if args.filter:
        cases = [c for c in cases if re.search(args.filter, c.name)]
    if args.shard:
        mk = re.fullmatch(r"(\d+)/(\d+)", args.shard)
        if not mk or not 0 <= int(mk.group(1)) < int(mk.group(2)):
            out("gpu_check: --shard wants K/N with 0 <= K < N, got %r" %
                args.shard)
            return 2
        k, nsh = int(mk.group(1)), int(mk.group(2))
        cases = [c for i, c in enumerate(cases) if i % nsh == k]
    if args.sanitizer:
        describe_matrix(args, cases)
    if args.dry_run:
        return dry_run(args, index, cases)

    started = E.start_on_gpu(args.gpu_dir, "gpu_check", out, args.seed)
    if not started:
        return 2
    torch, rt, seed = started
    gen = torch.Generator(device="cpu" if args.host_data else "cuda")
    gen.manual_seed(seed)
    ctx = Ctx(torch, rt, gen, torch.cuda.current_stream().cuda_stream)
    ctx.image = args.image
    if args.tool in ("racecheck", "synccheck"):
        ctx.launches = 1
    ctx.fresh_ws = args.tool == "initcheck"
    out("gpu_check: %d cases (%s%s%s), seed %d, %s, torch %s, runtime %s" % (
        len(cases), args.subset, ", shard " + args.shard if args.shard else "",
        ", host data" if ctx.host else "", seed,
        torch.cuda.get_device_name(), torch.__version__, rt.path))

    # Group by configuration (first-appearance order): one module and one
    # workspace per configuration.
    groups = collections.OrderedDict()
    for c in cases:
        groups.setdefault(c.cfg.name, []).append(c)
    results, t_start, dead = [], time.time(), None
    images = collections.Counter()
    for cname, ccases in groups.items():
        entry = index["configs"].get(cname)
        skip_reason = None
        if dead:
            skip_reason = "CUDA context lost after " + dead
        elif args.budget_s and time.time() - t_start > args.budget_s:
            skip_reason = "time budget %.0f s spent" % args.budget_s
        elif args.deadline and time.time() > args.deadline:
            skip_reason = "deadline passed (the step's time limit)"
        if skip_reason:
            for c in ccases:
                results.append((c.name, "SKIP", skip_reason, 0.0))
            continue
        if entry is None:
            err = index.get("failed", {}).get(cname, {}).get(
                "error", "not in configs.json")
            for c in ccases:
                results.append((c.name, "FAIL", "not compiled: " + err, 0.0))
                out("FAIL %s: not compiled: %s" % (c.name, err[:200]))
            continue
        manifest = load_manifest(args.gpu_dir, entry)
        if args.sanitizer:
            free, total = torch.cuda.mem_get_info()
            out("config %s: device memory free %.1f of %.1f GiB" % (
                cname, free / 2**30, total / 2**30))
        t0 = time.time()
        rc, mod, msg, image, tried = E.load_config(
            rt, args.gpu_dir, entry, args.image)
        if tried and not rc:
            out("note: %s: fell back to %s after: %s" % (
                cname, os.path.basename(image), "; ".join(tried)))
        if not rc:
            images[os.path.splitext(image)[1]] += 1
        if rc:
            for c in ccases:
                results.append((c.name, "FAIL", "normrt_module_load_files -> "
                                "%d (%s): %s" % (rc, E.ERROR_NAMES.get(
                                    rc, "?"), msg), 0.0))
                out("FAIL %s: module load -> %d: %s" % (c.name, rc, msg))
            continue
        other, other_label, orc = None, "other-chip", 0
        if args.one_group_reduce:
            ccases = [c for c in ccases
                      if c.m == 1 or getattr(c.cfg, "groups", 0) == 1]
            if not ccases:
                mod.close()
                continue
            os.environ["NORMRT_ONE_GROUP_REDUCE"] = "1"
            try:
                orc, other, omsg, _, _ = E.load_config(
                    rt, args.gpu_dir, entry, args.image)
            finally:
                del os.environ["NORMRT_ONE_GROUP_REDUCE"]
            other_label = "reduce-kernel"
            what = "module with the reduce kernel"
        elif args.compare_dir:
            kdir = os.path.dirname(entry["manifest"])
            alt = {k: v.replace(kdir + "/", args.compare_dir + "/", 1)
                   for k, v in entry.items() if k in ("manifest", "ptx")}
            if not os.path.exists(os.path.join(args.gpu_dir, alt["manifest"])):
                mod.close()
                continue  # compared configurations only
            orc, other, omsg, _, _ = E.load_config(
                rt, args.gpu_dir, alt, "ptx")
            what = "other chip's module"
        if orc:
            for c in ccases:
                results.append((c.name, "FAIL", "%s: %d: %s" % (
                    what, orc, omsg), 0.0))
            mod.close()
            continue
        ws_bytes, ws_err = 0, None
        for c in ccases:
            rc, nb, msg = E.status(mod.workspace_bytes, c.m)
            if rc:
                ws_err = "normrt_workspace_bytes(%d) -> %d: %s" % (c.m, rc,
                                                                   msg)
                break
            ws_bytes = max(ws_bytes, nb)
        if ws_err:
            for c in ccases:
                results.append((c.name, "FAIL", ws_err, 0.0))
                out("FAIL %s: %s" % (c.name, ws_err))
            mod.close()
            if other is not None:
                other.close()
            continue
        ws = None
        if ws_bytes and not ctx.fresh_ws:
            ws = torch.empty(ws_bytes, device="cuda", dtype=torch.uint8)
            # The kernels must initialise what they use.
            ctx.poison(Buf(ws, lambda t: t), 0xFF)
        load_s = time.time() - t0
        for c in ccases:
            if dead:
                results.append((c.name, "SKIP", "CUDA context lost after "
                                + dead, 0.0))
                continue
            t0 = time.time()
            print("%-76s " % c.name, end="", flush=True)
            try:
                detail = run_case(ctx, c, mod, manifest, ws, ws_bytes,
                                  other, other_label)
                status = "PASS"
            except CaseFailure as ex:
                status, detail = "FAIL", str(ex)
            except Exception as ex:  # CUDA errors surface here (and bugs)
                status, detail = "FAIL", "%s: %s" % (
                    type(ex).__name__, " ".join(str(ex).split()))
                try:
                    torch.cuda.synchronize()
                except Exception:
                    dead = c.name
            dt = time.time() - t0
            results.append((c.name, status, detail, dt))
            out("%s %s (%.0f ms%s)" % (status, detail[:600], dt * 1e3,
                                       ", module load %.0f ms" % (load_s * 1e3)
                                       if c is ccases[0] else ""))
        mod.close()
        if other is not None:
            other.close()
        del ws
    if args.one_group_reduce:
        same = sum(1 for _, st, d, _ in results
                   if st == "PASS" and "reduce-kernel=same" in d)
        out("one group: %d of %d cases identical in every output with the "
            "reduce kernel launched too" % (same, len(results)))
    if args.compare_dir:
        same = sum(1 for _, st, d, _ in results
                   if st == "PASS" and "other-chip=same" in d)
        dx_only = sum(1 for _, st, d, _ in results
                      if st == "PASS" and "other-chip=DIFFERS(dx)" in d)
        out("other chip (%s): %d of %d cases identical in every output, %d "
            "more in dweight/dbias (dx differs: a row split over a cluster "
            "on one chip only)" % (args.compare_dir, same, len(results),
                                   dx_only))
    if not args.no_error_path and not dead and args.subset in ("full",
                                                                "quick"):
        try:
            error_path_checks(ctx, index, args.gpu_dir, results)
        except Exception as ex:
            results.append(("error-path", "FAIL", "%s: %s" % (
                type(ex).__name__, " ".join(str(ex).split())), 0.0))
            out("FAIL error-path: %s" % results[-1][2])
    out("kernel images loaded: %s" % (", ".join(
        "%d %s" % (v, k) for k, v in sorted(images.items())) or "none"))
    summarize(results, seed, time.time() - t_start)
    if args.sanitizer:
        coverage(args, cases, results)
    return 1 if any(s == "FAIL" for _, s, _, _ in results) else 0


if __name__ == "__main__":
    sys.exit(main())
