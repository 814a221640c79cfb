#!/usr/bin/env python3
"""Time candidate geometries of our row kernels at given (M, N): the tuner.

Ours only. A plan is a list of points (op, dtype, N, M) and, per (op,
dtype, N), candidate configurations: norm-compile specs that differ from
the default by geometry options (cluster, threads) or by a fixed G
(groups). On the build machine `prepare` compiles every candidate into
DIR/kernels and writes DIR/configs.json (the index bench/configs.py
writes for .dev/gpu); on the H200 `run` times every candidate at every
point of the plan (triton's do_bench, median, L2 flushed, fresh random
inputs a point), checks each candidate's dweight/dbias bitwise against the
default configuration's where both have the same G (a geometry that keeps
the order of the sums must give the same bits), and writes DIR/tune.json
and a table (tune.md) printed last.

  python3 bench/tune.py prepare [--plan explore] [--dir .dev/tune]
  python3 bench/tune.py run [--plan explore] [--dir .dev/tune] [--out DIR]
                            [--deadline EPOCH]
  python3 bench/tune.py table tune.json... [--supersede tune.json...]
      (plans table, table-f32, table-fwd...: writes the chip family's
      table, lib/Conversion/NormToGPU/tuning/sm_90.json; a superseding
      run's points drop every earlier run's rows there)
  python3 bench/tune.py check-table   (every entry of the table compiled
      at its ranges' ends and middle: after `table`, before a GPU)
  python3 bench/tune.py compare before.json after.json   (one plan run
      twice, e.g. kernels before and after a compiler change: after /
      before of every candidate in both)

Standard library only on the build machine; torch and triton on the GPU.
"""

import argparse
import dataclasses
import json
import math
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import configs as C  # noqa: E402

TENSOR_LIMIT = 1 << 30  # bytes of one [M, N] tensor at most


def out(*a):
    print(*a, flush=True)


# ------------------------------------------------------------------- plans
#
# "explore": where the grid of issue 21 found us slow with few rows per SM
# (M up to a few thousand, N from 1024 up): the default against a row split
# over a cluster of 2, 4 or 8 blocks, and against more programs (G).

EXPLORE_N = (1024, 3072, 5120, 8192, 16384, 32768, 65536, 262144)
EXPLORE_M = (64, 256, 1024, 2048, 4096, 16384)
EXPLORE_CLUSTERS = (2, 4, 8)
EXPLORE_GROUPS = (256, 512, 1024)


def explore_plan():
    points, cands = [], {}
    for op in C.GRAD_OPS:
        for n in EXPLORE_N:
            key = (op, "bf16", n)
            cs = [C.Cfg(op, n, "bf16")]
            cs += [C.Cfg(op, n, "bf16", cluster=c) for c in EXPLORE_CLUSTERS]
            cs += [C.Cfg(op, n, "bf16", groups=g) for g in EXPLORE_GROUPS]
            cands[key] = cs
            for m in EXPLORE_M:
                if m * n * 2 <= TENSOR_LIMIT:
                    points.append((op, "bf16", n, m))
    return points, cands


# "table": what the tuning table is made from (bench/tune.py table): bf16,
# both backward ops, the cost model against the geometry knobs a table
# entry may give (threads, cluster); G is the default's at every point.
TABLE_N = (1024, 2048, 3072, 4096, 5120, 6144, 8192, 12288, 16384, 24576,
           32768, 65536, 131072, 262144)
TABLE_M = (64, 256, 1024, 4096, 16384)
# (threads, cluster, max-lanes): 0 the cost model's.
TABLE_KNOBS = ((0, 2, 0), (0, 4, 0), (0, 8, 0), (128, 0, 0), (256, 0, 0),
               (512, 0, 0), (256, 4, 0), (256, 8, 0), (512, 2, 0),
               (512, 4, 0))


def table_plan(dtypes=("bf16",), ops=C.GRAD_OPS, ns=TABLE_N,
               knobs=TABLE_KNOBS, ms=TABLE_M,
               fields=("threads", "cluster", "lanes"), limit=TENSOR_LIMIT):
    """The default against each knob tuple (values of Cfg `fields`) at
    every (op, dtype, N) and M of ms within the tensor limit (bytes of
    one [M, N] tensor; TENSOR_LIMIT unless the plan says)."""
    points, cands = [], {}
    for dt in dtypes:
        size = {"f32": 4, "f16": 2, "bf16": 2}[dt]
        for op in ops:
            for n in ns:
                cands[(op, dt, n)] = [C.Cfg(op, n, dt)] + [
                    C.Cfg(op, n, dt, **dict(zip(fields, k))) for k in knobs]
                for m in ms:
                    if m * n * size <= limit:
                        points.append((op, dt, n, m))
    return points, cands


# The forward's knobs: threads and max-lanes (no cluster split).
TABLE_FWD_N = (64, 128, 320, 768, 1024, 2048, 4096, 8192, 16384, 32768,
               65536)
TABLE_FWD_KNOBS = ((128, 0, 0), (512, 0, 0), (0, 0, 8), (0, 0, 32),
                   (0, 0, 128), (0, 0, 1024))
# More N between those of the first table run, where the cost model's regime
# changes (cluster splits, the register estimate's steps) and a range between
# two measured N was too wide (bench/RESULTS.md: N = 14336).
TABLE_N_MORE = (10240, 14336, 20480, 49152, 98304)
TABLE_PLANS = {
    "table": lambda: table_plan(),
    "table-more": lambda: table_plan(ns=TABLE_N_MORE),
    "table-f32": lambda: table_plan(dtypes=("f32",)),
    "table-fwd": lambda: table_plan(dtypes=("bf16", "f32"), ops=C.FWD_OPS,
                                    ns=TABLE_FWD_N, knobs=TABLE_FWD_KNOBS),
}


# "grid": the check on shapes the table was not tuned on: every bf16 and
# f32 point of the grid (bench/grid.py; 1 GiB a tensor at most), the
# M-agnostic configuration against the one the grid takes for M (the
# table's, configs.grid_cfg) where they differ.
def grid_plan():
    points, cands = [], {}
    for op, dt, wdt, m, n, _ in C.grid_points(dtypes=["bf16", "f32"]):
        if m * n * {"f32": 4, "f16": 2, "bf16": 2}[dt] > TENSOR_LIMIT:
            continue
        points.append((op, dt, n, m))
        cs = cands.setdefault((op, dt, n), [C.Cfg(op, n, dt)])
        c = C.grid_cfg(op, n, dt, wdt, m)
        if c not in cs:
            cs.append(c)
    return points, cands


def grid_cfgs_plan(dtypes=("bf16",)):
    """No points: the grid's configurations of these dtypes, compiled for
    bench/grid.py --gpu-dir (a lighter preparation than gpu-prepare's)."""
    return [], {("grid", "", 0): [
        c for c in C.grid_cfgs() if c.dtype in dtypes]}


# "groups": G against the cost model's where rows are wide and programs
# few (G is capped at 128 for N = 16384, fewer programs than the H200 has
# SMs): a fixed G of 256 or 512 under the default geometry and under the
# table's knobs that change the rows in flight an SM. G is no table knob
# (dweight/dbias bits), so a win here moves default_groups for every chip.
GROUPS_N = (3072, 8192, 16384, 32768, 65536)
GROUPS_M = (1024, 4096, 16384)
GROUPS_G = (256, 512)
GROUPS_KNOBS = ((0, 0), (512, 0), (0, 2), (512, 2))


def groups_plan():
    points, cands = [], {}
    for op in C.GRAD_OPS:
        for n in GROUPS_N:
            cs = [C.Cfg(op, n, "bf16")]
            cs += [C.Cfg(op, n, "bf16", threads=t, cluster=c)
                   for t, c in GROUPS_KNOBS[1:]]
            cs += [C.Cfg(op, n, "bf16", groups=g, threads=t, cluster=c)
                   for g in GROUPS_G for t, c in GROUPS_KNOBS]
            cands[(op, "bf16", n)] = cs
            for m in GROUPS_M:
                if m * n * 2 <= TENSOR_LIMIT:
                    points.append((op, "bf16", n, m))
    return points, cands


# "fma": the explicit multiply-adds (norm-fuse-multiply-add, off by
# default) against the default kernels, both ops, forward and backward,
# bf16 and f32, where they trade instructions for registers (N = 256-4600
# cross an occupancy step) and where the backward is issue-bound (wide N,
# large M). A win everywhere makes it the pipeline's default; dweight/dbias
# bits differ between the two by construction (not compared).
FMA_N = (256, 1024, 3072, 4600, 8192, 16384, 65536)
FMA_M = (1024, 16384)


def fma_plan():
    points, cands = [], {}
    for dt in ("bf16", "f32"):
        size = {"f32": 4, "bf16": 2}[dt]
        for op in C.GRAD_OPS + C.FWD_OPS:
            for n in FMA_N:
                cands[(op, dt, n)] = [C.Cfg(op, n, dt),
                                      C.Cfg(op, n, dt, fma=True)]
                for m in FMA_M:
                    if m * n * size <= TENSOR_LIMIT:
                        points.append((op, dt, n, m))
    return points, cands


# "wide": rows few and very wide, where one looped block walks the whole
# row (bf16 N = 262144: 116-400 us for 1.5 MB at M = 1): the default
# against the row split over a cluster in registers (cluster 8, which
# spills there) and the looped row split over a cluster (the cluster knob
# with max-register-elements 32, below the slice's share: the only way to
# ask for it until it is timed).
WIDE_N = (131072, 196608, 262144)
WIDE_M = (1, 8, 64, 256, 1024)
WIDE_KNOBS = ((0, 8, 0), (0, 8, 32), (0, 4, 32), (256, 8, 32),
              (0, 2, 32))


def wide_plan():
    return table_plan(dtypes=("bf16", "f32"), ns=WIDE_N, knobs=WIDE_KNOBS,
                      ms=WIDE_M, fields=("threads", "cluster", "mre"))


# "prefetch": the rows prefetched into L2 one or two waves ahead
# (cp.async.bulk.prefetch; no result bit changes, so a table knob) against
# the default, alone and with the table's knobs that change the bytes in
# flight an SM (512 threads, a cluster of 2), both backward ops, bf16 and
# f32, where the backward is furthest from copy: large M, N = 1024-65536
# (the register regime and its one row in flight a block), and the looped
# regime at N = 131072-262144.
PREFETCH_N = (1024, 3072, 4096, 8192, 16384, 32768, 65536, 131072, 262144)
PREFETCH_M = (1024, 4096, 16384)
PREFETCH_KNOBS = ((0, 0, 1), (0, 0, 2), (512, 0, 1), (0, 2, 1), (512, 0, 0),
                  (0, 2, 0))


def prefetch_plan():
    return table_plan(dtypes=("bf16", "f32"), ns=PREFETCH_N,
                      knobs=PREFETCH_KNOBS, ms=PREFETCH_M,
                      fields=("threads", "cluster", "prefetch"))


# "pvec": the shared partial sums grouped W = 2 or 4 a lane (geometry
# partial_vector: a quarter of the shared accesses at 4, and more live
# registers, which cost an occupancy step at some N: no rule, so a table
# knob) against the default, alone and with the knobs the prefetch plan
# found (prefetch 1, 512 threads), both backward ops, bf16 and f32, where
# the partial rows are in shared memory (one row in flight, N up to the
# dynamic budget). Candidates whose partials are elsewhere do not compile
# (the option is refused there) and are left out.
PVEC_N = (1024, 2048, 3072, 4096, 5120, 8192, 12288, 16384)
PVEC_M = (1024, 4096, 16384)
PVEC_KNOBS = ((0, 0, 0, 4), (0, 0, 0, 2), (0, 0, 1, 4), (0, 0, 1, 0),
              (512, 0, 1, 4), (512, 0, 1, 0), (512, 0, 0, 4))


def pvec_plan():
    return table_plan(dtypes=("bf16", "f32"), ns=PVEC_N, knobs=PVEC_KNOBS,
                      ms=PVEC_M, fields=("threads", "cluster", "prefetch",
                                         "pv"))


# "fwd-few": the forward where rows are few and wide. The cost model
# spreads a forward row over the fewest lanes that use their chunk slots
# best (bf16 N = 7168: 128 lanes of 7 chunks), and at M = 64 the SMs then
# hold one block of 4 warps, each lane a chain of 56 elements (quack: 4.8
# us at RMSNorm 64 x 7168 against our 8.4). Candidates: a row over every
# lane of blocks of 256, 512 and 1024 threads (max_lanes = threads: one
# chunk or two a lane), and 1024 threads over two rows, at M = 64-1024.
FWD_FEW_N = (1024, 2048, 4096, 7168, 8192, 16384, 32768, 65536)
FWD_FEW_M = (64, 256, 1024)
FWD_FEW_KNOBS = ((256, 0, 256), (512, 0, 512), (1024, 0, 1024),
                 (1024, 0, 512))


def fwd_few_plan():
    return table_plan(dtypes=("bf16", "f32"), ops=C.FWD_OPS, ns=FWD_FEW_N,
                      knobs=FWD_FEW_KNOBS, ms=FWD_FEW_M)


# "fwd-cluster": the forward's row split over a thread-block cluster
# (the cluster knob; the cost model never splits a forward row) where rows
# are too few to give every SM a block (M = 1-1024) and where a wide row
# loops over one block (N >= 32768 at M = 4096-16384: quack's forward led
# ours 1.45x at RMSNorm 16384 x 65536), N = 2048-262144, bf16
# and f32, clusters of 2, 4 and 8 with the cost model's threads or 256 /
# 512, against the default and plan fwd-few's best knob (a row over every
# lane of 512 threads). At N = 131072-262144 a slice may not fit the
# register share: the looped slice (max_register_elements 32 forces it).
FWD_CLUSTER_N = (2048, 4096, 7168, 12288, 16384, 32768, 65536, 131072,
                 262144)
FWD_CLUSTER_M = (1, 16, 64, 256, 1024, 4096, 16384)
# (threads, cluster, max_lanes, max_register_elements)
FWD_CLUSTER_KNOBS = ((0, 2, 0, 0), (0, 4, 0, 0), (0, 8, 0, 0),
                     (256, 2, 0, 0), (256, 4, 0, 0), (512, 2, 0, 0),
                     (512, 4, 0, 0), (512, 0, 512, 0), (0, 8, 0, 32))


def fwd_cluster_plan():
    return table_plan(dtypes=("bf16", "f32"), ops=C.FWD_OPS,
                      ns=FWD_CLUSTER_N, knobs=FWD_CLUSTER_KNOBS,
                      ms=FWD_CLUSTER_M,
                      fields=("threads", "cluster", "lanes", "mre"))


# "fwd-cluster-big": the same candidates where the plans' 1 GiB tensor
# limit stopped them, N = 32768-65536 at M = 16384-65536 (tensors up to 4
# GiB: x and y 8 GiB of the H200's 141 GB; about 2 ms a launch): the
# cross-section's RMSNorm forward 16384 x 65536 was 0.69x quack's with the
# choice carried up from M = 4096. Its compiled candidates are plan
# fwd-cluster's (prepare either).
FWD_CLUSTER_BIG_N = (32768, 65536)
FWD_CLUSTER_BIG_M = (16384, 65536)


def fwd_cluster_big_plan():
    return table_plan(dtypes=("bf16", "f32"), ops=C.FWD_OPS,
                      ns=FWD_CLUSTER_BIG_N, knobs=FWD_CLUSTER_KNOBS,
                      ms=FWD_CLUSTER_BIG_M,
                      fields=("threads", "cluster", "lanes", "mre"),
                      limit=4 << 30)


# "pipe": the next row's loads issued into registers before the in-row
# sums (geometry pipeline) and the row caches of 16-bit rows in the loaded
# type (narrow_cache), alone, together, and with the knobs the table took
# most (prefetch 1, partial_vector 4, 512 threads), both backward ops,
# bf16, where the register regime's backward is furthest from copy (large
# M, N = 1024-16384); ptxas's registers per kernel are in the prepare log.
PIPE_N = (1024, 2048, 3072, 4096, 5120, 8192, 12288, 16384)
PIPE_M = (1024, 4096, 16384)
# (threads, prefetch, pv, pipeline, narrow_cache)
PIPE_KNOBS = ((0, 0, 0, 1, 0), (0, 0, 0, 0, 1), (0, 0, 0, 1, 1),
              (0, 1, 0, 0, 1), (0, 1, 4, 0, 1), (0, 1, 4, 1, 1),
              (0, 1, 4, 0, 0), (512, 0, 0, 1, 1), (512, 1, 0, 0, 1),
              (512, 1, 0, 0, 0))


def pipe_plan():
    points, cands = table_plan(dtypes=("bf16",), ns=PIPE_N, knobs=PIPE_KNOBS,
                               ms=PIPE_M, fields=("threads", "prefetch", "pv",
                                                  "pl", "nc"))
    return points, cands


# "dres-few": plan dres-holdout's question where rows are few (one wave
# at any geometry, so the blocks an SM asked for only cost registers) and
# at odd N (the element body), f16 / bf16 / f32, with dresidual only.
DRES_FEW_N = (777, 3000, 4096, 8192)
DRES_FEW_M = (1, 64, 512, 2048)


def dres_few_plan():
    points, cands = paired_plan(("bf16", "f16", "f32"), C.GRAD_OPS,
                                DRES_FEW_N, DRES_FEW_M,
                                lambda c: dataclasses.replace(c, dres=True))
    return points, {k: [c for c in cs if c.dres] for k, cs in cands.items()}


# "small-n": plan pipe's knobs (and 128 / 512 threads) below N = 1024,
# where the table has no backward entry and the cost model's LayerNorm
# kernel is furthest from inductor's (65536 x 768 bf16: 124 us for 302 MB);
# bf16 and f32. A measurement for the table's next run, not yet in it.
SMALL_N = (512, 768)
SMALL_N_KNOBS = PIPE_KNOBS + ((128, 0, 0, 0, 0), (512, 0, 0, 0, 0),
                              (128, 0, 0, 1, 0))


def small_n_plan():
    return table_plan(dtypes=("bf16", "f32"), ns=SMALL_N,
                      knobs=SMALL_N_KNOBS, ms=PIPE_M + (65536,),
                      fields=("threads", "prefetch", "pv", "pl", "nc"))


# "small-g": the small-N backward (LayerNorm and RMSNorm bf16, N = 512-2048,
# M = 16384 / 65536, with and without dresidual) with more programs (a fixed
# G of 1024 / 2048 against the default's 512: more, shorter blocks, so a
# kernel that holds fewer blocks an SM loses less to the last wave) alone and
# with the next row loaded ahead (pipeline 1, which costs the registers that
# drop a block an SM). A fixed G changes dweight/dbias bits, so a win is a
# case for the cost model's G (Groups.h), never a table entry.
SMALL_G_N = (512, 768, 1024, 2048)
SMALL_G_M = (16384, 65536)
SMALL_G_KNOBS = ((0, 0), (0, 1), (1024, 0), (1024, 1), (2048, 0), (2048, 1))


def bf16_grad_knob_plan(ns, ms, fields, knobs):
    """Both backward ops, bf16, at each N, with and without dresidual: a
    candidate per knob tuple (values of Cfg `fields`; all zeros: the
    default), timed at each M."""
    points, cands = [], {}
    for op in C.GRAD_OPS:
        for n in ns:
            cs = cands.setdefault((op, "bf16", n), [])
            for dres in (False, True):
                cs += [C.Cfg(op, n, "bf16", dres=dres, **dict(zip(fields, k)))
                       for k in knobs]
            for m in ms:
                points.append((op, "bf16", n, m))
    return points, cands


def small_g_plan():
    return bf16_grad_knob_plan(SMALL_G_N, SMALL_G_M, ("groups", "pl"),
                               SMALL_G_KNOBS)


# "small-n-holdout": the table's backward entries below N = 1024 (from
# plan small-n) where they were not tuned: each point's configuration as
# norm_mlir.torch compiles it (its M bucket's rows hint), prepared with the
# table and again with TUNE_EXTRA_FLAGS=--tuning-file=<the table before>,
# run --against.
SMALL_HOLD_N = (320, 384, 448, 640, 704, 832)
SMALL_HOLD_M = (4096, 32768)


def small_n_holdout_plan():
    return paired_plan(("bf16", "f32"), C.GRAD_OPS, SMALL_HOLD_N,
                       SMALL_HOLD_M, lambda c: c)


def paired_plan(dtypes, ops, ns, ms, variant, has_n=lambda dt, n: True):
    """norm_mlir.torch's configuration at each (op, dtype, N, M) of the
    product (no tensor above TENSOR_LIMIT; has_n: which N a dtype takes)
    against variant(configuration), the same configuration but one knob."""
    points, cands = [], {}
    for dt in dtypes:
        size = {"f32": 4, "f16": 2, "bf16": 2}[dt]
        for op in ops:
            for n in ns:
                if not has_n(dt, n):
                    continue
                cs = cands.setdefault((op, dt, n), [])
                for m in ms:
                    if m * n * size > TENSOR_LIMIT:
                        continue
                    points.append((op, dt, n, m))
                    c = C.grid_cfg(op, n, dt, dt, m)
                    for x in (c, variant(c)):
                        if x not in cs:
                            cs.append(x)
    return points, cands


# "hold": the column vectors (weight, bias) held in registers a program
# (geometry hold_columns; no result bit changes, so a table knob) against
# the configuration the grid takes at each point (the table's entry for M,
# else the cost model's), over the grid's N and M where the kernels are in
# the register regime, forward and backward, bf16 and f32: whether holding
# should be the cost model's choice, and where. Candidates the option is
# refused on (the looped regime, rows never aligned) do not compile and are
# left out.
HOLD_N = (320, 768, 1000, 1024, 2048, 2560, 4096, 5120, 7168, 8192, 12288,
          14336, 16384)
HOLD_M = (1, 8, 64, 256, 1024, 2048, 4096, 8192, 16384, 65536)


def hold_plan(dtypes=("bf16", "f32"), ops=C.FWD_OPS + C.GRAD_OPS):
    return paired_plan(dtypes, ops, HOLD_N, HOLD_M,
                       lambda c: dataclasses.replace(c, hc=1))


# "wide-holdout": the table's wide entries where plans wide-big and
# wide-few did not tune (N between and past their N, odd N, M = 1-4096):
# each point's configuration as norm_mlir.torch compiles it, prepared with
# the table and again with TUNE_EXTRA_FLAGS=--tuning-file=<the table
# before>, run --against.
WIDE_HOLD_N = (20480, 28672, 40960, 57344, 81920, 100003, 163840)
WIDE_HOLD_M = (1, 16, 100, 512, 1536, 3000)


def wide_holdout_plan():
    return paired_plan(("bf16", "f32"), C.FWD_OPS + C.GRAD_OPS, WIDE_HOLD_N,
                       WIDE_HOLD_M, lambda c: c)


# "mid-holdout": the same check for plans mid-big / mid-big-fwd's entries
# (N = 1024-12288 at M >= 513), at N and M neither plan timed (odd N and
# N between theirs, M inside and at the ends of the buckets).
MID_HOLD_N = (1536, 2560, 3584, 4000, 7168, 10240, 11008)
MID_HOLD_M = (600, 1500, 3000, 6000, 12000, 40000)


def mid_holdout_plan():
    return paired_plan(("bf16", "f32"), C.FWD_OPS + C.GRAD_OPS, MID_HOLD_N,
                       MID_HOLD_M, lambda c: c)


# "packed": the row caches of 16-bit rows two elements a 32-bit word
# (narrow_cache = 2; no result bit changes, so a table knob) against the
# cost model's configuration at each point (compiled --tuning=false, with
# the M bucket's rows hint, as the table plans), forward and backward, bf16
# and f16, where the register regime caches whole rows (N = 1536-16384)
# and the kernels are at or past 64 registers (ptxas: LayerNorm bf16
# backward 8192's dx kernel 128 -> 80, RMSNorm 6144 128 -> 80; the forward
# mixed, RMSNorm 3072 78 -> 48, 7168 113 -> 127). Refused candidates (the
# looped regime) do not compile and are left out.
PACKED_N = (1536, 2048, 3072, 4096, 5120, 6144, 7168, 8192, 12288, 16384)
PACKED_M = (1024, 4096, 16384)


def packed_plan():
    return paired_plan(("bf16", "f16"), C.FWD_OPS + C.GRAD_OPS, PACKED_N,
                       PACKED_M, lambda c: dataclasses.replace(c, nc=2))


# "push": the cluster's row sums exchanged by a push (each block's thread 0
# stores its sums into every block's receive slots with st.async, which
# completes bytes on the receiver's mbarrier) against the cluster barrier
# and remote loads before it: the same plan prepared with the compiler of
# each (the exchange is no knob: every cluster kernel takes the push once
# it wins), forward and backward, bf16 and f32, where the table or a knob
# splits rows: N = 4096-262144, clusters of 2, 4 and 8, M = 1-16384 (and
# N = 49152, which no table plan measured: its entries come from the N
# around it). The bits are the same (the slots are added in rank order).
PUSH_FWD_N = (4096, 7168, 16384, 32768, 49152, 65536, 131072, 262144)
PUSH_FWD_M = (1, 16, 64, 256, 1024, 4096, 16384)
PUSH_FWD_KNOBS = tuple(k for k in FWD_CLUSTER_KNOBS if k[1] > 1)
PUSH_DX_N = (8192, 16384, 32768, 49152, 65536, 131072, 262144)
PUSH_DX_M = (64, 1024, 4096, 16384)
# (threads, cluster, max_register_elements)
PUSH_DX_KNOBS = ((0, 2, 0), (0, 4, 0), (0, 8, 0), (512, 2, 0), (0, 4, 32),
                 (0, 8, 32))


def push_plan():
    points, cands = table_plan(dtypes=("bf16", "f32"), ops=C.FWD_OPS,
                               ns=PUSH_FWD_N, knobs=PUSH_FWD_KNOBS,
                               ms=PUSH_FWD_M,
                               fields=("threads", "cluster", "lanes", "mre"))
    dx_points, dx_cands = table_plan(dtypes=("bf16", "f32"), ops=C.GRAD_OPS,
                                     ns=PUSH_DX_N, knobs=PUSH_DX_KNOBS,
                                     ms=PUSH_DX_M,
                                     fields=("threads", "cluster", "mre"))
    points += dx_points
    cands.update(dx_cands)
    return points, cands


# "fwd-share": the forward where a launch of row blocks is more than one
# wave of the chip (M = 1024-32768, N = 512-10240): the cost model spreads
# a row over the fewest lanes whose chunk slots it uses best with at most
# kForwardShareChunks (6) chunks a lane, and the table's entries at 2048
# and 4096 (256 lanes) took LayerNorm 2048 x 2560 to 15.4 us against
# quack's 10.2 (quack: 32 lanes a row up to N = 3072, 80 elements a
# thread). Candidates: lanes 16-256 with the register share that takes
# (max_register_elements), threads 128 / 256 / 512, and the column vectors
# held. N between the grid's (1536, 3584, 6144, 10240) check the ranges.
FWD_SHARE_N = (512, 768, 1536, 2560, 3584, 4096, 5120, 6144, 7168, 10240)
FWD_SHARE_M = (1024, 2048, 4096, 8192, 32768)
# (threads, max_lanes, max_register_elements, hold_columns)
FWD_SHARE_KNOBS = ((0, 256, 0, -1), (0, 128, 0, -1), (0, 64, 0, -1),
                   (256, 32, 128, -1), (128, 32, 128, -1),
                   (512, 32, 128, -1), (128, 16, 256, -1),
                   (256, 16, 256, -1), (256, 32, 128, 1), (0, 64, 0, 1),
                   (0, 0, 0, 1), (128, 0, 0, -1), (512, 0, 0, -1))


def fwd_share_plan():
    return table_plan(dtypes=("bf16", "f32"), ops=C.FWD_OPS,
                      ns=FWD_SHARE_N, knobs=FWD_SHARE_KNOBS,
                      ms=FWD_SHARE_M,
                      fields=("threads", "lanes", "mre", "hc"))


# "fwd-hold": the forward where rows are few (M = 1-256): the column
# vectors held (hold_columns) with the row split over a cluster (the
# cost model holds them only where the bucket's last M is a launch of at
# most a block an SM, which a cluster's blocks never are at M <= 128), and
# the table's knobs at N between its plans' (3584, 10240, 14336, 20480,
# 24576; the 14336 entry took the 256 threads of 16384 and lost 1 us).
FWD_HOLD_N = (2560, 3584, 5120, 7168, 10240, 14336, 20480, 24576, 49152)
FWD_HOLD_M = (1, 8, 64, 256)
# (threads, cluster, max_lanes, max_register_elements, hold_columns)
FWD_HOLD_KNOBS = ((0, 0, 0, 0, 1), (0, 2, 0, 0, -1), (0, 2, 0, 0, 1),
                  (0, 4, 0, 0, -1), (0, 4, 0, 0, 1), (0, 8, 0, 0, -1),
                  (0, 8, 0, 0, 1), (512, 0, 512, 0, -1),
                  (512, 0, 512, 0, 1), (256, 0, 256, 0, 1),
                  (512, 2, 0, 0, 1), (512, 4, 0, 0, 1))


def fwd_hold_plan():
    return table_plan(dtypes=("bf16", "f32"), ops=C.FWD_OPS,
                      ns=FWD_HOLD_N, knobs=FWD_HOLD_KNOBS, ms=FWD_HOLD_M,
                      fields=("threads", "cluster", "lanes", "mre", "hc"))


# "holdout": the check of the table on shapes no plan tuned at: N between
# the plans' and the grid's (1792, 2816, 4608, 8960, 11008, 18432, 28672)
# and M inside the buckets (8, 100, 700, 3000, 20000), all four ops, bf16
# and f32: the configuration norm_mlir.torch compiles for M (the table's
# entry, else the cost model's, with the bucket's rows hint) against the
# cost model's alone (the same hint, --tuning=false). Nothing here feeds a
# table.
HOLDOUT_N = (1792, 2816, 4608, 8960, 11008, 18432, 28672)
HOLDOUT_M = (8, 100, 700, 3000, 20000)


def holdout_plan():
    return paired_plan(("bf16", "f32"), C.FWD_OPS + C.GRAD_OPS, HOLDOUT_N,
                       HOLDOUT_M, lambda c: dataclasses.replace(c,
                                                                untuned=True))


# "holdout-odd": the same check where holdout does not look: N whose rows
# can never be 16-byte aligned (777, 4095, 9999, 12345), N between the
# tuned ones (3000, 5000, 6000), and f16, which takes the bf16 entries
# without a plan ever timing f16 there. Of the 210
# forward kernels at these N, dtypes and the five buckets' hints, 40
# changed with the ninth session's table and were never timed.
HOLDOUT_ODD_N = (777, 3000, 4095, 5000, 6000, 9999, 12345)


def holdout_odd_plan():
    return paired_plan(("f16", "bf16", "f32"), C.FWD_OPS + C.GRAD_OPS,
                       HOLDOUT_ODD_N, HOLDOUT_M,
                       lambda c: dataclasses.replace(c, untuned=True))


# "dres": the backward with dresidual (what add_layer_norm / add_rms_norm
# and inductor's folded residual adds run) against the same backward
# without it, norm_mlir.torch's configuration (the table's), over the N
# where models put norms and two M: whether reading one more row costs
# about its bytes (on the H200, 65536 x 768 LayerNorm bf16: 124 us
# without, 238 with, where a fourth row's bytes would make it ~165).
# Prepared twice, the second with TUNE_EXTRA_FLAGS=--early-rows=true
# (norm-cache-rows reads dresidual in the first column loop), and run
# --against, it times that option.
DRES_N = (512, 768, 1024, 2048, 4096, 6144, 8192, 12288)
DRES_M = (8192, 65536)


def dres_plan():
    return paired_plan(("bf16", "f32"), C.GRAD_OPS, DRES_N, DRES_M,
                       lambda c: dataclasses.replace(c, dres=True))


# "dres-holdout": plan dres's question at N and M it was not decided on
# (the rule of Geometry.h dxEarlyRows was read off plan dres), f16 too:
# prepared with the defaults and again with TUNE_EXTRA_FLAGS=
# --early-rows=false (dresidual read late, nothing asked of the wave), run
# --against.
DRES_HOLD_N = (640, 1536, 2560, 3072, 3584, 5120, 7168, 10240)
DRES_HOLD_M = (4096, 32768)


def dres_holdout_plan():
    return paired_plan(("bf16", "f16", "f32"), C.GRAD_OPS, DRES_HOLD_N,
                       DRES_HOLD_M,
                       lambda c: dataclasses.replace(c, dres=True))


# "restrict": the cost model's configuration (prepare adds --tuning=false
# to every plan but the grid's and holdout; the bucket's rows hint as
# norm_mlir.torch gives it) with the kernels' pointers noalias / readonly
# (the default since the seventh session) against the same without
# (--restrict-arguments=false), over a spread of N and M that is mostly off
# the tuned points, every op, bf16 / f16 / f32.
RESTRICT_N = (256, 768, 1000, 2048, 2560, 4096, 7168, 12288, 16384, 65536)
RESTRICT_M = (1, 8, 64, 256, 1024, 2048, 8192, 32768)


def restrict_plan():
    return paired_plan(("bf16", "f16", "f32"), C.FWD_OPS + C.GRAD_OPS,
                       RESTRICT_N, RESTRICT_M,
                       lambda c: dataclasses.replace(c, ra=0),
                       lambda dt, n: dt != "f16" or n in (768, 2560, 7168,
                                                         16384))


# "fwd-tiny": the forward where a launch is all latency (M = 1-64: the
# cross-section's worst points, RMSNorm 1 x 1000 and 8 x 1000, LayerNorm
# 64 x 768 and 64 x 7168, are 1.2-1.4x quack's time): the table's choice
# (norm_mlir.torch's, rows hint 1) against the cost model and a row a
# block of 64-1024 threads, several rows a block, and clusters of 2-8
# with the column vectors held. Plan table's tuning stopped at M = 64; its
# [1, 128] bucket carries M = 64's choice down to M = 1.
FWD_TINY_N = (256, 768, 1000, 2560, 4096, 7168, 14336)
FWD_TINY_M = (1, 8, 32, 64)
# (threads, max_lanes, cluster, hold_columns)
FWD_TINY_KNOBS = ((64, 64, 0, -1), (128, 128, 0, -1), (256, 256, 0, -1),
                  (512, 512, 0, -1), (1024, 1024, 0, -1), (64, 32, 0, -1),
                  (128, 32, 0, -1), (0, 0, 2, 1), (0, 0, 4, 1), (0, 0, 8, 1),
                  (128, 0, 2, 1), (128, 0, 4, 1))


def fwd_tiny_plan():
    points, cands = table_plan(dtypes=("bf16", "f32"), ops=C.FWD_OPS,
                               ns=FWD_TINY_N, knobs=FWD_TINY_KNOBS,
                               ms=FWD_TINY_M,
                               fields=("threads", "lanes", "cluster", "hc"))
    for key, cs in cands.items():
        # Every candidate with the bucket's rows hint, as norm_mlir.torch
        # compiles M <= 128; the first (no knob) is the table's choice; one
        # more is the cost model's alone.
        cs[:] = [dataclasses.replace(c, rows=1) for c in cs]
        cs.append(dataclasses.replace(cs[0], untuned=True))
    return points, cands


# "fwd-retune": the forward's table entries at M >= 129 measured again
# with the compiler as it is (restrict-arguments, the reduce's steps, the
# one-wave rules changed the kernels under entries measured sessions ago:
# LayerNorm bf16 2048 x 2560's entry, 256 threads x 8 rows at 164
# registers, ran 12.2 us under ncu where a row a block of 128 threads ran
# 10.3). Per (op, dtype, N): the cost model, every knob the table holds for
# that N (so that a stale measurement of it is replaced) and a row a block
# of 64-512 threads, rows of 32 and 64 lanes, the column vectors held; at
# the N and M (buckets 129-8192) the earlier forward plans measured
# (winners() wants a bucket's both ends), so `table` can be written again
# from all runs with this one last.
FWD_RETUNE_N = (512, 768, 1024, 1536, 2048, 2560, 3584, 4096, 5120, 6144,
                7168, 8192, 10240, 12288, 16384)
FWD_RETUNE_M = (256, 1024, 2048, 4096, 8192)
FWD_RETUNE_HINTS = tuple(sorted({C.bucket_rows(m) for m in FWD_RETUNE_M}))
# (threads, cluster, max_lanes, max_register_elements, hold_columns)
FWD_RETUNE_KNOBS = ((64, 0, 64, 0, -1), (128, 0, 128, 0, -1),
                    (256, 0, 256, 0, -1), (512, 0, 512, 0, -1),
                    (128, 0, 32, 0, -1), (256, 0, 64, 0, -1),
                    (0, 0, 0, 0, 1), (128, 0, 128, 0, 1),
                    (256, 0, 256, 0, 1), (0, 0, 64, 0, 1))


# The Cfg fields of a retune knob, and the table entry keys they come from.
RETUNE_FIELDS = ("threads", "cluster", "lanes", "mre", "hc")
RETUNE_KEYS = ("threads", "cluster", "max_lanes", "max_register_elements",
               "hold_columns")


def table_entries(path=None):
    """The entries of a tuning table, the checked-in sm_90 one by default."""
    path = path or os.path.join(HERE, "..", "lib", "Conversion", "NormToGPU",
                                "tuning", "sm_90.json")
    with open(path) as f:
        return json.load(f)["entries"]


def table_knobs(path=None):
    """{(op, dtype, tuned N): {knob as RETUNE_FIELDS}}: the forward knobs
    of the checked-in table (hold_columns absent: -1, the model's)."""
    entries = table_entries(path)
    out = {}
    for e in entries:
        if e["kernel"] != "forward":
            continue
        op = "layer_norm" if e["row_sums"] == 2 else "rms_norm"
        for dt in (("bf16", "f16") if e["element_bytes"] == 2 else ("f32",)):
            knob = tuple(e.get(k, 0) for k in RETUNE_KEYS)
            out.setdefault((op, dt, e["tuned_n"]), set()).add(
                knob[:-1] + (knob[-1] or -1,))
    return out


def fwd_retune_plan():
    points, cands = table_plan(dtypes=("bf16", "f32"), ops=C.FWD_OPS,
                               ns=FWD_RETUNE_N, knobs=FWD_RETUNE_KNOBS,
                               ms=FWD_RETUNE_M, fields=RETUNE_FIELDS)
    have = table_knobs()
    for key, cs in cands.items():
        known = {tuple(getattr(c, f) for f in RETUNE_FIELDS) for c in cs}
        cs += [C.Cfg(key[0], key[2], key[1], **dict(zip(RETUNE_FIELDS, k)))
               for k in sorted(have.get(key, ())) if k not in known]
        # Each with every bucket's rows hint, as norm_mlir.torch compiles
        # M (useful() runs it at its own bucket's M only): the kernels a
        # call gets, pointers restricted where the bucket's launch is one
        # wave. The first run of this plan compiled no hint, so its
        # one-wave kernels were the unrestricted ones no call runs
        # (RMSNorm bf16 2048 x 2560: 10.5 us there, 12.0 in the
        # cross-section's hinted kernel).
        cs[:] = [dataclasses.replace(c, rows=h) for h in FWD_RETUNE_HINTS
                 for c in cs]
    return points, cands


# "warp-rows": the small-N backward (LayerNorm and RMSNorm bf16, N =
# 512-2048, M = 16384 / 65536, with and without dresidual) with a row on
# fewer lanes (max-lanes 16 / 32 / 64: several 16-byte chunks a lane, no
# cross-warp step at 32 lanes or fewer) and the row caches narrow (bf16,
# which the issue-9 run of max-lanes = 32 did not have: its f32 caches took
# ptxas to 88-241 registers), alone and with the next row loaded ahead.
# Same G and row-to-group assignment: no dweight/dbias bit may move.
WARP_ROWS_N = (512, 768, 1024, 1536, 2048)
WARP_ROWS_M = (16384, 65536)
# (threads, max_lanes, narrow_cache, pipeline)
WARP_ROWS_KNOBS = ((0, 32, 1, 0), (0, 32, 1, 1), (0, 32, 0, 0),
                   (0, 64, 1, 0), (0, 16, 1, 0), (128, 32, 1, 0),
                   (512, 32, 1, 0))


def warp_rows_plan():
    return bf16_grad_knob_plan(WARP_ROWS_N, WARP_ROWS_M,
                               ("threads", "lanes", "nc", "pl"),
                               ((0, 0, 0, 0),) + WARP_ROWS_KNOBS)


# "trim": the backward's rows trimmed of their idle warps (the cost
# model's trim-idle-warps, the default) against the same kernels compiled
# with TUNE_EXTRA_FLAGS=--trim-idle-warps=false (run --against), at N where
# the trim changes the block (576-5376 for 16-bit rows, 320-2688 for f32:
# chunks that are not a power of two), with and without dresidual, M =
# 4096 / 65536. "trim-holdout": the same at N the rule was not read off.
TRIM_N = {"bf16": (640, 768, 1152, 1536, 1792, 2304, 3584),
          "f32": (384, 768, 896, 1152, 1792)}
TRIM_HOLD_N = {"bf16": (576, 1088, 1344, 1664, 2176, 3200, 5248),
               "f16": (704, 1280, 1472, 3392),
               "f32": (320, 704, 1664, 2688)}
TRIM_M = (4096, 65536)
# "trim-few": the same at few rows (M = 1-2048) and N whose rows end in a
# part of a warp or can never be 16-byte aligned (700, 1100, 1500, 620,
# 330, 850), none of which the rule was read off.
TRIM_FEW_N = {"bf16": (700, 1100, 1500), "f16": (620,), "f32": (330, 850)}
TRIM_FEW_M = (1, 64, 512, 2048)


def trim_plan(ns=None, ms=TRIM_M):
    ns = ns or TRIM_N
    return paired_plan(tuple(ns), C.GRAD_OPS,
                       sorted({n for v in ns.values() for n in v}), ms,
                       lambda c: dataclasses.replace(c, dres=True),
                       lambda dt, n: n in ns[dt])


# "barriers": the in-row sums' barriers of the row's own warps, once a
# sum (norm-map-to-gpu row-barriers=2, the default) against the same
# kernels compiled with TUNE_EXTRA_FLAGS=--row-barriers=0 (two block
# barriers a sum) or =1 (two of the row's warps), run --against: forward
# and backward (with and without dresidual) in the configuration the grid
# takes, where rows span several warps. No result bit may differ.
# "barriers-holdout": the same at N, M and f16 the default was not read off.
BARRIER_N = {"bf16": (512, 768, 1024, 1536, 2048, 3072, 4096, 8192, 16384),
             "f32": (256, 768, 1024, 2048, 4096, 8192)}
BARRIER_M = (1024, 16384, 65536)
BARRIER_HOLD_N = {"bf16": (640, 1280, 2560, 5120, 12288),
                  "f16": (896, 2048, 6144), "f32": (384, 1536, 3072)}
BARRIER_HOLD_M = (256, 4096, 32768)


# "ring-holdout": async-rows' rule (Geometry.h ringFit) at N and M neither
# barriers plan timed, prepared with and without --async-rows=0.
RING_HOLD_N = {"bf16": (896, 1152, 1792, 2304, 3584, 4608, 5632),
               "f16": (1024, 2560), "f32": (512, 640, 1280, 2304)}
RING_HOLD_M = (8192, 49152)


# "ring-dynamic": the ring in dynamic shared memory (norm-map-to-gpu
# ring-dynamic, the default) where the static memory beside the kernel's
# own partial rows holds fewer than async-rows waves, prepared with and
# without TUNE_EXTRA_FLAGS=--ring-dynamic=false (run --against): the
# backward rows whose partial rows take 16-40 KB of shared memory
# (LayerNorm 16-bit N = 2048-5120, f32 1024-5120, RMSNorm twice that N),
# and past them where the partial rows are dynamic. "ring-dynamic-holdout":
# other N and M.
RING_DYN_N = {"bf16": (2048, 3072, 4096, 5120, 6144, 8192),
              "f16": (3072, 6144), "f32": (2048, 3072, 4096, 5120, 6144)}
RING_DYN_M = (4096, 16384, 65536)
RING_DYN_HOLD_N = {"bf16": (2560, 3584, 4608, 7168), "f16": (5120,),
                   "f32": (2560, 3584, 4608)}
RING_DYN_HOLD_M = (8192, 32768)
# "ring-dynamic-wide": past N = 8192, where the partial rows are dynamic
# or the rows are few a block, and the ring took no wave before.
RING_DYN_WIDE_N = {"bf16": (10000, 12288, 16384, 24576, 32768),
                   "f32": (8192, 11000, 16384)}
RING_DYN_WIDE_M = (1024, 4096, 16384, 65536)


# "wave": the backward kernels without the ring or early rows asking
# ptxas for the blocks an SM that keep their largest launch one wave
# (norm-map-to-gpu wave-resident, Geometry.h dxWaveBlocks), prepared with
# and without TUNE_EXTRA_FLAGS=--wave-resident=false (run --against; pairs
# of byte-identical kernels are not timed). "wave-holdout": other N and M.
WAVE_N = {"bf16": (512, 1000, 1024, 2048, 4095, 4096, 6144, 8192, 12288),
          "f16": (1024, 4096), "f32": (1024, 3072, 4096, 7168, 8192)}
WAVE_M = (4096, 16384, 65536)
WAVE_HOLD_N = {"bf16": (640, 1280, 3584, 4608, 7168, 10240),
               "f16": (2048, 8192), "f32": (2560, 4608, 6144)}
WAVE_HOLD_M = (8192, 32768)


# "reread": the forward kernels a call gets (the tuning table's, with the
# rows hint of the point's bucket) whose body for rows not 16-byte aligned
# reads the row again (norm-map-to-gpu reread-fallback, the default),
# against the same compiled with TUNE_EXTRA_FLAGS=--reread-fallback=false
# (run --against; byte-identical pairs are not timed): the aligned launch
# runs the same code, so any difference is ptxas's registers and schedule
# for the whole kernel. bf16 and f32 at the grid's N and N no plan read it
# off (1536, 3584, 6144, 10240), M from 64 to 8192. No result bit may
# differ.
REREAD_N = {"bf16": (768, 1024, 1536, 2048, 2560, 3584, 4096, 5120, 6144,
                     7168, 8192, 10240, 12288, 16384),
            "f32": (1024, 2048, 2560, 4096, 6144, 8192)}
REREAD_M = (64, 256, 1024, 2048, 8192)


def reread_plan():
    return paired_plan(tuple(REREAD_N), C.FWD_OPS,
                       sorted({n for v in REREAD_N.values() for n in v}),
                       REREAD_M, lambda c: c,
                       lambda dt, n: n in REREAD_N[dt])


# "ring-table": the ring (async-rows=2, the default) against none
# (TUNE_EXTRA_FLAGS=--async-rows=0, run --against) on the kernels calls
# get (with the tuning table) where the backward rows are two chunks a
# lane and the partial rows sit in shared memory beside the ring: the
# LayerNorm 16-bit N = 2048 of 72% of copy, whose ncu stall is
# short_scoreboard (shared memory).
RING_TABLE_N = {"bf16": (1536, 2048, 2560, 3072), "f16": (2048,),
                "f32": (1024, 1536)}
RING_TABLE_M = (16384, 65536)


# "regpart": a one-row backward row's partial rows in registers where
# they keep the wave (norm-choose-geometry register-partials, Geometry.h
# keepPartialsInRegisters) against static shared memory (the default), on
# the kernels calls get (with the tuning table): prepared with
# TUNE_EXTRA_FLAGS=--register-partials=true and without, run --against.
# The N where the option moves them (ptxas: no spill, the same blocks an
# SM); "regpart-holdout": other N and M. No result bit may differ.
REGPART_N = {"bf16": (1536, 2048), "f16": (2048,),
             "f32": (768, 1000, 1024, 1536, 2560)}
REGPART_M = (1024, 4096, 16384, 65536)
REGPART_HOLD_N = {"bf16": (1280, 1792, 1920), "f16": (1536,),
                  "f32": (896, 1280, 2304)}
REGPART_HOLD_M = (8192, 32768)


# "k2": the backward rows of one 16-byte chunk a lane and one row a block
# (the cost model's tie between 256 threads at K = 1 and 128 at K = 2
# goes to 256), prepared as the table gave them and again with
# TUNE_EXTRA_FLAGS=--threads=128 (two chunks a lane), run --against; the
# same S = 1, so no dweight/dbias bit may move. "k2-holdout": other N, M.
# The rule taken from it (two-chunk-rows) is the default now: the old side
# is TUNE_EXTRA_FLAGS=--two-chunk-rows=false.
K2_N = {"bf16": (1152, 1536, 2048), "f16": (1792,), "f32": (640, 1024)}
K2_M = (4096, 16384, 65536)
K2_HOLD_N = {"bf16": (1280, 1792), "f16": (1536, 2048), "f32": (768, 896)}
K2_HOLD_M = (8192, 32768)


# "reduce": the reduce kernel's columns a block and batches
# (norm-map-to-gpu reduce-columns / reduce-unroll; Kernels.h) against the
# same kernels compiled by an older norm-compile or with other values of
# those options (TUNE_EXTRA_FLAGS), run --against. Only the reduce kernel
# differs, and it keeps its order of sums: every output bit must be equal.
# Its time is the largest part of the backward where N is small and G
# large (M >= 4096). "reduce-holdout": N, M and f16 the default was not
# read off.
REDUCE_N = {"bf16": (256, 768, 1024, 2048, 4096, 8192, 16384),
            "f16": (2048,), "f32": (1024, 4096)}
REDUCE_M = (1024, 4096, 16384, 65536)
REDUCE_HOLD_N = {"bf16": (512, 1536, 3072, 5120, 12288),
                 "f16": (768, 4096), "f32": (2048, 6144)}
REDUCE_HOLD_M = (2048, 8192, 32768)
# "reduce-few": few rows, wide N (the cross-section's set c, where the
# pipelined kernel first lost 0.63-0.94x): N whose G stays at or below 128
# and M from 1 to 2048.
REDUCE_FEW_N = {"bf16": (1000, 5120, 14336, 49152)}
REDUCE_FEW_M = (1, 8, 64, 256, 2048)

# "few-dx": the backward where rows are fewer than the SMs (M = 1-128:
# the tuning table's first row bucket, one set of kernels for all of it,
# compiled with its rows hint 1 as norm_mlir.torch does), bf16 and f32, N =
# 1024-12288: the cross-section's worst points (RMSNorm 1 x 5120 at 0.60x
# of torch.compile's one kernel). The cost model (no table under the
# candidates, so an entry it makes is against the cost model's choice)
# against more threads a row and the row split over a cluster, at M = 1,
# 8, 64 and 128, the bucket's ends included.
# (The table's own N: a new N moves the N ranges' midpoints of every M
# bucket of its op. The first run also timed N = 1000, left out of
# tune-sm_90-few-dx-h100.json.)
FEW_DX_N = {"bf16": (1024, 2048, 3072, 4096, 5120, 6144, 8192, 12288),
            "f32": (1024, 2048, 4096, 6144, 8192)}
FEW_DX_M = (1, 8, 64, 128)
# (threads, cluster)
FEW_DX_KNOBS = ((256, 1), (512, 1), (1024, 1), (0, 2), (0, 4), (0, 8),
                (256, 2), (256, 4), (512, 2))


def few_dx_plan():
    points, cands = [], {}
    for dt, ns in FEW_DX_N.items():
        p, c = table_plan(dtypes=(dt,), ns=ns, knobs=FEW_DX_KNOBS,
                          ms=FEW_DX_M, fields=("threads", "cluster"))
        points += p
        cands.update(c)
    for cs in cands.values():
        cs[:] = [dataclasses.replace(c, rows=1) for c in cs]
    return points, cands


# "wide-g": fewer partial rows where rows are wide. G is capped at 128 from
# N = 24576 (kGroupCaps), so the partial rows' traffic (G x N x 4 bytes a
# partial row, written then read) outgrows the rows' own at few rows: 50 MB
# for LayerNorm 256 x 49152 against 75 MB of x, dy and dx (0.71x of
# torch.compile in the cross-section). A fixed G of 32 and 64 against the
# default, with the geometry of each M's bucket and with a cluster of 8.
# G is no table knob (dweight/dbias bits): a win moves Groups.h.
WIDE_G_N = (24576, 32768, 49152, 65536)
WIDE_G_M = (256, 512, 1024, 4096)
WIDE_G_G = (32, 64)


def wide_g_plan():
    points, cands = [], {}
    hints = sorted({C.bucket_rows(m) for m in WIDE_G_M})
    for op in C.GRAD_OPS:
        for n in WIDE_G_N:
            cs = []
            for h in hints:
                cs.append(C.Cfg(op, n, "bf16", rows=h))
                cs += [C.Cfg(op, n, "bf16", rows=h, groups=g, cluster=c)
                       for g in WIDE_G_G for c in (0, 8)]
            cands[(op, "bf16", n)] = cs
            points += [(op, "bf16", n, m) for m in WIDE_G_M
                       if m * n * 2 <= TENSOR_LIMIT]
    return points, cands


# "wide-retune": the table's knobs (plan table's: threads, cluster) for the
# bucket M = 129-512 at the N where G became 64 there (Groups.h
# kWidePrograms, from plan wide-g): the table's entries for that bucket
# were measured at G = 128 (RMSNorm bf16 49152's 512 threads ran 0.88x of
# the cost model at M = 512 under G = 64, a cluster of 8 1.40x). Each
# candidate with the bucket's rows hint, the cost model under it; bf16 and
# f32 at the table's own N (a new N moves the N ranges' midpoints).
WIDE_RETUNE_N = {"bf16": (24576, 32768, 49152, 65536),
                 "f32": (24576, 32768, 65536)}
WIDE_RETUNE_M = (256, 512)


def wide_retune_plan():
    points, cands = [], {}
    for dt, ns in WIDE_RETUNE_N.items():
        p, c = table_plan(dtypes=(dt,), ns=ns, ms=WIDE_RETUNE_M)
        points += p
        cands.update(c)
    for cs in cands.values():
        cs[:] = [dataclasses.replace(c, rows=129) for c in cs]
    return points, cands


# "wide-big": every knob the table has for wide rows (cluster 2 / 4 / 8 on
# the cost model's threads and on 256 / 512, 32 register elements under a
# cluster, prefetch, 512 threads), at M = 1024 and 4096 (the buckets 513-
# 2048 and 2049-8192, the second carried past 8192 where 4 x M passes the
# plan's limit) and N = 24576-131072, backward and forward, bf16 and f32,
# each with its bucket's rows hint, the cost model under it. Given to
# `table` under --supersede: the old entries of these buckets were each
# the best gain of one plan against that plan's own default, and the
# default moved between plans (LayerNorm bf16 1024 x 65536: 345 us in plan
# table, 276 in plan push, so push's cluster of 8 at 239 us counted 1.15x
# and lost to plan prefetch's 512 threads at 269 against 348, 1.29x; on
# the H100 the table's pick ran 338 us, a cluster of 8 238). Also, not
# entries (the table skips a fixed G): G = 64 with a cluster of 8 at M =
# 1024, for the rule of Groups.h (kWideRows stops at 512).
WIDE_BIG_N = {"bf16": (24576, 32768, 49152, 65536, 131072),
              "f32": (24576, 32768, 65536, 131072)}
WIDE_BIG_M = (1024, 4096)
WIDE_BIG_KNOBS = ({"cluster": 2}, {"cluster": 4}, {"cluster": 8},
                  {"threads": 256, "cluster": 4},
                  {"threads": 256, "cluster": 8},
                  {"threads": 512, "cluster": 2},
                  {"threads": 512, "cluster": 4},
                  {"cluster": 4, "mre": 32}, {"cluster": 8, "mre": 32},
                  {"threads": 512}, {"prefetch": 1},
                  {"threads": 512, "prefetch": 1})
WIDE_BIG_FWD_KNOBS = ({"cluster": 2}, {"cluster": 4}, {"cluster": 8},
                      {"threads": 256, "cluster": 4},
                      {"threads": 512, "cluster": 2},
                      {"cluster": 8, "mre": 32}, {"threads": 512},
                      {"threads": 512, "lanes": 512})


# "wide-few": the same knobs at M = 1, 8, 64 and 128 (the bucket 1-128,
# whose wide entries came from plans table-more, f32 and push, with
# defaults 1.2-2.4x apart: docs/NOTES.md, twenty-sixth session), at N =
# 16384-131072.
WIDE_FEW_N = {"bf16": (16384, 24576, 32768, 49152, 65536, 131072),
              "f32": (16384, 24576, 32768, 65536, 131072)}
WIDE_FEW_M = (1, 8, 64, 128)


def knob_plan(ns_by_dtype, ms, ops, knobs_of):
    """Every op of `ops` at each dtype's N and each M of `ms` (no tensor
    past TENSOR_LIMIT); per (op, dtype, N), for each M bucket the rows
    hint of that bucket on the cost model and on each knob of
    knobs_of(op, dtype, N, hint) (Cfg fields)."""
    points, cands = [], {}
    size = {"f32": 4, "bf16": 2}
    for dt, ns in ns_by_dtype.items():
        for op in ops:
            for n in ns:
                at = [m for m in ms if m * n * size[dt] <= TENSOR_LIMIT]
                cs = []
                for h in sorted({C.bucket_rows(m) for m in at}):
                    cs.append(C.Cfg(op, n, dt, rows=h))
                    cs += [C.Cfg(op, n, dt, rows=h, **k)
                           for k in knobs_of(op, dt, n, h)]
                cands[(op, dt, n)] = cs
                points += [(op, dt, n, m) for m in at]
    return points, cands


def wide_big_plan(ns_by_dtype=None, ms=WIDE_BIG_M):
    def knobs_of(op, dt, n, h):
        if not op.endswith("_grad"):
            return WIDE_BIG_FWD_KNOBS
        return WIDE_BIG_KNOBS + (({"groups": 64, "cluster": 8},)
                                 if h == C.bucket_rows(1024) else ())
    return knob_plan(ns_by_dtype or WIDE_BIG_N, ms,
                     C.GRAD_OPS + C.FWD_OPS, knobs_of)


# "mid-big": the wide-big run for N = 1024-12288 at M = 1024, 4096 and
# 16384 (the buckets 513-2048, 2049-8192 and 8193 up): every knob the
# table's entries there use (threads, prefetch, partial_vector, pipeline,
# narrow_cache 1 and the packed 2 the table has no entry with yet, the
# forward's max-lanes and hold_columns, a cluster of 2), alone and in the
# combinations the entries hold, each with its bucket's rows hint and the
# cost model under it, backward and forward, bf16 and f32 (no narrow
# caches: an f32 row is cached in f32). Given to `table` under --supersede,
# so no entry there stays a gain over a default that has since moved.
MID_BIG_N = {"bf16": (1024, 2048, 3072, 4096, 5120, 6144, 8192, 12288),
             "f32": (1024, 2048, 4096, 6144, 8192, 12288)}
MID_BIG_M = (1024, 4096, 16384)
MID_BIG_KNOBS = ({"threads": 128}, {"threads": 256}, {"threads": 512},
                 {"prefetch": 1}, {"prefetch": 1, "pv": 4},
                 {"pl": 1}, {"threads": 128, "prefetch": 1},
                 {"prefetch": 1, "pl": 1},
                 {"prefetch": 1, "pv": 4, "pl": 1},
                 {"nc": 1}, {"nc": 2}, {"pl": 1, "nc": 1}, {"pl": 1, "nc": 2},
                 {"prefetch": 1, "nc": 2}, {"threads": 128, "nc": 2},
                 {"prefetch": 1, "pv": 4, "pl": 1, "nc": 1},
                 {"prefetch": 1, "pv": 4, "pl": 1, "nc": 2})
MID_BIG_FWD_KNOBS = ({"hc": 1}, {"threads": 64, "lanes": 64},
                     {"threads": 128, "lanes": 128},
                     {"threads": 128, "lanes": 128, "hc": 1},
                     {"threads": 256, "lanes": 256},
                     {"threads": 256, "lanes": 256, "hc": 1},
                     {"threads": 512, "lanes": 512}, {"lanes": 64},
                     {"lanes": 64, "hc": 1}, {"threads": 128},
                     {"cluster": 2}, {"cluster": 2, "hc": 1},
                     {"nc": 2}, {"nc": 2, "hc": 1},
                     {"threads": 128, "lanes": 128, "nc": 2})


# A table entry's knobs as Cfg fields (the keys that name the kernel an
# entry serves are not knobs).
ENTRY_KNOBS = {"threads": "threads", "cluster": "cluster",
               "max_lanes": "lanes", "max_register_elements": "mre",
               "hold_columns": "hc", "prefetch": "prefetch",
               "partial_vector": "pv", "pipeline": "pl",
               "narrow_cache": "nc"}
ENTRY_KEYS = ("kernel", "element_bytes", "n", "rows", "tuned_n", "measured",
              "row_sums", "partial_rows")


def entry_knobs(min_rows=1, path=None):
    """{(op, dtype, tuned N): [Cfg fields]}: the knobs of the checked-in
    table's entries whose rows reach min_rows; an unknown key is an
    error (a plan that retunes a region must time every knob there)."""
    entries = table_entries(path)
    out = {}
    for e in entries:
        hi = e["rows"][1]
        if hi and hi < min_rows:
            continue
        unknown = set(e) - set(ENTRY_KNOBS) - set(ENTRY_KEYS)
        if unknown:
            raise ValueError("table entry with unknown keys %s" %
                             sorted(unknown))
        knob = {ENTRY_KNOBS[k]: v for k, v in e.items() if k in ENTRY_KNOBS}
        if e["kernel"] == "dx":
            ops = (("layer_norm_grad",) if e["partial_rows"] == 2 else
                   ("rms_norm_grad",)) if "partial_rows" in e else \
                C.GRAD_OPS
        else:
            ops = ("layer_norm",) if e["row_sums"] == 2 else ("rms_norm",)
        for op in ops:
            for dt in (("bf16", "f16") if e["element_bytes"] == 2 else
                       ("f32",)):
                ks = out.setdefault((op, dt, e["tuned_n"]), [])
                if knob not in ks:
                    ks.append(knob)
    return out


def mid_big_plan(ns_by_dtype=None, ms=MID_BIG_M, directions=("bwd", "fwd")):
    ops = (C.GRAD_OPS if "bwd" in directions else ()) + \
        (C.FWD_OPS if "fwd" in directions else ())
    have = entry_knobs(min_rows=min(ms))

    def knobs_of(op, dt, n, h):
        knobs = MID_BIG_KNOBS if op.endswith("_grad") else MID_BIG_FWD_KNOBS
        if dt == "f32":
            knobs = [k for k in knobs if "nc" not in k]
        # The table's own knobs there too, so --supersede drops no entry
        # whose knob this run did not time.
        return list(knobs) + [k for k in have.get((op, dt, n), [])
                              if k and k not in knobs]
    return knob_plan(ns_by_dtype or MID_BIG_N, ms, ops, knobs_of)


def barriers_plan(ns=None, ms=BARRIER_M):
    ns = ns or BARRIER_N
    allns = sorted({n for v in ns.values() for n in v})
    points, cands = paired_plan(tuple(ns), C.GRAD_OPS, allns, ms,
                                lambda c: dataclasses.replace(c, dres=True),
                                lambda dt, n: n in ns[dt])
    fpoints, fcands = paired_plan(tuple(ns), C.FWD_OPS, allns, ms,
                                  lambda c: c, lambda dt, n: n in ns[dt])
    cands.update(fcands)
    return points + fpoints, cands


PLANS = dict(TABLE_PLANS, explore=explore_plan, grid=grid_plan,
             groups=groups_plan, fma=fma_plan, wide=wide_plan,
             prefetch=prefetch_plan, pvec=pvec_plan, pipe=pipe_plan,
             **{"fwd-few": fwd_few_plan, "fwd-cluster": fwd_cluster_plan,
                "fwd-cluster-big": fwd_cluster_big_plan,
                "hold": hold_plan, "push": push_plan,
                "fwd-share": fwd_share_plan, "fwd-hold": fwd_hold_plan,
                "holdout": holdout_plan, "holdout-odd": holdout_odd_plan,
                "restrict": restrict_plan, "dres": dres_plan,
                "dres-holdout": dres_holdout_plan,
                "small-n": small_n_plan,
                "dres-few": dres_few_plan,
                "small-n-holdout": small_n_holdout_plan,
                "small-g": small_g_plan,
                "warp-rows": warp_rows_plan, "trim": trim_plan,
                "trim-holdout": lambda: trim_plan(TRIM_HOLD_N),
                "trim-few": lambda: trim_plan(TRIM_FEW_N, TRIM_FEW_M),
                "fwd-tiny": fwd_tiny_plan, "fwd-retune": fwd_retune_plan,
                "barriers": barriers_plan,
                "barriers-holdout": lambda: barriers_plan(BARRIER_HOLD_N,
                                                          BARRIER_HOLD_M),
                "ring-holdout": lambda: trim_plan(RING_HOLD_N,
                                                  RING_HOLD_M),
                "ring-dynamic": lambda: trim_plan(RING_DYN_N, RING_DYN_M),
                "ring-dynamic-holdout": lambda: trim_plan(RING_DYN_HOLD_N,
                                                          RING_DYN_HOLD_M),
                "ring-dynamic-wide": lambda: trim_plan(RING_DYN_WIDE_N,
                                                       RING_DYN_WIDE_M),
                "ring-table": lambda: trim_plan(RING_TABLE_N, RING_TABLE_M),
                "wave": lambda: trim_plan(WAVE_N, WAVE_M),
                "reread": reread_plan,
                "wave-holdout": lambda: trim_plan(WAVE_HOLD_N, WAVE_HOLD_M),
                "regpart": lambda: trim_plan(REGPART_N, REGPART_M),
                "regpart-holdout": lambda: trim_plan(REGPART_HOLD_N,
                                                     REGPART_HOLD_M),
                "reduce": lambda: trim_plan(REDUCE_N, REDUCE_M),
                "reduce-holdout": lambda: trim_plan(REDUCE_HOLD_N,
                                                    REDUCE_HOLD_M),
                "reduce-few": lambda: trim_plan(REDUCE_FEW_N, REDUCE_FEW_M),
                "k2": lambda: trim_plan(K2_N, K2_M),
                "k2-holdout": lambda: trim_plan(K2_HOLD_N, K2_HOLD_M),
                "few-dx": few_dx_plan, "wide-g": wide_g_plan,
                "wide-retune": wide_retune_plan, "wide-big": wide_big_plan,
                "wide-few": lambda: wide_big_plan(WIDE_FEW_N, WIDE_FEW_M),
                "packed": packed_plan, "wide-holdout": wide_holdout_plan,
                "mid-big": lambda: mid_big_plan(directions=("bwd",)),
                "mid-big-fwd": lambda: mid_big_plan(directions=("fwd",)),
                "mid-holdout": mid_holdout_plan},
             **{"grid-cfgs": grid_cfgs_plan,
                "grid-cfgs-f32": lambda: grid_cfgs_plan(("bf16", "f32"))})


# Plans whose candidates are compiled with the tuning table (the others
# with --tuning=false: candidates against the cost model).
TABLE_SIDE_PLANS = ("holdout", "holdout-odd", "fwd-tiny", "dres",
                    "dres-holdout", "small-n-holdout", "dres-few", "wave",
                    "wave-holdout", "ring-table", "regpart",
                    "regpart-holdout", "reduce", "reduce-holdout",
                    "reduce-few", "wide-g", "reread", "wide-holdout",
                    "mid-holdout")


def compile_flags(plan, env_extra=""):
    """The norm-compile flags `prepare` adds to every candidate of `plan`:
    --tuning=false where the candidates are against the cost model (no
    table under them; the grid plans and TABLE_SIDE_PLANS compile with the
    table, by their --rows), then `env_extra` (TUNE_EXTRA_FLAGS, e.g.
    --restrict-arguments=false for an A/B of a pipeline option). A table
    flag in `env_extra` for a cost-model plan would change nothing, so it
    is refused (ValueError) rather than giving two identical sides."""
    table_side = plan.startswith("grid") or plan in TABLE_SIDE_PLANS
    if not table_side and re.search(r"--tuning-file=|--tuning=(true|1)\b",
                                    env_extra):
        raise ValueError(
            "plan %s compiles its candidates with --tuning=false, so %r "
            "would change no kernel; a plan that compares tables belongs "
            "in TABLE_SIDE_PLANS" % (plan, env_extra))
    return (("" if table_side else "--tuning=false") + " " +
            env_extra).strip()


def useful(cfg, m, n):
    """Whether candidate cfg says anything at M: a fixed G no larger than M
    and other than the default's."""
    if cfg.rows and C.bucket_rows(m) != cfg.rows:
        return False
    if cfg.groups:
        return cfg.groups <= m and cfg.groups != C.default_groups(m, n)
    return True


# ----------------------------------------------------------------- prepare

def cmd_prepare(args):
    points, cands = PLANS[args.plan]()
    nc = os.path.join(args.build, "bin", "norm-compile")
    kdir = os.path.join(args.dir, "kernels")
    os.makedirs(kdir, exist_ok=True)
    todo = {}
    for key, cs in cands.items():
        for c in cs:
            todo[c.name] = c
    try:
        extra = compile_flags(args.plan, os.environ.get("TUNE_EXTRA_FLAGS",
                                                        ""))
    except ValueError as ex:
        out("tune: %s" % ex)
        return 2
    t0 = time.time()
    with tempfile.NamedTemporaryFile("w", suffix=".jobs") as jobs:
        jobs.write("".join("\t".join([c.name] + c.flags()) + "\n"
                           for c in todo.values()))
        jobs.flush()
        subprocess.run(["bash", os.path.join(HERE, "..", "scripts",
                                             "compile-configs.sh"), nc, kdir],
                       env=dict(os.environ, JOBS_LIST=jobs.name,
                                EXTRA_FLAGS=extra, JOBS=str(args.jobs),
                                NAME_FILTER=""),
                       check=False)
    configs, failed = {}, {}
    for name, c in sorted(todo.items()):
        ptx = os.path.join(kdir, name + ".ptx")
        man = os.path.join(kdir, name + ".json")
        if not (os.path.isfile(ptx) and os.path.isfile(man)):
            err = os.path.join(kdir, name + ".err")
            msg = open(err).read().strip() if os.path.isfile(err) else ""
            failed[name] = {"flags": c.flags(), "error": msg or "no output"}
            continue
        with open(man) as f:
            manifest = json.load(f)
        configs[name] = {
            "flags": c.flags(), "ptx": "kernels/%s.ptx" % name,
            "manifest": "kernels/%s.json" % name,
            "kernels": [{k: v for k, v in kern.items() if k != "params"}
                        for kern in manifest.get("kernels", [])]}
    with open(os.path.join(args.dir, "configs.json"), "w") as f:
        json.dump({"format_version": 1, "configs": configs,
                   "failed": failed, "eps": C.EPS}, f, indent=1,
                  sort_keys=True)
    lib = os.path.join(args.build, "lib", "libnormrt.so")
    if os.path.isfile(lib):
        subprocess.run(["cp", lib, args.dir], check=True)
    out("tune: %d candidates compiled, %d failed, %.0f s" %
        (len(configs), len(failed), time.time() - t0))
    for name, f in sorted(failed.items()):
        out("  not compiled: %s: %s" % (name, f["error"].splitlines()[-1]
                                        if f["error"] else ""))
    if args.pack:
        # PTX packs to about a fifth: several plans then travel in one
        # device call (run unpacks <dir>.tar.gz where <dir> is missing).
        d = os.path.abspath(args.dir)
        with tarfile.open(d + ".tar.gz", "w:gz") as t:
            t.add(d, arcname=os.path.basename(d))
        out("tune: packed %s.tar.gz (%.1f MB)" % (
            d, os.path.getsize(d + ".tar.gz") / 1e6))
    return 0


# --------------------------------------------------------------------- run

def geometry_note(entry):
    """The dx kernel's launch record, short."""
    for k in entry.get("kernels", []):
        if k.get("kind") in ("dx", "forward"):
            return "T%s L%s S%s C%s" % (k.get("block"), k.get("lanes"),
                                       k.get("rows"), k.get("cluster", 1))
    return ""


def cmd_run(args):
    """One plan, or several (--plan a,b: --dir may hold "{plan}"; each
    plan's run goes to OUT/tune-<plan>.json, its table to stdout, so a
    device call brings back a file a plan). A plan's directory that is
    missing but packed (<dir>.tar.gz, prepare --pack) is unpacked first."""
    plans = [p for p in args.plan.split(",") if p]
    for p in plans:
        if p not in PLANS:
            raise SystemExit("tune: unknown plan %r (known: %s)"
                             % (p, ", ".join(sorted(PLANS))))
    rc = 0
    for p in plans:
        one = argparse.Namespace(**vars(args))
        one.plan = p
        one.dir = args.dir.replace("{plan}", p)
        one.against = getattr(args, "against", "").replace("{plan}", p)
        for d in (one.dir, one.against):
            if d and not os.path.isdir(d) and os.path.isfile(d + ".tar.gz"):
                with tarfile.open(d + ".tar.gz") as t:
                    t.extractall(os.path.dirname(os.path.abspath(d)))
        one.json_name = "tune-%s.json" % p if len(plans) > 1 else "tune.json"
        one.md_name = None if len(plans) > 1 else "tune.md"
        rc |= run_plan(one)
    return rc


def plan_inputs(torch, op, tdt, n, m, cands, device="cuda"):
    """The inputs a point's candidates read, by manifest argument name:
    every input any of them declares (configs.Cfg.expected_args), on fresh
    random data."""
    layer = op.startswith("layer")
    x = (torch.randn(m, n, device=device) +
         (torch.rand(m, 1, device=device) * 2 - 1)).to(tdt)
    w = (1 + 0.25 * torch.randn(n, device=device)).to(tdt)
    ins = {"x": x, "weight": w}
    if op.endswith("_grad"):
        xf = x.float()
        mean = xf.mean(1) if layer else None
        xc = xf - mean[:, None] if layer else xf
        ins["rstd"] = (xc * xc).mean(1).add(C.EPS).rsqrt().contiguous()
        del xf, xc
        ins["dy"] = torch.randn(m, n, device=device).to(tdt)
        if layer:
            ins["mean"] = mean.contiguous()
        if any(c.dres for c in cands):
            ins["dresidual"] = torch.randn(m, n, device=device).to(tdt)
    elif layer:
        ins["bias"] = (0.5 * torch.randn(n, device=device)).to(tdt)
    return ins


def same_kernels(dir_a, entry_a, dir_b, entry_b):
    """Whether two prepared configurations are the same PTX and manifest."""
    for key in ("ptx", "manifest"):
        with open(os.path.join(dir_a, entry_a[key]), "rb") as fa, \
                open(os.path.join(dir_b, entry_b[key]), "rb") as fb:
            if fa.read() != fb.read():
                return False
    return True


def run_plan(args):
    import torch
    from triton.testing import do_bench
    import bench as B
    import gpu_env as E
    points, cands = PLANS[args.plan]()
    index = C.load_index(args.dir)
    # --against: the same configurations compiled by another compiler (a
    # prepared directory of the same plan), run on the same inputs: their
    # time and whether every output is bit for bit the same.
    against = C.load_index(args.against) if getattr(args, "against", "") \
        else None
    rt = E.Runtime(E.find_library(args.dir))
    torch.manual_seed(int.from_bytes(os.urandom(4), "little"))
    tdt = {"bf16": torch.bfloat16, "f16": torch.float16,
           "f32": torch.float32}
    rows = []
    t_start = time.time()
    # Warm-up: triton's first do_bench (its L2-flush buffer) and the first
    # kernel launches, so the first point is not timed cold.
    scratch = [torch.empty(1 << 26, device="cuda")]
    for _ in range(3):
        do_bench(lambda: scratch[0].add_(1), warmup=args.warmup,
                 rep=args.rep)
    scratch.clear()
    for op, dt, n, m in points:
        if args.deadline and time.time() > args.deadline - 10:
            out("tune: deadline: stopping before %s %dx%d" % (op, m, n))
            break
        ins = plan_inputs(torch, op, tdt[dt], n, m, cands[(op, dt, n)])
        grad = op.endswith("_grad")
        base_bits = None
        for c in cands[(op, dt, n)]:
            if not useful(c, m, n):
                continue
            e = index["configs"].get(c.name)
            r = {"op": op, "dtype": dt, "N": n, "M": m, "cfg": c.name,
                 "cluster": c.cluster, "threads": c.threads, "mre": c.mre,
                 "prefetch": c.prefetch, "pv": c.pv, "pl": c.pl, "nc": c.nc,
                 "lanes": c.lanes, "rows": c.rows,
                 "groups": c.groups or C.default_groups(m, n),
                 "fixed_groups": bool(c.groups)}
            if e is None:
                r["error"] = "not compiled"
                rows.append(r)
                continue
            r["geometry"] = geometry_note(e)
            try:
                o = B.Ours(rt, args.dir, e, ins, "ptx")
                res = o.run()
                torch.cuda.synchronize()
                bits = [v.clone() for v in res[1:] if v is not None]
                ref = res[0].float().clone()
                # The default: no knob but, at most, the M's own bucket's
                # rows hint (plans that compile every candidate hinted, as
                # calls get them: few-dx, fwd-retune).
                hinted = c.rows and c.rows == C.bucket_rows(m)
                if base_bits is None and not c.groups and not c.cluster \
                        and not c.threads and (not c.rows or hinted) \
                        and not c.lanes \
                        and not c.fma and not c.mre and not c.prefetch \
                        and not c.pv and not c.pl and not c.nc:
                    base_bits, base_dx = bits, ref
                elif base_bits is not None and not c.groups and \
                        not c.fma:
                    # The forward has no order to keep: its y, mean and
                    # rstd may differ in the last bits like dx.
                    if grad:
                        r["bitwise"] = all(torch.equal(a, b) for a, b in
                                           zip(bits, base_bits))
                    r["dx_rel"] = float((ref - base_dx).norm() /
                                        base_dx.norm())
                us = 1e3 * do_bench(o.run, warmup=args.warmup, rep=args.rep,
                                    return_mode="median")
                torch.cuda.synchronize()
                r["us"] = us
                mb = B.min_bytes if grad else B.min_bytes_fwd
                r["gbs"] = mb(op, m, n, dt) / (us * 1e-6) / 1e9
                if against is not None:
                    ea = against["configs"].get(c.name)
                    if ea is None:
                        r["against_error"] = "not compiled"
                    elif same_kernels(args.dir, e, args.against, ea):
                        # Byte-identical kernels and launches: nothing to
                        # time twice (the device's minutes are few).
                        r["against_same"] = True
                    else:
                        a = B.Ours(rt, args.against, ea, ins, "ptx")
                        res_a = a.run()
                        torch.cuda.synchronize()
                        # Every output, dx / y included, bit for bit;
                        # and which differ (a dx-only change, such as a
                        # rounding of dx's own, against one of dweight /
                        # dbias, which no geometry may make).
                        names = (("y", "mean", "rstd") if not grad else
                                 ("dx", "dweight", "dbias"))
                        r["against_differs"] = [
                            nm for nm, u, v in zip(names, res, res_a)
                            if u is not None and not torch.equal(u, v)]
                        r["against_bitwise"] = not r["against_differs"]
                        # How far the first output (dx, y) is from the
                        # other compiler's: rounding, or a wrong kernel.
                        r["against_rel"] = float(
                            (res[0].float() - res_a[0].float()).norm() /
                            res_a[0].float().norm())
                        r["against_us"] = 1e3 * do_bench(
                            a.run, warmup=args.warmup, rep=args.rep,
                            return_mode="median")
                        # The first kernels again, after the second: the
                        # pair timed on the same warm state.
                        r["us2"] = 1e3 * do_bench(
                            o.run, warmup=args.warmup, rep=args.rep,
                            return_mode="median")
                        a.close()
                o.close()
            except Exception as ex:  # noqa: BLE001
                r["error"] = "%s: %s" % (type(ex).__name__, ex)
            rows.append(r)
        del ins
        torch.cuda.empty_cache()
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, args.json_name), "w") as f:
        json.dump({"plan": args.plan, "rows": rows,
                   "wall_s": time.time() - t_start,
                   "device": torch.cuda.get_device_name()}, f, indent=0)
    md = table(rows)
    if args.md_name:
        with open(os.path.join(args.out, args.md_name), "w") as f:
            f.write(md)
    out(md)
    return 0


def table(rows):
    """Per point: the default's time, the best candidate and its speed-up."""
    by = {}
    for r in rows:
        by.setdefault((r["op"], r["dtype"], r["N"], r["M"]), []).append(r)
    lines = ["| op | M x N | default us | best | best us | x | "
             "bits kept (cluster) |", "| --- | --- | ---: | --- | ---: | "
             "---: | --- |"]
    for (op, dt, n, m), rs in sorted(by.items()):
        ok = [r for r in rs if "us" in r]
        if not ok:
            continue
        base = next((r for r in ok if not r["fixed_groups"] and
                     not r["cluster"] and not r["threads"] and
                     not r.get("rows") and not r.get("lanes")), None)
        best = min(ok, key=lambda r: r["us"])
        bits = [r for r in ok if "bitwise" in r]
        lines.append("| %s | %dx%d | %s | %s (%s) | %.1f | %s | %s |" % (
            op.replace("_norm_grad", ""), m, n,
            "%.1f" % base["us"] if base else "-",
            best["cfg"].split(dt + "-")[-1], best.get("geometry", ""),
            best["us"], "%.2f" % (base["us"] / best["us"]) if base else "-",
            "%d/%d" % (sum(r["bitwise"] for r in bits), len(bits))))
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------- table

MIN_GAIN = 1.05  # a knob enters the table only this much faster
MIN_SAVED_US = 1.0  # and by this many microseconds (the noise of small M)


def midpoint(a, b):
    """The geometric midpoint of two plan values, rounded."""
    return int(round(math.sqrt(a * b)))


# The M edges of the table's row ranges (Tuning.h kTuningRowEdges): an
# entry covers whole buckets between them, so every M of a bucket gets the
# same kernel (the caches of norm_mlir.torch key by the bucket).
ROW_EDGES = (128, 512, 2048, 8192)


def row_bucket(m):
    """The index of M's bucket: 0 for M <= 128, ..., 4 for M > 8192."""
    return sum(m > e for e in ROW_EDGES)


KNOB_KEYS = ("threads", "cluster", "max_lanes", "max_register_elements",
             "prefetch", "partial_vector", "pipeline", "narrow_cache",
             "hold_columns")
NO_KNOB = (0,) * len(KNOB_KEYS)


def knob_of(r):
    """A run row's knobs as the table writes them (KNOB_KEYS); mre and
    prefetch are read from the configuration's name for runs written
    before rows carried them."""
    def tagged(key, tag):
        v = r.get(key)
        if v is None:
            v = next((int(p[len(tag):]) for p in r["cfg"].split("-")
                      if p.startswith(tag) and p[len(tag):].isdigit()), 0)
        return v
    return (r["threads"], r["cluster"], r.get("lanes", 0),
            tagged("mre", "mre"), tagged("prefetch", "pf"), tagged("pv", "pv"),
            tagged("pl", "pl"), tagged("nc", "nc"), max(0, tagged("hc", "hc")))


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def winners(rows):
    """{(op, dtype, N): {bucket: (knob, gain)}}: per M bucket (ROW_EDGES)
    the candidate with the best gain over the bucket's measured M (for the
    backward: of those whose dweight/dbias kept the default's bits at every
    one of them) where it beats the default by MIN_GAIN and MIN_SAVED_US;
    None where none does. A candidate's gain at an M is against the default
    timed in the same run (rows carry "run", their run's index): runs of
    other plans, on other machines of the kind, time the default a few
    percent apart, and absolute times across runs made and unmade entries
    on that noise (LayerNorm forward 1024 x 4096 lost a 1.11x entry when a
    later run timed its default again). Where several runs timed a
    candidate or the default at an M, the last one counts."""
    by, bases = {}, {}
    for r in rows:
        # A rows hint other than the M's own bucket's compiled a kernel no
        # call of that M runs.
        if "us" not in r or r["fixed_groups"] or \
                r.get("rows", 0) not in (0, C.bucket_rows(r["M"])) or \
                "fma" in r["cfg"].split("-"):
            continue
        key = (r["op"], r["dtype"], r["N"], row_bucket(r["M"]))
        knob = knob_of(r)
        by.setdefault(key, {}).setdefault(knob, {})[r["M"]] = r
        if knob == NO_KNOB:
            bases.setdefault((key, r.get("run", 0)), {})[r["M"]] = r["us"]
    out = {}
    for (op, dt, n, b), cands in by.items():
        base = cands.get(NO_KNOB)
        if not base:
            continue
        grad = op.endswith("_grad")
        best, best_gain, best_ms, best_base = None, None, None, None
        for knob, at in cands.items():
            if knob == NO_KNOB:
                continue
            # The bucket's M that the runs which timed this candidate
            # timed the default at: plans measure different M (a candidate
            # of one plan is not refused for an M only another measured).
            runs = {r.get("run", 0) for r in at.values()}
            ms = sorted({m for run in runs
                         for m in bases.get(((op, dt, n, b), run), {})}
                        & set(base)) or sorted(base)
            if any(m not in at for m in ms):
                continue
            # ... and they must reach both ends of what any run measured
            # in the bucket (a candidate timed at M = 64 alone does not
            # stand for M = 1-128: RMSNorm forward N = 1000 on 1024
            # threads, 1.24x at M = 64, was 0.88x at M = 8).
            if ms[0] != min(base) or ms[-1] != max(base):
                continue
            if grad and not all(at[m].get("bitwise") for m in ms):
                continue
            own = [bases.get(((op, dt, n, b), at[m].get("run", 0)), {}).get(
                m, base[m]["us"]) for m in ms]
            gain = geomean([o / at[m]["us"] for o, m in zip(own, ms)])
            if best_gain is None or gain > best_gain:
                best, best_gain, best_ms = knob, gain, ms
                best_base = geomean(own)
        w = out.setdefault((op, dt, n), {})
        if best is not None and best_gain >= MIN_GAIN and \
                best_base - best_base / best_gain >= MIN_SAVED_US:
            w[b] = (best, round(best_gain, 2), best_ms)
        else:
            w[b] = None
    return out


def make_table(rows):
    """The entries of a tuning table (Tuning.h) from run rows: for each
    (op, N) the M buckets where a knob won, adjacent buckets with the same
    knob merged into one M range; N ranges end at the geometric midpoints
    between the N measured for the same (op, dtype) (the first and last N
    half a step beyond)."""
    entries = []
    ws = winners(rows)
    # Buckets above the largest measured one take that bucket's choice
    # where the plans could not go higher (4 x its largest M would pass
    # TENSOR_LIMIT: N = 65536 bf16 stops at M = 4096): the kernels are
    # M-agnostic and more rows are more of the same waves, which the cost
    # model (no entry) serves worse there (bench/RESULTS.md, N = 65536 at M
    # = 16384: 0.63-0.69x quack). Where a plan chose to stop lower, nothing
    # is carried (the forward at N = 7168, measured to M = 1024 only, lost
    # 10% at M = 65536 with the choice of M = 1024).
    top_m = {}
    for r in rows:
        if "us" in r:
            k = (r["op"], r["dtype"], r["N"])
            top_m[k] = max(top_m.get(k, 0), r["M"])
    size = {"f32": 4, "f16": 2, "bf16": 2}
    carried = set()
    for key, w in ws.items():
        if 4 * top_m[key] * key[2] * size[key[1]] <= TENSOR_LIMIT:
            continue
        top = max(w)
        for b in range(top + 1, len(ROW_EDGES) + 1):
            w[b] = w[top]
            carried.add((key, b))
    measured_n = {}
    for op, dt, n in ws:
        measured_n.setdefault((op, dt), set()).add(n)
    for (op, dt, n), w in sorted(ws.items()):
        ns = sorted(measured_n[(op, dt)])
        i = ns.index(n)
        nlo = midpoint(ns[i - 1], n) + 1 if i else max(1, n // 2 + 1)
        nhi = midpoint(n, ns[i + 1]) if i + 1 < len(ns) else 0
        run = []
        for b in range(len(ROW_EDGES) + 2):
            won = w.get(b) if b <= len(ROW_EDGES) else None
            if run and (won is None or won[0] != w[run[0]][0]):
                knob = w[run[0]][0]
                rlo = ROW_EDGES[run[0] - 1] + 1 if run[0] else 1
                rhi = ROW_EDGES[run[-1]] if run[-1] < len(ROW_EDGES) else 0
                grad = op.endswith("_grad")
                e = {"kernel": "dx" if grad else "forward"}
                if grad:
                    e["partial_rows"] = 2 if op.startswith("layer") else 1
                else:
                    e["row_sums"] = 2 if op.startswith("layer") else 1
                e.update({"element_bytes": {"bf16": 2, "f16": 2,
                                            "f32": 4}[dt],
                          "n": [nlo, nhi], "rows": [rlo, rhi],
                          "tuned_n": n})
                for key, v in zip(KNOB_KEYS, knob):
                    if v:
                        e[key] = v
                shown = [x for x in run if ((op, dt, n), x) not in carried]
                e["measured"] = "%s %s N = %d, M = %s: %s x the cost " \
                    "model" % (op, dt, n, ",".join(
                        str(m) for x in shown for m in w[x][2]),
                        ", ".join("%.2f" % w[x][1] for x in shown))
                if len(shown) < len(run):
                    e["measured"] += "; larger M not measured (tensors " \
                        "past the plan's limit): the same"
                entries.append(e)
                run = []
            if won is not None:
                run.append(b)
    return entries


def superseded(rows, fresh):
    """rows less those of (op, dtype, N, M bucket) keys that a row of
    `fresh` measured: a plan run again over entries whose kernels changed
    since (fwd-retune) stands alone there, so that a candidate measured
    only by an older run, against its older default, cannot win on that
    run's numbers."""
    keys = {(r["op"], r["dtype"], r["N"], row_bucket(r["M"]))
            for r in fresh if "us" in r}
    return [r for r in rows
            if (r["op"], r["dtype"], r["N"], row_bucket(r["M"])) not in keys]


def cmd_table(args):
    rows, sources = [], []
    fresh = args.supersede or []
    for i, path in enumerate(args.results + fresh):
        with open(path) as f:
            d = json.load(f)
        for r in d["rows"]:
            r["run"] = len(sources)  # winners() compares within a run
        if i >= len(args.results):
            rows = superseded(rows, d["rows"])
        rows += d["rows"]
        sources.append("%s (plan %s, %s)" % (os.path.basename(path),
                                             d["plan"], d.get("device", "?")))
    entries = make_table(rows)
    # A run given again under --supersede is one source.
    sources = list(dict.fromkeys(sources))
    table = {"family": args.family,
             "about": "Measured geometry choices (%s) for %s, written by "
                      "bench/tune.py table from %s; see docs/GPU.md, The "
                      "tuning table." % (", ".join(KNOB_KEYS), args.family,
                                         "; ".join(sources)),
             "entries": entries}
    with open(args.table, "w") as f:
        json.dump(table, f, indent=1)
        f.write("\n")
    out("tune: %d entries into %s" % (len(entries), args.table))
    return 0


def table_checks(entries):
    """(op, dtype, N, M) at which to compile each tuning-table entry: its N
    range's ends and middle (and the first N past the low end, an odd one
    where the low end is even), each at its M range's ends (M = 4 x the
    low end where unbounded)."""
    out = []
    for e in entries:
        lo, hi = e["n"]
        top = hi or lo * 2
        ns = sorted({lo, (lo + top) // 2, top, min(lo + 3, top)})
        rlo, rhi = e.get("rows", [1, 0])
        ms = sorted({rlo, rhi or rlo * 4})
        dt = {2: "bf16", 4: "f32"}[e.get("element_bytes", 2)]
        if e["kernel"] == "dx":
            ops = ["layer_norm_grad" if e.get("partial_rows") == 2
                   else "rms_norm_grad"]
        else:
            ops = {1: ["rms_norm"], 2: ["layer_norm"]}.get(
                e.get("row_sums", 0), list(C.FWD_OPS))
        out += [(op, dt, n, m) for op in ops for n in ns for m in ms]
    return out


def cmd_check_table(args):
    """Compiles every entry of a tuning table (the embedded one of the
    build, or --tuning-file) at its ranges' ends and middle with
    norm-compile --rows=M: an entry that makes a geometry the compiler
    refuses, or crashes it, anywhere in its ranges fails here before a GPU
    sees it."""
    with open(args.table) as f:
        entries = json.load(f)["entries"]
    nc = os.path.join(args.build, "bin", "norm-compile")
    checks = table_checks(entries)
    failed = 0
    with tempfile.TemporaryDirectory() as d:
        for op, dt, n, m in checks:
            cmd = [nc, "--op=" + op, "--n=%d" % n, "--dtype=" + dt,
                   "--rows=%d" % m, "-o", os.path.join(d, "k.ptx")]
            if op.endswith("_grad"):
                cmd.append("--strategy=deterministic")
            if args.tuning_file:
                cmd.append("--tuning-file=" + args.tuning_file)
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode:
                failed += 1
                out("tune check-table: FAILED %s %s N = %d M = %d: %s" % (
                    op, dt, n, m, (r.stderr.strip().splitlines()
                                   or ["exit %d" % r.returncode])[-1]))
    out("tune check-table: %d entries, %d compiles, %d failed" % (
        len(entries), len(checks), failed))
    return 1 if failed else 0


def cmd_compare(args):
    """The same candidates (configuration, geometry, M) in two runs, e.g.
    the kernels before and after a compiler change timed in one call:
    us before and after, per point, and the geometric mean of
    after / before per (op, dtype)."""
    def load(path):
        with open(path) as f:
            return {(r["cfg"], r["geometry"], r["M"]): r
                    for r in json.load(f)["rows"] if "us" in r}
    a, b = load(args.before), load(args.after)
    common = sorted(set(a) & set(b), key=lambda k: (
        a[k]["op"], a[k]["dtype"], a[k]["N"], k[2], k[0]))
    if not common:
        out("tune compare: no candidate in both runs")
        return 1
    out("| configuration | geometry | M | before us | after us | after / before |")
    out("| --- | --- | ---: | ---: | ---: | ---: |")
    ratios = {}
    for k in common:
        r = b[k]["us"] / a[k]["us"]
        ratios.setdefault((a[k]["op"], a[k]["dtype"]), []).append(r)
        out("| %s | %s | %d | %.1f | %.1f | %.3f |" % (
            k[0], k[1], k[2], a[k]["us"], b[k]["us"], r))
    out("")
    for (op, dt), rs in sorted(ratios.items()):
        out("%s %s: %d points, after / before %.3f (geometric mean), "
            "%.3f-%.3f" % (op, dt, len(rs), geomean(rs), min(rs), max(rs)))
    out("all: %d points, after / before %.3f" % (
        len(common), geomean([r for rs in ratios.values() for r in rs])))
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--plan", default="explore", choices=sorted(PLANS))
    p.add_argument("--dir", default=os.path.join(HERE, "..", ".dev", "tune"))
    p.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--pack", action="store_true",
                   help="also write <dir>.tar.gz (carry it instead of the "
                        "directory)")
    p = sub.add_parser("run")
    p.add_argument("--plan", default="explore",
                   help="a plan, or several comma-separated (then --dir "
                        "may hold {plan}): %s" % ", ".join(sorted(PLANS)))
    p.add_argument("--dir", default=os.path.join(HERE, "..", ".dev", "tune"))
    p.add_argument("--out", default=os.environ.get("OUT") or "tune-out")
    p.add_argument("--deadline", type=float, default=0)
    p.add_argument("--against", default="",
                   help="a directory of the same plan prepared by another "
                        "compiler: each candidate also runs from there "
                        "(against_us, against_bitwise, and against_differs: "
                        "the outputs whose bits differ)")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--rep", type=int, default=20)
    p = sub.add_parser("table")
    p.add_argument("results", nargs="+",
                   help="tune.json of `run`s of the table plans")
    p.add_argument("--supersede", nargs="+", metavar="JSON",
                   help="runs read after RESULTS whose (op, dtype, N, M "
                   "bucket) points replace every earlier run's there")
    p.add_argument("--family", default="sm_90")
    p.add_argument("--table", default=os.path.join(
        HERE, "..", "lib", "Conversion", "NormToGPU", "tuning",
        "sm_90.json"))
    p = sub.add_parser("check-table")
    p.add_argument("--table", default=os.path.join(
        HERE, "..", "lib", "Conversion", "NormToGPU", "tuning",
        "sm_90.json"), help="the table whose entries to compile")
    p.add_argument("--tuning-file", default="",
                   help="compile with this table instead of the embedded "
                        "one (norm-compile --tuning-file; give the same "
                        "file as --table)")
    p.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    p = sub.add_parser("compare")
    p.add_argument("before", help="tune.json of a run")
    p.add_argument("after", help="tune.json of a run of the same plan")
    args = ap.parse_args(argv)
    if args.cmd == "table":
        return cmd_table(args)
    if args.cmd == "compare":
        return cmd_compare(args)
    if args.cmd == "check-table":
        return cmd_check_table(args)
    args.dir = os.path.abspath(args.dir)
    return {"prepare": cmd_prepare, "run": cmd_run}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
