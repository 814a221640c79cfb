"""Where the package's two shared libraries are, and their ctypes bindings.

The wheel carries them in ``norm_mlir/_lib/``: ``libnormcompile.so`` (the
compiler with MLIR/LLVM inside, exposing include/norm-c/Compile.h) and
``libnormrt.so`` (the CUDA driver runtime, include/norm-c/Runtime.h), and,
where torch was there when the wheel was built, ``libnormtorch.so`` (the
torch ops' C++ bodies, python/csrc/torch_ops.cpp; norm_mlir.torch binds it).
``NORM_MLIR_LIB_DIR`` overrides the directory (a build tree's ``lib/``).
Binding is ctypes over the C API, so one ``py3-none`` wheel imports on any
CPython >= 3.10 (docs/Python.md says why not nanobind).
"""

import ctypes
import os
import threading

_HERE = os.path.dirname(os.path.abspath(__file__))
_lock = threading.Lock()
_compiler = None
_runtime = None


def lib_dirs():
    """Directories searched, in order."""
    dirs = []
    env = os.environ.get("NORM_MLIR_LIB_DIR")
    if env:
        dirs.append(env)
    dirs.append(os.path.join(_HERE, "_lib"))
    # A source checkout: python/norm_mlir -> build/lib.
    dirs.append(os.path.join(_HERE, "..", "..", "build", "lib"))
    return dirs


def find(name):
    for d in lib_dirs():
        p = os.path.join(d, name)
        if os.path.isfile(p):
            return os.path.abspath(p)
    raise OSError("norm_mlir: %s not found in %s (set NORM_MLIR_LIB_DIR)"
                  % (name, ", ".join(lib_dirs())))


def find_optional(name):
    """find(name), or None where it is in no directory."""
    try:
        return find(name)
    except OSError:
        return None


class NormCompileResult(ctypes.Structure):
    _fields_ = [
        ("image", ctypes.c_void_p),
        ("imageSize", ctypes.c_size_t),
        ("manifest", ctypes.c_char_p),
        ("diagnostics", ctypes.c_char_p),
        ("functionName", ctypes.c_char_p),
    ]


def compiler():
    """The compiler library, bound (loaded once)."""
    global _compiler
    with _lock:
        if _compiler is None:
            lib = ctypes.CDLL(find("libnormcompile.so"))
            res = ctypes.POINTER(NormCompileResult)
            lib.normCompile.argtypes = [ctypes.c_char_p, ctypes.c_size_t,
                                        ctypes.c_char_p, res]
            lib.normCompile.restype = ctypes.c_int
            lib.normCompileSpec.argtypes = [ctypes.c_char_p, ctypes.c_char_p,
                                            res]
            lib.normCompileSpec.restype = ctypes.c_int
            lib.normCompileResultDestroy.argtypes = [res]
            lib.normCompileResultDestroy.restype = None
            _compiler = lib
        return _compiler


def runtime_path():
    return find("libnormrt.so")


def runtime():
    """The runtime library, bound (norm_mlir._runtime.Runtime)."""
    global _runtime
    with _lock:
        if _runtime is None:
            from . import _runtime as rt
            _runtime = rt.Runtime(runtime_path())
        return _runtime
