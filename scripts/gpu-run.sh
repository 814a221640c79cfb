#!/usr/bin/env bash
#===- scripts/gpu-run.sh - the GPU checks, benchmark and sanitizers --------===#
#
# Runs ON THE GPU MACHINE, in the repository root, with .dev/gpu carried
# (made by scripts/gpu-prepare.sh on the build machine: kernels, manifests,
# configs.json, libnormrt.so). Needs python3 with torch and triton, and
# compute-sanitizer for the last two steps. Steps, each under a timeout
# taken from one overall budget (GPU_RUN_BUDGET_S, default 450 s):
#
#   1. python3 bench/gpu_check.py             correctness, every case
#  1b. python3 bench/big_check.py             > 2^31 elements per tensor
#   2. python3 bench/bench.py                 bandwidth table
#   3. compute-sanitizer --tool memcheck  python3 bench/gpu_check.py --sanitizer-subset
#   4. compute-sanitizer --tool racecheck python3 bench/gpu_check.py --sanitizer-subset
#
# CHECK_BUDGET_S (100) and BENCH_BUDGET_S (150) are the scripts' own
# budgets: gpu_check skips the configurations left after it (reported as
# skipped), bench skips the torch.compile rows left after it.
#
# Logs go to $OUT (else .dev/gpu/out): check.log, bench.log, bench.md,
# bench.json, memcheck.log, racecheck.log, summary.txt (7 files: the
# device tool brings back at most 8). The summary table is printed last.
# Exit status: 0 when every step passed, else 1.
#
#===----------------------------------------------------------------------===#
set -u -o pipefail

cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-.dev/gpu/out}
mkdir -p "$OUT"
BUDGET=${GPU_RUN_BUDGET_S:-450}
export PYTHONUNBUFFERED=1
# Single GPU here; keep NVLink multicast off anyway (KINDS.md).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

T0=$(date +%s)
elapsed() { echo $(( $(date +%s) - T0 )); }

if [[ ! -f .dev/gpu/configs.json ]]; then
  echo "gpu-run: .dev/gpu/configs.json missing: run scripts/gpu-prepare.sh" \
       "on the build machine and carry .dev/gpu" | tee "$OUT/summary.txt"
  exit 1
fi
if [[ ! -f .dev/gpu/libnormrt.so ]]; then
  echo "gpu-run: warning: .dev/gpu/libnormrt.so missing (gpu_check and" \
       "the 'ours' bench rows will fail)"
fi

#--- environment ----------------------------------------------------------#
{
  echo "# gpu-run $(date -u '+%Y-%m-%d %H:%M:%S') UTC"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu,power.draw,persistence_mode \
    --format=csv 2>&1 | sed 's/^/# /'
  python3 - <<'EOF' 2>&1 | sed 's/^/# /'
import json, platform
try:
    import torch, triton
    p = torch.cuda.get_device_properties(0)
    print("python %s torch %s (CUDA %s) triton %s; %s, %d SMs, L2 %.0f MB" % (
        platform.python_version(), torch.__version__, torch.version.cuda,
        triton.__version__, p.name, p.multi_processor_count,
        getattr(p, "L2_cache_size", 0) / 2**20))
except Exception as e:
    print("python env: %s" % e)
with open(".dev/gpu/configs.json") as f:
    d = json.load(f)
print("kernels: %d configurations from commit %s (%s uncommitted files), %s"
      % (len(d["configs"]), d.get("git_head"), d.get("git_dirty"),
         d.get("generated_utc")))
EOF
} >"$OUT/summary.txt"
cat "$OUT/summary.txt"

# step NAME CAP_SECONDS RESERVE_FOR_LATER LOG -- command...
# Runs the command under timeout min(CAP, BUDGET - elapsed - RESERVE),
# tees its output to LOG, records rc and seconds.
declare -A RC SECS
step() {
  local name=$1 cap=$2 reserve=$3 log=$4
  shift 5
  local left=$(( BUDGET - $(elapsed) - reserve ))
  local lim=$(( cap < left ? cap : left ))
  if (( lim < 15 )); then
    echo "gpu-run: skipping $name: budget spent" | tee "$log"
    RC[$name]=skip; SECS[$name]=0
    return
  fi
  echo
  echo "=== $name (timeout ${lim}s): $*"
  local t
  t=$(date +%s)
  timeout --signal=TERM --kill-after=15 "$lim" "$@" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  SECS[$name]=$(( $(date +%s) - t ))
  RC[$name]=$rc
  if (( rc == 124 || rc == 137 )); then
    echo "gpu-run: $name timed out after ${lim}s" | tee -a "$log"
  fi
}

#--- 1. correctness --------------------------------------------------------#
step check 130 200 "$OUT/check.log" -- \
  python3 bench/gpu_check.py --budget-s "${CHECK_BUDGET_S:-100}"

#--- 1b. more than 2^31 elements per tensor -----------------------------------#
step big 60 190 "$OUT/big.log" -- python3 bench/big_check.py

#--- 2. benchmark ----------------------------------------------------------#
step bench 230 70 "$OUT/bench.log" -- \
  python3 bench/bench.py --out "$OUT" --budget-s "${BENCH_BUDGET_S:-150}"

#--- 3./4. compute-sanitizer -----------------------------------------------#
CS=$(command -v compute-sanitizer || true)
for c in /usr/local/cuda/bin/compute-sanitizer \
         /usr/local/cuda/compute-sanitizer/compute-sanitizer; do
  [[ -n $CS ]] || { [[ -x $c ]] && CS=$c; }
done
if [[ -z $CS ]]; then
  for t in memcheck racecheck; do
    echo "gpu-run: compute-sanitizer not found" | tee "$OUT/$t.log"
    RC[$t]=skip; SECS[$t]=0
  done
else
  # Only our kernels are instrumented (torch's run unchecked, much faster);
  # the option's name changed across versions: probe, else check all.
  FILTER=()
  for opt in --kernel-name --kernel-regex --filter; do
    if "$CS" "$opt" kns=norm_kernel --tool memcheck true >/dev/null 2>&1; then
      FILTER=("$opt" kns=norm_kernel)
      break
    fi
  done
  echo "compute-sanitizer: $CS; filter: ${FILTER[*]:-none}"
  # Every tensor its own cudaMalloc, so memcheck sees exact bounds.
  export PYTORCH_NO_CUDA_MEMORY_CACHING=1
  step memcheck 50 50 "$OUT/memcheck.log" -- \
    "$CS" --tool memcheck "${FILTER[@]}" --error-exitcode 99 --print-limit 50 \
      python3 bench/gpu_check.py --sanitizer-subset
  step racecheck 50 0 "$OUT/racecheck.log" -- \
    "$CS" --tool racecheck "${FILTER[@]}" --error-exitcode 99 --print-limit 50 \
      python3 bench/gpu_check.py --sanitizer-subset
  unset PYTORCH_NO_CUDA_MEMORY_CACHING
fi

#--- summary (printed last) -----------------------------------------------#
result() {  # the line that says how a step went
  local name=$1 log=$2 line
  line=$(result_line "$name" "$log")
  [[ -n $line ]] || line=$(grep -v '^\s*$' "$log" 2>/dev/null | tail -1)
  echo "$line"
}
result_line() {
  local name=$1 log=$2
  case $name in
    check) grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -1 ;;
    bench) { grep -E '^copy bandwidth' "$log" | tail -1 | cut -c1-40
             grep -E '^bench: [0-9]+ rows' "$log" | tail -1; } | paste -sd ';' ;;
    memcheck|racecheck)
      { grep -E '(ERROR|RACECHECK) SUMMARY' "$log" | tail -2
        grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -1; } |
        sed 's/^=* *//' | paste -sd ';' ;;
  esac
}
ok=1
for s in check big bench memcheck racecheck; do
  [[ ${RC[$s]:-skip} == 0 ]] || ok=0
done
{
  echo
  if [[ -f $OUT/bench.json ]]; then
    python3 bench/bench.py --summarize "$OUT/bench.json" 2>&1 || true
    echo
  fi
  fails=$(grep -E '^ +FAIL ' "$OUT/check.log" 2>/dev/null | head -12)
  [[ -z $fails ]] || { echo "gpu_check failures (first 12; all in check.log):"
                       echo "$fails" | cut -c1-300; echo; }
  echo "| step | rc | seconds | result |"
  echo "| --- | --- | --- | --- |"
  for s in check big bench memcheck racecheck; do
    rc=${RC[$s]:-skip}
    echo "| $s | $rc | ${SECS[$s]:-0} | $(result $s "$OUT/$s.log" 2>/dev/null | cut -c1-160) |"
  done
  echo "gpu-run: $( ((ok)) && echo all steps passed || echo SOME STEPS FAILED)" \
       "in $(elapsed) s; logs in $OUT (check.log big.log bench.log bench.md bench.json" \
       "memcheck.log racecheck.log summary.txt)"
} | tee -a "$OUT/summary.txt"
((ok)) && exit 0 || exit 1
