# from tvm.script import ir as I
# from tvm.script import tirx as T
# from tvm.tirx.layout import Axis
# from tvm.script import relax as R

@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def fused_conv1d_add(x: T.Buffer((T.int64(1), T.int64(144), T.int64(100)), "float32"), param_0: T.Buffer((T.int64(144), T.int64(1), T.int64(15)), "float32"), param_1: T.Buffer((T.int64(1), T.int64(144), T.int64(1)), "float32"), T_add_intermediate: T.Buffer((T.int64(1), T.int64(144), T.int64(100)), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        pad_temp = T.sblock_alloc_buffer((T.int64(1), T.int64(144), T.int64(114)))
        group_conv1d_ncw_intermediate = T.sblock_alloc_buffer((T.int64(1), T.int64(144), T.int64(100)))
        for i0, i1, i2 in T.grid(T.int64(1), T.int64(144), T.int64(114)):
            with T.sblock("pad_temp"):
                v_i0, v_i1, v_i2 = T.axis.remap("SSS", [i0, i1, i2])
                T.reads(x[v_i0, v_i1, v_i2 - T.int64(7)])
                T.writes(pad_temp[v_i0, v_i1, v_i2])
                pad_temp[v_i0, v_i1, v_i2] = T.if_then_else(T.int64(7) <= v_i2 and v_i2 < T.int64(107), x[v_i0, v_i1, v_i2 - T.int64(7)], T.float32(0.0))
        for nn, ff, yy, rc, ry in T.grid(T.int64(1), T.int64(144), T.int64(100), T.int64(1), T.int64(15)):
            with T.sblock("group_conv1d_ncw"):
                v_nn, v_ff, v_yy, v_rc, v_ry = T.axis.remap("SSSRR", [nn, ff, yy, rc, ry])
                T.reads(pad_temp[v_nn, v_ff + v_rc, v_yy + v_ry], param_0[v_ff, v_rc, v_ry])
                T.writes(group_conv1d_ncw_intermediate[v_nn, v_ff, v_yy])
                with T.init():
                    group_conv1d_ncw_intermediate[v_nn, v_ff, v_yy] = T.float32(0.0)
                group_conv1d_ncw_intermediate[v_nn, v_ff, v_yy] = group_conv1d_ncw_intermediate[v_nn, v_ff, v_yy] + pad_temp[v_nn, v_ff + v_rc, v_yy + v_ry] * param_0[v_ff, v_rc, v_ry]
        for ax0, ax1, ax2 in T.grid(T.int64(1), T.int64(144), T.int64(100)):
            with T.sblock("T_add"):
                v_ax0, v_ax1, v_ax2 = T.axis.remap("SSS", [ax0, ax1, ax2])
                T.reads(group_conv1d_ncw_intermediate[v_ax0, v_ax1, v_ax2], param_1[v_ax0, v_ax1, T.int64(0)])
                T.writes(T_add_intermediate[v_ax0, v_ax1, v_ax2])
                T_add_intermediate[v_ax0, v_ax1, v_ax2] = group_conv1d_ncw_intermediate[v_ax0, v_ax1, v_ax2] + param_1[v_ax0, v_ax1, T.int64(0)]

    @R.function
    def main(x: R.Tensor((1, 144, 100), dtype="float32"), c0: R.Tensor((144, 1, 15), dtype="float32"), c1: R.Tensor((1, 144, 1), dtype="float32")) -> R.Tuple(R.Tensor((1, 144, 100), dtype="float32")):
        cls = Module
        with R.dataflow():
            lv = R.call_tir(cls.fused_conv1d_add, (x, c0, c1), out_ty=R.Tensor((1, 144, 100), dtype="float32"))
            gv: R.Tuple(R.Tensor((1, 144, 100), dtype="float32")) = (lv,)
            R.output(gv)
        return gv