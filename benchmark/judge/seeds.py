"""Which seeds an evaluation checks and whether its first checked run follows a poison run: one policy
for both protocols (benchmark/judge/job.py in-process, benchmark/judge/sandbox/checks.py sandboxed)."""

from __future__ import annotations

import random
from typing import Any


def check_seeds(st: Any) -> list[int]:
    """The seeds an evaluation checks: evaluator.seeds and a fresh one (see below), recorded in res."""
    seeds = list(st.cfg["seeds"])
    if st.cfg.get("root_program"):
        # the root of a task whose baseline is its own program (benchmark/judge/evaluator.py): TVM's default
        # lowering, no agent's code, the very program the baseline runs unchecked; one fixed seed and the
        # fresh one check the import's numerics, and no poison run (`poison_run`): the defences against
        # stale buffers and baked answers are for agents' kernels (issue 44: 5 checked calls of ~20 s
        # were most of a ResNet block's root evaluation)
        seeds = seeds[:1]
    if st.cfg.get("fresh_seed", True):
        # a seed nobody knew before this evaluation: outputs baked into a source for the fixed
        # seeds cannot pass it (drawn by the runner, which hands it to the reference process too)
        fresh = st.job.get("fresh_seed") or random.SystemRandom().randrange(10**6, 2**31 - 8000)
        st.res.extra["fresh_seed"] = fresh
        seeds.append(fresh)
    st.res.extra["checked_seeds"] = len(seeds)
    return seeds


def poison_run(cfg: dict[str, Any]) -> bool:
    """Whether the first checked seed follows a run on other valid inputs: evaluator.poison, except for a
    root whose program is the baseline's (`check_seeds`)."""
    return bool(cfg.get("poison", True)) and not cfg.get("root_program")
