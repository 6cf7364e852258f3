"""MetaSchedule as a tool of the L1 agent (issue 19; config section `tuner`, off by default).

`TunerL1Agent` wraps the policy's own L1 agent (rules or LLM). It decides when the tool is called:
- the hottest kernel of the profile already has a schedule (the rule or LLM move was made) and has not
  been tuned in this run: tune it, and offer its tuned trace before the inner agent's edits;
- the inner agent has nothing left to propose: tune the hottest kernel not tuned yet.
A kernel (keyed by the structural hash of its unscheduled PrimFunc) is tuned once per run: the result
is kept in the run's work folder (`work/ms-l1/<key>/`) and offered again, free, to other candidates
with the same kernel. Kernels under `min_share` of the profiled time are never tuned.

The tool's answer is an ordinary L1 edit (kind `trace`, MetaSchedule's best schedule as
`leka.ir.sched` steps), checked here to replay to the very PrimFunc MetaSchedule built (same
structural hash); where the steps cannot express it, the scheduled PrimFunc as `tir_text`.
Warm start: the run's own database for that kernel, every earlier run's (`<cache>/ms-l1/`), and the
tuned-baseline cache (`<cache>/ms/*/<backend>-<target key>/trials*/`).
Budget: the call runs inside the loop's L1 node, so its wall clock is charged like any other agent
time; it is also capped at `max_share` of the budget left, and skipped under `min_left_s`.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agents.common import lowered_funcs, near_roof, rank_kernels
from leka import tvm_adapter as A
from leka.core.protocols import Agent, AgentContext
from leka.core.types import Edit, edit_digest
from leka.ir import sched


def target_key(target) -> str:
    """The key the tuned-baseline cache files a target under (benchmark.baselines.ms_dir)."""
    return hashlib.sha256(json.dumps(A.target_json(target), sort_keys=True).encode()).hexdigest()[:8]


def warm_dirs(cache_dir: str | Path, backend: str, target, key: str, own: Path | None = None) -> list[Path]:
    """Databases to warm-start a kernel's tuning from: the tuned-baseline cache of this target and
    earlier runs' tool databases of this kernel (not `own`, which the tuning writes to)."""
    root = Path(cache_dir)
    tk = f"{backend}-{target_key(target)}"
    dirs = sorted(root.glob(f"ms/*/{tk}/trials*"))
    dirs += sorted(p for p in (root / "ms-l1" / tk / key).glob("*") if p.is_dir() and p != own)
    return dirs


class TunerL1Agent:
    level = "L1"

    def __init__(self, inner: Agent, backend: str = "llvm", *, root_params=None, trials: int = 32,
                 cache_dir: str | Path = ".leka-cache", work_dir: str | Path = "work",
                 deadline: Callable[[], float | None] | None = None, max_share: float = 0.5,
                 min_left_s: float = 60.0, min_share: float = 0.05, run_name: str = "run",
                 on_tuned: Callable[[dict[str, Any]], None] | None = None):
        self.inner = inner
        self.backend = backend
        self.root_params = root_params
        self.trials = trials
        self.cache_dir = Path(cache_dir)
        self.work_dir = Path(work_dir)
        self.deadline = deadline
        self.max_share = max_share
        self.min_left_s = min_left_s
        self.min_share = min_share
        self.run_name = run_name
        self.on_tuned = on_tuned
        self.last_error = ""

    # ------------------------------------------------------------------ the tool
    def _target(self, context: AgentContext):
        # a GPU target's spec takes no core count (target_spec ignores it)
        return A.make_target(self.backend, num_cores=context.num_cores or None)

    def _result_dir(self, key: str) -> Path:
        return self.work_dir / "ms-l1" / key

    def tuned_edit(self, name: str, func, target, seed: int = 0, deadline: float | None = None) -> Edit | None:
        """The tool: tune `func` (the unscheduled PrimFunc `name`) once; its best schedule as an L1
        edit. None when there is not enough budget left or tuning failed (`last_error` says why).
        `deadline` (time.monotonic()): the run's budget end, from the loop's AgentContext; without one,
        the constructor's `deadline()`."""
        key = A.structural_hash(func)
        rdir = self._result_dir(key)
        saved = rdir / "edit.json"
        if saved.exists():  # tuned earlier in this run: the same answer, free
            return Edit.model_validate_json(saved.read_text())
        if (rdir / "failed").exists():
            return None
        timeout = 3600.0
        dl = deadline if deadline is not None else (self.deadline() if self.deadline is not None else None)
        if dl is not None:
            left = dl - time.monotonic()
            if left < self.min_left_s:
                self.last_error = f"{left:.0f} s of budget left, under min_left_s={self.min_left_s:g}"
                return None
            timeout = self.max_share * left
        tk = f"{self.backend}-{target_key(target)}"
        db = self.cache_dir / "ms-l1" / tk / key / self.run_name
        res = A.tune_prim_func(func, target, db, self.trials, seed=seed,
                               warm_dirs=warm_dirs(self.cache_dir, self.backend, target, key, own=db),
                               timeout_s=timeout)
        rdir.mkdir(parents=True, exist_ok=True)
        info = {"kernel": name, "key": key, "trials": res.trials, "warm_records": res.warm_records,
                "best_us": res.best_us, "seconds": round(res.seconds, 1), "ok": res.ok, "error": res.error}
        if self.on_tuned is not None:
            self.on_tuned(info)
        (rdir / "tuning.json").write_text(json.dumps(info, indent=1))
        if not res.ok:
            self.last_error = res.error
            (rdir / "failed").write_text(res.error)
            return None
        best = f", best {res.best_us:.0f} us" if res.best_us else ""
        why = (f"{name}: MetaSchedule, {res.trials} trials (+{res.warm_records} warm-start records){best}; "
               f"{res.seconds:.0f} s of the budget")
        edit = self._as_edit(name, func, res, why)
        saved.write_text(edit.model_dump_json())
        return edit

    @staticmethod
    def _as_edit(name: str, func, res, why: str) -> Edit:
        want = A.structural_hash(res.scheduled)
        try:
            if A.structural_hash(sched.apply_trace(func, res.steps)) == want:
                return Edit(level="L1", kind="trace", target=name, payload={"trace": res.steps}, rationale=why)
        except Exception:  # noqa: BLE001 - steps the DSL cannot replay: the scheduled TIR instead
            pass
        # MetaSchedule named the function "main"; the lowered kernels are private (no symbol)
        return Edit(level="L1", kind="tir_text", target=name,
                    payload={"text": res.scheduled.without_attr("global_symbol").script()}, rationale=why + " (as TIR)")

    # ------------------------------------------------------------------ when to call it
    @staticmethod
    def _row(name: str, profile: dict[str, Any] | None) -> dict[str, Any] | None:
        return next((r for r in (profile or {}).get("kernels", []) or [] if r.get("name") == name), None)

    def _share(self, name: str, profile: dict[str, Any] | None) -> float | None:
        row = self._row(name, profile)
        return None if row is None else float(row.get("share") or 0.0)

    def _worth(self, name: str, profile) -> bool:
        row = self._row(name, profile)
        if row is None:
            return True
        if row.get("l2_override"):
            return False  # an L2 kernel replaces what any schedule of it would build
        return float(row.get("share") or 0.0) >= self.min_share

    def propose(self, candidate, context: AgentContext) -> list[Edit]:
        inner = list(self.inner.propose(candidate, context) or [])
        target = self._target(context)
        funcs = lowered_funcs(candidate, target, self.root_params)
        keys = {n: A.structural_hash(f) for n, f in funcs.items()}
        ranked = [n for n, _ in rank_kernels(funcs, context.profile, near_roof=near_roof(context))]
        if context.profile and context.profile.get("kernels"):
            # by measured time only: the rank puts scheduled kernels last, the tool wants the hottest
            ranked.sort(key=lambda n: -(self._share(n, context.profile) or 0.0))
        hot = ranked[0] if ranked else None
        picks: list[str] = []
        if hot is not None and keys[hot] in candidate.l1:
            picks.append(hot)  # the schedule move was made: now search around it
        if not inner:
            picks += [n for n in ranked if n not in picks]
        for name in picks:
            if not self._worth(name, context.profile):
                continue
            edit = self.tuned_edit(name, funcs[name], target, seed=context.seed, deadline=context.deadline)
            if edit is None or edit_digest(edit) in context.tried:
                continue
            entry = candidate.l1.get(keys[name])
            if entry is not None and (entry.trace == edit.payload.get("trace") or
                                      (entry.tir_text and entry.tir_text == edit.payload.get("text"))):
                continue  # this candidate already has the tuned schedule
            return [edit] + inner
        return inner
