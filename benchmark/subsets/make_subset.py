"""Draw the seeded, level-stratified 69-task subset (23 tasks per backend) from the suite.

    .venv/bin/python -m benchmark.subsets.make_subset               # seed 0, writes subset69.json
    .venv/bin/python -m benchmark.subsets.make_subset --seed 3 --exclude l1_topk --out /tmp/s.json

Pools: a backend draws from the tasks whose domains contain its domain (llvm <- mobile, cuda <- robotics,
opencl <- aiot). Per backend 10 Level-1, 9 Level-2 and 4 Level-3 tasks. The three backends' draws are
disjoint where the pools allow it, so the subset is 69 distinct tasks. The llvm draw only takes tasks
that import into Relax and are correct under the default lowering: the failing ones are read from
experiments/out/check_tasks.json (when present) plus `--exclude`, and recorded in the file, so
`--from-file` regenerates the identical subset without the (git-ignored) check results.

The pool: subset69 is drawn from the 186 tasks the suite had when it was made (`subset69_pool.txt`),
so tasks added since (issue 46) leave it unchanged; `--pool all` draws from the whole suite, `--pool
FILE` from the ids listed in FILE (one a line, `#` comments).
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Iterable, Mapping
from pathlib import Path

from leka.backends import get_backend

ROOT = Path(__file__).resolve().parents[2]

SUBSET_DIR = Path(__file__).parent
DEFAULT_OUT = SUBSET_DIR / "subset69.json"
DEFAULT_POOL = SUBSET_DIR / "subset69_pool.txt"
CHECK_RESULTS = ROOT / "experiments" / "out" / "check_tasks.json"
STRATA = {1: 10, 2: 9, 3: 4}
BACKEND_ORDER = ("llvm", "cuda", "opencl")  # subset69: 23 tasks for each of the built-in backends


def failing_from_check(path: Path = CHECK_RESULTS) -> list[str]:
    """Ids that did not import or were not correct in the last check_tasks run (none if never run)."""
    if not path.exists():
        return []
    rows = json.loads(path.read_text()).get("tasks", [])
    return sorted(r["id"] for r in rows if not (r.get("import_ok") and r.get("correct")))


def build_subset(tasks: Mapping[str, tuple[int, Iterable[str]]], seed: int = 0,
                 exclude_llvm: Iterable[str] = (), name: str = "subset69") -> dict:
    """`tasks`: id -> (level, domains). Pure and deterministic in (tasks, seed, exclude_llvm)."""
    excluded = sorted(set(exclude_llvm))
    rng = random.Random(seed)
    taken: set[str] = set()
    chosen: dict[str, list[str]] = {b: [] for b in BACKEND_ORDER}
    disjoint = True
    for level, n in STRATA.items():
        pools = {}
        for b in BACKEND_ORDER:
            pool = sorted(i for i, (lv, doms) in tasks.items() if lv == level and get_backend(b).domain in doms)
            if b == "llvm":
                pool = [i for i in pool if i not in excluded]
            pools[b] = pool
        # the backend with the fewest candidates picks first so disjointness fails as rarely as possible
        for b in sorted(BACKEND_ORDER, key=lambda b: (len(pools[b]), BACKEND_ORDER.index(b))):
            free = [i for i in pools[b] if i not in taken]
            if len(free) >= n:
                pick = rng.sample(free, n)
            else:  # pool too small to stay disjoint: reuse tasks other backends took
                if len(pools[b]) < n:
                    raise ValueError(f"backend {b}: only {len(pools[b])} Level-{level} tasks, need {n}")
                disjoint = False
                pick = free + rng.sample([i for i in pools[b] if i in taken], n - len(free))
            taken.update(pick)
            chosen[b].extend(sorted(pick))
    return {
        "name": name,
        "seed": seed,
        "disjoint": disjoint,
        "per_backend": sum(STRATA.values()),
        "backends": chosen,
        "strata": {b: {str(lv): sum(1 for i in chosen[b] if tasks[i][0] == lv) for lv in STRATA}
                   for b in BACKEND_ORDER},
        "llvm_excluded": excluded,
        "pools": {b: get_backend(b).domain for b in BACKEND_ORDER},
    }


def read_pool(path: Path = DEFAULT_POOL) -> list[str]:
    """Task ids listed one a line (blank lines and `#` comments skipped)."""
    lines = (ln.split("#", 1)[0].strip() for ln in Path(path).read_text().splitlines())
    return [ln for ln in lines if ln]


def suite_table(pool: list[str] | None = None) -> dict[str, tuple[int, tuple[str, ...]]]:
    """id -> (level, domains) of the suite's tasks, or of those in `pool` (an id not in the suite
    is an error: the pool names what the subset was drawn from)."""
    from benchmark.task import suite

    tasks = suite()
    if pool is not None:
        missing = sorted(set(pool) - set(tasks))
        if missing:
            raise ValueError(f"pool names tasks the suite does not have: {', '.join(missing[:5])}")
        tasks = {i: tasks[i] for i in pool}
    return {t.id: (int(t.level or 0), t.domains) for t in tasks.values()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--exclude", default="", help="comma-separated ids kept out of the llvm subset")
    ap.add_argument("--from-file", default="", help="reuse the llvm exclusions recorded in this subset file")
    ap.add_argument("--no-check-results", action="store_true", help="ignore experiments/out/check_tasks.json")
    ap.add_argument("--out", default=str(DEFAULT_OUT))
    ap.add_argument("--pool", default=str(DEFAULT_POOL),
                    help="ids to draw from, one a line (default: subset69's pool); 'all': the whole suite")
    args = ap.parse_args(argv)

    exclude = {s.strip() for s in args.exclude.split(",") if s.strip()}
    if args.from_file:
        exclude |= set(json.loads(Path(args.from_file).read_text()).get("llvm_excluded", []))
    elif not args.no_check_results:
        exclude |= set(failing_from_check())
    data = build_subset(suite_table(None if args.pool == "all" else read_pool(Path(args.pool))), args.seed, exclude)
    out = Path(args.out)
    out.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {out}: " + ", ".join(f"{b} {len(v)} {data['strata'][b]}" for b, v in data["backends"].items())
          + f"; disjoint={data['disjoint']}; llvm excluded {len(data['llvm_excluded'])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
