# from tvm.script import ir as I
# from tvm.script import tirx as T
# from tvm.tirx.layout import Axis
# from tvm.script import relax as R

@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def fused_reshape_transpose_reshape1(x: T.Buffer((T.int64(1), T.int64(116), T.int64(28), T.int64(28)), "float32"), T_reshape_intermediate_1: T.Buffer((T.int64(1), T.int64(116), T.int64(28), T.int64(28)), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        T_reshape_intermediate = T.sblock_alloc_buffer((T.int64(1), T.int64(2), T.int64(58), T.int64(28), T.int64(28)))
        T_transpose_intermediate = T.sblock_alloc_buffer((T.int64(1), T.int64(58), T.int64(2), T.int64(28), T.int64(28)))
        for ax0, ax1, ax2, ax3, ax4 in T.grid(T.int64(1), T.int64(2), T.int64(58), T.int64(28), T.int64(28)):
            with T.sblock("T_reshape"):
                v_ax0, v_ax1, v_ax2, v_ax3, v_ax4 = T.axis.remap("SSSSS", [ax0, ax1, ax2, ax3, ax4])
                T.reads(x[T.int64(0), (v_ax1 * T.int64(58) + (v_ax4 // T.int64(28) + v_ax3) // T.int64(28) + v_ax2) % T.int64(116), (v_ax4 // T.int64(28) + v_ax3) % T.int64(28), v_ax4 % T.int64(28)])
                T.writes(T_reshape_intermediate[v_ax0, v_ax1, v_ax2, v_ax3, v_ax4])
                T_reshape_intermediate[v_ax0, v_ax1, v_ax2, v_ax3, v_ax4] = x[T.int64(0), (v_ax1 * T.int64(58) + (v_ax4 // T.int64(28) + v_ax3) // T.int64(28) + v_ax2) % T.int64(116), (v_ax4 // T.int64(28) + v_ax3) % T.int64(28), v_ax4 % T.int64(28)]
        for ax0, ax1, ax2, ax3, ax4 in T.grid(T.int64(1), T.int64(58), T.int64(2), T.int64(28), T.int64(28)):
            with T.sblock("T_transpose"):
                v_ax0, v_ax1, v_ax2, v_ax3, v_ax4 = T.axis.remap("SSSSS", [ax0, ax1, ax2, ax3, ax4])
                T.reads(T_reshape_intermediate[v_ax0, v_ax2, v_ax1, v_ax3, v_ax4])
                T.writes(T_transpose_intermediate[v_ax0, v_ax1, v_ax2, v_ax3, v_ax4])
                T_transpose_intermediate[v_ax0, v_ax1, v_ax2, v_ax3, v_ax4] = T_reshape_intermediate[v_ax0, v_ax2, v_ax1, v_ax3, v_ax4]
        for ax0, ax1, ax2, ax3 in T.grid(T.int64(1), T.int64(116), T.int64(28), T.int64(28)):
            with T.sblock("T_reshape1"):
                v_ax0, v_ax1, v_ax2, v_ax3 = T.axis.remap("SSSS", [ax0, ax1, ax2, ax3])
                T.reads(T_transpose_intermediate[T.int64(0), ((v_ax3 // T.int64(28) + v_ax2) // T.int64(28) + v_ax1) % T.int64(116) // T.int64(2), ((v_ax3 // T.int64(28) + v_ax2) // T.int64(28) + v_ax1) % T.int64(2), (v_ax3 // T.int64(28) + v_ax2) % T.int64(28), v_ax3 % T.int64(28)])
                T.writes(T_reshape_intermediate_1[v_ax0, v_ax1, v_ax2, v_ax3])
                T_reshape_intermediate_1[v_ax0, v_ax1, v_ax2, v_ax3] = T_transpose_intermediate[T.int64(0), ((v_ax3 // T.int64(28) + v_ax2) // T.int64(28) + v_ax1) % T.int64(116) // T.int64(2), ((v_ax3 // T.int64(28) + v_ax2) // T.int64(28) + v_ax1) % T.int64(2), (v_ax3 // T.int64(28) + v_ax2) % T.int64(28), v_ax3 % T.int64(28)]

    @R.function
    def main(x: R.Tensor((1, 116, 28, 28), dtype="float32")) -> R.Tuple(R.Tensor((1, 116, 28, 28), dtype="float32")):
        cls = Module
        with R.dataflow():
            lv = R.call_tir(cls.fused_reshape_transpose_reshape1, (x,), out_ty=R.Tensor((1, 116, 28, 28), dtype="float32"))
            gv: R.Tuple(R.Tensor((1, 116, 28, 28), dtype="float32")) = (lv,)
            R.output(gv)
        return gv