# from tvm.script import ir as I
# from tvm.script import tirx as T
# from tvm.tirx.layout import Axis
# from tvm.script import relax as R

@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def fused_expand_dims_broadcast_to(idx: T.Buffer((T.int64(1), T.int64(100)), "int64"), T_broadcast_to_intermediate: T.Buffer((T.int64(1), T.int64(100), T.int64(4)), "int64")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        expand_dims_intermediate = T.sblock_alloc_buffer((T.int64(1), T.int64(100), T.int64(1)), "int64")
        for i0, i1, i2 in T.grid(T.int64(1), T.int64(100), T.int64(1)):
            with T.sblock("expand_dims"):
                v_i0, v_i1, v_i2 = T.axis.remap("SSS", [i0, i1, i2])
                T.reads(idx[v_i0, v_i1])
                T.writes(expand_dims_intermediate[v_i0, v_i1, v_i2])
                expand_dims_intermediate[v_i0, v_i1, v_i2] = idx[v_i0, v_i1]
        for ax0, ax1, ax2 in T.grid(T.int64(1), T.int64(100), T.int64(4)):
            with T.sblock("T_broadcast_to"):
                v_ax0, v_ax1, v_ax2 = T.axis.remap("SSS", [ax0, ax1, ax2])
                T.reads(expand_dims_intermediate[v_ax0, v_ax1, T.int64(0)])
                T.writes(T_broadcast_to_intermediate[v_ax0, v_ax1, v_ax2])
                T_broadcast_to_intermediate[v_ax0, v_ax1, v_ax2] = expand_dims_intermediate[v_ax0, v_ax1, T.int64(0)]

    @T.prim_func(private=True, s_tir=True)
    def gather(boxes: T.Buffer((T.int64(1), T.int64(2100), T.int64(4)), "float32"), lv1: T.Buffer((T.int64(1), T.int64(100), T.int64(4)), "int64"), T_gather: T.Buffer((T.int64(1), T.int64(100), T.int64(4)), "float32")):
        T.func_attr({"op_pattern": 8, "tirx.noalias": True})
        # with T.sblock("root"):
        for ax0, ax1, ax2 in T.grid(T.int64(1), T.int64(100), T.int64(4)):
            with T.sblock("T_gather"):
                v_ax0, v_ax1, v_ax2 = T.axis.remap("SSS", [ax0, ax1, ax2])
                T.reads(boxes[v_ax0, lv1[v_ax0, v_ax1, v_ax2], v_ax2], lv1[v_ax0, v_ax1, v_ax2])
                T.writes(T_gather[v_ax0, v_ax1, v_ax2])
                T_gather[v_ax0, v_ax1, v_ax2] = boxes[v_ax0, lv1[v_ax0, v_ax1, v_ax2], v_ax2]

    @R.function
    def main(boxes: R.Tensor((1, 2100, 4), dtype="float32"), idx: R.Tensor((1, 100), dtype="int64")) -> R.Tuple(R.Tensor((1, 100, 4), dtype="float32")):
        cls = Module
        with R.dataflow():
            lv = R.call_tir(cls.fused_expand_dims_broadcast_to, (idx,), out_ty=R.Tensor((1, 100, 4), dtype="int64"))
            lv2 = R.call_tir(cls.gather, (boxes, lv), out_ty=R.Tensor((1, 100, 4), dtype="float32"))
            gv: R.Tuple(R.Tensor((1, 100, 4), dtype="float32")) = (lv2,)
            R.output(gv)
        return gv