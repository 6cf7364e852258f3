"""MetaSchedule as a tool of the L1 agent (issue 19): tune one PrimFunc for N trials, warm-started
from the JSON databases of earlier runs and of the tuned-baseline cache, and hand back the best
schedule as steps of LEKA's trace DSL (`leka.ir.sched`), so it becomes an ordinary L1 entry.

The tuning runs in a child Python (`ms_tool.main([REQUEST.json])`) under a wall
clock: MetaSchedule starts worker pools, may crash, and on this machine its first step (importing the
tensor intrinsics) takes long; a child keeps all of that out of the run's process and is killed, with
its pools, when the budget says so.

Warm start: every record in the given databases whose workload is structurally equal to this
PrimFunc is committed to the tuning database before the search; MetaSchedule's evolutionary search
seeds its population with the database's best records of the workload, and the answer is the best
record of the database afterwards (warm records included).

A MetaSchedule trace becomes DSL steps by reading its Python form (`str(trace)`, one
`sch.<primitive>(...)` call per line): samplers whose decision is recorded (`sample_perfect_tile`,
`sample_categorical`) are replaced by their values, `enter_postproc` (a marker) is dropped,
`sample_compute_location` stays a step (its decision is a position among the block's legal
locations, which only the schedule can resolve).
"""

from __future__ import annotations

import ast
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tvm

from leka.tvm_adapter.lowering import structural_equal

# samplers whose recorded decision is a plain value: (primitive) -> value of the outputs
_CONSTANT_SAMPLERS = ("sample_perfect_tile", "sample_categorical")
_DROPPED = ("enter_postproc",)


class TraceConversionError(ValueError):
    """A MetaSchedule trace line that the DSL cannot express."""


def _literal(node: ast.AST, consts: dict[str, Any]) -> Any:
    if isinstance(node, ast.Name):
        return consts.get(node.id, node.id)  # a handle (b0, l3, ...) or a sampled value
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_literal(x, consts) for x in node.elts]
    try:
        return ast.literal_eval(node)
    except ValueError as e:
        raise TraceConversionError(f"cannot read argument {ast.unparse(node)!r}") from e


def trace_steps(trace_text: str) -> list[dict[str, Any]]:
    """The Python form of a MetaSchedule trace -> `leka.ir.sched` steps (see the module doc)."""
    mod = ast.parse(trace_text)
    fns = [n for n in mod.body if isinstance(n, ast.FunctionDef)]
    if not fns:
        raise TraceConversionError("no `def apply_trace(sch)` in the trace text")
    consts: dict[str, Any] = {}
    steps: list[dict[str, Any]] = []
    for stmt in fns[-1].body:
        outs: list[str] = []
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            tgt = stmt.targets[0]
            outs = [e.id for e in tgt.elts] if isinstance(tgt, ast.Tuple) else [tgt.id]  # type: ignore[attr-defined]
            call = stmt.value
        elif isinstance(stmt, ast.Expr):
            call = stmt.value
        else:
            raise TraceConversionError(f"unexpected line {ast.unparse(stmt)!r}")
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and isinstance(call.func.value, ast.Name) and call.func.value.id == "sch"):
            raise TraceConversionError(f"not a schedule call: {ast.unparse(stmt)!r}")
        prim = call.func.attr
        args = [_literal(a, consts) for a in call.args]
        kwargs = {k.arg: _literal(k.value, consts) for k in call.keywords if k.arg}
        if prim in _DROPPED:
            continue
        if prim == "sample_perfect_tile":
            consts.update(zip(outs, kwargs["decision"], strict=True))
            continue
        if prim == "sample_categorical":
            consts[outs[0]] = kwargs["candidates"][int(kwargs["decision"])]
            continue
        step: dict[str, Any] = {"prim": prim, "args": args}
        if kwargs:
            step["kwargs"] = kwargs
        if outs:
            step["out"] = outs
        steps.append(step)
    return steps


# ----------------------------------------------------------------------------- the parent side
@dataclass
class TuneResult:
    ok: bool
    steps: list[dict[str, Any]] = field(default_factory=list)  # the best schedule as DSL steps
    trace_text: str = ""  # MetaSchedule's own Python form of that trace
    scheduled: Any = None  # the best schedule's PrimFunc, as MetaSchedule applied it
    trials: int = 0  # trials measured in this call
    warm_records: int = 0  # records of this workload found in the warm-start databases
    best_us: float | None = None  # MetaSchedule's own measurement of the best record
    seconds: float = 0.0  # wall clock of the whole call (child start to result)
    error: str = ""


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def tune_prim_func(func, target, work_dir: str | Path, trials: int, *, seed: int = 0,
                   warm_dirs: list[str | Path] = (), timeout_s: float = 600.0) -> TuneResult:
    """Tune one PrimFunc for `trials` MetaSchedule trials in a child process; the tuning database is
    `work_dir`. The child tunes in rounds (2, 4, then 8 trials) and starts no round that would end
    after 80% of `timeout_s` (keeping its best so far); at `timeout_s` it is killed with its worker
    pools. Never raises for a tuning failure: `TuneResult.ok` is False and `error` says why."""
    work = Path(work_dir)
    work.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    (work / "func.json").write_text(tvm.ir.save_json(func))
    req = {"func": str(work / "func.json"), "target": _target_json(target), "work_dir": str(work),
           "trials": int(trials), "seed": int(seed), "warm_dirs": [str(d) for d in warm_dirs],
           "soft_s": 0.8 * timeout_s,
           "out": str(work / "result.json"), "scheduled": str(work / "scheduled.json")}
    (work / "result.json").unlink(missing_ok=True)
    with tempfile.NamedTemporaryFile("w", suffix=".json", dir=work, delete=False) as f:
        json.dump(req, f)
    log = work / "child.log"
    with log.open("w") as lf:
        # the child imports this very checkout of leka (not whichever one the venv points to)
        src = str(Path(__file__).resolve().parents[2])
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, *filter(None, [os.environ.get("PYTHONPATH")])])}
        # dies with this process (its worker pools end on EOF of their pipes to it)
        code = ("import sys; from leka.core.proc import die_with_parent; die_with_parent(); "
                "from leka.tvm_adapter.ms_tool import main; sys.exit(main(sys.argv[1:]))")
        proc = subprocess.Popen([sys.executable, "-c", code, f.name], stdout=lf, stderr=subprocess.STDOUT,
                                start_new_session=True, env=env)
        try:
            rc = proc.wait(timeout=max(1.0, timeout_s))
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            proc.wait()
            return TuneResult(ok=False, seconds=time.monotonic() - t0,
                              error=f"MetaSchedule did not finish within {timeout_s:.0f} s (killed)")
        finally:
            _kill_group(proc)  # MetaSchedule's worker pools, should any outlive the child
    secs = time.monotonic() - t0
    out = work / "result.json"
    if rc != 0 or not out.exists():
        tail = [ln for ln in log.read_text(errors="replace").splitlines() if ln.strip()][-3:]
        return TuneResult(ok=False, seconds=secs, error=f"MetaSchedule child exit {rc}: {' | '.join(tail)}"[:800])
    res = json.loads(out.read_text())
    if not res.get("ok"):
        return TuneResult(ok=False, seconds=secs, error=str(res.get("error", "no schedule"))[:800],
                          trials=int(res.get("trials", 0)), warm_records=int(res.get("warm_records", 0)))
    scheduled = tvm.ir.load_json(Path(req["scheduled"]).read_text())
    return TuneResult(ok=True, steps=res["steps"], trace_text=res["trace_text"], scheduled=scheduled,
                      trials=int(res["trials"]), warm_records=int(res["warm_records"]),
                      best_us=res.get("best_us"), seconds=secs)


def _plain(v: Any) -> Any:
    if isinstance(v, (bool, int, float, str)):
        return v
    if hasattr(v, "items"):
        return {str(k): _plain(x) for k, x in v.items()}
    if hasattr(v, "__iter__"):
        return [_plain(x) for x in v]
    return str(v)


def _target_json(target) -> dict[str, Any]:
    """The target as JSON the child re-creates it from (as `with_target_options` re-creates one)."""
    return {k: _plain(v) for k, v in target.export().items() if k not in ("keys", "tag", "features")}


# ----------------------------------------------------------------------------- the child side
def workload_mod(func) -> tvm.IRModule:
    """The IRModule MetaSchedule keys a PrimFunc's workload by (as `tune_tir` normalises it)."""
    return tvm.IRModule({"main": func.with_attr("global_symbol", "main")})


def warm_start(db, mod, target, dirs: list[str]) -> int:
    """Commit to `db` the records of every database in `dirs` whose workload equals `mod`; the
    source databases are only read. Returns how many were committed."""
    from tvm.s_tir import meta_schedule as ms

    wl = None
    n = 0
    for d in dirs:
        p = Path(d)
        if not (p / "database_workload.json").exists() or not (p / "database_tuning_record.json").exists():
            continue
        try:
            src = ms.database.JSONDatabase(path_workload=str(p / "database_workload.json"),
                                           path_tuning_record=str(p / "database_tuning_record.json"),
                                           allow_missing=False)
            if not src.has_workload(mod):
                continue
            recs = [r for r in src.get_all_tuning_records() if structural_equal(r.workload.mod, mod)]
        except Exception:  # noqa: BLE001 - a damaged or foreign database is skipped
            continue
        for r in recs:
            if r.run_secs is None:
                continue
            if wl is None:
                wl = db.commit_workload(mod)
            db.commit_tuning_record(ms.database.TuningRecord(r.trace, wl, r.run_secs, target, r.args_info))
            n += 1
    return n


def _child(req: dict[str, Any]) -> dict[str, Any]:
    from tvm.s_tir import meta_schedule as ms

    from leka.tvm_adapter.tuning import _fast_builder, light_tensor_intrin

    func = tvm.ir.load_json(Path(req["func"]).read_text())
    target = tvm.target.Target(req["target"])
    light_tensor_intrin(target)
    mod = workload_mod(func)
    work = req["work_dir"]
    db = ms.database.JSONDatabase(work_dir=work)
    warm = warm_start(db, mod, target, req["warm_dirs"])
    before = len(db)
    # rounds of 2, 4, then 8 trials on one database and one cost model (each round's search starts
    # from the database's best): a short budget still gets the first small round's answer, and no
    # round starts that would end after the soft deadline; the parent kills the child only at its
    # hard one (seen in a 4-minute run here: a first round of 8 trials did not fit in 73 s)
    size = min(2, req["trials"])
    model = ms.cost_model.CostModel.create("xgb", num_tuning_cores=ms.utils.cpu_count(logical=False),
                                           tree_method="auto")
    # one runner for every round: its worker (a fresh Python importing TVM) starts once, not per round
    runner = ms.runner.LocalRunner()
    t0, rounds, trials = time.monotonic(), 0, 0
    while trials < req["trials"]:
        r0 = time.monotonic()
        n = min(size, req["trials"] - trials)
        # the population is sized to the round, not the call: the default (512) costs ~15 s per evolution
        # step here, and 16 x 32 trials made each round of 2-8 trials pay it (issue 44: 7 trials in 91 s)
        pop = max(64, min(512, 16 * n))
        strategy = ms.search_strategy.EvolutionarySearch(population_size=pop,
                                                         init_min_unmeasured=min(50, pop // 2))
        ms.tir_integration.tune_tir(mod, target, work, max_trials_global=n, num_trials_per_iter=n,
                                    builder=_fast_builder(), runner=runner, database=db, cost_model=model,
                                    strategy=strategy, seed=req["seed"] + rounds)
        rounds += 1
        size = min(8, 2 * size)
        got = len(db) - before
        if got == trials:
            break  # a round that measured nothing new: the space is exhausted (or every build failed)
        trials = got
        now = time.monotonic()
        nxt = min(size, req["trials"] - trials)  # the next round, priced like this one per trial
        if nxt and now - t0 + (now - r0) * nxt / n > req.get("soft_s", float("inf")):
            break
    sch = ms.tir_integration.compile_tir(db, mod, target)
    if sch is None:
        return {"ok": False, "error": "no valid schedule in the database", "trials": trials, "warm_records": warm}
    best = db.get_top_k(db.commit_workload(mod), 1)
    best_us = None
    if best and best[0].run_secs:
        secs = [float(x) for x in best[0].run_secs]
        best_us = 1e6 * sum(secs) / len(secs)
    text = str(sch.trace)
    Path(req["scheduled"]).write_text(tvm.ir.save_json(sch.mod["main"]))
    return {"ok": True, "steps": trace_steps(text), "trace_text": text, "trials": trials,
            "warm_records": warm, "best_us": best_us}


def main(argv: list[str]) -> int:
    req = json.loads(Path(argv[0]).read_text())
    try:
        res = _child(req)
    except Exception as e:  # noqa: BLE001 - the parent reads the reason from the result file
        last = (str(e).strip().splitlines() or [""])[-1]
        res = {"ok": False, "error": f"{type(e).__name__}: {last}"}
    Path(req["out"]).write_text(json.dumps(res))
    return 0

