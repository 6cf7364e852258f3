"""Providers at the wire level: the real openai / anthropic SDK clients against a local fake server.

Nothing is patched: make_provider builds exactly what a user with a key runs; the environment points
it at 127.0.0.1 (OPENAI_BASE_URL / ANTHROPIC_BASE_URL, or the compat URL in the spec).
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import time
from pathlib import Path

import openai
import pytest

from leka.core.config import LLMConfig
from leka.core.types import BudgetExhausted, UserError
from leka.llm import Ledger, Message, ProviderError, make_provider
from leka.llm.base import cost_usd, request_digest
from leka.llm.scripted import Replay

sys.path.insert(0, str(Path(__file__).parent))
from fake_llm_server import FakeLLMServer  # noqa: E402

CANARY = "sk-test-canary"
TOOL = {"name": "propose_edits", "description": "d",
        "parameters": {"type": "object", "properties": {"edits": {"type": "array"}}, "required": ["edits"]}}
MSGS = [Message(role="system", content="You are a test."), Message(role="user", content="Say hi.")]


@pytest.fixture
def server(monkeypatch):
    with FakeLLMServer() as srv:
        monkeypatch.setenv("OPENAI_API_KEY", CANARY)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-canary")
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_url)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.anthropic_url)
        monkeypatch.delenv("LEKA_COMPAT_API_KEY", raising=False)
        yield srv


def cfg(**kw) -> LLMConfig:
    return LLMConfig(**{"timeout_s": 5.0, "max_retries": 3, **kw})


SPECS = {"openai": "openai:gpt-4o-mini", "anthropic": "anthropic:claude-haiku-4-5"}


def test_openai_text_and_request_shape(server):
    server.push({"text": "hi there", "usage": {"input": 1000, "output": 500}})
    led = Ledger()
    p = make_provider("openai:gpt-4o-mini", cfg(), led)
    c = p.complete(MSGS, max_tokens=77, temperature=0.5)
    assert c.text == "hi there" and c.tool_args is None
    assert (c.usage.input_tokens, c.usage.output_tokens) == (1000, 500)
    assert c.usage.cost_usd == pytest.approx((1000 * 0.15 + 500 * 0.60) / 1e6)
    assert c.raw_id and c.raw_id.startswith("chatcmpl-") and c.model == "gpt-4o-mini"
    (req,) = server.requests
    assert req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == f"Bearer {CANARY}"
    assert req.body["messages"] == [m.model_dump() for m in MSGS]
    assert req.body["max_completion_tokens"] == 77 and req.body["temperature"] == 0.5
    assert "tools" not in req.body
    assert led.to_dict()["calls"] == 1 and led.records[0].priced


def test_openai_tool_call(server):
    server.push({"tool": {"name": "propose_edits", "arguments": {"edits": [{"kind": "pass"}]}}})
    p = make_provider("openai:gpt-4o", cfg())
    c = p.complete(MSGS, tool=TOOL)
    assert c.tool_args == {"edits": [{"kind": "pass"}]}
    body = server.requests[0].body
    assert body["tools"][0]["function"]["name"] == "propose_edits"
    assert body["tools"][0]["function"]["parameters"] == TOOL["parameters"]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "propose_edits"}}


def test_openai_tool_args_not_json_come_back_as_text(server):
    server.push({"tool": {"name": "propose_edits", "arguments": '{"edits": [oops'}})
    c = make_provider("openai:gpt-4o", cfg()).complete(MSGS, tool=TOOL)
    assert c.tool_args is None and '{"edits": [oops' in c.text


def test_anthropic_tool_call_and_request_shape(server):
    server.push({"text": "thinking", "tool": {"name": "propose_edits", "arguments": {"edits": []}},
                 "usage": {"input": 2000, "output": 100}})
    msgs = [*MSGS, Message(role="assistant", content="ok"), Message(role="user", content="again"),
            Message(role="user", content="and again")]
    c = make_provider("anthropic:claude-haiku-4-5", cfg()).complete(msgs, tool=TOOL, max_tokens=123)
    assert c.tool_args == {"edits": []} and c.text == "thinking"
    assert c.usage.cost_usd == pytest.approx((2000 * 1.0 + 100 * 5.0) / 1e6)
    (req,) = server.requests
    assert req.path == "/v1/messages"
    assert req.body["system"] == "You are a test."
    # consecutive user turns are merged: the Messages API wants strict alternation
    assert [t["role"] for t in req.body["messages"]] == ["user", "assistant", "user"]
    assert req.body["messages"][-1]["content"] == "again\n\nand again"
    assert req.body["tools"][0]["input_schema"] == TOOL["parameters"]
    assert req.body["tool_choice"] == {"type": "tool", "name": "propose_edits"} and req.body["max_tokens"] == 123


@pytest.mark.parametrize("which", ["openai", "anthropic"])
@pytest.mark.parametrize("fault", [{"status": 429, "retry_after": 0.05}, {"status": 500}, {"status": 503},
                                   {"garbage": "<html>bad gateway</html>"}])
def test_fault_then_success(server, which, fault):
    server.push(fault, {"text": "recovered"})
    led = Ledger()
    c = make_provider(SPECS[which], cfg(), led, backoff_s=0.01).complete(MSGS)
    assert c.text == "recovered"
    assert len(server.requests) == 2
    (rec,) = led.records
    assert rec.ok and rec.attempts == 2


def test_retry_after_is_honoured(server):
    server.push({"status": 429, "retry_after": 0.4}, {"text": "ok"})
    t0 = time.monotonic()
    make_provider("openai:gpt-4o-mini", cfg(), backoff_s=0.001).complete(MSGS)
    assert time.monotonic() - t0 >= 0.4


def test_retries_give_up_with_provider_error(server):
    server.push({"status": 500})  # repeats: the queue's last spec answers every later request
    led = Ledger()
    with pytest.raises(ProviderError) as ei:
        make_provider("anthropic:claude-haiku-4-5", cfg(max_retries=2), led, backoff_s=0.01).complete(MSGS)
    assert ei.value.kind == "server" and ei.value.attempts == 3
    assert len(server.requests) == 3
    assert not led.records[0].ok and led.records[0].error_kind == "server"


def test_bad_request_is_not_retried(server):
    server.push({"status": 400})
    with pytest.raises(ProviderError) as ei:
        make_provider("openai:gpt-4o-mini", cfg(), backoff_s=0.01).complete(MSGS)
    assert ei.value.kind == "bad_request" and len(server.requests) == 1


def test_timeout_then_success(server):
    server.push({"delay": 3.0, "text": "too late"}, {"text": "in time"})
    t0 = time.monotonic()
    c = make_provider("openai:gpt-4o-mini", cfg(timeout_s=0.3), backoff_s=0.01).complete(MSGS)
    assert c.text == "in time" and len(server.requests) == 2
    assert time.monotonic() - t0 < 2.5


def test_timeout_every_time_is_a_provider_error(server):
    server.push({"delay": 3.0, "text": "too late"})
    with pytest.raises(ProviderError) as ei:
        make_provider("anthropic:claude-haiku-4-5", cfg(timeout_s=0.2, max_retries=1), backoff_s=0.01).complete(MSGS)
    assert ei.value.kind == "timeout" and ei.value.attempts == 2


def test_deadline_passes_during_the_call(server):
    server.push({"delay": 5.0, "text": "too late"})
    led = Ledger()
    p = make_provider("openai:gpt-4o-mini", cfg(timeout_s=60), led, backoff_s=0.01)
    t0 = time.monotonic()
    with pytest.raises(BudgetExhausted) as ei:
        p.complete(MSGS, deadline=t0 + 0.5)
    assert ei.value.what == "wall_clock"
    assert time.monotonic() - t0 < 3.0  # the per-call timeout was cut to the time left, not 60 s
    assert led.records[-1].error_kind == "deadline"


def test_deadline_already_past_sends_nothing(server):
    p = make_provider("anthropic:claude-haiku-4-5", cfg())
    with pytest.raises(BudgetExhausted) as e:
        p.complete(MSGS, deadline=time.monotonic() - 1)
    assert server.requests == []
    # the stop reason a user reads: no monotonic clock readings ("used 8402.09 of 8402.08")
    assert "wall-clock budget ended" in str(e.value) and " of " not in str(e.value)


def test_ledger_call_and_token_limits(server):
    server.push({"text": "a", "usage": {"input": 60, "output": 10}})
    p = make_provider("openai:gpt-4o-mini", cfg(), Ledger(max_calls=2))
    p.complete(MSGS)
    p.complete(MSGS)
    with pytest.raises(BudgetExhausted) as ei:
        p.complete(MSGS)
    assert ei.value.what == "llm_calls" and len(server.requests) == 2
    led = Ledger(max_tokens=100)
    p = make_provider("openai:gpt-4o-mini", cfg(), led)
    p.complete(MSGS)  # 70 tokens: under the limit
    p.complete(MSGS)  # 140: already paid for, so it is returned and recorded
    with pytest.raises(BudgetExhausted) as ei:
        p.complete(MSGS)
    assert ei.value.what == "llm_tokens" and led.usage.total_tokens == 140


def test_compat_server_and_tool_fallback(server):
    server.push({"status": 400, "message": "tools are not supported"}, {"text": '{"edits": []}'}, {"text": "x"})
    led = Ledger()
    p = make_provider(f"compat:{server.openai_url}|qwen2.5-coder", cfg(), led)
    assert p.name == f"compat:{server.openai_url}|qwen2.5-coder"
    c = p.complete(MSGS, tool=TOOL, max_tokens=50)
    assert c.text == '{"edits": []}' and c.usage.cost_usd == 0.0
    first, second = server.requests
    assert "tools" in first.body and "tools" not in second.body
    assert second.body["max_tokens"] == 50 and second.headers["authorization"] == "Bearer none"
    p.complete(MSGS, tool=TOOL)  # remembered: no second 400
    assert "tools" not in server.requests[2].body
    assert not led.records[0].priced


def test_missing_key_is_a_user_error(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(UserError, match="OPENAI_API_KEY"):
        make_provider("openai:gpt-4o", cfg())
    for bad in ("gpt-4o", "compat:http://x", "nope:model"):
        with pytest.raises(UserError):
            make_provider(bad, cfg())


def test_cost_table():
    assert cost_usd("openai", "gpt-4o-2024-08-06", 1_000_000, 0) == pytest.approx(2.5)  # dated snapshot
    assert cost_usd("openai", "gpt-4o-mini", 0, 1_000_000) == pytest.approx(0.6)  # longest prefix wins
    assert cost_usd("anthropic", "claude-opus-4-5-20251101", 1_000_000, 0) == pytest.approx(5.0)
    assert cost_usd("openai", "some-new-model", 10**6, 10**6) == 0.0
    assert cost_usd("compat", "gpt-4o", 10**6, 10**6) == 0.0


def test_record_then_replay_without_server(server, tmp_path):
    server.push({"text": "first"}, {"tool": {"name": "propose_edits", "arguments": {"edits": [1]}}})
    path = tmp_path / "transcript.jsonl"
    p = make_provider("openai:gpt-4o-mini", cfg(), record_to=path)
    m2 = [*MSGS, Message(role="user", content="second")]
    a = p.complete(MSGS)
    b = p.complete(m2, tool=TOOL)
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert [x["i"] for x in lines] == [0, 1] and lines[1]["tool"] == "propose_edits"
    assert lines[0]["digest"] == request_digest(MSGS, None)
    n_requests = len(server.requests)

    led = Ledger()
    r = make_provider(f"replay:{path}", cfg(), led)
    # out of order: the digest picks the matching entry
    assert r.complete(m2, tool=TOOL).tool_args == b.tool_args
    assert r.complete(MSGS).text == a.text
    assert len(server.requests) == n_requests and r.misses == 0
    assert led.usage.total_tokens == a.usage.total_tokens + b.usage.total_tokens
    with pytest.raises(ProviderError) as ei:  # spent
        r.complete(MSGS)
    assert ei.value.kind == "replay_miss"
    # prompts that embed timings differ run to run: non-strict replay falls back to recorded order
    loose = Replay(path)
    assert loose.complete([Message(role="user", content="changed")]).text == "first" and loose.misses == 1
    with pytest.raises(ProviderError):
        Replay(path, strict=True).complete([Message(role="user", content="changed")])


def test_recorder_keeps_failures_for_replay(server, tmp_path):
    server.push({"status": 400})
    path = tmp_path / "t.jsonl"
    with pytest.raises(ProviderError):
        make_provider("openai:gpt-4o-mini", cfg(), record_to=path).complete(MSGS)
    with pytest.raises(ProviderError) as ei:
        make_provider(f"replay:{path}", cfg()).complete(MSGS)
    assert ei.value.kind == "bad_request"


def test_scripted_from_file(tmp_path):
    f = tmp_path / "replies.json"
    f.write_text(json.dumps(["plain", {"tool_args": {"edits": []}, "usage": {"input_tokens": 5, "output_tokens": 7}},
                            {"error": "rate_limit"}]))
    led = Ledger()
    p = make_provider(f"scripted:{f}", cfg(), led)
    assert p.complete(MSGS).text == "plain"
    c = p.complete(MSGS)
    assert c.tool_args == {"edits": []} and c.usage.total_tokens == 12
    with pytest.raises(ProviderError, match="rate_limit"):
        p.complete(MSGS)
    with pytest.raises(ProviderError, match="exhausted"):
        p.complete(MSGS)
    assert led.to_dict()["failed_calls"] == 2


def test_key_never_written(server, tmp_path, monkeypatch, caplog):
    """With OPENAI_API_KEY=sk-test-canary: transcripts, ledgers, reprs, errors and logs stay clean."""
    from agents.llm_agent import LLMAgent
    from leka.core.protocols import AgentContext

    caplog.set_level(logging.DEBUG)  # every logger, the SDKs' and httpx's included
    server.push(
        {"status": 429, "retry_after": 0.01}, {"status": 500}, {"garbage": "not json"},
        {"delay": 2.0, "text": "late"},
        {"tool": {"name": "propose_edits", "arguments": {"edits": [{"kind": "trace", "target": "f", "payload": {}}]}}},
        {"tool": {"name": "propose_edits", "arguments": {"edits": [
            {"kind": "trace", "target": "f", "payload": {"trace": [{"prim": "get_sblock", "args": ["f"]}]}}]}}},
        # a server that echoes the key in an error body
        {"status": 401, "message": f"Incorrect API key provided: {CANARY}"},
    )
    run = tmp_path / "run"
    led = Ledger()
    p = make_provider("openai:gpt-4o-mini", cfg(timeout_s=0.5, max_retries=5), led, record_to=run / "llm.jsonl",
                      backoff_s=0.01)
    agent = LLMAgent("L1", p, views=lambda c, ctx: {"tir": "def f(): ...", "task_contract": "x"},
                     check=lambda c, e: None)
    edits = agent.propose(None, AgentContext(task_id="t", backend="llvm", level="L1"))
    assert len(edits) == 1 and agent.last_report.repairs == 1
    with pytest.raises(ProviderError) as ei:
        p.complete(MSGS)
    assert "***" in str(ei.value)
    # the key did travel where it must: to the server, in the Authorization header
    assert all(r.headers.get("authorization") == f"Bearer {CANARY}" for r in server.requests)
    (run / "ledger.json").write_text(json.dumps(led.to_dict()))
    (run / "report.json").write_text(agent.last_report.model_dump_json())
    written = "\n".join(f.read_text() for f in run.iterdir())
    assert "propose_edits" in written and "gpt-4o-mini" in written  # the files do hold the run
    for text in (written, caplog.text, repr(p), repr(led), repr(agent), str(ei.value), agent.last_error or "",
                 "\n".join(r.model_dump_json() for r in led.records)):
        assert CANARY not in text


def test_standalone_server(tmp_path):
    script = tmp_path / "replies.json"
    script.write_text(json.dumps([{"text": "from the script"}]))
    proc = subprocess.Popen([sys.executable, str(Path(__file__).parent / "fake_llm_server.py"), "--port", "0",
                             "--script", str(script), "--default-text", "default"],
                            stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        url = line.split()[4]
        client = openai.OpenAI(api_key="x", base_url=url + "/v1", max_retries=0, timeout=5)
        assert [m.id for m in client.models.list()] == ["fake-model"]
        ask = lambda: client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])  # noqa: E731
        assert ask().choices[0].message.content == "from the script"
        assert ask().choices[0].message.content == "default"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_ledger_from_config_threads_and_tags():
    import threading

    from leka.core.config import RunConfig
    from leka.llm.scripted import Scripted

    led = Ledger.from_config(RunConfig(max_llm_calls=40))
    p = Scripted([{"text": "r", "usage": {"input_tokens": 3, "output_tokens": 2}}] * 50, ledger=led)

    def work(tag: str) -> None:
        with led.tagged(tag):
            for _ in range(10):
                p.complete(MSGS)

    threads = [threading.Thread(target=work, args=(f"L{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    d = led.to_dict()
    assert d["calls"] == 40 and d["input_tokens"] == 120 and d["output_tokens"] == 80
    assert sorted({r["tag"] for r in d["records"]}) == ["L0", "L1", "L2", "L3"]
    mark = led.mark()
    with pytest.raises(BudgetExhausted, match="llm_calls"):
        p.complete(MSGS)
    assert led.usage_since(mark).total_tokens == 0
