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
# into a temporary directory, checks that norm_mlir is imported from there
# (not from python/ in the checkout), runs python/tests (CPU and GPU files)
# bench/first_use.py cold, then warm with cProfile of the first call, and
# bench/host_split.py (the host time of a small forward + backward, by
# pieces).
# Exit status: pytest's, or 1 when the wheel is missing or will not install.
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
python3 - "$work/site" <<'EOF' || exit 1
import os, sys
import norm_mlir, norm_mlir._libs as L
site = os.path.realpath(sys.argv[1])
for p in (norm_mlir.__file__, L.find("libnormcompile.so"),
          L.find("libnormrt.so")):
    assert os.path.realpath(p).startswith(site + os.sep), p
print("norm_mlir %s from %s; toolkit %s" % (
    norm_mlir.__version__, os.path.dirname(norm_mlir.__file__),
    norm_mlir.find_toolkit()))
EOF
python3 -m pytest -q -rs -p no:cacheprovider --durations=8 python/tests
rc=$?
echo "=== first use, cold cache"
python3 bench/first_use.py
echo "=== first use, warm cache, first call profiled"
python3 bench/first_use.py --warm --profile
echo "=== host time, by pieces"
python3 bench/host_split.py
exit $rc
