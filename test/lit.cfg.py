# -*- Python -*- lit configuration of mlir-norm.

import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "NORM"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test", ".c"]
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py",
                   "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.norm_obj_root, "test")

config.substitutions.append(("%norm_src", config.norm_src_root))
config.substitutions.append(("%norm_obj", config.norm_obj_root))
config.substitutions.append(
    ("%norm_plugin", os.path.join(config.norm_obj_root, "lib", "NormPlugin.so")))
config.substitutions.append(("%cuda_toolkit", config.cuda_toolkit))
# The stand-in CUDA driver of test/Runtime (Inputs/fake-libcuda.c).
config.substitutions.append(
    ("%normrt_fake_cuda",
     os.path.join(config.norm_obj_root, "lib", "libnormrt-fake-cuda.so")))

llvm_config.use_default_substitutions()
llvm_config.with_system_environment(["HOME", "CUDA_HOME", "CUDA_PATH",
                                     "CUDA_ROOT"])

# A sanitized build (NORM_SANITIZE, scripts/sanitize.sh): libMLIR.so is not
# instrumented, so its own poisoning of memory must not be reported, and the
# stock mlir-opt-22 can only load our instrumented plugin with the ASan
# runtime preloaded (%norm_preload, empty otherwise).
preload = ""
if config.norm_sanitize:
    import subprocess
    # handle_segv=0: the execution self-test checks that a crashing kernel
    # is reported by its signal, which ASan's handler would turn into exit 1.
    config.environment["ASAN_OPTIONS"] = (
        "allow_user_poisoning=0:detect_leaks=1:abort_on_error=0:"
        "handle_segv=0")
    config.environment["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"
    config.environment["LSAN_OPTIONS"] = "suppressions=" + os.path.join(
        config.norm_src_root, "test", "lsan.supp")
    libasan = subprocess.run(["gcc", "-print-file-name=libasan.so"],
                             capture_output=True, text=True).stdout.strip()
    preload = "env LD_PRELOAD=" + libasan
    config.available_features.add("sanitizer")
# Built with Clang, as Debian's MLIR is: what runs our pipeline through
# MLIR's static C API needs it (docs/Embedding.md, "Build with Clang").
if "Clang" in getattr(config, "norm_cxx_compiler_id", ""):
    config.available_features.add("host-clang")
config.substitutions.append(("%norm_preload", preload))

llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
# `lit -D norm_fallback_tools=DIR`: tools this build did not make are taken
# from DIR (scripts/dev.sh's sanitized runtime run builds only libnormrt and
# its tests and takes norm-compile from the release build).
fallback = lit_config.params.get("norm_fallback_tools")
if fallback:
    llvm_config.with_environment("PATH", fallback, append_path=True)
llvm_config.with_environment("PATH", config.norm_tools_dir, append_path=True)

tool_dirs = [config.norm_tools_dir, config.llvm_tools_dir]
if fallback:
    tool_dirs.insert(1, fallback)
tools = ["norm-opt", "norm-capi-test", "norm-compile-capi-test",
         "norm-exec-test", "norm-raise-exec-test", "norm-geometry-test",
         "FileCheck", "not",
         "count",
         ToolSubst("mlir-opt", unresolved="fatal"),
         "normrt-test", "normrt-groups-test", "normrt-gpu-test"]
llvm_config.add_tool_substitutions(tools, tool_dirs)

if os.path.exists(os.path.join(config.cuda_toolkit, "nvvm", "libdevice",
                               "libdevice.10.bc")):
    config.available_features.add("cuda-toolkit")
import shutil
if shutil.which("clang++") or shutil.which("clang++-14"):
    config.available_features.add("clang")
if os.path.exists(os.path.join(config.cuda_toolkit, "bin", "ptxas")):
    config.available_features.add("ptxas")
