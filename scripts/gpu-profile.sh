#!/usr/bin/env bash
#===- scripts/gpu-profile.sh - ncu on a few configurations, one table -----===#
#
# Runs ON THE GPU MACHINE, in the repository root, with .dev/gpu carried.
# For each CONFIG:M of PROFILE (space-separated; CONFIG a name of
# .dev/gpu/configs.json or a manifest path under .dev/gpu; NORM_GPU_DIR
# names another prepared directory, e.g. one of bench/tune.py's), launches the configuration three times on fresh
# random data (bench/profile_one.py) and profiles the third launch's
# kernels with Nsight Compute (SpeedOfLight, Occupancy, LaunchStats,
# WarpStateStats, MemoryWorkloadAnalysis sections). Writes
# $OUT/profile-<config>-<M>.csv (ncu's details page) and prints one line
# per kernel last: time, DRAM throughput and bytes, achieved occupancy,
# registers, the occupancy limiter, the top warp stall reasons.
#
#   PROFILE="layer_norm_grad-n5120-bf16:34943 rms_norm_grad-n5120-bf16:34948" \
#     bash scripts/gpu-profile.sh
#
# PROFILE_CAP_S (default 300) stops starting configurations after that
# many seconds.
#
#===----------------------------------------------------------------------===#
set -u -o pipefail
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-.dev/gpu/out}
mkdir -p "$OUT"
NCU=$(command -v ncu || true)
[[ -n $NCU ]] || { [[ -x /usr/local/cuda/bin/ncu ]] && NCU=/usr/local/cuda/bin/ncu; }
[[ -n $NCU ]] || { echo "gpu-profile: ncu not found"; exit 2; }
T0=$(date +%s)
rc=0
for item in ${PROFILE:?PROFILE=\"CONFIG:M ...\"}; do
  if (( $(date +%s) - T0 > ${PROFILE_CAP_S:-300} )); then
    echo "gpu-profile: cap reached, skipping $item"; continue
  fi
  cfg=${item%%:*}; m=${item##*:}
  # Launches 1-2 warm up (module load, first-touch); each launch is one
  # kernel per stage, so skip those of the first two launches.
  # CONFIG is a name of configs.json, or a manifest path under .dev/gpu
  # (e.g. extra/ln.json, compiled with other options; its .ptx beside it).
  nk=$(python3 -c "
import json, os, sys
c, d = sys.argv[1], os.environ.get('NORM_GPU_DIR', '.dev/gpu')
m = (json.load(open(os.path.join(d, c))) if c.endswith('.json') else
     json.load(open(os.path.join(d, 'configs.json')))['configs'][c])
# At one row G is 1 and libnormrt skips a reduce marked skip_at_one_group.
print(sum(1 for k in m['kernels']
          if not (int(sys.argv[2]) == 1 and k.get('skip_at_one_group'))))" "$cfg" "$m") || { echo "gpu-profile: no configuration $cfg"; rc=1; continue; }
  csv="$OUT/profile-${cfg//\//-}-$m.csv"
  "$NCU" --kernel-name regex:norm_kernel --launch-skip $((2 * nk)) \
    --launch-count "$nk" --section SpeedOfLight --section Occupancy \
    --section LaunchStats --section WarpStateStats \
    --section MemoryWorkloadAnalysis --metrics 'dram__bytes_read.sum,dram__bytes_write.sum,regex:^smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio$' \
    --csv --page details \
    python3 bench/profile_one.py "$cfg" "$m" 3 >"$csv" 2>"$csv.err" ||
    { echo "gpu-profile: ncu failed on $item: $(tail -3 "$csv.err")"; rc=1; }
done
python3 - "$OUT" <<'EOF'
import csv, glob, io, os, sys
rows = []
for path in sorted(glob.glob(os.path.join(sys.argv[1], "profile-*.csv"))):
    text = open(path).read()
    start = text.find('"ID"')
    if start < 0:
        continue
    kern = {}
    for r in csv.DictReader(io.StringIO(text[start:])):
        k = kern.setdefault(r["ID"], {"name": r["Kernel Name"], "m": {}})
        k["m"][r["Metric Name"]] = (r["Metric Value"], r["Metric Unit"])
    tag = os.path.basename(path)[len("profile-"):-len(".csv")]
    for k in kern.values():
        rows.append((tag, k))
def g(m, *names):
    for n in names:
        if n in m:
            return m[n][0]
    return "-"
print("%-44s %-7s %9s %6s %8s %8s %5s %4s %-10s %s" % (
    "config-M", "kernel", "time", "DRAM%", "read MB", "write MB", "occ%",
    "regs", "limiter", "stalls (cycles per issued instruction)"))
for tag, k in rows:
    m = k["m"]
    pre, post = "smsp__average_warps_issue_stalled_", "_per_issue_active.ratio"
    stalls = []
    for n, v in m.items():
        if n.startswith(pre) and n.endswith(post):
            try:
                stalls.append((float(v[0].replace(",", "")),
                               n[len(pre):-len(post)]))
            except ValueError:
                pass
    stalls = sorted(stalls, reverse=True)[:3]
    lims = sorted((float(m[n][0].replace(",", "")), n.replace(
        "Block Limit ", "")) for n in m if n.startswith("Block Limit "))
    rd = g(m, "dram__bytes_read.sum")
    wr = g(m, "dram__bytes_write.sum")
    def mb(v, unit_name):
        try:
            x = float(v.replace(",", ""))
        except ValueError:
            return "-"
        u = m.get(unit_name, ("", ""))[1].lower()
        scale = {"byte": 1e-6, "kbyte": 1e-3, "mbyte": 1, "gbyte": 1e3}.get(u, 1e-6)
        return "%.0f" % (x * scale)
    print("%-44s %-7s %9s %6s %8s %8s %5s %4s %-10s %s" % (
        tag[-44:], k["name"].split("_")[-2][:7],
        g(m, "Duration") + m.get("Duration", ("", ""))[1][:2],
        g(m, "DRAM Throughput"), mb(rd, "dram__bytes_read.sum"),
        mb(wr, "dram__bytes_write.sum"),
        g(m, "Achieved Occupancy"), g(m, "Registers Per Thread"),
        "%s=%g" % (lims[0][1], lims[0][0]) if lims else "-",
        ", ".join("%s %.1f" % (n, v) for v, n in stalls)))
EOF
exit $rc
