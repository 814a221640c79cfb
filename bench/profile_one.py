#!/usr/bin/env python3
"""Launches one compiled configuration a few times, for a profiler.

    ncu --kernel-name regex:dx --launch-count 1 --section SpeedOfLight \\
        python3 bench/profile_one.py layer_norm_grad-n4096-bf16-deterministic 16384

Inputs are fresh random data (never zeros); dtypes and shapes come from the
configuration's manifest. NAME may also be a manifest path under
.dev/gpu (its .ptx beside it).
"""

import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_env as E  # noqa: E402

GPU_DIR = os.environ.get("NORM_GPU_DIR", ".dev/gpu")
DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


def main():
    name, m = sys.argv[1], int(sys.argv[2])
    repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    if name.endswith(".json"):
        # A manifest of its own (e.g. compiled with other pass options),
        # its PTX beside it, paths relative to GPU_DIR.
        entry = {"manifest": name, "ptx": name[:-len(".json")] + ".ptx"}
    else:
        entry = json.load(open(os.path.join(GPU_DIR, "configs.json")))[
            "configs"][name]
    manifest = json.load(open(os.path.join(GPU_DIR, entry["manifest"])))
    rt = E.Runtime(E.find_library(GPU_DIR))
    rc, mod, msg, _, _ = E.load_config(rt, GPU_DIR, entry)
    if rc:
        sys.exit("profile_one: load failed: " + msg)
    tensors, keep = [], []
    for a in manifest["arguments"]:
        shape = [m if d == "?" else d for d in a["shape"]]
        t = torch.randn(*shape, device="cuda").to(DTYPES[a["dtype"]])
        if a["kind"] == "rstd":
            t = t.abs() + 0.5
        keep.append(t)
        tensors.append(E.torch_tensor(a["name"], t))
    ws_bytes = mod.workspace_bytes(m)
    ws = torch.empty(max(ws_bytes, 1), device="cuda", dtype=torch.uint8)
    for _ in range(repeats):
        rc, _, msg = E.status(mod.launch, tensors, ws.data_ptr(), ws_bytes,
                              torch.cuda.current_stream().cuda_stream)
        if rc:
            sys.exit("profile_one: launch failed: " + msg)
    torch.cuda.synchronize()
    print("profile_one: %s M=%d launched %d times" % (name, m, repeats))


if __name__ == "__main__":
    main()
