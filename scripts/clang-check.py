#!/usr/bin/env python3
# ===- scripts/clang-check.py - our sources through clang, syntax only -----===#
#
# Part of mlir-norm.
#
# The build uses g++; embedders also build with clang, which rejects some
# things g++ accepts (e.g. a lambda capturing a structured binding before
# C++20). This runs clang++ -fsyntax-only with the build's own flags over
# every C++ source of ours listed in the build's compilation database.
#
#   python3 scripts/clang-check.py [BUILD_DIR] [CLANG]   (build, clang++)
#
# Exit status 1 when a file fails; 0 (with a note) when no clang is found.
#
# ===----------------------------------------------------------------------===#

import concurrent.futures
import json
import os
import shlex
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build")
clang = sys.argv[2] if len(sys.argv) > 2 else (
    shutil.which("clang++") or shutil.which("clang++-14"))
if not clang:
    print("clang-check: no clang++ found; skipped")
    sys.exit(0)

db = json.loads(subprocess.run(["ninja", "-C", build, "-t", "compdb"],
                               capture_output=True, text=True,
                               check=True).stdout)
entries = [e for e in db
           if e["file"].endswith(".cpp") and e["file"].startswith(ROOT + "/")
           and "command" in e]


def check(entry):
    args = shlex.split(entry["command"])
    cmd, skip = [clang], False
    for a in args[1:]:
        if skip:
            skip = False
            continue
        if a in ("-o", "-MF", "-MT"):
            skip = True
            continue
        if a == "-MD":
            continue
        cmd.append(a)
    cmd += ["-fsyntax-only", "-Wno-unknown-warning-option",
            "-fno-color-diagnostics"]
    p = subprocess.run(cmd, cwd=entry["directory"], capture_output=True,
                       text=True)
    return entry["file"], p.returncode, p.stderr


failed = 0
with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
    for f, rc, err in pool.map(check, entries):
        if rc:
            failed += 1
            print("FAIL %s\n%s" % (os.path.relpath(f, ROOT), "\n".join(
                l for l in err.splitlines() if "error:" in l)))
print("clang-check: %s, %d files, %d failed" % (
    subprocess.run([clang, "--version"], capture_output=True,
                   text=True).stdout.splitlines()[0], len(entries), failed))
sys.exit(1 if failed else 0)
