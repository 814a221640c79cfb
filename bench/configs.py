#!/usr/bin/env python3
"""Kernel configurations and test cases for the GPU checks and benchmarks.

One source of truth, used three ways:

* ``scripts/gpu-prepare.sh`` (on the build machine, no torch) runs
  ``python3 bench/configs.py jobs`` to list every configuration to compile
  and ``python3 bench/configs.py index ...`` to write ``.dev/gpu/configs.json``;
* ``bench/gpu_check.py`` takes its cases from ``check_cases()``;
* ``bench/bench.py`` takes its rows from ``bench_shapes()``.

A configuration is one ``norm-compile`` spec (op, N, dtypes, strategy,
flags); its name is also its file name under ``.dev/gpu/kernels/``.
Standard library only (runs under python 3.11 here and 3.12 there).
"""

import argparse
import dataclasses
import json
import os
import re
import subprocess
import sys
import time

GRAD_OPS = ("layer_norm_grad", "rms_norm_grad")
FWD_OPS = ("layer_norm", "rms_norm")
DTYPES = ("f32", "f16", "bf16")
STRATEGIES = ("deterministic", "grouped_atomic", "atomic", "locked")
EPS = 1e-5  # the ops' default eps (norm-compile does not set one)


@dataclasses.dataclass(frozen=True)
class Cfg:
    """One norm-compile spec."""

    op: str
    n: int
    dtype: str
    wdtype: str = ""  # "" = same as dtype
    strategy: str = ""  # grad ops only; "" = deterministic
    groups: int = 0
    nw: bool = False  # --no-weight
    nb: bool = False  # --no-bias (LayerNorm)
    dres: bool = False  # --dresidual (grad)
    zc: bool = False  # --zero-centered
    xhat: bool = False  # --xhat (forward)
    threads: int = 0  # --threads (0: the compiler's choice)
    mre: int = 0  # --max-register-elements (0: the compiler's choice)
    cluster: int = 0  # --cluster (0: the compiler's choice, 1: none)
    batch: int = 0  # --batch-rows (0: the compiler's choice)
    lanes: int = 0  # --max-lanes (0: no cap)
    rows: int = 0  # --rows (the tuning table's M hint; 0: unknown)
    fma: bool = False  # --fuse-multiply-add=true (explicit f32 fma)
    prefetch: int = 0  # --prefetch (waves of rows into L2; 0: none)
    pv: int = 0  # --partial-vector (shared sums side by side; 0: default)
    pl: int = 0  # --pipeline (next row's loads into registers; 0: none)
    nc: int = 0  # --narrow-cache (row caches in the loaded type; 0: f32,
    # 1: an element an entry, 2: two a 32-bit word)
    hc: int = -1  # --hold-columns (weight, bias in registers; -1: chosen)
    untuned: bool = False  # --tuning=false (the cost model, no table)
    ra: int = -1  # --restrict-arguments (noalias pointers; -1: default on)

    @property
    def grad(self):
        return self.op.endswith("_grad")

    @property
    def layer(self):
        return self.op.startswith("layer_norm")

    @property
    def weight_dtype(self):
        return self.wdtype or self.dtype

    @property
    def has_weight(self):
        return not self.nw

    @property
    def has_bias(self):
        return self.layer and not self.nb

    @property
    def strat(self):
        return self.strategy or "deterministic"

    @property
    def name(self):
        parts = [self.op, "n%d" % self.n, self.dtype]
        if self.wdtype and self.wdtype != self.dtype:
            parts.append("w" + self.wdtype)
        if self.grad:
            parts.append(self.strat)
        if self.groups:
            parts.append("g%d" % self.groups)
        for flag, tag in ((self.nw, "nw"), (self.nb, "nb"), (self.dres, "dres"),
                          (self.zc, "zc"), (self.xhat, "xhat")):
            if flag:
                parts.append(tag)
        if self.threads:
            parts.append("t%d" % self.threads)
        if self.mre:
            parts.append("mre%d" % self.mre)
        if self.cluster:
            parts.append("c%d" % self.cluster)
        if self.batch:
            parts.append("b%d" % self.batch)
        if self.lanes:
            parts.append("l%d" % self.lanes)
        if self.rows:
            parts.append("r%d" % self.rows)
        if self.fma:
            parts.append("fma")
        if self.prefetch:
            parts.append("pf%d" % self.prefetch)
        if self.pv:
            parts.append("pv%d" % self.pv)
        if self.pl:
            parts.append("pl%d" % self.pl)
        if self.nc:
            parts.append("nc%d" % self.nc)
        if self.hc >= 0:
            parts.append("hc%d" % self.hc)
        if self.untuned:
            parts.append("untuned")
        if self.ra >= 0:
            parts.append("ra%d" % self.ra)
        return "-".join(parts)

    def flags(self):
        f = ["--op=" + self.op, "--n=%d" % self.n, "--dtype=" + self.dtype]
        if self.wdtype and self.wdtype != self.dtype:
            f.append("--weight-dtype=" + self.wdtype)
        if self.grad:
            f.append("--strategy=" + self.strat)
            if self.groups:
                f.append("--groups=%d" % self.groups)
        if self.nw:
            f.append("--no-weight")
        if self.nb:
            f.append("--no-bias")
        if self.dres:
            f.append("--dresidual")
        if self.zc:
            f.append("--zero-centered")
        if self.xhat:
            f.append("--xhat")
        if self.threads:
            f.append("--threads=%d" % self.threads)
        if self.mre:
            f.append("--max-register-elements=%d" % self.mre)
        if self.cluster:
            f.append("--cluster=%d" % self.cluster)
        if self.batch:
            f.append("--batch-rows=%d" % self.batch)
        if self.lanes:
            f.append("--max-lanes=%d" % self.lanes)
        if self.rows:
            f.append("--rows=%d" % self.rows)
        if self.fma:
            f.append("--fuse-multiply-add=true")
        if self.prefetch:
            f.append("--prefetch=%d" % self.prefetch)
        if self.pv:
            f.append("--partial-vector=%d" % self.pv)
        if self.pl:
            f.append("--pipeline=%d" % self.pl)
        if self.nc:
            f.append("--narrow-cache=%d" % self.nc)
        if self.hc >= 0:
            f.append("--hold-columns=%d" % self.hc)
        if self.untuned:
            f.append("--tuning=false")
        if self.ra >= 0:
            f.append("--restrict-arguments=%s" % ("true" if self.ra else
                                                  "false"))
        return f

    def expected_args(self, m="?"):
        """(name, role, dtype, shape) in the order norm-compile declares them.

        This is what the checks believe the manifest says; gpu_check compares
        it with the real manifest and fails a case on any difference.
        """
        n, x, w = self.n, self.dtype, self.weight_dtype
        rows, col, stat = [m, n], [n], [m]
        a = []
        if self.grad:
            a += [("dy", "input", x, rows), ("x", "input", x, rows)]
            if self.layer:
                a.append(("mean", "input", "f32", stat))
            a.append(("rstd", "input", "f32", stat))
            if self.has_weight:
                a.append(("weight", "input", w, col))
            if self.dres:
                a.append(("dresidual", "input", x, rows))
            a.append(("dx", "output", x, rows))
            if self.has_weight:
                a.append(("dweight", "output", w, col))
            if self.has_bias:
                a.append(("dbias", "output", w, col))
        else:
            a.append(("x", "input", x, rows))
            if self.has_weight:
                a.append(("weight", "input", w, col))
            if self.has_bias:
                a.append(("bias", "input", w, col))
            a.append(("y", "output", x, rows))
            if self.layer:
                a.append(("mean", "output", "f32", stat))
            a.append(("rstd", "output", "f32", stat))
            if self.xhat:
                a.append(("xhat", "output", x, rows))
        return a


@dataclasses.dataclass(frozen=True)
class Case:
    """One GPU check: a configuration, a row count and a memory layout.

    layout: "contig"; "strided" (rows are column slices of [M, N + 8]
    tensors, so the row stride is N + 8); "offset" (slices [:, 1:N+1] of
    [M, N + 5] tensors and 1-D tensors offset by one element: pointers that
    are element- but not 16-byte-aligned, odd row stride).
    inplace: dx is the dy tensor itself (grad ops).
    """

    cfg: Cfg
    m: int
    layout: str = "contig"
    inplace: bool = False

    @property
    def name(self):
        s = "%s m%d %s" % (self.cfg.name, self.m, self.layout)
        if self.inplace:
            s += " dx=dy"
        return s


# ---------------------------------------------------------------- the checks

def _grad_base_cases(op, dt, st):
    c = lambda n, **kw: Cfg(op, n, dt, strategy=st, **kw)
    return [
        Case(c(4096), 1),
        Case(c(4096), 2061),
        Case(c(4096), 2061, "strided"),
        Case(c(4096), 2061, "contig", inplace=True),
        Case(c(1), 1000),
        Case(c(24), 401408),
        Case(c(4095), 777),
        Case(c(4095), 777, "offset"),
        Case(c(65536), 130),
        # Rows split over a cluster on sm_90 (deterministic; the other
        # strategies keep a block per row): an odd N (interleaved layout,
        # the last slice partial), a cluster of 6 blocks, 512-thread blocks
        # with dx over dy, M = 1. None of them is a benchmark shape.
        Case(c(30001), 700, "offset"),
        Case(c(24576), 517, "strided"),
        Case(c(40000), 301, "contig", inplace=True),
        Case(c(32768), 1),
        # The looped regime on every chip (N past any cluster): rows in
        # batches of B (Geometry.h) with the last batch partial, programs
        # with no rows (M = 300: R = 3, programs 100-127 empty), odd N in
        # the interleaved layout, dx over dy, one row.
        Case(c(100003), 300, "offset"),
        Case(c(131072), 700, "strided", inplace=True),
        Case(c(65537), 1),
    ] + ([] if st != "deterministic" else [
        # One row's partial rows in dynamic shared memory, past the static
        # 40 KB (Geometry.cpp, dynamicPartialsPay), with several rows a
        # program: LayerNorm N = 7000 (2 x 56 KB; RMSNorm's 28 KB stay
        # static), RMSNorm N = 11000 (48 KB; LayerNorm's 96 KB are past
        # the budget: registers). Not benchmark shapes.
        Case(c(7000), 1500, "strided"),
        Case(c(11000), 900, "offset"),
        # G = 1 fixed with several rows: the dx kernel's one program (a
        # block; a cluster of blocks at N = 32768 on sm_90) sums them all
        # and finishes dweight / dbias itself, no reduce launch.
        Case(c(4096, groups=1), 40),
        Case(c(32768, groups=1), 3, "offset"),
    ]) + ([] if st == "atomic" else [
        # A fixed G above M (atomic has no groups): programs without rows,
        # which write their partial rows whole (zeros) where no kernel
        # clears them first.
        Case(c(4096, groups=64), 40),
        Case(c(131072, groups=16), 9, "offset"),
    ])


def _grad_feature_cases(op, dt, st):
    layer = op.startswith("layer")
    c = lambda **kw: Cfg(op, 4096, dt, strategy=st, **kw)
    cases = []
    if dt != "f32":
        cases += [Case(c(wdtype="f32"), 2061),
                  Case(Cfg(op, 24, dt, wdtype="f32", strategy=st), 401408),
                  Case(Cfg(op, 4095, dt, wdtype="f32", strategy=st), 777, "offset")]
    cases += [Case(c(dres=True), 2061),
              Case(c(dres=True), 2061, "strided", inplace=True),
              Case(c(zc=True), 2061),
              Case(c(nw=True), 2061)]
    if layer:
        cases += [Case(c(nb=True), 2061), Case(c(nw=True, nb=True), 2061)]
    combo = dict(dres=True, zc=True, nb=layer)
    if dt != "f32":
        combo["wdtype"] = "f32"
    cases.append(Case(c(**combo), 2061, "strided"))
    return cases


def _fwd_cases(op, dt):
    layer = op == "layer_norm"
    c = lambda n, **kw: Cfg(op, n, dt, **kw)
    cases = [
        Case(c(4096), 1),
        Case(c(4096), 2061),
        Case(c(4096, xhat=True), 2061, "strided"),
        Case(c(1, xhat=True), 1000),
        Case(c(24, xhat=True), 401408),
        Case(c(4095, xhat=True), 777, "offset"),
        Case(c(65536, xhat=True), 130),
        # The forward's lane rule (several chunks a lane, rows per block
        # past M's last block): 4 x 4, 16 x 5 and 32 x 4 chunks.
        Case(c(128), 1001),
        Case(c(640, xhat=True), 777),
        Case(c(1000), 2061, "strided"),
        Case(c(4096, zc=True), 2061),
        Case(c(4096, nw=True), 2061),
    ]
    if dt != "f32":
        cases.append(Case(c(4096, wdtype="f32", xhat=True), 2061))
    if layer:
        cases += [Case(c(4096, nb=True), 2061),
                  Case(c(4096, nw=True, nb=True, xhat=True), 777, "offset")]
    return cases


# Shapes where the sm_90 tuning table gives the kernels another geometry
# than the cost model's (at odd M and N, inside the entries' ranges): the
# configuration compiled with --rows (configs.grid_cfg), checked like any
# other against float64, and by the chips step against the same flags
# compiled for sm_80 (no table there): dweight/dbias must keep their bits
# (issue 21, item 3). Only the (op, dtype, N, M) the table serves enter.
TUNED_CASES = (("layer_norm_grad", "bf16", 16383, 64),
               ("layer_norm_grad", "bf16", 12288, 1000),
               ("layer_norm_grad", "bf16", 65536, 3000),
               ("rms_norm_grad", "bf16", 16384, 300),
               ("rms_norm_grad", "bf16", 65537, 999),
               ("rms_norm_grad", "f32", 65536, 100),
               ("layer_norm", "bf16", 768, 100),
               ("rms_norm", "f32", 300, 700),
               # The looped row split over a cluster (entries with
               # max_register_elements, M <= 128) off the tuned N.
               ("layer_norm_grad", "bf16", 150008, 7),
               ("layer_norm_grad", "bf16", 262144, 64),
               ("rms_norm_grad", "f32", 200000, 50))


# Geometry prefetch (rows waves ahead into L2; no table entry takes it yet,
# so the option): the register regime one and two waves ahead, with the
# rows aligned (prefetched) and not (the alignment check skips it), the
# looped regime's batches, a row split over a cluster (a slice each).
PREFETCH_CASES = ((("layer_norm_grad", 4096, "bf16", 1), 2061, "contig"),
                  (("layer_norm_grad", 4096, "bf16", 1), 67, "offset"),
                  (("rms_norm_grad", 4096, "f32", 2), 1000, "strided"),
                  (("rms_norm_grad", 1024, "bf16", 1), 4099, "contig"),
                  (("layer_norm_grad", 131072, "bf16", 1), 37, "contig"),
                  (("rms_norm_grad", 65536, "bf16", 1), 70, "contig"))


def _prefetch_cases():
    return [Case(Cfg(op, n, dt, prefetch=p), m, layout)
            for (op, n, dt, p), m, layout in PREFETCH_CASES]


# Geometry partial_vector (shared partial sums a lane keeps side by side,
# the table's knob at LayerNorm bf16 N = 2048-8192 and f32 N = 1024, 5120):
# W = 4 and 2 (the option), rows aligned (the grouped vector body) and not
# (the interleaved body's word-a-lane slots, or a chunk past N on the
# element path), a partial row in dynamic shared memory (RMSNorm N =
# 12288), with prefetch.
PV_CASES = ((("layer_norm_grad", 3072, "bf16", 4, 0), 2061, "contig"),
            (("layer_norm_grad", 5120, "bf16", 2, 1), 999, "offset"),
            (("rms_norm_grad", 12288, "bf16", 4, 0), 300, "contig"),
            (("layer_norm_grad", 1024, "f32", 4, 1), 4099, "strided"),
            (("rms_norm_grad", 5000, "bf16", 2, 0), 77, "contig"))


def _pv_cases():
    return [Case(Cfg(op, n, dt, pv=w, prefetch=p), m, layout)
            for (op, n, dt, w, p), m, layout in PV_CASES]


# Geometry pipeline (the next row's loads issued into registers) and
# narrow_cache (bf16 / f16 row caches in the loaded type): rows aligned
# (the aligned body loads ahead) and not (the interleaved body, no loads
# ahead), a group past N (N = 5000: its chunks keep their own loads), a
# residual gradient read in the dx loop, a row split over a cluster, 512
# threads, both knobs together, f16 (extended by fpext), and few rows
# (programs of one row: nothing ahead). The forward's narrow cache of x:
# LayerNorm (the cache read twice, for the variance and for y) aligned and
# not, with xhat, RMSNorm with the columns held, a row over a cluster, a
# zero-centred weight at one row.
PIPE_CASES = ((("layer_norm_grad", 4096, "bf16", 1, 0, {}), 2061, "contig"),
              (("layer_norm_grad", 4096, "bf16", 1, 1, {}), 999, "offset"),
              (("rms_norm_grad", 5000, "bf16", 1, 1, {}), 777, "contig"),
              (("layer_norm_grad", 3072, "bf16", 1, 0, {"dres": True}), 515,
               "contig"),
              (("rms_norm_grad", 16384, "bf16", 1, 1, {"cluster": 2}), 300,
               "contig"),
              (("layer_norm_grad", 1024, "bf16", 1, 1, {"threads": 512}),
               4099, "strided"),
              (("layer_norm_grad", 16384, "bf16", 0, 1, {}), 260, "contig"),
              (("rms_norm_grad", 2048, "f16", 1, 1, {}), 1500, "contig"),
              (("layer_norm_grad", 8192, "bf16", 1, 1, {}), 3, "contig"),
              (("layer_norm", 4096, "bf16", 0, 1, {}), 2061, "contig"),
              (("layer_norm", 5000, "bf16", 0, 1, {"xhat": True}), 777,
               "offset"),
              (("rms_norm", 2560, "bf16", 0, 1, {"hc": 1}), 300, "strided"),
              (("rms_norm", 7168, "bf16", 0, 1, {"cluster": 2}), 64,
               "contig"),
              (("layer_norm", 1000, "bf16", 0, 1, {"zc": True}), 1,
               "contig"),
              # narrow_cache = 2, two elements a 32-bit word: both halves
              # of a word, bf16 by its bits and f16 by fpext, the
              # interleaved body (element by element), with the row ahead,
              # over a cluster, and the forward's cache read twice.
              (("layer_norm_grad", 8192, "bf16", 0, 2, {}), 2061, "contig"),
              (("rms_norm_grad", 5000, "bf16", 0, 2, {}), 777, "offset"),
              (("layer_norm_grad", 6144, "f16", 0, 2, {"dres": True}), 515,
               "contig"),
              (("rms_norm_grad", 4096, "bf16", 1, 2, {}), 999, "strided"),
              (("layer_norm_grad", 16384, "bf16", 0, 2, {"cluster": 2}),
               300, "contig"),
              (("layer_norm", 3072, "bf16", 0, 2, {"xhat": True}), 777,
               "offset"),
              (("rms_norm", 3072, "f16", 0, 2, {"hc": 1}), 2061, "contig"),
              (("rms_norm", 1536, "bf16", 0, 2, {}), 64, "strided"))


def _pipe_cases():
    return [Case(Cfg(op, n, dt, pl=p, nc=nc, **kw), m, layout)
            for (op, n, dt, p, nc, kw), m, layout in PIPE_CASES]


# A forward row split over a cluster (the `cluster` option; the table's
# knob where rows are few and wide): slices that cover N exactly and not
# (N = 7168 in 2 x 4096, 5000 in 2), rows aligned and not (the element
# path), xhat, a residual-free RMSNorm f32, cluster 8 at N = 65536, the
# looped slice (N = 262144, max_register_elements 32), f16 with an f32
# weight, one row and more rows than SMs.
FWD_CLUSTER_CASES = ((("layer_norm", 7168, "bf16", {"cluster": 2}), 64,
                      "contig"),
                     (("rms_norm", 7168, "bf16", {"cluster": 2}), 300,
                      "offset"),
                     (("layer_norm", 5000, "bf16", {"cluster": 2,
                                                    "xhat": True}), 33,
                      "strided"),
                     (("rms_norm", 16384, "f32", {"cluster": 4}), 1,
                      "contig"),
                     (("layer_norm", 65536, "bf16", {"cluster": 8}), 130,
                      "contig"),
                     (("rms_norm", 262144, "bf16", {"cluster": 8, "mre": 32}),
                      3, "contig"),
                     (("layer_norm", 4095, "f16", {"cluster": 2,
                                                   "wdtype": "f32"}), 77,
                      "offset"),
                     (("layer_norm", 12288, "bf16", {"cluster": 4,
                                                     "threads": 256}), 1000,
                      "contig"))


def _fwd_cluster_cases():
    return [Case(Cfg(op, n, dt, **kw), m, layout)
            for (op, n, dt, kw), m, layout in FWD_CLUSTER_CASES]


# Geometry hold_columns (weight and bias loaded into registers once a
# program): rows aligned (layout = vector at N = 1024: the held loads under
# the alignment test; layout = both at N = 7168) and not (offset, strided:
# the element path, nothing held is used), a last group of chunks that some
# lanes do not have (N = 5000), a row split over a cluster (the slice's
# columns), xhat, f16 with an f32 weight, one row; dx kernels of several
# waves a block (the weight held across rows), with pipeline, with a
# residual gradient, f32.
HOLD_CASES = ((("layer_norm", 1024, "bf16", {}), 3001, "contig"),
              (("layer_norm", 1024, "bf16", {}), 999, "offset"),
              (("rms_norm", 7168, "bf16", {}), 2000, "contig"),
              (("layer_norm", 7168, "bf16", {}), 301, "strided"),
              (("layer_norm", 5000, "bf16", {"xhat": True}), 257, "contig"),
              (("rms_norm", 7168, "bf16", {"cluster": 2}), 64, "contig"),
              # held over a cluster's blocks (the one-wave rule and the
              # table's fwd-hold entries at M <= 128)
              (("layer_norm", 14336, "bf16", {"cluster": 8}), 8, "contig"),
              (("rms_norm", 20480, "f32", {"cluster": 4}), 5, "offset"),
              (("layer_norm", 49152, "bf16", {"cluster": 8}), 3, "strided"),
              (("layer_norm", 4096, "f16", {"wdtype": "f32"}), 1, "contig"),
              (("rms_norm", 2048, "f32", {}), 4099, "contig"),
              (("layer_norm_grad", 4096, "bf16", {}), 2061, "contig"),
              (("rms_norm_grad", 1024, "bf16", {"pl": 1}), 8191, "contig"),
              (("layer_norm_grad", 3072, "bf16", {"dres": True}), 515,
               "offset"),
              (("rms_norm_grad", 2048, "f32", {}), 3000, "contig"))


# Two chunks a lane for a plain one-row backward row (norm-choose-geometry
# two-chunk-rows; Geometry.h twoChunkRowsPay): compiled with a rows hint
# past 2048, as norm_mlir.torch builds a call of that many rows. Aligned
# rows and not (offset, strided: the element path), 129 chunks (most
# lanes' second chunk past N), 255 f32 chunks (one lane's), f16, f32, dx
# written into dy.
TWO_CHUNK_CASES = ((("layer_norm_grad", 2048, "bf16", 8193), 8200, "contig"),
                   (("layer_norm_grad", 2048, "bf16", 2049), 2051, "offset"),
                   (("rms_norm_grad", 1152, "bf16", 8193), 8193, "strided"),
                   (("layer_norm_grad", 1032, "bf16", 2049), 4097, "contig"),
                   (("rms_norm_grad", 1536, "f16", 2049), 3000, "contig"),
                   (("layer_norm_grad", 1024, "f32", 8193), 8199, "contig"),
                   (("rms_norm_grad", 1020, "f32", 2049), 2500, "dx=dy"),
                   # The ring (async-rows) in one body for aligned rows and
                   # not (RowLayouts::Vector): rows not 16-byte aligned
                   # take the statistics from global memory (nothing was
                   # copied ahead), at one chunk (two rows of 96 / 128
                   # lanes), two chunks, and f32.
                   (("layer_norm_grad", 768, "bf16", 8193), 8195, "offset"),
                   (("rms_norm_grad", 768, "bf16", 513), 1000, "offset"),
                   (("layer_norm_grad", 512, "bf16", 513), 777, "offset"),
                   (("rms_norm_grad", 1536, "bf16", 8193), 8193, "offset"),
                   (("layer_norm_grad", 256, "f32", 8193), 9000, "offset"),
                   (("rms_norm_grad", 2048, "f32", 513), 600, "offset"))


def _two_chunk_cases():
    return [Case(Cfg(op, n, dt, rows=r), m,
                 "contig" if layout == "dx=dy" else layout,
                 inplace=layout == "dx=dy")
            for (op, n, dt, r), m, layout in TWO_CHUNK_CASES]


def _hold_cases():
    return [Case(Cfg(op, n, dt, hc=1, **kw), m, layout)
            for (op, n, dt, kw), m, layout in HOLD_CASES]


def _tuned_cases():
    cases = []
    for op, dt, n, m in TUNED_CASES:
        c = grid_cfg(op, n, dt, dt, m)
        if c.rows:
            cases.append(Case(c, m))
    return cases


def check_cases(subset="full"):
    """The GPU correctness cases: subset is "full", "quick", "sanitizer"
    (16 small cases) or "rows" (one case per configuration of "full", for
    racecheck: see rows_matrix)."""
    cases = []
    if subset == "full":
        for op in GRAD_OPS:
            for dt in DTYPES:
                for st in STRATEGIES:
                    cases += _grad_base_cases(op, dt, st)
                for st in (STRATEGIES if dt == "bf16" else ("deterministic",)):
                    cases += _grad_feature_cases(op, dt, st)
        for op in FWD_OPS:
            for dt in DTYPES:
                cases += _fwd_cases(op, dt)
        cases += (_tuned_cases() + _prefetch_cases() + _pv_cases() +
                  _pipe_cases() + _fwd_cluster_cases() + _hold_cases() +
                  _two_chunk_cases())
    elif subset == "quick":
        for op in GRAD_OPS:
            for dt in DTYPES:
                for st in STRATEGIES:
                    cases.append(Case(Cfg(op, 4096, dt, strategy=st), 2061))
            cases += [c for c in _grad_base_cases(op, "bf16", "deterministic")
                      if c.cfg.n != 4096 or c.m == 1 or c.inplace]
            cases += _grad_feature_cases(op, "bf16", "deterministic")
        for op in FWD_OPS:
            for dt in ("f32", "bf16"):
                cases += [Case(Cfg(op, 4096, dt, xhat=True), 2061, "strided"),
                          Case(Cfg(op, 24, dt, xhat=True), 401408),
                          Case(Cfg(op, 4095, dt, xhat=True), 777, "offset")]
    elif subset == "sanitizer":
        # Small shapes: compute-sanitizer slows every launch a lot.
        L, R = "layer_norm_grad", "rms_norm_grad"
        for st in STRATEGIES:
            cases.append(Case(Cfg(L, 4096, "bf16", strategy=st), 67))
        cases += [
            Case(Cfg(R, 4096, "f32"), 67),
            Case(Cfg(R, 4096, "bf16", strategy="locked"), 67),
            Case(Cfg(L, 24, "bf16"), 1000),
            Case(Cfg(L, 24, "f32", strategy="atomic"), 1000),
            Case(Cfg(L, 4095, "f16"), 33, "offset"),
            Case(Cfg(L, 65536, "bf16"), 3),
            Case(Cfg(L, 1, "f32"), 100),
            Case(Cfg(L, 4096, "bf16"), 1),
            Case(Cfg(L, 4096, "bf16", dres=True), 67, "strided", inplace=True),
            Case(Cfg("layer_norm", 4095, "bf16", xhat=True), 33, "offset"),
            Case(Cfg("rms_norm", 24, "bf16", xhat=True), 1000),
            Case(Cfg("layer_norm", 65536, "f32"), 3),
        ]
    elif subset == "rows":
        cases = rows_matrix()
    else:
        raise ValueError("unknown subset " + subset)
    return cases


# ------------------------------------------------- the sanitizer matrices
#
# gpu_check.py --sanitizer full: check_cases("full") as it is (memcheck,
# initcheck). --sanitizer rows: one case per configuration of the full
# matrix (racecheck), its row count then set by rows_for_racecheck from the
# kernels' geometry in configs.json.

def _rows_rank(case):
    """Which case of a configuration the rows matrix keeps: dx over dy, then
    a strided/offset layout, then the most rows."""
    return (case.inplace, case.layout != "contig", case.m)


def rows_matrix():
    """One case per configuration of the full matrix (first-appearance
    order of the configurations)."""
    keep = {}
    for c in check_cases("full"):
        prev = keep.get(c.cfg.name)
        if prev is None or _rows_rank(c) > _rows_rank(prev):
            keep[c.cfg.name] = c
    return list(keep.values())


def group_cap(n):
    """groupCap of include/norm/Support/Groups.h: the largest of 128, 256,
    512 with G * N within 3 x 2^20 (at least 128)."""
    per = (3 << 20) // max(n, 1)
    return 512 if per >= 512 else 256 if per >= 256 else 128


def default_groups(m, n):
    """G of include/norm/Support/Groups.h (docs/Lowering.md):
    max(1, min(cap(N), max(ceil(M / r(N)), min(M, 128)))), r(N) =
    ceil(4096 / N); at most 64 where 3 x 2^20 / N <= 128 and 128 < M <=
    512."""
    r = -(-4096 // max(n, 1))
    g = min(group_cap(n), max(-(-m // r), min(m, 128)))
    # Wide rows, few of them: 64 programs (kWidePrograms).
    if (3 << 20) // max(n, 1) <= 128 and 128 < m <= 8 * 64:
        g = min(g, 64)
    return max(1, g)


def rows_for_racecheck(cfg, m, kernels):
    """The row count racecheck runs a configuration with.

    racecheck only sees shared-memory hazards, inside a block: what matters
    is that every program runs its row loop at least twice, the last
    iteration partial (a missing barrier between iterations), and that
    there is a partial block, not how many rows there are. `kernels`: the
    configuration's kernels from configs.json (their "rows" per
    iteration). Grad ops: program p owns rows [p*R, (p+1)*R), R = ceil(M/G);
    with T rows per iteration, M = G_cap*(2T+1) - T gives R = 2T+1 (three
    iterations, the last of one row) and a last program of T+1 rows. Forward
    ops (one block per T rows, no loop): min(m, max(203, 3T + T/2 + 1)).
    """
    t = max([k.get("rows", 1) for k in kernels
             if k.get("kind") in ("dx", "forward")] or [1])
    if not cfg.grad:
        return min(m, max(203, 3 * t + t // 2 + 1))
    cap = default_groups(1 << 62, cfg.n)
    return cap * (2 * t + 1) - t


def spread_order(cases):
    """Cases reordered so that a run cut short by its time budget has still
    covered every (op, dtype, strategy) group about equally: round-robin
    over the groups, each group's cases in their order; the cases of one
    configuration stay together."""
    groups, order = {}, []
    for c in cases:
        key = (c.cfg.op, c.cfg.dtype, c.cfg.strat if c.cfg.grad else "")
        if key not in groups:
            groups[key] = []
            order.append(key)
        g = groups[key]
        if g and g[-1][0].cfg.name == c.cfg.name:
            g[-1].append(c)
        else:
            g.append([c])
    out, i = [], 0
    while any(i < len(groups[k]) for k in order):
        for k in order:
            if i < len(groups[k]):
                out.extend(groups[k][i])
        i += 1
    return out


# ------------------------------------------------------- the NaN/Inf check

NAN_OPS = GRAD_OPS
NAN_DTYPES = ("bf16", "f32")
NAN_STRATEGIES = ("deterministic", "atomic")
NAN_ROWS = ((24, 1031), (4096, 67), (65536, 19), (4095, 67))  # (N, M)


def nan_cfgs():
    """The configurations bench/nan_check.py runs."""
    return [Cfg(op, n, dt, strategy=st) for op in NAN_OPS for dt in NAN_DTYPES
            for st in NAN_STRATEGIES for (n, _) in NAN_ROWS]


# The configuration the error-path checks use.
ERROR_PATH_CFG = Cfg("layer_norm_grad", 4096, "bf16", wdtype="f32")


# ------------------------------------------------------------ the benchmark

BENCH_SHAPES = ((16384, 4096), (4096, 8192), (401408, 24), (1024, 65536))
BENCH_DTYPES = ("bf16", "f32")
BENCH_STRATEGIES = ("deterministic", "grouped_atomic")


def bench_shapes():
    """(op, dtype, M, N) rows of the benchmark, weight dtype = x dtype."""
    # bf16 first: if the time budget cuts torch.compile rows, it cuts f32.
    return [(op, dt, m, n) for dt in BENCH_DTYPES for op in GRAD_OPS
            for (m, n) in BENCH_SHAPES]


def bench_cfgs():
    return [Cfg(op, n, dt, strategy=st) for (op, dt, m, n) in bench_shapes()
            for st in BENCH_STRATEGIES]


# ------------------------------------------------------ the N sweep (issue 9)
#
# bench/sweep.py: every power of two from 1 to 262144, and between them at
# least as many sizes that are not (odd, 3/5/7 * 2^k, primes and near
# powers), each at M moving about 1 GiB; M = 1 and M = 64 (fewer rows than
# the H200's 132 SMs) at a few N.
SWEEP_POW2 = tuple(1 << k for k in range(19))  # 1 .. 262144
SWEEP_OTHER = (3, 24, 100, 127, 384, 640, 1000, 1536, 2047, 2560, 3584,
               4095, 5120, 6144, 7168, 10000, 12288, 14336, 20480, 24576,
               49152, 65537, 100003, 196608)
SWEEP_N = tuple(sorted(SWEEP_POW2 + SWEEP_OTHER))
SWEEP_SMALL_M = (1, 64)
SWEEP_SMALL_M_N = (128, 1024, 4096, 8192, 65536)
SWEEP_DTYPES = ("bf16",)


def sweep_m(op, n, dt, target_bytes=1 << 30):
    """Rows so that the case moves about target_bytes: dy, x read and dx
    written (3 N elements per row; the forward: x read, y written, 2 N)
    plus the row's f32 statistics."""
    size = {"f32": 4, "f16": 2, "bf16": 2}[dt]
    per_row = (3 if op.endswith("_grad") else 2) * n * size + 4 * (
        2 if op.startswith("layer") else 1)
    return max(1, int(round(target_bytes / per_row)))


# bench/variants.py: the row kernel under other pass options (threads per
# block, per-lane register budget), ours only, to choose the cost model's
# constants from measurements rather than guesses.
# The cluster regime (sm_90) against the same op with no row split
# (cluster=1, the geometry before it), at N it takes that no benchmark or
# earlier variant run had (the choice was made on 5120-65536 of the sweep).
# N that no choice of the cost model was made on, for checking a choice
# there (bench/sweep.py --only-n; gpu-run SWEEP_ONLY_N): the 40 KB
# partial-row budget at LayerNorm 4600 and RMSNorm 9000 (bf16 partial rows
# of 36.8 and 36 KB), the looped regime's batches at 90001 (odd), 150000,
# 300000.
UNTUNED_N = (4600, 9000, 90001, 150000, 300000)
# Odd N whose LayerNorm backward keeps its partial rows in dynamic shared
# memory (none is a choice the rule was measured on).
UNTUNED_DYNAMIC_N = (6143, 8191, 9999)

# The backward's variants: none at the moment. (Earlier runs, in
# bench/RESULTS.md: the looped regime's batches against one row at a time,
# batch-rows=1, at the untuned 90001/150000/300000; the batch size B = 1
# to 8 at N = 65537-262144; max-lanes=32 at N = 384-1024.)
VARIANT_N = ()
# (threads, max-register-elements, cluster, batch-rows, max-lanes); 0: the
# default.
VARIANT_OPTIONS = ()


# The forward's lane rule (kForwardShareChunks) at (N, dtype) it was not
# chosen on (bf16 N = 128-1536 and the bf16 sweep were): each against
# max-lanes=1024, which skips the rule (one chunk a lane, the geometry
# before it). f32 was never measured. (The run the rule came from, bf16
# max-lanes 8-64 at N = 128-1536: bench/RESULTS.md.)
VARIANT_FWD = ((200, "bf16"), (768, "bf16"), (3000, "bf16"),
               (4600, "bf16"), (200, "f32"), (768, "f32"), (1024, "f32"),
               (3000, "f32"), (4096, "f32"))
VARIANT_FWD_LANES = (1024,)


def variant_cfgs():
    cfgs = [Cfg(op, n, "bf16", threads=t, mre=r, cluster=c, batch=bt,
                lanes=ln)
            for n in VARIANT_N for op in GRAD_OPS
            for (t, r, c, bt, ln) in VARIANT_OPTIONS]
    cfgs += [Cfg(op, n, dt, lanes=ln) for (n, dt) in VARIANT_FWD
             for op in FWD_OPS for ln in VARIANT_FWD_LANES]
    return cfgs


def sweep_cfgs():
    """The backward and the forward (y, mean, rstd; no xhat) at every N."""
    return [Cfg(op, n, dt) for dt in SWEEP_DTYPES
            for n in SWEEP_N + UNTUNED_N for op in GRAD_OPS + FWD_OPS] + [
        Cfg(op, n, dt) for dt in SWEEP_DTYPES for n in UNTUNED_DYNAMIC_N
        for op in GRAD_OPS]


# ------------------------------------------------ the grid (issue 21, item 1)
#
# bench/grid.py: ours against every peer over M x N, forward and backward,
# LayerNorm and RMSNorm. Our kernels depend only on (op, N, dtypes) (M is a
# runtime argument), so the grid's configurations are GRID_N (and the
# subsets') x ops x dtype pairs. Not in the default compile list (gpu-prepare
# adds them with GRID=1, i.e. NORM_CONFIG_SETS=grid): the default run's
# preparation and carried size stay as they were.
GRID_M = (1, 8, 64, 256, 1024, 2048, 4096, 8192, 16384, 65536, 262144)
GRID_N = (24, 64, 96, 128, 320, 512, 768, 1000, 1024, 2048, 2560, 3072,
          4095, 4096, 5120, 6144, 7168, 8192, 12288, 14336, 16384, 32768,
          49152, 65536, 131072, 262144)
# The subset for f16, f32 and an f32 weight with bf16 x.
GRID_SUB_M = (1, 256, 4096, 16384, 65536)
GRID_SUB_N = (64, 768, 1024, 2048, 4096, 8192, 16384, 65536)
# (x dtype, weight dtype, N list, M list); "max" (the largest M whose x
# stays within GRID_TENSOR_BYTES) is added to every M list.
GRID_DTYPES = (("bf16", "bf16", GRID_N, GRID_M),
               ("f16", "f16", GRID_SUB_N, GRID_SUB_M),
               ("f32", "f32", GRID_SUB_N, GRID_SUB_M),
               ("bf16", "f32", GRID_SUB_N, GRID_SUB_M))
GRID_OPS = GRAD_OPS + FWD_OPS
GRID_TENSOR_BYTES = 4 << 30  # no point with an [M, N] tensor above this


def grid_max_m(n, dt, limit=GRID_TENSOR_BYTES):
    """The largest M whose [M, N] tensor of dtype dt fits in limit."""
    return max(1, limit // (n * {"f32": 4, "f16": 2, "bf16": 2}[dt]))


def grid_points(ops=GRID_OPS, dtypes=None):
    """(op, dtype, wdtype, M, N, m_label) of the grid, grouped by (dtype
    pair, op, N) with M ascending; points whose [M, N] tensor is above
    GRID_TENSOR_BYTES are left out, and "max" where it equals a listed M."""
    pts = []
    for dt, wdt, ns, ms in GRID_DTYPES:
        pair = dt if wdt == dt else "%s/w%s" % (dt, wdt)
        if dtypes and pair not in dtypes:  # "bf16" is bf16 x and weight
            continue
        for op in ops:
            for n in ns:
                top = grid_max_m(n, dt)
                seen = set()
                for m, label in [(m, str(m)) for m in ms] + [(top, "max")]:
                    if m > top or m in seen:
                        continue
                    seen.add(m)
                    pts.append((op, dt, wdt, m, n, label))
    return pts


TUNING_TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                            "..", "lib", "Conversion", "NormToGPU", "tuning",
                            "sm_90.json")
_tuning = None


def tuning_entry(op, n, dt, wdt, m, table=None):
    """The sm_90 tuning table's entry that serves (op, N, dtypes) at M rows
    (findTuning in Tuning.cpp), or None where none does."""
    global _tuning
    if table is None:
        if _tuning is None:
            try:
                with open(TUNING_TABLE) as f:
                    _tuning = json.load(f).get("entries", [])
            except OSError:
                _tuning = []
        table = _tuning
    grad = op.endswith("_grad")
    size = {"f32": 4, "f16": 2, "bf16": 2}
    ebytes = min(size[dt], size[wdt or dt])
    prows = (2 if op.startswith("layer") else 1) if grad else 0
    for e in table:
        if (e["kernel"] == "forward") == grad:
            continue
        if e.get("element_bytes", 2) != ebytes:
            continue
        if grad and e.get("partial_rows", 0) not in (0, prows):
            continue
        if not grad and e.get("row_sums", 0) not in (
                0, 2 if op.startswith("layer") else 1):
            continue
        nlo, nhi = e["n"]
        if n < nlo or (nhi and n > nhi):
            continue
        rlo, rhi = e.get("rows", [1, 0])
        if m < rlo or (rhi and m > rhi):
            continue
        return e
    return None


def tuned_rows(op, n, dt, wdt, m, table=None):
    """The first row count of the sm_90 tuning table's entry that serves
    (op, N, dtypes) at M rows, or 0 where none does: a configuration
    compiled with --rows=that gets the entry's geometry, and is the same
    for every M of the entry's range."""
    e = tuning_entry(op, n, dt, wdt, m, table)
    return e.get("rows", [1, 0])[0] if e else 0


ROW_EDGES = (128, 512, 2048, 8192)  # Tuning.h kTuningRowEdges


def bucket_rows(m):
    """The first M of m's bucket of the tuning table's row edges (1, 129,
    513, 2049 or 8193): the `rows` hint norm_mlir.torch compiles a call of
    M rows with."""
    lo = 1
    for e in ROW_EDGES:
        if m <= e:
            return lo
        lo = e + 1
    return lo


def grid_cfg(op, n, dt, wdt, m):
    """Our configuration for a grid point, as norm_mlir.torch builds it for
    M rows: compiled with the first M of M's bucket as the rows hint (the
    tuning table's entry for that bucket where one stands, else the cost
    model's choices for it, such as holding the column vectors)."""
    return Cfg(op, n, dt, wdtype=wdt if wdt != dt else "",
               rows=bucket_rows(m))


def grid_cfgs():
    """Our configuration for every point of the grid."""
    seen = {}
    for op, dt, wdt, m, n, _ in grid_points():
        c = grid_cfg(op, n, dt, wdt, m)
        seen.setdefault(c.name, c)
    return list(seen.values())


# Named sets beside the default list: NORM_CONFIG_SETS (comma-separated)
# adds them to all_cfgs(), hence to `configs.py jobs` (what
# compile-configs.sh compiles) and to `configs.py index`.
CONFIG_SETS = {"grid": grid_cfgs}


def extra_sets():
    names = [s for s in os.environ.get("NORM_CONFIG_SETS", "").replace(
        ",", " ").split() if s]
    for s in names:
        if s not in CONFIG_SETS:
            raise SystemExit("configs.py: unknown NORM_CONFIG_SETS entry %r "
                             "(known: %s)" % (s, ", ".join(CONFIG_SETS)))
    return names


# ------------------------------------------------------------ compile list

def all_cfgs():
    seen = {}
    for subset in ("full", "quick", "sanitizer"):
        for c in check_cases(subset):
            seen.setdefault(c.cfg.name, c.cfg)
    seen.setdefault(ERROR_PATH_CFG.name, ERROR_PATH_CFG)
    for c in nan_cfgs():
        seen.setdefault(c.name, c)
    for c in bench_cfgs():
        seen.setdefault(c.name, c)
    for c in sweep_cfgs() + variant_cfgs():
        seen.setdefault(c.name, c)
    # bench/variants.py measures each variant against the default options.
    for c in variant_cfgs():
        d = Cfg(c.op, c.n, c.dtype)
        seen.setdefault(d.name, d)
    for s in extra_sets():
        for c in CONFIG_SETS[s]():
            seen.setdefault(c.name, c)
    return list(seen.values())


def default_gpu_dir():
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                        ".dev", "gpu")


def image_paths(gpu_dir, entry, image="auto"):
    """The kernel images to try, in order: the cubin (when there is one and
    image is auto or cubin), then the PTX (unless image is cubin)."""
    paths = []
    if image in ("auto", "cubin") and entry.get("cubin"):
        paths.append(os.path.join(gpu_dir, entry["cubin"]))
    if image in ("auto", "ptx"):
        paths.append(os.path.join(gpu_dir, entry["ptx"]))
    return paths


def load_index(gpu_dir):
    path = os.path.join(gpu_dir, "configs.json")
    with open(path) as f:
        return json.load(f)


# ----------------------------------------------------------------- ptxas -v

_RES_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
_RES_REGS = re.compile(r"Used (\d+) registers")
_RES_SMEM = re.compile(r"(\d+) bytes smem")
_RES_STACK = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, "
                        r"(\d+) bytes spill loads")


def parse_ptxas(text):
    """{kernel: {registers, smem, stack, spill_stores, spill_loads}}."""
    out, cur = {}, None
    for line in text.splitlines():
        m = _RES_ENTRY.search(line)
        if m:
            cur = out.setdefault(m.group(1), {})
            continue
        if cur is None:
            continue
        m = _RES_STACK.search(line)
        if m:
            cur["stack"], cur["spill_stores"], cur["spill_loads"] = map(
                int, m.groups())
        m = _RES_REGS.search(line)
        if m:
            cur["registers"] = int(m.group(1))
            s = _RES_SMEM.search(line)
            cur["smem"] = int(s.group(1)) if s else 0
    return out


# --------------------------------------------------------------------- CLI

def cmd_jobs(args):
    for c in all_cfgs():
        print("\t".join([c.name] + c.flags()))


def cmd_grid(args):
    for c in grid_cfgs():
        print("\t".join([c.name] + c.flags()))


def cmd_index(args):
    gpu_dir = args.dir
    kdir = os.path.join(gpu_dir, "kernels")
    configs, failed, total = {}, {}, 0
    res_lines = []
    for c in sorted(all_cfgs(), key=lambda c: c.name):
        ptx = os.path.join(kdir, c.name + ".ptx")
        man = os.path.join(kdir, c.name + ".json")
        err = os.path.join(kdir, c.name + ".err")
        if not (os.path.isfile(ptx) and os.path.isfile(man)):
            msg = ""
            if os.path.isfile(err):
                with open(err) as f:
                    msg = f.read().strip()
            failed[c.name] = {"flags": c.flags(), "error": msg or "no output"}
            continue
        with open(man) as f:
            manifest = json.load(f)
        entry = {
            "flags": c.flags(),
            "ptx": "kernels/%s.ptx" % c.name,
            "manifest": "kernels/%s.json" % c.name,
            "ptx_bytes": os.path.getsize(ptx),
            "kernels": [{k: v for k, v in kern.items() if k != "params"}
                        for kern in manifest.get("kernels", [])],
        }
        cubin = os.path.join(kdir, c.name + ".cubin")
        if os.path.isfile(cubin):
            entry["cubin"] = "kernels/%s.cubin" % c.name
            entry["cubin_bytes"] = os.path.getsize(cubin)
        total += entry["ptx_bytes"]
        if args.resources:
            rpath = os.path.join(args.resources, c.name + ".txt")
            if os.path.isfile(rpath):
                with open(rpath) as f:
                    text = f.read()
                res = parse_ptxas(text)
                entry["resources"] = res
                if not res:
                    entry["resources_error"] = text.strip()[-500:]
                for kname, r in sorted(res.items()):
                    flag = ""
                    if r.get("spill_stores") or r.get("spill_loads") or \
                            r.get("stack"):
                        flag = "   <-- stack/spills"
                    res_lines.append(
                        "%-62s %-24s regs %3s smem %6s stack %5s spill st/ld "
                        "%s/%s%s" % (c.name, kname, r.get("registers"),
                                     r.get("smem"), r.get("stack"),
                                     r.get("spill_stores"),
                                     r.get("spill_loads"), flag))
        configs[c.name] = entry
    rev, dirty = "", ""
    here = os.path.dirname(os.path.abspath(__file__))
    try:  # read-only git queries: which commit the kernels come from
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True,
                             cwd=here).stdout.strip()
        st = subprocess.run(["git", "status", "--porcelain",
                             "--untracked-files=no"], capture_output=True,
                            text=True, cwd=here).stdout
        dirty = len([l for l in st.splitlines() if l.strip()])
    except OSError:
        pass
    index = {
        "format_version": 1,
        "generated_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "git_head": rev,
        "git_dirty": dirty,
        "runtime": "libnormrt.so" if os.path.isfile(
            os.path.join(gpu_dir, "libnormrt.so")) else None,
        "eps": EPS,
        "configs": configs,
        "failed": failed,
    }
    with open(os.path.join(gpu_dir, "configs.json"), "w") as f:
        json.dump(index, f, indent=1, sort_keys=True)
        f.write("\n")
    if res_lines:
        with open(os.path.join(gpu_dir, "resources.txt"), "w") as f:
            f.write("# ptxas -v -arch=sm_90 per kernel (registers, shared "
                    "memory, stack, spills)\n")
            f.write("\n".join(res_lines) + "\n")
    print("configs.json: %d configurations, %d failed, %.1f MiB of PTX"
          % (len(configs), len(failed), total / 2**20))
    for name, f in sorted(failed.items()):
        print("  FAILED %s (%s): %s" % (name, " ".join(f["flags"]),
                                        f["error"].splitlines()[0]
                                        if f["error"] else ""))
    return 1 if failed else 0


def cmd_list(args):
    cases = check_cases(args.subset)
    for c in cases:
        print(c.name)
    print("%d cases over %d configurations" %
          (len(cases), len({c.cfg.name for c in cases})), file=sys.stderr)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("jobs", help="print 'name<TAB>flags...' per configuration")
    pi = sub.add_parser("index", help="write <dir>/configs.json")
    pi.add_argument("--dir", default=default_gpu_dir())
    pi.add_argument("--resources", default="",
                    help="folder of <name>.txt ptxas -v outputs")
    sub.add_parser("grid", help="print 'name<TAB>flags...' per "
                   "configuration of the grid (bench/grid.py)")
    pl = sub.add_parser("cases", help="list the check cases")
    pl.add_argument("--subset", default="full",
                    choices=("full", "quick", "sanitizer", "rows"))
    args = p.parse_args()
    return {"jobs": cmd_jobs, "index": cmd_index, "cases": cmd_list,
            "grid": cmd_grid}[args.cmd](args) or 0


if __name__ == "__main__":
    sys.exit(main())
