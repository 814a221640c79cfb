#===- gen_torch_mlir.py - linalg IR of norms from torch-mlir --------------===#
#
# Part of mlir-norm. Generates the torch-mlir inputs of norm-raise's tests
# (test/Transforms/norm-raise-torch-mlir.mlir): PyTorch modules calling
# LayerNorm / RMSNorm, forward and the backward ops autograd runs for them,
# through torch-mlir's fx importer and its
# torch-backend-to-linalg-on-tensors-backend-pipeline (OutputType
# LINALG_ON_TENSORS). Run once, output committed:
#
#   pip install --target /tmp/tmlir torch-mlir==20261001   # torch 2.11.0
#   PYTHONPATH=/tmp/tmlir python3 gen_torch_mlir.py OUTDIR
#
#===----------------------------------------------------------------------===#

import os
import sys

import torch
import torch.nn.functional as F
from torch.fx.experimental.proxy_tensor import make_fx
from torch_mlir import fx
from torch_mlir.compiler_utils import OutputType

M, N, EPS = 8, 64, 1e-5


class LayerNormForward(torch.nn.Module):
    """The training forward: y and the saved statistics."""

    def forward(self, x, w, b):
        return torch.ops.aten.native_layer_norm(x, [N], w, b, EPS)


class LayerNormInference(torch.nn.Module):
    def forward(self, x, w, b):
        return F.layer_norm(x, (N,), w, b, EPS)


class LayerNormBackward(torch.nn.Module):
    """What autograd runs for F.layer_norm's backward."""

    def forward(self, dy, x, mean, rstd, w, b):
        return torch.ops.aten.native_layer_norm_backward(
            dy, x, [N], mean, rstd, w, b, [True, True, True])


class RMSNormInference(torch.nn.Module):
    def forward(self, x, w):
        return F.rms_norm(x, (N,), w, EPS)


class RMSNormForward(torch.nn.Module):
    """The training forward: y and the saved rstd."""

    def forward(self, x, w):
        return torch.ops.aten._fused_rms_norm(x, [N], w, EPS)


class RMSNormBackward(torch.nn.Module):
    """What autograd runs for _fused_rms_norm's backward."""

    def forward(self, dy, x, rstd, w):
        return torch.ops.aten._fused_rms_norm_backward(
            dy, x, [N], rstd, w, [True, True])


class Block(torch.nn.Module):
    """Norms inside a network (Linear, residual, ReLU, softmax): what is not
    a norm must stay as it is. Random parameters, so none is a splat."""

    def __init__(self):
        super().__init__()
        self.l1 = torch.nn.Linear(N, N)
        self.l2 = torch.nn.Linear(N, N)
        self.ln = torch.nn.LayerNorm(N)
        self.rms = torch.nn.RMSNorm(N, eps=1e-6)
        with torch.no_grad():
            for p in (self.ln.weight, self.ln.bias, self.rms.weight):
                p.copy_(torch.randn(N))

    def forward(self, x):
        h = self.ln(x + self.l1(x))
        h = self.rms(self.l2(torch.relu(h)))
        e = torch.exp(h)  # a softmax without its max: a reduction too
        return e / e.sum(-1, keepdim=True)


class TwoBlocks(torch.nn.Module):
    """Block after Block: the second block's norms read values computed
    after the first block's reductions (its softmax)."""

    def __init__(self):
        super().__init__()
        self.first = Block()
        self.second = Block()

    def forward(self, x):
        return self.second(self.first(x))


def layer_norm_joint(x, w, b, dy):
    """Forward and autograd's backward of F.layer_norm in one graph."""
    y, vjp = torch.func.vjp(
        lambda x, w, b: F.layer_norm(x, (N,), w, b, EPS), x, w, b)
    return (y,) + tuple(vjp(dy))


def rms_norm_joint(x, w, dy):
    """Forward and autograd's backward of F.rms_norm (composite: torch
    differentiates its decomposition) in one graph."""
    y, vjp = torch.func.vjp(lambda x, w: F.rms_norm(x, (N,), w, EPS), x, w)
    return (y,) + tuple(vjp(dy))


def block_joint(block):
    """A training step's graph of `block`: forward, then autograd's
    backward to the input and every parameter."""
    names = [n for n, _ in block.named_parameters()]

    def fn(x, dy, *params):
        def run(x, *params):
            return torch.func.functional_call(block, dict(zip(names, params)),
                                              (x,))
        y, vjp = torch.func.vjp(run, x, *params)
        return (y,) + tuple(vjp(dy))
    return fn, [p.detach() for p in block.parameters()]


def rand(*shape, dtype=torch.float32):
    return torch.randn(*shape).to(dtype)


def main(out):
    torch.manual_seed(0)
    batch = torch.export.Dim("batch")
    cases = {
        "layer_norm_fwd": (LayerNormForward(), (rand(M, N), rand(N),
                                                rand(N)), None),
        "layer_norm_fwd_dynamic": (LayerNormInference(),
                                   (rand(M, N), rand(N), rand(N)),
                                   ({0: batch}, None, None)),
        "layer_norm_fwd_bf16": (LayerNormInference(),
                                (rand(M, N, dtype=torch.bfloat16),
                                 rand(N, dtype=torch.bfloat16),
                                 rand(N, dtype=torch.bfloat16)), None),
        "layer_norm_bwd": (LayerNormBackward(),
                           (rand(M, N), rand(M, N), rand(M, 1),
                            rand(M, 1).abs() + 0.5, rand(N), rand(N)), None),
        "rms_norm_fwd": (RMSNormForward(), (rand(M, N), rand(N)), None),
        "rms_norm_fwd_y": (RMSNormInference(), (rand(M, N), rand(N)), None),
        "rms_norm_bwd": (RMSNormBackward(),
                         (rand(M, N), rand(M, N), rand(M, 1).abs() + 0.5,
                          rand(N)), None),
    }
    cases["block_fwd"] = (Block(), (rand(M, N),), None)
    cases["two_blocks_fwd"] = (TwoBlocks(), (rand(M, N),), None)
    cases["layer_norm_fwd_rank3"] = (LayerNormForward(),
                                     (rand(4, 512, N), rand(N), rand(N)),
                                     None)
    for name, (module, args, dynamic) in cases.items():
        m = fx.export_and_import(module, *args, dynamic_shapes=dynamic,
                                 output_type=OutputType.LINALG_ON_TENSORS,
                                 func_name=name)
        path = os.path.join(out, name + ".mlir")
        with open(path, "w") as f:
            f.write("// Generated by test/Transforms/Inputs/torch-mlir/"
                    "gen_torch_mlir.py\n// (torch-mlir 20261001, torch "
                    f"{torch.__version__}); do not edit.\n")
            f.write(str(m))
        print(path)
    # Joint graphs (make_fx of torch.func.vjp, functionalized), imported
    # from FX directly.
    joints = {
        "layer_norm_joint": (layer_norm_joint,
                             (rand(M, N), rand(N), rand(N), rand(M, N))),
        "rms_norm_joint": (rms_norm_joint, (rand(M, N), rand(N), rand(M, N))),
    }
    fn, params = block_joint(Block())
    joints["block_joint"] = (fn, (rand(M, N), rand(M, N), *params))
    for name, (fn, args) in joints.items():
        gm = make_fx(torch.func.functionalize(fn),
                     decomposition_table=fx.get_decomposition_table())(*args)
        m = fx.stateless_fx_import(gm,
                                   output_type=OutputType.LINALG_ON_TENSORS,
                                   model_name=name)
        path = os.path.join(out, name + ".mlir")
        with open(path, "w") as f:
            f.write("// Generated by test/Transforms/Inputs/torch-mlir/"
                    "gen_torch_mlir.py\n// (torch-mlir 20261001, torch "
                    f"{torch.__version__}); do not edit.\n")
            f.write(str(m))
        print(path)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(__file__))
