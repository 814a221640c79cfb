"""bench/occupancy.py without a GPU: the sm_90 limits, and the A/B report
over two synthetic resources.txt sets with their manifests."""

import io
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

sys.path.insert(0, os.path.join(sys.argv[1], "bench"))
import occupancy as O  # noqa: E402


class Occupancy(unittest.TestCase):
    def test_limits(self):
        # Registers: 64 x 256 = 16384 a block, four an SM; 79 rounds to 80:
        # three (the step explicit fma crossed for LayerNorm N <= 1024).
        self.assertEqual(O.blocks_per_sm(256, 64, 0), 4)
        self.assertEqual(O.blocks_per_sm(256, 79, 0), 3)
        self.assertEqual(O.blocks_per_sm(256, 168, 0), 1)
        self.assertEqual(O.blocks_per_sm(512, 128, 0), 1)
        self.assertEqual(O.blocks_per_sm(512, 129, 0), 0)
        # Threads: 2048 an SM; blocks: 32.
        self.assertEqual(O.blocks_per_sm(1024, 16, 0), 2)
        self.assertEqual(O.blocks_per_sm(32, 8, 0), 32)
        # Shared memory: 228 KB an SM, 1 KB reserved a block.
        self.assertEqual(O.blocks_per_sm(128, 32, 100 * 1024), 2)
        self.assertEqual(O.blocks_per_sm(128, 32, 48 * 1024), 4)

    def write_set(self, root, regs):
        os.makedirs(os.path.join(root, "kernels"))
        with open(os.path.join(root, "kernels", "c.json"), "w") as f:
            json.dump({"kernels": [{"name": "c_dx_1", "block": 256,
                                    "kind": "dx",
                                    "dynamic_shared_bytes": 65536}]}, f)
        with open(os.path.join(root, "resources.txt"), "w") as f:
            f.write("# header\n")
            f.write("c c_dx_1 regs %d smem 1024 stack 0 spill st/ld 0/0\n"
                    % regs)
        return os.path.join(root, "resources.txt")

    def test_ab(self):
        with tempfile.TemporaryDirectory() as d:
            a = self.write_set(os.path.join(d, "a"), 64)
            b = self.write_set(os.path.join(d, "b"), 168)
            ra = O.load_set(a)[("c", "c_dx_1")]
            # Dynamic shared memory from the manifest joins the static.
            self.assertEqual(ra["smem"], 1024 + 65536)
            self.assertEqual(O.describe(ra), (3, 24))
            out = io.StringIO()
            with redirect_stdout(out):
                O.main(["occupancy.py", a, b])
            text = out.getvalue()
            self.assertIn("64>168", text)
            self.assertIn("24>8", text)
            self.assertIn("1 with fewer warps", text)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
