#!/usr/bin/env python3
"""One LayerNorm backward with more than 2^31 elements per tensor, on the GPU.

M = 2^31 / N + 3 rows of N bf16 (2.15e9 elements, 4.3 GB per tensor; N =
4096 by default, the register regime; CONFIG names another compiled
LayerNorm bf16 configuration, e.g. N = 131072 for the looped regime's
batches): the kernels' index arithmetic must be 64-bit. Checks, against a
float64 reference computed in row chunks on the GPU:
  * dx of the first and the last 256 rows (the last ones lie past 2^31
    elements from the start),
  * dweight and dbias over all rows.
Fresh random inputs; outputs poisoned with NaN before the launch.

Usage (on the GPU machine, .dev/gpu carried):
  python3 bench/big_check.py [CONFIG]
"""

import json
import os
import re
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_env as E  # noqa: E402

GPU_DIR = os.environ.get("NORM_GPU_DIR", ".dev/gpu")
CONFIG = (sys.argv[1] if len(sys.argv) > 1
          else "layer_norm_grad-n4096-bf16-deterministic")
N = int(re.search(r"-n(\d+)-", CONFIG).group(1))
M = (1 << 31) // N + 3


def rel(out, ref):
    out, ref = out.double(), ref.double()
    return ((out - ref).norm() / ref.norm()).item()


def main():
    t0 = time.time()
    torch.manual_seed(int.from_bytes(os.urandom(4), "little"))
    dev = "cuda"
    rt = E.Runtime(E.find_library(GPU_DIR))
    entry = json.load(open(os.path.join(GPU_DIR, "configs.json")))["configs"][CONFIG]
    rc, mod, msg, path, _ = E.load_config(rt, GPU_DIR, entry)
    if rc:
        print("big_check: FAIL load %s: %s" % (CONFIG, msg))
        return 1

    x = torch.randn(M, N, device=dev, dtype=torch.bfloat16)
    dy = torch.randn(M, N, device=dev, dtype=torch.bfloat16)
    w = (1 + 0.1 * torch.randn(N, device=dev)).to(torch.bfloat16)
    mean = torch.empty(M, device=dev)
    rstd = torch.empty(M, device=dev)
    # Rows per float64 chunk: 2^28 elements (2 GB) at most.
    chunk = max(256, (1 << 28) // N)
    for r in range(0, M, chunk):
        xs = x[r:r + chunk].double()
        mu = xs.mean(-1)
        mean[r:r + chunk] = mu.float()
        rstd[r:r + chunk] = torch.rsqrt(((xs - mu[:, None]) ** 2).mean(-1)
                                        + 1e-5).float()
        del xs
    dx = torch.full_like(x, float("nan"))
    dw = torch.full((N,), float("nan"), device=dev, dtype=torch.bfloat16)
    db = torch.full((N,), float("nan"), device=dev, dtype=torch.bfloat16)
    ws_bytes = mod.workspace_bytes(M)
    ws = torch.empty(max(ws_bytes, 1), device=dev, dtype=torch.uint8)
    T = E.torch_tensor
    tensors = [T("dy", dy), T("x", x), T("mean", mean), T("rstd", rstd),
               T("weight", w), T("dx", dx), T("dweight", dw), T("dbias", db)]
    torch.cuda.synchronize()
    rc, _, msg = E.status(mod.launch, tensors, ws.data_ptr(), ws_bytes,
                          torch.cuda.current_stream().cuda_stream)
    torch.cuda.synchronize()
    if rc:
        print("big_check: FAIL launch: %s" % msg)
        return 1

    # Reference, in row chunks.
    dw_ref = torch.zeros(N, device=dev, dtype=torch.float64)
    db_ref = torch.zeros(N, device=dev, dtype=torch.float64)
    worst_dx = 0.0
    for r in range(0, M, chunk):
        xs, dys = x[r:r + chunk].double(), dy[r:r + chunk].double()
        xh = (xs - mean[r:r + chunk].double()[:, None]) * \
            rstd[r:r + chunk].double()[:, None]
        dw_ref += (dys * xh).sum(0)
        db_ref += dys.sum(0)
        if r == 0 or r + chunk >= M:
            g = dys * w.double()
            ref = rstd[r:r + chunk].double()[:, None] * (
                g - g.mean(-1, keepdim=True)
                - xh * (g * xh).mean(-1, keepdim=True))
            rows = slice(0, 256) if r == 0 else slice(-256, None)
            worst_dx = max(worst_dx, rel(dx[r:r + chunk][rows], ref[rows]))
        del xs, dys, xh
    e_dw, e_db = rel(dw, dw_ref), rel(db, db_ref)
    nan = bool(torch.isnan(dx[-1]).any() or torch.isnan(dw).any())
    bound_dx, bound_w = 1.5 * 2 ** -8, 1.5 * 2 ** -8
    ok = (not nan and worst_dx <= bound_dx and e_dw <= bound_w
          and e_db <= bound_w)
    print("big_check: %s M=%d N=%d (%.3g elements per tensor, > 2^31): "
          "dx(first/last 256 rows) %.2e/%.1e dweight %.2e dbias %.2e/%.1e "
          "nan=%s (%.0f s)" % ("PASS" if ok else "FAIL", M, N, M * N,
                               worst_dx, bound_dx, e_dw, e_db, bound_w, nan,
                               time.time() - t0))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
