# from tvm.script import ir as I
# from tvm.script import tirx as T
# from tvm.tirx.layout import Axis
# from tvm.script import relax as R

@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def fused_add_relu(x: T.Buffer((T.int64(4), T.int64(8)), "float32"), b: T.Buffer((T.int64(8),), "float32"), compute_intermediate: T.Buffer((T.int64(4), T.int64(8)), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        T_add_intermediate = T.sblock_alloc_buffer((T.int64(4), T.int64(8)))
        for ax0, ax1 in T.grid(T.int64(4), T.int64(8)):
            with T.sblock("T_add"):
                v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(x[v_ax0, v_ax1], b[v_ax1])
                T.writes(T_add_intermediate[v_ax0, v_ax1])
                T_add_intermediate[v_ax0, v_ax1] = x[v_ax0, v_ax1] + b[v_ax1]
        for i0, i1 in T.grid(T.int64(4), T.int64(8)):
            with T.sblock("compute"):
                v_i0, v_i1 = T.axis.remap("SS", [i0, i1])
                T.reads(T_add_intermediate[v_i0, v_i1])
                T.writes(compute_intermediate[v_i0, v_i1])
                compute_intermediate[v_i0, v_i1] = T.max(T_add_intermediate[v_i0, v_i1], T.float32(0.0))

    @R.function
    def main(x: R.Tensor((4, 8), dtype="float32"), b: R.Tensor((8,), dtype="float32")) -> R.Tensor((4, 8), dtype="float32"):
        cls = Module
        with R.dataflow():
            gv = R.call_tir(cls.fused_add_relu, (x, b), out_ty=R.Tensor((4, 8), dtype="float32"))
            R.output(gv)
        return gv