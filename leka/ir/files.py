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

The suffixes and default symbols are each L2 language's (`L2Language.file_suffixes`, `entry_for`,
leka/backends). `candidate_files` owns this layout: `write_candidate` writes it, and a tree node stores
it as a record (leka.loop.nodes: with `candidate.json`, without params.npz), so RUN_DIR/nodes/N is a
candidate folder.

PrimFunc names are those of `ir.lowered_module(candidate_with_this_relax, target)` (`views/kernels.txt`
of a workspace lists them; a node's record names entries by their recorded names). Reading applies the files as edits (`leka.ir.edits.apply_edit`), L1 first,
in name order, then L2, so every legality check of the loop applies; an illegal file raises
`CandidateFilesError` naming the file and the edit's error.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from pathlib import Path

from leka import ir
from leka import tvm_adapter as A
from leka.backends import all_backends, get_backend, l2_language
from leka.core.task import Task
from leka.core.types import Edit
from leka.ir import Candidate
from leka.ir.edits import apply_edit


def l2_suffixes() -> dict[str, str]:
    """File suffix -> L2 language of the file form (each language's `file_suffixes`, leka/backends)."""
    return {suffix: lang.name for b in all_backends() for lang in b.l2 for suffix in lang.file_suffixes}


_ENTRY_RE = re.compile(r"^\s*(?://|;|#)\s*entry:\s*([A-Za-z_]\w*)", re.M)


class CandidateFilesError(ValueError):
    """A candidate folder that cannot become a Candidate: the message names the file."""


def default_entry(primfunc: str, language: str = "cpp") -> str:
    """The symbol a file of that PrimFunc defines when it declares none (the language's rule)."""
    return l2_language(language).entry_for(primfunc)


def candidate_files(c: Candidate, l1_names: Mapping[str, str] | None = None,
                    l2_names: Mapping[str, str] | None = None, *, record: bool = False) -> dict[str, str | bytes]:
    """The one on-disk layout of a candidate (the module docstring), as {relative path: contents}.

    `l1_names` / `l2_names`: {entry key -> PrimFunc name} of the candidate's lowering (an entry whose
    key is not there does not apply and is left out); None: each entry's recorded name. `record`: the
    form a tree node stores (leka.loop.nodes): `candidate.json` (the whole record) beside the files,
    the texts of L2 languages without a file form (none of the built-in backends'), no params.npz (the
    record names the content-addressed file)."""
    files: dict[str, str | bytes] = {"candidate.json": c.model_dump_json()} if record else {}
    files["relax.py"] = c.relax_text
    if c.relax_json:
        files["relax.json"] = json.dumps({"relax_py_sha256": _sha(c.relax_text), "module": c.relax_json})
    if c.params_file and not record:
        files["params.npz"] = Path(c.params_file).read_bytes()
    for key, e in c.l1.items():
        name = e.func if l1_names is None else l1_names.get(key)
        if name is not None:
            path = _free(files, f"l1/{name}", ".tir.py" if e.tir_text else ".json", key)
            files[path] = e.tir_text if e.tir_text else json.dumps(e.trace or [], indent=1)
    for key, e in c.l2.items():
        name = e.kernel if l2_names is None else l2_names.get(key)
        if name is not None and (text := _l2_file(name, e, record)) is not None:
            lang = l2_language(e.language)
            files[_free(files, f"l2/{name}", lang.file_suffixes[0] if lang.file_suffixes else f".{lang.extension}",
                        key)] = text
    if c.target_opts:
        files["l2/compile_options.json"] = json.dumps(c.target_opts, indent=1)
    return files


def _free(files: dict[str, str | bytes], stem: str, suffix: str, key: str) -> str:
    """`stem + suffix`, or with the entry's key in it when another entry of the same name has it (a
    record's entries by their recorded names: an entry the lowering no longer has may share one)."""
    return stem + suffix if stem + suffix not in files else f"{stem}.{key[:8]}{suffix}"


def _l2_file(name: str, e, record: bool) -> str | None:
    """An L2 entry's file text: its source with the entry comment where its symbol is not the default."""
    lang = l2_language(e.language)
    if not lang.file_suffixes:
        return e.text if record else None  # a language that cannot be read back from a folder
    mark = ";" if lang.syntax == "llvm-ir" else "//"
    declared = _ENTRY_RE.search("\n".join(e.text.splitlines()[:5]))
    default = default_entry(name, e.language)
    named = (declared.group(1) if declared else default) == (e.entry or default)
    return e.text if named else f"{mark} entry: {e.entry}\n" + e.text  # the text changes only when it must


def write_candidate(c: Candidate, folder: str | Path, root_params=None) -> Path:
    """Write `c` as editable files (`candidate_files`, named by its lowering); returns the folder."""
    d = Path(folder)
    (d / "l1").mkdir(parents=True, exist_ok=True)
    (d / "l2").mkdir(parents=True, exist_ok=True)
    l1_names: dict[str, str] = {}
    l2_names: dict[str, str] = {}
    if c.l1 or c.l2:
        layers = ir.lower_layers(c, A.make_target(c.backend), root_params)
        l1_names = {key: name for name, key in layers.l1_keys.items()}
        l2_names = {key: name for name, key in layers.l2_keys.items()}
    for rel, data in candidate_files(c, l1_names, l2_names).items():
        p = d / rel
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
    out: list[tuple[str, Edit]] = []
    suffixes = l2_suffixes()
    for p in sorted((folder / "l1").glob("*")) if (folder / "l1").is_dir() else []:
        if p.name.endswith(".tir.py"):
            out.append((f"l1/{p.name}", Edit(level="L1", kind="tir_text", target=p.name[:-7],
                                              payload={"text": p.read_text()})))
        elif p.suffix == ".json":
            try:
                trace = json.loads(p.read_text())
            except json.JSONDecodeError as e:
                raise CandidateFilesError(f"l1/{p.name}: not JSON ({e})") from e
            out.append((f"l1/{p.name}", Edit(level="L1", kind="trace", target=p.stem,
                                              payload={"trace": trace, "append": False})))
        elif p.is_file():
            raise CandidateFilesError(f"l1/{p.name}: expected <primfunc>.json (trace) or <primfunc>.tir.py")
    for p in sorted((folder / "l2").glob("*")) if (folder / "l2").is_dir() else []:
        if p.name == "compile_options.json":
            try:
                opts = json.loads(p.read_text())
            except json.JSONDecodeError as e:
                raise CandidateFilesError(f"l2/{p.name}: not JSON ({e})") from e
            out.append((f"l2/{p.name}", Edit(level="L2", kind="compile_options", payload={"options": opts})))
        elif p.suffix in suffixes:
            text = p.read_text()
            m = _ENTRY_RE.search("\n".join(text.splitlines()[:5]))
            out.append((f"l2/{p.name}", Edit(level="L2", kind="source", target=p.stem, payload={
                "language": suffixes[p.suffix], "text": text,
                "entry": m.group(1) if m else default_entry(p.stem, suffixes[p.suffix])})))
        elif p.is_file():
            raise CandidateFilesError(f"l2/{p.name}: expected <primfunc>{'|'.join(sorted(suffixes))} or "
                                      "compile_options.json")
    return out


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
