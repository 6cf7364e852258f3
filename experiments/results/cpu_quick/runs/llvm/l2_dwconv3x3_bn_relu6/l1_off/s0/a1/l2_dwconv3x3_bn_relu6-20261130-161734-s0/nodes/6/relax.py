# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 144, 56, 56), dtype="float32"), c0: R.Tensor((144, 1, 3, 3), dtype="float32"), c1: R.Tensor((1, 144, 1, 1), dtype="float32")) -> R.Tuple(R.Tensor((1, 144, 56, 56), dtype="float32")):
        with R.dataflow():
            lv5: R.Tensor((1, 144, 56, 56), dtype="float32") = R.nn.conv2d(x, c0, strides=[1, 1], padding=[1, 1, 1, 1], dilation=[1, 1], groups=144, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype="float32")
            lv2: R.Tensor((1, 144, 56, 56), dtype="float32") = R.add(lv5, c1)
            lv3: R.Tensor((1, 144, 56, 56), dtype="float32") = R.clip(lv2, 0, 6)
            gv: R.Tuple(R.Tensor((1, 144, 56, 56), dtype="float32")) = (lv3,)
            R.output(gv)
        return gv