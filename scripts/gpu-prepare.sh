#!/usr/bin/env bash
#===- scripts/gpu-prepare.sh - build and compile what the GPU run needs ----===#
#
# Runs on the build machine (no GPU needed). Builds norm-compile and the
# runtime library, compiles every kernel configuration that
# bench/gpu_check.py and bench/bench.py use (listed by bench/configs.py)
# into .dev/gpu/kernels/<config>.{ptx,json}, copies libnormrt.so to
# .dev/gpu/, writes .dev/gpu/configs.json and, where ptxas is found,
# <config>.cubin (sm_90; the scripts load it instead of the PTX, sparing
# the driver's JIT on the GPU machine, and fall back to the PTX) and
# .dev/gpu/resources.txt (registers, shared memory, stack, spills per
# kernel). What does not fit the 64 MiB a device call carries beside the
# tracked tree moves out or is packed (the sm_90 PTX of configurations with
# a cubin to .dev/ptx-sm90; then kernels-sm80 into kernels-sm80.tar.gz,
# which gpu-run.sh unpacks). Then carry .dev/gpu to the GPU machine and run
# scripts/gpu-run.sh there.
#
#   bash scripts/gpu-prepare.sh            BUILD_DIR (build), JOBS (2),
#                                          PTXAS (auto) are honoured
#   NO_PTXAS=1 bash scripts/gpu-prepare.sh skip the resource report
#   EXTRA_FLAGS=--early-rows=true bash scripts/gpu-prepare.sh
#                                          every kernel compiled with these
#                                          norm-compile flags too (gpu_check
#                                          of a pipeline option)
#   GRID=1 bash scripts/gpu-prepare.sh     also the configurations of
#                                          bench/grid.py (issue 21:
#                                          NORM_CONFIG_SETS=grid, ~90 more)
#                                          and its dry run (dry-run.txt)
#   QUACK=1 bash scripts/gpu-prepare.sh    also quack-kernels and its
#                                          dependencies for the grid: cp312
#                                          wheels downloaded into
#                                          .dev/quack/wheels, one tar split
#                                          into .dev/quack/p1, p2 of
#                                          QUACK_PART_MB (53) each, and
#                                          quack.txt (its sha256) in each
#                                          and in .dev/gpu; see
#                                          bench/README.md "The grid"
#
# Exit status: 0 when every configuration compiled (a missing runtime
# library is a warning: the kernels are still prepared); 1 otherwise.
#
#===----------------------------------------------------------------------===#
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
JOBS=${JOBS:-2}
OUTDIR=$ROOT/.dev/gpu
KDIR=$OUTDIR/kernels
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}

log() { printf '\033[1m== %s\033[0m\n' "$*" >&2; }
warn() { printf '\033[1;33mwarning: %s\033[0m\n' "$*" >&2; }

t_start=$(date +%s)

if [[ ! -f $BUILD_DIR/build.ninja ]]; then
  echo "gpu-prepare: no $BUILD_DIR/build.ninja: run 'bash scripts/dev.sh test'" \
       "(or configure the build) first" >&2
  exit 1
fi

#--- build ----------------------------------------------------------------#
log "building norm-compile"
ninja -C "$BUILD_DIR" norm-compile

# The runtime library's target: 'normrt' if CMake declares it, else its
# output path. ninja regenerates build.ninja first if a CMakeLists changed.
runtime_target=""
targets=$(ninja -C "$BUILD_DIR" -t targets all 2>/dev/null || true)
if grep -qE '^normrt:' <<<"$targets"; then
  runtime_target=normrt
elif grep -qE '^lib/libnormrt\.so:' <<<"$targets"; then
  runtime_target=lib/libnormrt.so
fi
have_runtime=0
if [[ -n $runtime_target ]]; then
  log "building the runtime ($runtime_target)"
  if ninja -C "$BUILD_DIR" "$runtime_target"; then
    have_runtime=1
  else
    warn "building $runtime_target failed: gpu_check/bench cannot run" \
         "without libnormrt.so"
  fi
else
  if [[ -f lib/Runtime/CMakeLists.txt ]]; then
    warn "lib/Runtime/CMakeLists.txt exists but the build declares no" \
         "'normrt' target nor lib/libnormrt.so (is lib/Runtime added to" \
         "lib/CMakeLists.txt?)"
  else
    warn "no runtime library yet (lib/Runtime does not exist): preparing" \
         "the kernels only; gpu_check.py and bench.py need libnormrt.so"
  fi
fi

NC=$BUILD_DIR/bin/norm-compile
[[ -x $NC ]] || { echo "gpu-prepare: $NC not built" >&2; exit 1; }

#--- wheels for the GPU machine (bench/requirements-gpu.txt) ---------------#
# Pure-Python packages it lacks (Liger-Kernel for bench/sweep); kept across
# runs, fetched only when missing.
mkdir -p "$OUTDIR/wheels"
while read -r req; do
  [[ -z $req || $req == \#* ]] && continue
  name=${req%%==*}
  ver=${req#*==}
  whl_glob="$OUTDIR/wheels/${name//-/_}-${ver}-*.whl"
  if ! compgen -G "$whl_glob" >/dev/null; then
    log "downloading the wheel of $req"
    python3 -m pip download -q --no-deps --only-binary=:all: \
      --python-version 3.12 --implementation cp \
      --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
      -d "$OUTDIR/wheels" "$req" ||
      warn "could not download $req: its benchmark rows will fail"
  fi
done < bench/requirements-gpu.txt

#--- quack-kernels for the grid (QUACK=1; bench/README.md "The grid") ------#
# About 106 MB of cp312 wheels, more than one device call carries (64 MiB
# with the tree): one tar of them split into parts
# (.dev/quack/pK/quack.tar.partK, with quack.txt: the tar's sha256) that
# calls of their own carry one at a time (GPU_RUN_STEPS=quack); gpu-run.sh
# joins them on the GPU machine once all are there, checks the sha256,
# installs them in ONE `pip install --target`, and keeps the result there
# for the later calls.
QUACK_WHEELS="quack-kernels==0.6.5 nvidia-cutlass-dsl==4.8.1
  nvidia-cutlass-dsl-libs-base==4.8.1 nvidia-cutlass-dsl-libs-cu13==4.8.1
  nvidia-cutlass-dsl-libs-core==4.8.1 apache-tvm-ffi==0.1.15.post2
  torch-c-dlpack-ext==0.1.5 einops==0.8.2 cuda-bindings==13.5.0
  cuda-pathfinder==1.9.1"
if [[ -n ${QUACK:-} ]]; then
  QDIR=$ROOT/.dev/quack
  mkdir -p "$QDIR/wheels"
  qok=1
  for req in $QUACK_WHEELS; do
    name=${req%%==*}
    ver=${req#*==}
    if ! compgen -G "$QDIR/wheels/${name//-/_}-${ver}-*.whl" >/dev/null; then
      log "downloading the wheel of $req (quack)"
      python3 -m pip download -q --no-deps --only-binary=:all: \
        --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
        --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 \
        -d "$QDIR/wheels" "$req" || { warn "could not download $req"; qok=0; }
    fi
  done
  rm -rf "$QDIR"/p[0-9]* "$OUTDIR/quack.txt"
  if ((qok)); then
    qtar=$(mktemp)
    (cd "$QDIR/wheels" && tar -cf "$qtar" --sort=name --owner=0 --group=0 \
       --mtime=@0 ./*.whl)
    sum=$(sha256sum "$qtar" | cut -d' ' -f1)
    bytes=$(stat -c %s "$qtar")
    (cd "$QDIR" && split -b "${QUACK_PART_MB:-53}M" -d -a 1 "$qtar" part.)
    rm -f "$qtar"
    nparts=0
    for f in "$QDIR"/part.*; do
      k=$(( ${f##*.} + 1 ))
      mkdir -p "$QDIR/p$k"
      mv "$f" "$QDIR/p$k/quack.tar.part$k"
      nparts=$k
    done
    printf 'sha256 %s\nbytes %s\nparts %s\nwheels %s\n' "$sum" "$bytes" \
      "$nparts" "$(echo $QUACK_WHEELS)" >"$QDIR/quack.txt"
    for ((k = 1; k <= nparts; k++)); do cp "$QDIR/quack.txt" "$QDIR/p$k/"; done
    log "quack: $(du -sh "$QDIR/wheels" | cut -f1) of wheels in $nparts" \
        "parts: $(cd "$ROOT" && ls -d .dev/quack/p[0-9]* | tr '\n' ' ')"
  else
    warn "quack-kernels not prepared: the grid skips quack"
  fi
fi

#--- compile every configuration ------------------------------------------#
rm -f "$OUTDIR/libnormrt.so" "$OUTDIR/configs.json" "$OUTDIR/resources.txt"
# GRID=1: the grid's configurations too (bench/configs.py grid_cfgs).
[[ -z ${GRID:-} ]] || export NORM_CONFIG_SETS=grid
njobs=$(python3 bench/configs.py jobs | wc -l)
log "compiling $njobs configurations with $JOBS jobs into $KDIR"
t0=$(date +%s.%N)
JOBS=$JOBS bash scripts/compile-configs.sh "$NC" "$KDIR" || true
t1=$(date +%s.%N)
compile_s=$(python3 -c "print('%.1f' % ($t1 - $t0))")

# The deterministic backward configurations again for sm_80, PTX only (the
# driver JITs it on the H200): gpu-run's "chips" step checks that their
# dweight/dbias equal the sm_90 cubins' bitwise (issue 9, item 4), also for
# the tuning table's configurations (-rM: the same flags, no table on
# sm_80; configs.TUNED_CASES).
log "the deterministic backward configurations for sm_80 (PTX) into $OUTDIR/kernels-sm80"
NORM_CONFIG_SETS= NAME_FILTER='^(layer|rms)_norm_grad-.*-deterministic(-r[0-9]+)?$' \
  EXTRA_FLAGS="--chip=sm_80 ${EXTRA_FLAGS:-}" \
  JOBS=$JOBS bash scripts/compile-configs.sh "$NC" "$OUTDIR/kernels-sm80" || true

#--- resource report (ptxas -v), optional --------------------------------#
PTXAS=${PTXAS:-}
if [[ -z $PTXAS ]]; then
  if [[ -x $CUDA_HOME/bin/ptxas ]]; then PTXAS=$CUDA_HOME/bin/ptxas
  elif command -v ptxas >/dev/null; then PTXAS=$(command -v ptxas); fi
fi
resdir=""
ptxas_s=0
if [[ -z ${NO_PTXAS:-} && -n $PTXAS ]]; then
  resdir=$(mktemp -d)
  trap 'rm -rf "$resdir"' EXIT
  log "ptxas -v: cubins and the resource report ($PTXAS)"
  export PTXAS resdir
  t0=$(date +%s.%N)
  find "$KDIR" -name '*.ptx' -print0 |
    xargs -0 -P "$JOBS" -n 1 bash -c \
      'n=$(basename "$1" .ptx); "$PTXAS" -arch=sm_90 -v "$1" \
         -o "${1%.ptx}.cubin" >"$resdir/$n.txt" 2>&1 ||
         { rm -f "${1%.ptx}.cubin"; echo "ptxas failed on $n" >&2; }' _ || true
  t1=$(date +%s.%N)
  ptxas_s=$(python3 -c "print('%.1f' % ($t1 - $t0))")
elif [[ -z ${NO_PTXAS:-} ]]; then
  warn "no ptxas found: no resources.txt"
fi

#--- the runtime library --------------------------------------------------#
if ((have_runtime)) && [[ -f $BUILD_DIR/lib/libnormrt.so ]]; then
  cp -L "$BUILD_DIR/lib/libnormrt.so" "$OUTDIR/libnormrt.so"
  needed=$(readelf -d "$OUTDIR/libnormrt.so" 2>/dev/null |
           sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | tr '\n' ' ')
  log "libnormrt.so needs: $needed"
  if grep -qiE 'LLVM|MLIR|libcuda' <<<"$needed"; then
    warn "libnormrt.so links $needed: it must link no LLVM/MLIR and" \
         "dlopen libcuda (the GPU machine has neither LLVM nor MLIR)"
  fi
elif ((have_runtime)); then
  warn "built $runtime_target but found no $BUILD_DIR/lib/libnormrt.so"
fi

#--- index ----------------------------------------------------------------#
rc=0
python3 bench/configs.py index --dir "$OUTDIR" ${resdir:+--resources "$resdir"} || rc=$?
python3 bench/gpu_check.py --dry-run --gpu-dir "$OUTDIR" >"$OUTDIR/dry-run.txt" 2>&1 || true
# The racecheck matrix (its own row counts) and nan_check's configurations.
{ echo "--- gpu_check.py --dry-run --sanitizer rows"
  python3 bench/gpu_check.py --dry-run --sanitizer rows --gpu-dir "$OUTDIR" |
    grep -vE '^(ok  |  )' || true
  echo "--- nan_check.py --dry-run"
  python3 bench/nan_check.py --dry-run --gpu-dir "$OUTDIR" || true
} >>"$OUTDIR/dry-run.txt" 2>&1
# Manifests against what the checks expect, every case's tensors and the
# error path, offline, through the package's binding (bench/gpu_env.py),
# which refuses a libnormrt.so whose schema it disagrees with.
# The grid's plan against configs.json, and its time per shard.
if [[ -n ${GRID:-} ]]; then
  { echo "--- grid.py --dry-run"
    python3 bench/grid.py --dry-run --gpu-dir "$OUTDIR" || true
  } >>"$OUTDIR/dry-run.txt" 2>&1
  grep -E '^(grid:|estimated|at [0-9]+ s|configs.json)' "$OUTDIR/dry-run.txt" >&2 || true
fi
# quack.txt travels with .dev/gpu: gpu-run.sh checks the joined parts.
[[ -z ${QUACK:-} || ! -f $ROOT/.dev/quack/quack.txt ]] ||
  cp "$ROOT/.dev/quack/quack.txt" "$OUTDIR/quack.txt"
probs='^(MANIFEST|NOT COMPILED|VALIDATE|FAIL error-path|runtime .*: cannot bind)'
nbad=$(grep -cE "$probs" "$OUTDIR/dry-run.txt" || true)
if ((nbad)); then
  warn "$nbad problems in the offline checks: see $OUTDIR/dry-run.txt"
  grep -E "$probs" "$OUTDIR/dry-run.txt" | head -20 >&2
fi
grep -E '^(dry run:|normrt_validate:|error path|nan_check)' "$OUTDIR/dry-run.txt" >&2 || true
if [[ -f $OUTDIR/resources.txt ]]; then
  nspill=$(grep -c 'stack/spills' "$OUTDIR/resources.txt" || true)
  ((nspill == 0)) || warn "$nspill kernels with a stack frame or spills" \
                          "(grep spills $OUTDIR/resources.txt)"
fi

# A device call carries at most 64 MiB with the tracked tree (about 2 MB):
# past 60 MiB, the sm_90 PTX of configurations that have a cubin (which the
# GPU tools load first; the PTX is only their fallback) moves out of the
# carried folder, to .dev/ptx-sm90.
limit=$((60 * 1024 * 1024))
if (($(du -sb "$OUTDIR" | cut -f1) > limit)); then
  rm -rf "$ROOT/.dev/ptx-sm90"
  mkdir -p "$ROOT/.dev/ptx-sm90"
  for f in "$OUTDIR"/kernels/*.ptx; do
    [[ -f ${f%.ptx}.cubin ]] && mv "$f" "$ROOT/.dev/ptx-sm90/"
  done
  warn ".dev/gpu was over 60 MiB: the sm_90 PTX of configurations with a" \
       "cubin moved to .dev/ptx-sm90 (the cubins run; --image ptx would not)"
fi
# Still over what travels beside the tracked tree (7.5 MB by now, with the
# results' JSON): the sm_80 PTX (the chips step's) as one tar.gz, about a
# fifth of its size; gpu-run.sh unpacks it.
tree=$(git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
room=$((63 * 1024 * 1024 - ${tree:-0}))
if (($(du -sb "$OUTDIR" | cut -f1) > room)) && [[ -d $OUTDIR/kernels-sm80 ]]; then
  tar -C "$OUTDIR" -czf "$OUTDIR/kernels-sm80.tar.gz" kernels-sm80
  rm -rf "$OUTDIR/kernels-sm80"
  warn ".dev/gpu and the tracked tree were over 63 MiB: kernels-sm80" \
       "packed into kernels-sm80.tar.gz (gpu-run.sh unpacks it)"
fi
if (($(du -sb "$OUTDIR" | cut -f1) > room)); then
  warn ".dev/gpu ($(du -sb "$OUTDIR" | cut -f1) bytes) and the tracked tree" \
       "(${tree:-?} bytes) are over the 64 MiB a device call carries"
fi

size=$(du -sh "$OUTDIR" | cut -f1)
t_end=$(date +%s)
log "done in $((t_end - t_start)) s (norm-compile ${compile_s} s for" \
    "$njobs configurations with $JOBS jobs; ptxas ${ptxas_s} s);" \
    ".dev/gpu is $size"
if [[ ! -f $OUTDIR/libnormrt.so ]]; then
  warn ".dev/gpu has no libnormrt.so: the GPU run will stop at setup"
fi
echo "carry: .dev/gpu    then on the GPU machine: bash scripts/gpu-run.sh"
if [[ -f $OUTDIR/quack.txt ]]; then
  for d in "$ROOT"/.dev/quack/p[0-9]*; do
    echo "quack: carry .dev/quack/$(basename "$d") ($(du -sh "$d" |
         cut -f1)) alone: GPU_RUN_STEPS=quack bash scripts/gpu-run.sh"
  done
fi
exit $rc
