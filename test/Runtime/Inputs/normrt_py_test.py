"""Checks of bench/normrt.py without a GPU or torch: dry_run returns the
whole plan however long, and fails loudly rather than return part of it.

Usage: normrt_py_test.py SOURCE_ROOT LIBNORMRT"""

import ctypes
import json
import os
import sys
import unittest

SRC, LIB = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(SRC, "bench"))
import normrt  # noqa: E402


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
        self.assertEqual(normrt.read_plan_text(call),
                         (0, "m 1 groups 1 workspace 0\n"))
        self.assertEqual(calls, [1 << 16])

    def test_grows_past_64k(self):
        text = "".join("launch k%d grid 1 block 32 params 0:\n" % i
                       for i in range(5000))
        self.assertGreater(len(text), 1 << 16)
        call, calls = fake_call(text)
        self.assertEqual(normrt.read_plan_text(call), (0, text))
        self.assertEqual(calls, [1 << 16, len(text) + 1])

    def test_exactly_full(self):
        text = "x" * ((1 << 16) - 1)
        call, calls = fake_call(text)
        self.assertEqual(normrt.read_plan_text(call), (0, text))
        text += "y"
        call, calls = fake_call(text)
        self.assertEqual(normrt.read_plan_text(call), (0, text))
        self.assertEqual(calls, [1 << 16, (1 << 16) + 1])

    def test_unreported_length_is_an_error(self):
        call, _ = fake_call("z" * 100, report=False)
        with self.assertRaises(normrt.DryRunTruncated):
            normrt.read_plan_text(call)

    def test_never_fits_is_an_error(self):
        def call(buf, capacity, length):
            ctypes.cast(length, ctypes.POINTER(ctypes.c_size_t))[0] = \
                2 * capacity
            buf[0] = b"\0"
            return 0
        with self.assertRaises(normrt.DryRunTruncated):
            normrt.read_plan_text(call)

    def test_error_code_passes_through(self):
        self.assertEqual(normrt.read_plan_text(lambda b, c, n: 1), (1, None))


class RealLibrary(unittest.TestCase):
    """A manifest-only module whose plan is longer than 64 KiB."""

    def test_long_plan(self):
        kernels = [{"name": "kernel_%04d" % i, "block": 32, "grid": 1,
                    "params": [{"argument": 0, "rank": 2},
                               {"argument": 1, "rank": 2}]}
                   for i in range(1000)]
        manifest = {"format_version": 1, "function": "f",
                    "arguments": [
                        {"name": "x", "role": "input", "dtype": "f32",
                         "shape": ["?", 8]},
                        {"name": "y", "role": "output", "dtype": "f32",
                         "shape": ["?", 8]}],
                    "kernels": kernels}
        rt = normrt.Runtime(LIB)
        rc, mod, msg = rt.load_manifest_only(json.dumps(manifest))
        self.assertEqual(rc, 0, msg)
        try:
            tensors = [normrt.make_tensor("x", 0x10000, normrt.NORMRT_F32,
                                          [4, 8], [8, 1]),
                       normrt.make_tensor("y", 0x20000, normrt.NORMRT_F32,
                                          [4, 8], [8, 1])]
            rc, plan = mod.dry_run(tensors)
            self.assertEqual(rc, 0, plan)
            self.assertGreater(len(plan), 1 << 16)
            lines = plan.splitlines()
            self.assertEqual(len(lines), 1001)
            self.assertTrue(lines[-1].startswith("launch kernel_0999 grid 1"),
                            lines[-1])
            # Errors still come back as (rc, message).
            rc, msg = mod.dry_run(tensors[:1])
            self.assertEqual((rc, msg), (1, "missing argument 'y'"))
        finally:
            mod.close()

    def test_rank3(self):
        # [B, S, N] tensors through the binding's struct: every size and
        # stride reaches the plan, and M = B * S.
        manifest = {"format_version": 1, "function": "f",
                    "arguments": [
                        {"name": "x", "role": "input", "dtype": "f32",
                         "shape": ["?", "?", 8]},
                        {"name": "rstd", "role": "output", "dtype": "f32",
                         "shape": ["?", "?"]}],
                    "kernels": [{"name": "k", "block": 32,
                                 "grid": "row_blocks", "rows": 4,
                                 "params": [{"argument": 0, "rank": 3},
                                            {"argument": 1, "rank": 2}]}]}
        rt = normrt.Runtime(LIB)
        rc, mod, msg = rt.load_manifest_only(json.dumps(manifest))
        self.assertEqual(rc, 0, msg)
        try:
            x = normrt.make_tensor("x", 0x10000, normrt.NORMRT_F32,
                                   [2, 3, 8], [24, 8, 1])
            rstd = normrt.make_tensor("rstd", 0x20000, normrt.NORMRT_F32,
                                      [2, 3], [3, 1])
            rc, plan = mod.dry_run([x, rstd])
            self.assertEqual(rc, 0, plan)
            self.assertEqual(plan.splitlines(), [
                "m 6 groups 6 workspace 0",
                "launch k grid 2 block 32 params 16: "
                "[0x10000 0x10000 0 2 3 8 24 8 1] "
                "[0x20000 0x20000 0 2 3 3 1]"])
            rstd = normrt.make_tensor("rstd", 0x20000, normrt.NORMRT_F32,
                                      [3, 2], [2, 1])
            rc, msg = mod.dry_run([x, rstd])
            self.assertEqual((rc, msg), (1, "'rstd': rows [3, 2] but 'x' has "
                                            "[2, 3] (each row extent must "
                                            "match, not only their product "
                                            "M)"))
            with self.assertRaises(ValueError):
                normrt.make_tensor("x", 0x10000, normrt.NORMRT_F32, [1] * 9,
                                   [1] * 9)
        finally:
            mod.close()


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
