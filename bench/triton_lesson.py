"""The seed lesson's Triton norm backward (../shared/seeds/
norm-backward-triton-lesson.txt), written from its text for the benchmark.

Two kernels, as the lesson describes them:

* ``lesson_dx_kernel``: one program per row; the whole row in one block
  (BLOCK = next power of two >= N); x and dy loaded once and promoted to
  f32; xhat recomputed from the saved mean/rstd; the two in-row sums; dx
  stored in the row's dtype; then the row's dy*xhat (and dy) added with
  ``tl.atomic_add`` into partial row ``row % GROUPS`` of f32 [GROUPS, N]
  workspaces (the "grouped partial buffers" variant; not deterministic).
* ``lesson_reduce_kernel``: sums the GROUPS partial rows per column in a
  fixed order, tile by tile, and stores dw (and db) in the weight's dtype.

RMSNorm is the same with the mean and the mean(dyhat) term dropped, as the
lesson says. The workspaces must be zero before the dx kernel: ``run``
zeroes them (that memset is part of the method, so it is timed too).
"""

import torch
import triton
import triton.language as tl


@triton.jit
def lesson_dx_kernel(dy_ptr, x_ptr, w_ptr, mean_ptr, rstd_ptr, dx_ptr,
                     dw_part_ptr, db_part_ptr,
                     stride_dy, stride_x, stride_dx, N, GROUPS,
                     BLOCK: tl.constexpr, IS_RMS: tl.constexpr,
                     HAS_BIAS: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    inside = cols < N
    # Masked loads, f32 right away; padding lanes read 0.
    x = tl.load(x_ptr + row * stride_x + cols, mask=inside,
                other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + row * stride_dy + cols, mask=inside,
                 other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=inside, other=0.0).to(tl.float32)
    rstd = tl.load(rstd_ptr + row)
    # Recompute the normalised row from the saved statistics.
    if IS_RMS:
        xhat = x * rstd
    else:
        mean = tl.load(mean_ptr + row)
        xhat = (x - mean) * rstd
    xhat = tl.where(inside, xhat, 0.0)
    dyhat = dy * w
    # The in-row reductions, in f32.
    c2 = tl.sum(dyhat * xhat, axis=0) / N
    if IS_RMS:
        dx = (dyhat - xhat * c2) * rstd
    else:
        c1 = tl.sum(dyhat, axis=0) / N
        dx = (dyhat - c1 - xhat * c2) * rstd
    tl.store(dx_ptr + row * stride_dx + cols,
             dx.to(dx_ptr.dtype.element_ty), mask=inside)
    # This row's share of dw/db, into its group's partial row.
    g = row % GROUPS
    tl.atomic_add(dw_part_ptr + g * N + cols, dy * xhat, mask=inside)
    if HAS_BIAS:
        tl.atomic_add(db_part_ptr + g * N + cols, dy, mask=inside)


@triton.jit
def lesson_reduce_kernel(dw_part_ptr, db_part_ptr, dw_ptr, db_ptr, GROUPS, N,
                         BLOCK_N: tl.constexpr, BLOCK_G: tl.constexpr,
                         HAS_BIAS: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    cmask = cols < N
    acc_w = tl.zeros((BLOCK_N,), dtype=tl.float32)
    acc_b = tl.zeros((BLOCK_N,), dtype=tl.float32)
    # Walk the group axis tile by tile: a fixed summation order.
    for g0 in range(0, GROUPS, BLOCK_G):
        grp = g0 + tl.arange(0, BLOCK_G)
        m = (grp < GROUPS)[:, None] & cmask[None, :]
        offs = grp[:, None] * N + cols[None, :]
        acc_w += tl.sum(tl.load(dw_part_ptr + offs, mask=m, other=0.0), axis=0)
        if HAS_BIAS:
            acc_b += tl.sum(tl.load(db_part_ptr + offs, mask=m, other=0.0),
                            axis=0)
    tl.store(dw_ptr + cols, acc_w.to(dw_ptr.dtype.element_ty), mask=cmask)
    if HAS_BIAS:
        tl.store(db_ptr + cols, acc_b.to(db_ptr.dtype.element_ty), mask=cmask)


def lesson_groups(m, n):
    """The lesson's 'say 256' partial rows, fewer for very wide rows so the
    workspace stays a few MB (its worked example: 256 x 4096 x 4 B)."""
    g = 256
    while g > 16 and g * n * 4 > (16 << 20):
        g //= 2
    return max(1, min(g, m))


class LessonBackward:
    """Preallocated outputs and workspaces for one (M, N, dtype) problem."""

    def __init__(self, dy, x, w, mean, rstd, has_bias):
        m, n = x.shape
        self.dy, self.x, self.w, self.mean, self.rstd = dy, x, w, mean, rstd
        self.is_rms = mean is None
        self.has_bias = has_bias
        self.m, self.n = m, n
        self.groups = lesson_groups(m, n)
        dev = x.device
        self.dx = torch.empty_like(x)
        self.dw = torch.empty(n, device=dev, dtype=w.dtype)
        self.db = torch.empty(n, device=dev, dtype=w.dtype) if has_bias \
            else self.dw
        self.dw_part = torch.empty(self.groups, n, device=dev,
                                   dtype=torch.float32)
        self.db_part = torch.empty(self.groups, n, device=dev,
                                   dtype=torch.float32) if has_bias \
            else self.dw_part
        self.block = triton.next_power_of_2(n)
        self.num_warps = min(max(self.block // 256, 1), 16)
        self.block_n = min(128, triton.next_power_of_2(n))
        self.block_g = 32

    def run(self):
        self.dw_part.zero_()
        if self.has_bias:
            self.db_part.zero_()
        lesson_dx_kernel[(self.m,)](
            self.dy, self.x, self.w,
            self.rstd if self.is_rms else self.mean, self.rstd, self.dx,
            self.dw_part, self.db_part,
            self.dy.stride(0), self.x.stride(0), self.dx.stride(0),
            self.n, self.groups,
            BLOCK=self.block, IS_RMS=self.is_rms, HAS_BIAS=self.has_bias,
            num_warps=self.num_warps)
        lesson_reduce_kernel[(triton.cdiv(self.n, self.block_n),)](
            self.dw_part, self.db_part, self.dw, self.db, self.groups, self.n,
            BLOCK_N=self.block_n, BLOCK_G=self.block_g,
            HAS_BIAS=self.has_bias, num_warps=4)
        return self.dx, self.dw, (self.db if self.has_bias else None)
