#!/usr/bin/env bash
#===- scripts/compile-configs.sh - every benchmark configuration's kernels -===#
#
# Compiles every configuration bench/configs.py lists with one norm-compile
# into OUTDIR/<config>.{ptx,json} (no ptxas, no runtime). Used by
# gpu-prepare.sh, and to show that a refactor leaves the kernels alone:
#
#   bash scripts/compile-configs.sh build/bin/norm-compile /tmp/after
#   diff -r /tmp/before /tmp/after && echo byte-identical
#
# JOBS (default 2) compile in parallel; NAME_FILTER (an extended regex)
# keeps the configurations whose name matches; EXTRA_FLAGS are added to
# every norm-compile (e.g. --chip=sm_80); JOBS_LIST names a file of jobs
# in `configs.py jobs`'s format (name<TAB>flag<TAB>...) to compile instead
# of that list (bench/tune.py's candidates). Exit status 1 when any failed.
#
#===----------------------------------------------------------------------===#
set -euo pipefail

cd "$(dirname "$0")/.."
NC=$(realpath "${1:?usage: $0 NORM_COMPILE OUTDIR}")
KDIR=${2:?usage: $0 NORM_COMPILE OUTDIR}
JOBS=${JOBS:-2}

rm -rf "$KDIR"
mkdir -p "$KDIR"
jobs_file=$(mktemp)
trap 'rm -f "$jobs_file"' EXIT
if [[ -n ${JOBS_LIST:-} ]]; then cat "$JOBS_LIST"; else python3 bench/configs.py jobs; fi |
  awk -F '\t' -v re="${NAME_FILTER:-}" '$1 ~ re' >"$jobs_file"

# One line of the jobs list: name<TAB>flag<TAB>flag...
compile_one() {
  local line=$1 name
  IFS=$'\t' read -r -a f <<<"$line"
  name=${f[0]}
  # shellcheck disable=SC2086 # EXTRA_FLAGS: words
  if "$NC" "${f[@]:1}" ${EXTRA_FLAGS:-} -o "$KDIR/$name.ptx" --manifest "$KDIR/$name.json" \
       2>"$KDIR/$name.err"; then
    [[ -s $KDIR/$name.err ]] || rm -f "$KDIR/$name.err"
  else
    rm -f "$KDIR/$name.ptx" "$KDIR/$name.json"
    echo "FAILED $name: $(head -c 300 "$KDIR/$name.err")" >&2
    return 1
  fi
}
export -f compile_one
export NC KDIR EXTRA_FLAGS

xargs -P "$JOBS" -d '\n' -n 1 bash -c 'compile_one "$1"' _ <"$jobs_file"
