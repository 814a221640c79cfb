#!/usr/bin/env python3
"""Where the host time of norm_mlir.torch's forward + backward goes, by
taking pieces away: the same small LayerNorm (8 x 1024 bf16, kernels of a
few microseconds) with the launches made no-ops, the backward body
replaced by allocations, and autograd's worker threads off. Each row: the
host time of one forward + backward, median of 5 batches of 200 calls.

    python3 bench/host_split.py            (with the wheel on PYTHONPATH)
"""

import sys

import torch

from first_use import per_call, small_problem  # bench/, this directory


def main():
    import norm_mlir.torch as nt
    n, x, w, b, g = small_problem()
    F = torch.nn.functional

    def ours():
        nt.layer_norm(x, (n,), w, b).backward(g)

    def theirs():
        F.layer_norm(x, (n,), w, b).backward(g)

    rows = [("ours", ours), ("torch", theirs)]
    real_launch, real_bwd = nt._launch, nt._ln_bwd_impl

    def no_launch(mod, args, rows, device):
        nt._arguments(mod, args)

    def empty_bwd(dy, x, mean, rstd, weight, has_bias, n, zc,
                  dresidual=None):
        return (torch.empty_like(x), torch.empty_like(weight),
                torch.empty_like(weight))

    out = []
    for name, fn in rows:
        out.append((name, per_call(fn)))
        with torch.autograd.set_multithreading_enabled(False):
            out.append((name + ", autograd on this thread", per_call(fn)))
    if nt._cpp_autograd:  # the same with the Python autograd formulas
        nt._use_autograd(None)
        try:
            out.append(("ours, Python autograd", per_call(ours)))
            with torch.autograd.set_multithreading_enabled(False):
                out.append(("ours, Python autograd, on this thread",
                            per_call(ours)))
        finally:
            nt._use_autograd(nt._autograd_ext)
    # The rows below take the Python bodies apart (under Python autograd).
    nt._use_autograd(None)
    nt._use_bodies(None)
    nt._launch = no_launch
    out.append(("ours, launches no-ops", per_call(ours)))
    nt._launch = real_launch
    nt._ln_bwd_impl = empty_bwd
    nt._use_bodies(None)  # the bodies bound again: now empty_bwd
    out.append(("ours, backward body = 3 allocations", per_call(ours)))
    with torch.autograd.set_multithreading_enabled(False):
        out.append(("ours, that, autograd on this thread", per_call(ours)))
    nt._ln_bwd_impl = real_bwd
    nt._use_bodies(nt._default_keys)
    nt._use_autograd(nt._autograd_ext)
    print("forward + backward, 8 x %d bf16, host us a call (switch "
          "interval %.1f ms):" % (n, sys.getswitchinterval() * 1e3))
    for name, us in out:
        print("%-40s %8.1f" % (name, us))
    launch_pieces(nt, x.detach(), w.detach(), b.detach())


def launch_pieces(nt, x, w, b):
    """One forward launch taken apart: the runtime's checks alone
    (normrt_validate), the whole normrt_launch through ctypes.CDLL (which
    releases the GIL around the call) and through ctypes.PyDLL (which
    keeps it), and the pieces of Python around it."""
    import ctypes
    from norm_mlir import _libs
    n = x.shape[-1]
    mod = nt._kernels("layer_norm", n, x, w, True, 1e-5, False)
    y = torch.empty_like(x)
    mean = torch.empty(x.shape[0], device=x.device)
    rstd = torch.empty_like(mean)
    args = [("x", x), ("y", y), ("mean", mean), ("rstd", rstd),
            ("weight", w), ("bias", b)]
    arr = nt._arguments(mod, args)
    stream = nt._raw_stream(0)
    rt = _libs.runtime()
    py = ctypes.PyDLL(rt.path)
    py.normrt_launch.argtypes = rt.lib.normrt_launch.argtypes
    py.normrt_launch.restype = ctypes.c_int
    pieces = [
        ("normrt_validate", lambda: mod.validate(arr)),
        ("normrt_launch (CDLL)", lambda: mod.launch(arr, 0, 0, stream)),
        ("normrt_launch (PyDLL)", lambda: py.normrt_launch(
            mod.handle, arr.array, arr.count, None, 0, stream)),
        ("workspace_bytes", lambda: mod.workspace_bytes(8)),
        ("_arguments", lambda: nt._arguments(mod, args)),
        ("_raw_stream", lambda: nt._raw_stream(0)),
        ("torch.empty x3", lambda: (torch.empty_like(x),
                                    torch.empty(8, device=x.device),
                                    torch.empty(8, device=x.device))),
        ("_ln_fwd_impl (all of it)",
         lambda: nt._ln_fwd_impl(x, w, b, n, 1e-5, False)),
    ]
    print("one forward launch, by pieces (host us a call):")
    for name, fn in pieces:
        print("%-40s %8.2f" % (name, per_call(fn, 1000)))


if __name__ == "__main__":
    main()
