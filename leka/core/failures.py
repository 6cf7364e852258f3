"""The failure taxonomy (issue 47): every failed evaluation gets a class beside its `error_kind`, decided
from the build and runtime errors, in the paper's classes: memory (illegal storage scope or allocation,
out of bounds, out of memory), syntax / API, numerics, parallelism (races, thread binding, barriers,
work-group sizes), timeout, other.

`error_kind` says where the judge stopped (compile, runtime, crash, ...); the class says what went wrong
in the candidate, so one kind can hold several classes (a CUDA compile error can be a syntax slip or a
kernel that asks for more shared memory than the device has) and one class spans kinds (an out-of-bounds
read is a crash on the CPU and a gpu_fault on CUDA). The rules read the message, most specific first:

1. the kind alone where it is unambiguous: timeout; oom and input_mutated (a write into the read-only
   inputs) are memory; mismatch and nan are numerics;
2. resource and address faults in the text (out of memory, too much shared data, illegal address,
   SIGSEGV / SIGBUS) -> memory, before anything else: a compiler that ran out of shared memory printed
   `error:` too;
3. a compiler's diagnostic (gcc / clang / nvcc `error:`, PoCL's CL_BUILD_PROGRAM_FAILURE) -> syntax / API,
   before the parallelism words: the diagnostic quotes the source line, which may name threadIdx;
4. thread binding, barriers, races, work-group and launch sizes, threads started by a kernel -> parallelism;
5. storage scopes, allocations, out-of-bounds indices -> memory;
6. what the kind means when the text said nothing more: a build, import, shape or static-check failure
   is syntax / API; the rest is other.

No TVM here: the reports and the grid rows classify stored texts too (`classify` on a row's fields)."""

from __future__ import annotations

import re
from typing import Literal

FailureClass = Literal["memory", "syntax_api", "numerics", "parallelism", "timeout", "other"]
FAILURE_CLASSES: tuple[FailureClass, ...] = ("memory", "syntax_api", "numerics", "parallelism", "timeout", "other")
LABELS: dict[str, str] = {
    "memory": "memory (scope, allocation, out of bounds, out of memory)",
    "syntax_api": "syntax / API",
    "numerics": "numerics",
    "parallelism": "parallelism (races, thread binding, barriers)",
    "timeout": "timeout",
    "other": "other",
}

_BY_KIND: dict[str, FailureClass] = {"timeout": "timeout", "oom": "memory", "input_mutated": "memory",
                                     "mismatch": "numerics", "nan": "numerics"}
# kinds whose failure, when the text names nothing more specific, is a candidate that does not build or
# does not keep the interface (its own output signature, the static check's forbidden calls)
_SYNTAX_KINDS = frozenset({"compile", "import", "bad_input", "shape", "illegal_source"})

_MEMORY_FAULT = re.compile(
    r"out of memory|CUDA_ERROR_OUT_OF_MEMORY|cudaErrorMemoryAllocation|CL_MEM_OBJECT_ALLOCATION_FAILURE"
    r"|CL_OUT_OF_(?:HOST_MEMORY|RESOURCES)|too much (?:shared|local) data|uses too much shared"
    r"|exceeds? .{0,40}(?:shared|local) memory|(?:shared|local) memory .{0,40}exceed"
    r"|illegal (?:memory )?(?:address|access)|cudaErrorIllegalAddress|CUDA_ERROR_ILLEGAL_ADDRESS|misaligned address|SIGSEGV|SIGBUS|segmentation fault|bus error"
    r"|stack overflow|buffer overflow|std::bad_alloc|MemoryError", re.I)
_COMPILER_DIAG = re.compile(
    r"CL_BUILD_PROGRAM_FAILURE|failed to build the program|(?:^|[\s:|])error:\s|\berror\s+\w?\d{3,5}\b|"
    r"compile failed|NVRTC_ERROR_COMPILATION|nvcc fatal", re.I)
_PARALLEL = re.compile(
    r"CL_INVALID_WORK_GROUP_SIZE|CL_INVALID_WORK_ITEM_SIZE|work[- _]?group size|reqd_work_group_size"
    r"|too many resources requested for launch|invalid configuration argument|cudaErrorInvalidConfiguration"
    r"|CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES|threadIdx|blockIdx|thread[ _-]?(?:binding|extent|axis|tag)"
    r"|forget to bind|bind(?:ing)? .{0,30}thread|not bound to|\bbarrier|syncthreads|\brace\b|data race"
    r"|starts work that outlives the call|std::thread|pthread_create|warp", re.I)
_MEMORY_SCOPE = re.compile(
    r"storage[ _]scope|\bscope\b|alloc(?:ate|ation)|out[- ]of[- ]bounds|index out of range|out of range"
    r"|buffer .{0,40}(?:overflow|exceed)|access .{0,30}outside", re.I)
_NO_REPLY = re.compile(r"no reply from the model", re.I)


def classify(error_kind: str | None, error: str | None, correct: bool = False) -> FailureClass | None:
    """The failure class of an evaluation (None: it did not fail, i.e. it is correct; a correct result
    whose timing was untrusted or under the physical floor is a timing verdict, not a failure)."""
    if correct:
        return None
    kind = error_kind or ""
    if kind in _BY_KIND:
        return _BY_KIND[kind]
    text = error or ""
    if _NO_REPLY.search(text):
        return "other"  # the model gave nothing: no candidate to fail
    if _MEMORY_FAULT.search(text):
        return "memory"
    if _COMPILER_DIAG.search(text):
        return "syntax_api"
    if _PARALLEL.search(text):
        return "parallelism"
    if _MEMORY_SCOPE.search(text):
        return "memory"
    if not kind and not text:
        return "other"
    return "syntax_api" if kind in _SYNTAX_KINDS else "other"


def label(cls: str | None) -> str:
    return LABELS.get(cls or "", cls or "-")
