"""Load the best candidate LEKA found for l3_qwen2_decoder_prefill (a Relax VM executable) and run it."""
import sys

import numpy as np
import tvm
from tvm import relax

lib = tvm.runtime.load_module(sys.argv[1] if len(sys.argv) > 1 else "best.so")
vm = relax.VirtualMachine(lib, tvm.cpu())
# inputs: the task's get_inputs() as numpy arrays, in order (weights are baked into the module)
# out = vm["main"](*[tvm.runtime.tensor(a) for a in inputs])
print("loaded; call vm['main'](*inputs)", vm)
