#!/usr/bin/env bash
#===- scripts/dev.sh - set up, build, run the example or the tests --------===#
#
# The README's two commands:
#   bash scripts/dev.sh example   install what is missing, build, lower the
#                                 bundled examples and show the result
#   bash scripts/dev.sh test      install what is missing, build, run every
#                                 test; last line "N passed, N failed"
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
export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}

log() { printf '\033[1m== %s\033[0m\n' "$*" >&2; }

install_deps() {
  local pkgs=(llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools
              cmake ninja-build g++ clang lld python3 python3-pyflakes)
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

run_tests() {
  local log_file=$BUILD_DIR/lit.log
  set +e
  "$LLVM_PREFIX/bin/lit" -v "$BUILD_DIR/test" 2>&1 | tee "$log_file"
  local lit_rc=${PIPESTATUS[0]}
  set -e
  # lit's own summary is not one CI reads: print the plain closing line.
  local passed failed skipped
  passed=$(grep -cE '^(PASS|XFAIL): ' "$log_file" || true)
  failed=$(grep -cE '^(FAIL|XPASS|UNRESOLVED|TIMEOUT): ' "$log_file" || true)
  skipped=$(grep -cE '^UNSUPPORTED: ' "$log_file" || true)
  if ((lit_rc != 0 && failed == 0)); then
    failed=1 # lit itself failed (e.g. a broken configuration)
  fi
  echo "$passed passed, $failed failed, $skipped skipped"
  ((failed == 0 && passed > 0))
}

case "${1:-}" in
  example) install_deps; build; run_example ;;
  test) install_deps; build; run_tests ;;
  build) install_deps; build ;;
  *) echo "usage: $0 example|test|build" >&2; exit 2 ;;
esac
