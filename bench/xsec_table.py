#!/usr/bin/env python3
"""The cross-section's table: ours against the best peer per set, norm and
direction, from a run of scripts/gpu-call-xsec.sh (IMPLS=ours,eager: its
a/b/c grid.json files) and the other peers' times of an earlier full run
(torch.compile, Liger, quack: bench/RESULTS-grid-xsec5.json). Writes the
merged rows (this run's ours and eager, the earlier run's others) as one
results file and prints the markdown table, the points below 0.95x and,
with --before, ours against an earlier run of ours.

    python3 bench/xsec_table.py RUN_DIR --out bench/RESULTS-grid-xsec9.json \
        [--peers bench/RESULTS-grid-xsec5.json] [--before OLD.json]
"""

import argparse
import json
import math
import os

SETS = {"a": ((64, 2048, 8192, 65536), (768, 2560, 7168, 12288)),
        "b": ((1024, 16384), (2048, 4096, 16384, 65536)),
        "c": ((1, 8, 256), (1000, 5120, 14336, 49152))}


def gm(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", help="directory with a/grid.json, b/..., c/...")
    ap.add_argument("--peers", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)),
        "RESULTS-grid-xsec5.json"))
    ap.add_argument("--before", help="an earlier merged file: ours then")
    ap.add_argument("--out", help="write the merged rows here")
    args = ap.parse_args(argv)
    rows, runs = [], []
    for s in SETS:
        path = os.path.join(args.run, s, "grid.json")
        if os.path.isfile(path):
            with open(path) as f:
                d = json.load(f)
            rows += d["rows"]
            runs += d.get("runs", [])
    with open(args.peers) as f:
        old = json.load(f)["rows"]
    peers = {}
    for r in old:
        if r["impl"] not in ("ours", "eager") and r.get("us"):
            peers.setdefault((r["op"], r["M"], r["N"]), {})[r["impl"]] = r
    for r in rows:
        if r["impl"] == "eager" and r.get("us"):
            peers.setdefault((r["op"], r["M"], r["N"]), {})["eager"] = r
    before = {}
    if args.before:
        with open(args.before) as f:
            before = {(r["op"], r["M"], r["N"]): r["us"]
                      for r in json.load(f)["rows"]
                      if r["impl"] == "ours" and r.get("us")}
    pts = []
    for r in rows:
        if r["impl"] != "ours" or not r.get("us"):
            continue
        k = (r["op"], r["M"], r["N"])
        p = {i: q["us"] for i, q in peers.get(k, {}).items()}
        if not p:
            continue
        best = min(p, key=p.get)
        s = next(s for s, (ms, ns) in SETS.items()
                 if r["M"] in ms and r["N"] in ns)
        pts.append(dict(set=s, op=r["op"], M=r["M"], N=r["N"], us=r["us"],
                        peer=best, peer_us=p[best], ratio=p[best] / r["us"],
                        bitwise=r.get("bitwise"), before=before.get(k)))
    print("| set | norm | direction | points | vs best peer (gmean) | "
          "below 0.95x |")
    print("| --- | --- | --- | ---: | ---: | ---: |")
    for group in (("a", "b"), ("c",)):
        for norm in ("layer_norm", "rms_norm"):
            for grad in (True, False):
                sel = [p for p in pts if p["set"] in group and
                       p["op"].startswith(norm) and
                       p["op"].endswith("_grad") == grad]
                print("| %s | %s | %s | %d | %.2fx | %d |" % (
                    " + ".join(group), "LayerNorm" if norm == "layer_norm"
                    else "RMSNorm", "backward" if grad else "forward",
                    len(sel), gm([p["ratio"] for p in sel]),
                    sum(p["ratio"] < 0.95 for p in sel)))
        sel = [p for p in pts if p["set"] in group]
        print("| %s | all | | %d | **%.2fx** | %d |" % (
            " + ".join(group), len(sel), gm([p["ratio"] for p in sel]),
            sum(p["ratio"] < 0.95 for p in sel)))
    print("\nall %d: %.2fx the best peer; dweight/dbias bits differ at %d"
          % (len(pts), gm([p["ratio"] for p in pts]),
             sum(p["bitwise"] is False for p in pts)))
    if before:
        b = [p["before"] / p["us"] for p in pts if p["before"]]
        print("ours then / ours now: %.3fx over %d points" % (gm(b), len(b)))
    print("\nbelow 0.95x:")
    for p in sorted(pts, key=lambda p: p["ratio"]):
        if p["ratio"] >= 0.95:
            break
        print("  %.2fx %s %d x %d: %.1f us, %s %.1f%s" % (
            p["ratio"], p["op"], p["M"], p["N"], p["us"], p["peer"],
            p["peer_us"], "" if not p["before"] else
            " (before %.1f)" % p["before"]))
    if args.out:
        merged = [r for r in rows] + [
            q for k, d in peers.items() for i, q in d.items()
            if i != "eager"]
        with open(args.out, "w") as f:
            json.dump({"format": 1, "merged": [args.run, args.peers],
                       "runs": runs, "rows": merged}, f, indent=0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
