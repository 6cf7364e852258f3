"""Issue 26, item 6: L2 objects are checked as objects. Each class an attacker would write (a call into
the evaluating process's Python, libc file functions declared by hand, a cache behind a `const`
pointer to heap memory, a path in a string literal) is refused as `illegal_source` with the symbol or
the line named, whether the lexical check sees it or the text hides it (token pasting); the project's
honest kernels still pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmark.judge import Evaluator
from benchmark.task import load_task_file
from leka import ir
from leka.core.config import EvaluatorConfig
from leka.core.types import Edit
from leka.ir import L2Entry, l2_guard, l2_object
from leka.ir import l2 as L2
from leka.ir.edits import apply_edit

DATA = Path(__file__).parent / "data"
needs_binutils = pytest.mark.skipif(not l2_object.available(),
                                    reason="binutils (nm, readelf) not installed: only the lexical check runs")

HEAD = "#include <cstdint>\n"
BODY = r"""
  for (int i = 0; i < 256; ++i) { float v = x[i]; out[i] = (v > 0.f ? v : 0.f) * w[i % 64] + v; }
"""
HONEST = HEAD + 'extern "C" int32_t ENTRY(float* x, float* w, float* out) {' + BODY + "  return 0;\n}\n"
# token pasting hides each name from the text rules; the object still has to call it
PASTE = "#define CAT(a, b) a##b\n"
PY = HEAD + PASTE + r"""
extern "C" int CAT(PyRun_, SimpleString)(const char*);
extern "C" int32_t ENTRY(float* x, float* w, float* out) {
  CAT(PyRun_, SimpleString)("import benchmark.judge.outputs as o; o.compare = lambda *a, **k: None");
""" + BODY + "  return 0;\n}\n"
PY_PLAIN = PY.replace("CAT(PyRun_, SimpleString)", "PyRun_SimpleString")
FILES = HEAD + PASTE + r"""
extern "C" void* CAT(fop, en64)(const char*, const char*);
extern "C" unsigned long CAT(frea, d_unlocked)(void*, unsigned long, unsigned long, void*);
extern "C" void* CAT(open, dir)(const char*);
extern "C" int32_t ENTRY(float* x, float* w, float* out) {
  if (void* d = CAT(open, dir)(x[0] > 1e30f ? "a" : "b")) (void)d;
  if (void* f = CAT(fop, en64)("refs", "rb")) { CAT(frea, d_unlocked)(out, 4, 256, f); return 0; }
""" + BODY + "  return 0;\n}\n"
FILES_PLAIN = FILES.replace("CAT(fop, en64)", "fopen64").replace("CAT(frea, d_unlocked)", "fread_unlocked") \
    .replace("CAT(open, dir)", "opendir")
CACHE = HEAD + r"""
static float* const cache = new float[1024];
extern "C" int32_t ENTRY(float* x, float* w, float* out) {
  if (cache[1000] == x[0]) { for (int i = 0; i < 256; ++i) out[i] = cache[i]; return 0; }
""" + BODY + "  for (int i = 0; i < 256; ++i) cache[i] = out[i];\n  cache[1000] = x[0];\n  return 0;\n}\n"
PROC = HEAD + r"""
static const char* const where = "/proc/self/maps";
extern "C" int32_t ENTRY(float* x, float* w, float* out) {
  (void)where;
""" + BODY + "  return 0;\n}\n"
LLVM_HONEST = "define i32 @ENTRY(ptr %x, ptr %w, ptr %out) {\n  ret i32 0\n}\n"
LLVM_PY = ("declare i32 @PyRun_SimpleString(ptr)\n@s = private unnamed_addr constant [2 x i8] c\"1\\00\"\n"
           "define i32 @ENTRY(ptr %x, ptr %w, ptr %out) {\n  %r = call i32 @PyRun_SimpleString(ptr @s)\n"
           "  ret i32 0\n}\n")


def _text(src: str, entry: str = "k") -> str:
    return src.replace("ENTRY", entry)


def _line_of(text: str, needle: str) -> int:
    return next(i for i, ln in enumerate(text.splitlines(), 1) if needle in ln)


# --------------------------------------------------------------------------- the text rules
@pytest.mark.parametrize(("src", "names"), [
    (PY_PLAIN, ["PyRun_SimpleString"]),
    (FILES_PLAIN, ["fopen64", "fread_unlocked", "opendir"]),
])
def test_lexical_check_names_the_functions(src, names):
    text = _text(src)
    found = l2_guard.scan("cpp", text)
    for name in names:
        assert any(name in f.what and f.line == _line_of(text, name) for f in found), (name, found)


def test_lexical_check_reads_string_literals():
    text = _text(PROC)
    found = l2_guard.scan("cpp", text)
    assert any("/proc/self/maps" in f.what and f.line == _line_of(text, "/proc/") for f in found), found
    # spelt in pieces, or with escapes, it is the same path to the loader
    for spelt in ('"/pr" "oc/self/maps"', r'"\x2fproc\x2fself\x2fmaps"', "{'/', 'p', 'r', 'o', 'c', '/', 0}"):
        text = f"static const char where[] = {spelt};\n" + _text(HONEST)
        assert any("/proc/" in f.what and f.line == 1 for f in l2_guard.scan("cpp", text)), spelt
    # a comment, or a literal that is no path, is fine
    assert l2_guard.scan("cpp", "// reads /proc/self/maps? no\n" + _text(HONEST)) == []
    ll = LLVM_HONEST.replace("define", '@p = private constant [6 x i8] c"\\2Fproc\\00"\ndefine', 1)
    assert any("/proc" in f.what for f in l2_guard.scan("llvm", ll))


# --------------------------------------------------------------------------- the object check
@needs_binutils
@pytest.mark.parametrize(("src", "symbols"), [
    (PY, ["PyRun_SimpleString"]),
    (FILES, ["fopen64", "fread_unlocked", "opendir"]),
])
def test_object_check_names_what_the_text_hides(src, symbols, tmp_path):
    text = _text(src)
    assert l2_guard.scan("cpp", text) == []  # hidden from the text rules
    with pytest.raises(L2.IllegalObject) as e:
        ir.compile_l2_source("cpp", text, tmp_path)
    for s in symbols:
        assert f"`{s}`" in str(e.value), str(e.value)
    assert not list(tmp_path.glob("*.o")) and not list(tmp_path.glob("*.so"))  # nothing left to load


@needs_binutils
def test_a_cache_behind_a_const_pointer_is_load_time_code_and_state(tmp_path):
    text = _text(CACHE)
    assert l2_guard.scan("cpp", text) == []  # `T* const p = new T` passes the text rules
    with pytest.raises(L2.IllegalObject) as e:
        ir.compile_l2_source("cpp", text, tmp_path)
    msg = str(e.value)
    assert ".init_array" in msg, msg
    line = _line_of(text, "static float* const cache")
    assert any(f.rule == "state" and "`cache`" in f.what and f.line == line for f in e.value.findings), msg


@needs_binutils
def test_llvm_ir_objects_are_checked_too(tmp_path):
    with pytest.raises(L2.IllegalObject, match="PyRun_SimpleString"):
        ir.compile_l2_source("llvm", LLVM_PY.replace("ENTRY", "k_py"), tmp_path)
    ir.compile_l2_source("llvm", LLVM_HONEST.replace("ENTRY", "k_ok"), tmp_path)


@needs_binutils
def test_honest_kernels_pass_the_object_check(tmp_path):
    from agents.l2_source import GemmShape, gemm_source
    from leka import tvm_adapter as A

    sources = [_text(HONEST)]
    # the rule agent's GEMM (OpenMP, aligned_alloc, intrinsics), and C++ that uses the standard library
    g = GemmShape(batch=2, m=49, n=96, k=32, a=0, b=1, c=2, sa=(0, 32, 1), sb=(3072, 1, 32), sc=(4704, 96, 1),
                  n_params=3)
    # the widths this machine compiles (-march=native): a 16-lane kernel needs AVX-512
    machine = A.vector_lanes_fp32(A.cpu_target())
    sources += [gemm_source(g, "leka_gemm_x", lanes) for lanes in [n for n in (8, 16) if n <= machine] or [machine]]
    sources.append(HEAD + "#include <vector>\n#include <algorithm>\n#include <cmath>\n" + r"""
extern "C" int32_t k_std(float* x, float* w, float* out) {
  std::vector<float> v(x, x + 256);
  std::sort(v.begin(), v.end());
  static const float tbl[4] = {1.f, 2.f, 3.f, 4.f};
  #pragma omp parallel for
  for (int i = 0; i < 256; ++i) out[i] = std::exp(v[i]) * tbl[i % 4] + std::tanh(w[i % 64]);
  return 0;
}
""")
    for src in sources:
        assert l2_guard.scan("cpp", src) == []
        comp = ir.compile_l2_source("cpp", src, tmp_path)
        assert l2_object.scan(comp.obj, src) == [], src[:200]


def test_without_binutils_the_lexical_check_stands_alone(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(l2_object.shutil, "which", lambda name: None)
    l2_object._tools.cache_clear()
    try:
        assert l2_object.scan(tmp_path / "missing.o") == []
        assert "nm, readelf" in capsys.readouterr().err
    finally:
        l2_object._tools.cache_clear()


# --------------------------------------------------------------------------- where it surfaces
@pytest.fixture(scope="module")
def task():
    return load_task_file(DATA / "tiny_task.py")


@pytest.fixture(scope="module")
def root(task):
    return ir.import_root(task)


def _kernel(task, root):
    from leka import tvm_adapter as A

    cand = ir.root_candidate(task, root=root)
    layers = ir.lower_layers(cand, A.make_target("llvm"), root.params)
    ((kernel, key),) = list(layers.l2_keys.items())
    return cand, kernel, key


@needs_binutils
@pytest.mark.parametrize(("src", "needle"), [(PY, "PyRun_SimpleString"), (PY_PLAIN, "PyRun_SimpleString"),
                                             (CACHE, ".init_array"), (PROC, "/proc/self/maps")])
def test_apply_edit_refuses_it_as_illegal_source(task, root, tmp_path, src, needle):
    cand, kernel, _ = _kernel(task, root)
    out = apply_edit(cand, Edit(level="L2", kind="source", target=kernel,
                                payload={"language": "cpp", "text": _text(src, "leka_bad"), "entry": "leka_bad"}),
                     workdir=tmp_path, root_params=root.params)
    assert not out.ok and out.error_kind == "illegal_source" and needle in out.error, (out.error_kind, out.error)


@needs_binutils
def test_the_evaluator_refuses_it_as_illegal_source(task, root, tmp_path):
    cand, kernel, key = _kernel(task, root)
    ev = Evaluator(EvaluatorConfig(timeout_s=90, memory_cap_gb=2.0, timing_budget_s=1.0), cache_dir=str(tmp_path))
    for src, needle in ((PY, "PyRun_SimpleString"), (CACHE, "`cache`")):
        bad = cand.model_copy(update={"l2": {key: L2Entry(kernel=kernel, language="cpp", text=_text(src, "leka_ev"),
                                                          entry="leka_ev")}})
        res = ev.evaluate(task, bad, time_it=False)
        assert res.error_kind == "illegal_source" and not res.compiled and needle in res.error, \
            (res.error_kind, res.error)
    ok = cand.model_copy(update={"l2": {key: L2Entry(kernel=kernel, language="cpp", text=_text(HONEST, "leka_ok"),
                                                     entry="leka_ok")}})
    res = ev.evaluate(task, ok, time_it=False)
    assert res.correct, (res.error_kind, res.error)


@pytest.mark.parametrize(("line", "bad"), [
    ('#include </root/.ssh/id_rsa>', True), ('#include "/etc/passwd"', True), ('#include "../../leak.h"', True),
    ('#embed "weights.bin"', True), ('#include_next <cmath>', True), ('#include SOME_MACRO', True),
    ('#include <cmath>', False), ('#include <immintrin.h>', False), ('#include <tvm/ffi/any.h>', False),
])
def test_includes_name_headers_never_files(line, bad):
    """The compiler runs in the judge and quotes what it reads in its errors, which reach the model."""
    from leka.ir import l2_guard

    found = [f for f in l2_guard.scan("cpp", line + "\nint f() { return 0; }\n") if "reads a file" in f.what]
    assert bool(found) is bad, found
