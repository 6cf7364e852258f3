"""`leka run --policy llm` and `leka oneshot` end to end against the fake LLM server (tests/fake_llm_server.py).

The "model" here answers with real, legal edits for the embedded MobileNetV2 block: the test makes them
with the rule agents against the same candidates the run will expand, and serialises them into the
server's tool-call replies. Everything else is the real path: the SDK clients over HTTP, the LLM
agents' parsing and legality checks, the graph, the evaluator, the tree, the ledger and report.md.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MBV2 = str(ROOT / "benchmark" / "examples" / "mbv2_block.py")
sys.path.insert(0, str(Path(__file__).resolve().parent))
from fake_llm_server import FakeLLMServer  # noqa: E402

CANARY = "sk-test-canary"
FAST = ["--set", "evaluator.timing_budget_s=0.5"]


def leka(*args: str, env: dict[str, str] | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items()
            if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL")}
    return subprocess.run([sys.executable, "-m", "leka.cli", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, env={**base, **(env or {})})


def run_dir_of(out: Path) -> Path:
    dirs = [d for d in out.iterdir() if d.is_dir()]
    assert len(dirs) == 1, dirs
    return dirs[0]


def nodes(run_dir: Path) -> list[dict]:
    con = sqlite3.connect(run_dir / "tree.sqlite")
    try:
        rows = con.execute("SELECT id, parent, level, edit, status, result, meta, route_reason FROM nodes "
                           "ORDER BY id").fetchall()
    finally:
        con.close()
    keys = ("id", "parent", "level", "edit", "status", "result", "meta", "route_reason")
    out = []
    for r in rows:
        d = dict(zip(keys, r, strict=True))
        for k in ("edit", "result", "meta"):
            d[k] = json.loads(d[k]) if d[k] else None
        out.append(d)
    return out


def route_reply(level: str, reason: str) -> dict:
    return {"when": {"tool": "route"}, "tool": {"name": "route", "arguments": {"level": level, "reason": reason}}}


def edits_reply(level: str, edits: list) -> dict:
    # the level's agent says who it is in its system prompt ("You are the L1 agent (...")
    return {"when": {"tool": "propose_edits", "contains": f"the {level} agent ("},
            "tool": {"name": "propose_edits", "arguments": {"edits": [e.model_dump() for e in edits]}}}


def edit_key(e: dict) -> tuple:
    return e["level"], e["kind"], e["target"], json.dumps(e["payload"], sort_keys=True)


def test_fake_server_answers_by_request_content():
    import openai

    def tool(name: str) -> list[dict]:
        return [{"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}]

    script = [{"when": {"tool": "route"}, "text": "route 1"},
              {"when": {"tool": "propose_edits", "contains": "the L1 agent ("}, "text": "L1 edits"},
              {"when": {"tool": "route"}, "text": "route 2"},
              {"text": "anything"}]
    with FakeLLMServer(script) as srv:
        c = openai.OpenAI(api_key="k", base_url=srv.openai_url, max_retries=0)

        def ask(name: str, system: str) -> str:
            r = c.chat.completions.create(model="m", tools=tool(name),
                                          messages=[{"role": "system", "content": system},
                                                    {"role": "user", "content": "go"}])
            return r.choices[0].message.content

        # out of script order: each request takes the first queued spec that fits it
        assert ask("propose_edits", "You are the L1 agent (loops)") == "L1 edits"
        assert ask("propose_edits", "You are the L0 agent (graph)") == "anything"  # no `when`: fits all
        assert ask("route", "router") == "route 1"
        assert ask("route", "router") == "route 2"
        # spent: each kind of request gets the latest spec served that fits it
        assert ask("route", "router") == "route 2"
        assert ask("propose_edits", "You are the L1 agent (loops)") == "L1 edits"


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("leka-cache")


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    """Legal edits along one branch: an L0 pass on the root, an L1 trace and an L2 C++ kernel on its
    result, for two different PrimFuncs (the rule L2 agent writes GEMM kernels for unscheduled ones)."""
    from agents.rules import make_rule_agents
    from benchmark.task import load_task_file
    from leka import ir
    from leka import tvm_adapter as A
    from leka.core.protocols import AgentContext
    from leka.ir.edits import apply_edit

    work = tmp_path_factory.mktemp("chain")
    task = load_task_file(MBV2)
    root = ir.import_root(task)
    c0 = ir.root_candidate(task, root=root)
    agents = make_rule_agents("llvm", root_params=root.params)

    def ctx(lv: str) -> AgentContext:
        # this machine's fp32 lanes, as a run has them: a 16-lane C++ kernel needs AVX-512
        return AgentContext(task_id=task.id, backend="llvm", level=lv, vector_lanes=A.vector_lanes_fp32(A.cpu_target()),
                            num_cores=2, variants=3)

    def apply(c, e):
        got = apply_edit(c, e, workdir=work, root_params=root.params)
        assert got.ok, got.error
        return got.candidate

    for e0 in agents["L0"].propose(c0, ctx("L0")):
        got = apply_edit(c0, e0, workdir=work, root_params=root.params)
        if not got.ok:
            continue
        c1 = got.candidate
        # a C++ kernel (not a module-wide compile-option edit): the one-shot test names its kernel
        l2 = [e for e in agents["L2"].propose(c1, ctx("L2")) if e.kind == "source"]
        l1 = [e for e in agents["L1"].propose(c1, ctx("L1")) if l2 and e.target != l2[0].target]
        if l1:
            c3 = apply(apply(c1, l1[0]), l2[0])
            return {"L0": e0, "L1": l1[0], "L2": l2[0], "c1": c1, "c3": c3, "c0": c0}
    pytest.fail("the rule agents found no L0 pass after which both an L1 trace and an L2 kernel apply")


def test_llm_run_builds_nodes_at_all_three_levels(chain, cache, tmp_path):
    script = [route_reply("L0", "many small kernels: start at the graph"), edits_reply("L0", [chain["L0"]]),
              route_reply("L1", "conv2d is far from its roofline"), edits_reply("L1", [chain["L1"]]),
              route_reply("L2", "conv2d2 is scalar"), edits_reply("L2", [chain["L2"]])]
    out = tmp_path / "out"
    with FakeLLMServer(script) as srv:
        # explore=10: each new node is expanded next, so the branch is root -> L0 -> L1 -> L2, the
        # branch the scripted edits were made for
        r = leka("run", "--task", MBV2, "--policy", "llm", "--model", f"compat:{srv.openai_url}|fake",
                 "--routing", "profile", "--max-evals", "4", "--budget", "8m", "--out", str(out), "--quiet",
                 *FAST, "--set", f"baseline.cache_dir={cache}", "--set", "run.explore=10")
        requests = list(srv.requests)
    assert r.returncode == 0, r.stderr[-3000:]
    d = run_dir_of(out)
    tree = nodes(d)
    by_level = {lv: [n for n in tree if n["level"] == lv] for lv in ("L0", "L1", "L2")}
    for lv, ns in by_level.items():
        assert len(ns) == 1, (lv, [(n["id"], n["level"], n["status"]) for n in tree])
        n = ns[0]
        assert edit_key(n["edit"]) == edit_key(chain[lv].model_dump()), lv  # the model's edit, as sent
        assert n["result"]["correct"], (lv, n["result"].get("error"))
        usage = n["meta"]["llm_usage"]
        assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0, (lv, usage)
        assert n["route_reason"] == script[["L0", "L1", "L2"].index(lv) * 2]["tool"]["arguments"]["reason"]
    # one branch: each level's node is the child of the previous one
    assert by_level["L1"][0]["parent"] == by_level["L0"][0]["id"]
    assert by_level["L2"][0]["parent"] == by_level["L1"][0]["id"]

    tools = [[t["function"]["name"] for t in q.body["tools"]] for q in requests if q.method == "POST"]
    assert tools == [["route"], ["propose_edits"]] * 3
    # the ledger bills exactly what the server reported (the fake server counts len(messages JSON) // 4)
    billed_in = sum(max(1, len(json.dumps(q.body["messages"])) // 4) for q in requests if q.method == "POST")
    s = json.loads((d / "summary.json").read_text())
    assert s["llm"]["calls"] == 6 and s["llm"]["input_tokens"] == billed_in and s["llm"]["output_tokens"] > 0
    assert s["llm_nodes"] == {"L0": 1, "L1": 1, "L2": 1}
    assert {k: v["calls"] for k, v in s["llm"]["by_agent"].items()} == {"router": 3, "L0": 1, "L1": 1, "L2": 1}

    report = (d / "report.md").read_text()
    assert "## LLM accounting" in report
    m = re.search(r"input tokens: (\d+), output tokens: (\d+)", report)
    assert m and int(m.group(1)) == billed_in and int(m.group(2)) > 0, report
    for tag in ("router", "L0", "L1", "L2"):
        row = re.search(rf"^\| {tag} \| (\d+) \| (\d+) \| (\d+) \|", report, flags=re.M)
        assert row and int(row.group(2)) > 0 and int(row.group(3)) > 0, (tag, report)
    transcript = (d / "llm_transcript.jsonl").read_text().splitlines()
    assert [json.loads(x)["tool"] for x in transcript] == ["route", "propose_edits"] * 3


def test_api_key_never_lands_in_the_run_folder(chain, cache, tmp_path):
    # the server echoes the key in an error body, as real APIs do for a bad key; the router falls
    # back (the only level is L0) and the run goes on with the L0 agent's edit
    script = [{"when": {"tool": "route"}, "status": 400, "message": f"Incorrect API key provided: {CANARY}"},
              edits_reply("L0", [chain["L0"]])]
    out = tmp_path / "out"
    with FakeLLMServer(script) as srv:
        r = leka("run", "--task", MBV2, "--policy", "llm", "--model", "openai:gpt-4o-mini", "--layers", "L0",
                 "--max-evals", "2", "--budget", "8m", "--out", str(out), "--quiet", *FAST,
                 "--set", f"baseline.cache_dir={cache}",
                 env={"OPENAI_API_KEY": CANARY, "OPENAI_BASE_URL": srv.openai_url})
        requests = [q for q in srv.requests if q.method == "POST"]
    assert r.returncode == 0, r.stderr[-3000:]
    assert len(requests) == 2 and all(q.authorization == f"Bearer {CANARY}" for q in requests)  # the key was used
    d = run_dir_of(out)
    tree = nodes(d)
    l0 = [n for n in tree if n["level"] == "L0"]
    assert len(l0) == 1 and "fallback" in l0[0]["route_reason"] and "***" in l0[0]["route_reason"], tree
    walked = [p for p in d.rglob("*") if p.is_file()]
    names = {p.name for p in walked}
    assert {"tree.sqlite", "checkpoints.sqlite", "llm_transcript.jsonl", "report.md", "summary.json",
            "config.yaml"} <= names, names
    leaks = [str(p.relative_to(d)) for p in walked if CANARY.encode() in p.read_bytes()]
    assert leaks == []
    assert CANARY not in r.stdout + r.stderr
    s = json.loads((d / "summary.json").read_text())
    assert s["llm"]["calls"] == 2 and s["llm"]["failed_calls"] == 1 and s["llm"]["cost_usd"] > 0  # a priced model


def test_oneshot_whole_candidate_in_one_call(chain, cache, tmp_path):
    from leka.core.types import Edit

    relax = Edit(level="L0", kind="relax_text", payload={"text": chain["c1"].relax_text},
                 rationale="ReLU6 as max/min")
    reply = {"tool": {"name": "propose_edits", "arguments": {
        "edits": [e.model_dump() for e in (relax, chain["L1"], chain["L2"])]}}}
    js = tmp_path / "res.json"
    with FakeLLMServer([reply]) as srv:
        r = leka("oneshot", "--task", MBV2, "--model", f"compat:{srv.openai_url}|fake", "--out",
                 str(tmp_path / "out"), "--json", str(js), *FAST, "--set", f"baseline.cache_dir={cache}")
        requests = [q for q in srv.requests if q.method == "POST"]
    assert r.returncode == 0, r.stderr[-3000:]
    assert len(requests) == 1 and [t["function"]["name"] for t in requests[0].body["tools"]] == ["propose_edits"]
    prompt = "\n".join(m["content"] for m in requests[0].body["messages"])
    assert "class Model(nn.Module)" in prompt and "PrimFuncs (unscheduled TIR)" in prompt  # reference + IR views
    res = json.loads(js.read_text())
    assert res["compile_at_1"] and res["correct_at_1"], res
    lo = res["speedup_lo"]  # Fast@1: the interval's lower bound above 1, not the point
    assert res["fast_at_1"] == bool(res["timing_valid"] and lo is not None and lo > 1.0)
    assert lo is None or lo <= res["speedup"] <= res["speedup_hi"]
    assert res["calls"] == 1 and res["input_tokens"] == len(json.dumps(requests[0].body["messages"])) // 4
    assert res["output_tokens"] > 0 and res["rejected"] == [] and len(res["edits"]) == 3
    d = Path(res["run_dir"])
    assert json.loads((d / "oneshot.json").read_text()) == res
    cand = json.loads((d / "candidate.json").read_text())
    assert cand["relax_text"] == chain["c1"].relax_text
    assert [e["func"] for e in cand["levels"]["L1"]["entries"].values()] == [chain["L1"].target]
    assert [e["kernel"] for e in cand["levels"]["L2"]["entries"].values()] == [chain["L2"].target]
    assert "Compile@1" in r.stdout and '"correct@1": true' in r.stdout


def test_oneshot_illegal_edit_fails_compile_without_repair(chain, tmp_path):
    bad = {"level": "L1", "kind": "trace", "target": "no_such_func",
           "payload": {"trace": [{"prim": "get_sblock", "args": ["x"], "out": ["b0"]}]}, "rationale": "x"}
    reply = {"tool": {"name": "propose_edits", "arguments": {"edits": [chain["L0"].model_dump(), bad]}}}
    js = tmp_path / "res.json"
    with FakeLLMServer([reply]) as srv:
        r = leka("oneshot", "--task", MBV2, "--model", f"compat:{srv.openai_url}|fake", "--out",
                 str(tmp_path / "out"), "--json", str(js), "--quiet", "--set", f"baseline.cache_dir={tmp_path}")
        n_posts = sum(q.method == "POST" for q in srv.requests)
    assert r.returncode == 0, r.stderr[-3000:]
    assert n_posts == 1  # one shot: the illegal edit goes back to nobody
    res = json.loads(js.read_text())
    assert not res["compile_at_1"] and not res["correct_at_1"] and not res["fast_at_1"]
    assert res["error_kind"] == "compile" and "no_such_func" in res["error"], res
    assert len(res["rejected"]) == 1 and res["input_tokens"] > 0
    assert not (Path(res["run_dir"]) / "candidate.json").exists()


@pytest.mark.parametrize(("args", "needle"), [
    (["--task", "no_such_task_xyz", "--model", "compat:http://127.0.0.1:9/v1|m"], "unknown task"),
    (["--task", MBV2, "--model", "nope:model"], "unknown provider"),
    (["--task", MBV2, "--model", "openai:gpt-4o-mini"], "OPENAI_API_KEY is not set"),
    (["--task", MBV2, "--model", "compat:http://x/v1|m", "--backend", "metal"], "unknown backend"),
])
def test_oneshot_bad_input_one_line(args, needle, tmp_path):
    r = leka("oneshot", *args, "--out", str(tmp_path / "o"))
    assert r.returncode == 2, (r.returncode, r.stderr[-1500:])
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and needle in lines[0], r.stderr
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir())


@pytest.mark.parametrize(("args", "needle"), [
    (["--model", "nope:model"], "unknown provider"),
    ([], "needs --model"),
])
def test_run_policy_llm_bad_model_one_line(args, needle, tmp_path):
    r = leka("run", "--task", MBV2, "--policy", "llm", *args, "--out", str(tmp_path / "o"))
    assert r.returncode == 2, (r.returncode, r.stderr[-1500:])
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and needle in lines[0], r.stderr
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir())  # no half-made run folder


@pytest.mark.llm_local
@pytest.mark.skipif(not os.environ.get("LEKA_LOCAL_LLM_URL"), reason="set LEKA_LOCAL_LLM_URL (e.g. a llama.cpp "
                    "server's http://127.0.0.1:8080/v1) to run against a local model")
def test_local_llm_short_run(tmp_path):
    """Opt-in: one short run against a real local model (`pytest -m llm_local`)."""
    url = os.environ["LEKA_LOCAL_LLM_URL"]
    model = os.environ.get("LEKA_LOCAL_LLM_MODEL", "local")
    out = tmp_path / "out"
    r = leka("run", "--task", MBV2, "--policy", "llm", "--model", f"compat:{url}|{model}", "--max-evals", "3",
             "--budget", "10m", "--out", str(out), "--quiet", *FAST, "--set", f"baseline.cache_dir={tmp_path}")
    assert r.returncode == 0, r.stderr[-3000:]
    s = json.loads((run_dir_of(out) / "summary.json").read_text())
    assert s["llm"]["calls"] >= 1 and s["llm"]["input_tokens"] > 0 and s["llm"]["output_tokens"] > 0, s["llm"]
    assert s["best_correct"]
