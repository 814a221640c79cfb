"""Builds libnormtorch.so, the C++ bodies of norm_mlir.torch's ops
(python/csrc/torch_ops.cpp), against an installed torch's stable-ABI
headers: one compiler call, a few seconds. Used by python/setup.py (into
the wheel) and by the CPU tests (python/tests/test_torch_cpu.py builds it
into a temporary directory when no built copy is found).

Then libnormtorch_autograd.so (python/csrc/torch_autograd.cpp), the forward
ops' Autograd kernels through torch's full C++ API: it fits only the torch
it is built against, whose version and git revision go into the library
and into libnormtorch_autograd.torch beside it, which norm_mlir.torch
reads before loading it (another torch keeps the Python formulas). About
20 s to compile.

    python3 python/csrc/build_ext.py OUT_DIR        (prints the .so's path)

The library includes torch/csrc/stable and the C shim only, with
TORCH_TARGET_VERSION 2.10, so one build loads into every torch from 2.10
on. It links libtorch_cpu.so by name without a run path: torch is imported
(and that library loaded) before norm_mlir.torch loads it. libnormrt is not
linked: the library binds the copy Python loaded (normtorch_init).

Environment: NORM_MLIR_TORCH_DIR (the torch package directory; default:
the one `python3 -I` imports, so pip's isolated build environment still
finds the machine's torch), CXX (default c++).
"""

import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SOURCE = os.path.join(HERE, "torch_ops.cpp")
NAME = "libnormtorch.so"
AUTOGRAD_SOURCE = os.path.join(HERE, "torch_autograd.cpp")
AUTOGRAD_NAME = "libnormtorch_autograd.so"
AUTOGRAD_STAMP = "libnormtorch_autograd.torch"  # "<version> <git revision>"
TARGET_VERSION = "0x020a000000000000"  # torch 2.10: the stable ABI's floor

_FIND = ("import importlib.util as u; s = u.find_spec('torch'); "
         "print(s.submodule_search_locations[0] if s else '')")


def torch_dir():
    """The torch package directory with include/ and lib/, or None."""
    env = os.environ.get("NORM_MLIR_TORCH_DIR")
    candidates = [env] if env else []
    if not env:
        # -I: not pip's isolated build path (which hides site-packages);
        # then as we run, for a torch on PYTHONPATH or in user site.
        for flags in (["-I"], []):
            try:
                out = subprocess.run([sys.executable] + flags + ["-c", _FIND],
                                     capture_output=True, text=True,
                                     timeout=60).stdout.strip()
            except (OSError, subprocess.SubprocessError):
                out = ""
            if out:
                candidates.append(out)
    for d in candidates:
        if os.path.isfile(os.path.join(d, "include", "torch", "csrc",
                                       "stable", "library.h")) and \
                os.path.isfile(os.path.join(d, "lib", "libtorch_cpu.so")):
            return d
    return None


def compiler():
    for c in (os.environ.get("CXX"), "c++", "g++", "clang++"):
        if c and shutil.which(c.split()[0]):
            return c.split()
    return None


def command(out, tdir, cxx):
    return cxx + [
        "-O2", "-std=c++17", "-fPIC", "-shared", "-fvisibility=hidden",
        "-fvisibility-inlines-hidden", "-Wall", "-Wno-unused-function",
        "-DTORCH_TARGET_VERSION=" + TARGET_VERSION,
        "-isystem", os.path.join(tdir, "include"),
        "-I", os.path.join(ROOT, "include"),
        SOURCE, "-o", out,
        "-L", os.path.join(tdir, "lib"), "-Wl,--no-as-needed",
        "-ltorch_cpu", "-Wl,--as-needed", "-ldl", "-Wl,-z,defs"]


_VERSION = ("import sys; sys.path.insert(0, sys.argv[1]); import torch; "
            "print(torch.__version__, torch.version.git_version, "
            "int(torch._C._GLIBCXX_USE_CXX11_ABI))")


def torch_version(tdir):
    """("<torch version> <git revision>", cxx11 ABI flag) of the torch
    package at tdir, or None."""
    # -I: pip's isolated build environment would hide site-packages.
    try:
        out = subprocess.run([sys.executable, "-I", "-c", _VERSION,
                              os.path.dirname(tdir)],
                             capture_output=True, text=True,
                             timeout=300).stdout.split()
    except (OSError, subprocess.SubprocessError):
        return None
    if len(out) != 3:
        return None
    # The version without its local tag (+cu130): builds of one source for
    # other CUDA versions share the C++ API; the git revision names it.
    return "%s %s" % (out[0].split("+")[0], out[1]), out[2]


def python_include():
    """CPython's include directory (Python.h), or None: the autograd
    library's Python entry (torch_autograd.cpp, the limited API of 3.10) is
    compiled in only where it is found."""
    import sysconfig
    d = sysconfig.get_paths().get("include")
    return d if d and os.path.isfile(os.path.join(d, "Python.h")) else None


def autograd_command(out, tdir, cxx, version, abi, pyinc=None):
    inc = os.path.join(tdir, "include")
    # With the Python entry, CPython's symbols come from the interpreter
    # the library is loaded into (as an extension module's do): no -z defs,
    # and libtorch_python.so (loaded by `import torch`) for
    # THPVariable_Wrap.
    py = ["-DNORMTORCH_PYTHON_ENTRY", "-isystem", pyinc] if pyinc else []
    link = ["-ltorch_python"] if pyinc else []
    return cxx + py + [
        "-O2", "-std=c++17", "-fPIC", "-shared", "-fvisibility=hidden",
        "-fvisibility-inlines-hidden", "-Wall", "-Wno-unused-function",
        "-D_GLIBCXX_USE_CXX11_ABI=" + abi,
        '-DNORMTORCH_TORCH_VERSION="%s"' % version,
        "-isystem", inc,
        "-isystem", os.path.join(inc, "torch", "csrc", "api", "include"),
        AUTOGRAD_SOURCE, "-o", out,
        "-L", os.path.join(tdir, "lib"), "-Wl,--no-as-needed", "-lc10",
        "-ltorch_cpu"] + link + ["-Wl,--as-needed"] + (
            [] if pyinc else ["-Wl,-z,defs"])


def build_autograd(out_dir, quiet=False):
    """Builds libnormtorch_autograd.so and its stamp into out_dir; its path,
    or None (no torch with headers, no compiler, or a failed compile: the
    package then keeps its Python autograd formulas)."""
    tdir, cxx = torch_dir(), compiler()
    got = torch_version(tdir) if tdir and cxx else None
    if not got:
        if not quiet:
            print("norm_mlir: %s not built: no torch with headers or no C++ "
                  "compiler" % AUTOGRAD_NAME, file=sys.stderr)
        return None
    version, abi = got
    os.makedirs(out_dir, exist_ok=True)
    out = os.path.join(out_dir, AUTOGRAD_NAME)
    tmp = out + ".%d.tmp" % os.getpid()
    try:
        subprocess.check_call(autograd_command(tmp, tdir, cxx, version, abi,
                                               python_include()))
    except (OSError, subprocess.CalledProcessError) as ex:
        if os.path.exists(tmp):
            os.remove(tmp)
        if not quiet:
            print("norm_mlir: %s not built (%s)" % (AUTOGRAD_NAME, ex),
                  file=sys.stderr)
        return None
    os.replace(tmp, out)
    with open(os.path.join(out_dir, AUTOGRAD_STAMP), "w") as f:
        f.write(version + "\n")
    return out


def build(out_dir, quiet=False):
    """Builds libnormtorch.so into out_dir and returns its path; None when
    no torch (>= 2.10, with its headers) or no C++ compiler is found."""
    tdir, cxx = torch_dir(), compiler()
    if not tdir or not cxx:
        if not quiet:
            print("norm_mlir: libnormtorch.so not built: %s" % (
                "no torch >= 2.10 with headers" if not tdir else
                "no C++ compiler"), file=sys.stderr)
        return None
    os.makedirs(out_dir, exist_ok=True)
    out = os.path.join(out_dir, NAME)
    tmp = out + ".%d.tmp" % os.getpid()
    subprocess.check_call(command(tmp, tdir, cxx))
    os.replace(tmp, out)
    return out


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: build_ext.py OUT_DIR")
    path = build(sys.argv[1])
    if not path:
        sys.exit(1)
    print(path)
    path = build_autograd(sys.argv[1])
    if path:
        print(path)
