"""Import: torch.export -> Relax, constants lifted to parameters, TVMScript text <-> modules."""

from __future__ import annotations

import re
import threading
import types
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np
import tvm
import tvm_ffi
from tvm import relax
from tvm.relax.frontend.torch import from_exported_program

from leka.core.script_guard import NAMESPACES, check_tvmscript
from leka.tvm_adapter.errors import ImportFailure, first_line

# bumped whenever the importer's output changes for the same model (cached roots are keyed by it):
# 2 = non-finite constants printed parseably, JSON record where the text is not exact
# 3 = decompositions and custom converters for ops the importer lacks (torch_ops)
IMPORTER_REVISION = 4  # 4 = LSTM / GRU as loops (recurrent.py), select with a negative index


def import_torch(model, inputs: Sequence[Any]) -> tvm.IRModule:
    """torch.export with static shapes, then the Relax importer (weights become constants). Ops the
    importer lacks are decomposed first or converted by `torch_ops` (`CUSTOM_CONVERTERS`); what is
    still missing fails as one line naming the op."""
    import torch

    from leka.tvm_adapter.recurrent import recurrent_as_ops
    from leka.tvm_adapter.torch_ops import CUSTOM_CONVERTERS, decompose_missing

    refuse_stateful_forward(model, inputs)
    try:
        with torch.no_grad(), recurrent_as_ops(model):
            ep = torch.export.export(model, tuple(inputs))
    except Exception as e:  # noqa: BLE001 - any exporter failure is the task's problem, as data
        raise ImportFailure(f"torch.export failed: {type(e).__name__}: {first_line(e)}") from e
    try:
        ep = decompose_missing(ep)
        return from_exported_program(ep, custom_convert_map=CUSTOM_CONVERTERS, run_ep_decomposition=False)
    except Exception as e:  # noqa: BLE001
        msg = str(e)
        ops = _failing_node_ops(e) or sorted(set(re.findall(r"\b(aten\.[\w.]+)", msg)))
        if not ops:  # name the graph's ops that the message mentions, e.g. "linalg_svd"
            ops = sorted({str(n.target) for n in ep.graph.nodes if n.op == "call_function"
                          and str(n.target).split(".")[-2 if str(n.target).count(".") >= 2 else -1] in msg})
        if not ops:  # otherwise every op the importer has no converter for
            ops = unsupported_ops(ep)
        raise ImportFailure(f"Relax import failed{' on ' + ', '.join(ops) if ops else ''}: "
                            f"{type(e).__name__}: {first_line(e)}", ops) from e


def _module_state(model) -> dict[str, Any]:
    """Every tensor the model holds, by dotted name: parameters, buffers and plain tensor attributes
    (`self.hidden = torch.randn(...)`, which torch.export bakes in as a constant)."""
    import torch

    out: dict[str, Any] = {}
    for prefix, m in model.named_modules():
        for k, v in vars(m).items():
            if isinstance(v, torch.Tensor):
                out[f"{prefix}.{k}" if prefix else k] = v
        for k, v in list(m._parameters.items()) + list(m._buffers.items()):
            if v is not None:
                out[f"{prefix}.{k}" if prefix else k] = v
    return out


def _same_tensors(a: Any, b: Any) -> bool:
    import torch

    xs = a if isinstance(a, (tuple, list)) else [a]
    ys = b if isinstance(b, (tuple, list)) else [b]
    return len(xs) == len(ys) and all(
        (x is y) or (isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor) and x.shape == y.shape
                     and torch.equal(x, y)) for x, y in zip(xs, ys, strict=True))


def refuse_stateful_forward(model, inputs: Sequence[Any]) -> None:
    """A task is a pure function of its inputs. torch.export bakes a tensor attribute in as a constant,
    so a model whose `forward` keeps changing its own state (KernelBench's vanilla RNN stores its new
    hidden state in `self.hidden`) would be imported as its first call while PyTorch's reference moves
    on with every call: refused here, in one line naming the attributes. A rebinding to a tensor the model
    already held (`self.c0 = self.h0.to(x.device)`, KernelBench's LSTMs: the same values on every call)
    is accepted. Judged on a copy of the model on the meta device (shapes only: KernelBench's 6 x 512-step
    LSTM would take a minute of real compute); a model that cannot run there (data-dependent Python) is
    run for real, twice, and its state compared after each call."""
    try:
        moved = _meta_state_changes(model, inputs)
    except Exception:  # noqa: BLE001 - not runnable on meta: judge it on real values
        moved = _real_state_changes(model, inputs)
    if moved:
        raise ImportFailure(f"Model.forward changes its own state: its attribute(s) {', '.join(moved[:4])} change "
                            "on every call, so its output depends on how often it ran; a task must be a pure "
                            "function of its inputs (pass the state as an input and return the new one)")


def _meta_state_changes(model, inputs: Sequence[Any]) -> list[str]:
    """The state a forward on a meta copy changes: an in-place write (version counter) or an attribute
    rebound to a tensor the model did not hold before the call (a new result)."""
    import copy

    import torch

    from leka.tvm_adapter.recurrent import recurrent_as_ops

    memo: dict[int, Any] = {}
    for t in _module_state(model).values():
        meta = t.detach().to("meta")
        memo[id(t)] = torch.nn.Parameter(meta, t.requires_grad) if isinstance(t, torch.nn.Parameter) else meta
    twin = copy.deepcopy(model, memo)
    before = {k: (id(v), v._version) for k, v in _module_state(twin).items()}
    held = {i for i, _ in before.values()}
    args = [x.to("meta") if isinstance(x, torch.Tensor) else x for x in inputs]
    with torch.no_grad(), torch.device("meta"), recurrent_as_ops(twin):  # tensors made in forward: meta too
        twin(*args)
    after = _module_state(twin)
    return sorted(k for k in set(before) | set(after)
                  if k not in after or k not in before
                  or (id(after[k]), after[k]._version) != before[k] and not
                  (id(after[k]) in held and id(after[k]) != before[k][0]))


def _real_state_changes(model, inputs: Sequence[Any]) -> list[str]:
    """The state that still differs between the second and the third call (after one call, a rebinding
    that settles is done), or a note that the output changes."""
    import torch

    def sig(state: dict[str, Any]) -> dict[str, tuple[int, int]]:
        return {k: (id(v), v._version) for k, v in state.items()}

    def call():
        return model(*[x.clone() if isinstance(x, torch.Tensor) else x for x in inputs])

    before = sig(_module_state(model))
    with torch.no_grad():
        out1 = call()
        s1 = _module_state(model)
        if sig(s1) == before:
            return []
        s1 = {k: v.clone() for k, v in s1.items()}
        out2 = call()
        s2 = _module_state(model)
    moved = sorted(k for k in set(s1) | set(s2) if k not in s1 or k not in s2 or not _same_tensors(s1[k], s2[k]))
    return moved or ([] if _same_tensors(out1, out2) else ["(its output)"])


def _failing_node_ops(e: BaseException) -> list[str]:
    """The ATen op whose conversion raised: the importer's loop variable `node` in the traceback; where
    a decomposition made that node, the op it came from (`original_aten`) first."""
    tb, node = e.__traceback__, None
    while tb is not None:
        if tb.tb_frame.f_code.co_name == "_translate_fx_graph":
            node = tb.tb_frame.f_locals.get("node")
        tb = tb.tb_next
    if node is None or getattr(node, "op", None) != "call_function":
        return []
    names = [str(node.target)]
    orig = node.meta.get("original_aten") if hasattr(node, "meta") else None
    if orig is not None and str(orig) != names[0]:
        names.insert(0, str(orig))
    return names


def unsupported_ops(ep) -> list[str]:
    from leka.tvm_adapter.torch_ops import importer_table

    table = importer_table()
    ops = set()
    for n in ep.graph.nodes:
        if n.op == "call_function":
            name = getattr(n.target, "__name__", str(n.target))
            if name not in table and name.split(".")[0] not in table:
                ops.add(str(n.target))
    return sorted(ops)


@relax.expr_functor.mutator
class _Lifter(relax.PyExprMutator):
    def __init__(self, mod: tvm.IRModule, prefix: str):
        super().__init__(mod)
        self.vars: list[relax.Var] = []
        self.vals: dict[str, np.ndarray] = {}
        self.prefix = prefix

    def visit_generic_const_(self, c):  # 0.27's hook for R.const
        if len(c.ty.shape) == 0:  # scalars print inline as R.const(x, dtype)
            return c
        v = relax.Var(f"{self.prefix}{len(self.vars)}", c.ty)
        self.vars.append(v)
        self.vals[v.name] = c.value.numpy()
        return v


def lift_consts(mod: tvm.IRModule, func: str = "main", prefix: str = "c") -> tuple[tvm.IRModule, dict[str, np.ndarray]]:
    """Turn every non-scalar constant into a trailing parameter of `func`, so `mod.script()` has no
    `metadata[...]` and re-parses after a textual edit. Values come back via `bind_params`."""
    f = mod[func]
    lifter = _Lifter(mod, prefix)
    body = lifter.visit_expr(f.body)
    nf = relax.Function(list(f.params) + lifter.vars, body, f.ret_ty, f.is_pure, attrs=f.attrs)
    out = tvm.IRModule(dict(mod.functions), attrs=mod.attrs)
    out[mod.get_global_var(func)] = nf
    return out, lifter.vals


# TVMScript prints a scalar non-finite constant as R.const("-inf", "float32"), which its own parser
# rejects ("value has to be scalar or Tensor"); R.const(float("-inf"), "float32") parses to the same
# constant. Every attention block with a -inf mask has one.
_NONFINITE_CONST = re.compile(r'R\.const\("([+-]?(?:inf|nan))", "(\w+)"\)')


def parseable_relax_text(text: str) -> str:
    """TVMScript as printed -> text the TVMScript parser accepts (non-finite scalar constants)."""
    return _NONFINITE_CONST.sub(r'R.const(float("\1"), "\2")', text)


def relax_text(mod: tvm.IRModule) -> str:
    """The agents' view of a Relax module: TVMScript that parses back (`parseable_relax_text`)."""
    return parseable_relax_text(mod.script())


def relax_persisted(mod: tvm.IRModule) -> tuple[str, str | None]:
    """(TVMScript text, TVM's JSON serialisation or None): the JSON only where the text does not parse
    back to a structurally equal module, so that the module round-trips exactly either way."""
    text = relax_text(mod)
    try:
        exact = bool(tvm_ffi.structural_equal(parse_module(text), mod))
    except Exception:  # noqa: BLE001 - a printer/parser gap: the serialisation is the record
        exact = False
    return text, None if exact else tvm.ir.save_json(mod)


def load_relax(text: str, module_json: str | None = None) -> tvm.IRModule:
    """The module a (text, JSON) pair of `relax_persisted` stands for: the JSON when present."""
    if module_json:
        return tvm.ir.load_json(module_json)
    return parse_module(text)


# TVMScript parsing (the IRBuilder's frame stack) and legalization (TE's op_tag scope) keep state in
# process-global Python objects. The evaluator builds the baseline on a second thread while the
# candidate builds, so those two steps are serialised; codegen and linking, the bulk, are not.
PARSE_LOCK = threading.RLock()


# The DSL's modules an attribute chain may pass through: the namespaces and Relax's op groups (`R.nn`,
# `R.image`, ...). Others in reach are the parser's implementation and its imports (`R.parser`, `T.ir`,
# `Tx.functools`, and through them `tvm`, `os`, ...).
_DSL_MODULES = frozenset({
    "tvm.script.parser.ir", "tvm.relax.script.parser", "tvm.tirx.script.parser", "tvm.tirx.script.tile",
    "tvm.tirx.script", "tvm.relax.script.parser.dist",
} | {f"tvm.relax.op.{g}" for g in ("builtin", "ccl", "grad", "image", "memory", "nn", "vision", "vm")})
# Names that act at parse time beyond building IR: a Python function in the module, a new namespace.
_PARSE_TIME_EFFECTS = frozenset({"pyfunc", "register_script_namespace"})


@lru_cache(maxsize=1)
def _script_namespaces() -> dict[str, Any]:
    """TVM's own parse namespace without `tvm` (and through it `tvm.os`), and with builtins reduced to
    `float` (the non-finite constants): a name the text never bound, looked up by TVM's `eval`, then
    finds nothing. `_default_globals` is TVM's (private) default, so a new namespace TVM adds is seen."""
    from tvm.script.parser.core.entry import _default_globals

    ns = {k: v for k, v in _default_globals().items() if k in NAMESPACES}
    ns["__builtins__"] = {"float": float}
    return ns


@lru_cache(maxsize=4096)
def _resolve_chain(chain: tuple[str, ...], as_value: bool) -> str | None:
    """Why the attribute chain `R.nn.conv2d` (as a tuple) may not be used, or None. A DSL module may be
    passed through but not used as a value (`x = R.nn; x.parser` would escape this check)."""
    obj: Any = _script_namespaces().get(chain[0])
    if obj is None:
        return None  # `metadata`: TVM's parser reads it itself
    for name in chain[1:]:
        if name in _PARSE_TIME_EFFECTS:
            return f"{name!r} acts at parse time beyond building IR"
        obj = getattr(obj, name, None)
        if obj is None:
            return None  # not there: TVM's parser says so in its own words
        if isinstance(obj, types.ModuleType) and obj.__name__ not in _DSL_MODULES:
            return f"{name!r} is the module {obj.__name__}, not part of the TVMScript DSL"
    if as_value and isinstance(obj, types.ModuleType):
        return "a namespace may only be used to name what is in it"
    return None


def guarded_from_source(text: str) -> Any:
    """The one way candidate text reaches TVM's parser (issue 26): `check_tvmscript` first (raises
    `ScriptRejected`, a ValueError naming the construct and line), then TVM's parser with the reduced
    namespace. Callers hold PARSE_LOCK."""
    check_tvmscript(text, _resolve_chain)
    return tvm.script.from_source(text, extra_vars=dict(_script_namespaces()))


def parse_module(text: str) -> tvm.IRModule:
    """Relax TVMScript -> module; the printer's own non-finite constants are accepted too."""
    with PARSE_LOCK:
        obj = guarded_from_source(parseable_relax_text(text))
    if isinstance(obj, (tvm.tirx.PrimFunc, relax.Function)):
        return tvm.IRModule({"main": obj})
    return obj


def parse_tir(text: str) -> tvm.tirx.PrimFunc:
    with PARSE_LOCK:
        obj = guarded_from_source(text)
    if isinstance(obj, tvm.IRModule):
        funcs = [f for f in obj.functions.values() if isinstance(f, tvm.tirx.PrimFunc)]
        if len(funcs) != 1:
            raise ValueError(f"expected one PrimFunc in the TIR text, found {len(funcs)}")
        return funcs[0]
    if not isinstance(obj, tvm.tirx.PrimFunc):
        raise ValueError(f"expected a T.prim_func, got {type(obj).__name__}")
    return obj


def bind_params(mod: tvm.IRModule, vals: dict[str, np.ndarray], func: str = "main") -> tvm.IRModule:
    names = {p.name for p in mod[func].params}
    missing = [k for k in vals if k not in names]
    if missing and len(missing) == len(vals):
        return mod
    present = {k: tvm.runtime.tensor(v) for k, v in vals.items() if k in names}
    return relax.transform.BindParams(func, present)(mod)


def output_specs(mod: tvm.IRModule, func: str = "main") -> list[tuple[tuple[int, ...], str]]:
    """(shape, dtype) of each tensor `func` returns, tuples flattened (static shapes)."""
    def walk(ty) -> list[tuple[tuple[int, ...], str]]:
        if isinstance(ty, relax.TupleType):
            return [x for f in ty.fields for x in walk(f)]
        if isinstance(ty, relax.TensorType) and ty.shape is not None:
            return [(tuple(int(s) for s in ty.shape), str(ty.dtype))]
        return []

    return walk(mod[func].ret_ty)


def param_names(mod: tvm.IRModule, func: str = "main") -> list[str]:
    return [p.name for p in mod[func].params]
