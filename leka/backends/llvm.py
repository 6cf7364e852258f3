"""The host CPU through TVM's LLVM backend: the machine's real `mcpu`, every core of the affinity set.
L2 sources are C/C++ or LLVM IR compiled to an object and called through `call_extern`."""

from __future__ import annotations

from typing import Any

from leka.backends import Backend, L2Language


def target_spec(system_cpu: str = "", num_cores: int = 1, target: dict[str, Any] | None = None,
                **_: Any) -> dict[str, Any]:
    if target:  # a board's CPU (device config), e.g. {"mtriple": "aarch64-linux-gnu"}
        return {"kind": "llvm", **target}
    # A bare {"kind": "llvm"} emits SSE-only code and "mcpu": "native" is rejected in TVM 0.27
    return {"kind": "llvm", "mcpu": system_cpu, "num-cores": num_cores}


# LLVM codegen attributes of the whole module a compile_options edit may set: fast-math flags let LLVM
# contract mul+add into FMAs and reassociate reductions into vector accumulators
COMPILE_OPTIONS = frozenset({"fast-math", "fast-math-contract", "fast-math-reassoc", "fast-math-nnan",
                             "fast-math-ninf", "fast-math-nsz", "fast-math-arcp", "opt-level"})

CONTRACT_L2 = """- `candidate/l2/<primfunc>.cpp` (or `.c`, `.ll` for LLVM IR) - **L2**, a hand-written kernel that
  replaces that PrimFunc. It defines the C-ABI function given in `views/l2_prototypes.txt`
  (`extern "C" int32_t leka_<primfunc>(float* p0, ...)`: one pointer per buffer parameter, inputs
  then outputs, static shapes, return 0), or another name declared on its first line as
  `// entry: NAME`. It is compiled with `g++ -O3 -march=native -fopenmp -fPIC`: intrinsics
  (`#include <immintrin.h>`) and `#pragma omp parallel for` are available.
  `candidate/l2/compile_options.json` may set LLVM code-generator options for the whole module, e.g.
  `{"fast-math-contract": true}`."""

PROMPT_L2 = """- language "cpp": the source defines
  `extern "C" int32_t ENTRY(float* p0, float* p1, ..., float* pn)` - one pointer per buffer parameter of
  the PrimFunc, in the PrimFunc's order (inputs, then outputs), with the matching C type for other dtypes
  (int8_t, int32_t, ...). Shapes are static: bake them into the code. Return 0 on success. `entry` names
  that symbol. It is compiled with `g++ -O3 -march=native -fopenmp -fPIC`, so AVX-512 / AVX2 intrinsics
  (`#include <immintrin.h>`) and `#pragma omp parallel for` are available.
- language "llvm": LLVM IR text defining the same C-ABI ENTRY function.
- kind "compile_options": code-generator attributes for the whole module, e.g.
  `{"options": {"fast-math-contract": true}}` (FMA contraction) or add `"fast-math-reassoc": true`."""

CONTRACT_L1 = """Example (tile a matmul):

```json
[{"prim": "get_sblock", "args": ["matmul"], "out": ["b"]},
 {"prim": "get_loops", "args": ["b"], "out": ["i", "j", "k"]},
 {"prim": "split", "args": ["j", [null, 16]], "out": ["j0", "j1"]},
 {"prim": "reorder", "args": [["i", "j0", "k", "j1"]]},
 {"prim": "parallel", "args": ["i"]},
 {"prim": "vectorize", "args": ["j1"]},
 {"prim": "decompose_reduction", "args": ["b", "k"], "out": ["init"]}]
```"""

BACKEND = Backend(
    name="llvm", target_spec=target_spec, device="cpu", remote_device="cpu", runs_on=("local", "rpc"),
    unavailable=lambda: None, domain="mobile", rank=0,
    l2=(L2Language("cpp", "cc", compiler="c++", file_suffixes=(".cpp", ".cc"),
                   prompt="a C/C++ function, `entry` = its exported symbol"),
        L2Language("c", "c", compiler="c", file_suffixes=(".c",), prompt="a C function, `entry` = its exported symbol"),
        L2Language("llvm", "ll", compiler="llvm-ir", syntax="llvm-ir", file_suffixes=(".ll",),
                   prompt="edited LLVM IR")),
    compile_options=COMPILE_OPTIONS, kernel_cache=True, resources={"CPU": 1.0},
    contract_l1=CONTRACT_L1, contract_l2=CONTRACT_L2, prompt_l2=PROMPT_L2,
    option_sets=({"fast-math-contract": True}, {"fast-math-contract": True, "fast-math-reassoc": True},
                 {"fast-math": True}),
    # the production engines a user of this CPU would run instead (benchmark/engines.py)
    baselines={"untuned": "", "tuned": "", "torch": "cpu", "torch_compile": "cpu", "ort": "CPU", "mnn": "CPU"},
)
