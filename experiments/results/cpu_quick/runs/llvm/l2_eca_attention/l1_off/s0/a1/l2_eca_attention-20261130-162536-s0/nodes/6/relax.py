# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 256, 28, 28), dtype="float32"), c0: R.Tensor((1, 1, 5), dtype="float32")) -> R.Tuple(R.Tensor((1, 256, 28, 28), dtype="float32")):
        with R.dataflow():
            lv: R.Tensor((1, 256), dtype="float32") = R.mean(x, axis=[2, 3], keepdims=False)
            lv1: R.Tensor((1, 1, 256), dtype="float32") = R.expand_dims(lv, axis=[1])
            lv2: R.Tensor((1, 1, 256), dtype="float32") = R.nn.conv1d(lv1, c0, strides=[1], padding=[2, 2], dilation=[1], groups=1, data_layout="NCW", kernel_layout="OIW", out_layout="NCW", out_dtype="float32")
            lv3: R.Tensor((1, 1, 256), dtype="float32") = R.sigmoid(lv2)
            lv4: R.Tensor((1, 256), dtype="float32") = R.take(lv3, R.const(0, "int64"), axis=1, mode="fast")
            lv5: R.Tensor((1, 256, 1), dtype="float32") = R.expand_dims(lv4, axis=[2])
            lv6: R.Tensor((1, 256, 1, 1), dtype="float32") = R.expand_dims(lv5, axis=[3])
            lv7: R.Tensor((1, 256, 28, 28), dtype="float32") = R.multiply(x, lv6)
            gv: R.Tuple(R.Tensor((1, 256, 28, 28), dtype="float32")) = (lv7,)
            R.output(gv)
        return gv