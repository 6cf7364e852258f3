"""Recurrent layers (`nn.LSTM`, `nn.GRU`) imported as loops, not unrolled.

PyTorch's decomposition of `aten.lstm` / `aten.gru` (and TVM's own converter, one layer only) unrolls
every time step into its own ops: KernelBench's 6-layer LSTM over 512 steps became ~60k Relax ops and
took minutes to import, more to build. Here each layer and direction is one matmul for the input
projection of every step at once (Relax) and one TIR PrimFunc whose serial time loop carries the state
(`call_tir`): a graph of a few ops per layer whatever the sequence length. The PrimFunc's text is
made from a template with the sizes written in; it is opaque to fusion (`op_pattern` 8): its loop
carries state from step to step, which FuseTIR's block-wise fusion cannot see.
"""

from __future__ import annotations

from typing import Any

import tvm
from tvm import relax

_LSTM = """
@T.prim_func(private=True)
def {name}(xw: T.Buffer(({S}, {B}, {G}), "float32"), whh: T.Buffer(({G}, {H}), "float32"),
           h0: T.Buffer(({B}, {H}), "float32"), c0: T.Buffer(({B}, {H}), "float32"),
           y: T.Buffer(({S}, {B}, {H}), "float32"), hn: T.Buffer(({B}, {H}), "float32"),
           cn: T.Buffer(({B}, {H}), "float32")):
    T.func_attr({{"tir.noalias": True, "op_pattern": 8}})
    g = T.alloc_buffer(({B}, {G}), "float32")
    c = T.alloc_buffer(({B}, {H}), "float32")
    h = T.alloc_buffer(({B}, {H}), "float32")
    for b, j in T.grid({B}, {H}):
        c[b, j] = c0[b, j]
        h[b, j] = h0[b, j]
    for t in range({S}):
        for b, j in T.grid({B}, {G}):
            g[b, j] = xw[{T_IDX}, b, j]
            for k in range({H}):
                g[b, j] = g[b, j] + h[b, k] * whh[j, k]
        for b, j in T.grid({B}, {H}):
            c[b, j] = T.sigmoid(g[b, {H} + j]) * c[b, j] + T.sigmoid(g[b, j]) * T.tanh(g[b, {H2} + j])
            h[b, j] = T.sigmoid(g[b, {H3} + j]) * T.tanh(c[b, j])
            y[{T_IDX}, b, j] = h[b, j]
    for b, j in T.grid({B}, {H}):
        hn[b, j] = h[b, j]
        cn[b, j] = c[b, j]
"""

# GRU: r, z, n gates; the hidden projection's bias stays inside (n = tanh(x_n + r * (W_hn h + b_hn)))
_GRU = """
@T.prim_func(private=True)
def {name}(xw: T.Buffer(({S}, {B}, {G}), "float32"), whh: T.Buffer(({G}, {H}), "float32"),
           bhh: T.Buffer(({G},), "float32"), h0: T.Buffer(({B}, {H}), "float32"),
           y: T.Buffer(({S}, {B}, {H}), "float32"), hn: T.Buffer(({B}, {H}), "float32")):
    T.func_attr({{"tir.noalias": True, "op_pattern": 8}})
    g = T.alloc_buffer(({B}, {G}), "float32")
    h = T.alloc_buffer(({B}, {H}), "float32")
    for b, j in T.grid({B}, {H}):
        h[b, j] = h0[b, j]
    for t in range({S}):
        for b, j in T.grid({B}, {G}):
            g[b, j] = bhh[j]
            for k in range({H}):
                g[b, j] = g[b, j] + h[b, k] * whh[j, k]
        for b, j in T.grid({B}, {H}):
            h[b, j] = (T.float32(1) - T.sigmoid(xw[{T_IDX}, b, {H} + j] + g[b, {H} + j])) * T.tanh(
                xw[{T_IDX}, b, {H2} + j] + T.sigmoid(xw[{T_IDX}, b, j] + g[b, j]) * g[b, {H2} + j]
            ) + T.sigmoid(xw[{T_IDX}, b, {H} + j] + g[b, {H} + j]) * h[b, j]
            y[{T_IDX}, b, j] = h[b, j]
    for b, j in T.grid({B}, {H}):
        hn[b, j] = h[b, j]
"""


def _prim_func(kind: str, s: int, b: int, h: int, reverse: bool) -> tvm.tirx.PrimFunc:
    """Our own template, so TVM's parser directly (not the candidates' guarded one); it runs inside
    `import_torch`, before any build thread of an evaluation parses (importer.PARSE_LOCK)."""
    import tvm.script

    gates = 4 if kind == "lstm" else 3
    name = f"{kind}_recurrence"
    text = (_LSTM if kind == "lstm" else _GRU).format(
        name=name, S=s, B=b, H=h, G=gates * h, H2=2 * h, H3=3 * h, T_IDX=f"{s - 1} - t" if reverse else "t")
    obj = tvm.script.from_source(text)
    return obj if isinstance(obj, tvm.tirx.PrimFunc) else next(iter(obj.functions.values()))


def _static(shape) -> list[int]:
    return [int(d) for d in shape]


def _layer(imp, kind: str, x, w_ih, w_hh, b_ih, b_hh, h0, c0, reverse: bool):
    """One layer, one direction, on time-major x [S, B, I]: (y [S, B, H], h_n, c_n or None)."""
    bb = imp.block_builder
    s, b, _ = _static(imp.shape_of(x))
    h = _static(imp.shape_of(w_hh))[1]
    xw = bb.emit(relax.op.matmul(x, bb.emit(relax.op.permute_dims(w_ih, [1, 0]))))
    for bias in (b_ih, b_hh if kind == "lstm" else None):
        if bias is not None:
            xw = bb.emit(relax.op.add(xw, bias))
    gv = bb.add_func(_prim_func(kind, s, b, h, reverse), f"{kind}_recurrence")
    f32 = "float32"
    if kind == "lstm":
        out = bb.emit(relax.call_tir(gv, relax.Tuple([xw, w_hh, h0, c0]), out_ty=[
            relax.TensorType((s, b, h), f32), relax.TensorType((b, h), f32),
            relax.TensorType((b, h), f32)]))
        return bb.emit(relax.TupleGetItem(out, 0)), bb.emit(relax.TupleGetItem(out, 1)), bb.emit(
            relax.TupleGetItem(out, 2))
    if b_hh is None:
        b_hh = relax.const(tvm.runtime.tensor(__import__("numpy").zeros(3 * h, "float32")))
    out = bb.emit(relax.call_tir(gv, relax.Tuple([xw, w_hh, b_hh, h0]), out_ty=[
        relax.TensorType((s, b, h), f32), relax.TensorType((b, h), f32)]))
    return bb.emit(relax.TupleGetItem(out, 0)), bb.emit(relax.TupleGetItem(out, 1)), None


def _initial(imp, hx, index: int, b: int, h: int):
    bb = imp.block_builder
    if hx is None:
        return bb.emit(relax.op.zeros(relax.ShapeExpr((b, h)), "float32"))
    return bb.emit(relax.op.take(hx, relax.const(index, "int64"), axis=0))


def _args(node, imp, kind: str) -> tuple:
    """(x, h0, c0, params, has_biases, num_layers, bidirectional, batch_first) of aten.lstm.input(x, hx,
    params, has_biases, num_layers, dropout, train, bidirectional, batch_first), aten.gru.input(x, h0,
    params, ...), or our export ops leka::lstm(x, h0, c0, params, has_biases, num_layers, bidirectional,
    batch_first) / leka::gru(x, h0, params, ...)."""
    a = imp.retrieve_args(node)
    if str(node.target).startswith("leka."):
        if kind == "lstm":
            return a[0], a[1], a[2], list(a[3]), *a[4:8]
        return a[0], a[1], None, list(a[2]), *a[3:7]
    h0, c0 = ((a[1][0], a[1][1]) if a[1] else (None, None)) if kind == "lstm" else (a[1], None)
    return a[0], h0, c0, list(a[2]), a[3], a[4], a[7], a[8]


def _convert(node, imp, kind: str) -> relax.Var:
    """The layers' loops, and (output, h_n[, c_n]) as the op returns them."""
    x, h_all, c_all, params, has_biases, layers, bidirectional, batch_first = _args(node, imp, kind)
    has_biases, layers, bidirectional, batch_first = bool(has_biases), int(layers), bool(bidirectional), bool(batch_first)
    bb = imp.block_builder
    if batch_first:
        x = bb.emit(relax.op.permute_dims(x, [1, 0, 2]))
    b = _static(imp.shape_of(x))[1]
    per = 4 if has_biases else 2
    dirs = 2 if bidirectional else 1
    hs, cs = [], []
    for layer in range(layers):
        ys = []
        for d in range(dirs):
            p = params[(layer * dirs + d) * per:(layer * dirs + d + 1) * per]
            w_ih, w_hh = p[0], p[1]
            b_ih, b_hh = (p[2], p[3]) if has_biases else (None, None)
            h = _static(imp.shape_of(w_hh))[1]
            i = layer * dirs + d
            h0 = _initial(imp, h_all, i, b, h)
            c0 = _initial(imp, c_all, i, b, h) if kind == "lstm" else None
            y, hn, cn = _layer(imp, kind, x, w_ih, w_hh, b_ih, b_hh, h0, c0, reverse=d == 1)
            ys.append(y)
            hs.append(hn)
            cs.append(cn)
        x = ys[0] if dirs == 1 else bb.emit(relax.op.concat(ys, axis=2))
    out = bb.emit(relax.op.permute_dims(x, [1, 0, 2])) if batch_first else x
    h_n = bb.emit(relax.op.stack(hs, axis=0))
    if kind == "lstm":
        return bb.emit(relax.Tuple([out, h_n, bb.emit(relax.op.stack(cs, axis=0))]))
    return bb.emit(relax.Tuple([out, h_n]))


def lstm(node, imp) -> relax.Var:
    return _convert(node, imp, "lstm")


def gru(node, imp) -> relax.Var:
    return _convert(node, imp, "gru")


# by the op's __name__: aten.lstm.input, aten.gru.input, leka::lstm (lstm.default), leka::gru (gru.default)
CONVERTERS: dict[str, Any] = {"lstm.input": lstm, "gru.input": gru, "lstm.default": lstm, "gru.default": gru}


# ---------------------------------------------------------------------------- export as one op each
# torch.export keeps `aten.lstm` as one node, but its fake-tensor pass runs PyTorch's decomposition of
# it, every time step unrolled: a minute for KernelBench's 6 x 512-step LSTM, again in
# `run_decompositions`. So for the export, each nn.LSTM / nn.GRU is swapped for a module calling a custom
# op whose fake kernel only computes the output shapes; the op runs the same ATen kernel eagerly.

def _register_ops():
    import torch

    # schemas written out: this module's annotations are strings (`from __future__ import annotations`)
    @torch.library.custom_op("leka::lstm", mutates_args=(), schema=(
        "(Tensor x, Tensor h0, Tensor c0, Tensor[] params, bool has_biases, int num_layers, bool bidirectional, "
        "bool batch_first) -> (Tensor, Tensor, Tensor)"))
    def lstm_op(x, h0, c0, params, has_biases, num_layers, bidirectional, batch_first):
        out, h, c = torch.lstm(x, (h0, c0), params, has_biases, num_layers, 0.0, False, bidirectional, batch_first)
        return out, h, c

    @lstm_op.register_fake
    def _(x, h0, c0, params, has_biases, num_layers, bidirectional, batch_first):
        s, b = (x.shape[1], x.shape[0]) if batch_first else (x.shape[0], x.shape[1])
        d, h = (2 if bidirectional else 1), h0.shape[-1]
        out = x.new_empty((b, s, d * h) if batch_first else (s, b, d * h))
        return out, h0.new_empty(h0.shape), c0.new_empty(c0.shape)

    @torch.library.custom_op("leka::gru", mutates_args=(), schema=(
        "(Tensor x, Tensor h0, Tensor[] params, bool has_biases, int num_layers, bool bidirectional, "
        "bool batch_first) -> (Tensor, Tensor)"))
    def gru_op(x, h0, params, has_biases, num_layers, bidirectional, batch_first):
        out, h = torch.gru(x, h0, params, has_biases, num_layers, 0.0, False, bidirectional, batch_first)
        return out, h

    @gru_op.register_fake
    def _(x, h0, params, has_biases, num_layers, bidirectional, batch_first):
        s, b = (x.shape[1], x.shape[0]) if batch_first else (x.shape[0], x.shape[1])
        d, h = (2 if bidirectional else 1), h0.shape[-1]
        out = x.new_empty((b, s, d * h) if batch_first else (s, b, d * h))
        return out, h0.new_empty(h0.shape)

    return lstm_op, gru_op


_OPS: tuple | None = None


def _ops():
    global _OPS
    if _OPS is None:
        _OPS = _register_ops()
    return _OPS


def _as_op_module(rnn):
    """A module that runs `rnn` (nn.LSTM / nn.GRU, unbatched input excluded) as one custom op."""
    import torch

    lstm_op, gru_op = _ops()
    is_lstm = isinstance(rnn, torch.nn.LSTM)

    class AsOp(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = rnn

        def __getattr__(self, name: str):  # the model may read the layer's settings (`self.rnn.batch_first`)
            try:
                return super().__getattr__(name)
            except AttributeError:
                return getattr(self._modules["rnn"], name)

        def forward(self, x, hx=None):
            m = self.rnn
            d = 2 if m.bidirectional else 1
            b = x.shape[0] if m.batch_first else x.shape[1]
            zeros = x.new_zeros((m.num_layers * d, b, m.hidden_size))
            params = list(m._flat_weights)
            if is_lstm:
                h0, c0 = hx if hx is not None else (zeros, zeros)
                out, h, c = lstm_op(x, h0, c0, params, m.bias, m.num_layers, m.bidirectional, m.batch_first)
                return out, (h, c)
            out, h = gru_op(x, hx if hx is not None else zeros, params, m.bias, m.num_layers, m.bidirectional,
                            m.batch_first)
            return out, h

    return AsOp()


class recurrent_as_ops:  # noqa: N801 - a context manager used as `with recurrent_as_ops(model):`
    """Within the block, every nn.LSTM / nn.GRU of `model` (no projection, not in training) runs as one
    custom op; the original modules are put back after."""

    def __init__(self, model):
        self.model, self.swapped = model, []

    def __enter__(self):
        import torch

        for name, m in list(self.model.named_modules()):
            if type(m) in (torch.nn.LSTM, torch.nn.GRU) and not getattr(m, "proj_size", 0) and not m.training:
                parent = self.model.get_submodule(name.rpartition(".")[0]) if "." in name else self.model
                child = name.rpartition(".")[2]
                if parent is m:
                    continue  # the model itself is the RNN: nothing to swap it in
                parent._modules[child] = _as_op_module(m)
                self.swapped.append((parent, child, m))
        return self

    def __exit__(self, *exc):
        for parent, child, m in self.swapped:
            parent._modules[child] = m
        return False
