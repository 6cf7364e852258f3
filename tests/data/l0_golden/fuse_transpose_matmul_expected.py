# from tvm.script import ir as I
# from tvm.script import tirx as T
# from tvm.tirx.layout import Axis
# from tvm.script import relax as R

@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def NT_matmul(x: T.Buffer((T.int64(2), T.int64(8)), "float32"), w: T.Buffer((T.int64(4), T.int64(8)), "float32"), NT_matmul: T.Buffer((T.int64(2), T.int64(4)), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        for i0, i1, k in T.grid(T.int64(2), T.int64(4), T.int64(8)):
            with T.sblock("NT_matmul"):
                v_i0, v_i1, v_k = T.axis.remap("SSR", [i0, i1, k])
                T.reads(x[v_i0, v_k], w[v_i1, v_k])
                T.writes(NT_matmul[v_i0, v_i1])
                with T.init():
                    NT_matmul[v_i0, v_i1] = T.float32(0.0)
                NT_matmul[v_i0, v_i1] = NT_matmul[v_i0, v_i1] + x[v_i0, v_k] * w[v_i1, v_k]

    @R.function(private=True)
    def fused_relax_permute_dims_relax_matmul(w: R.Tensor((4, 8), dtype="float32"), x: R.Tensor((2, 8), dtype="float32")) -> R.Tensor((2, 4), dtype="float32"):
        R.func_attr({"Composite": "transpose_matmul_fuse", "Primitive": True})
        with R.dataflow():
            wt: R.Tensor((8, 4), dtype="float32") = R.permute_dims(w, axes=[1, 0])
            gv: R.Tensor((2, 4), dtype="float32") = R.matmul(x, wt, out_dtype=None)
            R.output(gv)
        return gv

    @R.function
    def main(x: R.Tensor((2, 8), dtype="float32"), w: R.Tensor((4, 8), dtype="float32")) -> R.Tensor((2, 4), dtype="float32"):
        cls = Module
        with R.dataflow():
            gv = R.call_tir(cls.NT_matmul, (x, w), out_ty=R.Tensor((2, 4), dtype="float32"))
            R.output(gv)
        return gv