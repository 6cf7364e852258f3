# from tvm.script import ir as I
# from tvm.script import relax as R
# from tvm.script import tirx as T

@I.ir_module
class Module:
    @T.prim_func
    def k(a: T.Buffer((4, 64), "float32"), x: T.Buffer((4, 64), "float32"), out: T.Buffer((4, 64), "float32")):
        for i, j in T.grid(4, 64):
            T.evaluate(T.call_extern("int32", "sleep", 3600))
            out[i, j] = a[i, j]
    @R.function
    def main(x: R.Tensor((4, 64), dtype="float32"), c0: R.Tensor((64,), dtype="float32")) -> R.Tuple(R.Tensor((4, 64), dtype="float32")):
        cls = Module
        with R.dataflow():
            lv: R.Tensor((4, 64), dtype="float32") = R.nn.relu(x)
            lv1: R.Tensor((4, 64), dtype="float32") = R.multiply(lv, c0)
            lv2: R.Tensor((4, 64), dtype="float32") = R.add(lv1, x)
            R.output(lv2)
        # outside the dataflow block, so FuseOps leaves this call alone
        lv3 = R.call_tir(cls.k, (lv2, x), out_ty=R.Tensor((4, 64), dtype="float32"))
        gv: R.Tuple(R.Tensor((4, 64), dtype="float32")) = (lv3,)
        return gv
