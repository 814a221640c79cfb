#!/usr/bin/env bash
#===- scripts/gpu-call-ab.sh - one device call: a compiler change, A/B -----===#
#
# Runs ON THE GPU MACHINE. Carry .dev/gpu.tar.gz (scripts/gpu-prepare.sh's
# .dev/gpu with the changed compiler, without kernels-sm80) and the
# packed tune directories (.dev/<dir>.tar.gz from `bench/tune.py prepare
# --pack`, one with the change and one without, e.g. TUNE_EXTRA_FLAGS=
# --row-barriers=0). Steps, each under its own cap:
#   1. gpu_check over every case (CHECK_S, 90; 0 skips it), then, with
#      ONE_GROUP_S > 0, its cases at G = 1 against the reduce kernel
#      (gpu_check --one-group-reduce)
#   2. compute-sanitizer racecheck and synccheck (SAN_TOOLS) over one case
#      per configuration (SAN_FILTER: gpu_check --filter; SAN_S each, 100;
#      0 skips them). SAN_MATRIX=full takes the full matrix's cases as
#      they are instead (the rows matrix raises each case's M until every
#      program loops twice, so it has no M = 1 case)
#   3. for each "plan:new:old" of AB (space separated), bench/tune.py run
#      --plan plan --dir .dev/new --against .dev/old into $OUT/new (TUNE_S
#      each, 120): the times of both kernels and whether any output bit
#      differs (against_differs); for each "plan:dir" of RUNS, the plan's
#      candidates alone (bench/tune.py run, TUNE_S each). A spec may end
#      in ":SECONDS", its own cap instead of TUNE_S
#   4. with GRID_AB="new old" (grid kernel directories, packed as
#      .dev/<dir>.tar.xz), bench/grid.py times ours from each, set by set,
#      at each set of GRID_SETS ("name|grid.py options;name|options", the
#      options --only-m / --only-n / --ops / --dtypes; GRID_S a set and
#      directory, 90) into $OUT/ab/grid-<name>-<dir>
# Logs in $OUT: check.log, racecheck.log, synccheck.log, ab.tgz (the tune
# and grid runs' JSON and tables), summary.txt, printed last.
#
#===----------------------------------------------------------------------===#
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-.dev/gpu/out}
mkdir -p "$OUT"
T0=$(date +%s)
note() { echo "$1 $(( $(date +%s) - T0 )) s" | tee -a "$OUT/summary.txt"; }
for t in .dev/*.tar.gz; do
  tar xzf "$t" -C .dev || note "unpack $t failed"
done
for t in .dev/*.tar.xz; do
  [[ -e $t ]] || continue
  tar xJf "$t" -C .dev || note "unpack $t failed"
done
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
# CHECK_S=0 / SAN_S=0: that step is skipped.
if (( ${CHECK_S:-90} > 0 )); then
  timeout "${CHECK_S:-90}" python3 bench/gpu_check.py --budget-s $(( ${CHECK_S:-90} - 20 )) \
    >"$OUT/check.log" 2>&1
  note "check rc=$?"
fi
# ONE_GROUP_S > 0: the cases at G = 1 once more with the reduce kernel
# launched after the dx kernel's finish (gpu_check --one-group-reduce):
# every output bit must match.
if (( ${ONE_GROUP_S:-0} > 0 )); then
  timeout "$ONE_GROUP_S" python3 bench/gpu_check.py --one-group-reduce \
    --no-error-path --budget-s $(( ONE_GROUP_S - 15 )) \
    >"$OUT/one-group.log" 2>&1
  note "one-group rc=$?"
fi
export PYTORCH_NO_CUDA_MEMORY_CACHING=1
for tool in ${SAN_TOOLS:-racecheck synccheck}; do
  (( ${SAN_S:-100} > 0 )) || break
  timeout "${SAN_S:-100}" "$CS" --tool "$tool" --error-exitcode 99 --print-limit 50 \
    python3 bench/gpu_check.py --sanitizer "${SAN_MATRIX:-rows}" --tool "$tool" \
    --deadline $(( $(date +%s) + ${SAN_S:-100} - 25 )) \
    --filter="${SAN_FILTER:-.}" >"$OUT/$tool.log" 2>&1
  note "$tool rc=$?"
done
unset PYTORCH_NO_CUDA_MEMORY_CACHING
mkdir -p "$OUT/ab"
for spec in ${AB:-}; do
  IFS=: read -r plan new old secs <<<"$spec"
  TS=${secs:-${TUNE_S:-120}}
  timeout "$TS" python3 bench/tune.py run --plan "$plan" --dir ".dev/$new" \
    --against ".dev/$old" --out "$OUT/ab/$new" \
    --deadline $(( $(date +%s) + TS - 10 )) >"$OUT/ab/$new.md" 2>&1
  note "tune $plan $new against $old rc=$?"
done
for spec in ${RUNS:-}; do
  IFS=: read -r plan dir secs <<<"$spec"
  TS=${secs:-${TUNE_S:-120}}
  timeout "$TS" python3 bench/tune.py run --plan "$plan" --dir ".dev/$dir" \
    --out "$OUT/ab/$dir" --deadline $(( $(date +%s) + TS - 10 )) \
    >"$OUT/ab/$dir.md" 2>&1
  note "tune $plan $dir rc=$?"
done
IFS=';' read -ra grid_sets <<<"${GRID_SETS:-}"
for set in "${grid_sets[@]}"; do
  name=${set%%|*}
  for dir in ${GRID_AB:-}; do
    GS=${GRID_S:-90}
    # shellcheck disable=SC2086 # the set's options are a list
    timeout "$GS" python3 bench/grid.py --gpu-dir ".dev/$dir" \
      --out "$OUT/ab/grid-$name-$dir" --impls ours ${set#*|} \
      --deadline $(( $(date +%s) + GS - 10 )) \
      >"$OUT/ab/grid-$name-$dir.log" 2>&1
    note "grid $name $dir rc=$?"
  done
done
tar czf "$OUT/ab.tgz" -C "$OUT" ab && rm -rf "$OUT/ab"
for f in check one-group racecheck synccheck; do
  [[ -f $OUT/$f.log ]] && tail -n 4 "$OUT/$f.log"
done
cat "$OUT/summary.txt"
