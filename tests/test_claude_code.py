"""The Claude Code arm with the real, pinned CLI (`make setup` installs it) against a scripted
Anthropic-compatible server (`fake_llm_server.py`, SSE and plain JSON): a tool loop that reads the
contract, writes an L2 kernel and measures it; the deadline; crashes and broken APIs; containment;
the API key canary. Never skipped: a missing CLI fails here."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import psutil
import pytest
from fake_llm_server import FakeLLMServer

from leka.arms.claude_code import TOOLS, find_cli, run_claude_code

DATA = Path(__file__).parent / "data"
TASK = str(DATA / "tiny_task.py")
CANARY = "sk-ant-canary-7f3a9c1e-do-not-leak"
KERNEL = "fused_relu_multiply_add"
GOOD = f'''#include <cstdint>
extern "C" int32_t leka_{KERNEL}(float* x, float* w, float* y) {{
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 64; ++j) {{ float v = x[i * 64 + j]; y[i * 64 + j] = (v > 0 ? v : 0) * w[j] + v; }}
  return 0;
}}
'''
FAST_EVAL = ["evaluator.timing_budget_s=1", "evaluator.max_pairs=5", "evaluator.timeout_s=300"]


@pytest.fixture(autouse=True)
def canary_key(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", CANARY)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)


def tool(name: str, **arguments) -> dict:
    return {"tool": {"name": name, "arguments": arguments}}


def assert_no_key(run_dir: Path) -> None:
    files = [p for p in run_dir.rglob("*") if p.is_file()]
    assert len(files) > 10
    leaks = [str(p) for p in files if CANARY.encode() in p.read_bytes()]
    assert leaks == [], f"API key written to {leaks}"


def tool_results(req_body: dict) -> str:
    """The tool results the last user message carries back to the model: `is_error` and the text."""
    last = req_body["messages"][-1]
    blocks = [b for b in last.get("content") or [] if isinstance(b, dict) and b.get("type") == "tool_result"]
    return "\n".join(f'"is_error": {json.dumps(bool(b.get("is_error")))} {b["content"]}'
                     if isinstance(b.get("content"), str) else json.dumps(b) for b in blocks)


def test_cli_is_installed_and_pinned():
    binary = find_cli()
    import subprocess

    out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=120,
                         env={"PATH": os.environ["PATH"], "HOME": "/nonexistent-home"})
    assert out.returncode == 0 and out.stdout.startswith("2.1.327"), out.stdout + out.stderr


def test_tool_loop_over_sse(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    script = [
        tool("Read", file_path="{cwd}/CONTRACT.md"),
        tool("Write", file_path=f"{{cwd}}/candidate/l2/{KERNEL}.cpp", content=GOOD),
        tool("Write", file_path=str(outside / "escaped.txt"), content="outside the workspace"),
        tool("Bash", command=f"touch {outside / 'escaped_by_bash.txt'}", description="escape"),
        tool("Bash", command="./measure", description="measure the candidate"),
        {"text": "Done: the kernel is 1000x faster."},
    ]
    with FakeLLMServer(script) as srv:
        res = run_claude_code(TASK, budget_s=600, model="anthropic:fake-model", out_dir=tmp_path / "runs",
                              base_url=srv.url, overrides=FAST_EVAL, max_retries=0)
    run_dir = Path(res.run_dir)
    # the requests: streamed Messages API calls of the named model, with the arm's tools only
    msgs = [r for r in srv.requests if r.path.startswith("/v1/messages") and "count_tokens" not in r.path]
    assert len(msgs) == 6 and all(r.body["stream"] is True and r.body["model"] == "fake-model" for r in msgs)
    offered = {t["name"] for r in msgs for t in r.body["tools"]}
    assert offered - {"DeferredToolPlaceholder"} == set(TOOLS)  # no Agent, WebFetch, ... (a stub the CLI adds)
    assert all(r.headers.get("x-api-key") == CANARY for r in msgs)
    assert "CONTRACT.md" in json.dumps(msgs[0].body["messages"])
    assert "How it is judged" in tool_results(msgs[1].body)  # the Read of the contract came back
    for i in (3, 4):  # the write outside and the escaping Bash were refused, and the model was told
        assert '"is_error": true' in tool_results(msgs[i].body) and "outside" in tool_results(msgs[i].body)
    assert '"eval": 1' in tool_results(msgs[5].body)  # ./measure's report reached the model
    # the files: the kernel in the workspace and in the measured snapshot; nothing outside
    assert (run_dir / "workspace" / "candidate" / "l2" / f"{KERNEL}.cpp").read_text() == GOOD
    assert (run_dir / "evals" / "001" / "candidate" / "l2" / f"{KERNEL}.cpp").read_text() == GOOD
    assert list(outside.iterdir()) == []
    # the log of evaluations and the harness's own re-evaluation of the best one
    rows = [json.loads(x) for x in (run_dir / "evals.jsonl").read_text().splitlines()]
    assert [r["n"] for r in rows] == [1] and rows[0]["correct"] is True
    final = json.loads((run_dir / "final_eval.json").read_text())
    cand = json.loads((run_dir / "candidate.json").read_text())
    assert [e["entry"] for e in cand["levels"]["L2"]["entries"].values()] == [f"leka_{KERNEL}"]
    assert (run_dir / "judged.txt").read_text().strip() == "evals/001/candidate"
    assert final["correct"] is True and res.correct and res.compiled and res.best_eval == 1
    assert res.speedup == final["speedup"]  # the harness's number, not the agent's "1000x"
    # the row: from the stream, written and read back
    assert res.status == "ok" and res.exit_code == 0 and not res.stopped_at_deadline and res.error is None
    assert res.turns == 6 and res.tool_calls == {"Read": 1, "Write": 2, "Bash": 2} and res.permission_denials == 2
    assert res.input_tokens > 0 and res.output_tokens > 0 and res.evals == 1
    assert res.cli_version.startswith("2.1.327")
    assert json.loads((run_dir / "result.json").read_text()) == json.loads(res.model_dump_json())
    assert_no_key(run_dir)


def test_deadline_stops_it_and_keeps_the_best_measured(tmp_path):
    budget = 60.0
    script = [
        {**tool("Write", file_path=f"{{cwd}}/candidate/l2/{KERNEL}.cpp", content=GOOD), "sse": False},
        {**tool("Bash", command="./measure", description="measure"), "sse": False},
        {**tool("Write", file_path="{cwd}/candidate/relax.py", content="not TVMScript"), "sse": False},
        {"delay": 3600, "text": "never sent"},  # the model 'thinks' past the deadline
    ]
    with FakeLLMServer(script) as srv:
        res = run_claude_code(TASK, budget_s=budget, model="fake-model", out_dir=tmp_path / "runs",
                              base_url=srv.url, overrides=FAST_EVAL, max_retries=0, grace_s=2.0)
    run_dir = Path(res.run_dir)
    assert res.stopped_at_deadline and res.status == "ok", res.error
    # plain JSON answers to streaming requests: the CLI asked again without streaming
    assert any(r.body.get("stream") is False for r in srv.requests if isinstance(r.body, dict))
    assert (run_dir / "workspace" / "candidate" / "relax.py").read_text() == "not TVMScript"
    # the broken final folder is not what counts: the measured snapshot is
    assert res.evals == 1 and res.best_eval == 1 and res.correct, res.eval_error
    assert res.turns >= 3 and res.input_tokens > 0
    assert budget <= res.cli_s < budget + 2.0 + 15  # killed at the deadline (SIGTERM, 2 s grace, SIGKILL)
    leftovers = [p for p in psutil.process_iter(["cwd"]) if str(run_dir) in (p.info.get("cwd") or "")]
    assert leftovers == []
    assert_no_key(run_dir)


def _crashing_cli(tmp_path: Path) -> str:
    p = tmp_path / "claude-crash"
    p.write_text('#!/bin/sh\necho \'{"type":"system","subtype":"init"}\'\nkill -SEGV $$\n')
    p.chmod(p.stat().st_mode | stat.S_IEXEC)
    return str(p)


@pytest.mark.parametrize("case", ["http_500", "garbage", "cli_crash"])
def test_failures_give_a_failed_row(tmp_path, case):
    spec = {"http_500": {"status": 500, "message": "upstream exploded"},
            "garbage": {"garbage": "<html>this is not JSON {"}, "cli_crash": {"text": "unused"}}[case]
    with FakeLLMServer([spec]) as srv:
        res = run_claude_code(TASK, budget_s=300, model="fake-model", out_dir=tmp_path / "runs", base_url=srv.url,
                              max_retries=0, claude_bin=_crashing_cli(tmp_path) if case == "cli_crash" else None)
    assert res.status == "failed" and res.error and not res.stopped_at_deadline
    assert res.evals == 0 and not res.compiled and not res.correct and "no candidate" in res.eval_error
    if case == "http_500":
        assert "500" in res.error or "upstream exploded" in res.error
    if case == "cli_crash":
        assert res.exit_code == -11 and "without a result" in res.error
    else:
        assert srv.requests, "the CLI never called the server"
    run_dir = Path(res.run_dir)
    assert json.loads((run_dir / "result.json").read_text())["status"] == "failed"
    assert_no_key(run_dir)


def test_a_server_without_the_messages_api_is_named_as_the_cause(tmp_path):
    # a local model behind llama-cpp-python's server (the smoke grid against it, 2026-12-07): the CLI
    # reported "There's an issue with the selected model", which points at the model, not the server
    with FakeLLMServer([], anthropic=False) as srv:
        res = run_claude_code(TASK, budget_s=120, model=f"compat:{srv.url}/v1|qwen2.5-coder-0.5b?json_schema=true",
                              out_dir=tmp_path / "runs", max_retries=0)
    assert res.status == "failed" and not res.output_tokens
    assert res.error.startswith(f"{srv.url} has no Anthropic Messages API (GET /v1/messages: 404)"), res.error
    assert any(r.method == "POST" and r.path.startswith("/v1/messages") for r in srv.requests)
    assert res.cost_usd is None  # a compat endpoint's calls are unpriced
    # where the route exists, a failure is left in the CLI's words
    from leka.arms.claude_code import messages_api_missing
    with FakeLLMServer([]) as srv:
        assert messages_api_missing(srv.url) == ""


def test_measure_gets_the_harness_python_path_and_backend_variables(monkeypatch):
    # the CLI hands `./measure` a clean environment: where the harness's packages come from PYTHONPATH
    # (the H200's unpacked TVM and wheels), `leka bench eval` only imports if the path is carried over
    from leka.arms.workspace import runtime_env

    monkeypatch.setenv("PYTHONPATH", "/opt/x/site")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "secret")
    env = runtime_env("cuda")
    assert env["PYTHONPATH"] == "/opt/x/site" and env["CUDA_VISIBLE_DEVICES"] == "3"
    assert "ANTHROPIC_API_KEY" not in env
    assert "CUDA_VISIBLE_DEVICES" not in runtime_env("llvm")


def test_cli_settings_keep_the_file_tools_in_the_workspace(tmp_path):
    # issue 43: what the arm launches with, as written; no CLI needed
    from leka.arms.claude_code import ALLOWED, cli_argv
    from leka.arms.workspace import cli_settings

    run, cache = tmp_path / "runs" / "r1", tmp_path / ".leka-cache"
    s = cli_settings(run / "workspace", run, [cache])["permissions"]
    assert s["blockReadsOutsideWorkingDirectories"] and s["blockWritesOutsideWorkingDirectories"]
    assert s["denyInsteadOfPrompting"] and s["additionalDirectories"] == []
    for rule in (f"Read(/{cache}/**)", f"Edit(/{cache}/**)", f"Read(/{run}/evals/**)", "Edit(./measure)",
                 "Edit(./.claude/**)"):
        assert rule in s["deny"], rule
    assert all(r.startswith("Read(//") or r.startswith("Edit(") for r in s["deny"])  # absolute or ./
    assert "Read" not in ALLOWED and not any(a.startswith(("Edit", "Write", "Bash(*")) for a in ALLOWED)
    argv = cli_argv("claude", "m", run / "cli_settings.json")
    assert argv[argv.index("--settings") + 1] == str(run / "cli_settings.json")
    assert "--add-dir" not in argv and "--dangerously-skip-permissions" not in argv


def test_caches_and_other_runs_are_out_of_reach(tmp_path):
    # issue 43, with the real CLI: the judge's cache and another run's folder, by every file tool, by
    # rewriting ./measure, and through ./measure itself
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "secret.txt").write_text("CACHE-SECRET-1")
    other = tmp_path / "runs" / "other-run" / "evals" / "001" / "candidate"
    other.mkdir(parents=True)
    (other / "relax.py").write_text("# OTHER-RUN-SECRET-2\n")
    script = [
        tool("Read", file_path=str(cache / "secret.txt")),
        tool("Glob", pattern="**/*", path=str(cache)),
        tool("Grep", pattern="SECRET", path=str(tmp_path / "runs" / "other-run")),
        tool("Read", file_path=str(other / "relax.py")),
        tool("Write", file_path="{cwd}/measure", content="#!/bin/sh\ncat " + str(cache / "secret.txt") + "\n"),
        tool("Bash", command=f"./measure {other}", description="measure another run's candidate"),
        {"text": "Done."},
    ]
    with FakeLLMServer(script) as srv:
        res = run_claude_code(TASK, budget_s=600, model="anthropic:fake-model", out_dir=tmp_path / "runs",
                              base_url=srv.url, overrides=[*FAST_EVAL, f"baseline.cache_dir={cache}"],
                              max_retries=0)
    msgs = [r for r in srv.requests if r.path.startswith("/v1/messages") and "count_tokens" not in r.path]
    assert len(msgs) == 7
    sent = json.dumps([r.body for r in msgs])
    assert "CACHE-SECRET-1" not in sent and "OTHER-RUN-SECRET-2" not in sent
    for i in range(1, 7):  # every call came back refused: denied paths, reads outside, ./measure's target
        assert '"is_error": true' in tool_results(msgs[i].body), (i, tool_results(msgs[i].body))
    run_dir = Path(res.run_dir)
    assert "cat " not in (run_dir / "workspace" / "measure").read_text()
    assert not (run_dir / "evals").exists() or not any((run_dir / "evals").iterdir())


def test_measure_takes_folders_of_its_workspace_only(tmp_path):
    # ./measure runs outside the CLI's permissions: a path to another run's candidate is refused by it too
    import subprocess

    from leka.arms.workspace import write_measure
    from leka.core.config import load_config

    ws, other = tmp_path / "run" / "workspace", tmp_path / "other" / "candidate"
    ws.mkdir(parents=True)
    other.mkdir(parents=True)
    (other / "relax.py").write_text("# another run's\n")
    measure = write_measure(ws, tmp_path / "run", TASK, load_config([], []), deadline=0.0)
    for target in (str(other), "../../other/candidate"):
        out = subprocess.run([str(measure), target], cwd=ws, capture_output=True, text=True, timeout=60)
        assert out.returncode == 2 and "outside the workspace" in out.stdout, out.stdout + out.stderr
    assert not (tmp_path / "run" / "evals").exists()
    assert not measure.stat().st_mode & 0o222  # read-only
