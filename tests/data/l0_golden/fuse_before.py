# from tvm.script import relax as R
@R.function
def main(x: R.Tensor((4, 8), dtype="float32"), b: R.Tensor((8,), dtype="float32")) -> R.Tensor((4, 8), dtype="float32"):
    with R.dataflow():
        y = R.add(x, b)
        z = R.nn.relu(y)
        R.output(z)
    return z
