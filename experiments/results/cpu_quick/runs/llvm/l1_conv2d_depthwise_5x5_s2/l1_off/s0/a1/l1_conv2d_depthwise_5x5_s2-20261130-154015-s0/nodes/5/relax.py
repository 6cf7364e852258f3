# from tvm.script import ir as I
# from tvm.script import tirx as T
# from tvm.tirx.layout import Axis
# from tvm.script import relax as R

@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def conv2d(x: T.Buffer((T.int64(1), T.int64(144), T.int64(56), T.int64(56)), "float32"), B: T.Buffer((T.int64(144), T.int64(1), T.int64(5), T.int64(5)), "float32"), group_conv2d_nchw: T.Buffer((T.int64(1), T.int64(144), T.int64(28), T.int64(28)), "float32")):
        T.func_attr({"op_pattern": 4, "tirx.noalias": True})
        # with T.sblock("root"):
        pad_temp = T.sblock_alloc_buffer((T.int64(1), T.int64(144), T.int64(60), T.int64(60)))
        for i0, i1, i2, i3 in T.grid(T.int64(1), T.int64(144), T.int64(60), T.int64(60)):
            with T.sblock("pad_temp"):
                v_i0, v_i1, v_i2, v_i3 = T.axis.remap("SSSS", [i0, i1, i2, i3])
                T.reads(x[v_i0, v_i1, v_i2 - T.int64(2), v_i3 - T.int64(2)])
                T.writes(pad_temp[v_i0, v_i1, v_i2, v_i3])
                pad_temp[v_i0, v_i1, v_i2, v_i3] = T.if_then_else(T.int64(2) <= v_i2 and v_i2 < T.int64(58) and T.int64(2) <= v_i3 and v_i3 < T.int64(58), x[v_i0, v_i1, v_i2 - T.int64(2), v_i3 - T.int64(2)], T.float32(0.0))
        for nn, ff, yy, xx, rc, ry, rx in T.grid(T.int64(1), T.int64(144), T.int64(28), T.int64(28), T.int64(1), T.int64(5), T.int64(5)):
            with T.sblock("group_conv2d_nchw"):
                v_nn, v_ff, v_yy, v_xx, v_rc, v_ry, v_rx = T.axis.remap("SSSSRRR", [nn, ff, yy, xx, rc, ry, rx])
                T.reads(pad_temp[v_nn, v_ff + v_rc, v_yy * T.int64(2) + v_ry, v_xx * T.int64(2) + v_rx], B[v_ff, v_rc, v_ry, v_rx])
                T.writes(group_conv2d_nchw[v_nn, v_ff, v_yy, v_xx])
                with T.init():
                    group_conv2d_nchw[v_nn, v_ff, v_yy, v_xx] = T.float32(0.0)
                group_conv2d_nchw[v_nn, v_ff, v_yy, v_xx] = group_conv2d_nchw[v_nn, v_ff, v_yy, v_xx] + pad_temp[v_nn, v_ff + v_rc, v_yy * T.int64(2) + v_ry, v_xx * T.int64(2) + v_rx] * B[v_ff, v_rc, v_ry, v_rx]

    @R.function
    def main(x: R.Tensor((1, 144, 56, 56), dtype="float32"), c0: R.Tensor((144, 1, 5, 5), dtype="float32")) -> R.Tuple(R.Tensor((1, 144, 28, 28), dtype="float32")):
        cls = Module
        with R.dataflow():
            lv = R.call_tir(cls.conv2d, (x, c0), out_ty=R.Tensor((1, 144, 28, 28), dtype="float32"))
            gv: R.Tuple(R.Tensor((1, 144, 28, 28), dtype="float32")) = (lv,)
            R.output(gv)
        return gv