# from tvm.script import ir as I
# from tvm.script import tirx as T
# from tvm.tirx.layout import Axis
# from tvm.script import relax as R

@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def matmul(lv12: T.Buffer((T.int64(8), T.int64(512)), "float32"), lv11: T.Buffer((T.int64(512), T.int64(1024)), "float32"), matmul: T.Buffer((T.int64(8), T.int64(1024)), "float32")):
        T.func_attr({"op_pattern": 4, "tirx.noalias": True})
        # with T.sblock("root"):
        for i0, i1, k in T.grid(T.int64(8), T.int64(1024), T.int64(512)):
            with T.sblock("matmul"):
                v_i0, v_i1, v_k = T.axis.remap("SSR", [i0, i1, k])
                T.reads(lv12[v_i0, v_k], lv11[v_k, v_i1])
                T.writes(matmul[v_i0, v_i1])
                with T.init():
                    matmul[v_i0, v_i1] = T.float32(0.0)
                matmul[v_i0, v_i1] = matmul[v_i0, v_i1] + lv12[v_i0, v_k] * lv11[v_k, v_i1]

    @T.prim_func(private=True, s_tir=True)
    def reshape2(x: T.Buffer((T.int64(1), T.int64(8), T.int64(512)), "float32"), T_reshape: T.Buffer((T.int64(8), T.int64(512)), "float32")):
        T.func_attr({"op_pattern": 2, "tirx.noalias": True})
        # with T.sblock("root"):
        for ax0, ax1 in T.grid(T.int64(8), T.int64(512)):
            with T.sblock("T_reshape"):
                v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(x[T.int64(0), (v_ax1 // T.int64(512) + v_ax0) % T.int64(8), v_ax1 % T.int64(512)])
                T.writes(T_reshape[v_ax0, v_ax1])
                T_reshape[v_ax0, v_ax1] = x[T.int64(0), (v_ax1 // T.int64(512) + v_ax0) % T.int64(8), v_ax1 % T.int64(512)]

    @T.prim_func(private=True, s_tir=True)
    def reshape3(lv13: T.Buffer((T.int64(8), T.int64(1024)), "float32"), T_reshape: T.Buffer((T.int64(1), T.int64(8), T.int64(1024)), "float32")):
        T.func_attr({"op_pattern": 2, "tirx.noalias": True})
        # with T.sblock("root"):
        for ax0, ax1, ax2 in T.grid(T.int64(1), T.int64(8), T.int64(1024)):
            with T.sblock("T_reshape"):
                v_ax0, v_ax1, v_ax2 = T.axis.remap("SSS", [ax0, ax1, ax2])
                T.reads(lv13[(v_ax2 // T.int64(1024) + v_ax1) % T.int64(8), v_ax2 % T.int64(1024)])
                T.writes(T_reshape[v_ax0, v_ax1, v_ax2])
                T_reshape[v_ax0, v_ax1, v_ax2] = lv13[(v_ax2 // T.int64(1024) + v_ax1) % T.int64(8), v_ax2 % T.int64(1024)]

    @R.function
    def main(x: R.Tensor((1, 8, 512), dtype="float32"), c0: R.Tensor((512, 1024), dtype="float32")) -> R.Tuple(R.Tensor((1, 8, 1024), dtype="float32")):
        cls = Module
        with R.dataflow():
            lv12 = R.call_tir(cls.reshape2, (x,), out_ty=R.Tensor((8, 512), dtype="float32"))
            lv13 = R.call_tir(cls.matmul, (lv12, c0), out_ty=R.Tensor((8, 1024), dtype="float32"))
            lv14 = R.call_tir(cls.reshape3, (lv13,), out_ty=R.Tensor((1, 8, 1024), dtype="float32"))
            gv: R.Tuple(R.Tensor((1, 8, 1024), dtype="float32")) = (lv14,)
            R.output(gv)
        return gv