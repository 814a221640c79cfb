#!/usr/bin/env python3
"""Per point of a tune run: the time of the candidate each of two tuning
tables picks (the entry covering (op, dtype, N, M), or the cost model where
none does), both timed in that run, and their ratio.

  python3 bench/table_diff.py RUN.json --old OLD_TABLE --new NEW_TABLE

A table's pick that the run did not time is shown as '-'. The geometric
mean is over the points where both picks were timed."""
import argparse
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tune as T  # noqa: E402


def pick(entries, op, dt, n, m):
    """The knob tuple (tune.KNOB_KEYS order) the table gives (op, dt, N, M),
    tune.NO_KNOB where no entry covers it (configs.tuning_entry)."""
    e = T.C.tuning_entry(op, n, dt, "", m, entries)
    return tuple(e.get(k, 0) for k in T.KNOB_KEYS) if e else T.NO_KNOB


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run")
    ap.add_argument("--old", required=True)
    ap.add_argument("--new", required=True)
    args = ap.parse_args()
    rows = json.load(open(args.run))["rows"]
    old = json.load(open(args.old))["entries"]
    new = json.load(open(args.new))["entries"]
    by = {}
    for r in rows:
        if "us" not in r or r["fixed_groups"] or \
                r.get("rows", 0) not in (0, T.C.bucket_rows(r["M"])):
            continue
        by.setdefault((r["op"], r["dtype"], r["N"], r["M"]), {})[
            T.knob_of(r)] = r["us"]
    print("| op | dtype | M x N | old pick | us | new pick | us | old / new |")
    print("| --- | --- | --- | --- | ---: | --- | ---: | ---: |")
    ratios = []
    for (op, dt, n, m), t in sorted(by.items()):
        ko, kn = pick(old, op, dt, n, m), pick(new, op, dt, n, m)
        uo, un = t.get(ko), t.get(kn)

        def name(k):
            return ",".join("%s=%d" % (key, v) for key, v in
                            zip(T.KNOB_KEYS, k) if v) or "cost model"
        ratio = uo / un if uo and un else None
        if ratio:
            ratios.append(ratio)
        print("| %s | %s | %dx%d | %s | %s | %s | %s | %s |" % (
            op, dt, m, n, name(ko), "%.1f" % uo if uo else "-", name(kn),
            "%.1f" % un if un else "-", "%.3f" % ratio if ratio else "-"))
    if ratios:
        print("\n%d points, old / new geometric mean %.3f (%.3f-%.3f)" % (
            len(ratios), math.exp(sum(map(math.log, ratios)) / len(ratios)),
            min(ratios), max(ratios)))


if __name__ == "__main__":
    main()
