#!/usr/bin/env python3
# ===- test/fuzz/norm-fuzz.py - mutation fuzzer for norm-opt / norm-compile -===#
#
# Part of mlir-norm.
#
# Every input must end in success or a diagnostic: exit 0, or exit 1 with an
# "error:" line. Anything else is a finding: a signal (SIGSEGV, SIGFPE,
# SIGABRT), "LLVM ERROR" (report_fatal_error), an assertion, a sanitizer
# report, an exit 1 with no diagnostic, or a hang.
#
# Inputs are the lit tests and examples (split at `// -----`), mutated at
# the level of MLIR text: numbers replaced by edge values (0, 1, -1, 2^31,
# INT64_MAX...), dims made static/dynamic/zero/huge, element types swapped,
# ranks changed, attributes (stage, strategy, groups, accumulation type)
# replaced, lines deleted / duplicated / swapped, operands dropped. Each
# mutant goes through one mode:
#
#   parse    norm-opt (parser + verifier)
#   loops    norm-opt --norm-lower-to-loops
#   gpu      the full GPU pipeline to PTX
#   chain    a random sequence of norm and upstream passes
#   compile  norm-compile from a random (often invalid) spec
#
# Seeded and reproducible: the same --seed and --runs give the same inputs.
# Findings are written to --out (input, command, output), one folder each,
# and summarised at the end; the exit status is 1 when any was found.
#
#   python3 test/fuzz/norm-fuzz.py --build build --seconds 600     # a long run
#   python3 test/fuzz/norm-fuzz.py --build build --runs 200 --seed 1  # CI
#
# ===----------------------------------------------------------------------===#

import argparse
import concurrent.futures
import hashlib
import os
import random
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# The pipelines and passes a chain draws from. Kept here, in one place, so a
# renamed pass is one edit (norm-opt --help lists what exists).
GPU_PIPELINE = "--norm-to-gpu-binary=chip=sm_90"
LOOPS_PIPELINE = "--norm-lower-to-loops"
CHAIN_PASSES = [
    "--one-shot-bufferize=bufferize-function-boundaries",
    "--norm-recompute-graph", "--norm-split", "--norm-lower-forward",
    "--norm-recompute-loops",
    "--norm-promote", "--norm-fuse-partials", "--norm-cache-rows",
    "--norm-check-stage=stage=fused", "--norm-map-to-gpu",
    "--gpu-kernel-outlining",
    "--norm-lower-to-loops", "--canonicalize", "--cse",
    "--norm-split=strategy=locked", "--norm-split=strategy=atomic groups=3",
    "--norm-choose-geometry", "--norm-choose-geometry=threads=64",
    "--norm-choose-geometry=chip=sm_80 cluster=1",
    "--norm-map-to-gpu=chip=sm_80",
]

CRASH_MARKERS = [
    "LLVM ERROR", "PLEASE submit a bug report", "Stack dump",
    "AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer",
    "runtime error:", "Assertion", "terminate called", "Segmentation fault",
]

EDGE_INTS = ["0", "1", "-1", "2", "3", "7", "8", "24", "4095", "4096", "65536",
             "2147483647", "2147483648", "4294967296", "9223372036854775807",
             "-9223372036854775808"]
FLOAT_TYPES = ["f32", "f16", "bf16", "f64", "i32", "i8", "index", "f8E4M3FN"]
STAGES = ["xhat", "g", "zero", "partials", "reduce", "dx", "forward"]
STRATEGIES = ["deterministic", "grouped_atomic", "atomic", "locked"]
DIMS = ["?", "0", "1", "3", "24", "4095", "4096", "1000000000", "2147483648"]


def load_corpus():
    """Every chunk of every .mlir test and example."""
    chunks = []
    for base in ("test", "examples"):
        for dirpath, _, files in os.walk(os.path.join(ROOT, base)):
            if os.sep + "fuzz" in dirpath:
                continue
            for f in sorted(files):
                if not f.endswith(".mlir"):
                    continue
                text = open(os.path.join(dirpath, f)).read()
                for chunk in re.split(r"^// -----\s*$", text, flags=re.M):
                    # Drop lit and FileCheck lines: only IR is input.
                    lines = [l for l in chunk.splitlines()
                             if not l.lstrip().startswith("//")]
                    body = "\n".join(lines).strip()
                    if "func.func" in body or "gpu.module" in body:
                        chunks.append(body + "\n")
    return chunks


def mutate_once(rng, text):
    lines = text.splitlines()
    kind = rng.randrange(12)
    if kind == 0:  # an integer literal -> an edge value
        nums = list(re.finditer(r"(?<![\w.#%])-?\d+(?![\w.])", text))
        if nums:
            m = rng.choice(nums)
            return text[:m.start()] + rng.choice(EDGE_INTS) + text[m.end():]
    if kind == 1:  # a dim of a shaped type
        dims = list(re.finditer(r"(?<=[<x])(\?|\d+)(?=x)", text))
        if dims:
            m = rng.choice(dims)
            return text[:m.start()] + rng.choice(DIMS) + text[m.end():]
    if kind == 2:  # an element type
        tys = list(re.finditer(r"\b(f32|f16|bf16|f64)\b", text))
        if tys:
            m = rng.choice(tys)
            return text[:m.start()] + rng.choice(FLOAT_TYPES) + text[m.end():]
    if kind == 3:  # a rank: add or drop a dim
        shapes = list(re.finditer(r"(memref|tensor)<((?:[?\d]+x)+)", text))
        if shapes:
            m = rng.choice(shapes)
            dims = m.group(2)
            new = dims + rng.choice(DIMS) + "x" if rng.random() < 0.5 \
                else dims.split("x", 1)[1] if dims.count("x") > 1 else dims
            return text[:m.start(2)] + new + text[m.end(2):]
    if kind == 4:  # a stage tag
        m = list(re.finditer(r"#norm\.stage<(\w+)>", text))
        if m:
            m = rng.choice(m)
            return text[:m.start(1)] + rng.choice(STAGES) + text[m.end(1):]
    if kind == 5:  # a strategy, groups, accumulation type
        choice = rng.randrange(3)
        if choice == 0 and "norm.layer_norm_grad" in text or \
                "norm.rms_norm_grad" in text:
            attr = rng.choice([
                "{strategy = #norm.strategy<%s>}" % rng.choice(STRATEGIES),
                "{groups = %s}" % rng.choice(EDGE_INTS),
                "{accumulation_type = %s}" % rng.choice(FLOAT_TYPES),
                "{zero_centered_weight}",
            ])
            return re.sub(r"(outs [^\n]*\))\s*$", r"\1 " + attr, text, count=1,
                          flags=re.M)
        m = list(re.finditer(r"#norm\.strategy<(\w+)>", text))
        if m:
            m = rng.choice(m)
            return text[:m.start(1)] + rng.choice(STRATEGIES) + text[m.end(1):]
    if kind == 6 and len(lines) > 2:  # delete a line
        i = rng.randrange(len(lines))
        return "\n".join(lines[:i] + lines[i + 1:]) + "\n"
    if kind == 7 and len(lines) > 2:  # duplicate a line
        i = rng.randrange(len(lines))
        return "\n".join(lines[:i + 1] + [lines[i]] + lines[i + 1:]) + "\n"
    if kind == 8 and len(lines) > 3:  # swap two lines
        i, j = rng.sample(range(len(lines)), 2)
        lines[i], lines[j] = lines[j], lines[i]
        return "\n".join(lines) + "\n"
    if kind == 9:  # drop a keyword operand of a norm op
        ops = list(re.finditer(r"\b(x|mean|rstd|weight|bias|xhat|dresidual|"
                               r"dweight|dbias|y)\(%\w+ : [^)]*\)", text))
        if ops:
            m = rng.choice(ops)
            return text[:m.start()] + text[m.end():]
    if kind == 10:  # a memref layout
        shapes = list(re.finditer(r"memref<([^<>]*?)(x[fbi]\w+)>", text))
        if shapes:
            m = rng.choice(shapes)
            layout = rng.choice([", strided<[?, 1], offset: ?>",
                                 ", strided<[?, ?], offset: ?>",
                                 ", strided<[1, ?]>", ", strided<[8, 2]>"])
            return text[:m.end(2)] + layout + text[m.end(2):]
    if kind == 11:  # a dim index
        m = list(re.finditer(r"memref\.dim %\w+, %(\w+)", text))
        if m:
            m = rng.choice(m)
            return text[:m.start(1) - 1] + "%c" + rng.choice(["0", "1"]) + \
                text[m.end(1):]
    return text


def mutate(rng, text):
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        text = mutate_once(rng, text)
    return text


def random_spec(rng):
    """norm-compile flags, valid or not."""
    ops = ["layer_norm_grad", "rms_norm_grad", "layer_norm", "rms_norm",
           "bad_op", ""]
    args = ["--op=" + rng.choice(ops),
            "--n=" + rng.choice(EDGE_INTS + ["0x10", "abc", ""]),
            "--dtype=" + rng.choice(FLOAT_TYPES)]
    if rng.random() < 0.5:
        args.append("--weight-dtype=" + rng.choice(FLOAT_TYPES))
    for flag in ("--no-weight", "--no-bias", "--dresidual", "--zero-centered",
                 "--xhat"):
        if rng.random() < 0.2:
            args.append(flag)
    if rng.random() < 0.3:
        args.append("--strategy=" + rng.choice(STRATEGIES + ["bogus", ""]))
    if rng.random() < 0.3:
        args.append("--groups=" + rng.choice(EDGE_INTS))
    if rng.random() < 0.1:
        args.append("--name=" + rng.choice(["a b", "x\"y", "ok_name", ""]))
    return args


def classify(proc_rc, output, timed_out):
    """None when the run ended in success or a diagnostic, else why not."""
    if timed_out:
        return "hang"
    for marker in CRASH_MARKERS:
        if marker in output:
            return marker
    if proc_rc < 0:
        return "signal %d" % -proc_rc
    # norm-compile exits 2 on a command-line (usage) error, which LLVM's
    # option parser reports as "<tool>: for the -n option: ...".
    if proc_rc not in (0, 1, 2):
        return "exit %d" % proc_rc
    diagnosed = "error" in output.lower() or re.search(
        r"^norm-compile: ", output, flags=re.M)
    if proc_rc != 0 and not diagnosed:
        return "exit %d without a diagnostic" % proc_rc
    return None


def run_one(build, mode, rng_seed, corpus, timeout, workdir):
    rng = random.Random(rng_seed)
    opt = os.path.join(build, "bin", "norm-opt")
    text = None
    if mode == "compile":
        out = os.path.join(workdir, "k%d.ptx" % rng_seed)
        cmd = [os.path.join(build, "bin", "norm-compile")] + \
            random_spec(rng) + ["-o", out, "--manifest", out + ".json"]
    else:
        text = mutate(rng, rng.choice(corpus))
        if mode == "parse":
            passes = []
        elif mode == "loops":
            passes = [LOOPS_PIPELINE]
        elif mode == "gpu":
            passes = [GPU_PIPELINE]
        else:
            passes = [rng.choice(CHAIN_PASSES)
                      for _ in range(rng.randint(1, 5))]
        cmd = [opt, "-", "-o", os.devnull] + passes
    try:
        p = subprocess.run(cmd, input=text, capture_output=True, text=True,
                           timeout=timeout, errors="replace")
        rc, output, timed_out = p.returncode, p.stdout + p.stderr, False
    except subprocess.TimeoutExpired as e:
        rc, timed_out = -9, True
        output = (e.stdout or b"").decode("utf8", "replace") if isinstance(
            e.stdout, bytes) else (e.stdout or "")
    finally:
        if mode == "compile":
            for f in (out, out + ".json"):
                if os.path.exists(f):
                    os.remove(f)
    return classify(rc, output, timed_out), cmd, text, output


def main():
    ap = argparse.ArgumentParser(description="mutation fuzzer for norm-opt and norm-compile")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--runs", type=int, default=0,
                    help="number of inputs (0: until --seconds)")
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--timeout", type=float, default=30)
    ap.add_argument("--modes", default="parse,loops,gpu,chain,compile")
    ap.add_argument("--out", default=os.path.join(ROOT, ".dev", "fuzz"))
    args = ap.parse_args()

    corpus = load_corpus()
    modes = args.modes.split(",")
    os.makedirs(args.out, exist_ok=True)
    workdir = os.path.join(args.out, "work")
    os.makedirs(workdir, exist_ok=True)
    t0 = time.time()
    runs, findings, seen = 0, [], set()
    by_mode = {m: 0 for m in modes}

    def jobs():
        i = 0
        while True:
            if args.runs and i >= args.runs:
                return
            if not args.runs and time.time() - t0 > args.seconds:
                return
            yield modes[i % len(modes)], args.seed * 1000003 + i
            i += 1

    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        pending = set()
        it = jobs()
        while True:
            while len(pending) < 2 * args.jobs:
                try:
                    mode, s = next(it)
                except StopIteration:
                    break
                fut = pool.submit(run_one, args.build, mode, s, corpus,
                                  args.timeout, workdir)
                fut.meta = (mode, s)
                pending.add(fut)
            if not pending:
                break
            done, pending = concurrent.futures.wait(
                pending, return_when=concurrent.futures.FIRST_COMPLETED)
            for fut in done:
                mode, s = fut.meta
                why, cmd, text, output = fut.result()
                runs += 1
                by_mode[mode] += 1
                if not why:
                    continue
                # One finding per (why, first line of the crash report).
                sig = why + "|" + next((l for l in output.splitlines()
                                        if any(k in l for k in CRASH_MARKERS
                                               + ["error"])), "")[:200]
                key = hashlib.sha1(sig.encode()).hexdigest()[:10]
                if key in seen:
                    continue
                seen.add(key)
                d = os.path.join(args.out, "%s-%s" % (mode, key))
                os.makedirs(d, exist_ok=True)
                if text is not None:
                    open(os.path.join(d, "input.mlir"), "w").write(text)
                open(os.path.join(d, "command"), "w").write(
                    " ".join(cmd) + (" < input.mlir" if text else "") + "\n")
                open(os.path.join(d, "output"), "w").write(output[-20000:])
                findings.append((mode, why, d))
                print("FINDING %-8s %-30s %s" % (mode, why, d), flush=True)

    dt = time.time() - t0
    print("norm-fuzz: %d runs in %.0f s (%s), seed %d, corpus %d chunks: "
          "%d findings" % (runs, dt, ", ".join("%s %d" % kv
                                               for kv in by_mode.items()),
                           args.seed, len(corpus), len(findings)))
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
