"""L2 rule agent for OpenCL: source edits of the generated OpenCL C of the hottest kernels.

Each edit is the whole `<primfunc>_kernel` function (spliced into TVM's generated source at compile
time, leka/l2.py), changed in ways TVM's codegen does not do:
- `reqd_work_group_size(x, y, z)` from the schedule's threadIdx extents: the compiler then knows the
  work-group size (Mali / Adreno size registers and barriers for it; PoCL specialises its work-group
  loops);
- the native math builtins (`native_exp`, `native_log`, `native_sqrt`, `native_rsqrt`, ...):
  faster, less precise; the evaluator's tolerance decides.
"""

from __future__ import annotations

import re

from agents.common import near_roof, rank_kernels
from leka import ir
from leka import tvm_adapter as A
from leka.core.protocols import AgentContext
from leka.core.types import Edit, edit_digest
from leka.ir import l2 as L2

_NATIVE = ("exp", "log", "sqrt", "rsqrt", "exp2", "log2", "sin", "cos")
_THREAD = re.compile(r'thread_binding\((?:T\.int(?:32|64)\()?(\d+)\)?,\s*thread="threadIdx\.([xyz])"'
                     r'|launch_thread\("threadIdx\.([xyz])",\s*(?:T\.int(?:32|64)\()?(\d+)')


def work_group_size(func) -> tuple[int, int, int] | None:
    """The (x, y, z) threadIdx extents of a scheduled PrimFunc; None when it binds no threads."""
    ext = {}
    for m in _THREAD.finditer(func.script()):
        n, axis = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))
        ext[axis] = max(ext.get(axis, 1), int(n))
    if not ext:
        return None
    return ext.get("x", 1), ext.get("y", 1), ext.get("z", 1)


def with_work_group_size(text: str, kernel: str, wg: tuple[int, int, int]) -> str | None:
    if "reqd_work_group_size" in text:
        return None
    new, n = re.subn(r"__kernel\s+void\s+" + re.escape(kernel) + r"\s*\(",
                     f"__kernel void __attribute__((reqd_work_group_size({wg[0]}, {wg[1]}, {wg[2]}))) {kernel}(",
                     text, count=1)
    return new if n else None


def with_native_math(text: str) -> str | None:
    new, n = re.subn(r"(?<![\w.])(" + "|".join(_NATIVE) + r")\(", r"native_\1(", text)
    return new if n else None


def kernel_source(func, name: str, target) -> str | None:
    """The generated OpenCL C of `<name>_kernel` for one scheduled PrimFunc (compiled alone)."""
    rt = A.build_prim_func(A.mark_scheduled(func), target, name=name)
    return L2.kernel_text(A.runtime_source(rt), f"{name}_kernel", "opencl")


def opencl_source_variants(func, name: str, target) -> list[tuple[str, str]]:
    text = kernel_source(func, name, target)
    if text is None:
        return []
    kernel = f"{name}_kernel"
    out: list[tuple[str, str]] = []
    wg = work_group_size(func)
    sized = with_work_group_size(text, kernel, wg) if wg else None
    native = with_native_math(text)
    if sized:
        out.append((f"reqd_work_group_size{wg}: the compiler knows the work-group size", sized))
    if native:
        out.append(("native_* math builtins (faster, less precise; checked by the evaluator)", native))
    if sized and native:
        both = with_native_math(sized)
        if both:
            out.append((f"reqd_work_group_size{wg} and native_* math builtins", both))
    return out


class OpenCLRuleL2Agent:
    level = "L2"

    def __init__(self, backend: str = "opencl", max_kernels: int = 3, root_params=None):
        self.backend = backend
        self.max_kernels = max_kernels
        self.root_params = root_params

    def propose(self, candidate, context: AgentContext) -> list[Edit]:
        target = A.make_target("opencl")
        layers = ir.lower_layers(candidate, target, self.root_params)
        funcs = A.prim_funcs(layers.scheduled)
        edits: list[Edit] = []
        tried = 0
        for name, score in rank_kernels(funcs, context.profile, near_roof=near_roof(context)):
            if tried >= self.max_kernels or len(edits) >= max(1, context.variants):
                break
            if layers.l2_keys.get(name) in candidate.l2:
                continue
            tried += 1
            try:
                variants = opencl_source_variants(funcs[name], name, target)
            except Exception:  # noqa: BLE001 - a kernel whose source cannot be generated alone is skipped
                continue
            for why, text in variants:
                e = Edit(level="L2", kind="source", target=name,
                         payload={"language": "opencl", "text": text, "entry": f"{name}_kernel"},
                         rationale=f"{name} (score {score:.3g}): {why}")
                if edit_digest(e) not in context.tried:
                    edits.append(e)
        return edits[: max(1, context.variants)]
