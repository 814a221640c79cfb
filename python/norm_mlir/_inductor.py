"""norm_mlir's ops under torch.compile: a graph pass for inductor that folds
the residual adds around our norms into the ops themselves.

Inductor cannot fuse anything into an opaque custom op, so a pre-norm block
compiled with our modules ran, for each norm after a residual add, a
separate add kernel before the forward op and another after the backward op
(the norm's dx plus the residual stream's gradient), where torch's own
norms are fused into those adds: two more launches a norm and step, each a
kernel launch of host time in a host-bound step (docs/NOTES.md, "Issue 22:
the compiled path's host cost"). The ops already have both fusions:

* forward: ``h = aten.add(a, b)`` read by ``layer_norm_fwd(h, ...)`` /
  ``rms_norm_fwd(h, ...)`` becomes ``add_layer_norm_fwd(a, b, ...)`` /
  ``add_rms_norm_fwd(a, b, ...)``, whose h (added in f32 and rounded once,
  as torch's add: the same bits) replaces the add's result everywhere;
* backward: ``aten.add(dx, g)``, where dx is ``layer_norm_bwd`` /
  ``rms_norm_bwd``'s dx and read by nothing else, becomes that backward op
  with ``dresidual=g`` (added into dx inside the kernel, in f32, rounded
  once).

Only where the two tensors of the add have the add's shape and dtype (no
broadcast, no promotion, no alpha) and rows the ops read without a copy,
the add's result is contiguous (the ops' h and dx are), and the fused op
can stand where the first of the two nodes stood (its other inputs defined
before; nothing between the two that writes a tensor, so every read moved
there reads what it read before).

The pass is installed as inductor's ``post_grad_custom_post_pass`` when
``norm_mlir.torch`` is imported (``NORM_MLIR_INDUCTOR_PASS=0``: not), after
any pass already set there, which it calls first; its ``uuid`` keeps
inductor's caches (a pass set there later replaces it: the graphs then
keep the separate adds, with the same results).
"""

import functools
import operator
import os

import torch

_aten_add = torch.ops.aten.add.Tensor


def _ops():
    o = torch.ops.norm_mlir
    return {
        "fwd": {o.layer_norm_fwd.default: o.add_layer_norm_fwd.default,
                o.rms_norm_fwd.default: o.add_rms_norm_fwd.default},
        "bwd": (o.layer_norm_bwd.default, o.rms_norm_bwd.default),
    }


def _val(node):
    v = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    return v if isinstance(v, torch.Tensor) else None


def _kwargs(node):
    """node's arguments by schema name, or None."""
    got = torch.fx.operator_schemas.normalize_function(
        node.target, node.args, node.kwargs,
        normalize_to_only_use_kwargs=True)
    return None if got is None else dict(got.kwargs)


def _row_view(v, n):
    """Whether the op bodies take v's rows of n without a copy (as
    norm_mlir.torch._rows: evenly strided rows, apart, unit inner
    stride)."""
    try:
        r = v.view(-1, n) if not (v.dim() == 2 and v.shape[1] == n) else v
    except RuntimeError:
        return False
    return (r.shape[0] <= 1 or r.stride(0) >= n) and (
        r.stride(1) == 1 or n == 1)


def _add_terms(add, n):
    """(a, b) of add = aten.add.Tensor(a, b) where both are tensors of the
    add's own shape, dtype and device whose rows of n the ops read without
    a copy, and the sum is contiguous; else None."""
    if add.target is not _aten_add or len(add.args) != 2 or \
            any(k != "alpha" or v != 1 for k, v in add.kwargs.items()):
        return None
    out = _val(add)
    if out is None or not out.is_contiguous() or not isinstance(n, int):
        return None
    for t in add.args:
        v = _val(t)
        if v is None or v.shape != out.shape or v.dtype != out.dtype or \
                v.device != out.device or not _row_view(v, n):
            return None
    return add.args


def _getitems(node):
    """{index: getitem node} of a multi-output node, or None where anything
    else reads it."""
    got = {}
    for u in node.users:
        if u.op != "call_function" or u.target is not operator.getitem:
            return None
        got[u.args[1]] = u
    return got


def _mutates(node):
    """Whether node may write a tensor (a mutable schema, or a higher-order
    op such as auto_functionalized or with_effects)."""
    if node.op != "call_function":
        return False
    schema = getattr(node.target, "_schema", None)
    if schema is not None:
        return schema.is_mutable
    return isinstance(node.target, torch._ops.HigherOrderOperator)


def _anchor(order, at, inputs, until):
    """`at`, where the fused op goes (the first of the two nodes it
    replaces), if its inputs are all defined before it and nothing from
    there to `until` (the second) may write a tensor (the reads that move
    to `at` read what they read before); else None."""
    for i in inputs:
        if isinstance(i, torch.fx.Node) and order[i] >= order[at]:
            return None
    n = at
    while n is not until:
        if _mutates(n):
            return None
        n = n.next
    return at


def _fake(op, args):
    """op's fake outputs for the fused node's meta (inductor reads them)."""
    vals = [_val(v) if isinstance(v, torch.fx.Node) else v for v in args]
    mode = torch._guards.detect_fake_mode(
        [v for v in vals if isinstance(v, torch.Tensor)])
    if mode is None:
        return None
    with mode, torch.no_grad():
        return op(*vals)


# What the fused node keeps of the node it replaces (not its values, nor
# eager_input_vals: another op's arguments).
_META = ("stack_trace", "nn_module_stack", "source_fn_stack", "seq_nr",
         "original_aten", "from_node")


def _emit(graph, anchor, op, kwargs, like, count):
    """The fused node (arguments by position, from kwargs by the schema's
    names) and its `count` getitems, inserted before anchor."""
    args = tuple(kwargs.get(a.name, a.default_value)
                 for a in op._schema.arguments)
    out = _fake(op, args)
    with graph.inserting_before(anchor):
        node = graph.call_function(op, args)
        node.meta.update((k, like.meta[k]) for k in _META if k in like.meta)
        if out is not None:
            node.meta["val"] = out
        items = []
        for i in range(count):
            g = graph.call_function(operator.getitem, (node, i))
            if out is not None:
                g.meta["val"] = out[i]
            items.append(g)
    return node, items


def _fuse_forward(graph, order, norm, fused):
    """add -> norm forward: the residual-add forward op. True if done."""
    kw = _kwargs(norm)
    outs = _getitems(norm)
    if kw is None or outs is None or not isinstance(kw["x"], torch.fx.Node):
        return False
    add = kw["x"]
    terms = _add_terms(add, kw.get("n"))
    if terms is None or terms[0] is terms[1]:
        return False
    new = {"x": terms[0], "residual": terms[1]}
    new.update((k, v) for k, v in kw.items() if k != "x")
    # At the add: the norm's weight and bias defined before it.
    anchor = _anchor(order, add, new.values(), norm)
    if anchor is None:
        return False
    # Outputs: (y, mean, rstd) -> (y, h, mean, rstd); (y, rstd) -> (y, h,
    # rstd).
    n_out = len(norm.meta["val"]) if isinstance(
        norm.meta.get("val"), (tuple, list)) else (
            3 if "bias" in kw else 2)
    _, items = _emit(graph, anchor, fused, new, norm, n_out + 1)
    for i, g in outs.items():
        g.replace_all_uses_with(items[0 if i == 0 else i + 1])
        graph.erase_node(g)
    graph.erase_node(norm)
    add.replace_all_uses_with(items[1])
    graph.erase_node(add)
    return True


def _fuse_backward(graph, order, bwd):
    """norm backward's dx + g: dresidual=g. True if done."""
    kw = _kwargs(bwd)
    outs = _getitems(bwd)
    if kw is None or outs is None or kw.get("dresidual") is not None or \
            0 not in outs or len(outs[0].users) != 1:
        return False
    dx = outs[0]
    add = next(iter(dx.users))
    terms = _add_terms(add, kw.get("n"))
    if terms is None or terms[0] is terms[1]:
        return False
    g = terms[1] if terms[0] is dx else terms[0]
    x = _val(kw["x"])
    if x is None or _val(g).shape != x.shape or _val(g).dtype != x.dtype:
        return False
    new = dict(kw, dresidual=g)
    # At the backward op: g defined before it.
    anchor = _anchor(order, bwd, new.values(), add)
    if anchor is None:
        return False
    n_out = len(bwd.meta["val"]) if isinstance(
        bwd.meta.get("val"), (tuple, list)) else (3 if "has_bias" in kw
                                                   else 2)
    _, items = _emit(graph, anchor, bwd.target, new, bwd, n_out)
    add.replace_all_uses_with(items[0])
    graph.erase_node(add)
    for i, it in outs.items():
        if i:
            it.replace_all_uses_with(items[i])
        graph.erase_node(it)
    graph.erase_node(bwd)
    return True


def fuse_residual_adds(graph):
    """The pass: folds each residual add around our norm ops into them
    (module docstring). Returns how many adds it folded."""
    ops = _ops()
    done = 0
    while True:
        order = {n: i for i, n in enumerate(graph.nodes)}
        for n in graph.nodes:
            if n.op != "call_function":
                continue
            if n.target in ops["fwd"]:
                if _fuse_forward(graph, order, n, ops["fwd"][n.target]):
                    break
            elif n.target in ops["bwd"]:
                if _fuse_backward(graph, order, n):
                    break
        else:
            break
        done += 1
    if done:
        graph.lint()
    return done


@functools.lru_cache(None)
def _source_hash():
    import hashlib
    with open(__file__, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


try:  # a torch without inductor's custom passes: nothing installed
    from torch._inductor.custom_graph_pass import CustomGraphPass
except ImportError:  # pragma: no cover
    CustomGraphPass = None

if CustomGraphPass is not None:
    class ResidualAddPass(CustomGraphPass):
        """norm_mlir's residual adds into the norm ops, as inductor's
        post_grad_custom_post_pass; `prev`, the pass that was set there
        before, runs first."""

        norm_mlir = True

        def __init__(self, prev=None):
            self.prev = prev

        def __call__(self, graph):
            if self.prev is not None:
                self.prev(graph)
            fuse_residual_adds(graph)

        def uuid(self):
            prev = None
            if self.prev is not None:
                # A pass without a uuid turns inductor's caches off; so
                # does this one then.
                prev = self.prev.uuid() if isinstance(
                    self.prev, CustomGraphPass) else None
                if prev is None:
                    return None
            return ("norm_mlir.residual_adds", _source_hash(), prev)


def install():
    """Sets the pass as inductor's post_grad_custom_post_pass (after one
    already set there); False where it is not installed."""
    if os.environ.get("NORM_MLIR_INDUCTOR_PASS", "1") == "0" or \
            CustomGraphPass is None:
        return False
    from torch._inductor import config
    prev = config.post_grad_custom_post_pass
    if getattr(prev, "norm_mlir", False):
        return True  # already ours (the module imported again)
    config.post_grad_custom_post_pass = ResidualAddPass(prev)
    return True
