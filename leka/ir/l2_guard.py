"""Static checks on L2 target sources before they are built (issue 13): a kernel must be a pure
function of its inputs, call by call.

Rejected, with the line:
- state that survives a call: file-scope or `static` / `thread_local` mutable variables (a cached
  result, a heap pointer kept for next time), CUDA `__device__` / `__managed__` variables and device
  `malloc`, OpenCL program-scope `__global` variables, LLVM IR `global` (non-constant) definitions;
- work left running after the call: threads (std::thread, pthread_create, std::async, detach),
  processes (fork, system, popen);
- process-wide settings the baseline's turn would inherit: CPU affinity, scheduling, OpenMP thread
  counts, the FP environment (fesetround, fesetenv, MXCSR / flush-to-zero), environment variables,
  signal handlers, resource limits, raw syscalls and inline assembly;
- reaching outside the kernel: files, dlopen / dlsym, /proc, shared memory, and the headers that
  bring those in; load-time code (`__attribute__((constructor))`).

Constant tables (`const` / `constexpr` / `__constant__`) stay allowed. This is a lexical check: a
determined author can hide a call from it (token pasting, for one); the evaluator's runtime checks
(benchmark/judge/process_state.py, checked outputs of timed calls, a seed drawn per evaluation) are the
second line. Which rules a language's file scope gets is its `GuardProfile` (leka/backends). Pure
Python, no tvm.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from leka.backends import GuardProfile, l2_language


@dataclass(frozen=True)
class Finding:
    line: int  # 1-based, in the source as written; 0: found in the compiled object, no line names it
    rule: str  # state | thread | process | outside
    what: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.what}" if self.line else self.what


_CALLS = {
    "thread": r"std\s*::\s*(?:thread|jthread|async)|pthread_create|pthread_detach|\.\s*detach\s*\(|thrd_create"
              r"|\bfork\s*\(|\bvfork\b|\bclone\s*\(|posix_spawn|\bsystem\s*\(|\bpopen\s*\(|\bexec[lv]p?e?\s*\(",
    "process": r"sched_setaffinity|pthread_setaffinity_np|sched_setscheduler|pthread_setschedparam|setpriority"
               r"|\bnice\s*\(|omp_set_\w+|kmp_set_\w+|mkl_set_\w+|openblas_set_\w+|fesetround|fesetenv|feupdateenv"
               r"|feholdexcept|fesetexceptflag|feenableexcept|fedisableexcept|_MM_SET_\w+|_mm_setcsr|ldmxcsr|fldcw"
               r"|llvm\.set\.rounding|\bsetenv\b|\bputenv\b|\bunsetenv\b|\bclearenv\b|\bsignal\s*\(|\bsigaction\b"
               r"|\bprctl\b|\bsetrlimit\b|\bmallopt\b|\bsyscall\b|\basm\b|__asm__|__asm\b|\bexit\s*\(|\babort\s*\(",
    "outside": r"\bdl(?:open|sym|vsym|mopen|info|addr|_iterate_phdr)\b|\b_dl_\w+|\b__libc_\w+"
               # files and folders, in every spelling glibc exports (64-bit, unlocked, at-, f-)
               r"|\b(?:f|fd|free)?open(?:at)?(?:64)?\s*\(|\bf(?:re)?open(?:64)?\b|\bfdopen\b|\bopenat2?\b"
               r"|\bcreat(?:64)?\b|\bf(?:read|write|gets|getc|puts|putc|scanf|printf|seek|tell|flush|close)"
               r"(?:_unlocked|o|o64)?\b|\b(?:read|write|close|stat|lstat|fstat|access|truncate|remove|rename"
               r"|unlink|link|symlink|mkdir|rmdir|chdir|dup2?|pipe2?|ioctl|fcntl)\s*\("
               r"|\bp(?:read|write)v?2?(?:64)?\b|\b(?:read|write)v\b|\b(?:l|f)?stat(?:64|at|x)\b|\b__f?xstat\w*"
               r"|\b(?:fd)?opendir\b|\breaddir(?:64)?(?:_r)?\b|\bscandir(?:at)?(?:64)?\b|\bclosedir\b"
               r"|\bnftw\b|\bftw\b|\bglob\s*\(|\breadlink(?:at)?\b|\brealpath\b|\bgetcwd\b|\bunlinkat\b"
               r"|\brenameat2?\b|\bsendfile(?:64)?\b|\bsplice\s*\(|\bmemfd_create\b|\bmmap(?:64)?\b"
               r"|\bmprotect\b|\bshm_open\b|\bshmat\b|\bshmget\b|\bprocess_vm_(?:read|write)v\b|\bptrace\b"
               r"|std\s*::\s*[io]?fstream|\bifstream\b|\bofstream\b|\bbasic_filebuf\b|std\s*::\s*filesystem"
               r"|\bFILE\s*\*|\b(?:secure_)?getenv\b|\b__?environ\b|\bsocket\s*\(|\bconnect\s*\("
               # the evaluating process's Python interpreter and TVM's registry of global functions
               r"|\bPy[A-Z][A-Za-z]*_\w+|\bPy_[A-Z]\w*|\b_Py[A-Z_]\w*"
               r"|\bTVMFFI(?:Function|EnvModLookup|EnvRegister)\w*|\bTVMBackendGetFuncFromEnv\b",
}
_CALL_RES = {rule: re.compile(rx) for rule, rx in _CALLS.items()}
# path-like text inside string / char literals (the call rules look at code with literals blanked):
# system folders anywhere, or a literal that starts like a path, or names a data file
_PATH_LITERAL = re.compile(r"/(?:proc|dev|sys)(?:/|$)|\.leka|(?:^|[\s=:;,])(?:/|\./|\.\./|~/)[\w.-]"
                           r"|\.(?:npy|npz|json|jsonl|pt|pkl|bin|so|py|txt|csv)$")
_C_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "a": "\a", "b": "\b", "f": "\f", "v": "\v"}
_BAD_HEADERS = re.compile(r"^[ \t]*#\s*include\s*[<\"](dlfcn\.h|thread|future|pthread\.h|fstream|fenv\.h|cfenv|csignal"
                          r"|signal\.h|sched\.h|unistd\.h|sys/[\w/]+\.h|filesystem|cstdlib\.h)[>\"]", re.M)
_CTOR = re.compile(r"__attribute__\s*\(\(\s*(?:constructor|destructor)")
# what the compiler reads: a header by name, never a file by path (the compiler runs in the judge, and
# its errors quote the file it read: `#include </home/me/.ssh/id_rsa>` would print the key into the
# result the model reads). C23's #embed and GCC's #include_next / #import read files too
_INCLUDE = re.compile(r"^[ \t]*#\s*(include_next|include|import|embed)\b\s*([<\"])?([^>\"\n]*)", re.M)
_HEADER_DIRS = ("tvm/", "dlpack/", "CL/", "cuda/", "bits/")
_TYPE_KW = re.compile(r"\b(?:struct|class|union|enum)\b")


def _strip(text: str, line_comment: str = "//") -> str:
    """Comments and string / char literals blanked out (newlines kept, so offsets map to lines)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith(line_comment, i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif line_comment == "//" and text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'" and line_comment == "//":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (min(j, n) - i - 1) + (c if j < n else ""))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)[:n]


def _decode_c(body: str) -> str:
    """A C literal's characters with escapes resolved (\\x2f is a '/' to the loader too)."""
    def one(m: re.Match) -> str:
        e = m.group(1)
        if e[0] in "xX":
            return chr(int(e[1:], 16) % 0x110000)
        if e[0] in "uU":
            return chr(int(e[1:], 16) % 0x110000)
        if e[0] in "01234567":
            return chr(int(e, 8))
        return _C_ESCAPES.get(e, e)
    return re.sub(r"\\(x[0-9A-Fa-f]+|u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|[0-7]{1,3}|.)", one, body)


def _c_literals(text: str) -> list[tuple[int, str]]:
    """(offset, decoded contents) of the string literals outside comments, adjacent ones joined
    ("/pr" "oc/" is one literal to the compiler), and of runs of char literals in a list
    ({'/', 'p', ...} builds a string too)."""
    found: list[tuple[int, str, str, int]] = []  # (start, kind, contents, end)
    i, n = 0, len(text)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
        elif text[i] in "\"'":
            q, j = text[i], i + 1
            while j < n and text[j] != q and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            found.append((i, q, _decode_c(text[i + 1:j]), j + 1))
            i = j + 1
        else:
            i += 1
    out: list[tuple[int, str]] = []
    k = 0
    while k < len(found):
        start, kind, body, end = found[k]
        sep = r"\s*" if kind == '"' else r"\s*,\s*"
        while k + 1 < len(found) and found[k + 1][1] == kind and re.fullmatch(sep, text[end:found[k + 1][0]]):
            k += 1
            body += found[k][2]
            end = found[k][3]
        out.append((start, body))
        k += 1
    return out


def _llvm_literals(text: str) -> list[tuple[int, str]]:
    """(offset, decoded contents) of LLVM IR `c"..."` constants (\\2F is a '/')."""
    return [(m.start(), re.sub(r"\\([0-9A-Fa-f]{2})", lambda e: chr(int(e.group(1), 16)), m.group(1)))
            for m in re.finditer(r'\bc"([^"]*)"', text)]


def _scan_literals(literals: list[tuple[int, str]], lines: _Lines) -> list[Finding]:
    found = []
    for pos, body in literals:
        body = body.rstrip("\0")
        if _PATH_LITERAL.search(body):
            found.append(Finding(lines.of(pos), "outside", f"the literal \"{_short(body, 40)}\" names a path "
                                 "(a kernel reads no files)"))
    return found


class _Lines:
    def __init__(self, text: str):
        self._nl = [i for i, c in enumerate(text) if c == "\n"]

    def of(self, pos: int) -> int:
        return bisect.bisect_right(self._nl, pos - 1) + 1


def _is_mutable_decl(stmt: str) -> bool:
    """A variable declaration (not a function, type or alias) whose object can be written."""
    s = " ".join(stmt.split())
    if not s or s.startswith(("typedef", "using", "template", "static_assert", "friend", "return")):
        return False
    if re.search(r"\bconstexpr\b|\bconsteval\b", s):
        return False
    if _TYPE_KW.search(s):
        if "}" in s:  # `struct S {...} s;` declares s; `struct S {...};` declares nothing
            return bool(re.search(r"\w", s.rsplit("}", 1)[1]))
        if not re.search(r"\b(?:struct|class|union|enum)\s+\w+\s+\**\s*\w+", s):
            return False
    head = s.split("=", 1)[0]
    if "(" in head and "[" not in head.split("(", 1)[0] and _looks_like_params(head):
        return False  # a function declaration, not an object initialised by `T x(args)`
    if re.search(r"\bconst\b", head) and not re.search(r"\*\s*(?!const\b)\w+\s*(?:\[|$)", head.strip()):
        return False
    return bool(re.search(r"\w", head))


def _looks_like_params(head: str) -> bool:
    """`f(float* x, int n)` / `f()` / `f(void)` declare a function; `v(256)` / `v(N, 0.f)` build an object."""
    inner = head.split("(", 1)[1].rsplit(")", 1)[0].strip()
    return not inner or inner == "void" or bool(re.search(r"\w\s*[*&]|\w\s+\w|\.\.\.", inner))


def _blank_preprocessor(code: str) -> str:
    return re.sub(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", lambda m: re.sub(r"[^\n]", " ", m.group(0)), code, flags=re.M)


def _scan_scopes(code: str, lines: _Lines, guard: GuardProfile) -> list[Finding]:
    """File-scope mutable variables and function-scope `static` / `thread_local` ones."""
    found: list[Finding] = []
    code = _blank_preprocessor(code)
    stack: list[tuple[str, int]] = []  # (kind, statement start before it): ns / type / body / init
    start = 0
    for i, c in enumerate(code):
        in_init = bool(stack) and stack[-1][0] == "init"
        if c == "{":
            prev = code[start:i]
            if in_init or re.search(r"=\s*$", prev):
                kind = "init"
            elif re.search(r"\bnamespace\b[^;]*$|\bextern\s*\"\s*\"\s*$", prev):
                kind = "ns"
            elif _TYPE_KW.search(prev) and "(" not in prev:
                kind = "type"
            else:
                kind = "body"
            stack.append((kind, start))
            if kind != "init":
                start = i + 1
        elif c == "}":
            kind, saved = stack.pop() if stack else ("ns", start)
            if kind == "type":
                start = saved  # `struct S {...} s;`: the statement goes on after the brace
            elif kind != "init":
                start = i + 1
        elif c == ";" and not in_init:
            stmt = code[start:i]
            where = start + len(stmt) - len(stmt.lstrip())
            at_file = all(k == "ns" for k, _ in stack)
            if at_file and _file_scope_state(stmt, guard):
                found.append(Finding(lines.of(where), "state", f"file-scope mutable variable `{_short(stmt)}`"
                                     " (state that survives a call)"))
            elif not at_file and re.search(r"\b(?:static|thread_local)\b", stmt) and _is_mutable_decl(
                    re.sub(r"\b(?:static|thread_local)\b", "", stmt)):
                found.append(Finding(lines.of(where), "state", f"`static` mutable variable `{_short(stmt)}` "
                                     "(state that survives a call)"))
            start = i + 1
    return found


def _file_scope_state(stmt: str, guard: GuardProfile) -> bool:
    s = stmt.strip()
    if s.startswith("#") or not s:
        return False
    if guard.constant and re.search(guard.constant, s):
        return False
    if guard.device_state and re.search(guard.device_state, s):
        return _is_mutable_decl(re.sub(guard.device_qualifiers or guard.device_state, "", s))
    if re.search(r"\bextern\b", s):
        return False
    return _is_mutable_decl(re.sub(r"\b(?:static|thread_local|inline|__global|global)\b", "", s))


def _short(stmt: str, n: int = 60) -> str:
    s = " ".join(stmt.split())
    return s if len(s) <= n else s[:n] + "..."


def _scan_llvm(text: str) -> list[Finding]:
    found: list[Finding] = []
    for no, line in enumerate(text.splitlines(), 1):
        code = line.split(";", 1)[0]
        m = re.match(r"\s*@[\w.$\"]+\s*=\s*(.*)$", code)
        if m and re.search(r"\b(?:global|thread_local)\b", m.group(1)) and not re.search(r"\bconstant\b", m.group(1)):
            found.append(Finding(no, "state", f"mutable global `{_short(code)}` (state that survives a call)"))
        if re.search(r"\bmodule\s+asm\b|\basm\s+sideeffect\b", code):
            found.append(Finding(no, "process", f"inline assembly `{_short(code)}`"))
    return found


def _scan_calls(code: str, lines: _Lines) -> list[Finding]:
    found = []
    what = {"thread": "starts work that outlives the call", "process": "changes process-wide state",
            "outside": "reaches outside the kernel (files, libraries, the environment, the interpreter)"}
    for rule, rx in _CALL_RES.items():
        for m in rx.finditer(code):
            found.append(Finding(lines.of(m.start()), rule, f"`{m.group(0).strip()}` {what[rule]}"))
    return found


def _not_a_header(name: str) -> bool:
    if not name or name.startswith(("/", "~", ".")) or ".." in name or "\\" in name or ":" in name:
        return True
    return "/" in name and not name.startswith(_HEADER_DIRS)


def scan(language: str, text: str) -> list[Finding]:
    """Findings for one L2 source, sorted by line; the language's `L2Language` (leka/backends) says
    which lexer (`syntax`) and which file-scope rules (`guard`) apply."""
    lang = l2_language(language)
    if lang.syntax == "llvm-ir":
        code = text
        found = _scan_llvm(text)
        found += [f for f in _scan_calls(_strip(text, ";"), _Lines(text)) if f.rule != "process" or "asm" not in f.what]
        found += _scan_literals(_llvm_literals(text), _Lines(text))
    else:
        code = _strip(text)
        lines = _Lines(text)
        found = _scan_scopes(code, lines, lang.guard) + _scan_calls(code, lines) + _scan_literals(_c_literals(text), lines)
        for m in _BAD_HEADERS.finditer(text):
            found.append(Finding(lines.of(m.start()), "outside", f"header <{m.group(1)}> is not for kernels"))
        for m in _INCLUDE.finditer(text):
            what, name = m.group(1), m.group(3).strip()
            if what != "include" or not m.group(2) or _not_a_header(name):
                found.append(Finding(lines.of(m.start()), "outside",
                                     f"#{what} {name!r} reads a file, not a header of the toolchain"))
        for m in _CTOR.finditer(code):
            found.append(Finding(lines.of(m.start()), "process", "load-time code (constructor / destructor)"))
        if lang.guard.device_heap:
            for m in re.finditer(r"\b(?:malloc|free)\s*\(|\bnew\s+\w|\bnew\s*\(", code):
                found.append(Finding(lines.of(m.start()), "state", f"device heap `{m.group(0).strip()}...` (device memory "
                                     "that outlives the call)"))
    uniq = {(f.line, f.what): f for f in found}
    return sorted(uniq.values(), key=lambda f: (f.line, f.what))


def describe(findings: list[Finding], limit: int = 6) -> str:
    head = "; ".join(str(f) for f in findings[:limit])
    more = f" (+{len(findings) - limit} more)" if len(findings) > limit else ""
    return (f"illegal L2 source: {head}{more}. An L2 kernel must be a pure function of its inputs on every "
            "call: no state kept between calls, no threads left running, no process-wide settings, no files "
            "or libraries")


def scan_candidate(candidate) -> list[Finding]:
    """Findings over every L2 entry of a candidate (`leka.ir.Candidate`), each prefixed by its kernel."""
    out: list[Finding] = []
    for entry in candidate.l2.values():
        for f in scan(entry.language, entry.text):
            out.append(Finding(f.line, f.rule, f"{entry.kernel}: {f.what}"))
    return out
