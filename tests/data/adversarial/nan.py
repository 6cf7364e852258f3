# from tvm.script import ir as I
# from tvm.script import relax as R
# from tvm.script import tirx as T

@I.ir_module
class Module:

    @R.function
    def main(x: R.Tensor((4, 64), dtype="float32"), c0: R.Tensor((64,), dtype="float32")) -> R.Tuple(R.Tensor((4, 64), dtype="float32")):
        cls = Module
        with R.dataflow():
            lv: R.Tensor((4, 64), dtype="float32") = R.nn.relu(x)
            lv1: R.Tensor((4, 64), dtype="float32") = R.multiply(lv, c0)
            lv2: R.Tensor((4, 64), dtype="float32") = R.add(lv1, x)
            zz: R.Tensor((4, 64), dtype="float32") = R.zeros(R.shape([4, 64]), dtype="float32")
            nn: R.Tensor((4, 64), dtype="float32") = R.divide(zz, zz)
            lv3: R.Tensor((4, 64), dtype="float32") = R.add(lv2, nn)
            gv: R.Tuple(R.Tensor((4, 64), dtype="float32")) = (lv3,)
            R.output(gv)
        return gv
