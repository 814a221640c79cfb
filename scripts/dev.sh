#!/usr/bin/env bash
#===- scripts/dev.sh - set up, build, run the example or the tests --------===#
#
# The README's two commands:
#   bash scripts/dev.sh example   install what is missing, build, lower the
#                                 bundled examples and show the result
#   bash scripts/dev.sh test      install what is missing, build, run every
#                                 test; last line "N passed, N failed"
#   bash scripts/dev.sh wheel     install what is missing, build the Python
#                                 wheel (norm_mlir) into .whl/
#
# Works as root on a fresh Debian 12 machine with the CUDA toolkit at
# /usr/local/cuda (CUDA_HOME overrides). BUILD_DIR (default build) and JOBS
# (default nproc) are honoured.
#
#===----------------------------------------------------------------------===#
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
JOBS=${JOBS:-$(nproc)}
LLVM_PREFIX=/usr/lib/llvm-22
TORCH_VERSION=${TORCH_VERSION:-2.11.0}
# Clang, as Debian's LLVM/MLIR is built: MLIR names the TypeIDs of traits
# and interfaces by the compiler's spelling of the type, so GCC-built code
# beside MLIR's own (static) C API resolves traits wrongly (docs/NOTES.md,
# "C API").
export CC=${CC:-clang} CXX=${CXX:-clang++}
export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}

log() { printf '\033[1m== %s\033[0m\n' "$*" >&2; }

# pip install for the python3 on PATH (pip itself from Debian if missing;
# Debian's own python3 wants --break-system-packages).
pip_install() {
  python3 -m pip --version >/dev/null 2>&1 || {
    log "installing python3-pip"
    apt-get install -y -qq --no-install-recommends python3-pip >/dev/null
  }
  log "installing $* (pip)"
  python3 -m pip install -q "$@" >&2 ||
    python3 -m pip install -q --break-system-packages "$@" >&2
}

install_deps() {
  local pkgs=(llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools
              cmake ninja-build g++ clang lld python3)
  local missing=()
  for p in "${pkgs[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  # Any lld provides ld.lld; Debian 12 ships lld-14 as `lld`'s dependency.
  if [[ " ${missing[*]} " == *" lld "* ]] && command -v ld.lld >/dev/null; then
    missing=("${missing[@]/lld}")
  fi
  missing=($(printf '%s\n' "${missing[@]}" | grep -v '^$' || true))
  if ((${#missing[@]})); then
    log "installing: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
  # pyflakes for the python3 on PATH (test/Tools/python-lint.test runs
  # `python3 -m pyflakes`): Debian's python3-pyflakes serves only
  # /usr/bin/python3, which need not be the one on PATH.
  python3 -m pyflakes --version >/dev/null 2>&1 || pip_install pyflakes
  if [[ ! -f $CUDA_HOME/nvvm/libdevice/libdevice.10.bc ]]; then
    log "warning: no CUDA toolkit at $CUDA_HOME: PTX tests are skipped"
  fi
}

build() {
  if [[ ! -f $BUILD_DIR/build.ninja ]]; then
    log "configuring $BUILD_DIR"
    cmake -G Ninja -S "$ROOT" -B "$BUILD_DIR" \
      -DCMAKE_BUILD_TYPE=Release \
      -DMLIR_DIR=$LLVM_PREFIX/lib/cmake/mlir \
      -DNORM_CUDA_TOOLKIT="$CUDA_HOME" >/dev/null
  fi
  log "building"
  ninja -C "$BUILD_DIR" -j "$JOBS"
}

run_example() {
  local opt=$BUILD_DIR/bin/norm-opt
  log "examples/rms_norm_grad.mlir: norm-lower-to-loops (bufferize, split, lower-forward, recompute, promote, fuse, cache rows)"
  "$opt" examples/rms_norm_grad.mlir --norm-lower-to-loops
  log "examples/layer_norm_grad.mlir: norm-choose-geometry (each row kernel's geometry, in the IR)"
  "$opt" examples/layer_norm_grad.mlir --norm-choose-geometry |
    grep -o 'norm.geometry = #norm.row_geometry<[^>]*>'
  log "examples/layer_norm_grad.mlir: norm-to-gpu-binary, the PTX (sm_90)"
  "$opt" examples/layer_norm_grad.mlir --norm-to-gpu-binary="chip=sm_90" |
    python3 scripts/extract-ptx.py
  log "the same op from a spec, as kernels + launch manifest: build/examples/"
  mkdir -p "$BUILD_DIR/examples"
  "$BUILD_DIR/bin/norm-compile" --op=layer_norm_grad --n=4096 --dtype=bf16 \
    --weight-dtype=f32 --name=layer_norm_grad_bf16_n4096 \
    -o "$BUILD_DIR/examples/layer_norm_grad.ptx" \
    --manifest "$BUILD_DIR/examples/layer_norm_grad.json"
  ls -l "$BUILD_DIR/examples"
}

# The CI subset of the sanitizers (issue 8; docs/NOTES.md "Sanitizers"):
# libnormrt, its C and Python tests and the row geometry, built with
# NORM_SANITIZE=ON (ASan + UBSan) into $SAN_DIR, and the lit tests that
# drive them: test/Runtime (bad manifests, tensors, aliasing, sizes) and
# the geometry unit test. These targets link no MLIR, so they build in
# about two minutes; the compiler under ASan (about 15 minutes to build on
# two cores) is `bash scripts/sanitize.sh`, on demand. The tests take
# norm-compile from the release build (lit -D norm_fallback_tools).
# SANITIZE_RUNTIME=0 skips it.
SAN_DIR=${SAN_DIR:-$ROOT/build-san}
SAN_TARGETS=(normrt normrt-test normrt-gpu-test normrt-fake-cuda
             norm-geometry-test)
build_sanitized_runtime() {
  if [[ ! -f $SAN_DIR/build.ninja ]]; then
    log "configuring $SAN_DIR (NORM_SANITIZE=ON)"
    # GCC here: these targets link no MLIR, and GCC links its sanitizer
    # runtime into libnormrt.so (Clang leaves it to the executable, which
    # the shared library's -z defs refuses).
    CC=gcc CXX=g++ cmake -G Ninja -S "$ROOT" -B "$SAN_DIR" \
      -DCMAKE_BUILD_TYPE=Release \
      -DMLIR_DIR=$LLVM_PREFIX/lib/cmake/mlir -DNORM_SANITIZE=ON \
      -DNORM_CUDA_TOOLKIT="$CUDA_HOME" >/dev/null
  fi
  log "building the sanitized runtime: ${SAN_TARGETS[*]}"
  ninja -C "$SAN_DIR" -j "$JOBS" "${SAN_TARGETS[@]}"
}

# lit over $1 (more paths after it), verbose log to $LOG_FILE; echoes
# "passed failed skipped".
lit_counts() {
  local log_file=$1
  shift
  set +e
  "$LLVM_PREFIX/bin/lit" -v "$@" 2>&1 | tee "$log_file" >&2
  local lit_rc=${PIPESTATUS[0]}
  set -e
  local passed failed skipped
  passed=$(grep -cE '^(PASS|XFAIL): ' "$log_file" || true)
  failed=$(grep -cE '^(FAIL|XPASS|UNRESOLVED|TIMEOUT): ' "$log_file" || true)
  skipped=$(grep -cE '^UNSUPPORTED: ' "$log_file" || true)
  if ((lit_rc != 0 && failed == 0)); then
    failed=1 # lit itself failed (e.g. a broken configuration)
  fi
  echo "$passed $failed $skipped"
}

# python/tests with pytest (installed from PyPI if missing) against this
# build's libnormcompile.so / libnormrt.so; the GPU file skips itself
# without torch and a GPU. Echoes "passed failed skipped".
pytest_counts() {
  python3 -m pytest --version >/dev/null 2>&1 || pip_install pytest
  local out rc
  set +e
  out=$(NORM_MLIR_LIB_DIR="$BUILD_DIR/lib" PYTHONPATH="$ROOT/python" \
    NORM_MLIR_CACHE="$BUILD_DIR/pytest-cache" \
    python3 -m pytest -q -p no:cacheprovider -rs "$ROOT/python/tests" 2>&1)
  rc=$?
  set -e
  echo "$out" | tee "$BUILD_DIR/pytest.log" >&2
  local last passed failed skipped
  last=$(echo "$out" | tail -1)
  passed=$(echo "$last" | grep -oE '[0-9]+ passed' | grep -oE '[0-9]+' || echo 0)
  failed=0
  for k in $(echo "$last" | grep -oE '[0-9]+ (failed|errors?)' |
             grep -oE '[0-9]+' || true); do
    failed=$((failed + k))
  done
  skipped=$(echo "$last" | grep -oE '[0-9]+ skipped' | grep -oE '[0-9]+' || echo 0)
  if ((rc != 0 && failed == 0)); then
    failed=1 # pytest itself failed (collection, import)
  fi
  echo "$passed $failed $skipped"
}

run_tests() {
  local p f s sp=0 sf=0 ss=0 pp pf ps
  # torch for python/tests/test_torch_cpu.py (state dicts, the ops' real
  # bodies validated against their manifests, fake tensors) and for
  # test/Tools/tune-table.test (bench/tune.py's inputs, on the CPU): the
  # GPU machine's version. PyPI's wheel is the CUDA build (about 3 GB with
  # its nvidia-* dependencies, 1.5 minutes to install here); it runs on
  # the CPU.
  python3 -c "import torch" >/dev/null 2>&1 ||
    pip_install "torch==$TORCH_VERSION"
  read -r p f s < <(lit_counts "$BUILD_DIR/lit.log" "$BUILD_DIR/test")
  log "python/tests (pytest)"
  read -r pp pf ps < <(pytest_counts)
  echo "python: $pp passed, $pf failed, $ps skipped"
  ((pp > 0)) || pf=$((pf + 1))
  p=$((p + pp)); f=$((f + pf)); s=$((s + ps))
  if [[ ${SANITIZE_RUNTIME:-1} != 0 ]]; then
    build_sanitized_runtime
    log "the runtime's tests under ASan + UBSan"
    read -r sp sf ss < <(lit_counts "$SAN_DIR/lit.log" \
      -D norm_fallback_tools="$BUILD_DIR/bin" \
      --filter-out 'Runtime/groups.test' \
      "$SAN_DIR/test/Runtime" "$SAN_DIR/test/Conversion/NormToGPU/geometry.test")
    echo "sanitized runtime: $sp passed, $sf failed, $ss skipped"
    ((sp > 0)) || sf=$((sf + 1))
  fi
  # lit's own summary is not one CI reads: print the plain closing line.
  echo "$((p + sp)) passed, $((f + sf)) failed, $((s + ss)) skipped"
  ((f + sf == 0 && p > 0))
}

# The Python wheel (docs/Python.md): MLIR/LLVM linked statically into
# libnormcompile.so (build-py/, NORM_LINK_MLIR_DYLIB=OFF), into $WHEEL_DIR.
build_wheel() {
  local out=${WHEEL_DIR:-$ROOT/.whl}
  python3 -m pip --version >/dev/null 2>&1 || {
    log "installing python3-pip"
    apt-get install -y -qq --no-install-recommends python3-pip >/dev/null
  }
  # torch to build libnormtorch.so (the ops' C++ bodies) and the autograd
  # library against: without it pip built a wheel whose ops ran their
  # Python bodies (3-4x torch's host time a call), silently.
  # NORM_MLIR_TORCH_EXT=1 makes that a build error.
  python3 -c "import torch" >/dev/null 2>&1 ||
    pip_install "torch==$TORCH_VERSION"
  log "pip wheel ./python -> $out"
  NORM_MLIR_TORCH_EXT=${NORM_MLIR_TORCH_EXT:-1} \
    python3 -m pip wheel --no-deps -w "$out" "$ROOT/python"
  ls -l "$out"/norm_mlir-*.whl
}

case "${1:-}" in
  example) install_deps; build; run_example ;;
  test) install_deps; build; run_tests ;;
  build) install_deps; build ;;
  wheel) install_deps; build_wheel ;;
  *) echo "usage: $0 example|test|build|wheel" >&2; exit 2 ;;
esac
