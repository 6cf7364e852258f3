# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 32, 80, 80), dtype="float32"), c0: R.Tensor((64, 3, 3, 32), dtype="float32"), c1: R.Tensor((64,), dtype="float32"), c2: R.Tensor((64,), dtype="float32"), c3: R.Tensor((64,), dtype="float32"), c4: R.Tensor((64,), dtype="float32")) -> R.Tuple(R.Tensor((1, 64, 40, 40), dtype="float32")):
        with R.dataflow():
            lv: R.Tensor((1, 80, 80, 32), dtype="float32") = R.permute_dims(x, axes=[0, 2, 3, 1])
            lv_1: R.Tensor((1, 40, 40, 64), dtype="float32") = R.nn.conv2d(lv, c0, strides=[2, 2], padding=[1, 1, 1, 1], dilation=[1, 1], groups=1, data_layout="NHWC", kernel_layout="OHWI", out_layout="NHWC", out_dtype="float32")
            lv1: R.Tuple(R.Tensor((1, 40, 40, 64), dtype="float32"), R.Tensor((64,), dtype="float32"), R.Tensor((64,), dtype="float32")) = R.nn.batch_norm(lv_1, c1, c2, c3, c4, axis=3, epsilon=0.001, center=True, scale=True, momentum=0.10000000000000001, training=False)
            lv2: R.Tensor((1, 40, 40, 64), dtype="float32") = lv1[0]
            lv3: R.Tensor((1, 40, 40, 64), dtype="float32") = R.sigmoid(lv2)
            lv4: R.Tensor((1, 40, 40, 64), dtype="float32") = R.multiply(lv2, lv3)
            lv2_1: R.Tensor((1, 64, 40, 40), dtype="float32") = R.permute_dims(lv4, axes=[0, 3, 1, 2])
            gv: R.Tuple(R.Tensor((1, 64, 40, 40), dtype="float32")) = (lv2_1,)
            R.output(gv)
        return gv