# from tvm.script import ir as I
# from tvm.script import tirx as T
# from tvm.tirx.layout import Axis
# from tvm.script import relax as R

@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def expand_dims(lv: T.Buffer((T.int64(1), T.int64(256)), "float32"), expand_dims: T.Buffer((T.int64(1), T.int64(1), T.int64(256)), "float32")):
        T.func_attr({"op_pattern": 1, "tirx.noalias": True})
        # with T.sblock("root"):
        for i0, i1, i2 in T.grid(T.int64(1), T.int64(1), T.int64(256)):
            with T.sblock("expand_dims"):
                v_i0, v_i1, v_i2 = T.axis.remap("SSS", [i0, i1, i2])
                T.reads(lv[v_i0, v_i2])
                T.writes(expand_dims[v_i0, v_i1, v_i2])
                expand_dims[v_i0, v_i1, v_i2] = lv[v_i0, v_i2]

    @T.prim_func(private=True, s_tir=True)
    def fused_conv1d_tir_sigmoid(lv1: T.Buffer((T.int64(1), T.int64(1), T.int64(256)), "float32"), param_0: T.Buffer((T.int64(1), T.int64(1), T.int64(5)), "float32"), compute_intermediate: T.Buffer((T.int64(1), T.int64(1), T.int64(256)), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        pad_temp = T.sblock_alloc_buffer((T.int64(1), T.int64(1), T.int64(260)))
        conv1d_ncw_intermediate = T.sblock_alloc_buffer((T.int64(1), T.int64(1), T.int64(256)))
        for i0, i1, i2 in T.grid(T.int64(1), T.int64(1), T.int64(260)):
            with T.sblock("pad_temp"):
                v_i0, v_i1, v_i2 = T.axis.remap("SSS", [i0, i1, i2])
                T.reads(lv1[v_i0, v_i1, v_i2 - T.int64(2)])
                T.writes(pad_temp[v_i0, v_i1, v_i2])
                pad_temp[v_i0, v_i1, v_i2] = T.if_then_else(T.int64(2) <= v_i2 and v_i2 < T.int64(258), lv1[v_i0, v_i1, v_i2 - T.int64(2)], T.float32(0.0))
        for nn, ff, yy, rc, ry in T.grid(T.int64(1), T.int64(1), T.int64(256), T.int64(1), T.int64(5)):
            with T.sblock("conv1d_ncw"):
                v_nn, v_ff, v_yy, v_rc, v_ry = T.axis.remap("SSSRR", [nn, ff, yy, rc, ry])
                T.reads(pad_temp[v_nn, v_rc, v_yy + v_ry], param_0[v_ff, v_rc, v_ry])
                T.writes(conv1d_ncw_intermediate[v_nn, v_ff, v_yy])
                with T.init():
                    conv1d_ncw_intermediate[v_nn, v_ff, v_yy] = T.float32(0.0)
                conv1d_ncw_intermediate[v_nn, v_ff, v_yy] = conv1d_ncw_intermediate[v_nn, v_ff, v_yy] + pad_temp[v_nn, v_rc, v_yy + v_ry] * param_0[v_ff, v_rc, v_ry]
        for i0, i1, i2 in T.grid(T.int64(1), T.int64(1), T.int64(256)):
            with T.sblock("compute"):
                v_i0, v_i1, v_i2 = T.axis.remap("SSS", [i0, i1, i2])
                T.reads(conv1d_ncw_intermediate[v_i0, v_i1, v_i2])
                T.writes(compute_intermediate[v_i0, v_i1, v_i2])
                compute_intermediate[v_i0, v_i1, v_i2] = T.sigmoid(conv1d_ncw_intermediate[v_i0, v_i1, v_i2])

    @T.prim_func(private=True, s_tir=True)
    def fused_expand_dims1_expand_dims2_multiply(lv4: T.Buffer((T.int64(1), T.int64(256)), "float32"), x: T.Buffer((T.int64(1), T.int64(256), T.int64(28), T.int64(28)), "float32"), T_multiply_intermediate: T.Buffer((T.int64(1), T.int64(256), T.int64(28), T.int64(28)), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        expand_dims_intermediate = T.sblock_alloc_buffer((T.int64(1), T.int64(256), T.int64(1)))
        expand_dims_intermediate_1 = T.sblock_alloc_buffer((T.int64(1), T.int64(256), T.int64(1), T.int64(1)))
        for i0, i1, i2 in T.grid(T.int64(1), T.int64(256), T.int64(1)):
            with T.sblock("expand_dims"):
                v_i0, v_i1, v_i2 = T.axis.remap("SSS", [i0, i1, i2])
                T.reads(lv4[v_i0, v_i1])
                T.writes(expand_dims_intermediate[v_i0, v_i1, v_i2])
                expand_dims_intermediate[v_i0, v_i1, v_i2] = lv4[v_i0, v_i1]
        for i0, i1, i2, i3 in T.grid(T.int64(1), T.int64(256), T.int64(1), T.int64(1)):
            with T.sblock("expand_dims1"):
                v_i0, v_i1, v_i2, v_i3 = T.axis.remap("SSSS", [i0, i1, i2, i3])
                T.reads(expand_dims_intermediate[v_i0, v_i1, v_i2])
                T.writes(expand_dims_intermediate_1[v_i0, v_i1, v_i2, v_i3])
                expand_dims_intermediate_1[v_i0, v_i1, v_i2, v_i3] = expand_dims_intermediate[v_i0, v_i1, v_i2]
        for ax0, ax1, ax2, ax3 in T.grid(T.int64(1), T.int64(256), T.int64(28), T.int64(28)):
            with T.sblock("T_multiply"):
                v_ax0, v_ax1, v_ax2, v_ax3 = T.axis.remap("SSSS", [ax0, ax1, ax2, ax3])
                T.reads(x[v_ax0, v_ax1, v_ax2, v_ax3], expand_dims_intermediate_1[v_ax0, v_ax1, T.int64(0), T.int64(0)])
                T.writes(T_multiply_intermediate[v_ax0, v_ax1, v_ax2, v_ax3])
                T_multiply_intermediate[v_ax0, v_ax1, v_ax2, v_ax3] = x[v_ax0, v_ax1, v_ax2, v_ax3] * expand_dims_intermediate_1[v_ax0, v_ax1, T.int64(0), T.int64(0)]

    @T.prim_func(private=True, s_tir=True)
    def mean(x: T.Buffer((T.int64(1), T.int64(256), T.int64(28), T.int64(28)), "float32"), T_divide: T.Buffer((T.int64(1), T.int64(256)), "float32")):
        T.func_attr({"op_pattern": 4, "tirx.noalias": True})
        # with T.sblock("root"):
        x_red = T.sblock_alloc_buffer((T.int64(1), T.int64(256)))
        for ax0, ax1, k2, k3 in T.grid(T.int64(1), T.int64(256), T.int64(28), T.int64(28)):
            with T.sblock("x_red"):
                v_ax0, v_ax1, v_k2, v_k3 = T.axis.remap("SSRR", [ax0, ax1, k2, k3])
                T.reads(x[v_ax0, v_ax1, v_k2, v_k3])
                T.writes(x_red[v_ax0, v_ax1])
                with T.init():
                    x_red[v_ax0, v_ax1] = T.float32(0.0)
                x_red[v_ax0, v_ax1] = x_red[v_ax0, v_ax1] + x[v_ax0, v_ax1, v_k2, v_k3]
        for ax0, ax1 in T.grid(T.int64(1), T.int64(256)):
            with T.sblock("T_divide"):
                v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(x_red[v_ax0, v_ax1])
                T.writes(T_divide[v_ax0, v_ax1])
                T_divide[v_ax0, v_ax1] = x_red[v_ax0, v_ax1] / T.float32(784.0)

    @T.prim_func(private=True, s_tir=True)
    def take(lv3: T.Buffer((T.int64(1), T.int64(1), T.int64(256)), "float32"), B: T.Buffer((), "int64"), T_take: T.Buffer((T.int64(1), T.int64(256)), "float32")):
        T.func_attr({"op_pattern": 8, "tirx.noalias": True})
        # with T.sblock("root"):
        for ax0, ax1 in T.grid(T.int64(1), T.int64(256)):
            with T.sblock("T_take"):
                v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(lv3[v_ax0, B[()], v_ax1], B[()])
                T.writes(T_take[v_ax0, v_ax1])
                T_take[v_ax0, v_ax1] = lv3[v_ax0, B[()], v_ax1]

    @R.function
    def main(x: R.Tensor((1, 256, 28, 28), dtype="float32"), c0: R.Tensor((1, 1, 5), dtype="float32")) -> R.Tuple(R.Tensor((1, 256, 28, 28), dtype="float32")):
        cls = Module
        with R.dataflow():
            lv = R.call_tir(cls.mean, (x,), out_ty=R.Tensor((1, 256), dtype="float32"))
            lv1 = R.call_tir(cls.expand_dims, (lv,), out_ty=R.Tensor((1, 1, 256), dtype="float32"))
            lv_1 = R.call_tir(cls.fused_conv1d_tir_sigmoid, (lv1, c0), out_ty=R.Tensor((1, 1, 256), dtype="float32"))
            lv4 = R.call_tir(cls.take, (lv_1, R.const(0, "int64")), out_ty=R.Tensor((1, 256), dtype="float32"))
            lv1_1 = R.call_tir(cls.fused_expand_dims1_expand_dims2_multiply, (lv4, x), out_ty=R.Tensor((1, 256, 28, 28), dtype="float32"))
            gv: R.Tuple(R.Tensor((1, 256, 28, 28), dtype="float32")) = (lv1_1,)
            R.output(gv)
        return gv