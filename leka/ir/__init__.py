"""The IR model: a candidate as three layers of decisions, its edits and the views agents read.

| module | what |
| --- | --- |
| `candidate` | `Candidate` (L0 text, L1 and L2 entries), import, lowering by layer, `build_candidate`, `export` |
| `edits` | `apply_edit(candidate, edit) -> EditOutcome`: the handlers of every edit kind, carry-forward |
| `sched` | the L1 trace DSL (`apply_trace`) |
| `l2` | L2 sources: compile and cache, kernel splicing |
| `views` | bounded text views for agents; `classify` is the one kernel classifier |
| `remote` | TVM RPC helpers |

`from leka import ir` gives the candidate API (`ir.Candidate`, `ir.build_candidate`, ...).
"""

from leka.ir.candidate import (
    Built,
    Candidate,
    L1Entry,
    L2Entry,
    Layers,
    Root,
    build_candidate,
    candidate_from_file,
    candidate_params,
    check_same_signature,
    compile_l2_source,
    export,
    import_root,
    l1_function,
    load_l2,
    load_params,
    lower_layers,
    lowered_module,
    params_digest,
    relax_ir,
    relax_module,
    root_candidate,
    save_params,
    unscheduled_module,
)
from leka.ir.l2 import IllegalObject

__all__ = ["Built", "Candidate", "IllegalObject", "L1Entry", "L2Entry", "Layers", "Root", "build_candidate", "load_l2",
           "candidate_from_file", "candidate_params", "check_same_signature", "compile_l2_source", "export",
           "import_root", "l1_function", "load_params", "lower_layers", "lowered_module", "params_digest",
           "relax_ir", "relax_module", "root_candidate", "save_params", "unscheduled_module"]
