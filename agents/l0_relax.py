"""L0 rule agent: graph passes for the Relax module, ranked by what the text shows.

Order (docs/DESIGN.md, "Agents"): BatchNorm folding first (it removes whole kernels), clip -> relu/minimum
before NHWC (clip has no layout rule and would be wrapped in transposes), NHWC for conv graphs on
CPU (with a dense KxK conv, NHWC with HWIO weights first: the x86 micro-kernel's layout, issue 19),
1x1 conv -> matmul (after NHWC), parallel-matmul combining for attention / MLP projections,
then fusion. A pass is skipped when its digest is in `context.tried` or when, applied to the bound
module, it leaves the module structurally unchanged.
"""

from __future__ import annotations

import re

from leka import tvm_adapter as A
from leka.backends import get_backend
from leka.core.protocols import AgentContext
from leka.core.types import Edit, edit_digest

_CONV = re.compile(r"R\.nn\.conv2d\(([^)]*)\)")


def _conv_calls(text: str) -> list[str]:
    return _CONV.findall(text)


def _has_1x1_conv(text: str) -> bool:
    """A conv2d whose kernel (lifted parameter or binding) has 1x1 spatial extent."""
    shapes = dict(re.findall(r"\b(\w+): R\.Tensor\(\(([\d, ]+)\)", text))
    for args in _conv_calls(text):
        parts = [p.strip() for p in args.split(",")]
        if len(parts) < 2:
            continue
        shp = [int(x) for x in shapes.get(parts[1], "").replace(" ", "").split(",") if x]
        if len(shp) != 4:
            continue
        layout = re.search(r'kernel_layout="(\w+)"', args)
        kl = layout.group(1) if layout else "OIHW"
        hw = [shp[kl.index("H")], shp[kl.index("W")]] if "H" in kl and "W" in kl else []
        groups = re.search(r"groups=(\d+)", args)
        if hw == [1, 1] and (groups is None or groups.group(1) == "1"):
            return True
    return False


def _has_dense_kxk_conv(text: str) -> bool:
    """A conv2d with groups 1 and a spatial kernel larger than 1x1 (the GEMM-like x86 conv)."""
    shapes = dict(re.findall(r"\b(\w+): R\.Tensor\(\(([\d, ]+)\)", text))
    for args in _conv_calls(text):
        parts = [p.strip() for p in args.split(",")]
        shp = [int(x) for x in shapes.get(parts[1] if len(parts) > 1 else "", "").replace(" ", "").split(",") if x]
        groups = re.search(r"groups=(\d+)", args)
        if len(shp) == 4 and (groups is None or groups.group(1) == "1"):
            layout = re.search(r'kernel_layout="(\w+)"', args)
            kl = layout.group(1) if layout else "OIHW"
            if shp[kl.index("H")] * shp[kl.index("W")] > 1:
                return True
    return False


def _matmuls_sharing_lhs(text: str) -> bool:
    lhs = re.findall(r"R\.matmul\((\w+),", text)
    return any(lhs.count(x) >= 2 for x in set(lhs))


def rank_passes(text: str, backend: str = "llvm") -> list[tuple[str, str]]:
    """(pass name, reason) in the order the rule would try them, from the Relax text alone."""
    out: list[tuple[str, str]] = []
    if re.search(r"R\.power\(\w+, R\.const\((2|0\.5)", text):
        out.append(("pow_to_multiply", "power with exponent 2 (or 0.5): x*x (sqrt) is exact and cheaper; "
                                       "CUDA's fast powf gives NaN for negative bases"))
    if re.search(r"R\.topk\([^)]*\bk=1\b", text):
        out.append(("topk1_to_max", "topk with k=1 (a max over an axis) is a sort per row in TVM: max / argmax "
                                    "stream the row once"))
    slow = sorted(set(re.findall(r"R\.(exp|tanh|erf|nn\.softmax|nn\.gelu_tanh|nn\.gelu)\(", text)))
    if slow and not get_backend(backend).gpu:  # CPU vector units: an exact exp is one libm call per lane
        out.append(("fast_math", f"{', '.join(slow)} on a CPU: the exact functions run one libm call per vector "
                                 "lane; polynomial approximations vectorise (within the fp32 tolerance)"))
    convs = _conv_calls(text)
    n_conv = len(convs)
    if "R.nn.batch_norm" in text:
        if n_conv:
            out.append(("fold_batchnorm", "batch_norm after conv2d: fold it into the conv weights and a bias"))
        else:
            out.append(("decompose_ops", "batch_norm without a conv to fold into: decompose to mul/add"))
    nchw = [c for c in convs if 'data_layout="NHWC"' not in c]
    if not get_backend(backend).gpu and nchw:  # layout rules for CPU vector units
        if "R.clip" in text:
            out.append(("clip_to_relu_min", "clip (ReLU6) has no layout rule: rewrite before NHWC"))
        if _has_dense_kxk_conv(text):
            out.append(("convert_layout_nhwc_hwio", f"{len(nchw)} NCHW conv2d on CPU, dense KxK among them: "
                                                     "NHWC with the weight pre-packed to HWIO once puts output "
                                                     "channels contiguous in output and weight (the x86 conv "
                                                     "micro-kernel: broadcast input x weight vector)"))
        out.append(("convert_layout_nhwc", f"{len(nchw)} NCHW conv2d on CPU: channels-last vectorises "
                                           "over channels"))
    if n_conv and _has_1x1_conv(text):
        out.append(("conv1x1_to_matmul", "1x1 conv2d is a GEMM: reshape + matmul gets the GEMM schedules"))
    if _matmuls_sharing_lhs(text):
        out.append(("combine_parallel_matmul", "matmuls sharing one input (q/k/v, gate/up): one wider GEMM"))
    rhs = re.findall(r"^\s*\w+: R\.\w+\(.*?\) = (R\..*)$", text, flags=re.M)
    if len(rhs) != len(set(rhs)):
        out.append(("eliminate_common_subexpr", "the same op on the same inputs is computed more than once"))
    if "R.call_tir" not in text and "fused_" not in text:
        out.append(("fuse", "make the operator fusion explicit in L0 (FuseOps + FuseTIR)"))
    return out


class RuleL0Agent:
    level = "L0"

    def __init__(self, backend: str = "llvm", verify: bool = True, root_params=None):
        self.backend = backend
        self.verify = verify
        self.root_params = root_params

    def _known_passes(self) -> set[str]:
        try:
            from leka.ir import edits

            return set(getattr(edits, "L0_PASSES", {})) or set(A.L0_PASS_FNS)
        except Exception:  # noqa: BLE001 - the IR layer is optional for ranking
            return set(getattr(A, "L0_PASS_FNS", {}))

    def _changes(self, candidate, name: str, target) -> bool:
        """Would the pass change the bound module? (True when it cannot be checked here.)"""
        fn = getattr(A, "L0_PASS_FNS", {}).get(name)
        if fn is None:
            return True
        from leka import ir

        try:
            mod = ir.relax_module(candidate, ir.candidate_params(candidate, self.root_params))
            return not A.structural_equal(fn(mod, target), mod)
        except Exception:  # noqa: BLE001 - a pass that fails here is left to the IR layer to report
            return True

    def propose(self, candidate, context: AgentContext) -> list[Edit]:
        known = self._known_passes()
        target = A.make_target(self.backend)
        edits: list[Edit] = []
        for name, why in rank_passes(candidate.relax_text, self.backend):
            if known and name not in known:
                continue
            e = Edit(level="L0", kind="pass", payload={"name": name}, rationale=why)
            if edit_digest(e) in context.tried:
                continue
            if self.verify and not self._changes(candidate, name, target):
                continue
            edits.append(e)
            if len(edits) >= max(1, context.variants):
                break
        return edits
