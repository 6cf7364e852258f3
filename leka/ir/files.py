"""A candidate as a folder of editable files, for agents that work on files (the Claude Code arm) and
for `leka bench eval --candidate DIR`. It is the same unified IR the LEKA agents edit, one file per
decision, keyed by PrimFunc *name* instead of hash:

    relax.py                  L0: the lifted-params Relax TVMScript (constants are the trailing
                              parameters c0, c1, ...; their values are the task model's own, or
                              params.npz beside it)
    params.npz                optional: the constants, when they are not the task model's own
    relax.json                optional: TVM's serialisation of the module where relax.py does not
                              parse back to the very same module; used only while relax.py is unchanged
    l1/<primfunc>.json        L1: a schedule trace (JSON list of leka.sched steps) for that PrimFunc
    l1/<primfunc>.tir.py      L1: or a whole replacement PrimFunc (same buffer parameters)
    l2/<primfunc>.cpp|.c|.ll  L2 (llvm): that kernel's source; its exported symbol is `leka_<primfunc>`,
                              or the name on a first-lines comment `// entry: NAME` (`; entry: NAME`)
    l2/<primfunc>.cu|.cl      L2 (cuda, opencl): the whole kernel function `<primfunc>_kernel` (or the
                              `// entry: NAME` one), spliced into the generated source in place of
                              TVM's; on a GPU an L1 file is a trace that binds threads
    l2/compile_options.json   L2: LLVM code-generator options, e.g. {"fast-math-contract": true}

Each level's files are its own (`LevelSpec.files`: leka/ir/levels/l1.py, l2.py; a registered level
adds its own, e.g. tests/data/l3_level.py's `l3/runtime.json`); this module writes relax.py, the
params and relax.json, and asks each level for the rest. The suffixes and default symbols are each L2
language's (`L2Language.file_suffixes`, `entry_for`, leka/backends). `candidate_files` owns this
layout: `write_candidate` writes it, and a tree node stores it as a record (leka.loop.nodes: with
`candidate.json`, without params.npz), so RUN_DIR/nodes/N is a candidate folder.

PrimFunc names are those of `ir.lowered_module(candidate_with_this_relax, target)` (`views/kernels.txt`
of a workspace lists them; a node's record names entries by their recorded names). Reading applies the files as edits (`leka.ir.edits.apply_edit`), level by
level in table order (L1 first, in name order, then L2), so every legality check of the loop applies; an illegal file raises
`CandidateFilesError` naming the file and the edit's error.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path

from leka import ir
from leka import tvm_adapter as A
from leka.backends import get_backend
from leka.core.levels import LEVEL_SPECS, behaviour
from leka.core.task import Task
from leka.core.types import Edit
from leka.ir import Candidate
from leka.ir.edits import apply_edit
from leka.ir.levels import CandidateFilesError
from leka.ir.levels.l2 import default_entry, l2_suffixes

__all__ = ["CandidateFilesError", "candidate_files", "default_entry", "l2_suffixes", "load_candidate",
           "read_candidate", "write_candidate", "write_views"]


def _level_files() -> dict[str, object]:
    """Level -> its files object (`LevelSpec.files`), in table order."""
    return {name: behaviour(spec, "files") for name, spec in LEVEL_SPECS.items() if spec.files}


def candidate_files(c: Candidate, names: Mapping[str, Mapping[str, str]] | None = None, *,
                    record: bool = False) -> dict[str, str | bytes]:
    """The one on-disk layout of a candidate (the module docstring), as {relative path: contents}.

    `names`: level -> {entry key -> PrimFunc name} of the candidate's lowering (an entry whose key is
    not there does not apply and is left out); None: each entry's recorded name. `record`: the form a
    tree node stores (leka.loop.nodes): `candidate.json` (the whole record) beside the files, the texts
    of L2 languages without a file form (none of the built-in backends'), no params.npz (the record
    names the content-addressed file)."""
    files: dict[str, str | bytes] = {"candidate.json": c.model_dump_json()} if record else {}
    files["relax.py"] = c.relax_text
    if c.relax_json:
        files["relax.json"] = json.dumps({"relax_py_sha256": _sha(c.relax_text), "module": c.relax_json})
    if c.params_file and not record:
        files["params.npz"] = Path(c.params_file).read_bytes()
    for level, lf in _level_files().items():
        lf.write(c, None if names is None else names.get(level, {}), files, record)
    return files


def write_candidate(c: Candidate, folder: str | Path, root_params=None) -> Path:
    """Write `c` as editable files (`candidate_files`, named by its lowering); returns the folder."""
    d = Path(folder)
    (d / "l1").mkdir(parents=True, exist_ok=True)
    (d / "l2").mkdir(parents=True, exist_ok=True)
    names: dict[str, Mapping[str, str]] = {}
    if any(c.levels.get(lv) is not None for lv in _level_files()):
        layers = ir.lower_layers(c, A.make_target(c.backend), root_params)
        names = {lv: lf.names(layers) for lv, lf in _level_files().items() if hasattr(lf, "names")}
    for rel, data in candidate_files(c, names).items():
        p = d / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data) if isinstance(data, bytes) else p.write_text(data)
    return d


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _relax_json(d: Path, text: str) -> str | None:
    """relax.json's module while relax.py is the text it was written with (an edited relax.py is the
    record then)."""
    p = d / "relax.json"
    if not p.is_file():
        return None
    try:
        rec = json.loads(p.read_text())
    except json.JSONDecodeError as e:
        raise CandidateFilesError(f"relax.json: not JSON ({e})") from e
    return rec.get("module") if rec.get("relax_py_sha256") == _sha(text) else None


def write_views(c: Candidate, folder: str | Path, root_params=None) -> Path:
    """Read-only reference beside a candidate: the PrimFunc table, each PrimFunc's unscheduled TIR
    (what an L1 trace applies to), and what an L2 file starts from, by the backend's first L2
    language: a linked one's C prototypes (`l2_prototypes.txt`), a spliced one's generated kernels
    (`sources/<primfunc><suffix>`, to copy and edit) with the schedule they run under
    (`scheduled/<primfunc>.py`: the default GPU schedule, thread binding included)."""
    from leka.ir import l2 as L2
    from leka.ir import views as V

    d = Path(folder)
    (d / "tir").mkdir(parents=True, exist_ok=True)
    target = A.make_target(c.backend)
    (d / "kernels.txt").write_text(V.kernel_table_text(c, target, root_params) + "\n")
    layers = ir.lower_layers(c, target, root_params)
    lang = get_backend(c.backend).l2[0] if get_backend(c.backend).l2 else None
    protos = []
    scheduled = A.prim_funcs(layers.scheduled)
    for name, f in A.prim_funcs(layers.unscheduled).items():
        (d / "tir" / f"{name}.py").write_text(f.script())
        if lang is None:
            continue
        if lang.linked:
            protos.append(f"// {name}\n{L2.cpp_prototype(default_entry(name, lang.name), A.buffer_signature(f))}")
        elif lang.file_suffixes and name in scheduled:
            (d / "scheduled").mkdir(exist_ok=True)
            (d / "sources").mkdir(exist_ok=True)
            (d / "scheduled" / f"{name}.py").write_text(scheduled[name].script())
            (d / "sources" / f"{name}{lang.file_suffixes[0]}").write_text(
                V.source_view(c, name, target, max_chars=1 << 30, root_params=root_params) + "\n")
    if protos:
        (d / "l2_prototypes.txt").write_text("\n\n".join(protos) + "\n")
    return d


def _edits(folder: Path) -> list[tuple[str, Edit]]:
    """Each level's files as its edits, level by level in table order."""
    return [pair for lf in _level_files().values() for pair in lf.edits(folder)]


def read_candidate(task: Task, folder: str | Path, backend: str = "llvm", *, workdir: str | Path,
                   root_params=None) -> Candidate:
    """The Candidate a folder describes; raises CandidateFilesError with the first illegal file."""
    d = Path(folder)
    if not (d / "relax.py").is_file():
        raise CandidateFilesError(f"{d}: no relax.py (the L0 Relax text every candidate folder holds)")
    npz = d / "params.npz"
    text = (d / "relax.py").read_text()
    c = Candidate(task=task.id, task_path=str(task.path), backend=backend, relax_text=text,
                  relax_json=_relax_json(d, text), params_file=str(npz.resolve()) if npz.is_file() else None)
    for where, edit in _edits(d):
        got = apply_edit(c, edit, workdir=Path(workdir), root_params=root_params, build_check=False)
        if not got.ok:
            raise CandidateFilesError(f"{where}: {got.error}")
        c = got.candidate
    return c


def _run_candidate_json(d: Path) -> Path | None:
    """The candidate.json a run folder stands for: its own, or its best node's (summary.json)."""
    import json

    from leka.core.types import UserError

    if (d / "candidate.json").is_file():
        return d / "candidate.json"
    if not (d / "summary.json").is_file():
        return None
    best = json.loads((d / "summary.json").read_text()).get("best_node")
    if best is None:
        raise UserError(f"{d}: the run has no best node (nothing correct)")
    return d / "nodes" / str(best) / "candidate.json"


def load_candidate(task: Task, path: str | Path, backend: str = "llvm", *, workdir: str | Path) -> Candidate:
    """`--candidate` of `leka bench eval`: a candidate folder, a Candidate JSON file (candidate.json of
    a run), or a lifted-params TVMScript file (L0 only)."""
    p = Path(path)
    if p.is_dir() and (run_cand := _run_candidate_json(p)) is not None:
        p = run_cand  # a run folder (its best node), RUN_DIR/nodes/N, or a folder with a candidate.json
    if p.is_dir():
        if not (p / "relax.py").is_file():
            from leka.core.types import UserError

            raise UserError(f"{p}: no candidate.json and no relax.py (give a run folder, RUN_DIR/nodes/N, a "
                            "candidate folder or a candidate file)")
        return read_candidate(task, p, backend, workdir=workdir)
    if p.suffix == ".json":
        try:
            c = Candidate.model_validate_json(p.read_text())
        except ValueError as e:
            raise CandidateFilesError(f"{p}: not a candidate JSON ({str(e).splitlines()[0]})") from e
        return c.model_copy(update={"task": task.id, "task_path": str(task.path), "backend": backend})
    return ir.candidate_from_file(task, p, backend)
