# from tvm.script import ir as I
# from tvm.script import relax as R
# from tvm.script import tirx as T

@I.ir_module
class Module:

    @R.function
    def main(x: R.Tensor((4, 64), dtype="float32"), c0: R.Tensor((64,), dtype="float32")) -> R.Tuple(R.Tensor((4, 64), dtype="float32")):
        cls = Module
        with R.dataflow():

            gv: R.Tuple(R.Tensor((4, 64), dtype="float32")) = (x,)
            R.output(gv)
        return gv
