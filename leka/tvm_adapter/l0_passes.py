"""L0 passes: IRModule (constants bound) -> IRModule, registered by name in `L0_PASSES`."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import tvm
from tvm import relax

from leka.tvm_adapter import const_eval


def _seq(*passes) -> Callable[[tvm.IRModule], tvm.IRModule]:
    """The passes in order; confined where the module holds a candidate's PrimFuncs (FoldConstant)."""
    seq = tvm.transform.Sequential(list(passes))
    target = tvm.target.Target.current(allow_none=True)

    def run(mod: tvm.IRModule) -> tvm.IRModule:
        if target is None:
            return seq(mod)
        with target:
            return seq(mod)

    return lambda mod: const_eval.run_pipeline(run, mod)


def l0_fold_batchnorm(mod: tvm.IRModule, target: tvm.target.Target) -> tvm.IRModule:
    # conv2d(const W) -> batch_norm  =>  conv2d(W') + add(b'); any other batch_norm -> mul/add
    return _seq(relax.transform.FoldBatchnormToConv2D(), relax.transform.DecomposeOpsForInference(),
                relax.transform.FoldConstant(), relax.transform.CanonicalizeBindings(),
                relax.transform.DeadCodeElimination())(mod)


def l0_convert_layout_nhwc(mod: tvm.IRModule, target: tvm.target.Target) -> tvm.IRModule:
    # relax.clip has no layout rule and gets wrapped in permute_dims: run clip_to_relu_min first
    out = relax.transform.ConvertLayout({"relax.nn.conv2d": ["NHWC", "OHWI"]})(mod)
    return _seq(relax.transform.FoldConstant(), relax.transform.CanonicalizeBindings(),
                relax.transform.DeadCodeElimination())(out)


def l0_convert_layout_nhwc_hwio(mod: tvm.IRModule, target: tvm.target.Target) -> tvm.IRModule:
    """conv2d to NHWC data with the weight pre-packed once to HWIO (a constant transform: the permuted
    weight is folded into a new constant). The layout of TVM's x86 NHWC conv schedules: the output
    channel is the innermost axis of both the output and the weight, so a channel-vectorised
    micro-kernel broadcasts one input value against whole weight vectors; with OHWI the weight vector
    would be gathered with a stride of KH*KW*C."""
    out = relax.transform.ConvertLayout({"relax.nn.conv2d": ["NHWC", "HWIO"]})(mod)
    return _seq(relax.transform.FoldConstant(), relax.transform.CanonicalizeBindings(),
                relax.transform.DeadCodeElimination())(out)


def _rewrite_relax(mod: tvm.IRModule, pattern, fn) -> tvm.IRModule:
    from tvm.relax.dpl import rewrite_call

    out = tvm.IRModule({gv: (rewrite_call(pattern, fn, f) if isinstance(f, relax.Function) else f)
                        for gv, f in mod.functions.items()}, attrs=mod.attrs)
    return out


def l0_clip_to_relu_min(mod: tvm.IRModule, target: tvm.target.Target) -> tvm.IRModule:
    from tvm.relax.dpl import is_op, wildcard

    x = wildcard()
    pat = is_op("relax.clip")(x, wildcard(), wildcard())

    def rw(expr, m):
        lo, hi = expr.args[1], expr.args[2]
        lo_v = float(lo.value) if hasattr(lo, "value") else None
        hi_v = float(hi.value) if hasattr(hi, "value") else None
        if lo_v != 0.0 or hi_v is None:
            return expr
        dt = str(m[x].ty.dtype)
        return relax.op.minimum(relax.op.nn.relu(m[x]), relax.const(hi_v, dt))

    return _rewrite_relax(mod, pat, rw)


def l0_pow_to_multiply(mod: tvm.IRModule, target: tvm.target.Target) -> tvm.IRModule:
    """power(x, 2) -> x * x, power(x, 0.5) -> sqrt(x). Exact, cheaper, and it sidesteps CUDA's fast
    `__powf`, which returns NaN for a negative base even with an integral exponent (seen on the H200:
    the RMSNorm's x.pow(2) of a Llama block came out NaN under DLight's default schedules)."""
    from tvm.relax.dpl import is_const, is_op, wildcard

    x, c = wildcard(), is_const()
    pat = is_op("relax.power")(x, c)

    def rw(expr, m):
        v = m[c].value.numpy()
        if v.size != 1:
            return expr
        e = float(v.reshape(()))
        if e == 2.0:
            return relax.op.multiply(m[x], m[x])
        if e == 0.5:
            return relax.op.sqrt(m[x])
        return expr

    return _rewrite_relax(mod, pat, rw)


def l0_conv1x1_to_matmul(mod: tvm.IRModule, target: tvm.target.Target) -> tvm.IRModule:
    """1x1 conv (groups 1, stride 1, no padding, constant weight) -> reshape + matmul + reshape.
    NHWC/OHWI and NHWC/HWIO: (NHW, C) @ (C, O); NCHW/OIHW: (O, C) @ (N, C, HW), broadcast over N."""
    from tvm.relax.dpl import is_const, is_op, wildcard

    x_p, w_p = wildcard(), is_const()
    pat = is_op("relax.nn.conv2d")(x_p, w_p)

    def rw(expr, m):
        a = expr.attrs
        if not (a.groups == 1 and all(int(s) == 1 for s in a.strides) and all(int(p) == 0 for p in a.padding)
                and all(int(d) == 1 for d in a.dilation) and (a.out_layout in ("", a.data_layout))):
            return expr
        w = m[w_p].value.numpy()
        xs = [int(v) for v in m[x_p].ty.shape]
        if a.data_layout == "NHWC" and a.kernel_layout == "OHWI" and w.shape[1] == w.shape[2] == 1:
            N, H, W, C = xs
            n_out = w.shape[0]
            xm = relax.op.reshape(m[x_p], (N * H * W, C))
            wm = relax.const(np.ascontiguousarray(w.reshape(n_out, C).T))
            return relax.op.reshape(relax.op.matmul(xm, wm), (N, H, W, n_out))
        if a.data_layout == "NHWC" and a.kernel_layout == "HWIO" and w.shape[0] == w.shape[1] == 1:
            N, H, W, C = xs
            xm = relax.op.reshape(m[x_p], (N * H * W, C))
            wm = relax.const(np.ascontiguousarray(w.reshape(C, w.shape[3])))
            return relax.op.reshape(relax.op.matmul(xm, wm), (N, H, W, w.shape[3]))
        if a.data_layout == "NCHW" and a.kernel_layout == "OIHW" and w.shape[2] == w.shape[3] == 1:
            N, C, H, W = xs
            n_out = w.shape[0]
            xm = relax.op.reshape(m[x_p], (N, C, H * W))
            wm = relax.const(np.ascontiguousarray(w.reshape(n_out, C)))
            return relax.op.reshape(relax.op.matmul(wm, xm), (N, n_out, H, W))
        return expr

    return _rewrite_relax(mod, pat, rw)


def l0_fuse(mod: tvm.IRModule, target: tvm.target.Target) -> tvm.IRModule:
    # legalize + FuseOps + FuseTIR made explicit in L0 (the PrimFuncs then show in the Relax text)
    with target:
        return _seq(relax.transform.LegalizeOps(), relax.transform.AnnotateTIROpPattern(),
                    relax.transform.FoldConstant(), relax.transform.FuseOps(), relax.transform.FuseTIR(),
                    relax.transform.DeadCodeElimination())(mod)


def l0_decompose_ops(mod: tvm.IRModule, target: tvm.target.Target) -> tvm.IRModule:
    return _seq(relax.transform.DecomposeOpsForInference(), relax.transform.CanonicalizeBindings())(mod)


def l0_fold_constant(mod: tvm.IRModule, target: tvm.target.Target) -> tvm.IRModule:
    return _seq(relax.transform.FoldConstant(), relax.transform.CanonicalizeBindings())(mod)


def l0_dead_code_elimination(mod: tvm.IRModule, target: tvm.target.Target) -> tvm.IRModule:
    return relax.transform.DeadCodeElimination()(mod)


def l0_combine_parallel_matmul(mod: tvm.IRModule, target: tvm.target.Target) -> tvm.IRModule:
    # q/k/v (and gate/up) projections of one input become one wider matmul + split
    return _seq(relax.transform.CombineParallelMatmul(), relax.transform.FoldConstant(),
                relax.transform.CanonicalizeBindings(), relax.transform.DeadCodeElimination())(mod)


def l0_eliminate_common_subexpr(mod: tvm.IRModule, target: tvm.target.Target) -> tvm.IRModule:
    return _seq(relax.transform.EliminateCommonSubexpr(), relax.transform.DeadCodeElimination())(mod)


def l0_fuse_transpose_matmul(mod: tvm.IRModule, target: tvm.target.Target) -> tvm.IRModule:
    return relax.transform.FuseTransposeMatmul()(mod)


def gelu_tanh_fast(x):
    """GELU's tanh form with TVM's rational tanh (topi.fast_tanh): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    from tvm import te, topi

    c = math.sqrt(2.0 / math.pi)
    inner = te.compute(x.shape, lambda *i: x(*i) * (c + (c * 0.044715) * x(*i) * x(*i)), name="gelu_inner")
    t = topi.fast_tanh(inner)
    return te.compute(x.shape, lambda *i: x(*i) * 0.5 * (1.0 + t(*i)), name="gelu_tanh_fast")


def gelu_fast(x):
    """GELU's erf form with topi.fast_erf: 0.5 x (1 + erf(x / sqrt(2)))."""
    from tvm import te, topi

    inner = te.compute(x.shape, lambda *i: x(*i) * (1.0 / math.sqrt(2.0)), name="gelu_inner")
    e = topi.fast_erf(inner)
    return te.compute(x.shape, lambda *i: x(*i) * 0.5 * (1.0 + e(*i)), name="gelu_fast")


@relax.expr_functor.mutator
class _FastGelu(relax.PyExprMutator):
    """relax.nn.gelu_tanh / gelu on float32 -> one call_te each whose tanh / erf is TVM's polynomial."""

    def visit_call_(self, call):
        call = super().visit_call_(call)
        name = getattr(call.op, "name", "")
        if name in ("relax.nn.gelu_tanh", "relax.nn.gelu") and str(getattr(call.args[0].ty, "dtype", "")) == "float32":
            return self.builder_.call_te(gelu_tanh_fast if name == "relax.nn.gelu_tanh" else gelu_fast, call.args[0])
        return call


@tvm.transform.module_pass(opt_level=0, name="LekaFastGelu")
class _FastGeluPass:
    def transform_module(self, mod: tvm.IRModule, ctx) -> tvm.IRModule:
        m = _FastGelu(mod)
        for gv, func in mod.functions_items():
            if isinstance(func, relax.Function):
                m.builder_.update_func(gv, m.visit_expr(func))
        return m.builder_.get()


def l0_fast_math(mod: tvm.IRModule, target: tvm.target.Target) -> tvm.IRModule:
    """exp, tanh, erf, softmax and GELU (both forms) -> TVM's polynomial / rational approximations
    (topi.fast_exp, fast_tanh, fast_erf: range reduction + a polynomial, a few ulp in float32). On llvm
    the exact ones become llvm.exp / tanh intrinsics that LLVM expands to one libm call per lane, so a
    vectorised loop of them runs at scalar speed; the approximations are plain arithmetic and vectorise at
    the target's lanes. Approximate: the evaluator's tolerance (fp32 1e-4) is what judges them."""
    return _seq(_FastGeluPass(), relax.transform.FastMathTransform(), relax.transform.CanonicalizeBindings(),
                relax.transform.DeadCodeElimination())(mod)


@relax.expr_functor.mutator
class _Top1(relax.PyExprMutator):
    """topk(x, k=1) -> (max(x), argmax(x)) along its axis (min / argmin where not largest)."""

    def visit_call_(self, call):
        call = super().visit_call_(call)
        if getattr(call.op, "name", "") != "relax.topk" or int(call.attrs.k) != 1:
            return call
        x, axis, largest = call.args[0], int(call.attrs.axis), bool(call.attrs.largest)
        ret = str(call.attrs.ret_type)
        value = (relax.op.max if largest else relax.op.min)(x, axis=axis, keepdims=True)
        index = relax.op.astype((relax.op.argmax if largest else relax.op.argmin)(x, axis=axis, keepdims=True),
                                str(call.attrs.dtype))
        if ret == "values":
            return value
        if ret == "indices":
            return index
        return relax.Tuple([self.builder_.emit(value), self.builder_.emit(index)])


@tvm.transform.module_pass(opt_level=0, name="LekaTop1ToMax")
class _Top1Pass:
    def transform_module(self, mod: tvm.IRModule, ctx) -> tvm.IRModule:
        m = _Top1(mod)
        for gv, func in mod.functions_items():
            if isinstance(func, relax.Function):
                m.builder_.update_func(gv, m.visit_expr(func))
        return m.builder_.get()


def l0_topk1_to_max(mod: tvm.IRModule, target: tvm.target.Target) -> tvm.IRModule:
    """topk with k = 1 (how torch.export writes `x.max(dim).values`: TVM 0.27 imports amax as topk) is a
    sort per row in TVM's lowering; its value is the row's max (min) exactly, its index argmax (argmin):
    one streaming reduction each. Unused indices are dropped."""
    return _seq(_Top1Pass(), relax.transform.CanonicalizeBindings(), relax.transform.DeadCodeElimination())(mod)


@dataclass(frozen=True)
class L0Pass:
    name: str
    fn: Callable[[tvm.IRModule, tvm.target.Target], tvm.IRModule]
    doc: str  # one line, shown to the LLM agents (leka.llm.prompting)


# name -> pass: what `Edit(level="L0", kind="pass", payload={"name": ...})` may name; prompts list it
L0_PASSES: dict[str, L0Pass] = {p.name: p for p in (
    L0Pass("fold_batchnorm", l0_fold_batchnorm, "fold batch_norm into the preceding conv2d's weights"),
    L0Pass("convert_layout_nhwc", l0_convert_layout_nhwc, "conv2d to NHWC/OHWI layout (run clip_to_relu_min first)"),
    L0Pass("convert_layout_nhwc_hwio", l0_convert_layout_nhwc_hwio,
           "conv2d to NHWC with the weight pre-packed to HWIO once (x86: output channels contiguous in the "
           "weight, so the channel-vectorised micro-kernel loads weight vectors; run clip_to_relu_min first)"),
    L0Pass("conv1x1_to_matmul", l0_conv1x1_to_matmul, "1x1 convolutions become matmuls"),
    L0Pass("clip_to_relu_min", l0_clip_to_relu_min, "clip(x, 0, hi) becomes minimum(relu(x), hi)"),
    L0Pass("pow_to_multiply", l0_pow_to_multiply, "power(x, 2) -> x * x, power(x, 0.5) -> sqrt(x)"),
    L0Pass("topk1_to_max", l0_topk1_to_max, "topk(k=1) -> max / argmax along its axis (exact; a sort per row "
           "otherwise)"),
    L0Pass("fast_math", l0_fast_math, "exp, tanh, erf, softmax, GELU -> polynomial approximations that vectorise "
           "(the exact ones are one libm call per lane on CPUs); approximate within fp32 tolerance"),
    L0Pass("fuse", l0_fuse, "legalize and fuse operators into PrimFuncs in the graph itself"),
    L0Pass("decompose_ops", l0_decompose_ops, "decompose composite ops for inference"),
    L0Pass("fold_constant", l0_fold_constant, "fold constant subexpressions"),
    L0Pass("dead_code_elimination", l0_dead_code_elimination, "drop unused bindings"),
    L0Pass("combine_parallel_matmul", l0_combine_parallel_matmul, "matmuls of one input become one wider matmul"),
    L0Pass("eliminate_common_subexpr", l0_eliminate_common_subexpr, "share repeated subexpressions"),
    L0Pass("fuse_transpose_matmul", l0_fuse_transpose_matmul, "fold a transpose into the matmul that reads it"),
)}

L0_PASS_FNS = {name: p.fn for name, p in L0_PASSES.items()}
