"""Checks on a compiled L2 object (issue 26, item 6): what the lexical check (l2_guard) cannot see
because the text hides it (a hand-written `extern "C"` declaration, token pasting, a C++ dynamic
initialiser), the object still shows.

Rejected, with the symbol:
- an undefined symbol that is not on the allow-list below: libm, memory and string functions, the
  allocator and C++ operator new / delete, the OpenMP runtime, libgcc / compiler helpers, the bits of
  the C++ ABI that exceptions and `std::vector` / `std::sort` / `std::map` need, and the TVM backend
  calls TVM's own C codegen makes (workspace, parallel launch, error text). Everything else (libpython,
  libc file / process / clock / environment functions, the loader, TVM's function registry) is
  something a kernel has no use for and an attack needs;
- load-time code: a non-empty `.init_array` / `.ctors` / `.fini_array` / `.preinit_array` / `.dtors`
  (file-scope objects built by a constructor or `new`, `__attribute__((constructor))`): it would run
  when the library is loaded, before any check;
- writable data (`.data`, `.bss`, TLS): state that survives a call, including what a `const` pointer
  to heap memory or a function-local `static const` built from the inputs hides from the text rules.

Uses binutils (`nm`, `readelf`): milliseconds on one small object. Where they are absent the check
says so once and the lexical check stands alone. Pure Python, no tvm.
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
import sys
from pathlib import Path

from leka.ir.l2_guard import Finding

_MATH = (
    "acos asin atan atan2 cos sin tan acosh asinh atanh cosh sinh tanh exp exp2 exp10 expm1 log log2 log10 "
    "log1p logb ilogb frexp ldexp modf scalbn scalbln pow sqrt cbrt hypot fabs ceil floor trunc round lround "
    "llround rint lrint llrint nearbyint fmod remainder remquo copysign nan nextafter nexttoward fdim fmax fmin "
    "fma erf erfc tgamma lgamma lgamma_r sincos significand j0 j1 jn y0 y1 yn "
    "cabs carg cimag creal conj cproj cexp clog cpow csqrt csin ccos ctan csinh ccosh ctanh "
    "casin cacos catan casinh cacosh catanh"
).split()
# libm names in every precision (f, l, f32/f64 suffixes) and glibc's internal aliases
_MATH_RX = r"(?:__)?(?:{})(?:f|l|f16|f32|f64|f128|f32x|f64x)?(?:_finite)?".format("|".join(_MATH))

_EXACT = {
    # memory and string functions (no I/O)
    "memcpy", "memmove", "memset", "memcmp", "memchr", "memrchr", "mempcpy", "bzero", "bcmp", "explicit_bzero",
    "strlen", "strnlen", "strcmp", "strncmp", "strcpy", "strncpy", "strcat", "strncat", "strchr", "strrchr",
    "strstr", "strspn", "strcspn", "strpbrk", "stpcpy",
    # the allocator
    "malloc", "calloc", "realloc", "free", "aligned_alloc", "posix_memalign", "memalign", "valloc",
    "reallocarray", "malloc_usable_size",
    # pure helpers of the C library
    "abs", "labs", "llabs", "div", "ldiv", "lldiv", "qsort", "bsearch",
    # failure paths that end the process (the judge sees a crash) and compiler-inserted guards
    "__assert_fail", "__stack_chk_fail", "__stack_chk_guard", "__errno_location", "_GLOBAL_OFFSET_TABLE_",
    "__cpu_model", "__cpu_features2", "__cpu_indicators_init",
    # the OpenMP runtime, read-only queries and locks (omp_set_num_threads etc. change the process)
    "omp_get_thread_num", "omp_get_num_threads", "omp_get_max_threads", "omp_get_num_procs", "omp_in_parallel",
    "omp_get_level", "omp_get_active_level", "omp_get_ancestor_thread_num", "omp_get_team_size",
    "omp_get_dynamic", "omp_get_nested", "omp_get_team_num", "omp_get_num_teams",
    "omp_init_lock", "omp_destroy_lock", "omp_set_lock", "omp_unset_lock", "omp_test_lock",
    # the C++ ABI: exceptions (std::vector's growth path throws), function-local static guards
    # (the writable-data rule judges the static itself), pure virtuals
    "__gxx_personality_v0", "__gcc_personality_v0", "_Unwind_Resume", "__cxa_begin_catch", "__cxa_end_catch",
    "__cxa_rethrow", "__cxa_allocate_exception", "__cxa_free_exception", "__cxa_throw", "__cxa_call_terminate",
    "__cxa_call_unexpected", "__cxa_get_exception_ptr", "__cxa_pure_virtual", "__cxa_deleted_virtual",
    "__cxa_guard_acquire", "__cxa_guard_release", "__cxa_guard_abort", "__cxa_throw_bad_array_new_length",
    "__cxa_bad_cast", "__cxa_bad_typeid", "_ZSt9terminatev", "_ZSt7nothrow", "_ZNKSt9exception4whatEv",
    # the TVM backend calls TVM's C host codegen emits (no registry lookups: those reach every global
    # function of the evaluating process, Python's included)
    "TVMBackendAllocWorkspace", "TVMBackendFreeWorkspace", "TVMBackendParallelLaunch",
    "TVMBackendParallelBarrier", "TVMFFIErrorSetRaisedFromCStr", "TVMFFIErrorSetRaisedFromCStrParts",
}
_PATTERNS = [
    _MATH_RX,
    r"_ZGV[a-z][NM]\d+[a-z0-9]*_" + _MATH_RX,  # libmvec: vectorised math from `#pragma omp simd`
    r"__(?:memcpy|memmove|memset|mempcpy|strcpy|strncpy|strcat|strncat|stpcpy)_chk",  # _FORTIFY_SOURCE
    r"GOMP_(?!target|offload)\w+",  # the OpenMP runtime's entry points (parallel, loop, barrier, ...)
    # operator new / delete in their sized, aligned and nothrow forms
    r"_Z(?:nw|na)[mj](?:St11align_val_t)?(?:RKSt9nothrow_t)?",
    r"_Z(?:dl|da)Pv[mj]?(?:St11align_val_t)?(?:RKSt9nothrow_t)?",
    r"_ZSt\d+__throw_\w+",  # std::__throw_length_error and kin (the containers' error paths)
    r"_ZTVN10__cxxabiv1\d+__\w+E|_ZTI[PK]*[a-z]|_ZTISt\d+\w+",  # typeinfo for thrown / caught types
    r"_ZNSt\d+(?:exception|bad_alloc|bad_array_new_length|length_error|out_of_range|logic_error)D[012]Ev",
    r"_ZSt\d+_Rb_tree_\w+",  # std::map / std::set
    r"_ZNKSt8__detail20_Prime_rehash_policy\w+",  # std::unordered_map
    # libgcc / compiler-rt: wide integer arithmetic, float conversions (fp16 / bf16), bit counts, complex
    r"__(?:u?(?:div|mod|mul)|neg|ashl|ashr|lshr|u?cmp)[sdt]i3",
    r"__(?:fix(?:uns)?[hsdxt]f|float(?:un)?[sdt]i)[hsdxtb]?[sdt]?[if]?",
    r"__(?:extend|trunc)[hsdxtb]f[hsdxtb]f2",
    r"__(?:popcount|clz|ctz|ffs|parity|bswap)[sdt]i2",
    r"__powi[hsdxt]f2|__(?:mul|div)[hsdxt]c3|__(?:add|sub|mul|div|neg)[hsdtx]f3",
    r"__(?:eq|ne|lt|le|gt|ge|unord|cmp)[hsdtx]f2",
    r"__gnu_(?:h2f|f2h)_ieee",
    r"__atomic_\w+|__sync_\w+|__aarch64_(?:cas|swp|ldadd|ldclr|ldeor|ldset)\d+_\w+",  # libatomic / outline atomics
]
_ALLOWED = re.compile("|".join(f"(?:{p})" for p in _PATTERNS))

# why a symbol is refused, by the first class it falls in (the message names the class)
_CLASSES = [
    (re.compile(r"_?Py[A-Z_]\w*"), "calls into the Python interpreter"),
    (re.compile(r"dl(?:open|sym|vsym|mopen|close|addr|info|error|_iterate_phdr)|_dl_\w+|__libc_\w+"),
     "reaches the dynamic loader"),
    (re.compile(r"TVM\w+"), "reaches TVM's function registry or runtime beyond the workspace / parallel calls"),
    (re.compile(r"(?:f|fd|free)?open(?:at)?(?:64)?|creat(?:64)?|f?(?:read|write)\w*|f?(?:get|put)[cs]\w*|getline"
                r"|getdelim|f?scanf|v?f?printf|puts|f?stat\w*|lstat\w*|statx|access|faccessat|readlink\w*"
                r"|realpath|opendir|fdopendir|readdir\w*|scandir\w*|closedir|f?close|f?seek\w*|ftell\w*|rewind"
                r"|p(?:read|write)v?\w*|mmap\w*|munmap|mprotect|shm_\w+|memfd_create|unlink\w*|rename\w*|remove"
                r"|mkdir\w*|rmdir|chdir|getcwd|truncate\w*|ftruncate\w*|sendfile\w*|splice|ioctl|fcntl\w*"
                r"|dup[23]?|pipe2?|setvbuf|fflush|_IO_\w+|stdin|stdout|stderr|__(?:fx)?stat\w*"),
     "reaches files"),
    (re.compile(r"v?fork|clone\w*|exec\w*|posix_spawn\w*|system|popen|pclose|kill|raise|abort|exit|_exit|_Exit"
                r"|atexit|at_quick_exit|__cxa_(?:thread_)?atexit\w*|__cxa_finalize|__dso_handle|wait\w*"
                r"|pthread_\w+|thrd_\w+|sched_\w+|setpriority|nice|prctl|ptrace|syscall|signal|sigaction"
                r"|set(?:env|rlimit|jmp)|putenv|unsetenv|clearenv|fe\w+|omp_set_\w+|_ZNSt6thread\w+"),
     "starts or changes processes or threads, or runs code at exit"),
    (re.compile(r"(?:secure_)?getenv|environ|__environ"), "reads the environment"),
    (re.compile(r"socket|connect|bind|listen|accept\w*|send\w*|recv\w*|getaddrinfo|gethostbyname\w*"),
     "opens network connections"),
    (re.compile(r"clock\w*|time|gettimeofday|omp_get_wtime|omp_get_wtick|rdtsc\w*|_ZNSt6chrono\w+"),
     "reads a clock (a kernel that can time itself can tell timed calls from checked ones)"),
    (re.compile(r"s?rand\w*|random\w*|getrandom|arc4random\w*|_ZNSt13random_device\w+"),
     "draws random numbers (state, or a device file)"),
]

_LOAD_TIME = (".init_array", ".preinit_array", ".fini_array", ".ctors", ".dtors", ".init", ".fini")
_WRITABLE = re.compile(r"\.(?:data|bss|tdata|tbss)(?:\.|$)")
_COMPILER_DATA = re.compile(r"DW\.ref\.__gxx_personality_v0|\.L\w+")  # unwinding's personality pointer


class ToolMissing(RuntimeError):
    pass


@functools.cache
def _tools() -> tuple[str, str] | None:
    nm, readelf = shutil.which("nm"), shutil.which("readelf")
    if not (nm and readelf):
        print("leka: binutils (nm, readelf) not found: L2 objects get the lexical check only "
              "(apt-get install binutils)", file=sys.stderr)
        return None
    return nm, readelf


def available() -> bool:
    return _tools() is not None


def allowed(symbol: str) -> bool:
    return symbol in _EXACT or bool(_ALLOWED.fullmatch(symbol))


def why(symbol: str, demangled: str = "") -> str:
    for rx, what in _CLASSES:
        if rx.fullmatch(symbol):
            return what
    if re.search(r"fstream|filesystem|basic_filebuf|\bFILE\b", demangled):
        return "reaches files"
    if re.search(r"std::(?:thread|async|jthread)\b", demangled):
        return "starts threads that outlive the call"
    return "is not on the kernel allow-list (math, memory / string functions, the allocator, OpenMP)"


def _run(cmd: list[str]) -> str:
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise ToolMissing(f"{Path(cmd[0]).name} failed on the object: {(r.stderr or r.stdout).strip()[:300]}")
    return r.stdout


def demangle(names: list[str]) -> dict[str, str]:
    cxxfilt = shutil.which("c++filt")
    if not cxxfilt or not names:
        return {n: n for n in names}
    try:
        out = subprocess.run([cxxfilt], input="\n".join(names), capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return {n: n for n in names}
    lines = out.splitlines()
    return dict(zip(names, lines, strict=True)) if len(lines) == len(names) else {n: n for n in names}


def _sections(readelf_out: str) -> dict[str, int]:
    """{section name: size} from `readelf -S -W`."""
    out: dict[str, int] = {}
    for line in readelf_out.splitlines():
        m = re.match(r"\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+[0-9a-f]+\s+[0-9a-f]+\s+([0-9a-f]+)", line)
        if m:
            out[m.group(1)] = int(m.group(2), 16)
    return out


def _source_line(source: str | None, name: str) -> int:
    """The first line of `source` that names the symbol (its base name for a C++ one), or 0."""
    if not source:
        return 0
    base = re.sub(r"\(.*$", "", name).split("::")[-1].strip()
    if not re.fullmatch(r"\w+", base):
        return 0
    m = re.search(r"\b" + re.escape(base) + r"\b", source)
    return source.count("\n", 0, m.start()) + 1 if m else 0


def defined(obj: str | Path) -> set[str]:
    """The global symbols an object defines, from its symbol table: nothing is loaded. Unlike `scan`,
    no binutils is an error (ToolMissing): a symbol that cannot be read is not there."""
    nm = shutil.which("nm") or shutil.which("llvm-nm")
    if nm is None:
        raise ToolMissing("nm not found (binutils): the object's symbols cannot be read")
    return {ln.split()[0] for ln in _run([nm, "-g", "-P", "--defined-only", str(obj)]).splitlines() if ln.strip()}


def scan(obj: str | Path, source: str | None = None) -> list[Finding]:
    """Findings for one compiled object (empty when it is clean or binutils are absent). `source`
    (the text it was compiled from) only places a finding on a line where one names the symbol."""
    tools = _tools()
    if tools is None:
        return []
    nm, readelf = tools
    found: list[Finding] = []
    # one nm call, sysv format (name|value|class|type|size|line|section): undefined and defined alike
    rows = [[c.strip() for c in ln.split("|")] for ln in _run([nm, "-f", "sysv", str(obj)]).splitlines()]
    rows = [r for r in rows if len(r) >= 7]
    undefined = [r[0] for r in rows if r[2] in ("U", "w", "v") and r[6] == "*UND*"]
    bad = [s for s in dict.fromkeys(undefined) if not allowed(s)]
    names = demangle(bad)
    for s in bad:
        shown = s if names[s] == s else f"{names[s]} [{s}]"
        found.append(Finding(_source_line(source, names[s]), "outside",
                             f"the object calls `{shown}`, which {why(s, names[s])}"))
    sections = _sections(_run([readelf, "-S", "-W", str(obj)]))
    for sec in _LOAD_TIME:
        if sections.get(sec, 0) > 0:
            found.append(Finding(0, "process", f"load-time code: the object has a {sec} section "
                                 f"({sections[sec]} bytes), run when the library loads (a file-scope object "
                                 "built by a constructor or `new`, or __attribute__((constructor)))"))
    # a guard variable (_ZGV) comes with the static it guards, which is named instead
    state = [r[0] for r in rows if r[3] in ("OBJECT", "TLS") and _WRITABLE.match(r[6])
             and not r[6].startswith(".data.rel.ro") and not _COMPILER_DATA.fullmatch(r[0])
             and not r[0].startswith("_ZGV")]
    names = demangle(state)
    for s in dict.fromkeys(state):
        found.append(Finding(_source_line(source, names[s]), "state",
                             f"the object keeps a writable variable `{names[s]}` (state that survives a call; "
                             "a `const` pointer to heap memory or a `static const` built at run time is state "
                             "too)"))
    return found
