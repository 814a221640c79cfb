#!/usr/bin/env python3
"""Occupancy of our kernels from ptxas -v, without a GPU: A against B.

For each kernel of two sets (directories of norm-compile output, PTX and
manifests side by side, or gpu-prepare's resources.txt), the blocks and
warps an SM holds (registers, shared memory, threads: the sm_90 limits
below) and, for the row kernels, the bytes of x and dy a block has in
flight when each thread issues its share at once. Prints every kernel
whose resident warps differ between the two sets, worst first, and a
count of the rest: the offline check before timing a code-generation
change (docs/NOTES.md: explicit fma took LayerNorm N <= 1024 from four
256-thread blocks an SM to three).

    python3 bench/occupancy.py A B          A, B: a kernels directory or a
                                            resources.txt
    python3 bench/occupancy.py A            one set: the table of A

Standard library only; ptxas from $CUDA_HOME (/usr/local/cuda) for
directories.
"""

import json
import os
import re
import subprocess
import sys

# sm_90 (H100 / H200): per SM.
REGS_PER_SM = 65536
REG_ALLOC_UNIT = 8          # registers a thread, rounded up to this
SMEM_PER_SM = 228 * 1024
SMEM_RESERVED_PER_BLOCK = 1024
MAX_THREADS_PER_SM = 2048
MAX_BLOCKS_PER_SM = 32
WARP = 32


def blocks_per_sm(threads, regs, smem):
    """Resident blocks an SM holds: the least of the register, shared
    memory, thread and block limits (0 when one block does not fit)."""
    if threads <= 0:
        return 0
    regs = max(1, -(-regs // REG_ALLOC_UNIT) * REG_ALLOC_UNIT)
    by_regs = REGS_PER_SM // (regs * threads)
    by_smem = SMEM_PER_SM // (smem + SMEM_RESERVED_PER_BLOCK)
    by_threads = MAX_THREADS_PER_SM // threads
    return max(0, min(by_regs, by_smem, by_threads, MAX_BLOCKS_PER_SM))


def ptxas_resources(ptx, ptxas):
    """{kernel: (registers, static shared bytes, spill store bytes)}."""
    err = subprocess.run([ptxas, "-arch=sm_90", "-v", ptx, "-o", os.devnull],
                         capture_output=True, text=True).stderr
    out, cur = {}, None
    for line in err.splitlines():
        m = re.search(r"entry function '(\w+)'", line)
        if m:
            cur = m.group(1)
            out[cur] = [0, 0, 0]
        m = re.search(r"(\d+) bytes spill stores", line)
        if m and cur:
            out[cur][2] = int(m.group(1))
        m = re.search(r"Used (\d+) registers", line)
        if m and cur:
            out[cur][0] = int(m.group(1))
            s = re.search(r"(\d+) bytes smem", line)
            out[cur][1] = int(s.group(1)) if s else 0
    return {k: tuple(v) for k, v in out.items()}


def load_set(path):
    """{(config, kernel): record} of a kernels directory or resources.txt;
    a record has threads, registers, shared (static + dynamic), spill and,
    for a row kernel, its geometry's lane share."""
    recs = {}
    if os.path.isfile(path):  # resources.txt: registers and smem only
        base = os.path.dirname(path)
        kdir = os.path.join(base, "kernels")
        with open(path) as fh:
            lines = fh.read().splitlines()
        for line in lines:
            f = line.split()
            if line.startswith("#") or len(f) < 10:
                continue
            man = os.path.join(kdir, f[0] + ".json")
            kern = _manifest_kernels(man).get(f[1], {})
            # ... spill st/ld S/L [<-- stack/spills]
            spill = f[f.index("st/ld") + 1].split("/")[0]
            recs[(f[0], f[1])] = dict(
                kern, regs=int(f[3]), smem=int(f[5]) + kern.get("dyn", 0),
                spill=int(spill))
        return recs
    ptxas = os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"),
                         "bin", "ptxas")
    for name in sorted(os.listdir(path)):
        if not name.endswith(".ptx"):
            continue
        cfg = name[:-4]
        kerns = _manifest_kernels(os.path.join(path, cfg + ".json"))
        for k, (regs, smem, spill) in ptxas_resources(
                os.path.join(path, name), ptxas).items():
            kern = kerns.get(k, {})
            recs[(cfg, k)] = dict(kern, regs=regs,
                                  smem=smem + kern.get("dyn", 0), spill=spill)
    return recs


def _manifest_kernels(path):
    try:
        with open(path) as f:
            m = json.load(f)
    except (OSError, ValueError):
        return {}
    out = {}
    for k in m.get("kernels", []):
        out[k["name"]] = {"threads": k.get("block", 0),
                          "kind": k.get("kind", ""),
                          "dyn": k.get("dynamic_shared_bytes", 0) or 0}
    return out


def describe(r):
    b = blocks_per_sm(r.get("threads", 0), r["regs"], r["smem"])
    return b, b * r.get("threads", 0) // WARP


def main(argv):
    if len(argv) not in (2, 3):
        print(__doc__)
        return 2
    a = load_set(argv[1])
    if len(argv) == 2:
        print("%-56s %-28s %5s %5s %7s %6s %6s" % (
            "config", "kernel", "thr", "regs", "smem", "blocks", "warps"))
        for (cfg, k), r in sorted(a.items()):
            b, w = describe(r)
            print("%-56s %-28s %5d %5d %7d %6d %6d" % (
                cfg, k, r.get("threads", 0), r["regs"], r["smem"], b, w))
        return 0
    b = load_set(argv[2])
    rows, same = [], 0
    for key in sorted(set(a) & set(b)):
        ra, rb = a[key], b[key]
        (_, wa), (_, wb) = describe(ra), describe(rb)
        if wa == wb and ra["spill"] == rb["spill"]:
            same += 1
            continue
        rows.append((wb - wa, key, ra, rb, wa, wb))
    rows.sort(key=lambda r: (r[0], r[1]))
    print("%-56s %-26s %9s %11s %9s" % ("config", "kernel", "regs A>B",
                                        "warps A>B", "spill A>B"))
    for d, (cfg, k), ra, rb, wa, wb in rows:
        print("%-56s %-26s %4d>%-4d %5d>%-5d %4d>%-4d" % (
            cfg[:56], k[-26:], ra["regs"], rb["regs"], wa, wb, ra["spill"],
            rb["spill"]))
    fewer = sum(1 for r in rows if r[0] < 0)
    print("occupancy: %d kernels in both, %d the same, %d with fewer warps "
          "an SM in B, %d with more, %d only the spills differ" % (
              len(set(a) & set(b)), same, fewer,
              sum(1 for r in rows if r[0] > 0),
              sum(1 for r in rows if r[0] == 0)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
