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

BACKEND = Backend(
    name="llvm", target_spec=target_spec, device="cpu", remote_device="cpu", runs_on=("local", "rpc"),
    unavailable=lambda: None, domain="mobile", rank=0,
    l2=(L2Language("cpp", "cc", compiler="c++", file_suffixes=(".cpp", ".cc")),
        L2Language("c", "c", compiler="c", file_suffixes=(".c",)),
        L2Language("llvm", "ll", compiler="llvm-ir", syntax="llvm-ir", file_suffixes=(".ll",))),
    compile_options=COMPILE_OPTIONS, kernel_cache=True, resources={"CPU": 1.0},
    # the production engines a user of this CPU would run instead (benchmark/engines.py)
    baselines={"untuned": "", "tuned": "", "torch": "cpu", "torch_compile": "cpu", "ort": "CPU", "mnn": "CPU"},
)
