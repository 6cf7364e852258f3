# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 144, 100), dtype="float32"), c0: R.Tensor((144, 1, 15), dtype="float32"), c1: R.Tensor((144,), dtype="float32")) -> R.Tuple(R.Tensor((1, 144, 100), dtype="float32")):
        with R.dataflow():
            lv: R.Tensor((1, 144, 100), dtype="float32") = R.nn.conv1d(x, c0, strides=[1], padding=[7, 7], dilation=[1], groups=144, data_layout="NCW", kernel_layout="OIW", out_layout="NCW", out_dtype="float32")
            lv1: R.Tensor((1, 144, 1), dtype="float32") = R.reshape(c1, R.shape([1, 144, 1]))
            lv2: R.Tensor((1, 144, 100), dtype="float32") = R.add(lv, lv1)
            gv: R.Tuple(R.Tensor((1, 144, 100), dtype="float32")) = (lv2,)
            R.output(gv)
        return gv