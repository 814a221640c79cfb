#!/usr/bin/env python3
"""Training steps with torch's norms against ours (issue 22, item 4).

Small pre-norm transformers (causal attention + GELU MLP, two norms a
block and a final one, AdamW), widths 512 / 1024 / 2048 / 4096, LayerNorm
or RMSNorm, bf16 parameters or f32 parameters under bf16 autocast, run
eager, under torch.compile and under torch.compile(mode="reduce-overhead")
(CUDA graphs). Each configuration builds the model with torch's modules
and a copy with ours swapped in (norm_mlir.torch.patch: the same weights),
feeds both the same fresh batch each step, and times them in the same run,
alternating: ms per step is the median over the timed steps after the
warm-up, from CUDA events around each step (forward, backward, optimizer).
After each configuration the device is synchronized (any CUDA error ends
the configuration, is reported, and makes the exit status 1) and both
models' losses must be finite and close.

Then the host time of one call at 8 x 1024 bf16 (forward, backward, both)
of ours against torch's native ops (and, where the C++ bodies are loaded,
of ours with the Python bodies), median of 5 batches of 200 calls queued
without synchronizing. The tables go to stdout (a short one last) and, as
markdown, to --out.

    python3 bench/train_step.py --out train_step.md            (GPU; long)
    python3 bench/train_step.py --quick --out train_step.md    (a minute or two)
    python3 bench/train_step.py --widths 512 1024 --modes eager compile
    python3 bench/train_step.py --cpu    (no GPU: the model code on the CPU
                                          and the op bodies' host time with
                                          launches replaced by validation)

--config picks configurations by pattern (W:NORM:PREC:MODE, 'all' for any
field) instead of the cross product of --widths, --norms, --precisions and
--modes. --budget-s starts no configuration that would end after that
many seconds from the start (host rows included), its time taken as the
longest of its mode so far, else --guess-s; the ones left are listed as
skipped. The issue's most informative subset in about 300 s of an H200:

    python3 bench/train_step.py --budget-s 270 --config \
        512:all:bf16:eager 4096:all:bf16:eager 1024:all:autocast:eager \
        512:all:bf16:compile 512:all:bf16:reduce-overhead \
        4096:all:bf16:compile 4096:all:bf16:reduce-overhead \
        --out train_step.md

scripts/gpu-python.sh runs --quick.

--profile K also runs K more steps of each model of every configuration
under torch.profiler and prints, per model, the GPU time a step by kernel
(the largest first) and the kernels that one model runs and the other
does not: where a step's difference comes from. The host side of the same
steps (also with --cpu, where it is all there is): the step's span (the
time the CPU takes to queue it) and its phases', the largest host events
by self CPU time a step (ops as aten::empty or norm_mlir::..., Dynamo's
and inductor's ranges, cudaLaunchKernel, autograd nodes), and the events
whose self CPU time a step differs most between the two models (ours
minus torch's): where the host time's difference comes from. The
"step", "forward", "backward" and "optimizer" ranges' own time is what
runs in them outside any event (Python, Dynamo's guards) and, on a GPU,
"backward"'s the wait for autograd's device thread, whose events are
marked [other thread]. Those host tables also go to --out.
"""

import argparse
import contextlib
import copy
import math
import os
import re
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB = 8192
# width -> batch, tokens, layers (heads of 64 dimensions)
SHAPES = {512: (16, 512, 4), 1024: (8, 1024, 4), 2048: (4, 1024, 4),
          4096: (2, 1024, 2)}
MODES = ("eager", "compile", "reduce-overhead")
NORMS = ("layer_norm", "rms_norm")
PRECISIONS = ("bf16", "autocast")


# ------------------------------------------------------------------ model

class Block(nn.Module):
    def __init__(self, d, norm):
        super().__init__()
        self.heads = max(1, d // 64)
        self.norm1, self.norm2 = norm(d), norm(d)
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.proj = nn.Linear(d, d, bias=False)
        self.fc1 = nn.Linear(d, 4 * d, bias=False)
        self.fc2 = nn.Linear(4 * d, d, bias=False)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(
            b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x)),
                                   approximate="tanh"))


class Model(nn.Module):
    """Pre-norm transformer LM with torch's norm modules (`norm`: the
    class, nn.LayerNorm or nn.RMSNorm)."""

    def __init__(self, d, layers, norm):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, d)
        self.blocks = nn.ModuleList(Block(d, norm) for _ in range(layers))
        self.norm = norm(d)
        self.head = nn.Linear(d, VOCAB, bias=False)

    def forward(self, tokens, targets):
        x = self.embed(tokens)
        for blk in self.blocks:
            x = blk(x)
        logits = self.head(self.norm(x))
        return F.cross_entropy(logits.view(-1, VOCAB).float(),
                               targets.reshape(-1))


def build(width, layers, norm, precision, device, seed=0):
    """(torch's model, ours): ours a deep copy patched with norm_mlir's
    modules, so the two start from the same weights."""
    import norm_mlir.torch as nt
    torch.manual_seed(seed)
    cls = nn.LayerNorm if norm == "layer_norm" else nn.RMSNorm
    theirs = Model(width, layers, cls)
    if precision == "bf16":
        theirs = theirs.to(torch.bfloat16)
    theirs = theirs.to(device)
    ours = nt.patch(copy.deepcopy(theirs))
    kinds = {type(m) for m in ours.modules()}
    assert (nt.LayerNorm if norm == "layer_norm" else nt.RMSNorm) in kinds
    assert not kinds & {nn.LayerNorm, nn.RMSNorm}, kinds
    return theirs, ours


def make_step(model, mode, precision, device):
    """One training step (forward, backward, AdamW) as a function of a
    batch; returns the loss (not synchronized). With step.profiled set
    (kernel_times), the step and its phases are profiler ranges (PHASES);
    else no range is entered (the timed steps)."""
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    fwd = model
    if mode == "compile":
        fwd = torch.compile(model)
    elif mode == "reduce-overhead":
        fwd = torch.compile(model, mode="reduce-overhead")
    autocast = precision == "autocast"

    def phase(name):
        return torch.profiler.record_function(name) if step.profiled \
            else contextlib.nullcontext()

    def step(tokens, targets):
        with phase("step"):
            if mode == "reduce-overhead":
                torch.compiler.cudagraph_mark_step_begin()
            ctx = torch.autocast(device.type, dtype=torch.bfloat16) \
                if autocast else contextlib.nullcontext()
            with ctx, phase("forward"):
                loss = fwd(tokens, targets)
            with phase("backward"):
                loss.backward()
            with phase("optimizer"):
                opt.step()
                opt.zero_grad(set_to_none=True)
            # A copy: under CUDA graphs the output is overwritten at the
            # next replay (and reading it then raises).
            return loss.detach().clone()
    step.profiled = False
    return step


def batch(i, b, t, device):
    """Fresh tokens for step i, the same for both models."""
    g = torch.Generator(device=device)
    g.manual_seed(1000 + i)
    data = torch.randint(VOCAB, (b, t + 1), device=device, generator=g)
    return data[:, :-1], data[:, 1:]


class Timer:
    """ms between two points of the stream: CUDA events on a GPU, the wall
    clock (synchronous) on the CPU."""

    def __init__(self, device):
        self.cuda = device.type == "cuda"

    def start(self):
        if self.cuda:
            e = torch.cuda.Event(enable_timing=True)
            e.record()
            return e
        return time.perf_counter()

    def stop(self, start):
        if self.cuda:
            e = torch.cuda.Event(enable_timing=True)
            e.record()
            return (start, e)
        return time.perf_counter() - start

    def ms(self, mark):
        if self.cuda:
            return mark[0].elapsed_time(mark[1])
        return mark * 1e3


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def run_config(width, norm, precision, mode, args, device):
    """A configuration's result dict: ms per step (median) of torch's and
    ours, their last losses, or an error."""
    b, t, layers = SHAPES.get(width, (2, 32, 2))
    if args.cpu:
        b, t, layers = 2, 32, 2
    res = {"width": width, "shape": "%dx%dx%d" % (b, t, layers),
           "norm": norm, "precision": precision, "mode": mode}
    timer = Timer(device)
    models = steps = None
    try:
        models = build(width, layers, norm, precision, device)
        steps = [make_step(m, mode, precision, device) for m in models]
        for s in steps:  # warm-up (and compile) on the same batches
            for i in range(args.warmup):
                s(*batch(i, b, t, device))
        sync(device)
        # Rounds alternate which model goes first (torch's, ours; ours,
        # torch's; ...); each model's j-th timed step gets batch j.
        times, losses, done = ([], []), ([], []), [0, 0]
        n_steps, rounds = args.steps, args.rounds
        if mode == "eager" and not (args.quick or args.cpu):
            # Host-bound eager steps move between rounds: more rounds
            # (alternating) and steps, which cost a second or two here.
            n_steps, rounds = args.eager_steps, args.eager_rounds
        per_round = -(-n_steps // rounds)
        res["timed"] = "%d x %d" % (rounds, per_round)
        for rnd in range(rounds):
            for k in ((0, 1) if rnd % 2 == 0 else (1, 0)):
                for _ in range(per_round):
                    data = batch(args.warmup + done[k], b, t, device)
                    mark = timer.start()
                    loss = steps[k](*data)
                    times[k].append(timer.stop(mark))
                    losses[k].append(loss)
                    done[k] += 1
        sync(device)  # a CUDA error of any step surfaces here
        if args.profile:
            try:
                res["profile"] = [
                    kernel_times(steps[k], args.profile,
                                 args.warmup + done[k], b, t, device)
                    for k in (0, 1)]
            except Exception as ex:  # noqa: BLE001 (the timing stands)
                print("profile failed: %s: %s" % (type(ex).__name__, ex))
        if "profile" in res:
            res["norm_share"] = [norm_share(p["kernels"])
                                 for p in res["profile"]]
        ms = [[timer.ms(m) for m in ts] for ts in times]
        res["torch_ms"] = statistics.median(ms[0])
        res["ours_ms"] = statistics.median(ms[1])
        # Each round's ratio (its steps' medians): the spread says how
        # far one run's ratio can be trusted on a shared host.
        res["round_ratios"] = [
            statistics.median(ms[0][r:r + per_round]) /
            statistics.median(ms[1][r:r + per_round])
            for r in range(0, min(len(ms[0]), len(ms[1])), per_round)]
        res["steps"] = len(ms[0])
        last = [float(torch.stack(ls[-4:]).float().mean()) for ls in losses]
        res["loss"] = last
        if not all(math.isfinite(v) for v in last):
            res["error"] = "non-finite loss %s" % last
        elif abs(last[0] - last[1]) > 0.05 * abs(last[0]) + 0.05:
            res["error"] = "losses differ: torch %.4f, ours %.4f" % tuple(
                last)
    except Exception as ex:  # noqa: BLE001 (reported, exit status 1)
        res["error"] = "%s: %s" % (type(ex).__name__, str(ex)[:300])
    finally:
        del models, steps
        torch._dynamo.reset()
        if device.type == "cuda":
            try:
                torch.cuda.synchronize()
                torch.cuda.empty_cache()
            except Exception as ex:  # noqa: BLE001
                res.setdefault("error", "CUDA: %s" % ex)
    return res


def kernel_times(step, count, first, b, t, device):
    """Over `count` steps under torch.profiler (batches from `first` on):
    {"kernels": {name: (GPU us a step, launches a step)}, "runtime":
    {CUDA runtime / driver call: (host us a step, calls a step)},
    "host_ms": the wall time a step takes to queue (no synchronization
    between steps), "host_ms_plain": the same without the profiler,
    "host": host_events()'s, "gpu": whether there were CUDA activities}.
    A step whose host time reaches its GPU time, or a synchronizing call
    among the runtime's, leaves the GPU idle. On the CPU (--cpu) only the
    host side: no kernels, no runtime calls."""
    from torch.profiler import ProfilerActivity, profile
    gpu = device.type == "cuda"
    # The same without the profiler first: under it our eager calls take
    # the dispatcher's route (its RecordFunction callbacks turn off the
    # Python entry's fast route and the direct bodies, so that its trace
    # keeps our ops), which torch's calls do not.
    plain = []
    sync(device)
    for i in range(count):
        t0 = time.perf_counter()
        step(*batch(first + count + i, b, t, device))
        plain.append(time.perf_counter() - t0)
    sync(device)
    host = []
    step.profiled = True  # the step and its phases as ranges
    try:
        with profile(activities=[ProfilerActivity.CPU] + (
                [ProfilerActivity.CUDA] if gpu else [])) as prof:
            for i in range(count):
                t0 = time.perf_counter()
                step(*batch(first + i, b, t, device))
                host.append(time.perf_counter() - t0)
            sync(device)
    finally:
        step.profiled = False
    kernels, runtime = {}, {}
    events = prof.events()
    for ev in events:
        if getattr(ev, "is_user_annotation", False):
            continue  # a range (Optimizer.step#...), not a kernel
        if ev.device_type == torch.autograd.DeviceType.CUDA:
            us, n = kernels.get(ev.name, (0.0, 0))
            kernels[ev.name] = (us + ev.device_time_total, n + 1)
        elif ev.name.startswith(("cuda", "cu")) and not ev.name.startswith(
                ("cudnn", "cublas")):
            us, n = runtime.get(ev.name, (0.0, 0))
            runtime[ev.name] = (us + ev.cpu_time_total, n + 1)
    per = lambda d: {k: (us / count, n / count) for k, (us, n) in d.items()}
    return {"kernels": per(kernels), "runtime": per(runtime),
            "host_ms": statistics.median(host) * 1e3,
            "host_ms_plain": statistics.median(plain) * 1e3,
            "host": host_events(events), "gpu": gpu}


# Kernels that compute a norm (or its backward): torch's eager ones
# (vectorized_layer_norm_kernel, the GammaBeta and compute-stats ones),
# inductor's fused ones (their names list the fused aten ops, a norm among
# them: those also do the fused neighbours' work) and ours (norm_kernel_).
NORM_KERNEL = re.compile(r"norm|GammaBeta|RowwiseMoments|compute_stats|"
                         r"ComputeInternalGradients|ComputeFusedParams",
                         re.IGNORECASE)


def norm_share(kernels):
    """(GPU us a step of the kernels NORM_KERNEL matches, GPU us a step of
    all kernels) of kernel_times()["kernels"]."""
    total = sum(us for us, _ in kernels.values())
    norm = sum(us for name, (us, _) in kernels.items()
               if NORM_KERNEL.search(name) and "clip" not in name.lower())
    return norm, total


PHASES = ("step", "forward", "backward", "optimizer")
OTHER_THREAD = " [other thread]"


def host_events(events):
    """The host side of profiled steps (make_step's ranges: PHASES) from
    the profiler's events (FunctionEvent: name, thread, device_type,
    time_range, self_cpu_time_total): {"steps": the "step" ranges,
    "phases": {range: mean us}, "events": {name: (self CPU us a step,
    calls a step)} of every CPU event that starts inside a step, a name
    on another thread than the steps' (autograd's device thread runs a
    CUDA backward) + OTHER_THREAD, "self_us": (self CPU us a step on the
    steps' thread, on others)}. On the steps' thread the self times add up
    to the step's span: "step"'s own is the Python between the ops,
    "backward"'s on a GPU the wait for autograd's thread (whose events
    are the other threads')."""
    cpu = [ev for ev in events
           if ev.device_type == torch.autograd.DeviceType.CPU]
    spans = {}
    for ev in cpu:
        if ev.name in PHASES:
            spans.setdefault(ev.name, []).append(ev)
    steps = sorted(spans.get("step", []), key=lambda e: e.time_range.start)
    if not steps:
        return {"steps": 0, "phases": {}, "events": {}, "self_us": (0, 0)}
    main = steps[0].thread
    marks = [(e.time_range.start, e.time_range.end) for e in steps]
    acc, self_us = {}, [0.0, 0.0]
    for ev in cpu:
        t0 = ev.time_range.start
        if not any(s <= t0 <= e for s, e in marks):
            continue  # the batches, the final synchronization
        name = ev.name if ev.thread == main else ev.name + OTHER_THREAD
        us, n = acc.get(name, (0.0, 0))
        acc[name] = (us + ev.self_cpu_time_total, n + 1)
        self_us[ev.thread != main] += ev.self_cpu_time_total
    k = len(steps)
    return {"steps": k,
            "phases": {p: sum(e.cpu_time_total for e in evs) / k
                       for p, evs in spans.items()},
            "events": {name: (us / k, n / k) for name, (us, n)
                       in acc.items()},
            "self_us": (self_us[0] / k, self_us[1] / k)}


def _event_key(name):
    """A host event's name with what may differ between two models' runs
    of the same code taken out: the cache key of an inductor graph, the
    recompilation number of a Dynamo frame (the second model compiled runs
    the same code)."""
    name = re.sub(r"(CompiledFxGraph )\S+", r"\1*", name)
    return re.sub(r"(Torch-Compiled Region: \d+)/\d+", r"\1/*", name)


def host_diff(torch_h, ours_h):
    """{key: ((torch self us, calls), (ours self us, calls))} a step, the
    names merged by _event_key."""
    out = {}
    for i, h in enumerate((torch_h, ours_h)):
        for name, (us, n) in h["events"].items():
            pair = out.setdefault(_event_key(name), [(0.0, 0.0),
                                                     (0.0, 0.0)])
            pair[i] = (pair[i][0] + us, pair[i][1] + n)
    return {k: tuple(v) for k, v in out.items()}


def host_tables(res, top=20, diff=15, md=False):
    """Lines: each model's host time a step (the step's span and its
    phases, the self CPU time on its thread and on others), its `top`
    host events by self CPU time a step, and the `diff` events whose self
    CPU time a step differs most either way (ours minus torch's, the
    largest first; with the sums over all events and the spans' difference,
    which on the CPU are equal); plain text, or markdown (md)."""
    hs = [p["host"] for p in res["profile"]]
    out = []
    for label, p in zip(("torch", "ours"), res["profile"]):
        h, ph = p["host"], p["host"]["phases"]
        out.append(
            "%s%s: host %.3f ms a step (the span of its range, %d steps; "
            "forward %.3f, backward %.3f, optimizer %.3f; %.3f without the "
            "profiler); self CPU %.3f ms on its thread, %.3f on others" % (
                "" if md else "  ", label, ph.get("step", 0) / 1e3,
                h["steps"], ph.get("forward", 0) / 1e3,
                ph.get("backward", 0) / 1e3, ph.get("optimizer", 0) / 1e3,
                p.get("host_ms_plain", float("nan")),
                h["self_us"][0] / 1e3, h["self_us"][1] / 1e3))
        if md:
            out.append("")
    for label, h in zip(("torch", "ours"), hs):
        rows = sorted(h["events"].items(), key=lambda kv: -kv[1][0])[:top]
        if md:
            out += ["| %s: host event | calls a step | self CPU us a step "
                    "|" % label, "| --- | ---: | ---: |"]
            out += ["| `%s` | %.1f | %.1f |" % (name[:100], n, us)
                    for name, (us, n) in rows] + [""]
        else:
            out.append("  %s: host events by self CPU a step (us, calls)"
                       % label)
            out += ["    %8.1f us %6.1fx  %s" % (us, n, name[:100])
                    for name, (us, n) in rows]
    pairs = host_diff(*hs)
    biggest = sorted(pairs.items(), key=lambda kv: -abs(
        kv[1][1][0] - kv[1][0][0]))[:diff]
    biggest.sort(key=lambda kv: -(kv[1][1][0] - kv[1][0][0]))
    total = [sum(v[i][0] for v in pairs.values()) for i in (0, 1)]
    head = ("host events differing most, ours - torch, self CPU us a "
            "step (all events %+.1f, the step's span %+.1f)" % (
                total[1] - total[0], hs[1]["phases"].get("step", 0) -
                hs[0]["phases"].get("step", 0)))
    if md:
        out += [head[0].upper() + head[1:] + ":", "",
                "| host event | ours - torch us | torch us | ours us | "
                "calls torch / ours |", "| --- | ---: | ---: | ---: | ---: |"]
        out += ["| `%s` | %+.1f | %.1f | %.1f | %.1f / %.1f |" % (
            k[:100], o[0] - t[0], t[0], o[0], t[1], o[1])
            for k, (t, o) in biggest] + [""]
    else:
        out.append("  " + head + ": difference, torch, ours; calls "
                   "torch / ours")
        out += ["    %+8.1f %8.1f %8.1f  %5.1f / %5.1f  %s" % (
            o[0] - t[0], t[0], o[0], t[1], o[1], k[:90])
            for k, (t, o) in biggest]
    return out


def profile_table(res, top=12):
    """Lines: each model's GPU time a step, its largest kernels, the
    kernels only one of the two runs, and the host side (the time a step
    takes to queue, the CUDA runtime calls; then host_tables'). On the
    CPU host_tables' only."""
    torch_p, ours_p = res["profile"]
    if not torch_p.get("gpu", True):
        return host_tables(res)
    torch_k, ours_k = torch_p["kernels"], ours_p["kernels"]
    out = []
    for label, p in (("torch", torch_p), ("ours", ours_p)):
        ks = p["kernels"]
        total = sum(us for us, _ in ks.values())
        out.append("  %s: %.1f us of kernels a step, %d launches; host "
                   "%.2f ms a step to queue under the profiler, %.2f ms "
                   "without" % (
                       label, total, round(sum(n for _, n in ks.values())),
                       p["host_ms"], p.get("host_ms_plain", float("nan"))))
        for name, (us, n) in sorted(ks.items(), key=lambda kv: -kv[1][0])[
                :top]:
            out.append("    %8.1f us %4.0fx  %s" % (us, n, name[:110]))
    for label, a, other in (("torch only", torch_k, ours_k),
                            ("ours only", ours_k, torch_k)):
        only = {k: v for k, v in a.items() if k not in other}
        out.append("  %s: %.1f us a step" % (
            label, sum(us for us, _ in only.values())))
        for name, (us, n) in sorted(only.items(), key=lambda kv: -kv[1][0])[
                :top]:
            out.append("    %8.1f us %4.0fx  %s" % (us, n, name[:110]))
    for label, p in (("torch", torch_p), ("ours", ours_p)):
        out.append("  %s: CUDA runtime calls a step (host us, calls)" % label)
        for name, (us, n) in sorted(p["runtime"].items(),
                                    key=lambda kv: -kv[1][0])[:8]:
            out.append("    %8.1f us %5.1fx  %s" % (us, n, name[:80]))
    return out + host_tables(res)


# ------------------------------------------------------ host time per call

def per_call(fn, device, calls=200, batches=5):
    """Host microseconds a call: the median of `batches` batches of
    `calls` calls queued without synchronizing (synchronized at each
    batch's end, after one call outside the timing)."""
    fn()
    sync(device)
    ts = []
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        t1 = time.perf_counter()
        sync(device)
        ts.append((t1 - t0) / calls * 1e6)
    return statistics.median(ts)


def backward_only(make, g, device, calls=200, batches=5):
    """Host microseconds of a backward alone: `calls` graphs built first
    (untimed), then their backwards queued."""
    ts = []
    for _ in range(batches + 1):
        ys = [make() for _ in range(calls)]
        sync(device)
        t0 = time.perf_counter()
        for y in ys:
            y.backward(g)
        t1 = time.perf_counter()
        sync(device)
        ts.append((t1 - t0) / calls * 1e6)
    return statistics.median(ts[1:])


def host_rows(device, m=8, n=1024, calls=200, all_impls=True):
    """(op, phase, {impl: us}) at m x n bf16 (weight and bias bf16, all
    requiring grad; "backward, dy from the graph": the backward of
    f() * 2, whose upstream gradient autograd makes and holds alone, as
    in a model): torch's functions, ours, ours with the Python autograd
    formulas where the C++ autograd kernels are loaded, ours with those
    calling the C++ bodies through the dispatcher only (NORM_MLIR_DIRECT=0:
    "The bodies without the dispatcher" in docs/Python.md) where both are
    C++, and ours with the Python bodies (and Python autograd: the first
    route) where the C++ ones are; "ours via op": the eager calls
    through the eager ops' callables (the Python entry's fast route off,
    as before it: docs/Python.md, "The Python entry"). all_impls False:
    torch, ours and ours via op only. add_layer_norm: torch's add then
    F.layer_norm against ours (h unused by the backward)."""
    import norm_mlir.torch as nt
    torch.manual_seed(0)

    def t(*shape):
        return torch.randn(*shape, device=device, dtype=torch.bfloat16)
    x, w, b, g, r = t(m, n), t(n), t(n), t(m, n), t(m, n)
    for p in (x, w, b, r):
        p.requires_grad_(True)
    fns = {
        "layer_norm": {
            "torch": lambda: F.layer_norm(x, (n,), w, b),
            "ours": lambda: nt.layer_norm(x, (n,), w, b)},
        "rms_norm": {
            "torch": lambda: F.rms_norm(x, (n,), w, 1e-6),
            "ours": lambda: nt.rms_norm(x, (n,), w, 1e-6)},
        "add_layer_norm": {
            "torch": lambda: F.layer_norm(x + r, (n,), w, b),
            "ours": lambda: nt.add_layer_norm(x, r, (n,), w, b)[0]},
    }
    impls = ["torch", "ours"]
    ag = nt._autograd_ext if nt._cpp_autograd else None
    if ag is not None and getattr(ag, "_entries", None) is not None and \
            nt._ln_eager is not torch.ops.norm_mlir._eager_layer_norm \
            .default._op:
        impls.append("ours via op")
    if nt._cpp_autograd and all_impls:
        impls.append("ours, Python autograd")
        if nt._native is not None and getattr(nt._native, "direct", None):
            impls.append("ours, via the dispatcher")
    if nt._default_keys is not None and all_impls:
        impls.append("ours, Python bodies")
    rows = []
    for op, by in fns.items():
        got = {"forward": {}, "backward": {}, "forward + backward": {},
               "backward, dy from the graph": {}}
        for impl in impls:
            f = by["ours" if impl.startswith("ours") else impl]
            if impl == "ours, Python bodies":  # and Python autograd
                nt._use_bodies(None)
            if impl in ("ours, Python autograd", "ours, Python bodies"):
                nt._use_autograd(None)
            direct = nt._use_direct(False) \
                if impl == "ours, via the dispatcher" else None
            entry = ag.entry_on(False) if impl == "ours via op" else None
            try:
                got["forward"][impl] = per_call(f, device, calls)
                got["backward"][impl] = backward_only(f, g, device, calls)
                got["forward + backward"][impl] = per_call(
                    lambda: f().backward(g), device, calls)
                # dy made by autograd (the mul's gradient), as in a model,
                # where ours writes dx into it; the mul's backward is in
                # both columns.
                got["backward, dy from the graph"][impl] = backward_only(
                    lambda: f() * 2, g, device, calls)
            finally:
                if entry is not None:
                    ag.entry_on(entry)
                if direct is not None:
                    nt._use_direct(direct)
                nt._use_bodies(nt._default_keys)
                nt._use_autograd(nt._autograd_ext)
        rows += [(op, phase, v) for phase, v in got.items()]
    return impls, rows


@contextlib.contextmanager
def cpu_validation():
    """On a host without a GPU: our functions on CPU tensors through the
    real op bodies (C++ and Python), each launch replaced by
    normrt_validate (every check of a launch, nothing run), as the CPU
    tests do. Yields whether the C++ bodies are in (else Python only)."""
    import norm_mlir.torch as nt
    from norm_mlir import _libs
    rt = _libs.runtime()
    saved = {k: getattr(nt, k) for k in ("_module", "_launch",
                                         "_default_keys")}

    def module(spec, device):
        return rt.load_manifest_only(
            nt._compiled(spec, "sm_90").manifest_text)

    def launch(mod, args, rows, device):
        ws_bytes = mod.workspace_bytes(rows)
        ws = torch.empty(ws_bytes, dtype=torch.uint8) if ws_bytes else None
        mod.validate(nt._arguments(mod, args),
                     ws.data_ptr() if ws_bytes else 0, ws_bytes)

    nt._module, nt._launch = module, launch
    devices = nt._accept_devices(["*"])
    lib = torch.library.Library("norm_mlir", "IMPL")
    native = _native_for_cpu(nt)
    reg = None
    try:
        if native is not None:
            native.set_mode(1)
            reg = native.register("CPU")  # every op's body, in C++
            nt._default_keys = torch._C.DispatchKeySet(
                torch._C.DispatchKey.CPU)
        else:
            for name, impl in nt._python_impls.items():
                lib.impl(name, impl, "CPU")
            nt._default_keys = None
        nt._use_bodies(nt._default_keys)
        yield native is not None
    finally:
        if reg is not None:
            native.unregister(reg, "CPU")
            native.set_mode(0)
            native.clear()
        lib._destroy()
        for k, v in saved.items():
            setattr(nt, k, v)
        nt._accept_devices(devices)
        nt._use_bodies(nt._default_keys)


def _native_for_cpu(nt):
    """The C++ bodies: the package's, else built from python/csrc into a
    temporary directory (a checkout); None if neither."""
    if nt._native is not None:
        return nt._native
    from norm_mlir import _libs
    path = _libs.find_optional("libnormtorch.so")
    if path is None:
        here = os.path.dirname(os.path.abspath(__file__))
        src = os.path.join(here, "..", "python", "csrc")
        if not os.path.isfile(os.path.join(src, "build_ext.py")):
            return None
        import tempfile
        sys.path.insert(0, src)
        try:
            import build_ext
        finally:
            sys.path.pop(0)
        path = build_ext.build(tempfile.mkdtemp(prefix="normtorch-"))
        if path is None:
            return None
    return nt._Native.bind(path)


# ----------------------------------------------------------------- output

def training_table(results):
    # With --profile: the norm kernels' GPU time a step, torch's model's as
    # a share of its kernels' time, and ours (us).
    shares = any("norm_share" in r for r in results)
    head = ("| width | B x T x layers | norm | params | mode | torch ms | "
            "ours ms | torch / ours | " +
            ("norm kernels: torch's share, torch / ours us | "
             if shares else "") + "rounds' ratios | loss torch / ours |")
    lines = [head, "|" + " --- |" * 5 + " ---: |" * (4 if shares else 3) +
             " --- | --- |"]
    for r in results:
        share = []
        if shares:
            ns = r.get("norm_share")
            share = ["%.1f%%, %.0f / %.0f" % (
                100 * ns[0][0] / ns[0][1] if ns[0][1] else 0, ns[0][0],
                ns[1][0]) if ns else ""]
        if "torch_ms" in r:
            rr = r.get("round_ratios") or []
            cells = ["%.2f" % r["torch_ms"], "%.2f" % r["ours_ms"],
                     "%.3fx" % (r["torch_ms"] / r["ours_ms"])] + share + [
                     "%.3f-%.3f (%d of %d >= 1)" % (
                         min(rr), max(rr), sum(v >= 1 for v in rr),
                         len(rr)) if rr else "",
                     "%.4f / %.4f" % tuple(r["loss"])]
        else:
            cells = [""] * (5 + len(share))
        note = r.get("error") or r.get("skipped")
        if note:
            cells[-1] = (cells[-1] + " " if cells[-1] else "") + \
                ("**%s**" % note if r.get("error") else note)
        lines.append("| %d | %s | %s | %s | %s | %s |" % (
            r["width"], r["shape"], r["norm"], r["precision"], r["mode"],
            " | ".join(cells)))
    return lines


def host_table(impls, rows, m, n):
    lines = ["| op (%d x %d bf16) | call | %s | ours / torch |" % (
        m, n, " | ".join(impls)),
        "| --- | --- |" + " ---: |" * (len(impls) + 1)]
    for op, phase, v in rows:
        lines.append("| %s | %s | %s | %.2fx |" % (
            op, phase, " | ".join("%.1f" % v[i] for i in impls),
            v["ours"] / v["torch"]))
    return lines


def environment(device):
    import norm_mlir
    import norm_mlir.torch as nt
    gpu = torch.cuda.get_device_name(device) if device.type == "cuda" \
        else "no GPU (CPU, launches validated only)"
    return ("torch %s, norm_mlir %s, op bodies: %s; %s; python %s" % (
        torch.__version__, norm_mlir.__version__,
        "C++ (%s)" % os.path.basename(nt._native.path) if nt._native
        else "Python", gpu, sys.version.split()[0]))


def parse(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="write the results as markdown here")
    ap.add_argument("--quick", action="store_true",
                    help="width 1024, bf16 parameters, fewer steps")
    ap.add_argument("--cpu", action="store_true",
                    help="no GPU: tiny models on the CPU (torch's functions "
                    "there) and the op bodies' host time, launches "
                    "validated instead of run")
    ap.add_argument("--shape", nargs="+", default=[], metavar="W=BxTxL",
                    help="model shapes besides (or instead of) the default "
                    "ones: width W with batch B, T tokens and L layers, "
                    "e.g. 768=32x2048x4 (a GPU-bound step, where the norms "
                    "are a larger share of it); --widths picks among them")
    ap.add_argument("--widths", type=int, nargs="+")
    ap.add_argument("--norms", nargs="+", choices=NORMS)
    ap.add_argument("--precisions", nargs="+", choices=PRECISIONS)
    ap.add_argument("--modes", nargs="+", choices=MODES)
    ap.add_argument("--warmup", type=int, help="steps before timing")
    ap.add_argument("--steps", type=int, help="timed steps per model")
    ap.add_argument("--rounds", type=int, default=None,
                    help="alternations torch/ours per configuration")
    ap.add_argument("--config", nargs="+", metavar="W:NORM:PREC:MODE",
                    help="configurations to run instead of --widths x "
                    "--norms x --precisions x --modes, each a pattern whose "
                    "fields may be 'all' (or empty): 512:all:bf16:all "
                    "4096:all:bf16:all 1024:all:autocast:eager")
    ap.add_argument("--eager-steps", type=int, default=60,
                    help="timed steps per model of an eager configuration "
                    "(not --quick)")
    ap.add_argument("--eager-rounds", type=int, default=6,
                    help="its alternating rounds")
    ap.add_argument("--budget-s", type=float, default=None,
                    help="start no configuration that would end after "
                    "this many seconds (its time guessed from the longest "
                    "of its mode so far, else --guess-s)")
    ap.add_argument("--guess-s", nargs=3, type=float, default=(10, 30, 40),
                    metavar=("EAGER", "COMPILE", "RO"),
                    help="seconds a configuration of each mode is taken to "
                    "need before one has run (H200 guesses)")
    ap.add_argument("--host-all", action="store_true",
                    help="host time also of the Python autograd formulas, "
                    "the dispatcher-only route and the Python bodies")
    ap.add_argument("--no-host", action="store_true",
                    help="leave out the per-call host times")
    ap.add_argument("--no-train", action="store_true",
                    help="leave out the training steps")
    ap.add_argument("--profile", type=int, default=0, metavar="K",
                    help="also profile K steps of each model and print "
                    "their kernels' time a step (GPU) and their host "
                    "events' self CPU time a step (GPU and CPU)")
    args = ap.parse_args(argv)
    for spec in args.shape:
        m = re.fullmatch(r"(\d+)=(\d+)x(\d+)x(\d+)", spec)
        if not m or min(int(v) for v in m.groups()) < 1:
            ap.error("--shape %r is not W=BxTxL (positive integers)" % spec)
        w, b, t, layers = (int(v) for v in m.groups())
        if w % 64:
            ap.error("--shape %r: the width must be a multiple of 64 (heads "
                     "of 64 dimensions)" % spec)
        SHAPES[w] = (b, t, layers)
    for w in args.widths or []:
        if w not in SHAPES:
            ap.error("--widths: %d is not one of %s (--shape adds one)" % (
                w, sorted(SHAPES)))
    quick = args.quick or args.cpu
    args.widths = args.widths or ([512] if args.cpu else [1024] if quick
                                  else sorted(SHAPES))
    args.norms = args.norms or list(NORMS)
    args.precisions = args.precisions or (["bf16"] if quick
                                          else list(PRECISIONS))
    args.modes = args.modes or (["eager"] if args.cpu else list(MODES))
    args.warmup = args.warmup if args.warmup is not None else (
        1 if args.cpu else 3 if quick else 5)
    args.steps = args.steps if args.steps is not None else (
        4 if args.cpu else 10 if quick else 30)
    args.rounds = args.rounds or (1 if quick else 2)
    args.configs = configurations(args)
    return args


def configurations(args):
    """[(mode, width, norm, precision)] to run: from --widths ... eager
    first, then compiled, then reduce-overhead (a budget cuts the slow
    ones first); from --config in the order of its patterns (each
    pattern's eager first), so that they say what a budget keeps."""
    if not args.config:
        return [(mode, w, norm, prec) for mode in args.modes
                for w in args.widths for prec in args.precisions
                for norm in args.norms]
    fields = (sorted(SHAPES), NORMS, PRECISIONS, MODES)
    picked = []
    for pat in args.config:
        parts = pat.split(":")
        if len(parts) != 4:
            raise SystemExit("train_step: --config %r is not "
                             "W:NORM:PREC:MODE" % pat)
        choices = []
        for part, values in zip(parts, fields):
            if part in ("", "*", "all"):
                choices.append(list(values))
                continue
            v = int(part) if values is fields[0] else part
            if v not in values:
                raise SystemExit("train_step: --config %r: %r is not one "
                                 "of %s" % (pat, part, list(values)))
            choices.append([v])
        for mode in choices[3]:
            for w in choices[0]:
                for prec in choices[2]:
                    for norm in choices[1]:
                        c = (mode, w, norm, prec)
                        if c not in picked:
                            picked.append(c)
    return picked


def main(argv=None):
    args = parse(argv)
    if args.cpu:
        device = torch.device("cpu")
    else:
        if not torch.cuda.is_available():
            sys.exit("train_step: no CUDA device (--cpu runs the CPU "
                     "pieces)")
        device = torch.device("cuda")
        torch.empty(1, device=device)
    t_start = time.perf_counter()
    env = environment(device)  # imports norm_mlir.torch
    print("train_step:", env, flush=True)
    md = ["# Training steps, torch's norms against norm_mlir's", "", env, ""]
    failed = False

    host = None
    if not args.no_host:
        m, n = 8, 1024
        if args.cpu:
            with cpu_validation() as native:
                impls, rows = host_rows(device, m, n, calls=100)
            note = ("CPU, launches validated (normrt_validate) instead of "
                    "run, C++ bodies %s; torch's column computes on the "
                    "CPU, so only ours against ours compares" % (
                        "in" if native else "absent"))
        else:
            impls, rows = host_rows(device, m, n,
                                    all_impls=args.host_all)
            note = "GPU"
        host = host_table(impls, rows, m, n)
        md += ["## Host time per call (us; %s)" % note, ""] + host + [""]
        print("\n".join(["host time per call (us; %s):" % note] + host),
              flush=True)

    results, profiled = [], []
    if not args.no_train:
        # Eager first for every shape, then compile, then reduce-overhead:
        # a budget cuts the slow ones first.
        # The time a configuration of each mode takes: a guess until one
        # has run, then the longest seen.
        need, seen = dict(zip(MODES, args.guess_s)), {}
        for mode, w, norm, prec in args.configs:
            left = args.budget_s - (time.perf_counter() - t_start) \
                if args.budget_s else None
            if left is not None and need[mode] > left:
                b, t, layers = SHAPES[w]
                results.append({"width": w, "shape": "%dx%dx%d" % (
                    b, t, layers), "norm": norm, "precision": prec,
                    "mode": mode, "skipped": "skipped (budget: %.0f s "
                    "left, about %.0f s needed)" % (max(left, 0),
                                                    need[mode])})
                continue
            t0 = time.perf_counter()
            r = run_config(w, norm, prec, mode, args, device)
            if "error" not in r:
                seen[mode] = max(seen.get(mode, 0.0),
                                 time.perf_counter() - t0)
                need[mode] = seen[mode]
            results.append(r)
            failed |= "error" in r
            print("%-5d %-10s %-8s %-15s (%3.0f s) %s" % (
                w, norm, prec, mode, time.perf_counter() - t0,
                r.get("error") or "torch %.2f ms, ours %.2f ms (%.3fx), "
                "loss %.4f / %.4f" % (r["torch_ms"], r["ours_ms"],
                                      r["torch_ms"] / r["ours_ms"],
                                      r["loss"][0], r["loss"][1])),
                flush=True)
            if "profile" in r:
                print("\n".join(profile_table(r)), flush=True)
                profiled.append(r)
        table = training_table(results)
        md += ["## ms per training step (median over %d timed steps a "
               "model in %d alternating rounds, eager %d in %d, after %d of "
               "warm-up; %s)" % (
                   -(-args.steps // args.rounds) * args.rounds, args.rounds,
                   args.eager_steps, args.eager_rounds,
                   args.warmup, "wall clock" if args.cpu else "CUDA events"),
               ""] + table
        for r in profiled:
            md += ["", "## Host side of %d profiled steps a model: %d %s "
                   "%s %s" % (args.profile, r["width"], r["norm"],
                              r["precision"], r["mode"]), ""]
            md += host_tables(r, md=True)
            gpu = profile_table(r)[:-len(host_tables(r))] \
                if r["profile"][0].get("gpu", True) else []
            if gpu:
                md += ["", "GPU kernels a step (us, launches):", "", "```"] \
                    + gpu + ["```"]
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(md) + "\n")
    # The short table last.
    print()
    if host:
        print("\n".join(host))
    if results:
        print("\n".join(training_table(results)))
    print("train_step: %s in %.0f s" % ("FAILED" if failed else "ok",
                                          time.perf_counter() - t_start))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
