"""The host CPU through TVM's LLVM backend: the machine's real `mcpu`, every core of the affinity set.
L2 sources are C/C++ or LLVM IR compiled to an object and called through `call_extern`."""

from __future__ import annotations

from typing import Any

from leka.backends import Backend


def target_spec(system_cpu: str = "", num_cores: int = 1, target: dict[str, Any] | None = None,
                **_: Any) -> dict[str, Any]:
    if target:  # a board's CPU (device config), e.g. {"mtriple": "aarch64-linux-gnu"}
        return {"kind": "llvm", **target}
    # A bare {"kind": "llvm"} emits SSE-only code and "mcpu": "native" is rejected in TVM 0.27
    return {"kind": "llvm", "mcpu": system_cpu, "num-cores": num_cores}


BACKEND = Backend(
    name="llvm", target_spec=target_spec, device="cpu", remote_device="cpu", runs_on=("local", "rpc"),
    unavailable=lambda: None, l2_languages={"cpp": "cc", "c": "c", "llvm": "ll"},
    l2_linked=("cpp", "c", "llvm"), domain="mobile",
)
