"""The level table: each IR level is one `LevelSpec` that owns its behaviour and its state.

A spec names, per level: its edit kinds (each with its target, payload fields and the handler that
applies it), its state (a pydantic model: the level's decisions in `Candidate.levels`), its files in a
candidate folder, its phase (the step of lowering, build or run where its decisions apply), how its
state is carried forward when an earlier level changes, the rule agent, the router's evidence score,
the LLM agent's role and prompt template, its colour in the tree view. The other layers read the table
instead of keeping their own lists: the edit handlers (`leka.ir.edits.handlers()`), the candidate's
states and digest (`leka.ir.candidate`), the candidate folder (`leka.ir.files`), the carry-forward
(`leka.ir.edits.carry_forward`), the prompts' edit kinds (`leka.llm.prompting.EDIT_KINDS`, the small
models' schemas), the rule agents (`agents.rules.RULE_AGENTS`), the router's scores
(`agents.hw_sensing.score_levels`), the lowering, build and run (`leka.ir.candidate.lower_layers`,
`build_candidate`, `run_options`), the loop's nodes (`leka.loop.graph`), `run.layers`' default, the
routing modes, the experiment presets and the report columns. The built-in levels' code is one module
each: `leka/ir/levels/` (l0.py, l1.py, l2.py).

This module sits below the code it names, so behaviour is named by reference (`"module:attr"`,
resolved at first use), as a backend record names its rule agents. A new level is one spec and the
code behind it, registered by a run config's `levels.extra` (`["module:LEVEL"]` or
`["path/to/file.py:LEVEL"]`, `register_refs`), by an installed package's entry point of the group
"leka.levels" (`register_entry_points`), or by `register_level(spec)` at run time
(tests/data/l3_level.py: runtime options, a level with state of its own). A registered level's module
travels with each evaluation job (`extension_modules`), so the evaluation child loads it too
(`load_extensions`) and lowers, builds and runs a candidate the same way.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class EditKind:
    """One kind of edit of a level: what the model is told, and the handler that applies it."""

    describe: str  # one line for the prompt's schema
    # field -> what to put there (`{l0_passes}`; `{l2_languages}`, `{option_sets}`: the backend's, from its
    # record, filled in by leka.llm.prompting)
    payload: dict[str, str]
    handler: str  # "module:function" (candidate, edit, workdir, root_params) -> leka.ir.edits.EditOutcome
    target: str | None = None  # what `Edit.target` names (e.g. "PrimFunc name"); None: no target
    # a field of the backend's record (leka.backends.Backend) that must be non-empty for a prompt on that
    # backend to offer this kind ("compile_options"); "": every backend
    needs: str = ""


@dataclass(frozen=True)
class LevelSpec:
    name: str
    title: str  # short name in views, reports and the tree view's legend
    noun: str  # "the graph level": what an ablation that switches it off is without
    edits: str  # what an edit at this level changes
    edit_kinds: dict[str, EditKind]
    rule_agent: str  # "module:Class" of the offline rule agent (a backend's record may name its own)
    score: str  # "module:function" (ProfileReport, tuner: bool) -> (score in [0, 1], evidence)
    role: str  # the LLM agent's role in its system prompt
    template: str  # jinja2 template of the LLM agent: a name under prompts/, or an absolute path
    colour: str  # node colour in tree.html
    evidence: str  # what the hardware-sensing router reads to send work here (its prompt, hw_sensing.j2)
    # "module:function": this level's step in its `phase`, run in table order with the other levels' of
    # that phase: "lower" (leka.ir.candidate.Lowering) -> None, a step of lower_layers; "build"
    # (leka.ir.candidate.Building) -> None, after lowering (L2's sources); "run" (candidate,
    # leka.ir.candidate.RunOptions) -> None, the options its runs take (the sandboxed worker's threads).
    # None where the level has none (L0 is the lowering's input)
    stage: str | None = None
    phase: str = "lower"  # lower | build | run: when `stage` applies
    module: str | None = None  # the module that defines a registered spec (travels with evaluation jobs)
    # "module:Model": the pydantic model of this level's decisions, one value of `Candidate.levels`
    # (its default: the level decided nothing); None: the level has no state of its own (L0: the graph
    # is the candidate's own text)
    state: str | None = None
    # "module:attr": its files in a candidate folder (leka.ir.files): an object with
    # `write(candidate, names, files, record)` (adds {relative path: text} to `files`; `names`: {entry key
    # -> PrimFunc name} from its `names(layers)` where it has one, else None), `edits(folder) -> [(path,
    # Edit)]` (the files read back as this level's edits)
    files: str | None = None
    # "module:function" (old candidate, new candidate, target, root_params) -> (state, carried,
    # invalidated): this level's state on `new`, whose earlier levels changed (`new` holds the carried
    # states of the levels above); None: the state is kept as it is
    carry: str | None = None
    _resolved: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def node(self) -> str:
        """The name of this level's node in the LangGraph loop."""
        return self.name.lower()


def resolve(ref: str) -> Any:
    """The object a `"module:attr"` reference names."""
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


PHASES = ("lower", "build", "run")


def _ek(level: str, describe: str, payload: dict[str, str], handler: str, target: str | None = None,
        needs: str = "") -> EditKind:
    return EditKind(describe, payload, f"leka.ir.levels.{level}:{handler}", target, needs)


_BUILTIN = (
    LevelSpec(
        "L0", "graph", "graph level", "the Relax graph (lifted-params TVMScript)",
        {"pass": _ek("l0", "apply one graph-level pass", {"name": "one of {l0_passes}"}, "apply_pass"),
         "relax_text": _ek("l0", "replace the whole Relax module",
                           {"text": "the whole new Relax TVMScript (lifted params: keep the trailing "
                                    "constant parameters c0, c1, ... and their order)"}, "apply_text")},
        "agents.l0_relax:RuleL0Agent", "agents.hw_sensing:score_l0",
        "the L0 agent (graph-level edits to the Relax module)", "l0_relax.j2", "#1f77b4",
        "layout transposes, many small kernels, large intermediates, unfused elementwise chains"),
    LevelSpec(
        "L1", "schedule", "schedule level", "the TIR schedule of one PrimFunc",
        {"trace": _ek("l1", "schedule one PrimFunc", {"trace": "list of schedule steps in the trace DSL"},
                      "apply_trace", "PrimFunc name"),
         "tir_text": _ek("l1", "replace one PrimFunc's TIR",
                         {"text": "replacement TIR TVMScript for that PrimFunc (same signature)"},
                         "apply_tir", "PrimFunc name"),
         "traces": _ek("l1", "schedule several PrimFuncs in one edit (a graph of many unscheduled kernels)",
                       {"traces": "object: PrimFunc name -> its list of schedule steps"}, "apply_traces")},
        "agents.l1_tir:RuleL1Agent", "agents.hw_sensing:score_l1",
        "the L1 agent (loop schedules for TIR PrimFuncs)", "l1_tir.j2", "#ff7f0e",
        "a hot kernel far from its roofline with poor parallelism, tiling or locality", stage="leka.ir.levels.l1:stage",
        state="leka.ir.levels.l1:L1State", files="leka.ir.levels.l1:FILES", carry="leka.ir.levels.l1:carry"),
    LevelSpec(
        "L2", "source", "target-source level", "the target source of one kernel, or the build's codegen options",
        {"source": _ek("l2", "override one kernel's target source",
                       {"language": "one of {l2_languages}", "text": "the source", "entry": "exported symbol, or null"},
                       "apply_source", "kernel (PrimFunc) name"),
         "compile_options": _ek("l2", "change the code generator's options for the whole module",
                                {"options": "code-generator attributes for the whole module, e.g. {option_sets}"},
                                "apply_options", needs="compile_options")},
        "agents.l2_source:RuleL2Agent", "agents.hw_sensing:score_l2",
        "the L2 agent (target source for single kernels)", "l2_source.j2", "#2ca02c",
        "a hot kernel already scheduled but scalar, spilling, or missing the expected vector or tensor instructions",
        stage="leka.ir.levels.l2:stage", phase="build", state="leka.ir.levels.l2:L2State",
        files="leka.ir.levels.l2:FILES", carry="leka.ir.levels.l2:carry"),
)

LEVEL_SPECS: dict[str, LevelSpec] = {s.name: s for s in _BUILTIN}  # in level order, top down
BUILTIN_LEVELS: tuple[str, ...] = tuple(LEVEL_SPECS)


def register_level(spec: LevelSpec) -> LevelSpec:
    """Add a level below the others (a spec of that name again replaces it in place)."""
    if spec.name in BUILTIN_LEVELS:
        raise ValueError(f"level {spec.name} is built in")
    if not spec.edit_kinds:
        raise ValueError(f"level {spec.name} has no edit kinds")
    if spec.phase not in PHASES:
        raise ValueError(f"level {spec.name}: phase {spec.phase!r} is not one of {', '.join(PHASES)}")
    LEVEL_SPECS[spec.name] = spec
    return spec


ENTRY_POINT_GROUP = "leka.levels"


def load_level(ref: str) -> LevelSpec:
    """The spec a reference names: `"module:ATTR"` (imported by name) or `"path/to/file.py:ATTR"` (a file
    of no package, loaded under its stem's name, so its spec's `"stem:..."` references resolve)."""
    where, _, attr = ref.rpartition(":")
    if not where or not attr:
        raise ValueError(f"level reference {ref!r}: expected module:ATTR or path/to/file.py:ATTR")
    if where.endswith(".py"):
        path = Path(where).expanduser().resolve()
        mod = sys.modules.get(path.stem)
        if mod is None or Path(getattr(mod, "__file__", "") or "").resolve() != path:
            if not path.is_file():
                raise ValueError(f"level reference {ref!r}: no file {path}")
            spec = importlib.util.spec_from_file_location(path.stem, path)
            if spec is None or spec.loader is None:
                raise ValueError(f"level reference {ref!r}: cannot load {path}")
            mod = importlib.util.module_from_spec(spec)
            sys.modules[path.stem] = mod
            spec.loader.exec_module(mod)
    else:
        mod = importlib.import_module(where)
    spec_obj = getattr(mod, attr, None)
    if not isinstance(spec_obj, LevelSpec):
        raise ValueError(f"level reference {ref!r}: {attr} is no LevelSpec")
    return spec_obj


def register_refs(refs: list[str]) -> list[str]:
    """Register the levels a config names (`levels.extra`, leka.core.config); returns their names."""
    return [register_level(load_level(r)).name for r in refs]


_ENTRY_POINTS_READ = False


def register_entry_points(group: str = ENTRY_POINT_GROUP) -> list[str]:
    """Register the levels installed packages declare (`[project.entry-points."leka.levels"]`, each a
    LevelSpec), once per process; returns their names."""
    global _ENTRY_POINTS_READ
    if _ENTRY_POINTS_READ and group == ENTRY_POINT_GROUP:
        return []
    from importlib.metadata import entry_points

    names = []
    for ep in entry_points(group=group):
        spec = ep.load()
        if not isinstance(spec, LevelSpec):
            raise ValueError(f"entry point {ep.name} of {group}: {ep.value} is no LevelSpec")
        names.append(register_level(spec).name)
    if group == ENTRY_POINT_GROUP:
        _ENTRY_POINTS_READ = True
    return names


def unregister_level(name: str) -> None:
    if name in BUILTIN_LEVELS:
        raise ValueError(f"level {name} is built in")
    LEVEL_SPECS.pop(name, None)


def level_names() -> tuple[str, ...]:
    return tuple(LEVEL_SPECS)


def get_level(name: str) -> LevelSpec:
    try:
        return LEVEL_SPECS[name]
    except KeyError:
        raise ValueError(f"unknown level {name!r}; one of {', '.join(LEVEL_SPECS)}") from None


def behaviour(spec: LevelSpec, what: str) -> Any:
    """The object `spec.<what>` names (rule_agent, score, stage, state, files, carry), resolved once."""
    if what not in spec._resolved:
        spec._resolved[what] = resolve(getattr(spec, what))
    return spec._resolved[what]


def routing_modes() -> tuple[str, ...]:
    """`run.routing` (leka.core.config): the hardware-sensing router reads the profile; the others are ablations."""
    return ("profile", "round_robin", "random", *(f"fixed:{lv}" for lv in LEVEL_SPECS))


class LiveTable(Mapping[str, Any]):
    """A mapping made from the level table each time it is read, so a level registered later is in it
    (what other layers export as their per-level tables: EDIT_KINDS, RULE_AGENTS, ...)."""

    def __init__(self, make: Callable[[], dict[str, Any]]):
        self._make = make

    def __getitem__(self, key: str) -> Any:
        return self._make()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._make())

    def __len__(self) -> int:
        return len(self._make())

    def __repr__(self) -> str:
        return repr(self._make())


def extension_modules() -> list[dict[str, str]]:
    """What an evaluation job carries so its child registers the same levels: per registered level
    its module's name and file."""
    out = []
    for s in LEVEL_SPECS.values():
        if s.name in BUILTIN_LEVELS:
            continue
        mod = sys.modules.get(s.module or "")
        if mod is None or not getattr(mod, "__file__", None):
            raise ValueError(f"level {s.name}: its spec names no loaded module (LevelSpec.module), so an "
                             "evaluation process cannot load it")
        out.append({"level": s.name, "module": s.module, "file": mod.__file__})
    return out


def load_extensions(entries: list[dict[str, str]]) -> None:
    """Register the levels an evaluation job names: each module's `LEVEL` spec, the module imported by
    name, else loaded from its file under that name (a test tree is not on the child's path)."""
    for e in entries:
        if e["level"] in LEVEL_SPECS:
            continue
        mod = sys.modules.get(e["module"])
        if mod is None:
            try:
                mod = importlib.import_module(e["module"])
            except ImportError:
                spec = importlib.util.spec_from_file_location(e["module"], e["file"])
                if spec is None or spec.loader is None:
                    raise ValueError(f"level {e['level']}: cannot load {e['file']}") from None
                mod = importlib.util.module_from_spec(spec)
                sys.modules[e["module"]] = mod
                spec.loader.exec_module(mod)
        register_level(mod.LEVEL)
