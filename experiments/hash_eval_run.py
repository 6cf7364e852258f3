"""A LEKA run with every timing replaced by a hash of the candidate: the real agents, router, edits, tree
and graph, a fake evaluator whose speedup is a function of the candidate digest. Two commits whose
trees from this script differ changed behaviour (timing noise cannot be the cause); compare them with
`experiments.compare_trees`.

    python -m experiments.hash_eval_run TASK OUT_DIR [--routing round_robin] [--max-evals 14]

Also runs on the layout before the layering (leka.graph, leka.config), so a tree made on an older
commit can be compared with one made now.
"""

from __future__ import annotations

import argparse
import hashlib
import time
from pathlib import Path

from agents.rules import make_rule_agents
from benchmark.roots import load_root
from benchmark.task import resolve
from candidate_tree import Tree

try:
    from leka.core.config import load_config
    from leka.core.types import EvalResult
    from leka.loop.context import RunContext
    from leka.loop.graph import run_graph
    from leka.loop.routers import make_router
except ImportError:  # a commit before leka/core and leka/loop
    from leka.config import load_config  # type: ignore[no-redef]
    from leka.graph import RunContext, make_router, run_graph  # type: ignore[no-redef]
    from leka.types import EvalResult  # type: ignore[no-redef]


class HashEvaluator:
    """Correct, validly timed, speedup in [0.5, 3.0) from the candidate digest."""

    def evaluate_full(self, task, candidate=None, *, profile: bool = False, **_):
        h = int(hashlib.sha256(candidate.digest.encode()).hexdigest()[:6], 16)
        sp = 0.5 + (h % 1000) / 400.0
        return EvalResult(task=task.id, compiled=True, correct=True, speedup=sp, timing_valid=True,
                          t_candidate_s=1e-3 / sp, t_baseline_s=1e-3, wall_s=0.0), None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("task")
    ap.add_argument("out", type=Path)
    ap.add_argument("--routing", default="round_robin")
    ap.add_argument("--max-evals", type=int, default=14)
    args = ap.parse_args()
    task = resolve(args.task)
    cfg = load_config([], ["run.budget_s=3600", f"run.max_evals={args.max_evals}", f"run.routing={args.routing}"])
    root = load_root(task, cfg.baseline.cache_dir)
    args.out.mkdir(parents=True, exist_ok=True)
    tree = Tree(args.out, defer=cfg.run.defer_followups)
    ctx = RunContext(cfg=cfg, task=task, run_dir=args.out, tree=tree, evaluator=HashEvaluator(),
                     agents=make_rule_agents(cfg.backend, root_params=root.params), router=make_router(cfg),
                     root=root)
    t0 = time.time()
    final = run_graph(ctx)
    tree.close()
    print(f"{task.id} {args.routing}: {final.get('evals')} evaluations, {final.get('stop_reason')}, "
          f"{time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
