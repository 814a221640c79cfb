"""Checks of the runtime's ctypes binding, python/norm_mlir/_runtime.py,
without a GPU or torch: the binding's view of the C header and the
manifest schema agrees with the library's (normrt_manifest_schema), and
each way they could disagree is caught; dry_run returns the whole plan
however long, and fails loudly rather than return part of it.

Usage: normrt_py_test.py SOURCE_ROOT LIBNORMRT"""

import copy
import ctypes
import json
import os
import sys
import unittest

SRC, LIB = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(SRC, "python"))
from norm_mlir import _runtime as rt  # noqa: E402


def fake_call(text, report=True):
    """A normrt_dry_run stand-in: copies `text` truncated to the capacity
    and reports its full length (unless `report` is False)."""
    data = text.encode()
    calls = []

    def call(buf, capacity, length):
        calls.append(capacity)
        if report:
            ctypes.cast(length, ctypes.POINTER(ctypes.c_size_t))[0] = len(data)
        n = min(len(data), capacity - 1)
        ctypes.memmove(buf, data, n)
        buf[n] = b"\0"
        return 0
    return call, calls


class ReadPlanText(unittest.TestCase):
    def test_short(self):
        call, calls = fake_call("m 1 groups 1 workspace 0\n")
        self.assertEqual(rt.read_plan_text(call),
                         (0, "m 1 groups 1 workspace 0\n"))
        self.assertEqual(calls, [1 << 16])

    def test_grows_past_64k(self):
        text = "".join("launch k%d grid 1 block 32 params 0:\n" % i
                       for i in range(5000))
        self.assertGreater(len(text), 1 << 16)
        call, calls = fake_call(text)
        self.assertEqual(rt.read_plan_text(call), (0, text))
        self.assertEqual(calls, [1 << 16, len(text) + 1])

    def test_exactly_full(self):
        text = "x" * ((1 << 16) - 1)
        call, calls = fake_call(text)
        self.assertEqual(rt.read_plan_text(call), (0, text))
        text += "y"
        call, calls = fake_call(text)
        self.assertEqual(rt.read_plan_text(call), (0, text))
        self.assertEqual(calls, [1 << 16, (1 << 16) + 1])

    def test_unreported_length_is_an_error(self):
        call, _ = fake_call("z" * 100, report=False)
        with self.assertRaises(rt.DryRunTruncated):
            rt.read_plan_text(call)

    def test_never_fits_is_an_error(self):
        def call(buf, capacity, length):
            ctypes.cast(length, ctypes.POINTER(ctypes.c_size_t))[0] = \
                2 * capacity
            buf[0] = b"\0"
            return 0
        with self.assertRaises(rt.DryRunTruncated):
            rt.read_plan_text(call)

    def test_error_code_passes_through(self):
        self.assertEqual(rt.read_plan_text(lambda b, c, n: 1), (1, None))


class Schema(unittest.TestCase):
    """The binding's constants against the library's schema."""

    def test_agrees(self):
        runtime = rt.Runtime(LIB)  # refuses a library that disagrees
        schema = runtime.manifest_schema()
        self.assertEqual(rt.check_schema(schema), [])
        self.assertEqual(schema["format_version"], rt.FORMAT_VERSION)
        # The manifest's fields, as the reader knows them.
        self.assertEqual(list(schema["objects"]), [
            "manifest", "spec", "argument", "workspace", "kernel", "param"])
        kernel = schema["objects"]["kernel"]
        self.assertEqual(kernel["dynamic_shared_bytes"], {
            "type": "integer", "required": False, "min": 1,
            "max": 2 ** 31 - 1, "attribute": "shared"})
        self.assertTrue(schema["objects"]["argument"]["kind"]["required"])
        self.assertEqual(schema["argument_kinds"]["mean"],
                         {"shape": "statistic", "roles": ["input", "output"]})
        self.assertEqual(schema["argument_kinds"]["dx"],
                         {"shape": "rows", "roles": ["output"]})

    def test_each_disagreement_is_caught(self):
        schema = rt.Runtime(LIB).manifest_schema()
        mutations = {
            "format_version": lambda s: s.update(format_version=1),
            "max_rank": lambda s: s["c_api"].update(max_rank=4),
            "dtype codes": lambda s: s["c_api"]["dtype"].update(bf16=3),
            "status codes": lambda s: s["c_api"]["status"].pop("WORKSPACE"),
            "NormrtTensor layout":
                lambda s: s["c_api"]["tensor"].update(size=88),
            "argument kinds":
                lambda s: s["argument_kinds"].pop("dresidual"),
            "kernel kinds":
                lambda s: s["enums"]["kernel_kind"].append("fused"),
        }
        for what, mutate in mutations.items():
            changed = copy.deepcopy(schema)
            mutate(changed)
            problems = rt.check_schema(changed)
            self.assertEqual(len(problems), 1, (what, problems))
            self.assertTrue(problems[0].startswith(what + ":"), problems)


def manifest(arguments, kernels):
    return json.dumps({"format_version": rt.FORMAT_VERSION, "function": "f",
                       "arguments": arguments, "kernels": kernels})


class RealLibrary(unittest.TestCase):
    """Manifest-only modules through the binding."""

    def test_long_plan(self):
        # A plan longer than 64 KiB.
        kernels = [{"name": "kernel_%04d" % i, "kind": "forward",
                    "block": 32, "grid": 1,
                    "params": [{"argument": 0, "rank": 2},
                               {"argument": 1, "rank": 2}]}
                   for i in range(1000)]
        text = manifest([
            {"name": "x", "kind": "x", "role": "input", "dtype": "f32",
             "shape": ["?", 8]},
            {"name": "y", "kind": "y", "role": "output", "dtype": "f32",
             "shape": ["?", 8]}], kernels)
        mod = rt.Runtime(LIB).load_manifest_only(text)
        try:
            tensors = [rt.make_tensor("x", 0x10000, rt.F32, [4, 8], [8, 1]),
                       rt.make_tensor("y", 0x20000, rt.F32, [4, 8], [8, 1])]
            plan = mod.dry_run(tensors)
            self.assertGreater(len(plan), 1 << 16)
            lines = plan.splitlines()
            self.assertEqual(len(lines), 1001)
            self.assertTrue(lines[-1].startswith("launch kernel_0999 grid 1"),
                            lines[-1])
            # Errors raise with the status and the message.
            with self.assertRaises(rt.RuntimeLaunchError) as e:
                mod.dry_run(tensors[:1])
            self.assertEqual((e.exception.code, e.exception.message),
                             (rt.ERROR_INVALID_ARGUMENT,
                              "missing argument 'y'"))
            self.assertEqual(e.exception.call, "normrt_dry_run")
        finally:
            mod.close()

    def test_rank3(self):
        # [B, S, N] tensors through the binding's struct: every size and
        # stride reaches the plan, and M = B * S.
        text = manifest([
            {"name": "x", "kind": "x", "role": "input", "dtype": "f32",
             "shape": ["?", "?", 8]},
            {"name": "rstd", "kind": "rstd", "role": "output",
             "dtype": "f32", "shape": ["?", "?"]}],
            [{"name": "k", "kind": "forward", "block": 32,
              "grid": "row_blocks", "rows": 4,
              "params": [{"argument": 0, "rank": 3},
                         {"argument": 1, "rank": 2}]}])
        mod = rt.Runtime(LIB).load_manifest_only(text)
        try:
            x = rt.make_tensor("x", 0x10000, rt.F32, [2, 3, 8], [24, 8, 1])
            rstd = rt.make_tensor("rstd", 0x20000, rt.F32, [2, 3], [3, 1])
            self.assertEqual(mod.dry_run([x, rstd]).splitlines(), [
                "m 6 groups 6 workspace 0",
                "launch k grid 2 block 32 params 16: "
                "[0x10000 0x10000 0 2 3 8 24 8 1] "
                "[0x20000 0x20000 0 2 3 3 1]"])
            mod.validate([x, rstd])
            self.assertEqual(mod.workspace_bytes(6), 0)
            rstd = rt.make_tensor("rstd", 0x20000, rt.F32, [3, 2], [2, 1])
            with self.assertRaises(rt.RuntimeLaunchError) as e:
                mod.validate([x, rstd])
            self.assertEqual(e.exception.message,
                             "'rstd': rows [3, 2] but 'x' has [2, 3] (each "
                             "row extent must match, not only their product "
                             "M)")
            with self.assertRaises(ValueError):
                rt.make_tensor("x", 0x10000, rt.F32, [1] * 9, [1] * 9)
        finally:
            mod.close()

    def test_manifest_errors(self):
        # The reader's refusals come back as MANIFEST with the message.
        runtime = rt.Runtime(LIB)
        text = manifest([{"name": "x", "kind": "x", "dtype": "f32",
                          "shape": ["?", 8], "strid": [8, 1]}], [])
        with self.assertRaises(rt.RuntimeLaunchError) as e:
            runtime.load_manifest_only(text)
        self.assertEqual(e.exception.code, rt.ERROR_MANIFEST)
        self.assertIn('unknown key "strid"', e.exception.message)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
