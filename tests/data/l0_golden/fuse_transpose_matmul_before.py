# from tvm.script import relax as R
@R.function
def main(x: R.Tensor((2, 8), dtype="float32"), w: R.Tensor((4, 8), dtype="float32")) -> R.Tensor((2, 4), dtype="float32"):
    with R.dataflow():
        wt = R.permute_dims(w, axes=[1, 0])
        y = R.matmul(x, wt)
        R.output(y)
    return y
