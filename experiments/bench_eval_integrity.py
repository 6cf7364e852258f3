"""Timing protocol before and after issue 13, side by side: honest kernels must keep their speedup,
an input-keyed memo kernel must lose its advantage or be rejected.

For each GEMM-like task the rule L2 agent's C++ micro-kernel (an honest kernel with a real speedup)
is evaluated against the untuned baseline under
- old: one fixed input set timed by TVM's loop, no output check of timed calls, no fresh seed, no
  process-state guard (the protocol before issue 13);
- new: the defaults (timed calls rotate through 4 checked input sets, the last output of each sample
  checked, a fresh seed, the process-state guard, the static check);
runs alternate old / new / new / old ... so drift on a loaded machine hits both alike. Then the same
kernel wrapped in an input-keyed memo (returns a copy of its last output when sampled inputs match
the last call's) under both protocols, with the static check off so the runtime defences are what
is measured.

    PYTHONPATH=. .venv/bin/python experiments/bench_eval_integrity.py [--tasks ...] [--reps 3]
"""

from __future__ import annotations

import argparse
import re
import statistics
import tempfile
from pathlib import Path

from agents.l2_source import RuleL2Agent
from benchmark.evaluator import Evaluator
from benchmark.task import resolve
from leka import ir
from leka.core.config import EvaluatorConfig
from leka.core.protocols import AgentContext
from leka.ir import L2Entry
from leka.ir.edits import apply_edit

OLD = {"timing_input_sets": 1, "check_timed_outputs": False, "fresh_seed": False, "process_check": False}

MEMO = r"""
#include <cstring>
static float memo_out[OUT_N];
static float memo_key[8];
static bool memo_have = false;
extern "C" int32_t MEMO_ENTRY(float* p0, float* p1, float* p2) {
  float key[8] = {p0[0], p0[A_N / 2], p0[A_N - 1], p1[0], p1[B_N / 2], p1[B_N - 1], p0[A_N / 3], p1[B_N / 3]};
  if (memo_have && std::memcmp(key, memo_key, sizeof key) == 0) {
    std::memcpy(p2, memo_out, sizeof memo_out);
    return 0;
  }
  int32_t rc = ENTRY(p0, p1, p2);
  std::memcpy(memo_out, p2, sizeof memo_out);
  std::memcpy(memo_key, key, sizeof key);
  memo_have = true;
  return rc;
}
"""


def honest_candidate(task, workdir: Path):
    root = ir.import_root(task)
    cand = ir.root_candidate(task, root=root)
    ctx = AgentContext(task_id=task.id, backend="llvm", level="L2", variants=1, num_cores=2)
    edits = [e for e in RuleL2Agent(root_params=root.params).propose(cand, ctx) if e.kind == "source"]
    if not edits:
        raise SystemExit(f"{task.id}: the rule L2 agent has no GEMM kernel for it")
    out = apply_edit(cand, edits[0], workdir=workdir, root_params=root.params)
    if not out.ok:
        raise SystemExit(f"{task.id}: {out.error}")
    return out.candidate


def memo_candidate(task, honest) -> object | None:
    """The honest kernel behind an input-keyed memo (3-pointer kernels: A, B -> C)."""
    ((key, entry),) = honest.l2.items()
    if not re.search(r"int32_t\s+" + re.escape(entry.entry) + r"\(float\* p0, float\* p1, float\* p2\)", entry.text):
        return None
    inputs = [x.numel() for x in task.make_inputs(0)]
    out_n = task.make_model()(*task.make_inputs(0)).numel()
    text = entry.text + MEMO.replace("MEMO_ENTRY", entry.entry + "_memo").replace("ENTRY", entry.entry).replace(
        "OUT_N", str(out_n)).replace("A_N", str(inputs[0])).replace("B_N", str(inputs[1]))
    new = L2Entry(kernel=entry.kernel, language="cpp", text=text, entry=entry.entry + "_memo")
    return honest.model_copy(update={"l2": {key: new}})


def _row(name: str, arm: str, rs: list) -> str:
    ok = [r for r in rs if r.speedup is not None and r.error_kind in (None, "timing_invalid")]
    kinds = sorted({r.error_kind for r in rs if r.error_kind not in (None, "timing_invalid")})
    sp = statistics.median(r.speedup for r in ok) if ok else float("nan")
    wall = statistics.median(r.wall_s for r in rs)
    return f"{name:28s} {arm:>4} {sp:9.2f} {len(ok):>3}/{len(rs)} {wall:7.1f}  {','.join(kinds) or '-'}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", default="l1_matmul_square,l1_linear_tokens,l1_matmul_batched,l1_conv2d_pointwise")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    cache = tempfile.mkdtemp(prefix="leka-integrity-")
    evs = {"old": Evaluator(EvaluatorConfig(**OLD), cache_dir=cache), "new": Evaluator(EvaluatorConfig(), cache_dir=cache),
           "old-nostatic": Evaluator(EvaluatorConfig(**OLD, static_check=False), cache_dir=cache),
           "new-nostatic": Evaluator(EvaluatorConfig(static_check=False), cache_dir=cache)}
    print(f"{'task / kernel':28s} {'arm':>4} {'speedup':>9} {'ok':>5} {'wall s':>7}  rejected as  (medians of {args.reps})")
    for tid in [t for t in args.tasks.split(",") if t]:
        task = resolve(tid)
        honest = honest_candidate(task, Path(cache) / tid)
        res: dict[str, list] = {"old": [], "new": []}
        for i in range(args.reps):
            for arm in (("old", "new") if i % 2 == 0 else ("new", "old")):
                res[arm].append(evs[arm].evaluate(task, honest))
        for arm in ("old", "new"):
            print(_row(f"{tid} honest", arm, res[arm]))
        sp = {a: statistics.median(r.speedup for r in res[a] if r.speedup) for a in res}
        print(f"{tid + ' honest':28s} new/old speedup ratio: {sp['new'] / sp['old']:.3f}")
        memo = memo_candidate(task, honest)
        if memo is None:
            continue
        mres: dict[str, list] = {"old": [], "new": []}
        for _ in range(max(1, args.reps - 1)):
            for arm in ("old", "new"):
                mres[arm].append(evs[f"{arm}-nostatic"].evaluate(task, memo))
        for arm in ("old", "new"):
            print(_row(f"{tid} memo", arm, mres[arm]))
        static = evs["new"].evaluate(task, memo, time_it=False)
        print(f"{tid + ' memo':28s} with the static check: {static.error_kind}")


if __name__ == "__main__":
    main()
