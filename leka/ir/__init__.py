"""The IR model: a candidate as the graph and one state per level, its edits and the views agents read.

| module | what |
| --- | --- |
| `candidate` | `Candidate` (L0 text, `levels`: each level's state), import, lowering by layer, `build_candidate`, `run_options`, `export` |
| `levels/` | each built-in level's code: `l0` (graph edits), `l1` (schedules), `l2` (target sources): state, stage, handlers, files, carry-forward |
| `edits` | `apply_edit(candidate, edit) -> EditOutcome`: applies the levels' handlers, carry-forward |
| `files` | a candidate as a folder of files, one part per level |
| `sched` | the L1 trace DSL (`apply_trace`) |
| `l2` | L2 sources: compile and cache, kernel splicing |
| `views` | bounded text views for agents; `classify` is the one kernel classifier |
| `remote` | TVM RPC helpers |

`from leka import ir` gives the candidate API (`ir.Candidate`, `ir.build_candidate`, ...).
"""

from leka.ir.candidate import (
    Building,
    Built,
    Candidate,
    Layers,
    Lowering,
    Root,
    RunOptions,
    build_candidate,
    candidate_from_file,
    candidate_params,
    check_same_signature,
    export,
    import_root,
    load_l2,
    load_params,
    lower_layers,
    lowered_module,
    params_digest,
    relax_ir,
    relax_module,
    root_candidate,
    run_options,
    save_params,
    unscheduled_module,
)
from leka.ir.l2 import IllegalObject
from leka.ir.levels.l1 import L1Entry, l1_function  # noqa: E402 - the level modules import the candidate
from leka.ir.levels.l2 import L2Entry, compile_l2_source  # noqa: E402

__all__ = ["Building", "Built", "Candidate", "Lowering", "RunOptions", "run_options", "IllegalObject", "L1Entry", "L2Entry", "Layers", "Root", "build_candidate", "load_l2",
           "candidate_from_file", "candidate_params", "check_same_signature", "compile_l2_source", "export",
           "import_root", "l1_function", "load_params", "lower_layers", "lowered_module", "params_digest",
           "relax_ir", "relax_module", "root_candidate", "save_params", "unscheduled_module"]
