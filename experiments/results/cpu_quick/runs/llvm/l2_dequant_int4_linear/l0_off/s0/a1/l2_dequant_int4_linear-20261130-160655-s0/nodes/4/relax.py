# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 8, 512), dtype="float32"), c0: R.Tensor((1024, 256), dtype="uint8"), c1: R.Tensor((1024, 16, 1), dtype="float32")) -> R.Tuple(R.Tensor((1, 8, 1024), dtype="float32")):
        with R.dataflow():
            lv: R.Tensor((1024, 256), dtype="int32") = R.astype(c0, dtype="int32")
            lv1: R.Tensor((1024, 256), dtype="int32") = R.floor_mod(lv, R.const(16, "int32"))
            lv2: R.Tensor((1024, 256), dtype="int32") = R.floor_divide(lv, R.const(16, "int32"))
            lv3: R.Tensor((1024, 256, 1), dtype="int32") = R.expand_dims(lv1, axis=[2])
            lv4: R.Tensor((1024, 256, 1), dtype="int32") = R.expand_dims(lv2, axis=[2])
            lv5: R.Tensor((1024, 256, 2), dtype="int32") = R.concat((lv3, lv4), axis=-1)
            lv6: R.Tensor((1024, 16, 32), dtype="int32") = R.reshape(lv5, R.shape([1024, 16, 32]))
            lv7: R.Tensor((1024, 16, 32), dtype="int32") = R.subtract(lv6, R.const(8, "int32"))
            lv8: R.Tensor((1024, 16, 32), dtype="float32") = R.astype(lv7, dtype="float32")
            lv9: R.Tensor((1024, 16, 32), dtype="float32") = R.multiply(lv8, c1)
            lv10: R.Tensor((1024, 512), dtype="float32") = R.reshape(lv9, R.shape([1024, 512]))
            lv11: R.Tensor((512, 1024), dtype="float32") = R.permute_dims(lv10, axes=[1, 0])
            lv12: R.Tensor((8, 512), dtype="float32") = R.reshape(x, R.shape([8, 512]))
            lv13: R.Tensor((8, 1024), dtype="float32") = R.matmul(lv12, lv11, out_dtype="float32")
            lv14: R.Tensor((1, 8, 1024), dtype="float32") = R.reshape(lv13, R.shape([1, 8, 1024]))
            gv: R.Tuple(R.Tensor((1, 8, 1024), dtype="float32")) = (lv14,)
            R.output(gv)
        return gv