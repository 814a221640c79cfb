#!/usr/bin/env bash
#===- scripts/gpu-call-fwd-cluster.sh - one device call: the forward split --===#
#
# Runs ON THE GPU MACHINE (carry .dev/gpu without kernels-sm80, and
# .dev/tune-fwd-cluster.tar.gz): gpu_check over every case (the forward
# row split over a cluster among them: configs.FWD_CLUSTER_CASES), memcheck
# and racecheck over the cluster cases, then bench/tune.py plan
# fwd-cluster. Logs in $OUT (check.log, memcheck.log, racecheck.log,
# tune.json, tune.md, summary.txt; with PROFILE, profile.tgz).
#
#===----------------------------------------------------------------------===#
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-.dev/gpu/out}
mkdir -p "$OUT"
T0=$(date +%s)
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
python3 bench/gpu_check.py --budget-s 80 >"$OUT/check.log" 2>&1
echo "check rc=$? $(( $(date +%s) - T0 )) s" | tee -a "$OUT/summary.txt"
# TUNE_PLAN: one plan or several (a,b: each its tune-<plan>.json, the
# tables on stdout, into tune.md), compiled into TUNE_DIR.
# TUNE_S: the plans' seconds (200); SAN_FILTER: the cases the sanitizers
# run (gpu_check --filter; the cluster cases), MEMCHECK_S / RACECHECK_S
# their caps.
TUNE_S=${TUNE_S:-200}
timeout "$TUNE_S" python3 bench/tune.py run --plan "${TUNE_PLAN:-fwd-cluster}" \
  --dir "${TUNE_DIR:-.dev/tune-fwd-cluster}" --out "$OUT" --deadline $(( $(date +%s) + TUNE_S - 10 )) \
  >"$OUT/tune.md" 2>&1
echo "tune rc=$? $(( $(date +%s) - T0 )) s" | tee -a "$OUT/summary.txt"
export PYTORCH_NO_CUDA_MEMORY_CACHING=1
timeout "${MEMCHECK_S:-120}" "$CS" --tool memcheck --error-exitcode 99 --print-limit 50 \
  python3 bench/gpu_check.py --sanitizer full --tool memcheck \
  --filter="${SAN_FILTER:--c[248]}" >"$OUT/memcheck.log" 2>&1
echo "memcheck rc=$? $(( $(date +%s) - T0 )) s" | tee -a "$OUT/summary.txt"
timeout "${RACECHECK_S:-150}" "$CS" --tool racecheck --error-exitcode 99 --print-limit 50 \
  python3 bench/gpu_check.py --sanitizer rows --tool racecheck \
  --filter="${SAN_FILTER:--c[248]}" >"$OUT/racecheck.log" 2>&1
echo "racecheck rc=$? $(( $(date +%s) - T0 )) s" | tee -a "$OUT/summary.txt"
# PROFILE (scripts/gpu-profile.sh's CONFIG:M list): ncu on those too.
# Its CSVs go back as one tar: a call returns at most 8 files, and the
# tune run's two must be among them.
if [[ -n ${PROFILE:-} ]]; then
  OUT=$OUT/prof PROFILE_CAP_S=100 bash scripts/gpu-profile.sh 2>&1 | tail -6
  tar -czf "$OUT/profile.tgz" -C "$OUT" prof && rm -rf "$OUT/prof"
fi
for f in check memcheck racecheck; do tail -n 4 "$OUT/$f.log"; done
tail -n 30 "$OUT/tune.md"
cat "$OUT/summary.txt"
