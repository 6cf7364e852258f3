"""Prompt templates (StrictUndefined, bounded views, the schema they describe) and reply parsing."""

from __future__ import annotations

import jinja2
import pytest

from leka.llm.base import Completion
from leka.llm.parsing import ParseError, extract_json, parse_edits, parse_route, reply_data
from leka.llm.prompting import (
    EDIT_KINDS,
    L0_PASSES,
    PROMPTS_DIR,
    TEMPLATES,
    edit_tool,
    render,
    route_tool,
    trace_dsl,
)

BASE = dict(role="the L1 agent", backend="llvm", task_id="t", task_contract="contract-XYZ",
            profile_text="profile-XYZ", lineage_text="lineage-XYZ", route_reason="reason-XYZ", variants=3,
            vector_lanes=16, num_cores=2, tool_name="propose_edits", proposes=True)
VIEWS = {"L0": {"relax": "RELAX-VIEW"}, "L1": {"tir": "TIR-VIEW"}, "L2": {"source": "SOURCE-VIEW"},
         "oneshot": {"reference": "REFERENCE-VIEW"}, "router": {},
         "flat": {"relax": "RELAX-VIEW", "summary": "TABLE-VIEW", "tir": "TIR-VIEW", "source": "SOURCE-VIEW"}}


def test_every_template_is_present():
    names = {p.name for p in PROMPTS_DIR.glob("*.j2")}
    assert {"system.j2", "repair.j2", *TEMPLATES.values()} <= names
    assert (PROMPTS_DIR / "README.md").is_file()


@pytest.mark.parametrize("level", list(TEMPLATES))
def test_templates_render_with_their_views(level):
    out = render(TEMPLATES[level], level=level, views=VIEWS[level], levels=["L0", "L1", "L2"], **BASE)
    for v in VIEWS[level].values():
        assert v in out
    for part in ("contract-XYZ", "profile-XYZ", "lineage-XYZ", "reason-XYZ"):
        assert part in out
    if level != "router":
        assert "Edit schema" in out
        for lv in (["L0", "L1", "L2"] if level in ("oneshot", "flat") else [level]):
            for kind in EDIT_KINDS[lv]:
                assert f'kind "{kind}"' in out
    if level in ("L1", "oneshot", "flat"):
        assert "get_sblock" in out and "decompose_reduction" in out


def test_empty_context_sections_are_left_out():
    out = render("l1_tir.j2", level="L1", views={"tir": "T"}, **{**BASE, "lineage_text": "", "profile_text": ""})
    assert "Lineage" not in out and "Profile" not in out


def test_strict_undefined():
    with pytest.raises(jinja2.UndefinedError, match="relax"):
        render("l0_relax.j2", level="L0", views={}, **BASE)
    with pytest.raises(jinja2.UndefinedError, match="profile_text"):
        render("l0_relax.j2", level="L0", views={"relax": "r"}, **{k: v for k, v in BASE.items() if k != "profile_text"})


def test_views_are_clipped():
    big = "x" * 200_000
    out = render("l1_tir.j2", level="L1", views={"tir": big}, **BASE)
    assert len(out) < 80_000 and "characters cut" in out


def test_system_and_repair():
    s = render("system.j2", level="router", **{**BASE, "proposes": False, "tool_name": "route"})
    assert "`route` tool" in s and "decide which level" in s and "PyTorch reference" not in s
    r = render("repair.j2", errors=["edit 1: bad"], attempt=1, max_repairs=2, tool_name="propose_edits",
               kind="edits")
    assert "repair 1 of 2" in r and "- edit 1: bad" in r


def test_prompt_tables_match_the_ir_layer():
    # imports TVM: the prompt's DSL and pass list must not drift from what can actually be applied
    from leka import tvm_adapter
    from leka.ir import sched

    assert set(L0_PASSES) == set(tvm_adapter.L0_PASS_FNS)  # and the passes the IR layer applies
    dsl = trace_dsl()
    assert dsl["primitives"] == sorted(sched.PRIMITIVES)
    assert dsl["doc"] == sched.__doc__.strip()


def test_tool_schemas():
    t = edit_tool("L0")
    item = t["parameters"]["properties"]["edits"]["items"]
    assert t["name"] == "propose_edits" and item["properties"]["level"]["enum"] == ["L0"]
    assert set(item["properties"]["kind"]["enum"]) == {"pass", "relax_text"}
    assert set(edit_tool("oneshot")["parameters"]["properties"]["edits"]["items"]["properties"]["kind"]["enum"]) == \
        {"pass", "relax_text", "trace", "tir_text", "traces", "source", "compile_options"}
    assert route_tool(["L1", "L2"])["parameters"]["properties"]["level"]["enum"] == ["L1", "L2"]


@pytest.mark.parametrize("text,expected", [
    ('{"edits": []}', {"edits": []}),
    ('Here:\n```json\n{"a": 1}\n```\nthanks', {"a": 1}),
    ('```\n[1, 2]\n```', [1, 2]),
    ('I think {"level": "L1", "reason": "x"} is right', {"level": "L1", "reason": "x"}),
    ('noise {not json} then {"b": [1, {"c": 2}]} tail', {"b": [1, {"c": 2}]}),
])
def test_extract_json(text, expected):
    assert extract_json(text) == expected


@pytest.mark.parametrize("text,msg", [("", "empty"), ("no json here", "no JSON object"),
                                      ('```json\n{"a": [1 2]}\n```', "not valid JSON")])
def test_extract_json_errors(text, msg):
    with pytest.raises(ParseError, match=msg):
        extract_json(text)


def test_tool_args_win_over_text():
    c = Completion(text='{"edits": "text"}', tool_args={"edits": "tool"})
    assert reply_data(c) == {"edits": "tool"}


def test_parse_edits_shapes_and_errors():
    good = {"kind": "pass", "payload": {"name": L0_PASSES[0]}}
    assert len(parse_edits({"edits": [good]}, "L0")[0]) == 1
    assert len(parse_edits([good], "L0")[0]) == 1
    assert len(parse_edits(good, "L0")[0]) == 1  # a single edit object
    cases = [
        ({"edits": []}, "empty"),
        ({"edits": "x"}, "expected"),
        ([{"kind": "trace", "payload": {"trace": [{"prim": "split"}]}}], "needs target"),
        ([{"kind": "trace", "target": "f", "payload": {"trace": [{"args": []}]}}], "step 0"),
        ([{"kind": "tir_text", "target": "f", "payload": {"text": "  "}}], "non-empty"),
        ([{"kind": "pass", "payload": {"name": "x"}}], "kind for L1"),
        ([{"level": "L2", "kind": "trace", "target": "f", "payload": {"trace": [{"prim": "a"}]}}], "level must be"),
        ([{"kind": "trace", "target": "f", "payload": "p"}], "payload must be an object"),
        (["str"], "expected an object"),
    ]
    for data, msg in cases:
        edits, errors = parse_edits(data, "L1")
        assert edits == [] and msg in errors[0], (data, errors)
    src = {"kind": "source", "target": "k", "payload": {"language": "rust", "text": "fn"}}
    assert "language" in parse_edits([src], "L2")[1][0]


def test_parse_route():
    assert parse_route({"level": " l0 ", "reason": " many small kernels "}, ["L0", "L1"]) == ("L0", "many small kernels")
    with pytest.raises(ParseError, match="level"):
        parse_route({"level": "L2", "reason": "x"}, ["L0", "L1"])
    with pytest.raises(ParseError, match="reason"):
        parse_route({"level": "L1"}, ["L0", "L1"])
