"""ATen ops TVM 0.27's torch.export importer lacks: PyTorch's own decompositions first, then converters
through the importer's `custom_convert_map` (keyed by the op's `__name__`, called as `fn(node, importer)`).

- decompositions: any op the importer has no converter for but `torch._decomp` decomposes
  (`aten.unfold`, `aten.amax`, `aten.var_mean`, `aten.adaptive_max_pool2d`, ...), repeated while it helps;
- recurrent layers: `lstm.input` and `gru.input` kept whole and imported as one TIR time loop per layer
  and direction (`recurrent.py`), not unrolled;
- converters: `select.int` (a negative index counted from the end), `min.dim` (values and first-index argmin), `unfold.default` (one `take` of the windows),
  `convolution.default` with `transposed` on 5-D input (Relax's `conv3d_transpose`; the importer stops
  at 2-D) and every other convolution through the importer's own converter, `amax`, `var_mean`,
  `bitwise_right_shift`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from tvm import relax


def _static(shape) -> list[int]:
    return [int(s) for s in shape]


def _min_dim(node, imp) -> relax.Var:
    x = imp.env[node.args[0]]
    dim = int(node.args[1])
    keepdim = bool(node.args[2] if len(node.args) > 2 else node.kwargs.get("keepdim", False))
    bb = imp.block_builder
    values = bb.emit(relax.op.min(x, axis=[dim], keepdims=keepdim))
    indices = bb.emit(relax.op.argmin(x, axis=dim, keepdims=keepdim))
    if str(indices.ty.dtype) != "int64":
        indices = bb.emit(relax.op.astype(indices, "int64"))
    return bb.emit(relax.Tuple([values, indices]))


def _unfold(node, imp) -> relax.Var:
    """Tensor.unfold(dim, size, step): the windows along `dim` become a new last axis."""
    x = imp.env[node.args[0]]
    dim, size, step = (int(a) for a in node.args[1:4])
    shape = _static(imp.shape_of(x))
    dim %= len(shape)
    n = (shape[dim] - size) // step + 1
    idx = (np.arange(n)[:, None] * step + np.arange(size)[None, :]).reshape(-1).astype("int64")
    bb = imp.block_builder
    y = bb.emit(relax.op.take(x, relax.const(idx), axis=dim))
    y = bb.emit(relax.op.reshape(y, shape[:dim] + [n, size] + shape[dim + 1:]))
    axes = list(range(dim + 1)) + list(range(dim + 2, len(shape) + 1)) + [dim + 1]
    return bb.emit(relax.op.permute_dims(y, axes))


def _convolution(node, imp) -> relax.Var:
    args = imp.retrieve_args(node)
    x, weight = args[0], args[1]
    transposed = bool(args[6]) if len(args) > 6 else False
    if not (transposed and len(imp.shape_of(x)) == 5):
        return imp._convolution(node)
    bias = args[2] if len(args) > 2 else None
    stride, padding, dilation = args[3], args[4], args[5]
    output_padding = args[7] if len(args) > 7 else 0
    groups = int(args[8]) if len(args) > 8 else 1
    bb = imp.block_builder
    y = bb.emit(relax.op.nn.conv3d_transpose(x, weight, strides=stride, padding=padding,
                                             output_padding=output_padding, dilation=dilation, groups=groups,
                                             data_layout="NCDHW", kernel_layout="IODHW", out_dtype="float32"))
    if bias is None or imp._is_no_bias(bias):
        return y
    return bb.emit(relax.op.add(y, relax.op.reshape(bias, (1, -1, 1, 1, 1))))


def _amax(node, imp) -> relax.Var:
    x = imp.env[node.args[0]]
    dims = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", [])
    keepdim = bool(node.args[2] if len(node.args) > 2 else node.kwargs.get("keepdim", False))
    axes = [int(d) for d in dims] if dims else None  # amax(x, []) reduces every axis
    return imp.block_builder.emit(relax.op.max(x, axis=axes, keepdims=keepdim))


def _var_mean(node, imp) -> relax.Var:
    x = imp.env[node.args[0]]
    dims = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")
    correction = node.kwargs.get("correction", 1)
    correction = 1 if correction is None else float(correction)
    keepdim = bool(node.kwargs.get("keepdim", False))
    shape = _static(imp.shape_of(x))
    axes = [int(d) % len(shape) for d in dims] if dims else list(range(len(shape)))
    n = int(np.prod([shape[a] for a in axes]))
    bb = imp.block_builder
    var = bb.emit(relax.op.variance(x, axis=axes, keepdims=keepdim))
    if correction:
        var = bb.emit(relax.op.multiply(var, relax.const(n / (n - correction), str(x.ty.dtype))))
    mean = bb.emit(relax.op.mean(x, axis=axes, keepdims=keepdim))
    return bb.emit(relax.Tuple([var, mean]))


def _select(node, imp) -> relax.Var:
    """x.select(dim, i) with i < 0 counted from the end: the importer's `take` (mode "fast") reads out of
    bounds for a negative index (`out[:, -1, :]`, the last step of a sequence, gave NaN)."""
    x = imp.env[node.args[0]]
    shape = _static(imp.shape_of(x))
    dim = int(node.args[1]) % len(shape)
    index = int(node.args[2])
    if index < 0:
        index += shape[dim]
    return imp.block_builder.emit(relax.op.take(x, relax.const(index, "int64"), dim))


def _right_shift(node, imp) -> relax.Var:
    x = imp.env[node.args[0]]
    y = node.args[1]
    y = imp.env[y] if y in imp.env else relax.const(int(y), str(x.ty.dtype))
    return imp.block_builder.emit(relax.op.right_shift(x, y))


CUSTOM_CONVERTERS: dict[str, Any] = {
    "min.dim": _min_dim,
    "unfold.default": _unfold,
    "convolution.default": _convolution,
    "amax.default": _amax,
    "var_mean.correction": _var_mean,
    "bitwise_right_shift.Tensor_Scalar": _right_shift,
    "bitwise_right_shift.Tensor": _right_shift,
    "select.int": _select,
}


def _with_recurrent(table: dict[str, Any]) -> dict[str, Any]:
    from leka.tvm_adapter.recurrent import CONVERTERS

    return {**table, **CONVERTERS}


CUSTOM_CONVERTERS = _with_recurrent(CUSTOM_CONVERTERS)


def importer_table() -> set[str]:
    from tvm.relax.frontend.torch.exported_program_translator import ExportedProgramImporter

    return set(ExportedProgramImporter().create_convert_map()) | set(CUSTOM_CONVERTERS)


def missing_ops(ep, table: set[str] | None = None) -> list:
    """The call_function targets of `ep` that neither the importer nor our converters handle."""
    table = importer_table() if table is None else table
    seen, out = set(), []
    for n in ep.graph.nodes:
        if n.op == "call_function":
            name = getattr(n.target, "__name__", str(n.target))
            if name not in table and name not in seen:
                seen.add(name)
                out.append(n.target)
    return out


def decompose_missing(ep):
    """Core-ATen decomposition (what the importer does itself), then PyTorch's decomposition of each op
    still missing, kept where it leaves nothing new missing (amax decomposes into prims, for one)."""
    import torch
    from torch._decomp import decomposition_table

    decomps = torch.export.default_decompositions()
    # kept whole: recurrent.py imports them as loops, where PyTorch's decomposition unrolls every step
    for op in (torch.ops.aten.lstm.input, torch.ops.aten.gru.input):
        if op in decomps:
            decomps.pop(op)
    ep = ep.run_decompositions(decomps)
    table = importer_table()
    for op in missing_ops(ep, table):
        if not (isinstance(op, torch._ops.OpOverload) and op in decomposition_table):
            continue
        before = {str(o) for o in missing_ops(ep, table)}
        try:
            cand = ep.run_decompositions({op: decomposition_table[op]})
        except Exception:  # noqa: BLE001 - a decomposition that fails leaves the op to name
            continue
        if {str(o) for o in missing_ops(cand, table)} < before:
            ep = cand
    return ep
