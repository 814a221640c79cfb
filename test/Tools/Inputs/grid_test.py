"""bench/grid.py without a GPU: the plan (points, 4 GiB limit, shards),
the dry run against a configs.json, merging shard JSONs and the report
(RESULTS.md section, heat maps when matplotlib is there) from synthetic
runs.

  python3 grid_test.py SRC_ROOT
"""

import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(sys.argv[1], "bench"))
import configs as C  # noqa: E402
import grid as G  # noqa: E402


def row(op, dt, wdt, m, n, impl, us=None, error=None, label=None, **kw):
    r = {"op": op, "dtype": dt, "wdtype": wdt, "M": m, "N": n,
         "m_label": label or str(m), "impl": impl, "note": "",
         "bytes": G.min_bytes(op, m, n, dt, wdt), "copy_gbs": 4000.0}
    if us is not None:
        r["us"] = us
        r["gbs"] = r["bytes"] / (us * 1e-6) / 1e9
        r["pct_copy"] = 100.0 * r["gbs"] / 4000.0
        r["bitwise"] = True
        if op.endswith("_grad"):
            r["bitwise_wb"] = True
    if error:
        r["error"] = error
    r.update(kw)
    return r


def run_json(rows, shard="", planned=()):
    return {"format": 1, "command": "python3 bench/grid.py --shard %s" % shard,
            "shard": shard, "copy_gbs": 4000.0,
            "env": {"device": "NVIDIA H200", "date_utc": "2026-12-01 12:00",
                    "kernels_git_head": "abc1234", "torch": "2.11",
                    "triton": "3.6", "quack_version": "0.6.5",
                    "quack": "available", "liger_version": "0.8.5"},
            "impls": list(G.DEFAULT_IMPLS), "planned": [list(p) for p in
                                                        planned],
            "not_reached": [], "stopped": "", "complete": True,
            "wall_s": 100.0, "rows": rows}


class Plan(unittest.TestCase):
    def test_points(self):
        pts = C.grid_points()
        self.assertEqual(len(pts), len(set(p[:5] for p in pts)))
        for op, dt, wdt, m, n, lab in pts:
            self.assertLessEqual(m * n * G.SIZE[dt], C.GRID_TENSOR_BYTES)
        # every (op, N, dtypes) has a "max" point (or a listed M equal
        # to it), and bf16 covers the whole N list
        for n in C.GRID_N:
            ms = [p[3] for p in pts if p[0] == "rms_norm_grad" and
                  p[1] == "bf16" and p[2] == "bf16" and p[4] == n]
            self.assertIn(C.grid_max_m(n, "bf16"), ms)
        names = {c.name for c in C.grid_cfgs()}
        for op, dt, wdt, m, n, lab in pts:
            self.assertIn(G.cfg_for(op, n, dt, wdt, m).name, names)
        self.assertIn("rms_norm-n768-bf16-wf32-r1",
                      {c.name for c in C.grid_cfgs()})
        # a point's configuration is norm_mlir.torch's for its M: the
        # first M of its bucket of the table's row edges as the rows hint
        self.assertEqual([C.bucket_rows(m) for m in
                          (1, 128, 129, 512, 513, 2048, 2049, 8192, 8193,
                           65536)],
                         [1, 1, 129, 129, 513, 513, 2049, 2049, 8193, 8193])
        self.assertEqual(C.grid_cfg("rms_norm", 1000, "bf16", "bf16",
                                    300).rows, 129)
        # tuned_rows: the first M of the table entry that serves a point
        table = [{"kernel": "dx", "partial_rows": 1, "element_bytes": 2,
                  "n": [60000, 70000], "rows": [129, 8192], "cluster": 8}]
        self.assertEqual(C.tuned_rows("rms_norm_grad", 65536, "bf16",
                                      "bf16", 1024, table), 129)
        self.assertEqual(C.tuned_rows("rms_norm_grad", 65536, "bf16",
                                      "bf16", 64, table), 0)
        self.assertEqual(C.tuned_rows("layer_norm_grad", 65536, "bf16",
                                      "bf16", 1024, table), 0)
        self.assertEqual(C.tuned_rows("rms_norm_grad", 65536, "f32",
                                      "f32", 1024, table), 0)
        self.assertEqual(C.tuned_rows("rms_norm", 65536, "bf16",
                                      "bf16", 1024, table), 0)

    def test_sets_env(self):
        os.environ.pop("NORM_CONFIG_SETS", None)
        base = {c.name for c in C.all_cfgs()}
        os.environ["NORM_CONFIG_SETS"] = "grid"
        try:
            more = {c.name for c in C.all_cfgs()}
        finally:
            del os.environ["NORM_CONFIG_SETS"]
        self.assertTrue(base < more)
        self.assertEqual(more - base, {c.name for c in C.grid_cfgs()} - base)

    def test_shards_cover_once(self):
        pts = C.grid_points(ops=("rms_norm_grad", "layer_norm"))
        impls = list(G.DEFAULT_IMPLS)
        seen = []
        for k in range(1, 6):
            mine, load = G.shard_points(pts, impls, k, 5)
            seen += mine
            again, _ = G.shard_points(pts, impls, k, 5)
            self.assertEqual(mine, again)
        self.assertEqual(sorted(seen), sorted(pts))
        self.assertLess(max(load) / min(load), 1.3)

    def test_dry_run(self):
        with tempfile.TemporaryDirectory() as d:
            cfgs = {c.name: {} for c in C.grid_cfgs()}
            with open(os.path.join(d, "configs.json"), "w") as f:
                json.dump({"configs": cfgs, "git_head": "abc"}, f)
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                rc = G.main(["--dry-run", "--gpu-dir", d, "--shards", "4"])
            self.assertEqual(rc, 0, buf.getvalue())
            self.assertIn("every grid configuration compiled", buf.getvalue())
            self.assertIn("shard 4/4", buf.getvalue())
            del cfgs["rms_norm_grad-n96-bf16-deterministic-r1"]
            with open(os.path.join(d, "configs.json"), "w") as f:
                json.dump({"configs": cfgs, "git_head": "abc"}, f)
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                rc = G.main(["--dry-run", "--gpu-dir", d])
            self.assertEqual(rc, 1)
            self.assertIn("NOT COMPILED rms_norm_grad-n96-bf16-deterministic",
                          buf.getvalue())


class MergeReport(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.d = self.tmp.name
        a = [row("rms_norm_grad", "bf16", "bf16", 4096, 4096, "ours", 50.0),
             row("rms_norm_grad", "bf16", "bf16", 4096, 4096, "eager", 60.0),
             row("rms_norm_grad", "bf16", "bf16", 4096, 4096, "quack",
                 error="RuntimeError: boom"),
             row("rms_norm_grad", "bf16", "bf16", 1, 4096, "ours", 4.0),
             row("rms_norm_grad", "bf16", "bf16", 1, 4096, "compile", 3.0),
             row("layer_norm", "bf16", "bf16", 65536, 8192, "ours", 500.0,
                 bitwise=False),
             row("layer_norm", "bf16", "bf16", 65536, 8192, "liger", 550.0)]
        b = [row("rms_norm_grad", "bf16", "bf16", 4096, 4096, "quack", 40.0),
             row("layer_norm_grad", "f32", "f32", 16384, 1024, "ours", 30.0,
                 bitwise_wb=False),
             row("layer_norm_grad", "f32", "f32", 16384, 1024, "eager", 33.0),
             row("rms_norm", "bf16", "f32", 262144, 2048, "ours", 300.0,
                 label="max")]
        self.pa = os.path.join(self.d, "grid-1-of-2.json")
        self.pb = os.path.join(self.d, "grid-2-of-2.json")
        with open(self.pa, "w") as f:
            json.dump(run_json(a, "1/2", planned=[
                ("rms_norm", "f16", "f16", 1, 64, 64, "1")]), f)
        with open(self.pb, "w") as f:
            json.dump(run_json(b, "2/2"), f)

    def tearDown(self):
        self.tmp.cleanup()

    def merged(self):
        outp = os.path.join(self.d, "RESULTS-grid.json")
        with contextlib.redirect_stdout(io.StringIO()):
            self.assertEqual(G.main(["--merge", self.pa, self.pb, "--out",
                                     outp]), 0)
        with open(outp) as f:
            return outp, json.load(f)

    def test_merge(self):
        _, d = self.merged()
        self.assertEqual(len(d["runs"]), 2)
        c = G.cells(d)
        # the measured quack row of run b wins over run a's error
        q = c[("rms_norm_grad", "bf16", "bf16", 4096, 4096)]["quack"]
        self.assertEqual(q["us"], 40.0)
        self.assertEqual(len(d["rows"]), 10)
        # merging a merge keeps the runs
        outp2 = os.path.join(self.d, "again.json")
        with contextlib.redirect_stdout(io.StringIO()):
            G.main(["--merge", os.path.join(self.d, "RESULTS-grid.json"),
                    "--out", outp2])
        with open(outp2) as f:
            self.assertEqual(len(json.load(f)["runs"]), 2)

    def test_stats(self):
        _, d = self.merged()
        st = G.stats(d)
        fam = st["families"][("RMSNorm", "backward", "bf16")]
        # 4096x4096: quack 40 against ours 50 -> 0.8; 1x4096: 3/4 = 0.75
        self.assertEqual(sorted(round(r, 3) for r in fam["ratios"]),
                         [0.75, 0.8])
        self.assertEqual([s[2] for s in fam["slower"]], ["compile", "quack"])
        ln = st["families"][("LayerNorm", "forward", "bf16")]
        self.assertEqual(len(ln["nondet"]), 1)
        lnb = st["families"][("LayerNorm", "backward", "f32")]
        self.assertEqual(len(lnb["nondet"]), 1)
        self.assertAlmostEqual(lnb["ratios"][0], 1.1)
        mx = st["families"][("RMSNorm", "forward", "bf16/wf32")]
        self.assertEqual(len(mx["missing"]), 1)

    def test_report(self):
        outp, _ = self.merged()
        md = os.path.join(self.d, "RESULTS.md")
        with open(md, "w") as f:
            f.write("# Results\n\nearlier text\n")
        args = ["--report", outp, "--results-md", md, "--png-dir", self.d,
                "--merge-command", "grid.py --merge ..."]
        for _ in range(2):  # the second replaces the first section
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                self.assertEqual(G.main(args), 0)
        with open(md) as f:
            text = f.read()
        self.assertTrue(text.startswith("# Results\n\nearlier text\n"))
        self.assertEqual(text.count(G.SECTION_BEGIN), 1)
        self.assertEqual(text.count(G.SECTION_END), 1)
        self.assertIn("0.75x 1 x 4096 (4.0/3.0 compile)", text)
        self.assertIn("0.80x 4096 x 4096 (50.0/40.0 quack)", text)
        self.assertIn("ours NOT bitwise repeatable at 16384x1024", text)
        self.assertIn("1 planned points have no rows", text)
        self.assertIn("python3 bench/grid.py --shard 1/2", text)
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            self.assertIn("no plot", buf.getvalue())
            return
        for name in ("grid.png", "grid-copy.png"):
            p = os.path.join(self.d, name)
            self.assertTrue(os.path.getsize(p) > 1000, p)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
