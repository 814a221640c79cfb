#!/usr/bin/env bash
#===- scripts/gpu-call-xsec.sh - one device call: the grid's cross-section -===#
#
# Runs ON THE GPU MACHINE after quack-kernels was staged there
# (GPU_RUN_STEPS=quack bash scripts/gpu-run.sh, one call per part of
# .dev/quack). Carry the grid's kernels packed as .dev/<GRID>.tar.xz
# (bench/tune.py prepare --plan grid-cfgs-f32 --dir .dev/<GRID>, then tar
# -cJf: a fifth of the gzip) and, in any call before, .dev/gpu/wheels
# (Liger). Times ours against eager, torch.compile, Liger and quack at
# three sets of points, each its own grid.json under $OUT/<set>:
#   a  M = 64, 2048, 8192, 65536 x N = 768, 2560, 7168, 12288 (bf16)
#   b  M = 1024, 16384 x N = 2048, 4096, 16384, 65536 (bf16)
#   c  M = 1, 8, 256 x N = 1000, 5120, 14336, 49152 (bf16)
# (a and b are the cross-section of bench/RESULTS.md since the second
# session of 2026-12-02; c the rows few and wide, off the tuned N). Merge
# here: python3 bench/grid.py --merge OUT/a/grid.json OUT/b/grid.json ...
#
#===----------------------------------------------------------------------===#
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-.dev/gpu/out}
GRID=${GRID:-gridk3}
SETS=${SETS:-a b c}
[[ -d .dev/$GRID ]] || tar -xJf ".dev/$GRID.tar.xz" -C .dev
Q=$(pwd)/.dev/quack/site
pip install -q --no-deps --target /tmp/site .dev/gpu/wheels/*.whl 2>&1 | tail -2
export PYTHONPATH=/tmp/site:$Q:$Q/nvidia_cutlass_dsl/dsl_packages
T0=$(date +%s)
for s in $SETS; do
  case $s in
    a) args=(--only-m 64,2048,8192,65536 --only-n 768,2560,7168,12288) ;;
    b) args=(--only-m 1024,16384 --only-n 2048,4096,16384,65536) ;;
    c) args=(--only-m 1,8,256 --only-n 1000,5120,14336,49152) ;;
    *) echo "unknown set $s"; continue ;;
  esac
  mkdir -p "$OUT/$s"
  python3 bench/grid.py --gpu-dir ".dev/$GRID" --out "$OUT/$s" \
    --impls ${IMPLS:-ours,eager,compile,liger,quack} --dtypes bf16 \
    --deadline $(( T0 + ${CAP_S:-540} )) "${args[@]}" >"$OUT/$s/grid.log" 2>&1
  echo "set $s rc=$? $(( $(date +%s) - T0 )) s"
  tail -3 "$OUT/$s/grid.log"
done
