"""Builds the norm-mlir wheel: the package plus three shared libraries.

`pip wheel ./python` runs CMake on the repository root (the parent of this
directory) with MLIR and LLVM linked statically (NORM_LINK_MLIR_DYLIB=OFF)
and builds libnormcompile.so (the compiler, C API of norm-c/Compile.h) and
libnormrt.so (the runtime); then libnormtorch.so, the C++ bodies of
norm_mlir.torch's ops (python/csrc/torch_ops.cpp, torch's stable ABI: one
build for every torch >= 2.10), with one compiler call against the torch
that `python3 -I` imports (pip's isolated build environment hides it
otherwise), left out with a message when there is none; and
libnormtorch_autograd.so, the forward ops' Autograd kernels through torch's
full C++ API, which fits only that torch (its version is written beside it,
libnormtorch_autograd.torch; the package loads it only into that torch and
keeps its Python autograd formulas elsewhere). All are stripped
and shipped in norm_mlir/_lib. The wheel is tagged py3-none-<platform>:
the package binds the libraries with ctypes, so one wheel serves every
CPython >= 3.10.

Environment:
  NORM_MLIR_BUILD_DIR   the CMake build directory (default <root>/build-py)
  NORM_MLIR_PREBUILT    a directory that already holds both libraries (and
                        libnormtorch.so, else it is built): copied as they
                        are, no CMake
  MLIR_DIR              MLIR's CMake package (default: LLVM 22's, Debian)
  NORM_MLIR_TORCH_EXT   0: leave libnormtorch.so (and the autograd
                        library) out; 1: fail without libnormtorch.so
  NORM_MLIR_TORCH_AUTOGRAD  0: leave libnormtorch_autograd.so out
  NORM_MLIR_TORCH_DIR   the torch package to build it against
"""

import importlib.util
import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py

try:
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # setuptools < 70
    from wheel.bdist_wheel import bdist_wheel

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
LIBS = ("libnormcompile.so", "libnormrt.so")
TORCH_EXT = "libnormtorch.so"
AUTOGRAD_EXT = ("libnormtorch_autograd.so", "libnormtorch_autograd.torch")


def build_libraries():
    pre = os.environ.get("NORM_MLIR_PREBUILT")
    if pre:
        return pre
    build = os.environ.get("NORM_MLIR_BUILD_DIR") or os.path.join(ROOT,
                                                                  "build-py")
    if not os.path.isfile(os.path.join(build, "build.ninja")):
        env = dict(os.environ)
        env.setdefault("CC", "clang")
        env.setdefault("CXX", "clang++")
        subprocess.check_call([
            "cmake", "-G", "Ninja", "-S", ROOT, "-B", build,
            "-DCMAKE_BUILD_TYPE=Release", "-DNORM_LINK_MLIR_DYLIB=OFF",
            "-DMLIR_DIR=" + os.environ.get(
                "MLIR_DIR", "/usr/lib/llvm-22/lib/cmake/mlir")], env=env)
    subprocess.check_call(["ninja", "-C", build, "normcompile", "normrt"])
    return os.path.join(build, "lib")


def build_torch_ext(src, dst):
    """libnormtorch.so into dst: src's copy (NORM_MLIR_PREBUILT), else
    built by python/csrc/build_ext.py; None when left out."""
    want = os.environ.get("NORM_MLIR_TORCH_EXT", "")
    for name in (TORCH_EXT,) + AUTOGRAD_EXT:  # a previous build's
        stale = os.path.join(dst, name)
        if os.path.exists(stale):
            os.remove(stale)
    if want == "0":
        return None
    if os.path.isfile(os.path.join(src, TORCH_EXT)):
        out = os.path.join(dst, TORCH_EXT)
        shutil.copyfile(os.path.join(src, TORCH_EXT), out)
        return out
    spec = importlib.util.spec_from_file_location(
        "build_ext", os.path.join(HERE, "csrc", "build_ext.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = mod.build(dst)
    if out is None and want == "1":
        raise RuntimeError("NORM_MLIR_TORCH_EXT=1 but libnormtorch.so could "
                           "not be built (no torch >= 2.10 or no compiler)")
    return out


def build_autograd_ext(src, dst):
    """libnormtorch_autograd.so (and its stamp) into dst: src's copies
    (NORM_MLIR_PREBUILT), else built by build_ext.py; None when left out
    or not built (the package then runs its Python autograd formulas)."""
    if os.environ.get("NORM_MLIR_TORCH_EXT") == "0" or \
            os.environ.get("NORM_MLIR_TORCH_AUTOGRAD") == "0":
        return None
    if all(os.path.isfile(os.path.join(src, n)) for n in AUTOGRAD_EXT):
        for n in AUTOGRAD_EXT:
            shutil.copyfile(os.path.join(src, n), os.path.join(dst, n))
        return os.path.join(dst, AUTOGRAD_EXT[0])
    spec = importlib.util.spec_from_file_location(
        "build_ext", os.path.join(HERE, "csrc", "build_ext.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.build_autograd(dst)


class BuildPy(build_py):
    def run(self):
        super().run()
        src = build_libraries()
        dst = os.path.join(self.build_lib, "norm_mlir", "_lib")
        os.makedirs(dst, exist_ok=True)
        strip = shutil.which("llvm-strip-22") or shutil.which("llvm-strip") \
            or shutil.which("strip")
        outs = []
        for name in LIBS:
            out = os.path.join(dst, name)
            shutil.copyfile(os.path.join(src, name), out)
            outs.append(out)
        ext = build_torch_ext(src, dst)
        if ext:
            outs.append(ext)
            ag = build_autograd_ext(src, dst)
            if ag:
                outs.append(ag)
        for out in outs:
            os.chmod(out, 0o755)
            if strip:
                subprocess.check_call([strip, "--strip-unneeded", out])


class BdistWheel(bdist_wheel):
    def finalize_options(self):
        super().finalize_options()
        self.root_is_pure = False  # platform libraries inside

    def get_tag(self):
        _, _, plat = super().get_tag()
        return "py3", "none", plat


setup(cmdclass={"build_py": BuildPy, "bdist_wheel": BdistWheel})
