#!/usr/bin/env bash
#===- scripts/gpu-run.sh - the GPU checks, benchmark and sanitizers --------===#
#
# Runs ON THE GPU MACHINE, in the repository root, with .dev/gpu carried
# (made by scripts/gpu-prepare.sh on the build machine: kernels, manifests,
# configs.json, libnormrt.so, which the scripts load through the package's
# ctypes binding, python/norm_mlir/_runtime.py, imported from this checkout
# by bench/gpu_env.py). Needs python3 with torch and triton, and
# compute-sanitizer for the last three steps. Steps, each under a timeout
# taken from one overall budget (GPU_RUN_BUDGET_S, default 510 s: the
# whole run stays under 540 s of wall time):
#
#   1. python3 bench/gpu_check.py      correctness, every case (~10 s)
#  1b. python3 bench/big_check.py      > 2^31 elements per tensor, N = 4096
#                                      and 131072 (~20 s)
#  1c. python3 bench/nan_check.py      NaN/+Inf/-Inf in one row of x, dy,
#                                      rstd, mean vs float64 and torch's
#                                      kernels (336 scenarios, ~10 s)
#  1d. gpu_check.py --compare-dir      the deterministic backward kernels
#        kernels-sm80                  compiled for sm_80 (PTX, JIT here):
#                                      dweight/dbias bitwise equal to the
#                                      sm_90 cubins' (issue 9, item 4)
# 1d'. gpu_check.py --one-group-reduce the cases at G = 1 (M = 1, groups=1):
#                                      the dx kernel's finish bitwise equal
#                                      to the reduce kernel's (docs/GPU.md
#                                      "One group")
#  1e. bash scripts/gpu-python.sh      the carried wheel (.whl/, from
#                                      dev.sh wheel): python/tests and
#                                      first-use times; in the default
#                                      steps only when .whl holds a wheel
#   2. python3 bench/bench.py          bandwidth table (~60 s)
#  2b. python3 bench/sweep.py          the N sweep (issue 9), only when
#                                      GPU_RUN_STEPS names "sweep" (about
#                                      nine minutes: a call of its own;
#                                      writes sweep.{log,md,json,png})
#  2d. python3 bench/grid.py           the grid of issue 21 (ours against
#                                      eager, torch.compile, Liger, quack,
#                                      the lesson over M x N), only when
#                                      GPU_RUN_STEPS names "grid": one
#                                      shard a call (GRID_SHARD=K/N, extra
#                                      arguments in GRID_ARGS, cap
#                                      GRID_CAP_S, default 500); installs
#                                      quack-kernels first when its parts
#                                      are here (bench/README.md "The
#                                      grid"); writes grid.log and
#                                      grid[-K-of-N].json
#  2e. python3 bench/tune.py run       the tuner's timings (plan
#                                      TUNE_PLAN, default grid: the tuning
#                                      table against the cost model), only
#                                      when GPU_RUN_STEPS names "tune"
#  2c. python3 bench/variants.py       ours under other threads /
#                                      max-register-elements, only when
#                                      GPU_RUN_STEPS names "variants"
#   3. compute-sanitizer --tool memcheck
#        gpu_check.py --sanitizer full --tool memcheck   every case + the
#                                      error path
#   4. compute-sanitizer --tool initcheck
#        gpu_check.py --sanitizer full --tool initcheck
#                                      every case, a fresh never-written
#                                      workspace per launch
#   The sanitizer runs use gpu_check's host data: inputs drawn and
#   references computed on the CPU, every buffer written and read back by
#   cudaMemcpy, so our kernels are the only ones on the GPU (initcheck
#   learns initialisation from the copies, not from torch's kernels).
#   GPU_RUN_SHARD=K/N runs shard K of N of their matrices (a matrix split
#   over device calls; each call's coverage line says which part it ran).
#   5. compute-sanitizer --tool racecheck
#        gpu_check.py --sanitizer rows --tool racecheck   one case per
#                                      configuration (268), its rows chosen
#                                      so every program loops >= twice
#
# The sanitizer runs take their cases in a spread order (round-robin over
# op/dtype/strategy) and stop starting configurations at a deadline 25 s
# before their step's timeout: what a tool did not reach is listed as
# skipped in its log, and its summary row says "ran X of Y cases".
# CHECK_BUDGET_S (45) and BENCH_BUDGET_S (80) are gpu_check's and bench's
# own budgets: gpu_check skips the configurations left after it (reported
# as skipped), bench skips the torch.compile rows left after it.
#
# Logs go to $OUT (else .dev/gpu/out), 8 files (the device tool brings back
# at most 8): check.log (steps 1, 1b and 1c, one after another under
# "=== name" headers), bench.log, bench.md, bench.json, memcheck.log,
# initcheck.log, racecheck.log, summary.txt. The summary table, one row per
# step (for each sanitizer: its error summary, the cases it ran of its
# matrix, and where errors were in which kernels), is printed last.
# Exit status: 0 when every step passed, else 1.
#
#===----------------------------------------------------------------------===#
set -u -o pipefail

cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-.dev/gpu/out}
mkdir -p "$OUT"
BUDGET=${GPU_RUN_BUDGET_S:-510}
# Each step's own log (read for the summary); $OUT gets the merged files.
STEPLOG=$(mktemp -d)
trap 'rm -rf "$STEPLOG"' EXIT
export PYTHONUNBUFFERED=1
# Single GPU here; keep NVLink multicast off anyway (KINDS.md).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

T0=$(date +%s)
elapsed() { echo $(( $(date +%s) - T0 )); }

#--- quack-kernels (the grid's peer; GPU_RUN_STEPS=quack stages it) --------#
# quack-kernels: gpu-prepare.sh (QUACK=1) split one tar of its wheels into
# .dev/quack/p1, p2, ... (one carried per call, since all of them are more
# than a call carries); once every part is here and the joined tar matches
# .dev/gpu/quack.txt, ONE `pip install --target .dev/quack/site` (kept for
# the later calls on this machine), and the site and its
# nvidia_cutlass_dsl/dsl_packages go on PYTHONPATH (--target runs no .pth).
quack_setup() {
  local q=.dev/quack want have parts k missing=() tmp txt
  # The parts' index: .dev/gpu's (the prepare the kernels come from), else
  # the one each part folder carries.
  for txt in .dev/gpu/quack.txt "$q"/p[0-9]*/quack.txt ""; do
    [[ -f $txt ]] && break
  done
  [[ -n $txt ]] || {
    echo "quack: no quack.txt (QUACK=1 bash scripts/gpu-prepare.sh):" \
         "the grid skips quack"; return 0; }
  want=$(awk '$1 == "sha256" {print $2}' "$txt")
  parts=$(awk '$1 == "parts" {print $2}' "$txt")
  have=$(cat "$q/site/.sha256" 2>/dev/null || true)
  if [[ $have != "$want" ]]; then
    for ((k = 1; k <= parts; k++)); do
      [[ -f $q/p$k/quack.tar.part$k ]] || missing+=("p$k")
    done
    if ((${#missing[@]})); then
      echo "quack: parts ${missing[*]} of $parts not on this machine yet" \
           "(carry .dev/quack/pK, one a call, GPU_RUN_STEPS=quack; the parts" \
           "stay while the machine is held): the grid skips quack"
      return 0
    fi
    tmp=$STEPLOG/quack
    mkdir -p "$tmp/wheels"
    for ((k = 1; k <= parts; k++)); do cat "$q/p$k/quack.tar.part$k"; done \
      >"$tmp/quack.tar"
    if [[ $(sha256sum "$tmp/quack.tar" | cut -d' ' -f1) != "$want" ]]; then
      echo "quack: the joined parts do not match $txt (parts from" \
           "another prepare?): the grid skips quack"
      rm -f "$tmp/quack.tar"
      return 0
    fi
    tar -xf "$tmp/quack.tar" -C "$tmp/wheels" && rm -f "$tmp/quack.tar"
    rm -rf "$q/site" "$q/site.new"
    local t0=$SECONDS
    if python3 -m pip install -q --no-index --no-deps --no-compile \
         --no-cache-dir --target "$q/site.new" "$tmp"/wheels/*.whl; then
      mv "$q/site.new" "$q/site" && echo "$want" >"$q/site/.sha256"
      echo "quack: installed $(ls "$tmp"/wheels/*.whl | wc -l) wheels into" \
           "$q/site in $((SECONDS - t0)) s"
    else
      echo "quack: pip install --target failed: the grid skips quack"
      rm -rf "$q/site.new"
    fi
    rm -rf "$tmp"
  else
    echo "quack: already installed in $q/site (from an earlier call)"
  fi
  if [[ -f $q/site/.sha256 ]]; then
    QUACK_PATH=$(pwd)/$q/site:$(pwd)/$q/site/nvidia_cutlass_dsl/dsl_packages
  fi
}
# GPU_RUN_STEPS=quack: a call of its own that carries one part
# (.dev/quack/pK, without .dev/gpu: a part and .dev/gpu do not fit one
# call together); the call that completes the parts installs quack and
# runs one small rmsnorm_bwd through it. Writes $OUT/quack.log.
if [[ ${GPU_RUN_STEPS:-} == quack ]]; then
  QUACK_PATH=""
  quack_setup >"$STEPLOG/quack-setup.log" 2>&1
  {
    cat "$STEPLOG/quack-setup.log"
    if [[ -n $QUACK_PATH ]]; then
      PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$QUACK_PATH timeout 300 \
        python3 - <<'EOF' 2>&1 | tail -20
import time
t = time.time()
import torch
from importlib.metadata import version
import importlib
Q = importlib.import_module("quack.rmsnorm")  # quack.rmsnorm the name is a function
print("quack: import %.1f s; quack-kernels %s, nvidia-cutlass-dsl %s" % (
    time.time() - t, version("quack-kernels"), version("nvidia-cutlass-dsl")))
x = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
dy = torch.randn_like(x)
w = (1 + 0.25 * torch.randn(4096, device="cuda")).to(x.dtype)
rstd = x.float().pow(2).mean(1).add(1e-5).rsqrt()
t = time.time()
dx, dw = Q.rmsnorm_bwd(x, w, dy, rstd)[:2]
torch.cuda.synchronize()
xh = x.float() * rstd[:, None]
g = dy.float() * w.float()
ref = (g - xh * (g * xh).mean(1, keepdim=True)) * rstd[:, None]
print("quack: rmsnorm_bwd 4096x4096 bf16 in %.1f s (JIT), dx rel err %.1e" % (
    time.time() - t, float((dx.float() - ref).norm() / ref.norm())))
EOF
    fi
  } | tee "$OUT/quack.log"
  exit 0
fi


if [[ ! -f .dev/gpu/configs.json ]]; then
  echo "gpu-run: .dev/gpu/configs.json missing: run scripts/gpu-prepare.sh" \
       "on the build machine and carry .dev/gpu" | tee "$OUT/summary.txt"
  exit 1
fi
if [[ ! -f .dev/gpu/libnormrt.so ]]; then
  echo "gpu-run: warning: .dev/gpu/libnormrt.so missing (gpu_check and" \
       "the 'ours' bench rows will fail)"
fi

# gpu-prepare.sh packs the sm_80 PTX when .dev/gpu would not travel
# otherwise.
if [[ -f .dev/gpu/kernels-sm80.tar.gz && ! -d .dev/gpu/kernels-sm80 ]]; then
  tar -C .dev/gpu -xzf .dev/gpu/kernels-sm80.tar.gz ||
    echo "gpu-run: warning: unpacking kernels-sm80.tar.gz failed (the chips" \
         "step will find no kernels)"
fi

#--- wheels (bench/requirements-gpu.txt, fetched by gpu-prepare.sh) -------#
# Packages the GPU machine lacks (Liger-Kernel) travel as wheels in
# .dev/gpu/wheels; installed into a temporary directory, never the system.
if compgen -G ".dev/gpu/wheels/*.whl" >/dev/null; then
  SITE=$STEPLOG/site
  if python3 -m pip install -q --no-index --no-deps --no-compile \
       --no-cache-dir --target "$SITE" .dev/gpu/wheels/*.whl; then
    export PYTHONPATH=$SITE${PYTHONPATH:+:$PYTHONPATH}
  else
    echo "gpu-run: warning: installing .dev/gpu/wheels failed (liger rows" \
         "will fail)"
  fi
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
# The scripts' runtime: the package's binding over the carried library
# (bench/gpu_env.py), which refuses a library whose schema disagrees.
import sys
sys.path.insert(0, "bench")
try:
    import gpu_env
    lib = gpu_env.find_library(".dev/gpu")
    if not lib:
        raise OSError("libnormrt.so not found")
    gpu_env.Runtime(lib)
    print("runtime: %s through norm_mlir._runtime (schema agrees)" % lib)
except Exception as e:
    print("runtime: %s" % e)
EOF
} >"$OUT/summary.txt"
cat "$OUT/summary.txt"

# step NAME RESERVE_FOR_LATER LOG -- command...
# Runs the command under timeout min(CAP, BUDGET - elapsed - RESERVE), CAP
# the step's in STEP_CAP,
# appends its output to LOG (in $OUT, under a "=== NAME" header) and to
# $STEPLOG/NAME.log, records rc and seconds. An argument @DEADLINE@ becomes
# the epoch second 25 s before the timeout (gpu_check / nan_check start no
# configuration after it, so they print their summaries in time).
declare -A RC SECS LIMS
# Every step in order, and its cap (seconds). A step's reserve is bounded
# by the caps of the later steps this call runs, the open-ended ones
# (sweep, grid, variants, tune: they take what is left) not counted.
STEP_ORDER=(check big nan chips python bench sweep grid variants tune
            memcheck initcheck racecheck)
declare -A STEP_CAP=([check]=60 [big]=80 [nan]=60 [chips]=90 [python]=240
  [bench]=120 [sweep]=${SWEEP_CAP_S:-560} [grid]=${GRID_CAP_S:-500}
  [variants]=${VARIANTS_CAP_S:-300} [tune]=${TUNE_CAP_S:-400}
  [memcheck]=${MEMCHECK_CAP_S:-130} [initcheck]=${INITCHECK_CAP_S:-130}
  [racecheck]=${RACECHECK_CAP_S:-400})
OPEN_ENDED=" sweep grid variants tune "
# GPU_RUN_STEPS (default: all) runs only the steps it names, e.g.
# GPU_RUN_STEPS="memcheck initcheck" for a sanitizer run over the full
# matrix in a call of its own; the others are reported as "not run".
# "python" is in the default only when a wheel was carried (.whl/).
DEFAULT_STEPS="check big nan chips onegroup bench memcheck initcheck racecheck"
compgen -G ".whl/norm_mlir-*.whl" >/dev/null &&
  DEFAULT_STEPS="check big nan chips onegroup python bench memcheck initcheck racecheck"
RUN_STEPS=" ${GPU_RUN_STEPS:-$DEFAULT_STEPS} "
selected() {  # any of the named steps runs in this call
  local s
  for s in "$@"; do [[ $RUN_STEPS == *" $s "* ]] && return 0; done
  return 1
}
step() {
  local name=$1 cap=${STEP_CAP[$1]} reserve=$2 log=$3
  shift 4
  if [[ $RUN_STEPS != *" $name "* ]]; then
    RC[$name]="not run"; SECS[$name]=0
    return
  fi
  # The reserve is for the steps after this one: no more than the caps of
  # those this call runs (a call of a few steps under a smaller budget
  # would otherwise skip its first ones).
  local later=0 seen=0 st
  for st in "${STEP_ORDER[@]}"; do
    if ((seen)) && [[ $RUN_STEPS == *" $st "* && $OPEN_ENDED != *" $st "* ]]; then
      later=$(( later + ${STEP_CAP[$st]} ))
    fi
    [[ $st == "$name" ]] && seen=1
  done
  (( reserve > later )) && reserve=$later
  local left=$(( BUDGET - $(elapsed) - reserve ))
  local lim=$(( cap < left ? cap : left ))
  LIMS[$name]=$lim
  if (( lim < 15 )); then
    echo "gpu-run: skipping $name: budget spent" |
      tee -a "$log" "$STEPLOG/$name.log"
    RC[$name]=skip; SECS[$name]=0
    return
  fi
  local t a args=()
  t=$(date +%s)
  for a in "$@"; do
    [[ $a == @DEADLINE@ ]] && a=$(( t + lim - 25 ))
    args+=("$a")
  done
  echo
  echo "=== $name (timeout ${lim}s): ${args[*]}" |
    tee -a "$log" "$STEPLOG/$name.log"
  timeout --signal=TERM --kill-after=15 "$lim" "${args[@]}" 2>&1 |
    tee -a "$log" "$STEPLOG/$name.log"
  local rc=${PIPESTATUS[0]}
  SECS[$name]=$(( $(date +%s) - t ))
  RC[$name]=$rc
  if (( rc == 124 || rc == 137 )); then
    echo "gpu-run: $name timed out after ${lim}s" |
      tee -a "$log" "$STEPLOG/$name.log"
  fi
}

# Caps and reserves (seconds): with every step at its cap the sanitizers
# still get time; steps that finish early leave theirs to the later ones
# (racecheck, last, takes what is left).
#--- 1. correctness --------------------------------------------------------#
selected check big nan chips onegroup && : >"$OUT/check.log"
step check 420 "$OUT/check.log" -- \
  python3 bench/gpu_check.py --budget-s "${CHECK_BUDGET_S:-45}"

#--- 1b. more than 2^31 elements per tensor -----------------------------------#
# N = 4096 (register regime) and N = 131072 (the looped regime's batches).
step big 400 "$OUT/check.log" -- bash -c \
  'python3 bench/big_check.py &&
   python3 bench/big_check.py layer_norm_grad-n131072-bf16-deterministic'

#--- 1c. NaN / Inf propagation against torch ---------------------------------#
step nan 360 "$OUT/check.log" -- \
  python3 bench/nan_check.py --deadline @DEADLINE@

#--- 1d. the same kernels compiled for sm_80 (PTX, JIT here) ---------------#
# dweight/dbias of every deterministic backward configuration must equal
# the sm_90 cubins' bitwise (the sum order is chip-independent).
step chips 300 "$OUT/check.log" -- \
  python3 bench/gpu_check.py --compare-dir kernels-sm80 --no-error-path \
    --filter 'grad-.*-deterministic' --deadline @DEADLINE@

#--- 1d'. one group: the dx kernel's finish against the reduce kernel -------#
# At G = 1 the dx kernel writes dweight/dbias itself and the reduce launch
# is skipped (docs/GPU.md "One group"); with NORMRT_ONE_GROUP_REDUCE=1 the
# reduce kernel runs after it: every output must be the same bits.
step onegroup 120 "$OUT/check.log" -- \
  python3 bench/gpu_check.py --one-group-reduce --no-error-path \
    --deadline @DEADLINE@

#--- 1e. the Python wheel (norm_mlir), carried in .whl/ ---------------------#
# scripts/gpu-python.sh: the wheel installed alone, python/tests (CPU and
# GPU files), first-use times.
selected python && ! selected check big nan chips onegroup && : >"$OUT/check.log"
step python 200 "$OUT/check.log" -- bash scripts/gpu-python.sh

#--- 2. benchmark ----------------------------------------------------------#
selected bench && : >"$OUT/bench.log"
step bench 300 "$OUT/bench.log" -- \
  python3 bench/bench.py --out "$OUT" --budget-s "${BENCH_BUDGET_S:-80}"

#--- 2b. the N sweep (issue 9; not in the default steps: ~9 minutes) -------#
selected sweep && : >"$OUT/sweep.log"
# SWEEP_ONLY_N (comma-separated N) limits the sweep to those N; SWEEP_OPS
# picks the ops (default the two backward ops; the forward's,
# layer_norm,rms_norm, take a call of their own).
step sweep 0 "$OUT/sweep.log" -- \
  python3 bench/sweep.py --out "$OUT" --deadline @DEADLINE@ \
    ${SWEEP_ONLY_N:+--only-n "$SWEEP_ONLY_N"} ${SWEEP_OPS:+--ops "$SWEEP_OPS"}

#--- 2d. the grid (issue 21; opt-in: ~8 minutes a shard) -------------------#
if selected grid; then
  : >"$OUT/grid.log"
  QUACK_PATH=""
  quack_setup >"$STEPLOG/quack-setup.log" 2>&1
  tee -a "$OUT/grid.log" <"$STEPLOG/quack-setup.log"
  [[ -z $QUACK_PATH ]] ||
    export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$QUACK_PATH
fi
# GRID_SHARD=K/N picks the shard; GRID_ARGS adds grid.py arguments (e.g.
# "--impls compile-max --dtypes bf16", "--compile-dynamic-m").
# shellcheck disable=SC2086 # GRID_ARGS: words
step grid 0 "$OUT/grid.log" -- \
  python3 bench/grid.py --out "$OUT" --deadline @DEADLINE@ \
    ${GRID_SHARD:+--shard "$GRID_SHARD"} ${GRID_ARGS:-}

#--- 2c. row-kernel variants (pass options; opt-in) -------------------------#
selected variants && : >"$OUT/variants.log"
step variants 0 "$OUT/variants.log" -- \
  python3 bench/variants.py --out "$OUT" --deadline @DEADLINE@

#--- 2e. the tuner (bench/tune.py; opt-in) ---------------------------------#
# TUNE_PLAN (default grid) over .dev/tune, which `python3 bench/tune.py
# prepare --plan P` wrote on the build machine (carry .dev/tune); writes
# tune.json and tune.md to $OUT. Several plans, comma-separated, run over
# .dev/tune-<plan> (TUNE_DIR), each from its directory or from
# .dev/tune-<plan>.tar.gz (`prepare --pack`: carry the packs), into
# $OUT/tune-<plan>.json.
selected tune && : >"$OUT/tune.log"
tune_dir=.dev/tune
[[ ${TUNE_PLAN:-grid} == *,* ]] && tune_dir=.dev/tune-{plan}
step tune 0 "$OUT/tune.log" -- \
  python3 bench/tune.py run --plan "${TUNE_PLAN:-grid}" \
    --dir "${TUNE_DIR:-$tune_dir}" --out "$OUT" --deadline @DEADLINE@

#--- 3./4./5. compute-sanitizer ------------------------------------------------#
SAN=(memcheck initcheck racecheck)
for t in "${SAN[@]}"; do selected "$t" && : >"$OUT/$t.log"; done
CS=$(command -v compute-sanitizer || true)
for c in /usr/local/cuda/bin/compute-sanitizer \
         /usr/local/cuda/compute-sanitizer/compute-sanitizer; do
  [[ -n $CS ]] || { [[ -x $c ]] && CS=$c; }
done
if [[ -z $CS ]]; then
  for t in "${SAN[@]}"; do
    echo "gpu-run: compute-sanitizer not found" |
      tee "$OUT/$t.log" "$STEPLOG/$t.log"
    RC[$t]=skip; SECS[$t]=0
  done
else
  # Every kernel is instrumented (no --kernel-name filter): under host data
  # ours are nearly the only kernels on the GPU (torch's run only in the
  # error path), so the filter would save little and would hide whether
  # initcheck still sees the copies' writes.
  echo "compute-sanitizer: $CS ($("$CS" --version 2>&1 | grep -iE 'version' |
        head -1))"
  # Every tensor its own cudaMalloc, so memcheck sees exact bounds and
  # initcheck a fresh allocation's state.
  export PYTORCH_NO_CUDA_MEMORY_CACHING=1
  SHARD=()
  [[ -z ${GPU_RUN_SHARD:-} ]] || SHARD=(--shard "$GPU_RUN_SHARD")
  step memcheck 170 "$OUT/memcheck.log" -- \
    "$CS" --tool memcheck --error-exitcode 99 --print-limit 50 \
      python3 bench/gpu_check.py --sanitizer full --tool memcheck \
        "${SHARD[@]}" --deadline @DEADLINE@
  # Under host data every input and every poisoned output is written by
  # cudaMemcpy. Every error is printed (to a raw log that stays here) and
  # attributed per kernel; the step fails on any error in norm_kernel*.
  step initcheck 60 "$OUT/initcheck.log" -- \
    "$CS" --tool initcheck --error-exitcode 99 \
      --print-limit 100000000 \
      --log-file "$STEPLOG/initcheck.raw" \
      python3 bench/gpu_check.py --sanitizer full --tool initcheck \
        "${SHARD[@]}" --deadline @DEADLINE@
  if [[ -f $STEPLOG/initcheck.raw ]]; then
    {
      echo "initcheck errors by kernel (all $(grep -c '^========= Uninit' \
        "$STEPLOG/initcheck.raw") of them; ours are norm_kernel*):"
      grep -A1 '^========= Uninit' "$STEPLOG/initcheck.raw" |
        grep -E '^=========  +at ' | sed -E 's/^=+ +at //; s/\+0x.*//' |
        cut -c1-120 | sort | uniq -c | sort -rn | head -20
      echo "first errors in norm_kernel* (if any):"
      grep -A3 '^========= Uninit' "$STEPLOG/initcheck.raw" |
        grep -B1 -A2 'norm_kernel' | head -40
      grep -E 'ERROR SUMMARY' "$STEPLOG/initcheck.raw" | tail -1
    } | tee -a "$OUT/initcheck.log" "$STEPLOG/initcheck.log"
    if grep -A1 '^========= Uninit' "$STEPLOG/initcheck.raw" |
         grep -q 'norm_kernel'; then
      [[ ${RC[initcheck]} == 0 ]] && RC[initcheck]=99
    fi
  fi
  step racecheck 0 "$OUT/racecheck.log" -- \
    "$CS" --tool racecheck --error-exitcode 99 --print-limit 50 \
      python3 bench/gpu_check.py --sanitizer rows --tool racecheck \
        --deadline @DEADLINE@
  unset PYTORCH_NO_CUDA_MEMORY_CACHING
fi

#--- summary (printed last) -----------------------------------------------#
result() {  # the line that says how a step went
  local name=$1 log=$2 line
  line=$(result_line "$name" "$log")
  [[ -n $line ]] || line=$(grep -v '^\s*$' "$log" 2>/dev/null | tail -1)
  echo "$line"
}
# Sanitizer errors per kernel: an error header ("========= Invalid ...",
# "Uninitialized ...", "Error: Race ...", ...) names the kernel itself or
# on its first "at ..." line; norm_kernel* are ours.
san_kernels() {
  awk '/^========= (Invalid|Uninitiali|Error|Warning|Race|Misaligned|Out.of|Address|Barrier|Program hit)/ {
         if ($0 ~ /norm_kernel/) { n["ours"]++; want = 0 }
         else want = 1
         next }
       want && /^=========  +at / {
         n[($0 ~ /norm_kernel/) ? "ours" : "other"]++; want = 0 }
       END { if (n["ours"] + n["other"] > 0)
               printf "errors in norm_kernel*: %d, elsewhere: %d",
                      n["ours"], n["other"] }' "$1"
}
result_line() {
  local name=$1 log=$2
  case $name in
    check|nan) grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -1 ;;
    python) grep -E '^(=+ )?[0-9]+ (passed|failed).* in [0-9.]+s' "$log" |
              tail -1 | tr -d '=' ;;
    chips) { grep -E '^other chip' "$log" | tail -1
             grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -1; } |
             paste -sd ';' ;;
    sweep) { grep -E '^\*\*Geometric mean' "$log" | tail -1 | tr -d '*'
             grep -E '^sweep: [0-9]+ rows' "$log" | tail -1; } | paste -sd ';' ;;
    tune) grep -cE '^\| (layer|rms|forward)' "$log" |
            sed 's/$/ points timed/' ;;
    grid) { grep -E '^all: [0-9]+ points' "$log" | tail -1
            grep -E '^grid: [0-9]+ rows' "$log" | tail -1; } | paste -sd ';' ;;
    bench) { grep -E '^copy bandwidth' "$log" | tail -1 | cut -c1-40
             grep -E '^bench: [0-9]+ rows' "$log" | tail -1; } | paste -sd ';' ;;
    memcheck|initcheck|racecheck)
      { grep -E '(ERROR|RACECHECK) SUMMARY' "$log" | tail -2 |
          sed 's/^=* *//'
        grep -E '^sanitizer coverage:' "$log" | tail -1 |
          sed -E 's/^sanitizer coverage: ([0-9]+) of ([0-9]+) cases/ran \1 of \2 cases/'
        grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -1
        san_kernels "$log"; } | paste -sd ';' ;;
  esac
}
STEPS=("${STEP_ORDER[@]}")
ok=1
for s in "${STEPS[@]}"; do
  [[ ${RC[$s]:-skip} == 0 || ${RC[$s]} == "not run" ]] || ok=0
done
# A sanitizer that did not reach its whole matrix has not passed it.
for s in "${SAN[@]}"; do
  cov=$(grep -E '^sanitizer coverage:' "$STEPLOG/$s.log" 2>/dev/null | tail -1)
  if [[ ${RC[$s]:-skip} == 0 && $cov =~ ([0-9]+)\ of\ ([0-9]+)\ cases ]] &&
     (( BASH_REMATCH[1] < BASH_REMATCH[2] )); then
    RC[$s]="0 (partial)"; ok=0
  fi
done
{
  echo
  if [[ -f $OUT/bench.json ]]; then
    python3 bench/bench.py --summarize "$OUT/bench.json" 2>&1 || true
    echo
  fi
  # The grid's table per (norm, direction, dtypes) (all of it in grid.log
  # and the grid JSON).
  if [[ -s $STEPLOG/grid.log ]]; then
    sed -n '/^| norm | direction/,/^all: /p' "$STEPLOG/grid.log" | tail -40
    cat "$STEPLOG/quack-setup.log" 2>/dev/null
    grep -E '^grid: (stopping|[0-9]+ rows|quack skipped)' "$STEPLOG/grid.log" |
      tail -4
    echo
  fi
  fails=$(grep -E '^ +FAIL ' "$STEPLOG/check.log" 2>/dev/null | head -12)
  [[ -z $fails ]] || { echo "gpu_check failures (first 12; all in check.log):"
                       echo "$fails" | cut -c1-300; echo; }
  # The NaN/Inf table: nan_check's compact table (the full one, one row
  # per configuration and input, is in check.log) and its closing line.
  if [[ -s $STEPLOG/nan.log ]]; then
    grep -E '^torch kernels compared' "$STEPLOG/nan.log"
    sed -n '/^nan_check summary:/,/^$/p' "$STEPLOG/nan.log"
    grep -E '^nan_check: seed' "$STEPLOG/nan.log"
    nfail=$(grep -cE '^FAIL' "$STEPLOG/nan.log" || true)
    ((nfail == 0)) || { echo "nan_check failures (first 8; all in check.log):"
                        grep -A3 -E '^FAIL' "$STEPLOG/nan.log" | head -32 |
                          cut -c1-300; }
    echo
  fi
  echo "| step | rc | seconds (limit) | result |"
  echo "| --- | --- | --- | --- |"
  for s in "${STEPS[@]}"; do
    rc=${RC[$s]:-skip}
    echo "| $s | $rc | ${SECS[$s]:-0} (${LIMS[$s]:--}) | $(result $s "$STEPLOG/$s.log" 2>/dev/null | cut -c1-240) |"
  done
  echo "gpu-run: $( ((ok)) && echo all steps passed || echo SOME STEPS FAILED)" \
       "in $(elapsed) s; logs in $OUT (check.log [gpu_check, big_check," \
       "nan_check] bench.log bench.md bench.json memcheck.log initcheck.log" \
       "racecheck.log summary.txt)"
} | tee -a "$OUT/summary.txt"
((ok)) && exit 0 || exit 1
