"""A candidate's L2 library is never loaded by a trusted process (issue 43): its load-time code
(a constructor, a GNU IFUNC resolver, which runs at relocation with no section of its own) would run
with that process's rights. The judge hands the sealed library to the candidate's sandboxed worker,
which loads it inside its jail under leka.core.confine's filter; the agent loop reads its symbols
from the object. Static checks off, so the boundary alone is tested."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmark.judge import Evaluator
from benchmark.task import load_task_file
from leka import ir
from leka import tvm_adapter as A
from leka.core.config import EvaluatorConfig
from leka.core.types import Edit
from leka.ir.edits import apply_edit
from tests.tiny_l2 import COMPUTE, HEAD, HONEST, l2_candidate

ROOT = Path(__file__).resolve().parents[1]
TINY = Path(__file__).parent / "data" / "tiny_task.py"

# an honest kernel whose library writes a marker when it is loaded: from a constructor, and from the
# resolver of its IFUNC entry (called when the symbol is first resolved: by the JIT, as the VM is made)
LOAD_TIME = HEAD + "#include <cstdio>\n" + COMPUTE + r"""
static void drop(const char* path) { FILE* f = std::fopen(path, "w"); if (f) std::fclose(f); }
__attribute__((constructor)) static void at_load() { drop("CTOR_MARKER"); }
static int32_t real_entry(float* x, float* w, float* out) { compute(x, w, out); return 0; }
typedef int32_t (*entry_t)(float*, float*, float*);
extern "C" entry_t resolve_entry() { drop("IFUNC_MARKER"); return real_entry; }
extern "C" int32_t ENTRY(float* x, float* w, float* out) __attribute__((ifunc("resolve_entry")));
"""


@pytest.fixture(scope="module")
def tiny():
    task = load_task_file(TINY)
    return task, ir.import_root(task)


def _candidate(tiny, tmp_path: Path, name: str):
    task, root = tiny
    ctor, ifunc = tmp_path / "ctor", tmp_path / "ifunc"
    cand = l2_candidate(task, root, LOAD_TIME, name, CTOR_MARKER=str(ctor), IFUNC_MARKER=str(ifunc))
    return cand, ctor, ifunc


def test_the_load_time_code_is_real_when_loaded(tiny, tmp_path):
    cand, ctor, ifunc = _candidate(tiny, tmp_path, "loadtime_here")
    built = ir.build_candidate(cand, A.make_target("llvm"), tiny[1].params, check_objects=False)
    assert not ctor.exists() and not ifunc.exists()  # built, not loaded
    ir.load_l2(built)
    assert ctor.exists()
    A.VMRunner(built.executable, A.device_for("llvm"))  # the JIT resolves the entry: the resolver runs
    assert ifunc.exists()


def test_the_judge_never_loads_it(tiny, tmp_path):
    cand, ctor, ifunc = _candidate(tiny, tmp_path, "loadtime_judge")
    ev = Evaluator(EvaluatorConfig(timeout_s=120, memory_cap_gb=2.0, static_check=False),
                   cache_dir=str(tmp_path / "cache"))
    res = ev.evaluate(tiny[0], cand, time_it=False)
    assert not ctor.exists() and not ifunc.exists()
    # the worker did load and run it: the kernel is honest, its load-time writes failed in the jail
    assert res.correct, (res.error_kind, res.error)


def _mapped(name: str) -> bool:
    return name in Path("/proc/self/maps").read_text()


def test_the_agent_loop_reads_symbols_without_loading(tiny, tmp_path, monkeypatch):
    monkeypatch.setenv("LEKA_CACHE", str(tmp_path / "cache"))
    task, root = tiny
    c = ir.root_candidate(task, root=root)
    (kernel,) = list(ir.lowered_module(c, A.make_target("llvm"), root.params)[1])
    text = HONEST.replace("ENTRY", "leka_agent_probe").replace("REPS", "0")
    out = apply_edit(c, Edit(level="L2", kind="source", target=kernel,
                             payload={"language": "cpp", "text": text, "entry": "leka_agent_probe"}),
                     workdir=tmp_path / "w", root_params=root.params)
    assert out.candidate is not None, out.error
    assert not _mapped("leka_agent_probe")  # built and checked, never mapped into this process
    missing = apply_edit(c, Edit(level="L2", kind="source", target=kernel,
                                 payload={"language": "cpp", "text": text, "entry": "not_there"}),
                         workdir=tmp_path / "w", root_params=root.params)
    assert missing.error and "does not export the symbol 'not_there'" in missing.error


def test_bench_eval_candidate_never_loads_it(tiny, tmp_path):
    """`leka bench eval --candidate candidate.json` (what the Claude Code arm's ./measure runs)."""
    cand, ctor, ifunc = _candidate(tiny, tmp_path, "loadtime_cli")
    (tmp_path / "candidate.json").write_text(cand.model_dump_json())
    js = tmp_path / "res.json"
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    r = subprocess.run([sys.executable, "-m", "leka.cli", "bench", "eval", str(TINY), "--candidate",
                        str(tmp_path / "candidate.json"), "--json", str(js),
                        "--set", f"baseline.cache_dir={tmp_path / 'cache'}", "--set", "evaluator.static_check=false",
                        "--set", "evaluator.timing_budget_s=0.5"],
                       capture_output=True, text=True, timeout=300, cwd=ROOT, env=env)
    assert not ctor.exists() and not ifunc.exists()
    assert js.exists(), r.stderr[-2000:]
    assert json.loads(js.read_text())["correct"], r.stderr[-2000:]
