"""Issue 31, item 5: a non-editable install has everything it reads at run time.

The repository's files (tracked, or untracked and not ignored) are copied out, built into a wheel and installed (`--no-deps`, not
editable) into a fresh venv; the project's own venv lends its dependencies through a `.pth` line
(no download). Every command then runs from a folder outside the repository, with no PYTHONPATH,
so only what the wheel carries can be found: the prompt templates (`prompts`, package data), the
demo's task, the suite, the tree view, the Claude Code contract. `leka demo`, a `--policy llm` run
and `leka oneshot` go through the installed `leka` script against tests/fake_llm_server.py.
Default tier: ~1.5-2 min on 2 cores (the demo gets 10 s of budget; most of the rest is evaluations).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from fake_llm_server import FakeLLMServer  # noqa: E402

# a legal L0 edit for the MobileNetV2 block (three BatchNorms to fold), so no rule agent is needed here
FOLD_BN = {"level": "L0", "kind": "pass", "target": None, "payload": {"name": "fold_batchnorm"},
           "rationale": "fold the BatchNorms into the convolutions"}
FAST = ["--set", "evaluator.timing_budget_s=0.5"]


def _sh(*cmd: str | Path, cwd: Path, env: dict[str, str] | None = None, timeout: float = 600) -> str:
    r = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"{cmd}: rc {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r.stdout


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    """A fresh venv with the wheel of the working tree's tracked files installed."""
    base = tmp_path_factory.mktemp("install")
    src = base / "src"
    for rel in _source_files():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, src / rel)
    # this venv's setuptools builds it where it has one (no index needed); else pip fetches setuptools
    isolation = ["--no-build-isolation"] if _importable("setuptools") else []
    _sh(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", *isolation, "-w", base / "wheel", src, cwd=base)
    wheel = next((base / "wheel").glob("leka-*.whl"))
    env_dir = base / "venv"
    _sh(sys.executable, "-m", "venv", "--without-pip", env_dir, cwd=base)
    py = env_dir / "bin" / "python"
    # installed before the dependencies are visible, so pip sees no other leka (the project's editable one)
    _sh(sys.executable, "-m", "pip", "--python", py, "install", "-q", "--no-deps", "--no-index", wheel, cwd=base)
    purelib = Path(_sh(py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=base).strip())
    # a .pth line adds the folder to sys.path after the venv's own; that folder's .pth files (the
    # editable install's finder among them) are not run, so `leka` can only come from the wheel
    deps = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    (purelib / "project_deps.pth").write_text("\n".join(deps) + "\n")
    return env_dir


def _source_files() -> list[str]:
    """The working tree's files that git tracks or would (not ignored): what a clone would build, and
    nothing stale (setuptools' build/ folder would otherwise carry files the repository no longer has).
    Outside a git checkout: the files of what the wheel is made from, minus build outputs."""
    try:
        out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout
        listed = list(filter(None, out.split("\0")))
    except (OSError, subprocess.CalledProcessError):
        tops = ("leka", "agents", "benchmark", "candidate_tree", "profilers", "prompts")
        listed = ["pyproject.toml", "README.md"] + [
            str(p.relative_to(ROOT)) for t in tops for p in (ROOT / t).rglob("*")
            if "__pycache__" not in p.parts and p.suffix not in (".pyc", ".so", ".o")]
    return [rel for rel in listed if (ROOT / rel).is_file()]


def _importable(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


def _env(work: Path) -> dict[str, str]:
    drop = ("PYTHONPATH", "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL",
            "LEKA_CACHE", "LEKA_LLM_CACHE")
    return {**{k: v for k, v in os.environ.items() if k not in drop}, "HOME": str(work)}


@pytest.fixture()
def work(tmp_path) -> Path:
    d = tmp_path / "work"  # outside the repository: its files cannot be found from here
    d.mkdir()
    return d


def installed_mbv2(venv: Path, work: Path) -> str:
    code = "from importlib import resources; print(resources.files('benchmark') / 'examples' / 'mbv2_block.py')"
    return _sh(venv / "bin" / "python", "-c", code, cwd=work, env=_env(work)).strip()


def leka(venv: Path, work: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(venv / "bin" / "leka"), *args], cwd=work, env=_env(work), capture_output=True,
                          text=True, timeout=600)


def test_installed_package_has_its_data(venv, work):
    probe = """
import json, sys
import benchmark, leka, prompts
from benchmark.subsets import load_subset
from benchmark.task import resolve, select
from candidate_tree.export import TEMPLATE
from leka.arms.workspace import CONTRACT
from leka.llm.prompting import PROMPTS_DIR, TEMPLATES, render
from leka.backends.opencl import plugin_path
from leka.backends.paths import cache_home
from leka.llm.local import cache_dir
from profilers.calibrate import cache_dir as roofs_dir
print(json.dumps({"caches": [str(cache_home()), str(plugin_path()), str(cache_dir()), str(roofs_dir())],
                  "leka": leka.__file__, "prompts": str(PROMPTS_DIR), "benchmark": benchmark.__file__,
                  "templates": sorted(p.name for p in PROMPTS_DIR.glob("*.j2")),
                  "wanted": sorted(set(TEMPLATES.values())), "view": TEMPLATE.is_file(),
                  "contract": CONTRACT.is_file(), "task": str(resolve("l1_gelu_tanh").path),
                  "suite": len(select()), "subset": len(load_subset("subset69", "llvm")),
                  "system": render("system.j2", role="the L0 agent", backend="llvm", proposes=True,
                                   tool_name="propose_edits"),
                  "path": sys.path}))
"""
    got = json.loads(_sh(venv / "bin" / "python", "-c", probe, cwd=work, env=_env(work)))
    site = str(venv)
    for key in ("leka", "prompts", "benchmark", "task"):
        assert got[key].startswith(site), (key, got[key])  # the wheel's copy, not the checkout's
    deps = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}  # the lent dependencies
    assert [p for p in got["path"] if p.startswith(str(ROOT)) and p not in deps] == [], got["path"]
    assert set(got["wanted"]) <= set(got["templates"]), got
    assert got["view"] and got["contract"]
    assert got["suite"] == 331 and got["subset"] == 23  # the whole suite and subset69 (README)
    assert "the L0 agent" in got["system"]
    # machine-local files go to the user's cache (HOME is `work` here), never into site-packages
    assert all(c.startswith(str(work / ".cache" / "leka")) for c in got["caches"]), got["caches"]


def test_demo_from_a_wheel(venv, work):
    r = leka(venv, work, "demo", "--budget", "10s")
    assert r.returncode == 0, r.stderr[-3000:]
    d = work / "runs" / "demo"
    runs = [p for p in d.iterdir() if p.is_dir()] if d.is_dir() else []
    assert len(runs) == 1, runs
    s = json.loads((runs[0] / "summary.json").read_text())
    assert s["best_correct"], s
    assert {"tree.sqlite", "tree.html", "report.md", "config.yaml"} <= {p.name for p in runs[0].iterdir()}


def test_llm_run_from_a_wheel(venv, work):
    script = [{"when": {"tool": "route"}, "tool": {"name": "route", "arguments": {
                  "level": "L0", "reason": "BatchNorms left in the graph"}}},
              {"when": {"tool": "propose_edits", "contains": "the L0 agent ("},
               "tool": {"name": "propose_edits", "arguments": {"edits": [FOLD_BN]}}}]
    out = work / "out"
    with FakeLLMServer(script) as srv:
        r = leka(venv, work, "run", "--task", installed_mbv2(venv, work), "--policy", "llm", "--model",
                 f"compat:{srv.openai_url}|fake", "--layers", "L0", "--max-evals", "2", "--budget", "5m",
                 "--out", str(out), "--quiet", *FAST)
        posts = [q for q in srv.requests if q.method == "POST"]
    assert r.returncode == 0, r.stderr[-3000:]
    # both requests carry a rendered template (the L0 agent's system prompt is what the script matches)
    assert [[t["function"]["name"] for t in q.body["tools"]] for q in posts][:2] == [["route"], ["propose_edits"]]
    (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
    con = sqlite3.connect(run_dir / "tree.sqlite")
    try:
        rows = con.execute("SELECT edit, result, route_reason FROM nodes WHERE level = 'L0'").fetchall()
    finally:
        con.close()
    assert len(rows) == 1, rows
    edit, result, reason = json.loads(rows[0][0]), json.loads(rows[0][1]), rows[0][2]
    assert edit["payload"] == {"name": "fold_batchnorm"} and result["correct"], (edit, result)
    assert reason == "BatchNorms left in the graph"


def test_oneshot_from_a_wheel(venv, work):
    reply = {"tool": {"name": "propose_edits", "arguments": {"edits": [FOLD_BN]}}}
    js = work / "res.json"
    with FakeLLMServer([reply]) as srv:
        r = leka(venv, work, "oneshot", "--task", installed_mbv2(venv, work), "--model", f"compat:{srv.openai_url}|fake",
                 "--out", str(work / "out"), "--json", str(js), "--quiet", *FAST)
        posts = [q for q in srv.requests if q.method == "POST"]
    assert r.returncode == 0, r.stderr[-3000:]
    assert len(posts) == 1
    prompt = "\n".join(m["content"] for m in posts[0].body["messages"])
    assert "class Model(nn.Module)" in prompt  # oneshot.j2 rendered with the reference
    res = json.loads(js.read_text())
    assert res["compile_at_1"] and res["correct_at_1"] and res["calls"] == 1, res


def test_cache_home_in_a_checkout_and_by_environment(monkeypatch, tmp_path):
    from leka.backends.opencl import plugin_path
    from leka.backends.paths import cache_home, checkout

    monkeypatch.delenv("LEKA_CACHE", raising=False)
    monkeypatch.delenv("LEKA_OPENCL_PLUGIN", raising=False)
    assert checkout() == ROOT and cache_home() == ROOT / ".leka-cache"
    monkeypatch.setenv("LEKA_CACHE", str(tmp_path))
    assert cache_home() == tmp_path and plugin_path() == tmp_path / "libtvm_opencl.so"
