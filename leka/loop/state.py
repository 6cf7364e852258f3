"""The checkpointed state of a run: small (ids, counters, short strings). Candidates, IR and measurements
live in the candidate tree (`RUN_DIR/tree.sqlite`)."""

from __future__ import annotations

from typing import Any, TypedDict


class RunState(TypedDict, total=False):
    current: int  # node being expanded
    level: str  # level routed to for `current`
    route_reason: str
    proposed: list[int]  # nodes waiting for evaluation
    exhausted: dict[str, list[str]]  # node id -> levels that had nothing (more) to propose
    expansions: dict[str, int]  # node id -> times expanded
    iteration: int
    budget_used_s: float
    evals: int
    done: bool
    stop_reason: str
    router_state: dict[str, Any]
    widen: int  # widened rounds begun after every node was exhausted (run.widen_rounds)
    widen_fresh: bool  # the current widened round has proposed something new (else the widening ends)
    tuning: bool  # the last round: the idle tuner (RunContext.idle_agent) works on the answer node's L1
    propose_s: dict[str, list[float]]  # level -> what its last (up to 3) proposal steps took, seconds


def fresh_state() -> RunState:
    return {"proposed": [], "exhausted": {}, "expansions": {}, "iteration": 0, "evals": 0, "done": False,
            "stop_reason": "", "level": "", "route_reason": ""}
