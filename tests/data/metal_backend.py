"""A fourth backend in one file, for tests: Apple GPUs through TVM's Metal codegen, which this wheel has
(it writes Metal Shading Language on any machine; nothing here can run it). A test registers it at run
time (`register(BACKEND)`), or puts this file beside the built-in ones, where it is discovered by name.

What makes it a backend is only this record: the CLI, the config, the L2 parser and guard, the rule
agents and a grid's resources read it. TVM's Metal codegen has no hook on its generated source
(`source_hook=None`): Metal L2 sources are checked and parsed, but a candidate with one does not build."""

from __future__ import annotations

from typing import Any

from leka.backends import Backend, GuardProfile, L2Language


def target_spec(system_cpu: str = "", **_: Any) -> dict[str, Any]:
    return {"kind": "metal", "max_num_threads": 256, "thread_warp_size": 32,
            "host": {"kind": "llvm", "mcpu": system_cpu}}


METAL = L2Language(
    "metal", "metal", kernel_qualifier=r"\bkernel\s+void\s+", kernel_words="kernel",
    # program-scope variables of MSL are in the constant address space; `device` ones are state
    guard=GuardProfile(constant=r"\bconstant\b", device_state=r"\bdevice\b"),
    prompt="a whole Metal Shading Language kernel function",
)

# the L2 agent's contract on this backend (prompts/_l2_contract.j2 takes it from here)
PROMPT_L2 = """- language "metal": the complete text of the one Metal Shading Language function
  `kernel void <primfunc>_kernel(...)`, same `[[ buffer(i) ]]` parameters as the generated one; it
  replaces that function in the generated source. Threadgroup memory and SIMD-group functions
  (`simd_sum`) are available."""

BACKEND = Backend(
    name="metal", target_spec=target_spec, device="metal", remote_device="metal", runs_on=("rpc",),
    unavailable=lambda: "no Apple GPU here (a test backend: Metal runs on macOS)", domain="mobile",
    l2=(METAL,), gpu=True, source_hook=None, resources={"CPU": 0.25},
    # Metal threadgroups take the same work-group x vector-width traces as OpenCL work-groups
    rule_agents={"L1": "agents.l1_opencl:OpenCLRuleL1Agent"}, peaks={"m2": ("apple-m2-gpu", 3_600.0, 100.0)},
    default_arch="m2", prompt_l2=PROMPT_L2,
)
