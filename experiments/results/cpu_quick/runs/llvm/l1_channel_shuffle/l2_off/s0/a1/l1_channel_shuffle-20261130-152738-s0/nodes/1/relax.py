# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 116, 28, 28), dtype="float32")) -> R.Tuple(R.Tensor((1, 116, 28, 28), dtype="float32")):
        with R.dataflow():
            lv: R.Tensor((1, 2, 58, 28, 28), dtype="float32") = R.reshape(x, R.shape([1, 2, 58, 28, 28]))
            lv1: R.Tensor((1, 58, 2, 28, 28), dtype="float32") = R.permute_dims(lv, axes=[0, 2, 1, 3, 4])
            lv2: R.Tensor((1, 116, 28, 28), dtype="float32") = R.reshape(lv1, R.shape([1, 116, 28, 28]))
            gv: R.Tuple(R.Tensor((1, 116, 28, 28), dtype="float32")) = (lv2,)
            R.output(gv)
        return gv