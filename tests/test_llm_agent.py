"""LLMAgent / LLMRouter: prompt -> provider -> parse -> check -> repair, over the wire (fake server,
real SDKs) and offline (Scripted). `views` and `check` here are small real functions: they are the
caller's logic the agent is driven by, not stand-ins for project code."""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path

import pytest

from agents.llm_agent import LLMAgent, LLMRouter
from leka.core.config import LLMConfig
from leka.core.protocols import Agent, AgentContext, Router
from leka.core.types import BudgetExhausted, Edit
from leka.llm import Ledger, make_provider
from leka.llm.scripted import Scripted

sys.path.insert(0, str(Path(__file__).parent))
from fake_llm_server import FakeLLMServer  # noqa: E402

BLOCKS = ["matmul", "relu"]
TIR = '@T.prim_func\ndef matmul(A: T.Buffer((64, 64), "float32"), ...):\n    with T.sblock("matmul"): ...'
CTX = AgentContext(task_id="mm_relu", backend="llvm", level="L1", profile_text="matmul: 91% of time, scalar",
                   lineage_text="root: 1.00x", route_reason="hot matmul far from roofline")


def views(candidate, ctx: AgentContext) -> dict[str, str]:
    return {"tir": TIR, "task_contract": "in: A f32[64,64], B f32[64,64] -> relu(A @ B)"}


def check_trace(candidate, e: Edit) -> str | None:
    """Legal = the trace starts by naming a block that exists in the PrimFunc."""
    first = e.payload["trace"][0]
    if first["prim"] != "get_sblock":
        return "the first step must be get_sblock"
    if first.get("args", [None])[0] not in BLOCKS:
        return f"unknown block {first.get('args')}; blocks are {BLOCKS}"
    return None


def trace_edit(block: str, target: str = "matmul") -> dict:
    return {"level": "L1", "kind": "trace", "target": target, "rationale": "tile",
            "payload": {"trace": [{"prim": "get_sblock", "args": [block], "out": ["b"]},
                                  {"prim": "get_loops", "args": ["b"], "out": ["i", "j", "k"]},
                                  {"prim": "parallel", "args": ["i"]}]}}


def tool(*edits: dict) -> dict:
    return {"tool": {"name": "propose_edits", "arguments": {"edits": list(edits)}}}


@pytest.fixture
def server(monkeypatch):
    with FakeLLMServer() as srv:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-canary")
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_url)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.anthropic_url)
        yield srv


def provider(which: str, ledger: Ledger | None = None, **cfg):
    spec = {"openai": "openai:gpt-4o-mini", "anthropic": "anthropic:claude-haiku-4-5"}[which]
    return make_provider(spec, LLMConfig(**{"timeout_s": 5.0, "max_retries": 2, **cfg}), ledger, backoff_s=0.01)


def test_agent_satisfies_protocol():
    a = LLMAgent("L1", Scripted([]), views=views, check=check_trace)
    assert isinstance(a, Agent) and a.level == "L1"


@pytest.mark.parametrize("which", ["openai", "anthropic"])
def test_malformed_edit_repaired_on_second_reply(server, which):
    bad = trace_edit("mm")  # no such block: check() rejects it
    server.push(tool(bad), tool(trace_edit("matmul")))
    led = Ledger()
    agent = LLMAgent("L1", provider(which, led), views=views, check=check_trace)
    edits = agent.propose(None, CTX)
    assert [(e.level, e.kind, e.target) for e in edits] == [("L1", "trace", "matmul")]
    assert edits[0].payload["trace"][0]["args"] == ["matmul"]
    assert agent.last_error is None
    r = agent.last_report
    assert (r.calls, r.repairs, r.accepted) == (2, 1, 1)
    assert r.usage.total_tokens == led.usage.total_tokens > 0
    assert [rec.tag for rec in led.records] == ["L1", "L1"]
    # the second request carries the bad reply and a repair message naming the problem
    second = server.requests[1].body
    turns = second["messages"]
    text = json.dumps(turns)
    assert "unknown block ['mm']" in text and "repair 1 of 2" in text
    assert "hot matmul far from roofline" in text and "get_sblock" in text  # the prompt carries context
    first_turns = server.requests[0].body["messages"]
    assert len(turns) == len(first_turns) + 2


def test_garbage_json_in_text_is_repaired(server):
    server.push({"text": "Here you go:\n```json\n{\"edits\": [ {\"kind\": \"trace\", oops ]}\n```"},
                {"text": "Sure.\n```json\n" + json.dumps({"edits": [trace_edit("relu", "relu")]}) + "\n```"})
    agent = LLMAgent("L1", provider("anthropic"), views=views, check=check_trace)
    edits = agent.propose(None, CTX)
    assert len(edits) == 1 and edits[0].target == "relu"
    assert "not valid JSON" in agent.last_report.errors[0][0]
    assert "not valid JSON" in json.dumps(server.requests[1].body["messages"])


def test_never_legal_returns_empty_with_reason(server):
    server.push(tool(trace_edit("nope")))  # repeated for every request
    agent = LLMAgent("L1", provider("openai"), views=views, check=check_trace, max_repairs=2)
    assert agent.propose(None, CTX) == []
    assert len(server.requests) == 3
    assert agent.last_error.startswith("no usable reply after 2 repair(s)")
    assert "unknown block ['nope']" in agent.last_error
    assert agent.last_report.failure == agent.last_error and agent.last_report.accepted == 0


def test_provider_down_returns_empty_with_reason(server):
    server.push({"status": 500})
    agent = LLMAgent("L1", provider("openai", max_retries=1), views=views, check=check_trace)
    assert agent.propose(None, CTX) == []
    assert agent.last_error.startswith("provider: server") and len(server.requests) == 2


def test_budget_runs_out_mid_propose(server):
    server.push({**tool(trace_edit("mm")), "usage": {"input": 900, "output": 200}}, tool(trace_edit("matmul")))
    led = Ledger(max_tokens=1000)
    agent = LLMAgent("L1", provider("openai", led), views=views, check=check_trace)
    with pytest.raises(BudgetExhausted) as ei:
        agent.propose(None, CTX)  # first reply is illegal; the repair call finds the tokens spent
    assert ei.value.what == "llm_tokens" and len(server.requests) == 1
    assert agent.last_report.failure == "budget exhausted"


def test_deadline_passes_mid_propose(server):
    server.push({"delay": 5.0, **tool(trace_edit("matmul"))})
    end = time.monotonic() + 0.5
    agent = LLMAgent("L1", provider("anthropic", timeout_s=60), views=views, check=check_trace,
                     deadline=lambda: end)
    t0 = time.monotonic()
    with pytest.raises(BudgetExhausted) as ei:
        agent.propose(None, CTX)
    assert ei.value.what == "wall_clock" and time.monotonic() - t0 < 3.0


def test_the_loops_deadline_comes_with_the_context(server):
    """The loop hands the budget's end in AgentContext.deadline: no callback into the run needed."""
    server.push({"delay": 5.0, **tool(trace_edit("matmul"))})
    agent = LLMAgent("L1", provider("anthropic", timeout_s=60), views=views, check=check_trace)
    t0 = time.monotonic()
    with pytest.raises(BudgetExhausted) as ei:
        agent.propose(None, dataclasses.replace(CTX, deadline=time.monotonic() + 0.5))
    assert ei.value.what == "wall_clock" and time.monotonic() - t0 < 3.0


def test_check_is_asked_about_the_candidate_being_expanded():
    seen: list = []
    agent = LLMAgent("L1", Scripted([{"tool_args": {"edits": [trace_edit("matmul")]}}]), views=views,
                     check=lambda c, e: seen.append((c, e.target)))
    assert len(agent.propose("the candidate", CTX)) == 1
    assert seen == [("the candidate", "matmul")]

def test_partial_reply_keeps_legal_edits_and_says_what_was_dropped():
    p = Scripted([{"tool_args": {"edits": [trace_edit("matmul"), trace_edit("bogus"),
                                           {"kind": "trace", "target": "relu", "payload": {}}]}}])
    agent = LLMAgent("L1", p, views=views, check=check_trace)
    edits = agent.propose(None, CTX)
    assert len(edits) == 1 and len(p.calls) == 1  # no repair call when something is usable
    assert "unknown block ['bogus']" in agent.last_error and "payload.trace" in agent.last_error


def test_duplicate_edits_in_one_reply_count_once():
    e = trace_edit("matmul")
    agent = LLMAgent("L1", Scripted([{"tool_args": {"edits": [e, e]}}]), views=views, check=check_trace)
    assert len(agent.propose(None, CTX)) == 1


def test_check_that_raises_rejects_the_edit():
    def check(candidate, e: Edit) -> str | None:
        raise RuntimeError("TVM said no")

    agent = LLMAgent("L1", Scripted([{"tool_args": {"edits": [trace_edit("matmul")]}}] * 2), views=views,
                     check=check, max_repairs=1)
    assert agent.propose(None, CTX) == []
    assert "RuntimeError: TVM said no" in agent.last_error


def test_missing_view_is_reported_not_raised():
    agent = LLMAgent("L0", Scripted(["{}"]), views=views, check=lambda c, e: None)  # l0 needs views["relax"]
    assert agent.propose(None, CTX.__class__(task_id="t", backend="llvm", level="L0")) == []
    assert agent.last_error.startswith("prompt: UndefinedError") and "relax" in agent.last_error


def test_l0_and_l2_agents_parse_their_kinds():
    l0 = LLMAgent("L0", Scripted([json.dumps({"edits": [
        {"kind": "pass", "payload": {"name": "fold_batchnorm"}, "rationale": "fold"},
        {"kind": "pass", "payload": {"name": "make_it_fast"}}]})]),
        views=lambda c, x: {"relax": "@R.function ..."}, check=lambda c, e: None)
    edits = l0.propose(None, AgentContext(task_id="t", backend="llvm", level="L0"))
    assert [e.payload["name"] for e in edits] == ["fold_batchnorm"] and "make_it_fast" in l0.last_error
    src = {"level": "L2", "kind": "source", "target": "matmul",
           "payload": {"language": "cpp", "text": "extern \"C\" int f() { return 0; }", "entry": "f"}}
    l2 = LLMAgent("L2", Scripted([{"text": "prose first " + json.dumps([src])}]),
                  views=lambda c, x: {"source": "define void @matmul() {}"}, check=lambda c, e: None)
    (e,) = l2.propose(None, AgentContext(task_id="t", backend="llvm", level="L2"))
    assert e.payload["entry"] == "f" and e.kind == "source"


def test_oneshot_agent_emits_all_levels():
    reply = {"edits": [
        {"level": "L0", "kind": "relax_text", "payload": {"text": "@I.ir_module ..."}},
        {"level": "L1", "kind": "trace", "target": "matmul", "payload": trace_edit("matmul")["payload"]},
        {"kind": "pass", "payload": {"name": "fuse"}},  # one-shot edits must say their level
    ]}
    p = Scripted([{"tool_args": reply}])
    agent = LLMAgent("oneshot", p, views=lambda c, x: {"reference": "class Model(nn.Module): ..."},
                     check=lambda c, e: None)
    edits = agent.propose(None, AgentContext(task_id="t", backend="llvm", level="oneshot"))
    assert [e.level for e in edits] == ["L0", "L1"] and "level must be one of" in agent.last_error
    assert "class Model(nn.Module)" in p.calls[0][1].content


def test_router_repairs_then_routes(server):
    server.push({"tool": {"name": "route", "arguments": {"level": "L3", "reason": "?"}}},
                {"tool": {"name": "route", "arguments": {"level": "l2", "reason": "scalar inner loop"}}})
    r = LLMRouter(provider("openai"), views=lambda c, x: {"summary": "1 kernel"})
    assert isinstance(r, Router) and r.state() == {}  # the loop's Router, nothing to checkpoint
    assert r.route(None, None, CTX) == ("L2", "scalar inner loop")
    body = server.requests[0].body
    assert body["tools"][0]["function"]["name"] == "route"
    assert body["tools"][0]["function"]["parameters"]["properties"]["level"]["enum"] == ["L0", "L1", "L2"]
    assert "level must be one of" in json.dumps(server.requests[1].body["messages"])


def test_router_falls_back_without_raising():
    r = LLMRouter(Scripted(["no idea", "still no idea"]), levels=["L0", "L2"], max_repairs=1)
    level, reason = r.route(None, None, CTX)
    assert level == "L0" and reason.startswith("fallback: no usable reply after 1 repair(s)")
