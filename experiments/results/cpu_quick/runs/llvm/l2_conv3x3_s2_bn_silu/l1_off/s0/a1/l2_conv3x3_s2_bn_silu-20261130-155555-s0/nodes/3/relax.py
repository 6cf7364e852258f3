# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 32, 80, 80), dtype="float32"), c0: R.Tensor((64, 32, 3, 3), dtype="float32"), c1: R.Tensor((64,), dtype="float32"), c2: R.Tensor((64,), dtype="float32"), c3: R.Tensor((64,), dtype="float32"), c4: R.Tensor((64,), dtype="float32")) -> R.Tuple(R.Tensor((1, 64, 40, 40), dtype="float32")):
        with R.dataflow():
            lv: R.Tensor((1, 64, 40, 40), dtype="float32") = R.nn.conv2d(x, c0, strides=[2, 2], padding=[1, 1, 1, 1], dilation=[1, 1], groups=1, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype="float32")
            lv1: R.Tuple(R.Tensor((1, 64, 40, 40), dtype="float32"), R.Tensor((64,), dtype="float32"), R.Tensor((64,), dtype="float32")) = R.nn.batch_norm(lv, c1, c2, c3, c4, axis=1, epsilon=0.001, center=True, scale=True, momentum=0.10000000000000001, training=False)
            lv2: R.Tensor((1, 64, 40, 40), dtype="float32") = lv1[0]
            lv3: R.Tensor((1, 64, 40, 40), dtype="float32") = R.sigmoid(lv2)
            lv4: R.Tensor((1, 64, 40, 40), dtype="float32") = R.multiply(lv2, lv3)
            gv: R.Tuple(R.Tensor((1, 64, 40, 40), dtype="float32")) = (lv4,)
            R.output(gv)
        return gv