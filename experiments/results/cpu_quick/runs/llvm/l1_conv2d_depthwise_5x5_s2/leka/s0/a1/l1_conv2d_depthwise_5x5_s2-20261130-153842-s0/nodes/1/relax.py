# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 144, 56, 56), dtype="float32"), c0: R.Tensor((144, 1, 5, 5), dtype="float32")) -> R.Tuple(R.Tensor((1, 144, 28, 28), dtype="float32")):
        with R.dataflow():
            lv: R.Tensor((1, 144, 28, 28), dtype="float32") = R.nn.conv2d(x, c0, strides=[2, 2], padding=[2, 2, 2, 2], dilation=[1, 1], groups=144, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype="float32")
            gv: R.Tuple(R.Tensor((1, 144, 28, 28), dtype="float32")) = (lv,)
            R.output(gv)
        return gv