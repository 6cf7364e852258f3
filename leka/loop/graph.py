"""The wiring of the loop (docs/DESIGN.md, "Orchestration"):

    init -> sense -> route -> {l0, l1, l2} -> evaluate -> select -> sense ... -> finish

Nodes are the functions of `leka.loop.nodes`; the level nodes and their edges come from the level table
(`leka.core.levels`). Checkpoints go to `RUN_DIR/checkpoints.sqlite` after every node, so a killed
run continues with `leka run --resume RUN_DIR`.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

from leka.core.levels import LEVEL_SPECS
from leka.loop import nodes
from leka.loop.context import RunContext
from leka.loop.state import RunState


def _after_route(s: RunState) -> str:
    if s.get("done"):
        return "finish"
    return LEVEL_SPECS[s["level"]].node if s.get("level") else "select"


def _after_propose(s: RunState) -> str:
    return "finish" if s.get("done") else ("evaluate" if s.get("proposed") else "route")


def _done_or(nxt: str):
    def edge(s: RunState) -> str:
        return "finish" if s.get("done") else nxt

    edge.__name__ = f"done_or_{nxt}"
    return edge


def build_graph() -> StateGraph:
    level_nodes = [spec.node for spec in LEVEL_SPECS.values()]
    g = StateGraph(RunState, context_schema=RunContext)
    for name, fn in (("init", nodes.init), ("sense", nodes.sense), ("route", nodes.route),
                     ("evaluate", nodes.evaluate), ("select", nodes.select), ("finish", nodes.finish)):
        g.add_node(name, fn)
    for spec in LEVEL_SPECS.values():
        g.add_node(spec.node, nodes.level_node(spec.name))
        g.add_conditional_edges(spec.node, _after_propose, ["finish", "evaluate", "route"])
    g.add_edge(START, "init")
    g.add_edge("init", "sense")
    g.add_conditional_edges("sense", _done_or("route"), ["finish", "route"])
    g.add_conditional_edges("route", _after_route, ["finish", "select", *level_nodes])
    g.add_edge("evaluate", "select")
    g.add_conditional_edges("select", _done_or("sense"), ["finish", "sense"])
    g.add_edge("finish", END)
    return g


def open_checkpointer(run_dir: Path) -> SqliteSaver:
    conn = sqlite3.connect(str(run_dir / "checkpoints.sqlite"), check_same_thread=False)
    return SqliteSaver(conn)


def run_graph(ctx: RunContext, *, resume: bool = False) -> RunState:
    """Run (or resume) to the end; returns the final state."""
    saver = open_checkpointer(ctx.run_dir)
    app = build_graph().compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "leka"}, "recursion_limit": 1_000_000}
    final: RunState = {}
    snapshot = app.get_state(config)
    inp = None if (resume and snapshot.next) else ({} if not snapshot.next else None)
    if resume and not snapshot.next and snapshot.values.get("done"):
        return snapshot.values  # already finished
    for chunk in app.stream(inp, config, context=ctx, stream_mode="values"):
        final = chunk
    saver.conn.close()
    return final
