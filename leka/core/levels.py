"""One table per level: what each IR level edits, its edit kinds, its prompt template, its colour in the
tree view and the evidence the router reads for it.

The other layers key their own per-level parts by these names and tests check they cover the table:
the edit handlers (`leka.ir.edits._HANDLERS`, by (level, kind)), the edit payloads the model is shown
(`leka.llm.prompting.EDIT_KINDS`), the rule agents (`agents.rules.RULE_AGENTS`), the prompt templates
(`prompts/<template>`) and the router's scores (`agents.hw_sensing.score_levels`); the loop's nodes
(`leka.loop.graph`, one node per level) are made from the table. A new level is its name in
`leka.core.types.LEVELS`, a spec here and its entry in each of those tables, with the code behind it
(handlers, an agent, a template, a score); tests/test_architecture.py fails until each covers it.
"""

from __future__ import annotations

from dataclasses import dataclass

from leka.core.types import LEVELS, Level


@dataclass(frozen=True)
class LevelSpec:
    name: Level
    title: str  # short name in views and reports
    edits: str  # what an edit at this level changes
    edit_kinds: dict[str, str]  # kind -> one-line description (payloads: leka.llm.prompting.EDIT_KINDS)
    template: str  # jinja2 template of the LLM agent, under prompts/
    colour: str  # node colour in tree.html
    evidence: str  # what the hardware-sensing router reads to send work here

    @property
    def node(self) -> str:
        """The name of this level's node in the LangGraph loop."""
        return self.name.lower()


LEVEL_SPECS: dict[str, LevelSpec] = {
    "L0": LevelSpec(
        "L0", "graph", "the Relax graph (lifted-params TVMScript)",
        {"pass": "apply one named graph pass (leka.tvm_adapter.l0_passes)",
         "relax_text": "replace the whole Relax module"},
        "l0_relax.j2", "#1f77b4",
        "layout copies, many small kernels and VM builtins, unfused elementwise epilogues, large intermediates"),
    "L1": LevelSpec(
        "L1", "schedule", "the TIR schedule of one PrimFunc",
        {"trace": "schedule one PrimFunc with a trace of s_tir.Schedule primitives",
         "tir_text": "replace one PrimFunc's TIR",
         "traces": "schedule several PrimFuncs in one edit, a trace each"},
        "l1_tir.j2", "#ff7f0e",
        "hot kernels without a schedule, far from their roofline roof"),
    "L2": LevelSpec(
        "L2", "source", "the target source of one kernel, or the build's codegen options",
        {"source": "replace one kernel's target source",
         "compile_options": "codegen options of the whole build (e.g. LLVM fast-math contraction)"},
        "l2_source.j2", "#2ca02c",
        "the hottest scheduled kernel's instructions: scalar where vector FMAs are expected, GEMM gaps"),
}

assert tuple(LEVEL_SPECS) == LEVELS, "LEVEL_SPECS must list every level of leka.core.types.LEVELS in order"


# `run.routing` (leka.core.config): the hardware-sensing router reads the profile; the others are ablations
ROUTING_MODES: tuple[str, ...] = ("profile", "round_robin", "random", *(f"fixed:{lv}" for lv in LEVELS))
