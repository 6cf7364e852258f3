"""An experiment's configuration (YAML -> pydantic) and the grid of jobs it expands to.

A job is one (task, arm, seed) on one backend: one ordinary run folder, one row of results.sqlite.
Task files are not imported here (a broken file in the list must become a failed row, not a
config error); the level of a suite task is read from its id (`l1_...`) or its META text.
"""

from __future__ import annotations

import glob as globmod
import json
import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from leka.backends import backend_names, get_backend
from leka.core.types import UserError

PAPER_BUDGET_MIN = {1: 90.0, 2: 155.0, 3: 155.0}  # the paper's per-task wall clock by level


class _S(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TasksSpec(_S):
    """Union of: a named subset (all of it, or the part of each configured backend), ids, globs of
    task files, folders of KernelBench-format files. `levels` then filters, `limit_per_level` keeps the
    first N of each level (stratified quick grids)."""

    subset: str | None = None
    ids: list[str] = Field(default_factory=list)
    globs: list[str] = Field(default_factory=list)
    folders: list[str] = Field(default_factory=list)
    levels: list[int] | None = None
    limit_per_level: int | None = None


class ArmSpec(_S):
    """One arm: a recipe name from the arm table (leka.exp.arms.ARMS) plus its settings."""

    name: str  # label in the tables; unique in the experiment
    recipe: str | None = None  # key of leka.exp.arms.ARMS; omitted: the preset of that name (arms.PRESETS)
    set: list[str] = Field(default_factory=list)  # key=value overrides of the LEKA run config
    notes: str = ""
    # the LLM spec of this arm (policy=llm arms, oneshot, claude_code); empty: the grid's `model`. Several
    # one-shot arms with one model each make the one-shot table's model rows (`leka bench oneshot`)
    model: str = ""


class BaselineSpec(_S):
    """The tables' reference: MetaSchedule-tuned TVM at a fixed trial count (prepared before the grid,
    cached, shared by every job), with PyTorch eager beside it."""

    tuned_trials: int = 64  # 0: untuned TVM is the reference (smoke grids and tests; no tuning)
    torch: bool = True
    # no cached database: tune it first, refuse to start, or skip: those instances are judged for Compile@1
    # and Correct@1 only and counted apart in Fast@ against the tuned reference (`leka bench oneshot`)
    prepare: Literal["tune", "refuse", "skip"] = "tune"
    run_kind: Literal["untuned", "tuned", "torch", "ort"] = "untuned"  # what runs time against while searching
    cache_dir: str = ".leka-cache"
    # production engines a correct final candidate is also timed against (benchmark/engines.py: ort, mnn,
    # tensorrt), each where the backend takes it; "auto": every engine the backend's table lists
    engines: list[str] = Field(default_factory=list)

    @field_validator("engines")
    @classmethod
    def _engines(cls, v: list[str]) -> list[str]:
        from benchmark.engines import ENGINES

        bad = [k for k in v if k != "auto" and k not in ENGINES]
        if bad:
            raise ValueError(f"unknown engine(s) {bad}; use auto or some of {', '.join(ENGINES)}")
        return v

    def engine_kinds(self, backend: str) -> list[str]:
        """The engines timed on `backend`: those asked for that its backend record takes (in its order)."""
        from benchmark.engines import ENGINES

        takes = [k for k in get_backend(backend).baselines if k in ENGINES]
        return takes if "auto" in self.engines else [k for k in takes if k in self.engines]


class BudgetSpec(_S):
    minutes: dict[int, float] = Field(default_factory=lambda: dict(PAPER_BUDGET_MIN))
    scale: float = 1.0
    max_evals: int | None = None  # for smoke grids and tests

    def seconds(self, level: int | None) -> float:
        m = self.minutes.get(level or 1, self.minutes.get(1, 90.0))
        return max(1.0, m * 60.0 * self.scale)


class MetaScheduleArmSpec(_S):
    round_trials: int = 16  # trials per tuning round of the time-matched arm (one anytime point per round)


class ExpConfig(_S):
    name: str = "experiment"
    tasks: TasksSpec = Field(default_factory=TasksSpec)
    backends: list[str] = Field(default_factory=lambda: ["llvm"])  # names of the backend table (leka.backends)
    seeds: list[int] = Field(default_factory=lambda: [0])
    arms: list[ArmSpec]
    budget: BudgetSpec = Field(default_factory=BudgetSpec)
    model: str = ""  # LLM spec for policy=llm arms, oneshot and claude_code
    baseline: BaselineSpec = Field(default_factory=BaselineSpec)
    metaschedule: MetaScheduleArmSpec = Field(default_factory=MetaScheduleArmSpec)
    run_set: list[str] = Field(default_factory=list)  # key=value overrides for every LEKA run (evaluator.*)
    # levels beyond the built-in three (leka.core.config LevelsConfig): registered when the grid is read,
    # so its presets know them (`<level>_off`), and handed to every run as `levels.extra`
    levels: list[str] = Field(default_factory=list)
    resources: dict[str, dict[str, float]] = Field(default_factory=dict)  # backend -> Ray resources per job
    # backend -> evaluations at once per machine (benchmark/judge/slots.py); a job then needs only a small Ray
    # share (resources) while it waits on an LLM, and its evaluations queue for a measuring slot. A backend
    # not named: one slot per CPU socket where it measures on the host's cores (its table's gpu=False),
    # none on a GPU (each GPU's lock already holds its checks and timings alone); 0 = no limit
    measure_slots: dict[str, int] = Field(default_factory=dict)
    opencl_device_key: str = "opencl-board"  # custom Ray resource a board job holds
    # attempts a job gets when its worker dies (killed, OOM, its node lost); a driver stopped while the job
    # ran costs an attempt too. Chaos runs raise it: every kill there is the machine's fault, not the job's
    max_attempts: int = Field(2, ge=1)

    @model_validator(mode="before")
    @classmethod
    def _levels(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("levels"):
            from leka.core.levels import register_refs

            refs = [str(r) for r in data["levels"]]
            register_refs(refs)
            sets = [s for s in data.get("run_set") or [] if not str(s).startswith("levels.extra=")]
            data = {**data, "run_set": [f"levels.extra={json.dumps(refs)}", *sets]}
        return data

    @field_validator("backends")
    @classmethod
    def _backends(cls, v: list[str]) -> list[str]:
        for b in v:
            get_backend(b)  # raises with the names the table has
        return v

    @field_validator("arms")
    @classmethod
    def _arms(cls, v: list[ArmSpec]) -> list[ArmSpec]:
        from leka.exp.presets import ARMS, PRESETS, RECIPES

        # the standard recipes, and any arm function registered beside them (leka.exp.arms.ARMS)
        known = [*RECIPES, *(r for r in ARMS if r not in RECIPES)]
        v = [a if a.recipe else _preset(a, PRESETS) for a in v]
        if not v:
            raise ValueError("at least one arm")
        names = [a.name for a in v]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"duplicate arm name(s) {dup}")
        for a in v:
            if a.recipe not in known:
                raise ValueError(f"arm {a.name!r}: unknown recipe {a.recipe!r}; use one of {', '.join(known)}")
            for s in a.set:
                if "=" not in s:
                    raise ValueError(f"arm {a.name!r}: override {s!r} is not key=value")
        return v

    def evaluator_sets(self, backend: str) -> list[str]:
        """key=value overrides every evaluator of a job of this backend takes (its runs' and the judge's)."""
        n = self.slots_for(backend)
        return [f"evaluator.measure_slots={n}"] if n > 0 else []

    def slots_for(self, backend: str) -> int:
        """Measuring slots of this machine for the backend's evaluations (see `measure_slots`)."""
        if backend in self.measure_slots:
            return self.measure_slots[backend]
        from benchmark.judge import cpu_sockets

        return 0 if get_backend(backend).gpu else cpu_sockets()

    @model_validator(mode="after")
    def _check(self) -> ExpConfig:
        if not self.seeds:
            raise ValueError("seeds: at least one")
        if self.budget.scale <= 0:
            raise ValueError("budget.scale must be more than zero")
        bad = {b: n for b, n in self.measure_slots.items() if n < 0 or b not in backend_names()}
        if bad:
            raise ValueError(f"measure_slots: {bad} (a backend name -> a count of 0 or more)")
        return self


def _preset(a: ArmSpec, presets: dict) -> ArmSpec:
    if a.name not in presets:
        raise ValueError(f"arm {a.name!r}: give a recipe, or use a preset name ({', '.join(presets)})")
    recipe, sets, doc = presets[a.name]
    return a.model_copy(update={"recipe": recipe, "set": [*sets, *a.set], "notes": a.notes or doc})


class Job(BaseModel):
    job_id: str
    task: str  # id or path, as resolved later by benchmark.task.resolve
    task_label: str
    level: int | None
    backend: str
    arm: str
    recipe: str
    seed: int
    budget_s: float


def load(path: str | Path) -> ExpConfig:
    p = Path(path)
    if not p.is_file():
        raise UserError(f"experiment config {path} not found")
    try:
        data = yaml.safe_load(p.read_text())
    except yaml.YAMLError as e:
        raise UserError(f"experiment config {path}: not valid YAML ({str(e).splitlines()[0]})") from e
    if not isinstance(data, dict):
        raise UserError(f"experiment config {path}: expected a mapping at the top level")
    return parse(data, str(path))


def parse(data: dict[str, Any], where: str = "config") -> ExpConfig:
    try:
        return ExpConfig.model_validate(data)
    except ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(x) for x in first["loc"]) or "(top)"
        msg = first["msg"].removeprefix("Value error, ")
        raise UserError(f"experiment config {where}: {loc}: {msg}") from e


_LEVEL_RE = re.compile(r"""["']level["']\s*:\s*(\d)""")


def _level_of(ref: str) -> int | None:
    m = re.match(r"l(\d)_", Path(ref).stem if ref.endswith(".py") else ref)
    if m:
        return int(m.group(1))
    p = Path(ref)
    if p.is_file():
        try:
            m2 = _LEVEL_RE.search(p.read_text(errors="replace"))
        except OSError:
            return None
        return int(m2.group(1)) if m2 else None
    return None


def task_refs(cfg: ExpConfig, backend: str) -> list[str]:
    """The task references (suite ids or file paths) of one backend, in a stable order."""
    from benchmark.subsets import load_subset

    refs: list[str] = []
    spec = cfg.tasks
    if spec.subset:
        try:
            refs += load_subset(spec.subset, backend)
        except (FileNotFoundError, KeyError) as e:
            raise UserError(f"tasks.subset: {e}") from e
    refs += spec.ids
    for g in spec.globs:
        hits = sorted(globmod.glob(g))
        if not hits:
            raise UserError(f"tasks.globs: {g!r} matches no file")
        refs += hits
    for f in spec.folders:
        d = Path(f)
        if not d.is_dir():
            raise UserError(f"tasks.folders: {f} is not a folder")
        refs += sorted(str(p) for p in d.glob("*.py") if not p.name.startswith("_"))
    refs = list(dict.fromkeys(refs))
    if spec.levels is not None:
        refs = [r for r in refs if _level_of(r) in spec.levels]
    if spec.limit_per_level is not None:
        kept, per = [], {}
        for r in refs:
            lv = _level_of(r)
            if per.get(lv, 0) < spec.limit_per_level:
                kept.append(r)
                per[lv] = per.get(lv, 0) + 1
        refs = kept
    return refs


def _label(ref: str) -> str:
    return Path(ref).stem if ref.endswith(".py") else ref


def expand(cfg: ExpConfig) -> list[Job]:
    """Every (backend, task, arm, seed) job, ids stable across runs of the same config."""
    jobs: list[Job] = []
    for backend in cfg.backends:
        refs = task_refs(cfg, backend)
        if not refs:
            raise UserError(f"tasks: no task selected for backend {backend}")
        for ref in refs:
            lv = _level_of(ref)
            for arm in cfg.arms:
                for seed in cfg.seeds:
                    jid = f"{backend}/{_label(ref)}/{arm.name}/s{seed}"
                    jobs.append(Job(job_id=jid, task=ref, task_label=_label(ref), level=lv, backend=backend,
                                    arm=arm.name, recipe=arm.recipe, seed=seed, budget_s=cfg.budget.seconds(lv)))
    ids = [j.job_id for j in jobs]
    if len(set(ids)) != len(ids):
        raise UserError("tasks: two task files share a name; rename one (job ids are backend/task/arm/seed)")
    return jobs


def arm(cfg: ExpConfig, name: str) -> ArmSpec:
    return next(a for a in cfg.arms if a.name == name)


def dump(cfg: ExpConfig, path: Path) -> None:
    path.write_text(yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=False))
