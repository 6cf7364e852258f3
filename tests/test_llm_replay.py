"""A real small model's replies, replayed through a real run: CI exercises what Qwen2.5-Coder-0.5B
actually wrote (tests/data/llm_local/*.jsonl, recorded from `leka run --policy llm` against
`leka llm serve`), without the model.

The recorded run's per-call outcomes (`expected.json`: for each agent call, whether each reply
parsed and which edits were legal) must come out the same when the transcript is replayed through
the graph, the agents, the parser and the legality checks. The `llm_local` tier at the end runs
against the live model instead (opt-in).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "llm_local"


def leka(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "leka.cli", *args], capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT, env=env)


def outcomes(run_dir: Path) -> list[dict]:
    """Per agent call: the agent, and per reply whether it parsed and each edit's kind and legality."""
    out = []
    for ln in (run_dir / "llm_reports.jsonl").read_text().splitlines():
        rep = json.loads(ln)
        out.append({"agent": rep["agent"], "replies": [{"parsed": r["parsed"], "edits": r["edits"]}
                                                        for r in rep["replies"]]})
    return out


def only_dir(folder: Path) -> Path:
    dirs = [d for d in folder.iterdir() if d.is_dir()]
    assert len(dirs) == 1, dirs
    return dirs[0]


def recorded() -> list[Path]:
    return sorted(DATA.glob("*.jsonl"))


@pytest.mark.parametrize("transcript", recorded(), ids=lambda p: p.stem)
def test_replayed_real_run_parses_and_applies_as_live(transcript, tmp_path):
    meta = json.loads(transcript.with_suffix(".json").read_text())
    out = tmp_path / "out"
    r = leka("run", "--task", meta["task"], "--policy", "llm", "--model", f"replay:{transcript}",
             *meta["args"], "--out", str(out), "--quiet",
             "--set", f"baseline.cache_dir={tmp_path / 'cache'}", *sum((["--set", s] for s in meta["sets"]), []))
    assert r.returncode in (0, 1), r.stderr[-3000:]
    rd = only_dir(out)
    got = outcomes(rd)
    assert got == meta["expected"], json.dumps(got, indent=1)
    # and the legal edits became tree nodes at the levels they were for
    s = json.loads((rd / "summary.json").read_text())
    assert s["llm"]["calls"] == sum(len(c["replies"]) for c in meta["expected"])
    legal = {c["agent"] for c in meta["expected"] for rep in c["replies"] for _, ok in rep["edits"] if ok} - {"router"}
    assert {lv for lv, n in s["nodes_by_level"].items() if n} >= legal


# -- opt-in: the live model -------------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.llm_local
def test_live_server_answers_with_schema_constrained_json():
    """Starts the local model server (`make llm-local` first) and checks that a schema with enums
    comes back as JSON that fits it: the grammar, not the model, guarantees the shape."""
    from leka.llm import local as L
    from leka.llm.prompting import L0_PASSES
    from leka.llm.small import small_edit_tool

    if not (L.server_installed() and L.model_path().is_file()):
        pytest.skip("run `make llm-local` first")
    import openai

    port = _free_port()
    proc = L.start_server(port, L.DEFAULT_THREADS)
    try:
        c = openai.OpenAI(api_key="none", base_url=f"http://127.0.0.1:{port}/v1", max_retries=0, timeout=300)
        schema = small_edit_tool("L0", kernels=[], blocks=[], max_edits=2)["parameters"]
        r = c.chat.completions.create(
            model=L.MODEL_ALIAS, max_tokens=200, temperature=0.2,
            messages=[{"role": "user", "content": "Pick graph passes that could speed up conv + batchnorm + relu."}],
            response_format={"type": "json_object", "schema": schema})  # type: ignore[arg-type]
        data = json.loads(r.choices[0].message.content)
        assert 1 <= len(data["edits"]) <= 2
        assert all(e["level"] == "L0" and e["payload"]["name"] in L0_PASSES for e in data["edits"])
    finally:
        L.stop_server(proc)


@pytest.mark.llm_local
@pytest.mark.skipif(not os.environ.get("LEKA_LOCAL_LLM_URL"), reason="set LEKA_LOCAL_LLM_URL to the server "
                    "`leka llm serve` started (http://127.0.0.1:8080/v1)")
def test_live_short_run_with_small_model_settings(tmp_path):
    from leka.llm import local as L

    url = os.environ["LEKA_LOCAL_LLM_URL"]
    spec = f"compat:{url}|{os.environ.get('LEKA_LOCAL_LLM_MODEL', L.MODEL_ALIAS)}?{L.SPEC_OPTIONS}"
    out = tmp_path / "out"
    r = leka("run", "--task", "l1_relu6", "--policy", "llm", "--model", spec, "--max-evals", "2", "--budget", "6m",
             "--out", str(out), "--quiet", "--set", f"baseline.cache_dir={tmp_path}")
    assert r.returncode in (0, 1), r.stderr[-3000:]
    calls = outcomes(only_dir(out))
    replies = [rep for c in calls for rep in c["replies"]]
    assert replies and sum(rep["parsed"] for rep in replies) == len(replies)  # grammar-constrained: all parse
