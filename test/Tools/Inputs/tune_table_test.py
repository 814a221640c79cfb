"""bench/tune.py table without a GPU: run rows in, table entries out. The
M buckets of the table's row edges, the geometric mean over a bucket's
measured M, the dweight/dbias bits filter, the max-register-elements
knob, and a table the compiler's parser takes (norm-opt reads it through
--norm-choose-geometry only when embedded, so the keys are checked against
Tuning.cpp's list here)."""

import argparse
import dataclasses
import json
import os
import re
import sys
import tarfile
import tempfile
import unittest
import warnings

ROOT = sys.argv[1]
sys.path.insert(0, os.path.join(ROOT, "bench"))
import tune as T  # noqa: E402


def row(m, us, threads=0, cluster=0, mre=0, bitwise=True, n=262144,
        op="rms_norm_grad", dt="bf16", fma=False, prefetch=0):
    name = "%s-n%d-%s-deterministic" % (op, n, dt)
    name += "".join("-%s%d" % (k, v) for k, v in
                    (("t", threads), ("mre", mre), ("c", cluster),
                     ("pf", prefetch)) if v)
    if fma:
        name += "-fma"
    r = {"op": op, "dtype": dt, "N": n, "M": m, "cfg": name,
         "cluster": cluster, "threads": threads, "lanes": 0, "rows": 0,
         "groups": 1, "fixed_groups": False, "us": us}
    if threads or cluster or mre or prefetch:
        r["bitwise"] = bitwise
    return r


def write_table(d, entries):
    """A tuning table of `entries` in directory d; its path."""
    path = os.path.join(d, "t.json")
    with open(path, "w") as f:
        json.dump({"entries": entries}, f)
    return path


def runs(*lists):
    """The row lists, each tagged with its index as `run` (what cmd_table
    gives each file's rows)."""
    for i, rs in enumerate(lists):
        for r in rs:
            r["run"] = i
    return lists


class Table(unittest.TestCase):
    def test_buckets(self):
        self.assertEqual([T.row_bucket(m) for m in
                          (1, 128, 129, 512, 513, 2048, 2049, 8192, 8193)],
                         [0, 0, 1, 1, 2, 2, 3, 3, 4])

    def test_bucket_geomean_and_mre(self):
        # Bucket 0 has M = 1, 8, 64: c8 wins at 1 and 8, the looped split
        # (mre 32) at 64 and in geometric mean over the three.
        rows = [row(1, 100), row(8, 100), row(64, 100),
                row(1, 20, cluster=8), row(8, 25, cluster=8),
                row(64, 300, cluster=8),
                row(1, 22, cluster=8, mre=32), row(8, 26, cluster=8, mre=32),
                row(64, 80, cluster=8, mre=32),
                # bucket 1: nothing beats the default
                row(256, 100), row(256, 99, cluster=8, mre=32),
                # a faster candidate whose bits differ never wins
                row(256, 50, cluster=4, bitwise=False),
                # an fma candidate is no knob of the table
                row(256, 40, fma=True)]
        es = T.make_table(rows)
        self.assertEqual(len(es), 1)
        e = es[0]
        self.assertEqual(e["rows"], [1, 128])
        self.assertEqual(e["cluster"], 8)
        self.assertEqual(e["max_register_elements"], 32)
        self.assertNotIn("threads", e)
        self.assertEqual(e["partial_rows"], 1)
        self.assertIn("M = 1,8,64", e["measured"])

    def test_runs_with_other_m(self):
        # Two runs measure bucket 0 at different M (run 0: 1, 16, 64; run
        # 1: 1, 8, 64). A candidate of run 1 is judged on run 1's M against
        # run 1's default, not refused for M = 16, which only run 0 timed;
        # the entry names the tuned N.
        rows = [dict(row(m, 100), run=0) for m in (1, 16, 64)]
        rows += [dict(row(m, 90, cluster=4), run=0) for m in (1, 16, 64)]
        rows += [dict(row(m, 110), run=1) for m in (1, 8, 64)]
        rows += [dict(row(m, 50, cluster=8), run=1) for m in (1, 8, 64)]
        es = T.make_table(rows)
        self.assertEqual(len(es), 1)
        self.assertEqual(es[0]["cluster"], 8)
        self.assertEqual(es[0]["tuned_n"], 262144)
        self.assertIn("M = 1,8,64: 2.20 x", es[0]["measured"])
        # A run that timed the bucket at M = 64 alone: its candidate, 3x
        # there, does not reach the bucket's ends (M = 1) and stands for
        # nothing; run 1's cluster of 8 still wins.
        rows += [dict(row(64, 100), run=2),
                 dict(row(64, 33, threads=1024), run=2)]
        es = T.make_table(rows)
        self.assertEqual(len(es), 1)
        self.assertEqual(es[0]["cluster"], 8)
        self.assertNotIn("threads", es[0])

    def test_fma_is_no_knob(self):
        # An fma kernel is compiled with the cost model's knobs: it must not
        # stand in for the default (its time would hide the 512 threads'
        # win here).
        rows = [row(16384, 100, n=4096), row(16384, 90, n=4096, threads=512),
                row(16384, 50, n=4096, fma=True)]
        es = T.make_table(rows)
        self.assertEqual(len(es), 1)
        self.assertEqual(es[0]["threads"], 512)

    def test_merge_adjacent(self):
        # The same knob in buckets 2 and 3 is one range, [513, 8192]; a
        # bucket where a candidate lacks one of its M is not won by it.
        rows = []
        for m in (1024, 4096, 16384):
            rows += [row(m, 100, n=4096), row(m, 80, threads=512, n=4096)]
        rows[-1]["bitwise"] = False
        es = T.make_table(rows)
        self.assertEqual([e["rows"] for e in es], [[513, 8192]])
        self.assertEqual(es[0]["threads"], 512)
        self.assertEqual(es[0]["n"], [2049, 0])

    def test_prefetch_knob(self):
        # A prefetch candidate (the knob read from its name, as in runs
        # whose rows do not carry it) wins bucket 4 (M > 8192) alone.
        rows = [row(16384, 100, n=4096), row(16384, 90, n=4096, prefetch=1),
                row(16384, 95, n=4096, threads=512)]
        es = T.make_table(rows)
        self.assertEqual(len(es), 1)
        self.assertEqual(es[0]["prefetch"], 1)
        self.assertEqual(es[0]["rows"], [8193, 0])
        self.assertNotIn("threads", es[0])

    def test_carried_to_larger_m(self):
        # N = 65536: measured up to M = 4096 (bucket 3); the winner there
        # also serves M > 8192 (bucket 4), which no plan could measure, and
        # the entry says so. A bucket measured as a loss carries nothing.
        rows = [row(1024, 100, n=65536), row(1024, 101, n=65536, cluster=8),
                row(4096, 100, n=65536), row(4096, 60, n=65536, cluster=8)]
        es = T.make_table(rows)
        self.assertEqual(len(es), 1)
        self.assertEqual(es[0]["rows"], [2049, 0])
        self.assertEqual(es[0]["cluster"], 8)
        self.assertIn("M = 4096: 1.67 x", es[0]["measured"])
        self.assertIn("larger M not measured", es[0]["measured"])
        rows = [row(1024, 100, n=65536), row(1024, 60, n=65536, cluster=8),
                row(4096, 100, n=65536), row(4096, 101, n=65536, cluster=8)]
        self.assertEqual([e["rows"] for e in T.make_table(rows)],
                         [[513, 2048]])
        # N = 4096 stopped at M = 4096 by the plan's choice (16384 rows
        # would fit): the larger M keep the cost model.
        rows = [row(4096, 100, n=4096), row(4096, 60, n=4096, cluster=8)]
        self.assertEqual([e["rows"] for e in T.make_table(rows)],
                         [[2049, 8192]])

    def test_forward_of_two_runs(self):
        # The forward's LayerNorm and RMSNorm kernels get entries of their
        # own (row_sums 2 and 1); a second run that measures the same point
        # again (its default too) replaces the first's rows instead of
        # dropping the point.
        def fwd(m, us, op, threads=0, lanes=0):
            r = row(m, us, threads=threads, n=16384, op=op)
            r["cfg"] = r["cfg"].replace("-deterministic", "")
            if lanes:
                r["cfg"] += "-l%d" % lanes
                r["lanes"] = lanes
            return r
        first = [fwd(64, 100, op) for op in ("layer_norm", "rms_norm")]
        second = [fwd(64, 90, op) for op in ("layer_norm", "rms_norm")] + \
            [fwd(64, 60, op, threads=1024, lanes=1024)
             for op in ("layer_norm", "rms_norm")]
        es = T.make_table(first + second)
        self.assertEqual(len(es), 2)
        self.assertEqual([e["kernel"] for e in es], ["forward", "forward"])
        self.assertEqual(sorted(e["row_sums"] for e in es), [1, 2])
        for e in es:
            self.assertEqual((e["threads"], e["max_lanes"]), (1024, 1024))
            self.assertIn("1.50 x", e["measured"])
        # each forward's own winner: RMSNorm's 1024 threads, LayerNorm's
        # none (its candidate is slower there)
        third = [fwd(64, 100, op) for op in ("layer_norm", "rms_norm")] + \
            [fwd(64, 130, "layer_norm", threads=1024, lanes=1024),
             fwd(64, 70, "rms_norm", threads=1024, lanes=1024)]
        es = T.make_table(third)
        self.assertEqual([e["row_sums"] for e in es], [1])
        self.assertIn("rms_norm bf16 N = 16384", es[0]["measured"])

    def test_gain_within_a_run(self):
        # Run 0 times the default at 100 and 512 threads at 90 (1.11x); run
        # 1 times the default again at 88 and a cluster at 87 (1.01x). The
        # threads win on their own run's default, not against run 1's.
        r0, r1 = runs(
            [row(16384, 100, n=4096), row(16384, 90, n=4096, threads=512)],
            [row(16384, 88, n=4096), row(16384, 87, n=4096, cluster=2)])
        es = T.make_table(r0 + r1)
        self.assertEqual(len(es), 1)
        self.assertEqual(es[0]["threads"], 512)
        self.assertIn("1.11 x", es[0]["measured"])

    def test_run_several_plans(self):
        # run --plan a,b: one directory a plan ({plan} in --dir), a packed
        # one unpacked first, one JSON a plan and no tune.md.
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, "tune-wide")
            os.makedirs(os.path.join(src, "kernels"))
            with open(os.path.join(src, "configs.json"), "w") as f:
                f.write("{}")
            with tarfile.open(src + ".tar.gz", "w:gz") as t:
                t.add(src, arcname="tune-wide")
            os.rename(src, src + ".moved")
            seen = []
            real = T.run_plan
            T.run_plan = lambda a: seen.append(
                (a.plan, os.path.isfile(os.path.join(a.dir, "configs.json")),
                 a.json_name, a.md_name)) or 0
            try:
                rc = T.cmd_run(argparse.Namespace(
                    plan="wide,fma", dir=os.path.join(d, "tune-{plan}"),
                    out=d, deadline=0, warmup=1, rep=1))
            finally:
                T.run_plan = real
            self.assertEqual(rc, 0)
            self.assertEqual(seen, [("wide", True, "tune-wide.json", None),
                                    ("fma", False, "tune-fma.json", None)])

    def test_run_against_unpacked(self):
        # run --against DIR: the other compiler's directory of the plan is
        # unpacked like --dir and handed to the run.
        with tempfile.TemporaryDirectory() as d:
            for name in ("tune-wide", "old-wide"):
                src = os.path.join(d, name)
                os.makedirs(os.path.join(src, "kernels"))
                with open(os.path.join(src, "configs.json"), "w") as f:
                    f.write("{}")
                with tarfile.open(src + ".tar.gz", "w:gz") as t:
                    t.add(src, arcname=name)
                os.rename(src, src + ".moved")
            seen = []
            real = T.run_plan
            T.run_plan = lambda a: seen.append(
                (a.against, os.path.isfile(os.path.join(a.against,
                                                        "configs.json")))) \
                or 0
            try:
                rc = T.cmd_run(argparse.Namespace(
                    plan="wide", dir=os.path.join(d, "tune-{plan}"),
                    against=os.path.join(d, "old-{plan}"),
                    out=d, deadline=0, warmup=1, rep=1))
            finally:
                T.run_plan = real
            self.assertEqual(rc, 0)
            self.assertEqual(seen, [(os.path.join(d, "old-wide"), True)])

    def test_compare(self):
        # compare: the candidates in both runs (configuration, geometry, M),
        # after / before a point and in geometric mean per (op, dtype).
        def run(rows):
            return {"plan": "p", "rows": [
                {"op": "layer_norm_grad", "dtype": "bf16", "N": 4096,
                 "M": m, "cfg": cfg, "geometry": geo, "us": us}
                for cfg, geo, m, us in rows]}
        before = run([("a", "T256", 1024, 10.0), ("a", "T256", 4096, 40.0),
                      ("b", "T128", 1024, 8.0)])
        after = run([("a", "T256", 1024, 5.0), ("a", "T256", 4096, 80.0),
                     ("b", "T512", 1024, 1.0)])  # b: another geometry
        lines = []
        real = T.out
        T.out = lines.append
        try:
            with tempfile.TemporaryDirectory() as d:
                paths = []
                for name, r in (("before", before), ("after", after)):
                    paths.append(os.path.join(d, name + ".json"))
                    with open(paths[-1], "w") as f:
                        json.dump(r, f)
                rc = T.cmd_compare(argparse.Namespace(before=paths[0],
                                                      after=paths[1]))
        finally:
            T.out = real
        self.assertEqual(rc, 0)
        self.assertIn("| a | T256 | 1024 | 10.0 | 5.0 | 0.500 |", lines)
        self.assertIn("| a | T256 | 4096 | 40.0 | 80.0 | 2.000 |", lines)
        self.assertFalse(any(l.startswith("| b ") for l in lines))
        self.assertIn("layer_norm_grad bf16: 2 points, after / before "
                      "1.000 (geometric mean), 0.500-2.000", lines)

    def test_supersede(self):
        # Run 0 measured a knob at 1.25x its default; run 1 (the fresh
        # one) measures the default and another knob, 1.10x, at the same
        # bucket. Merged, run 0's knob wins on its own run's numbers;
        # superseded, run 0's rows are gone there and run 1's knob wins.
        # A bucket run 1 did not measure keeps run 0's rows.
        r0, r1 = runs(
            [row(1024, 100, n=4096), row(1024, 80, n=4096, threads=512),
             row(16384, 100, n=4096), row(16384, 80, n=4096, threads=512)],
            [row(1024, 100, n=4096), row(1024, 91, n=4096, cluster=2)])
        merged = T.make_table(r0 + r1)
        self.assertEqual([(e["rows"], e.get("threads")) for e in merged],
                         [([513, 2048], 512), ([8193, 0], 512)])
        kept = T.make_table(T.superseded(r0, r1) + r1)
        self.assertEqual([(e["rows"], e.get("threads"), e.get("cluster"))
                          for e in kept],
                         [([513, 2048], None, 2), ([8193, 0], 512, None)])
        with tempfile.TemporaryDirectory() as d:
            paths = []
            for i, rs in enumerate((r0, r1)):
                paths.append(os.path.join(d, "run%d.json" % i))
                with open(paths[-1], "w") as f:
                    json.dump({"plan": "p", "rows": rs}, f)
            table = os.path.join(d, "table.json")
            real, T.out = T.out, lambda *a: None
            try:
                T.cmd_table(argparse.Namespace(
                    results=paths[:1], supersede=paths[1:], family="x",
                    table=table))
            finally:
                T.out = real
            with open(table) as f:
                got = json.load(f)["entries"]
        self.assertEqual([e.get("cluster") for e in got], [2, None])

    def test_retune_plan_has_the_tables_knobs(self):
        # fwd-retune measures again every forward knob the table holds at
        # its N (else a stale measurement of it could keep its entry).
        with tempfile.TemporaryDirectory() as d:
            path = write_table(d, [
                {"kernel": "forward", "row_sums": 2, "element_bytes": 2,
                 "n": [2291, 3029], "rows": [513, 2048], "tuned_n": 2560,
                 "threads": 256, "max_lanes": 32,
                 "max_register_elements": 128, "hold_columns": 1},
                {"kernel": "dx", "partial_rows": 1, "element_bytes": 2,
                 "n": [1, 0], "rows": [1, 0], "tuned_n": 4096,
                 "threads": 512}])
            knobs = T.table_knobs(path)
        self.assertEqual(knobs, {
            ("layer_norm", "bf16", 2560): {(256, 0, 32, 128, 1)},
            ("layer_norm", "f16", 2560): {(256, 0, 32, 128, 1)}})
        _, cands = T.fwd_retune_plan()
        for key, ks in T.table_knobs().items():
            if key in cands:
                have = {(c.threads, c.cluster, c.lanes, c.mre, c.hc)
                        for c in cands[key]}
                self.assertLessEqual(ks, have, key)

    def test_wide_big_plan(self):
        # Each point's candidates carry its bucket's rows hint (the table
        # skips any other), the cost model among them, every knob the
        # table holds for the backward at those N and buckets, and G = 64
        # (information: the table skips a fixed G) at the bucket of 1024
        # only; no point's tensor past the plan's limit.
        points, cands = T.wide_big_plan()
        self.assertIn(("layer_norm_grad", "bf16", 65536, 1024), points)
        for op, dt, n, m in points:
            size = 4 if dt == "f32" else 2
            self.assertLessEqual(m * n * size, T.TENSOR_LIMIT)
            hinted = [c for c in cands[(op, dt, n)]
                      if c.rows == T.C.bucket_rows(m)]
            self.assertIn(T.C.Cfg(op, n, dt, rows=T.C.bucket_rows(m)),
                          hinted)
            grad = op.endswith("_grad")
            fixed = [c for c in hinted if c.groups]
            self.assertEqual(len(fixed), int(grad and m == 1024))
        have = {(c.threads, c.cluster, c.lanes, c.mre, c.prefetch)
                for c in cands[("layer_norm_grad", "bf16", 65536)]}
        for knob in ((512, 0, 0, 0, 1), (0, 8, 0, 0, 0), (256, 8, 0, 0, 0),
                     (0, 8, 0, 32, 0), (0, 4, 0, 32, 0)):
            self.assertIn(knob, have)
        _, few = T.PLANS["wide-few"]()
        self.assertEqual({c.rows for cs in few.values() for c in cs}, {1})

    def test_mid_big_plan_has_the_tables_knobs(self):
        # mid-big / mid-big-fwd go to `table` under --supersede, which
        # drops every earlier row at their points: each knob an entry of
        # the checked-in table holds at their N and M must be timed
        # again, at every bucket hint, with the cost model among them.
        fields = tuple(T.ENTRY_KNOBS.values())
        for plan in ("mid-big", "mid-big-fwd"):
            points, cands = T.PLANS[plan]()
            hints = {T.C.bucket_rows(m) for m in T.MID_BIG_M}
            for key, ks in T.entry_knobs(min(T.MID_BIG_M)).items():
                if key not in cands:
                    continue
                have = {(c.rows,) + tuple(getattr(c, f) for f in fields)
                        for c in cands[key]}
                op, dt, n = key
                base = T.C.Cfg(op, n, dt)
                for k in ks:
                    c = dataclasses.replace(base, **k)
                    for h in hints:
                        self.assertIn((h,) + tuple(getattr(c, f)
                                                   for f in fields),
                                      have, (plan, key, k, h))
            for op, dt, n, m in points:
                self.assertIn(T.C.Cfg(op, n, dt, rows=T.C.bucket_rows(m)),
                              cands[(op, dt, n)])
        # An entry key the plan cannot map to a knob is an error.
        with tempfile.TemporaryDirectory() as d:
            path = write_table(d, [
                {"kernel": "dx", "partial_rows": 1, "element_bytes": 2,
                 "n": [1, 0], "rows": [1, 0], "tuned_n": 4096,
                 "new_knob": 3}])
            with self.assertRaises(ValueError):
                T.entry_knobs(path=path)

    def test_table_diff_pick(self):
        # bench/table_diff.py: the entry covering (op, dtype, N, M) gives
        # its knobs in KNOB_KEYS order; outside every entry, the cost model.
        import table_diff as D
        entries = [{"kernel": "dx", "partial_rows": 2, "element_bytes": 2,
                    "n": [56757, 80265], "rows": [513, 2048],
                    "tuned_n": 65536, "threads": 512, "prefetch": 1},
                   {"kernel": "dx", "partial_rows": 1, "element_bytes": 2,
                    "n": [56757, 0], "rows": [1, 0], "tuned_n": 65536,
                    "cluster": 8},
                   {"kernel": "forward", "row_sums": 2, "element_bytes": 4,
                    "n": [1, 0], "rows": [1, 0], "tuned_n": 1024,
                    "max_lanes": 32}]
        self.assertEqual(D.pick(entries, "layer_norm_grad", "bf16", 65536,
                                1024), (512, 0, 0, 0, 1, 0, 0, 0, 0))
        self.assertEqual(D.pick(entries, "layer_norm_grad", "bf16", 65536,
                                4096), T.NO_KNOB)
        self.assertEqual(D.pick(entries, "layer_norm_grad", "f32", 65536,
                                1024), T.NO_KNOB)
        self.assertEqual(D.pick(entries, "rms_norm_grad", "bf16", 262144,
                                1), (0, 8, 0, 0, 0, 0, 0, 0, 0))
        self.assertEqual(D.pick(entries, "layer_norm", "f32", 5, 9),
                         (0, 0, 32, 0, 0, 0, 0, 0, 0))
        self.assertEqual(D.pick(entries, "rms_norm", "f32", 5, 9), T.NO_KNOB)

    def test_rows_hint(self):
        # A candidate compiled with a rows hint counts at the M of that
        # hint's bucket (the kernel a call of that M gets), against the
        # default with the same hint; with another bucket's hint it is no
        # measurement of that M.
        def hinted(m, us, hint, threads=0):
            r = row(m, us, threads=threads, n=4096, op="rms_norm")
            r["rows"] = hint
            return r
        rows = [hinted(1024, 100, 513), hinted(2048, 100, 513),
                hinted(1024, 80, 513, threads=128),
                hinted(2048, 80, 513, threads=128),
                # bucket 2049-8192: the fast candidate carries bucket
                # 513's hint there, the one of its own hint is no faster
                hinted(4096, 100, 2049), hinted(8192, 100, 2049),
                hinted(4096, 100, 2049, threads=512),
                hinted(8192, 100, 2049, threads=512),
                hinted(4096, 50, 513, threads=512),
                hinted(8192, 50, 513, threads=512)]
        es = T.make_table(rows)
        self.assertEqual([(e["rows"], e.get("threads")) for e in es],
                         [([513, 2048], 128)])
        _, cands = T.fwd_retune_plan()
        for cs in cands.values():
            self.assertEqual(sorted({c.rows for c in cs}),
                             list(T.FWD_RETUNE_HINTS))
            for m in T.FWD_RETUNE_M:
                self.assertTrue(any(T.useful(c, m, 4096) for c in cs))

    def test_holdout_odd_plan(self):
        # Odd N and f16, each the table's configuration against the cost
        # model's, compiled with the table (not --tuning=false).
        points, cands = T.holdout_odd_plan()
        self.assertIn("holdout-odd", T.TABLE_SIDE_PLANS)
        self.assertEqual({dt for _, dt, _, _ in points},
                         {"f16", "bf16", "f32"})
        self.assertTrue(any(n % 2 for _, _, n, _ in points))
        for cs in cands.values():
            tuned = [c for c in cs if not c.untuned]
            self.assertEqual(
                sorted(c.name for c in cs if c.untuned),
                sorted(T.dataclasses.replace(c, untuned=True).name
                       for c in tuned))

    def test_dres_plan(self):
        # Each grad configuration with and without dresidual, compiled
        # with the table (what norm_mlir.torch runs), bf16 and f32.
        points, cands = T.dres_plan()
        self.assertIn("dres", T.TABLE_SIDE_PLANS)
        self.assertEqual({op for op, _, _, _ in points}, set(T.C.GRAD_OPS))
        self.assertEqual({dt for _, dt, _, _ in points}, {"bf16", "f32"})
        for cs in cands.values():
            plain = sorted(c.name for c in cs if not c.dres)
            self.assertTrue(plain)
            self.assertEqual(
                sorted(c.name for c in cs if c.dres),
                sorted(T.dataclasses.replace(c, dres=True).name
                       for c in cs if not c.dres))
            self.assertTrue(all("--dresidual" in c.flags() for c in cs
                                if c.dres))

    def test_run_gives_every_input_a_candidate_declares(self):
        # run_plan binds buffers by manifest argument name: an input a
        # candidate declares (dresidual for plan dres) and run does not
        # make fails that candidate on the device, after the device time
        # is spent.
        try:
            with warnings.catch_warnings():  # torch's, about numpy
                warnings.simplefilter("ignore")
                import torch
        except ImportError:
            self.skipTest("no torch")
        tdt = {"bf16": torch.bfloat16, "f16": torch.float16,
               "f32": torch.float32}
        for plan in sorted(T.PLANS):
            points, cands = T.PLANS[plan]()
            for op, dt, n in {(op, dt, n) for op, dt, n, _ in points}:
                cs = cands[(op, dt, n)]
                ins = T.plan_inputs(torch, op, tdt[dt], 8, 4, cs, "cpu")
                for c in cs:
                    wanted = {a[0] for a in c.expected_args()
                              if a[1] == "input"}
                    self.assertLessEqual(wanted, set(ins), (plan, c.name))

    def test_keys_known_to_the_parser(self):
        with open(os.path.join(ROOT, "lib", "Conversion", "NormToGPU",
                               "Tuning.cpp")) as f:
            src = f.read()
        known = set(re.findall(r'"([a-z_]+)"', src[src.index("known[]"):
                                                  src.index("};",
                                                  src.index("known[]"))]))
        rows = [row(1, 100), row(1, 20, threads=256, cluster=8, mre=32,
                                 prefetch=1)]
        for e in T.make_table(rows):
            self.assertLessEqual(set(e), known)


class CompileFlags(unittest.TestCase):
    def test_table_flags_need_a_table_side_plan(self):
        # A plan against the cost model compiles --tuning=false: a table
        # given on top would change no kernel, so both sides of an A/B of
        # tables would be one kernel. Refused; a table-side plan takes it.
        self.assertEqual(T.compile_flags("packed"), "--tuning=false")
        self.assertEqual(T.compile_flags("packed", "--forward-finish=0"),
                         "--tuning=false --forward-finish=0")
        for flags in ("--tuning-file=/t.json", "--tuning=true"):
            with self.assertRaises(ValueError):
                T.compile_flags("packed", flags)
        self.assertEqual(T.compile_flags("wide-holdout",
                                         "--tuning-file=/t.json"),
                         "--tuning-file=/t.json")
        self.assertEqual(T.compile_flags("grid-cfgs", "--tuning-file=/t"),
                         "--tuning-file=/t")
        self.assertIn("wide-holdout", T.TABLE_SIDE_PLANS)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
