# from tvm.script import ir as I
# from tvm.script import relax as R
# from tvm.script import tirx as T

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 64), dtype="float32"), c0: R.Tensor((64,), dtype="float32")) -> R.Tuple(R.Tensor((4, 64), dtype="float32")):
        with R.dataflow():
            lv: R.Tensor((4, 64), dtype="float32") = R.nn.relu(x)
            lv1: R.Tensor((4, 64), dtype="float32") = R.multiply(lv, c0)
            lv2: R.Tensor((4, 64), dtype="float32") = R.add(lv1, x)
            big: R.Tensor((805306368,), dtype="float32") = R.full(R.shape([805306368]), R.const(1.0, "float32"), dtype="float32")
            s: R.Tensor((), dtype="float32") = R.sum(big)
            lv3: R.Tensor((4, 64), dtype="float32") = R.add(lv2, R.multiply(s, R.const(0.0, "float32")))
            gv: R.Tuple(R.Tensor((4, 64), dtype="float32")) = (lv3,)
            R.output(gv)
        return gv
