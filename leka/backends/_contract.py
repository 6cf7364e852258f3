"""Contract text the GPU backends share (cuda.py, opencl.py): what an L1 file means where every
PrimFunc runs as GPU kernels. A module starting with `_` is no backend (leka.backends._discover)."""

GPU_L1 = """On this backend every PrimFunc runs as GPU kernels. Without an L1 file a PrimFunc gets TVM's
default GPU schedule (DLight): `views/scheduled/<primfunc>.py` shows it, with its thread binding. An L1
file replaces that schedule and must bind the loops of every block to the grid (`bind` a loop to
`blockIdx.x` and one to `threadIdx.x`; at most $max_threads threads per block); a block left unbound
does not build. Example (an elementwise PrimFunc whose block `compute` has two loops):

```json
[{"prim": "get_sblock", "args": ["compute"], "out": ["b"]},
 {"prim": "get_loops", "args": ["b"], "out": ["i", "j"]},
 {"prim": "fuse", "args": ["i", "j"], "out": ["f"]},
 {"prim": "split", "args": ["f", [null, 64]], "out": ["bx", "tx"]},
 {"prim": "bind", "args": ["bx", "blockIdx.x"]},
 {"prim": "bind", "args": ["tx", "threadIdx.x"]}]
```"""


def gpu_l2(suffix: str, language: str, head: str, built: str) -> str:
    """The L2 bullet of a spliced GPU kernel language (`head`: how the kernel function starts)."""
    return f"""- `candidate/l2/<primfunc>{suffix}` - **L2**, a hand-written {language} kernel in place of the one TVM
  generates for that PrimFunc: the whole function `{head} <primfunc>_kernel(...)`, same name and
  parameters in the same order. It is spliced into the generated source instead of the generated
  function and launched with the schedule's grid and block sizes (the L1 file's, or the default
  one's), so keep its indexing of blocks and threads, or change the L1 schedule with it.
  `views/sources/<primfunc>{suffix}` is the kernel TVM generates for the starting candidate: copy it
  to `candidate/l2/` and edit it. A PrimFunc lowered to several kernels names the one a file
  replaces on its first line: `// entry: <primfunc>_kernel_1`. {built}"""


def gpu_prompt_l2(language: str) -> str:
    """The L2 agent's contract of a spliced GPU kernel language (prompts/_l2_contract.j2)."""
    return (f'- language "{language}": the complete text of the one kernel function named `<primfunc>_kernel`, '
            "same\n  parameters as the generated one; it replaces that function in the generated source.")
