"""norm_mlir: LayerNorm / RMSNorm kernels from the mlir-norm compiler.

    import norm_mlir
    k = norm_mlir.compile_spec(op="layer_norm_grad", n=4096, dtype="bf16")
    k.image        # PTX text as bytes (format="ptx") or a cubin
    k.manifest     # the launch manifest (dict): arguments, kernels, grids

    norm_mlir.compile(ir_text, chip="sm_90", format="cubin")

Diagnostics raise ``norm_mlir.CompileError`` with the compiler's message.
``norm_mlir.torch`` has the PyTorch functions and modules (imported on
demand: this module needs no torch).
"""

import ctypes
import json
import os
import threading

from . import _libs

__version__ = "0.1.0"

# What format= accepts, and the pipeline's name for it.
FORMATS = {"ptx": "isa", "cubin": "bin", "fatbin": "fatbin"}
OPS = ("layer_norm", "rms_norm", "layer_norm_grad", "rms_norm_grad")
DTYPES = ("f32", "f16", "bf16")
STRATEGIES = ("deterministic", "grouped_atomic", "atomic", "locked")


class CompileError(RuntimeError):
    """The compiler rejected its input. ``diagnostics`` is its message."""

    def __init__(self, diagnostics):
        self.diagnostics = diagnostics
        super().__init__(diagnostics.strip() or "compilation failed")


class Compiled:
    """A compiled op: the kernels' image and the launch manifest."""

    def __init__(self, image, manifest_text, fmt, chip, function_name,
                 diagnostics=""):
        self.image = image
        self.manifest_text = manifest_text
        self.manifest = json.loads(manifest_text)
        self.format = fmt
        self.chip = chip
        self.function_name = function_name
        self.diagnostics = diagnostics

    def __repr__(self):
        return "<norm_mlir.Compiled %s %s %s, %d bytes, %d kernels>" % (
            self.function_name, self.chip, self.format, len(self.image),
            len(self.manifest.get("kernels", [])))


_LIBDEVICE = os.path.join("nvvm", "libdevice", "libdevice.10.bc")
_SYSTEM_TOOLKITS = ("/usr/local/cuda",)
_private_toolkit = []  # a per-process directory, when the cache's is not ours
_toolkit_lock = threading.Lock()


def _pip_libdevices():
    """(libdevice.10.bc, the toolkit-shaped directory holding it or None)
    of the copies pip-installed Triton and nvidia-cuda-nvcc carry."""
    import importlib.util
    out = []
    for mod, rel, shaped in (
            ("triton", ("backends", "nvidia", "lib", "libdevice.10.bc"),
             False),
            ("nvidia.cuda_nvcc", ("nvvm", "libdevice", "libdevice.10.bc"),
             True)):
        try:
            spec = importlib.util.find_spec(mod)
        except (ImportError, ValueError):
            spec = None
        if spec and spec.submodule_search_locations:
            for loc in spec.submodule_search_locations:
                out.append((os.path.join(loc, *rel), loc if shaped else None))
    return out


def _link_toolkit(root, bc):
    """root, once root/nvvm/libdevice/libdevice.10.bc links to `bc`; None
    where that cannot be written (a read-only or foreign cache)."""
    link = os.path.join(root, _LIBDEVICE)
    if os.path.realpath(link) == os.path.realpath(bc):
        return root
    tmp = "%s.%d.%d" % (link, os.getpid(), threading.get_ident())
    try:
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(bc, tmp)
        os.replace(tmp, link)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return None
    return root


def find_toolkit():
    """A directory holding nvvm/libdevice/libdevice.10.bc for the compiler
    (the kernels call libdevice's math), or None: $CUDA_HOME, $CUDA_PATH,
    $CUDA_ROOT, /usr/local/cuda, then the copy of libdevice that pip-installed
    Triton or nvidia-cuda-nvcc carries: nvidia-cuda-nvcc's directory as it
    is, Triton's linked into a toolkit-shaped directory under the kernel
    cache, or, where the cache cannot be written (read-only, shared), under
    a directory of this process's own (so a GPU host with torch needs no
    CUDA toolkit: kernels are compiled to PTX and the driver builds them)."""
    for env in ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"):
        root = os.environ.get(env)
        if root and os.path.isfile(os.path.join(root, _LIBDEVICE)):
            return root
    for root in _SYSTEM_TOOLKITS:
        if os.path.isfile(os.path.join(root, _LIBDEVICE)):
            return root
    for bc, root in _pip_libdevices():
        if not os.path.isfile(bc):
            continue
        if root:
            return root
        from . import cache
        got = _link_toolkit(os.path.join(cache.directory(), "toolkit"), bc)
        if got:
            return got
        with _toolkit_lock:
            if not _private_toolkit:
                import atexit
                import shutil
                import tempfile
                d = tempfile.mkdtemp(prefix="norm_mlir-toolkit-")
                atexit.register(shutil.rmtree, d, True)
                _private_toolkit.append(d)
        got = _link_toolkit(_private_toolkit[0], bc)
        if got:
            return got
    return None


def _options(chip, fmt, strategy=None, groups=None, extra=None,
             print_ir=False):
    if fmt not in FORMATS:
        raise ValueError("format must be one of %s, not %r"
                         % (", ".join(FORMATS), fmt))
    if not isinstance(chip, str) or not chip.startswith("sm_"):
        raise ValueError("chip must be like 'sm_90', not %r" % (chip,))
    words = ["chip=%s" % chip, "format=%s" % FORMATS[fmt]]
    if print_ir:
        words.append("print-ir")
    if strategy is not None:
        if strategy not in STRATEGIES:
            raise ValueError("strategy must be one of %s, not %r"
                             % (", ".join(STRATEGIES), strategy))
        words.append("strategy=%s" % strategy)
    if groups is not None:
        words.append("groups=%d" % int(groups))
    extra = dict(extra or {})
    if "toolkit" not in extra:
        root = find_toolkit()
        if root:
            extra["toolkit"] = root
    for k, v in sorted(extra.items()):
        if not k.replace("-", "").isalnum():
            raise ValueError("bad pipeline option name %r" % (k,))
        if any(c.isspace() for c in str(v)):
            raise ValueError("pipeline option %s: no spaces in %r" % (k, v))
        words.append("%s=%s" % (k, v))
    return " ".join(words)


def _result(call, fmt, chip):
    lib = _libs.compiler()
    res = _libs.NormCompileResult()
    rc = call(lib, ctypes.byref(res))
    try:
        diags = (res.diagnostics or b"").decode("utf-8", "replace")
        if rc != 0:
            raise CompileError(diags)
        image = ctypes.string_at(res.image, res.imageSize)
        manifest = res.manifest.decode("utf-8")
        name = (res.functionName or b"").decode("utf-8", "replace")
    finally:
        lib.normCompileResultDestroy(ctypes.byref(res))
    return Compiled(image, manifest, fmt, chip, name, diags)


def compile(ir_text, chip="sm_90", format="ptx", strategy=None, groups=None,
            options=None, print_ir=False):
    """Compiles the one function with norm ops of `ir_text` (MLIR, buffer
    form) to kernels. format: "ptx", "cubin" or "fatbin". `options`: other
    pipeline options by name (e.g. {"threads": 256}). Returns Compiled;
    raises CompileError, whose message is the compiler's diagnostics; with
    print_ir each also shows the IR of the operation it is about."""
    if isinstance(ir_text, str):
        ir_text = ir_text.encode("utf-8")
    opts = _options(chip, format, strategy, groups, options,
                    print_ir).encode()
    return _result(lambda lib, r: lib.normCompile(ir_text, len(ir_text),
                                                  opts, r), format, chip)


def spec_words(op, n, dtype, weight_dtype=None, eps=None, weight=True,
               bias=True, dresidual=False, zero_centered=False, xhat=False,
               name=None, residual=False):
    """The spec text normCompileSpec takes (norm-compile's spec flags);
    residual: a forward with the fused residual add (a `residual` input,
    the sum `h` an output)."""
    if op not in OPS:
        raise ValueError("op must be one of %s, not %r" % (", ".join(OPS),
                                                           op))
    if dtype not in DTYPES or (weight_dtype and weight_dtype not in DTYPES):
        raise ValueError("dtypes must be among %s" % ", ".join(DTYPES))
    n = int(n)
    words = ["op=%s" % op, "n=%d" % n, "dtype=%s" % dtype]
    if weight_dtype and weight_dtype != dtype:
        words.append("weight-dtype=%s" % weight_dtype)
    if eps is not None:
        words.append("eps=%r" % float(eps))
    if name:
        words.append("name=%s" % name)
    if not weight:
        words.append("no-weight")
    if not bias and op.startswith("layer_norm"):
        words.append("no-bias")
    if dresidual:
        words.append("dresidual")
    if zero_centered:
        words.append("zero-centered")
    if xhat:
        words.append("xhat")
    if residual:
        words.append("residual")
    return " ".join(words)


def compile_spec(op, n, dtype, weight_dtype=None, eps=None, weight=True,
                 bias=True, dresidual=False, zero_centered=False, xhat=False,
                 chip="sm_90", format="ptx", strategy=None, groups=None,
                 options=None, print_ir=False, residual=False):
    """Compiles one op described by its parameters (as norm-compile's spec
    flags): op in OPS, hidden size n, x dtype, weight dtype (default x's).
    Returns Compiled (its manifest names the arguments by role and carries
    the spec); raises CompileError (print_ir: as for compile)."""
    spec = spec_words(op, n, dtype, weight_dtype, eps, weight, bias,
                      dresidual, zero_centered, xhat,
                      residual=residual).encode()
    opts = _options(chip, format, strategy, groups, options,
                    print_ir).encode()
    return _result(lambda lib, r: lib.normCompileSpec(spec, opts, r), format,
                   chip)
