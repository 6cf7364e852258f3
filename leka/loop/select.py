"""Which node to expand next."""

from __future__ import annotations

import math

from candidate_tree import Tree
from leka.loop.state import RunState

NOISE_BAND = 0.05  # ~5%: the paired-timing spread the evaluator accepts on a quiet machine


def choose_next(tree: Tree, state: RunState, layers: list[str], explore: float) -> int | None:
    """Best-first with exploration: log-speedup plus a UCB-style bonus for rarely expanded nodes.
    Nodes whose enabled levels all had nothing left are skipped. Speedups are compared in bands of
    NOISE_BAND (log scale): differences inside the timing noise are ties, broken by node id, so that
    re-running with the same seed on the same machine mostly expands the same nodes."""
    exhausted = state.get("exhausted", {})
    expansions = state.get("expansions", {})
    total = 1 + sum(expansions.values())
    best, best_score = None, -math.inf
    for n in tree.frontier():
        if set(layers) <= set(exhausted.get(str(n.id), [])):
            continue
        sp = n.result.speedup if (n.result and n.result.speedup) else 1.0
        k = expansions.get(str(n.id), 0)
        score = round(math.log(max(sp, 1e-6)) / NOISE_BAND) * NOISE_BAND + explore * math.sqrt(math.log(total + 1) / (1 + k))
        if score > best_score + 1e-12:
            best, best_score = n.id, score
    return best
