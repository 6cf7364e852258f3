# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(boxes: R.Tensor((1, 2100, 4), dtype="float32"), idx: R.Tensor((1, 100), dtype="int64")) -> R.Tuple(R.Tensor((1, 100, 4), dtype="float32")):
        with R.dataflow():
            lv: R.Tensor((1, 100, 1), dtype="int64") = R.expand_dims(idx, axis=[2])
            lv1: R.Tensor((1, 100, 4), dtype="int64") = R.broadcast_to(lv, R.shape([1, 100, 4]))
            lv2: R.Tensor((1, 100, 4), dtype="float32") = R.gather_elements(boxes, lv1, axis=1)
            gv: R.Tuple(R.Tensor((1, 100, 4), dtype="float32")) = (lv2,)
            R.output(gv)
        return gv