"""The rule-based L2 agent on CUDA: mechanical edits of a generated kernel's CUDA C, spliced back
in at compile time (leka/ir/l2.py). Each keeps the kernel's meaning; the evaluator's checks decide.

- unroll: `#pragma unroll` before every loop of constant trip count (nvcc unrolls only some).
- fast intrinsics: expf/logf/powf/sinf/cosf -> __expf/__logf/__powf/__sinf/__cosf (the SFU's
  approximations; a kernel whose outputs then leave tolerance fails its check, as data).
- read-only cache: loads from float parameters the kernel never writes go through __ldg.
"""

from __future__ import annotations

import re

from agents.common import near_roof, rank_kernels
from leka import tvm_adapter as A
from leka.core.protocols import AgentContext
from leka.core.types import Edit, edit_digest
from leka.ir import l2 as L2

_FAST = {"expf": "__expf", "logf": "__logf", "powf": "__powf", "sinf": "__sinf", "cosf": "__cosf"}
_FOR_CONST = re.compile(r"(?m)^(\s*)(for \([^;]*;[^;]*<\s*\d+\s*;[^)]*\)\s*\{)")


def unroll(text: str) -> str | None:
    if "#pragma unroll" in text:
        return None
    out, n = _FOR_CONST.subn(lambda m: f"{m.group(1)}#pragma unroll\n{m.group(1)}{m.group(2)}", text)
    return out if n else None


def fast_math(text: str) -> str | None:
    out, n = re.subn(r"(?<![\w.])(" + "|".join(_FAST) + r")\(", lambda m: _FAST[m.group(1)] + "(", text)
    return out if n else None


def _subscripts(body: str, name: str) -> list[tuple[int, int, bool]]:
    """(start, end, is_write) of every `name[...]` in `body` (brackets balanced)."""
    out = []
    for m in re.finditer(r"(?<![\w&.>])" + re.escape(name) + r"\[", body):
        depth, j = 0, m.end() - 1
        while j < len(body):
            depth += {"[": 1, "]": -1}.get(body[j], 0)
            if depth == 0:
                break
            j += 1
        rest = body[j + 1:j + 3].lstrip()
        out.append((m.start(), j + 1, rest.startswith("=") and not rest.startswith("==")))
    return out


def ldg(text: str) -> str | None:
    """`p[i]` -> `__ldg(&p[i])` for every float pointer parameter `p` the kernel never writes."""
    head, sep, body = text.partition("{")
    if not sep:
        return None
    n_total = 0
    for p in re.findall(r"float\s*\*\s*__restrict__\s+(\w+)", head):
        subs = _subscripts(body, p)
        if not subs or any(w for _, _, w in subs):
            continue
        for a, b, _ in reversed(subs):
            body = body[:a] + f"__ldg(&{body[a:b]})" + body[b:]
        n_total += len(subs)
    return head + sep + body if n_total else None


RULES = (("unroll", unroll, "#pragma unroll on its constant-trip loops"),
         ("ldg", ldg, "read-only inputs loaded through __ldg (the read-only data cache)"),
         ("fast_math", fast_math, "SFU intrinsics (__expf, __logf, ...) for the transcendental calls"))


class RuleCudaL2Agent:
    level = "L2"

    def __init__(self, backend: str = "cuda", max_kernels: int = 3, root_params=None):
        self.backend = backend
        self.max_kernels = max_kernels
        self.root_params = root_params

    def kernel_source(self, func, name: str, target) -> str | None:
        rt = A.build_prim_func(A.mark_scheduled(func), target, name=name)
        return L2.kernel_text(A.runtime_source(rt), f"{name}_kernel", "cuda")

    def propose(self, candidate, context: AgentContext) -> list[Edit]:
        from leka import ir

        target = A.make_target("cuda")
        layers = ir.lower_layers(candidate, target, self.root_params)
        funcs = A.prim_funcs(layers.scheduled)
        edits: list[Edit] = []
        want = max(1, context.variants)
        for name, score in rank_kernels(funcs, context.profile, near_roof=near_roof(context))[: self.max_kernels]:
            if layers.l2_keys[name] in candidate.l2:
                continue  # already overridden: its text is the agent's, not TVM's
            try:
                text = self.kernel_source(funcs[name], name, target)
            except Exception:  # noqa: BLE001 - a kernel that does not build alone gets no edit
                continue
            if not text:
                continue
            for rule, fn, why in RULES:
                new = fn(text)
                if new is None or new == text:
                    continue
                e = Edit(level="L2", kind="source", target=name,
                         payload={"language": "cuda", "text": new, "entry": f"{name}_kernel"},
                         rationale=f"{name} (score {score:.3g}): {why} [{rule}]")
                if edit_digest(e) in context.tried:
                    continue
                edits.append(e)
                if len(edits) >= want:
                    return edits
        return edits
