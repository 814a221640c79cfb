#!/usr/bin/env bash
#===- scripts/gpu-python.sh - the wheel's tests on the GPU machine --------===#
#
# Runs ON THE GPU MACHINE, in the repository root, with the wheel carried
# in .whl/ (bash scripts/dev.sh wheel on the build machine). gpu-run.sh's
# "python" step; also runs alone:
#
#   bash scripts/gpu-python.sh
#
# Installs the wheel (no index, no dependencies: torch is the machine's)
# into a temporary directory, checks that norm_mlir and its libraries are
# imported from there (not from python/ in the checkout) and that the ops'
# CUDA kernels are the C++ bodies (libnormtorch.so), runs python/tests (CPU
# and GPU files), bench/first_use.py cold, then warm with cProfile of the
# first call, bench/host_split.py (the host time of a small forward +
# backward, by pieces) and bench/train_step.py (training steps with
# torch's norms against ours, and the host time per call against torch's
# ops).
#
# Environment:
#   TRAIN_STEP        quick (default: --quick, configurations started in
#                     the first TRAIN_STEP_BUDGET_S seconds, default 45),
#                     full (every width, norm, precision and mode: far more
#                     than one device call; split it with TRAIN_STEP_ARGS),
#                     or none
#   TRAIN_STEP_ARGS   more arguments for train_step.py (--widths 512 1024,
#                     --modes eager, --budget-s 500, ...)
#   TRAIN_STEP_OUT    its markdown (default $OUT/train_step.md, else
#                     .dev/gpu/out/train_step.md)
#   GPU_PYTHON_ONLY   train_step: install and check the wheel, then run
#                     train_step.py alone (no tests, first_use, host_split)
# Exit status: pytest's, else train_step.py's; 1 when the wheel is
# missing or will not install, or when its ops run the Python bodies (no
# libnormtorch.so in it, or one that does not bind: the rest still runs).
#
#===----------------------------------------------------------------------===#
set -u -o pipefail
cd "$(dirname "$0")/.." || exit 1

wheels=(.whl/norm_mlir-*.whl)
if [[ ! -f ${wheels[0]} ]]; then
  echo "gpu-python: no .whl/norm_mlir-*.whl: run 'bash scripts/dev.sh wheel'" \
       "on the build machine and carry .whl"
  exit 1
fi
((${#wheels[@]} == 1)) || { echo "gpu-python: more than one wheel in .whl"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "wheel: ${wheels[0]} ($(stat -c %s "${wheels[0]}") bytes," \
     "sha256 $(sha256sum "${wheels[0]}" | cut -c1-16))"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
  --target "$work/site" "${wheels[0]}" || exit 1
export PYTHONPATH=$work/site${PYTHONPATH:+:$PYTHONPATH}
export NORM_MLIR_CACHE=$work/cache PYTHONUNBUFFERED=1
# Exit 2: the package is the wheel's but its ops run the Python bodies (a
# wheel built without torch, or a libnormtorch.so that does not bind): the
# tests still run, on those, and the step fails.
python3 - "$work/site" <<'EOF'
import os, sys
import norm_mlir, norm_mlir._libs as L
site = os.path.realpath(sys.argv[1])
for p in (norm_mlir.__file__, L.find("libnormcompile.so"),
          L.find("libnormrt.so")):
    assert os.path.realpath(p).startswith(site + os.sep), p
print("norm_mlir %s from %s; toolkit %s" % (
    norm_mlir.__version__, os.path.dirname(norm_mlir.__file__),
    norm_mlir.find_toolkit()))
import torch
import norm_mlir.torch as nt
ext = L.find_optional("libnormtorch.so")
if ext is None or nt._native is None:
    print("gpu-python: FAILED: the op bodies are Python (%s)" % (
        "the wheel has no libnormtorch.so" if ext is None else
        "%s did not bind" % ext))
    sys.exit(2)
assert os.path.realpath(ext).startswith(site + os.sep), ext
dump = torch._C._dispatch_dump("norm_mlir::layer_norm_fwd")
assert "torch_ops.cpp" in [l for l in dump.splitlines()
                           if l.startswith("CUDA:")][0], dump
print("op bodies: C++ (%s; stable ABI %#x, built against %#x)" % (
    ext, nt._native.lib.normtorch_target_version(),
    nt._native.lib.normtorch_build_version()))
# The autograd kernels: C++ where the wheel's library was built for this
# torch, else the Python formulas (said, not a failure: another torch).
ag = L.find_optional(nt._AUTOGRAD_LIB)
print("autograd kernels: %s" % (
    "C++ (%s, for torch %s)" % (ag, nt._autograd_stamp(ag))
    if nt._cpp_autograd else "Python (%s)" % (
        "the wheel has no %s" % nt._AUTOGRAD_LIB if ag is None else
        "%s is for torch %s, this is %s" % (
            ag, nt._autograd_stamp(ag), nt._torch_build()))))
# The eager calls' Python entry (docs/Python.md, "The Python entry").
if nt._cpp_autograd:
    print("eager calls: %s" % (
        "the Python entry (python %s)" % sys.version.split()[0]
        if nt._ln_eager is not torch.ops.norm_mlir._eager_layer_norm.default._op
        else "the ops' callables (%s)" % (
            "NORM_MLIR_PY_ENTRY=0" if os.environ.get("NORM_MLIR_PY_ENTRY")
            == "0" else "the library has no Python entry: built without "
            "Python's headers, or its layout check failed")))
EOF
check=$?
((check == 0 || check == 2)) || exit 1
TRAIN_OUT=${TRAIN_STEP_OUT:-${OUT:-.dev/gpu/out}/train_step.md}
train_step() {
  local mode=${TRAIN_STEP:-quick} args=()
  case $mode in
    none) return 0 ;;
    quick) args=(--quick --budget-s "${TRAIN_STEP_BUDGET_S:-45}") ;;
    full) ;;
    *) echo "gpu-python: TRAIN_STEP=$mode: quick, full or none"; return 1 ;;
  esac
  mkdir -p "$(dirname "$TRAIN_OUT")"
  echo "=== training steps, torch's norms against ours (train_step.py," \
       "$mode) -> $TRAIN_OUT"
  # TRAIN_STEP_ARGS split into words on purpose.
  # shellcheck disable=SC2086
  python3 bench/train_step.py "${args[@]}" ${TRAIN_STEP_ARGS:-} \
    --out "$TRAIN_OUT"
}
if [[ ${GPU_PYTHON_ONLY:-} == train_step ]]; then
  train_step
  rc=$?
  ((check == 0)) || rc=1
  exit $rc
fi
python3 -m pytest -q -rs -p no:cacheprovider --durations=8 python/tests
rc=$?
((check == 0)) || rc=1
echo "=== first use, cold cache"
python3 bench/first_use.py
echo "=== first use, warm cache, first call profiled"
python3 bench/first_use.py --warm --profile
echo "=== host time, by pieces"
python3 bench/host_split.py
train_step || { ((rc)) || rc=1; }
exit $rc
