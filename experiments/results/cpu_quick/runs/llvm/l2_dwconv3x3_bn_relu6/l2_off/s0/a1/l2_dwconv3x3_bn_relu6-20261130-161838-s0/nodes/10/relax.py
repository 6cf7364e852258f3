# from tvm.script import ir as I
# from tvm.script import tirx as T
# from tvm.tirx.layout import Axis
# from tvm.script import relax as R

@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def fused_conv2d_add_tir_clip(x: T.Buffer((T.int64(1), T.int64(144), T.int64(56), T.int64(56)), "float32"), param_0: T.Buffer((T.int64(144), T.int64(1), T.int64(3), T.int64(3)), "float32"), param_1: T.Buffer((T.int64(1), T.int64(144), T.int64(1), T.int64(1)), "float32"), compute_intermediate: T.Buffer((T.int64(1), T.int64(144), T.int64(56), T.int64(56)), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        pad_temp = T.sblock_alloc_buffer((T.int64(1), T.int64(144), T.int64(58), T.int64(58)))
        group_conv2d_nchw_intermediate = T.sblock_alloc_buffer((T.int64(1), T.int64(144), T.int64(56), T.int64(56)))
        T_add_intermediate = T.sblock_alloc_buffer((T.int64(1), T.int64(144), T.int64(56), T.int64(56)))
        for i0, i1, i2, i3 in T.grid(T.int64(1), T.int64(144), T.int64(58), T.int64(58)):
            with T.sblock("pad_temp"):
                v_i0, v_i1, v_i2, v_i3 = T.axis.remap("SSSS", [i0, i1, i2, i3])
                T.reads(x[v_i0, v_i1, v_i2 - T.int64(1), v_i3 - T.int64(1)])
                T.writes(pad_temp[v_i0, v_i1, v_i2, v_i3])
                pad_temp[v_i0, v_i1, v_i2, v_i3] = T.if_then_else(T.int64(1) <= v_i2 and v_i2 < T.int64(57) and T.int64(1) <= v_i3 and v_i3 < T.int64(57), x[v_i0, v_i1, v_i2 - T.int64(1), v_i3 - T.int64(1)], T.float32(0.0))
        for nn, ff, yy, xx, rc, ry, rx in T.grid(T.int64(1), T.int64(144), T.int64(56), T.int64(56), T.int64(1), T.int64(3), T.int64(3)):
            with T.sblock("group_conv2d_nchw"):
                v_nn, v_ff, v_yy, v_xx, v_rc, v_ry, v_rx = T.axis.remap("SSSSRRR", [nn, ff, yy, xx, rc, ry, rx])
                T.reads(pad_temp[v_nn, v_ff + v_rc, v_yy + v_ry, v_xx + v_rx], param_0[v_ff, v_rc, v_ry, v_rx])
                T.writes(group_conv2d_nchw_intermediate[v_nn, v_ff, v_yy, v_xx])
                with T.init():
                    group_conv2d_nchw_intermediate[v_nn, v_ff, v_yy, v_xx] = T.float32(0.0)
                group_conv2d_nchw_intermediate[v_nn, v_ff, v_yy, v_xx] = group_conv2d_nchw_intermediate[v_nn, v_ff, v_yy, v_xx] + pad_temp[v_nn, v_ff + v_rc, v_yy + v_ry, v_xx + v_rx] * param_0[v_ff, v_rc, v_ry, v_rx]
        for ax0, ax1, ax2, ax3 in T.grid(T.int64(1), T.int64(144), T.int64(56), T.int64(56)):
            with T.sblock("T_add"):
                v_ax0, v_ax1, v_ax2, v_ax3 = T.axis.remap("SSSS", [ax0, ax1, ax2, ax3])
                T.reads(group_conv2d_nchw_intermediate[v_ax0, v_ax1, v_ax2, v_ax3], param_1[v_ax0, v_ax1, T.int64(0), T.int64(0)])
                T.writes(T_add_intermediate[v_ax0, v_ax1, v_ax2, v_ax3])
                T_add_intermediate[v_ax0, v_ax1, v_ax2, v_ax3] = group_conv2d_nchw_intermediate[v_ax0, v_ax1, v_ax2, v_ax3] + param_1[v_ax0, v_ax1, T.int64(0), T.int64(0)]
        for i0, i1, i2, i3 in T.grid(T.int64(1), T.int64(144), T.int64(56), T.int64(56)):
            with T.sblock("compute"):
                v_i0, v_i1, v_i2, v_i3 = T.axis.remap("SSSS", [i0, i1, i2, i3])
                T.reads(T_add_intermediate[v_i0, v_i1, v_i2, v_i3])
                T.writes(compute_intermediate[v_i0, v_i1, v_i2, v_i3])
                compute_intermediate[v_i0, v_i1, v_i2, v_i3] = T.max(T.min(T_add_intermediate[v_i0, v_i1, v_i2, v_i3], T.float32(6.0)), T.float32(0.0))

    @R.function
    def main(x: R.Tensor((1, 144, 56, 56), dtype="float32"), c0: R.Tensor((144, 1, 3, 3), dtype="float32"), c1: R.Tensor((1, 144, 1, 1), dtype="float32")) -> R.Tuple(R.Tensor((1, 144, 56, 56), dtype="float32")):
        cls = Module
        with R.dataflow():
            lv = R.call_tir(cls.fused_conv2d_add_tir_clip, (x, c0, c1), out_ty=R.Tensor((1, 144, 56, 56), dtype="float32"))
            gv: R.Tuple(R.Tensor((1, 144, 56, 56), dtype="float32")) = (lv,)
            R.output(gv)
        return gv