"""Bounded text views of a candidate for agents: Relax text, one PrimFunc's TIR, one kernel's source.

Every view is cut to `max_chars` by eliding the middle with a `... [N lines elided] ...` marker, so a
prompt never grows with the model.
"""

from __future__ import annotations

import re
from typing import Any

from leka import ir
from leka import tvm_adapter as A
from leka.backends import get_backend, l2_language
from leka.core.text import elide
from leka.ir import Candidate
from leka.ir import l2 as L2
from leka.ir.classify import classify


def relax_view(c: Candidate, max_chars: int = 12000) -> str:
    return elide(c.relax_text, max_chars)


def state_view(c: Candidate, level: str, max_chars: int = 12000) -> str:
    """A level's state on the candidate (`Candidate.levels`), as JSON: what a registered level's agent
    reads of its own decisions (`{}`: it decided nothing yet)."""
    import json

    st = c.levels.get(level)
    return elide(json.dumps(st.model_dump(mode="json", exclude_none=True) if st is not None else {}, indent=1),
                 max_chars)


def _target(c: Candidate, target):
    return target if target is not None and not isinstance(target, str) else A.make_target(target or c.backend)


def tir_view(c: Candidate, func: str, target=None, max_chars: int = 8000, root_params=None,
             scheduled: bool = True) -> str:
    """The TIR of one PrimFunc as compiled (L1 applied; DLight on GPUs), or unscheduled."""
    layers = ir.lower_layers(c, _target(c, target), root_params)
    funcs = A.prim_funcs(layers.scheduled if scheduled else layers.unscheduled)
    if func not in funcs:
        return f"[no PrimFunc {func!r}; PrimFuncs: {sorted(funcs)}]"
    return elide(funcs[func].script(), max_chars)


def _llvm_excerpt(ll: str, func: str) -> str:
    """The `define`s of one kernel (TVM emits the packed wrapper and a `_compute_` body)."""
    out = []
    for m in re.finditer(r"^define [^\n]*@([\w.$]+)\(", ll, flags=re.M):
        if func in m.group(1):
            end = ll.find("\n}\n", m.start())
            out.append(ll[m.start(): end + 2 if end > 0 else len(ll)])
    return "\n\n".join(out)


def source_view(c: Candidate, kernel: str, target=None, max_chars: int = 8000, root_params=None,
                fmt: str = "ll") -> str:
    """CPU: that PrimFunc's LLVM IR (fmt "ll") or assembly ("asm"); CUDA / OpenCL: its kernel text
    (L2 overrides spliced in). The PrimFunc is compiled alone, so this is cheap."""
    tgt = _target(c, target)
    layers = ir.lower_layers(c, tgt, root_params)
    funcs = A.prim_funcs(layers.scheduled)
    if kernel not in funcs:
        return f"[no PrimFunc {kernel!r}; PrimFuncs: {sorted(funcs)}]"
    key = layers.l2_keys[kernel]
    entry = c.l2.get(key)
    backend = tgt.kind.name
    if entry is not None and l2_language(entry.language).linked:
        return elide(f"// L2 override ({entry.language}, entry {entry.entry})\n{entry.text}", max_chars)
    f = funcs[kernel]
    if not get_backend(backend).gpu:  # the kernel is host code
        rt = A.build_prim_func(f, tgt, name=kernel)
        src = A.runtime_source(rt, fmt)
        if fmt == "ll":
            src = _llvm_excerpt(src, kernel) or src
        return elide(src, max_chars)
    rt = A.build_prim_func(A.mark_scheduled(f), tgt, name=kernel)
    src = A.runtime_source(rt)
    name = entry.entry if entry is not None and entry.entry else f"{kernel}_kernel"
    if entry is not None:
        src, _ = L2.splice_kernel(src, name, entry.text, backend)
    names = [n for n in L2.kernel_names(src, backend) if n.startswith(kernel)]
    texts = [L2.kernel_text(src, n, backend) or "" for n in names]
    return elide("\n\n".join(texts) or src, max_chars)


def kernel_table(c: Candidate, target=None, root_params=None) -> list[dict[str, Any]]:
    """One row per PrimFunc: name, L1 key, L2 key, its kind (`leka.ir.classify`), whether an entry applies."""
    layers = ir.lower_layers(c, _target(c, target), root_params)
    rows = []
    for name, f in A.prim_funcs(layers.unscheduled).items():
        k1, k2 = layers.l1_keys[name], layers.l2_keys.get(name, "")
        rows.append({"name": name, "l1_key": k1, "l2_key": k2, "pattern": classify(f),
                     "buffers": [f"{list(s)} {d}" for _, s, d in A.buffer_signature(f)],
                     "has_l1": k1 in c.l1, "has_l2": k2 in c.l2})
    return rows


def kernel_table_text(c: Candidate, target=None, root_params=None) -> str:
    rows = kernel_table(c, target, root_params)
    lines = [f"{'name':48} {'pattern':24} L1 L2  l1_key"]
    for r in rows:
        lines.append(f"{r['name'][:48]:48} {r['pattern'][:24]:24} {'x' if r['has_l1'] else '-':2} "
                     f"{'x' if r['has_l2'] else '-':3} {r['l1_key']}")
    return "\n".join(lines)
