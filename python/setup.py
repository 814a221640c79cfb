"""Builds the norm-mlir wheel: the package plus two shared libraries.

`pip wheel ./python` runs CMake on the repository root (the parent of this
directory) with MLIR and LLVM linked statically (NORM_LINK_MLIR_DYLIB=OFF)
and builds libnormcompile.so (the compiler, C API of norm-c/Compile.h) and
libnormrt.so (the runtime); both are stripped and shipped in
norm_mlir/_lib. The wheel is tagged py3-none-<platform>: the package binds
the libraries with ctypes, so one wheel serves every CPython >= 3.10.

Environment:
  NORM_MLIR_BUILD_DIR   the CMake build directory (default <root>/build-py)
  NORM_MLIR_PREBUILT    a directory that already holds both libraries:
                        copied as they are, no CMake
  MLIR_DIR              MLIR's CMake package (default: LLVM 22's, Debian)
"""

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


class BuildPy(build_py):
    def run(self):
        super().run()
        src = build_libraries()
        dst = os.path.join(self.build_lib, "norm_mlir", "_lib")
        os.makedirs(dst, exist_ok=True)
        strip = shutil.which("llvm-strip-22") or shutil.which("llvm-strip") \
            or shutil.which("strip")
        for name in LIBS:
            out = os.path.join(dst, name)
            shutil.copyfile(os.path.join(src, name), out)
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
