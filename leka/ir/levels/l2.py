"""L2, the target-source level: its state (`L2State`: {structural hash of a scheduled PrimFunc -> a
source override} and the build's codegen options), its build stage (a linked language's source
compiled and called through `call_extern`; a spliced one's kernel put into the generated source), its
edit handlers ("source", "compile_options"), its files in a candidate folder (`l2/<primfunc><suffix>`
by the language's `file_suffixes`, `l2/compile_options.json`) and its carry-forward (an override stays
while its scheduled PrimFunc still occurs after an L0 edit; the codegen options are not carried)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from leka import ir
from leka import tvm_adapter as A
from leka.backends import all_backends, get_backend, l2_language, l2_languages
from leka.core.types import Edit
from leka.ir import Candidate, l2_guard
from leka.ir import l2 as L2
from leka.ir.edits import EditError, EditOutcome, target_for
from leka.ir.levels import CandidateFilesError, free_path
from leka.ir.levels.l1 import func_of


class L2Entry(BaseModel):
    model_config = ConfigDict(frozen=True)

    kernel: str
    language: str  # an L2 language of some backend (leka.backends)
    text: str
    entry: str | None = None  # exported symbol, where the language needs one

    @field_validator("language")
    @classmethod
    def _known_language(cls, v: str) -> str:
        if v not in l2_languages():
            raise ValueError(f"unknown L2 language {v!r}; use one of {list(l2_languages())}")
        return v


class L2State(BaseModel):
    """L2's decisions on a candidate (`Candidate.levels["L2"]`, read as `c.l2` and `c.target_opts`)."""

    model_config = ConfigDict(frozen=True)

    entries: dict[str, L2Entry] = Field(default_factory=dict)
    # compile-option edits (e.g. LLVM fast-math contraction): target attributes for the whole build
    options: dict[str, Any] = Field(default_factory=dict)

    def digest_parts(self) -> list[bytes]:
        # the entries always; the options only when set, so candidates without them keep their digests
        parts = [json.dumps({k: v.model_dump() for k, v in sorted(self.entries.items())}, sort_keys=True).encode()]
        if self.options:
            parts.append(json.dumps(self.options, sort_keys=True).encode())
        return parts


# ----------------------------------------------------------------------------- build
def stage(bw) -> None:
    """L2's build stage (leka.ir.candidate.Building): the overrides whose scheduled PrimFunc occurs."""
    bw.mod, bw.objects, bw.post, bw.applied_l2, bw.libs = _apply_l2(
        bw.mod, bw.layers, bw.candidate, bw.backend, bw.l2_dir, bw.check_objects)


def _apply_l2(mod, layers, c: Candidate, backend: str, l2_dir, check_objects: bool = True):
    """CPU: PrimFunc body -> call_extern(ENTRY), the C++ compiled and loaded. GPU: a postproc that
    splices the kernel texts into the generated source."""
    objects: list[str] = []
    libs: list[str] = []
    applied: list[str] = []
    splices: list[tuple[str, str, str]] = []  # (kernel name now, text, language)
    for name, key in layers.l2_keys.items():
        entry = c.l2.get(key)
        if entry is None:
            continue
        if entry.language in get_backend(c.backend).l2_linked:
            if backend != c.backend:
                raise L2.L2Error(f"L2 entry for {name} is {entry.language} but the target is {backend}")
            comp = compile_l2_source(entry.language, entry.text, l2_dir, check=check_objects)
            # the entry, sealed under a name of its own: the judge's baseline, built on another thread
            # of the process this library is loaded into, can never resolve a symbol to it
            sealed = L2.check_symbol(comp, entry.entry or name)
            mod = A.replace_prim_func(mod, name, A.extern_prim_func(mod[name], sealed.symbol))
            objects.append(str(sealed.obj))
            libs.append(str(sealed.so))
        else:
            if entry.language != backend:
                raise L2.L2Error(f"L2 entry for {name} is {entry.language} but the target is {backend}")
            old_kernel = entry.entry or f"{entry.kernel}_kernel"
            new_kernel = old_kernel.replace(entry.kernel, name, 1) if entry.kernel != name else old_kernel
            text = entry.text if new_kernel == old_kernel else re.sub(
                r"\b" + re.escape(old_kernel) + r"\b", new_kernel, entry.text)
            splices.append((new_kernel, text, entry.language))
        applied.append(key)
    post = None
    if splices:
        if get_backend(backend).source_hook is None:
            raise L2.L2Error(f"backend {backend} has no hook on its generated source (Backend.source_hook): "
                             f"the L2 kernel texts of {[k for k, _, _ in splices]} cannot be spliced in")
        hits = {k: 0 for k, _, _ in splices}

        def post(src: str) -> str:
            # OpenCL may hand over one source per kernel: splice where the definition is
            for kname, text, lang in splices:
                src, n = L2.splice_kernel(src, kname, text, lang)
                hits[kname] += n
            return src

        post.hits = hits  # type: ignore[attr-defined]
    return mod, objects, post, applied, libs


def compile_l2_source(language: str, text: str, l2_dir=None, check: bool = True):
    """Compile one L2 C / C++ / LLVM IR source; with `check`, its object is checked before anything
    loads it (raises `L2.IllegalObject`)."""
    compiler = l2_language(language).compiler
    if compiler == "llvm-ir":
        return L2.compile_llvm_ir(text, l2_dir, A.llvm_ir_to_object, check=check)
    if compiler not in ("c", "c++"):
        raise L2.L2Error(f"L2 language {language!r} is not compiled to an object (it is spliced into the "
                         "generated source)")
    return L2.compile_cpp(text, l2_dir, language="c" if compiler == "c" else "cpp", check=check)


def carry(old: Candidate, new: Candidate, target, root_params) -> tuple[L2State, list[str], list[str]]:
    """`old`'s overrides on `new` (its L1 entries carried already): those whose scheduled PrimFunc still
    occurs. The codegen options are not carried (an L0 edit's candidate starts without them)."""
    layers = ir.lower_layers(new, target, root_params)
    by_key = {k: n for n, k in layers.l2_keys.items()}
    entries: dict[str, L2Entry] = {}
    carried: list[str] = []
    invalidated: list[str] = []
    for key, e in old.l2.items():
        if key in by_key:
            entries[key] = e
            carried.append(f"L2:{key}:{by_key[key]}")
        else:
            invalidated.append(f"L2:{key}:{e.kernel}")
    return L2State(entries=entries), carried, invalidated


# ----------------------------------------------------------------------------- files
ENTRY_RE = re.compile(r"^\s*(?://|;|#)\s*entry:\s*([A-Za-z_]\w*)", re.M)


def l2_suffixes() -> dict[str, str]:
    """File suffix -> L2 language of the file form (each language's `file_suffixes`, leka/backends)."""
    return {suffix: lang.name for b in all_backends() for lang in b.l2 for suffix in lang.file_suffixes}


def default_entry(primfunc: str, language: str = "cpp") -> str:
    """The symbol a file of that PrimFunc defines when it declares none (the language's rule)."""
    return l2_language(language).entry_for(primfunc)


def _l2_file(name: str, e: L2Entry, record: bool) -> str | None:
    """An L2 entry's file text: its source with the entry comment where its symbol is not the default."""
    lang = l2_language(e.language)
    if not lang.file_suffixes:
        return e.text if record else None  # a language that cannot be read back from a folder
    mark = ";" if lang.syntax == "llvm-ir" else "//"
    declared = ENTRY_RE.search("\n".join(e.text.splitlines()[:5]))
    default = default_entry(name, e.language)
    named = (declared.group(1) if declared else default) == (e.entry or default)
    return e.text if named else f"{mark} entry: {e.entry}\n" + e.text  # the text changes only when it must


def _json(p: Path) -> Any:
    try:
        return json.loads(p.read_text())
    except json.JSONDecodeError as e:
        raise CandidateFilesError(f"l2/{p.name}: not JSON ({e})") from e


class L2Files:
    """`l2/<primfunc><suffix>` per override (its language's first `file_suffixes`; a language without
    one only in a node's record), `l2/compile_options.json` for the codegen options."""

    def write(self, c: Candidate, names: Mapping[str, str] | None, files: dict[str, str | bytes],
              record: bool) -> None:
        for key, e in c.l2.items():
            name = e.kernel if names is None else names.get(key)
            if name is not None and (text := _l2_file(name, e, record)) is not None:
                lang = l2_language(e.language)
                suffix = lang.file_suffixes[0] if lang.file_suffixes else f".{lang.extension}"
                files[free_path(files, f"l2/{name}", suffix, key)] = text
        if c.target_opts:
            files["l2/compile_options.json"] = json.dumps(c.target_opts, indent=1)

    def names(self, layers) -> dict[str, str]:
        return {key: name for name, key in layers.l2_keys.items()}

    def edits(self, folder: Path) -> list[tuple[str, Edit]]:
        out: list[tuple[str, Edit]] = []
        suffixes = l2_suffixes()
        for p in sorted((folder / "l2").glob("*")) if (folder / "l2").is_dir() else []:
            if p.name == "compile_options.json":
                out.append((f"l2/{p.name}", Edit(level="L2", kind="compile_options", payload={"options": _json(p)})))
            elif p.suffix in suffixes:
                text = p.read_text()
                m = ENTRY_RE.search("\n".join(text.splitlines()[:5]))
                out.append((f"l2/{p.name}", Edit(level="L2", kind="source", target=p.stem, payload={
                    "language": suffixes[p.suffix], "text": text,
                    "entry": m.group(1) if m else default_entry(p.stem, suffixes[p.suffix])})))
            elif p.is_file():
                raise CandidateFilesError(f"l2/{p.name}: expected <primfunc>{'|'.join(sorted(suffixes))} or "
                                          "compile_options.json")
        return out


FILES = L2Files()


# ----------------------------------------------------------------------------- edits
def apply_source(c: Candidate, edit: Edit, workdir: Path, root_params) -> EditOutcome:
    p = edit.payload
    lang, text, entry = p.get("language"), p.get("text"), p.get("entry")
    allowed = tuple(get_backend(c.backend).l2_languages)
    if lang not in allowed:
        raise EditError(f"language {lang!r} does not fit backend {c.backend}; use one of {list(allowed)}")
    if not isinstance(text, str) or not text.strip():
        raise EditError("source edit needs payload {'language', 'text', 'entry'}")
    if found := l2_guard.scan(lang, text):
        raise EditError(l2_guard.describe(found), "illegal_source")
    target = target_for(c)
    layers = ir.lower_layers(c, target, root_params)
    func = func_of(layers, edit.target, "scheduled")
    key = layers.l2_keys[edit.target]
    if lang in get_backend(c.backend).l2_linked:
        if not entry:
            raise EditError("a C/C++/LLVM source needs payload 'entry': the exported symbol, e.g. "
                            + L2.cpp_prototype("my_kernel", A.buffer_signature(func)))
        try:
            comp = compile_l2_source(lang, text, workdir / "l2")
            L2.check_symbol(comp, entry)
        except L2.IllegalObject as e:
            raise EditError(str(e), "illegal_source") from e
        except L2.L2Error as e:
            raise EditError(f"{e}\nexpected: {L2.cpp_prototype(entry, A.buffer_signature(func))}") from e
    else:
        kernel = entry or f"{edit.target}_kernel"
        if not L2._definitions(text, kernel, lang):
            raise EditError(f"the {lang} text must define the whole kernel {kernel!r} (signature and body)")
        entry = kernel
    new = c.model_copy(update={"l2": {**c.l2, key: L2Entry(kernel=edit.target, language=lang, text=text,
                                                              entry=entry)}, "invalidated": []})
    if get_backend(c.backend).cuda:
        _check_cuda(new, target, root_params, workdir)
    return EditOutcome(candidate=new)


def _check_cuda(c: Candidate, target, root_params, workdir: Path) -> None:
    """Build with the override spliced in and, where nvcc exists, compile the CUDA C for the arch."""
    try:
        built = ir.build_candidate(c, target, root_params=root_params, l2_dir=workdir / "l2")
    except Exception as e:  # noqa: BLE001
        raise EditError(f"the CUDA override does not build: {A.error_text(e)}") from e
    if not L2.nvcc_available():
        return
    src = A.runtime_source(built.executable)
    arch = str(target.attrs.get("arch", "sm_90"))
    try:
        A.nvcc_compile(src, arch=arch)
    except Exception as e:  # noqa: BLE001
        # TVM's message starts with the whole source; nvcc's "file(line): error: ..." lines (and
        # the offending line + caret after each) are what an agent needs
        lines = str(e).splitlines()
        picked = [ln for i, ln in enumerate(lines) for j in range(3)
                  if i - j >= 0 and ": error" in lines[i - j] and j < 3]
        msg = "\n".join(dict.fromkeys(picked)) if picked else A.error_text(e, 2500)
        raise EditError(f"nvcc rejects the CUDA source:\n{msg[:2500]}") from e


def apply_options(c: Candidate, edit: Edit, workdir: Path, root_params) -> EditOutcome:
    """A compile-option edit: LLVM codegen attributes for the whole module (fast-math flags let LLVM
    contract mul+add into FMAs and reassociate reductions into vector accumulators)."""
    allowed = get_backend(c.backend).compile_options
    if not allowed:
        raise EditError(f"backend {c.backend} takes no compile_options edits (its record lists no codegen options)")
    opts = edit.payload.get("options")
    if not isinstance(opts, dict) or not opts:
        raise EditError('payload needs "options": {name: value}, e.g. {"fast-math-contract": true}')
    bad = sorted(set(opts) - allowed)
    if bad:
        raise EditError(f"unknown option(s) {bad}; allowed: {sorted(allowed)}")
    for k, v in opts.items():
        if k == "opt-level" and (not isinstance(v, int) or not 0 <= v <= 3):
            raise EditError("opt-level must be an integer 0..3")
        if k != "opt-level" and not isinstance(v, bool):
            raise EditError(f"{k} must be true or false")
    merged = {**c.target_opts, **opts}
    if merged == c.target_opts:
        raise EditError(f"options {opts} are already set: nothing changes")
    return EditOutcome(candidate=c.model_copy(update={"target_opts": merged, "invalidated": []}))
