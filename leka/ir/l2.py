"""L2 target-source overrides: compiling C/C++ (and LLVM IR) kernels, splicing CUDA C / OpenCL C.

The CPU contract an agent writes to (kept simple on purpose):

    extern "C" int32_t ENTRY(float* p0, float* p1, ..., float* pn)   // returns 0 on success

one pointer per buffer parameter of the PrimFunc, in order (inputs, then outputs), shapes static and
baked into the source. `leka.ir` compiles the source here (g++ -O3 -march=native -fopenmp; for a board,
its cross compiler with the board's -mcpu: `toolchain`), seals the
object (ENTRY renamed to `leka_l2_<digest>_ENTRY`, every other definition local: `seal`), replaces the
PrimFunc's body by `T.call_extern(<sealed name>, p0.data, ...)`; only the candidate's sandboxed worker
(or an in-process run the caller chose: `load_libraries`) loads the sealed library RTLD_GLOBAL for
the JIT; exported libraries link the sealed object.

On CUDA / OpenCL an override is the text of one whole kernel function (`extern "C" __global__ void
NAME(...) {...}` / `__kernel void NAME(...) {...}`); it replaces the function of the same name in the
generated source at compile time. How a language's kernels are found is its `L2Language` record
(`kernel_qualifier`, in leka/backends), so a new backend's language needs no change here.

Compiled artefacts are content-addressed: the same text never compiles twice.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from leka.backends import l2_language
from leka.core.devices import current_board
from leka.ir import l2_guard, l2_object

CXX = os.environ.get("LEKA_CXX", "g++")
CXX_FLAGS = ["-O3", "-march=native", "-fopenmp", "-fPIC", "-std=c++17"]
DEFAULT_DIR = Path(".leka-cache") / "l2"
C_TYPES = {"float32": "float", "float64": "double", "float16": "uint16_t", "bfloat16": "uint16_t",
           "int8": "int8_t", "int16": "int16_t", "int32": "int32_t", "int64": "int64_t",
           "uint8": "uint8_t", "uint16": "uint16_t", "uint32": "uint32_t", "uint64": "uint64_t", "bool": "bool"}


@dataclass(frozen=True)
class Toolchain:
    """The compiler an L2 C/C++ source is built with: this machine's g++ for this CPU, or a board's
    cross compiler (`device.cross_compiler`) with flags for the board's CPU (`device.target`'s mcpu /
    mattr); `prefix` names the matching binutils (aarch64-linux-gnu-objcopy)."""

    cxx: str
    flags: tuple[str, ...]
    prefix: str = ""


def _board_cpu(target: dict) -> dict:
    """The CPU part of a board's device.target: itself for llvm, its `host` for a GPU target."""
    host = target.get("host")
    return host if isinstance(host, dict) else target


def toolchain() -> Toolchain:
    """The toolchain of the board this process builds for (leka.core.devices.use_board); the host's
    without one, or without a cross compiler (a board of this machine's instruction set)."""
    board = current_board()
    if board is None or not board.cross_compiler:
        return Toolchain(CXX, tuple(CXX_FLAGS))
    cpu = _board_cpu(board.target)
    mcpu, triple = str(cpu.get("mcpu") or ""), str(cpu.get("mtriple") or "")
    mattr = [str(a) for a in (cpu.get("mattr") or [])]
    if mcpu:
        arch = [f"-mcpu={mcpu}"]
    elif triple.startswith("aarch64"):  # the baseline every ARMv8-A board runs; SVE where the board says so
        arch = ["-march=armv8-a" + ("+sve" if "+sve" in mattr else "")]
    else:
        arch = []
    cc = board.cross_compiler
    name = Path(cc).name
    prefix = name[: name.rindex("-") + 1] if "-" in name else ""
    return Toolchain(cc, ("-O3", *arch, "-fopenmp", "-fPIC", "-std=c++17"), prefix)


class L2Error(ValueError):
    """A source that does not compile or does not fit; the message carries the compiler's words."""


class IllegalObject(L2Error):
    """The compiled object calls outside the kernel allow-list, runs code at load time or keeps
    writable state (leka/ir/l2_object.py): the evaluator reports it as `illegal_source`."""

    def __init__(self, findings: list[l2_guard.Finding]):
        self.findings = findings
        super().__init__(l2_guard.describe(findings))


@dataclass(frozen=True)
class Compiled:
    so: Path  # shared library for the in-process JIT (loaded RTLD_GLOBAL)
    obj: Path  # object file to link into an exported library
    digest: str


def _digest(*parts: str) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


def _trim_diagnostics(text: str, limit: int = 2500) -> str:
    """Compiler output, errors first: an agent needs the first error and its line, not 200 notes."""
    lines = text.strip().splitlines()
    errs = [i for i, ln in enumerate(lines) if "error" in ln.lower()]
    if errs:
        lines = lines[max(0, errs[0] - 2):]
    out = "\n".join(lines)
    return out if len(out) <= limit else out[:limit] + "\n... [truncated]"


def _run(cmd: list[str], what: str) -> None:
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise L2Error(f"{what}: could not run {cmd[0]}: {e}") from e
    if r.returncode != 0:
        raise L2Error(f"{what} failed (exit {r.returncode}):\n{_trim_diagnostics(r.stderr or r.stdout)}")


def compile_cpp(text: str, directory: str | Path | None = None, language: str = "cpp",
                check: bool = True) -> Compiled:
    """g++ the source into an object and a shared library, cached by content hash; with `check`,
    the object is checked (`IllegalObject`) before the library is linked or loaded."""
    d = Path(directory) if directory else DEFAULT_DIR
    d.mkdir(parents=True, exist_ok=True)
    tc = toolchain()
    cxx = tc.cxx
    lang_flag = ["-x", "c"] if language == "c" else ["-x", "c++"]
    flags = list(tc.flags) if language != "c" else [f for f in tc.flags if not f.startswith("-std=")]
    dig = _digest(language, text, " ".join(flags), cxx)
    src = d / f"{dig}.{'c' if language == 'c' else 'cc'}"
    obj, so = d / f"{dig}.o", d / f"{dig}.so"
    if obj.exists() and so.exists():
        return _checked(Compiled(so=so, obj=obj, digest=dig), text, check)
    src.write_text(text)
    tmp_o, tmp_so = d / f"{dig}.{os.getpid()}.o.tmp", d / f"{dig}.{os.getpid()}.so.tmp"
    _run([cxx, *flags, *lang_flag, "-c", str(src), "-o", str(tmp_o)], "C++ compile")
    if check:
        _check_object(tmp_o, text)  # before the rename: a rejected object is never a cache hit
    _run([cxx, *flags, "-shared", str(tmp_o), "-o", str(tmp_so)], "C++ link")
    tmp_o.replace(obj)
    tmp_so.replace(so)
    return Compiled(so=so, obj=obj, digest=dig)


def compile_llvm_ir(text: str, directory: str | Path | None, to_object, check: bool = True) -> Compiled:
    """LLVM IR text defining the C-ABI ENTRY -> object (via `to_object(ll_path, obj_path)`, TVM's own
    LLVM, so no clang is needed) -> shared library (g++ links it)."""
    d = Path(directory) if directory else DEFAULT_DIR
    d.mkdir(parents=True, exist_ok=True)
    tc = toolchain()
    dig = _digest("llvm", text, tc.cxx)
    ll, obj, so = d / f"{dig}.ll", d / f"{dig}.o", d / f"{dig}.so"
    if obj.exists() and so.exists():
        return _checked(Compiled(so=so, obj=obj, digest=dig), text, check)
    ll.write_text(text)
    tmp_o = d / f"{dig}.{os.getpid()}.tmp.o"  # LLVM picks the format by the suffix
    try:
        to_object(str(ll), str(tmp_o))
    except Exception as e:  # noqa: BLE001 - the IR parser's message is the useful part
        raise L2Error(f"LLVM IR does not parse/compile: {str(e).strip()[-1500:]}") from e
    if check:
        _check_object(tmp_o, text)
    tmp_o.replace(obj)
    _run([tc.cxx, "-fopenmp", "-shared", str(obj), "-o", str(so)], "link of the LLVM IR object")
    return Compiled(so=so, obj=obj, digest=dig)


# (object path, mtime_ns, size) already found clean in this process: a cache hit is checked once
_CLEAN: set[tuple[str, int, int]] = set()


def _check_object(obj: Path, text: str) -> None:
    """Raise IllegalObject for what the object shows (undefined symbols off the allow-list, load-time
    code, writable state); this runs before the library is ever loaded, so its load-time code never
    runs in this process."""
    st = obj.stat()
    key = (str(obj.resolve()), st.st_mtime_ns, st.st_size)
    if key in _CLEAN:
        return
    try:
        found = l2_object.scan(obj, text)
    except (OSError, subprocess.SubprocessError, l2_object.ToolMissing) as e:
        raise L2Error(f"could not inspect the compiled object: {e}") from e
    if found:
        if ".tmp" in obj.name:
            obj.unlink(missing_ok=True)
        raise IllegalObject(found)
    _CLEAN.add(key)


def _checked(comp: Compiled, text: str, check: bool) -> Compiled:
    if check:
        _check_object(comp.obj, text)
    return comp


_LOADED: dict[str, ctypes.CDLL] = {}


def load_global(so: str | Path) -> ctypes.CDLL:
    """Make the library's symbols visible to TVM's LLVM JIT (process-global lookup). Only sealed
    libraries (`seal`) come here: whatever one exports, every later lookup in the process can find."""
    key = str(Path(so).resolve())
    # spinning OpenMP workers starve TVM's thread pool between kernels (read when libgomp loads)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    if key not in _LOADED:
        _LOADED[key] = ctypes.CDLL(key, mode=ctypes.RTLD_GLOBAL)
    return _LOADED[key]


@dataclass(frozen=True)
class Sealed:
    """A compiled L2 source whose one global symbol is `symbol` (its entry, renamed): the library the
    JIT resolves `call_extern(symbol)` in, and the object an exported library links."""

    so: Path
    obj: Path
    symbol: str


def sealed_symbol(digest: str, entry: str) -> str:
    """Unique per source and entry: no PrimFunc, TVM or system symbol is spelt `leka_l2_<hex>_...`."""
    return f"leka_l2_{digest}_{entry}"


def _objcopy(tc: Toolchain | None = None) -> str:
    # a board's object is rewritten by its own binutils (aarch64-linux-gnu-objcopy, or the NDK's
    # llvm-objcopy beside its clang): the host's GNU objcopy may not know the board's relocations
    cross = [tc.prefix + "objcopy", str(Path(tc.cxx).parent / "llvm-objcopy"), "llvm-objcopy"] if tc and tc.prefix else []
    tool = next((t for t in (*map(shutil.which, cross), shutil.which("objcopy"), shutil.which("llvm-objcopy")) if t), None)
    if tool is None:
        raise L2Error("objcopy not found (binutils): an L2 object cannot be sealed, so it is not loaded")
    return tool


def seal(compiled: Compiled, entry: str) -> Sealed:
    """The object with `entry` renamed to `sealed_symbol` and every other definition made local, linked
    into its own library. The library is loaded RTLD_GLOBAL for the JIT, into the judge that builds the
    baseline beside the candidate and forks the baseline's worker: exporting only a name nothing else
    uses, it can never stand in for a symbol the baseline's kernels, their libraries or the JIT look
    up (a kernel named like the PrimFunc it replaces, `__tvm_ffi_*`, libm, TVM's runtime calls)."""
    if not re.fullmatch(_IDENT, entry):
        raise L2Error(f"the entry {entry!r} is not a C identifier")
    symbol = sealed_symbol(compiled.digest, entry)
    tc = toolchain()
    d = compiled.obj.parent
    obj, so = d / f"{symbol}.sealed.o", d / f"{symbol}.sealed.so"
    if not (obj.exists() and so.exists()):
        tmp_o, tmp_so = d / f"{symbol}.{os.getpid()}.sealed.tmp.o", d / f"{symbol}.{os.getpid()}.sealed.tmp.so"
        _run([_objcopy(tc), f"--redefine-sym={entry}={symbol}", f"--keep-global-symbol={symbol}",
              str(compiled.obj), str(tmp_o)], "sealing the L2 object")
        _run([tc.cxx, "-fopenmp", "-shared", str(tmp_o), "-o", str(tmp_so)], "link of the sealed L2 object")
        tmp_o.replace(obj)
        tmp_so.replace(so)
    return Sealed(so=so, obj=obj, symbol=symbol)


def check_symbol(compiled: Compiled, entry: str) -> Sealed:
    """The sealed library; raises where the source does not define `entry`. Read from the sealed
    object's symbol table: a trusted process never loads a candidate's library (its constructors and
    IFUNC resolvers would run at load); the sandboxed worker does (`load_libraries`)."""
    sealed = seal(compiled, entry)
    try:
        defined = l2_object.defined(sealed.obj)
    except (OSError, subprocess.SubprocessError, l2_object.ToolMissing) as e:
        raise L2Error(f"could not read the L2 object's symbols: {e}") from e
    if sealed.symbol not in defined:
        hint = ' (declare it extern "C" so the name is not mangled)'
        raise L2Error(f"the compiled source does not export the symbol {entry!r}{hint}")
    return sealed


def load_libraries(paths: list[str]) -> None:
    """Load sealed L2 libraries for the JIT: only where the candidate is meant to run (its sandboxed
    worker, or an in-process run the caller chose)."""
    for so in paths:
        load_global(so)


def cpp_prototype(entry: str, signature: list[tuple[str, tuple[int, ...], str]]) -> str:
    """The declaration an L2 C/C++ source must define for this PrimFunc (for prompts and checks)."""
    args = []
    for i, (name, shape, dt) in enumerate(signature):
        args.append(f"{C_TYPES.get(dt, 'void')}* p{i} /* {name} {list(shape)} {dt} */")
    return f'extern "C" int32_t {entry}({", ".join(args)});'


# ----------------------------------------------------------------------------- kernel text splicing
_IDENT = r"[A-Za-z_]\w*"


def kernel_names(src: str, language: str) -> list[str]:
    """Names of the kernels *defined* (not just declared) in the source, in order, once each."""
    out: list[str] = []
    for name in re.findall(_qual(language) + "(" + _IDENT + r")\s*\(", src):
        if name not in out and _definitions(src, name, language):
            out.append(name)
    return out


def _qual(language: str) -> str:
    """What precedes a kernel's name where the language defines one (its backend's `L2Language`)."""
    qual = l2_language(language).kernel_qualifier
    if not qual:
        raise L2Error(f"L2 language {language!r} has no kernel syntax to find kernels by (its backend's "
                      "L2Language.kernel_qualifier)")
    return qual


def _match_close(src: str, i: int, open_ch: str, close_ch: str) -> int:
    depth = 0
    while i < len(src):
        if src[i] == open_ch:
            depth += 1
        elif src[i] == close_ch:
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def _definitions(src: str, name: str, language: str) -> list[tuple[int, int]]:
    """[start, end) spans of every definition of kernel `name` (generated sources also declare
    every kernel up front, and OpenCL joins one source per kernel, so there can be several)."""
    spans = []
    for m in re.finditer(_qual(language) + re.escape(name) + r"\s*\(", src):
        close = _match_close(src, m.end() - 1, "(", ")")
        if close < 0:
            continue
        j = close + 1
        while j < len(src) and src[j].isspace():
            j += 1
        if j >= len(src) or src[j] != "{":
            continue  # a declaration
        end = _match_close(src, j, "{", "}")
        if end > 0:
            spans.append((m.start(), end + 1))
    return spans


def find_kernel(src: str, name: str, language: str) -> tuple[int, int] | None:
    """[start, end) of the first definition of kernel `name`, or None."""
    spans = _definitions(src, name, language)
    return spans[0] if spans else None


def kernel_text(src: str, name: str, language: str) -> str | None:
    span = find_kernel(src, name, language)
    return src[span[0]:span[1]] if span else None


def splice_kernel(src: str, name: str, new_text: str, language: str) -> tuple[str, int]:
    """Replace every definition of `name` by `new_text`; returns the source and how many."""
    if not _definitions(new_text, name, language):
        qual = l2_language(language).kernel_words or "kernel"
        raise L2Error(f"the override does not define kernel {name!r} (expected a whole {qual} "
                      "function of that name, with its body)")
    spans = _definitions(src, name, language)
    for a, b in reversed(spans):
        src = src[:a] + new_text.strip() + src[b:]
    return src, len(spans)


def replace_kernel(src: str, name: str, new_text: str, language: str) -> str:
    out, n = splice_kernel(src, name, new_text, language)
    if n == 0:
        raise L2Error(f"kernel {name!r} is not defined in the generated {language} source; kernels there: "
                      f"{kernel_names(src, language)[:20]}")
    return out


def nvcc_available() -> bool:
    return shutil.which("nvcc") is not None
