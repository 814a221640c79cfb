"""How bench/ and the GPU checks reach the runtime: the package's ctypes
binding, norm_mlir._runtime, imported from this checkout's python/ (the
GPU machine has no LLVM, so no compiler library; the binding needs only
libnormrt.so), over the libnormrt.so of the carried .dev/gpu; and what the
checks share around it: torch on CUDA, a configuration's image, return
codes for the checks that report them.

Nothing here imports torch at module level: the dry-run modes load the
library on a machine without a GPU.
"""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(_HERE, "..", "python"))

from norm_mlir import _libs  # noqa: E402
from norm_mlir._runtime import (  # noqa: E402
    BF16, DTYPE_CODES, ERROR_MANIFEST, ERROR_NAMES, F16, F32, FORMAT_VERSION,
    Runtime, RuntimeLaunchError, make_tensor)

# The binding's names the scripts use, and this module's.
__all__ = ["BF16", "DTYPE_CODES", "ERROR_NAMES", "F16", "F32",
           "FORMAT_VERSION", "Runtime", "RuntimeLaunchError", "make_tensor",
           "find_library", "where_searched", "status", "start_on_gpu",
           "nvidia_smi",
           "load_config", "torch_dtype_code", "torch_tensor"]


def find_library(gpu_dir=None):
    """<gpu_dir>/libnormrt.so (what gpu-prepare.sh carries), else where the
    package looks: $NORM_MLIR_LIB_DIR, norm_mlir/_lib, build/lib. None if
    none."""
    if gpu_dir:
        p = os.path.join(gpu_dir, "libnormrt.so")
        if os.path.isfile(p):
            return os.path.abspath(p)
    try:
        return _libs.runtime_path()
    except OSError:
        return None


def where_searched(gpu_dir):
    return "%s, %s" % (gpu_dir, ", ".join(_libs.lib_dirs()))


def nvidia_smi():
    """The driver, clocks, temperature and power nvidia-smi reports for the
    GPU (one CSV line), or "" where it cannot be asked: what a benchmark
    records beside its numbers."""
    import subprocess
    try:
        q = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version,clocks.sm,"
             "clocks.mem,clocks.max.sm,temperature.gpu,power.draw",
             "--format=csv,noheader"], capture_output=True, text=True,
            timeout=20)
        return q.stdout.strip()
    except Exception:  # noqa: BLE001
        return ""


def status(call, *args):
    """(0, result, "") of call(*args), or (code, None, message) when it
    raises RuntimeLaunchError: for the checks that print return codes."""
    try:
        return 0, call(*args), ""
    except RuntimeLaunchError as e:
        return e.code, None, e.message


def start_on_gpu(gpu_dir, who, out, seed=None):
    """libnormrt, torch with the primary CUDA context current, and the run's
    seed (a fresh one unless given): (torch, Runtime, seed), or None after
    saying through `out` what is missing."""
    lib = find_library(gpu_dir)
    if not lib:
        out("%s: libnormrt.so not found (%s)" % (who,
                                                 where_searched(gpu_dir)))
        return None
    try:
        import torch
    except ImportError as ex:
        out("%s: cannot import torch (%s); --dry-run needs none" % (who, ex))
        return None
    if not torch.cuda.is_available():
        out("%s: torch sees no CUDA device" % who)
        return None
    torch.empty(1, device="cuda")  # the primary context, current here
    if seed is None:
        seed = int.from_bytes(os.urandom(4), "little")
    return torch, Runtime(lib), seed


def load_config(rt, gpu_dir, entry, image="auto"):
    """Loads one configs.json entry: its cubin first (image "auto" or
    "cubin", when there is one), else or on failure its PTX (unless image is
    "cubin"). Returns (rc, Module or None, message, image path, failures
    of earlier tries)."""
    manifest = os.path.join(gpu_dir, entry["manifest"])
    paths = []
    if image in ("auto", "cubin") and entry.get("cubin"):
        paths.append(os.path.join(gpu_dir, entry["cubin"]))
    if image in ("auto", "ptx"):
        paths.append(os.path.join(gpu_dir, entry["ptx"]))
    rc, msg, tried = ERROR_MANIFEST, "no image", []
    for path in paths:
        rc, mod, msg = status(rt.load_files, path, manifest)
        if rc == 0:
            return 0, mod, "", path, tried
        tried.append("%s: %d (%s) %s" % (os.path.basename(path), rc,
                                         ERROR_NAMES.get(rc, "?"), msg))
    return rc, None, "; ".join(tried) or msg, None, tried


def torch_dtype_code(t):
    import torch
    return {torch.float32: F32, torch.float16: F16,
            torch.bfloat16: BF16}[t.dtype]


def torch_tensor(name, t, dtype_code=None):
    """A runtime Tensor viewing torch tensor t (rank 1 to MAX_RANK, strides
    in elements as torch reports them)."""
    return make_tensor(name, t.data_ptr(),
                       torch_dtype_code(t) if dtype_code is None
                       else dtype_code,
                       list(t.shape), list(t.stride()))
