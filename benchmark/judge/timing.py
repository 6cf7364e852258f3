"""The timing protocol: a candidate and its baseline timed in interleaved pairs (benchmark/README.md,
"Evaluator protocol").

A `Timer` is anything with `sample(number) -> seconds per call`; `kind` names how it calls. Timers:

- `tvm_timer` ("tvm_loop"): TVM's time_evaluator on one fixed input set (the protocol before issue
  13, kept for `evaluator.timing_input_sets = 1` and for side-by-side comparisons).
- `looped_timer` ("cpp_loop"): every call gets the next of K distinct input sets (precomputed, with
  their references), so no two consecutive calls see the same inputs and a kernel that replays its
  last result cannot go faster than one that computes; the calls of a sample run in a C++ loop
  (`leka.tvm_adapter.call_loop`: TVM's own loop with the argument pointer rotating), so no Python
  runs between them. After each sample, untimed, the last output is checked against that set's
  reference (`StaleOutput` when it does not match) and a `guard` runs (process-wide state,
  benchmark/judge/process_state.py). Both arms of a pair rotate alike.
- `rotating_timer` ("python_loop"): the same protocol with the calls in a Python loop, for callables
  that are not TVM functions (the torch and ONNX Runtime baselines) and where the C++ loop cannot be
  compiled (no C++ compiler). It adds the Python call overhead (about 1 us a call) to every call.

No tvm import here: timers take plain callables.
"""

from __future__ import annotations

import math
import statistics
import time
from collections import deque
from collections.abc import Callable, Sequence
from itertools import cycle, islice
from typing import Any

from benchmark.judge import load, machine_state, stats


class StaleOutput(RuntimeError):
    """A timed call's output does not match its own inputs' reference (a replayed or unfinished result)."""


class Timer:
    """Something that can be timed: `sample(number)` returns seconds per call for one sample; `kind`
    says how the calls are made (reported in EvalResult.extra["timer"]); `warm`: its program has run
    before its first sample (a sandboxed worker's setup and checks), so that sample carries no one-time
    cost and the plan needs no warm-up rounds (`_plan`)."""

    def __init__(self, sample: Callable[[int], float], kind: str = "", warm: bool = False):
        self.sample = sample
        self.kind = kind
        self.warm = warm


def tvm_timer(runner, dev_args) -> Timer:
    """One fixed input set, TVM's own loop (no Python between calls)."""
    return Timer(lambda n: runner.time_per_call(dev_args, n), "tvm_loop")


def _calls(n: int, n_sets: int) -> int:
    """Calls in a sample of (at least) n: coprime with the set count, so the set whose output the sample
    ends on (the one checked) changes from sample to sample; with 2 sets and an even n it would always
    be the same set, and a kernel would only need that set's outputs right."""
    while n_sets > 1 and math.gcd(n, n_sets) != 1:
        n += 1
    return n


def _close(t0: float, n: int, k0: int, n_sets: int, out: Any, state: dict[str, int],
           check: Callable[[int, Any], None] | None, guard: Callable[[], None] | None,
           sync: Callable[[], Any] | None, clock: Callable[[], float]) -> float:
    """End a sample of n calls begun at t0 on set k0: `sync()` closes the timed region; then, untimed,
    the next sample's set, `check` of the last output against its own set, `guard`. Seconds per call."""
    if sync is not None:
        sync()
    t = clock() - t0
    state["k"] = (k0 + n) % n_sets
    if check is not None:
        check((k0 + n - 1) % n_sets, out)
    if guard is not None:
        guard()
    return t / n


def looped_timer(run: Callable[[int, int], Any], n_sets: int,
                 check: Callable[[int, Any], None] | None = None,
                 guard: Callable[[], None] | None = None, sync: Callable[[], Any] | None = None,
                 clock: Callable[[], float] = time.perf_counter) -> Timer:
    """`run(number, k)` makes `number` calls, call i on input set (k + i) % n_sets, with no Python
    between them, and returns the last call's output (`VMRunner.rotating_loop`). k carries across
    samples as in `rotating_timer`; `check`, `guard`, `sync` and `clock` as there."""
    state = {"k": 0}

    def sample(n: int) -> float:
        n = _calls(n, n_sets)
        k0 = state["k"]
        t0 = clock()
        out = run(n, k0)
        return _close(t0, n, k0, n_sets, out, state, check, guard, sync, clock)

    return Timer(sample, "cpp_loop")


def rotating_timer(call: Callable[..., Any], arg_sets: Sequence[Sequence[Any]],
                   check: Callable[[int, Any], None] | None = None,
                   guard: Callable[[], None] | None = None, sync: Callable[[], Any] | None = None,
                   clock: Callable[[], float] = time.perf_counter, hold: int = 0) -> Timer:
    """`call(*arg_sets[k])` with k advancing by one every call (and carried across samples, so a
    sample never starts on the set the previous one ended with); `sync()` (the device's: GPU calls
    return before the kernels end) closes the timed region. After it, untimed: `check(k, last_output)`
    (raises StaleOutput) and `guard()` (raises on changed process state). `clock` is wall time; a
    single-threaded comparison on a loaded machine may pass `time.thread_time`. `hold`: the last
    outputs kept alive, as in the C++ loop (`leka.tvm_adapter.call_loop`: which buffer a VM call gets)."""
    n_sets = len(arg_sets)
    state = {"k": 0}
    ring: deque[Any] = deque(maxlen=max(1, hold))

    def sample(n: int) -> float:
        n = _calls(n, n_sets)
        k0 = state["k"]
        seq = list(islice(cycle(arg_sets[k0:] + arg_sets[:k0]) if n_sets > 1 else cycle(arg_sets), n))
        t0 = clock()
        # hold 0: each result is dropped before the next call, so its memory is reused (holding every
        # result would make each call allocate and fault in a fresh output); hold > 0: the last `hold`
        # results stay alive, so a VM call's output buffer last held another set's result (call_loop)
        if hold > 0:
            for args in seq[:-1]:
                ring.append(call(*args))
            out = call(*seq[-1])
            ring.append(out)
        else:
            for args in seq[:-1]:
                call(*args)
            out = call(*seq[-1])
        return _close(t0, n, k0, n_sets, out, state, check, guard, sync, clock)

    return Timer(sample, "python_loop")


def _plan(cand: Timer, base: Timer, cfg: dict[str, Any]) -> dict[str, Any]:
    """Warm-up, then (number, repeats) per arm so one sample lasts ~sample_s, and the pair count.

    Pairs fit `timing_budget_s` within [min_pairs, max_pairs]. A slow program (one call of either arm
    lasts a sample or more, so number = 1 and one run per sample) whose min_pairs pairs do not fit in
    what the budget leaves after its warm-up gets what fits, at least one pair, and `limited` says so:
    a program of seconds is timed in a few of its own calls, not in min_pairs of them."""
    t0 = time.perf_counter()
    # First one call per arm, then `warmup` rounds more, the last of which plans the samples. A
    # program's first call carries its one-time costs, and unequally for the two arms: the candidate
    # ran its checks before, the baseline had not run at all. On NVIDIA's OpenCL the baseline's first
    # call builds its OpenCL program (TVM builds it at its first launch); planned from that call, the
    # baseline got samples of one call, whose sync and launch cost the candidate's samples of ~1000
    # calls spread thin, and A/A read 1.06-3.92x in-process on the H200 (experiments/results/
    # bench_aa_h200.md). Slow programs (both first calls a sample or more: one call per sample either
    # way) skip the rounds, which would cost pairs of their budget; warmup = 0 plans from the first
    # calls (the protocol before the fix), as do warm timers, whose first calls are alike already
    tc1 = cand.sample(1)
    tb1 = base.sample(1)
    first = [tc1, tb1]
    if min(tc1, tb1) < cfg["sample_s"] and not (cand.warm and base.warm):
        for _ in range(max(0, int(cfg["warmup"]))):
            tc1 = cand.sample(1)
            tb1 = base.sample(1)
    warm_s = time.perf_counter() - t0
    # a sample is the best of `reps` short runs: a preempted run (other processes on the same
    # cores) then costs one repetition, not the pair; slow calls (>= sample_s) run once
    reps = max(1, int(cfg.get("sample_repeats", 3)))
    nc = max(1, math.ceil(cfg["sample_s"] / reps / max(tc1, 1e-7)))
    nb = max(1, math.ceil(cfg["sample_s"] / reps / max(tb1, 1e-7)))
    if 2 / 3 < tc1 / max(tb1, 1e-12) < 1.5:
        # arms within 1.5x of each other make the same number of calls: a sample's fixed costs (a
        # sandboxed worker's request: signals, a socket round trip) then weigh alike on both, and a
        # noisy warm-up cannot tilt an A-vs-A comparison through unequal call counts
        nc = nb = max(1, math.ceil(cfg["sample_s"] / reps / max(math.sqrt(tc1 * tb1), 1e-7)))
    rc = reps if nc * tc1 < cfg["sample_s"] else 1
    rb = reps if nb * tb1 < cfg["sample_s"] else 1
    per_pair = rc * nc * tc1 + rb * nb * tb1
    budget = cfg["timing_budget_s"]
    pairs = int(min(cfg["max_pairs"], max(cfg["min_pairs"], budget // max(per_pair, 1e-9))))
    fit = int(max(0.0, budget - warm_s) // max(per_pair, 1e-9))  # pairs left after the warm-up
    limited = max(tc1, tb1) >= cfg["sample_s"] and fit < cfg["min_pairs"]
    if limited:
        pairs = max(1, fit)
    return {"number": [nc, nb], "repeats": [rc, rb], "pairs": pairs, "limited": limited,
            "per_pair_s": per_pair, "warmup_s": warm_s, "plan_call_s": [tc1, tb1],
            "first_call_s": first}


def _spread(ratios: list[float]) -> float | None:
    """IQR / median of the per-pair ratios (range / median under 4 pairs; None for a single pair): reported
    as `timing_spread`, no longer a gate (the interval is, `stats.speedup_interval`)."""
    ratios = sorted(ratios)
    if len(ratios) < 2:
        return None
    med = statistics.median(ratios)
    q = statistics.quantiles(ratios, n=4) if len(ratios) >= 4 else [ratios[0], med, ratios[-1]]
    return (q[-1] - q[0]) / med if med > 0 else math.inf


def _pair(first: tuple[Timer, int, int], second: tuple[Timer, int, int]) -> tuple[float, float]:
    """One pair of (timer, number, repeats) arms: each arm's sample is the best of its repetitions, and the
    repetitions alternate (A B A B A B): every run then follows a run of the other arm, so the cost of
    switching (caches, the other worker's state, a core waking up) and any drift within the pair fall on
    both alike. Runs of one arm back to back would leave the first of them cold and the others warm."""
    best = [math.inf, math.inf]
    for k in range(max(first[2], second[2])):
        for j, (t, n, r) in enumerate((first, second)):
            if k < r:
                best[j] = min(best[j], t.sample(n))
    return best[0], best[1]


def paired_timing(cand: Timer, base: Timer, cfg: dict[str, Any], probe_load: bool = True,
                  gpu: bool = False) -> dict[str, Any]:
    """A B A B ... (order alternating per pair), warm-up first; `number` per sample adapts so one
    sample lasts ~sample_s; the pair count fits timing_budget_s (`_plan`). The speedup is the geometric
    mean over pairs of t_base / t_cand with its `ci_level` interval (benchmark/judge/stats.py); timing stops
    before the planned pairs once, after at least min_pairs, the interval's relative width (hi / lo - 1)
    is under `ci_width`. `probe_load`: read the machine's load (benchmark/judge/load.py) around the whole
    timing, warm-up included (off where the timing runs elsewhere: an RPC board), and the platform
    before and after it (benchmark/judge/machine_state.py; `gpu`: the GPU's clocks too)."""
    before = machine_state.snapshot(gpu) if probe_load else None
    t0 = time.perf_counter()
    snap = load.start() if probe_load else None
    plan = _plan(cand, base, cfg)
    (nc, nb), (rc, rb) = plan["number"], plan["repeats"]
    level = float(cfg.get("ci_level", stats.LEVEL))
    # sequential stops: on the interval's width, never on its position (whether the candidate looks faster
    # does not decide when to stop, so that stop does not bias the answer towards "faster"; for normal
    # log-ratios the width is independent of the mean), on the wall clock, and on a decision "slower than
    # the parent", which looks at the position at a Bonferroni-corrected level (`decided_below`)
    tcs, tbs, stop = _pairs(cand, base, cfg, plan, level, t0)
    point, lo, hi = stats.speedup_interval(tbs, tcs, level)
    ratios = [b / c for b, c in zip(tbs, tcs, strict=True) if c > 0]
    if cfg.get("noise_floor") == "self":
        # the candidate is the baseline's own program (the root against untuned TVM): this comparison is
        # the A-vs-A, so it is the noise floor, and a second one would time the same thing twice
        width = stats.rel_width(lo, hi)
        floor = {"speedup": point, "lo": lo, "hi": hi, "pairs": len(tcs), "width": width if math.isfinite(width) else None,
                 "number": nb, "timing_s": round(time.perf_counter() - t0, 3), "source": "the root's own comparison"}
    else:
        floor = noise_floor(base, cfg, nb, rb, statistics.median(tbs)) if cfg.get("noise_floor") else None
    wall = time.perf_counter() - t0
    busy = load.finish(snap, float(cfg.get("load_share", 0.25)))
    after = machine_state.snapshot(gpu) if probe_load else None
    return {"speedup": point, "speedup_lo": lo, "speedup_hi": hi, "ci_level": level, "noise_floor": floor,
            "ci_width": stats.rel_width(lo, hi), "max_ci_width": float(cfg.get("max_ci_width", 0.25)),
            "t_candidate_s": statistics.median(tcs), "t_baseline_s": statistics.median(tbs),
            "spread": _spread(ratios), "pairs": len(tcs), "number": [nc, nb], "repeats": [rc, rb],
            "limited": plan["limited"], "timing_s": wall, "stop": stop or "planned",
            "decided_below": float(cfg["decide_below"]) if stop == "decided" else None,
            "first_call_s": plan["first_call_s"], "plan_call_s": plan["plan_call_s"],
            "machine_load": busy, "platform": machine_state.around(before, after, busy)}


def _pairs(cand: Timer, base: Timer, cfg: dict[str, Any], plan: dict[str, Any], level: float,
           t0: float) -> tuple[list[float], list[float], str]:
    """`paired_timing`'s pairs, each arm first in every other one: (candidate times, baseline times, what
    stopped them: "" for the plan, "width", "decided", "budget")."""
    (nc, nb), (rc, rb), pairs = plan["number"], plan["repeats"], plan["pairs"]
    target = float(cfg.get("ci_width", 0.0) or 0.0)
    min_pairs = int(cfg.get("min_pairs", 3))
    budget = float(cfg.get("timing_budget_s", 4.0))
    below = cfg.get("decide_below")
    tcs: list[float] = []
    tbs: list[float] = []
    for i in range(pairs):
        if i % 2 == 0:
            tc, tb = _pair((cand, nc, rc), (base, nb, rb))
        else:
            tb, tc = _pair((base, nb, rb), (cand, nc, rc))
        tcs.append(tc)
        tbs.append(tb)
        if i + 1 >= pairs or i + 1 < min_pairs:
            continue
        _, lo, hi = stats.speedup_interval(tbs, tcs, level)
        if target and stats.rel_width(lo, hi) <= target:
            return tcs, tbs, "width"  # precise enough: more pairs would only spend the evaluation's time
        if below is not None and decided_below(tbs, tcs, float(below), level, pairs):
            return tcs, tbs, "decided"
        if time.perf_counter() - t0 >= budget:
            # the plan came from single calls; a sandboxed sample costs more (its check runs the other arm
            # once, a warm call, the pool's fill): the wall clock, not the plan, ends the timing
            return tcs, tbs, "budget"
    return tcs, tbs, ""


def times_alone(cfg: dict[str, Any]) -> bool:
    """Whether this evaluation times the candidate alone against the root's baseline samples (issue 44:
    `reuse_baseline`, given by the run's loop): no baseline is built, forked or run then. (The root of a
    slow task, `root_program`, is timed alone too, decided after its check: `alone_for`.)"""
    return bool(cfg.get("reuse_baseline"))


def alone_for(cfg: dict[str, Any], call_s: float) -> bool:
    """Whether to time this candidate alone: given the root's samples, or the root itself (its program is
    the baseline's: `root_program`) when one call takes `reuse_baseline_s` or more, so that its samples,
    reused, spare every later evaluation the baseline's slow calls."""
    if times_alone(cfg):
        return True
    limit = float(cfg.get("reuse_baseline_s", 0.0) or 0.0)
    return bool(cfg.get("root_program")) and limit > 0 and call_s >= limit


def alone_timing(cand: Timer, base_samples: Sequence[float] | None, cfg: dict[str, Any],
                 probe_load: bool = True) -> dict[str, Any]:
    """The candidate timed alone: samples of `number` calls (best of `repeats`), planned from one call,
    until `timing_budget_s` of wall clock (at least one sample, at most `max_pairs`), or once after
    `min_pairs` the interval's width is under `ci_width`. With `base_samples` (the root's, per call) the
    speedup is `stats.ratio_interval` of them over these; without (the root itself, whose program is the
    baseline's) it is 1 by construction and these samples are the baseline's, to be reused."""
    before = machine_state.snapshot(False) if probe_load else None
    t0 = time.perf_counter()
    snap = load.start() if probe_load else None
    t1 = cand.sample(1)
    reps = max(1, int(cfg.get("sample_repeats", 3)))
    n = max(1, math.ceil(cfg["sample_s"] / reps / max(t1, 1e-7)))
    r = reps if n * t1 < cfg["sample_s"] else 1
    level = float(cfg.get("ci_level", stats.LEVEL))
    budget, most, least = float(cfg["timing_budget_s"]), int(cfg["max_pairs"]), int(cfg.get("min_pairs", 3))
    target = float(cfg.get("ci_width", 0.0) or 0.0)
    # the root of a slow task: its planning call, after its checks, is a call like any (the program is the
    # baseline's, trusted; a candidate's samples are all checked ones), so it is the first sample
    tcs: list[float] = [t1] if not base_samples and n == 1 and r == 1 else []
    stop = "planned"
    while len(tcs) < most:
        if tcs and time.perf_counter() - t0 >= budget and (len(tcs) >= least or n == 1):
            stop = "budget"
            break
        tcs.append(min(cand.sample(n) for _ in range(r)))
        if base_samples and target and len(tcs) >= least:
            _, lo, hi = stats.ratio_interval(base_samples, tcs, level)
            if stats.rel_width(lo, hi) <= target:
                stop = "width"
                break
    if base_samples:
        point, lo, hi = stats.ratio_interval(base_samples, tcs, level)
        t_base = statistics.median(base_samples)
    else:
        point, lo, hi, t_base = 1.0, None, None, statistics.median(tcs)
    wall = time.perf_counter() - t0
    busy = load.finish(snap, float(cfg.get("load_share", 0.25)))
    after = machine_state.snapshot(False) if probe_load else None
    return {"speedup": point, "speedup_lo": lo, "speedup_hi": hi, "ci_level": level, "noise_floor": None,
            "ci_width": stats.rel_width(lo, hi), "max_ci_width": float(cfg.get("max_ci_width", 0.25)),
            "t_candidate_s": statistics.median(tcs), "t_baseline_s": t_base, "spread": _spread(tcs),
            "pairs": len(tcs), "number": [n, n], "repeats": [r, r], "limited": n == 1 and len(tcs) < least,
            "timing_s": wall, "first_call_s": [t1, t1], "plan_call_s": [t1, t1], "stop": stop,
            "machine_load": busy, "platform": machine_state.around(before, after, busy),
            "alone": "reused" if base_samples else "root", "samples": list(tcs)}


def decided_below(t_base: list[float], t_cand: list[float], threshold: float, level: float, looks: int) -> bool:
    """Whether the speedup is decided to be under `threshold` (the parent's speedup: an edit that made it
    slower), so that more pairs would not change what the search does with it.

    The rule (issue 44): after each pair from `min_pairs` on, the interval is computed at the level
    1 - (1 - level) / looks, `looks` being the most pairs planned (a Bonferroni split of the error over
    every look the loop could take); the timing stops when that wider interval's upper bound is under
    `threshold`. Whatever the true speedup s >= threshold, the chance that any look wrongly says "under"
    is at most (1 - level) by the union bound over the looks, so the decision keeps the error the
    nominal interval promises, despite looking after every pair. Only "under" stops (an improvement is
    timed to its width or budget: its value is what the search keeps). The reported interval is still
    the nominal one of the pairs taken; a stop here is recorded (`stop` "decided", extra["decided_below"])
    so a reader knows the point came from an early, position-dependent stop."""
    alpha = (1 - level) / max(1, looks)
    _, _, hi = stats.speedup_interval(t_base, t_cand, 1 - alpha)
    return hi is not None and hi < threshold


def noise_floor(base: Timer, cfg: dict[str, Any], number: int, repeats: int, t_call: float) -> dict[str, Any]:
    """The machine's noise floor where this evaluation ran: the baseline timed against itself (A-vs-A)
    by the same protocol, timer and process as the comparison just made, with that comparison's plan
    for the baseline (`number` calls a sample, best of `repeats`): both sides make the same calls, as an
    A-vs-A must. Planned again from fresh one-call samples (a sandboxed worker's first sample calibrates
    once), the two sides got unequal call counts, a request's fixed cost weighed unequally, and the
    floor of microsecond kernels read 0.3x-3x. At most `noise_floor_pairs` pairs within
    `noise_floor_budget_s`, at least one. Its interval is what a speedup of 1.00x looks like here and
    now; a report states it beside the speedups (issue 27)."""
    per_pair = 2 * repeats * number * max(t_call, 1e-9)
    most = max(1, int(cfg.get("noise_floor_pairs", 8)))
    pairs = max(1, min(most, int(float(cfg.get("noise_floor_budget_s", 1.5)) // per_pair)))
    t0 = time.perf_counter()
    xs, ys = [], []
    arm = (base, number, repeats)
    for i in range(pairs):  # each side first in every other pair, as in the comparison
        a, b = _pair(arm, arm)
        x, y = (a, b) if i % 2 == 0 else (b, a)
        xs.append(x)
        ys.append(y)
    point, lo, hi = stats.speedup_interval(ys, xs, float(cfg.get("ci_level", stats.LEVEL)))
    width = stats.rel_width(lo, hi)
    return {"speedup": point, "lo": lo, "hi": hi, "pairs": pairs, "width": width if math.isfinite(width) else None,
            "number": number, "timing_s": round(time.perf_counter() - t0, 3)}


def record(res, tm: dict[str, Any]) -> None:
    """`paired_timing`'s answer into an EvalResult. The timing is valid when its interval is narrower
    than `max_ci_width` (relative width hi / lo - 1); a wider one marks the speedup untrusted (error_kind
    timing_invalid, the result still correct). One pair (a slow program in a small budget) has no
    interval: valid, said to be one pair, and never "faster" (`is_faster` needs a lower bound)."""
    res.speedup = tm["speedup"]
    res.speedup_lo, res.speedup_hi = tm["speedup_lo"], tm["speedup_hi"]
    res.t_candidate_s, res.t_baseline_s = tm["t_candidate_s"], tm["t_baseline_s"]
    res.timing_spread, res.n_pairs, res.timing_s = tm["spread"], tm["pairs"], tm["timing_s"]
    bound = tm["max_ci_width"]
    one_pair = tm["speedup_lo"] is None
    # a stop decided below the parent (decided_below) is valid whatever its nominal width: its verdict,
    # slower than the parent, holds at the nominal error rate (decided_below's docstring)
    res.timing_valid = one_pair or tm["ci_width"] <= bound or tm.get("decided_below") is not None
    res.extra["number"] = tm["number"]
    if tm.get("alone") == "root":
        # the root of a slow task, timed alone: its program is the baseline's, so these per-call times are
        # the baseline's, reused by the run's later evaluations (issue 44)
        res.extra["baseline_samples"] = [float(f"{t:.6g}") for t in tm["samples"]]
        res.extra["timed_alone"] = "the root is the baseline's program: timed once, its samples reused"
    elif tm.get("alone") == "reused":
        res.extra["timed_alone"] = ("unpaired: the candidate's samples against the root's baseline samples "
                                    "(Welch interval on the logs)")
    if tm.get("stop"):  # what ended the pairs: planned, width, decided, budget
        res.extra["timing_stop"] = tm["stop"]
    if tm.get("decided_below") is not None:
        res.extra["decided_below"] = tm["decided_below"]
    if "first_call_s" in tm:  # each arm's first call and the call its samples were planned from
        res.extra["first_call_s"] = [float(f"{t:.3g}") for t in tm["first_call_s"]]
        res.extra["plan_call_s"] = [float(f"{t:.3g}") for t in tm["plan_call_s"]]
    res.extra["ci_level"] = tm["ci_level"]
    if tm.get("noise_floor") is not None:
        res.extra["noise_floor"] = tm["noise_floor"]
    if tm.get("machine_load") is not None:
        # a loaded machine's timing is kept and reported as such: the interval already carries the
        # noise the load caused, and the reports count loaded evaluations next to their numbers
        res.extra["machine_load"] = tm["machine_load"]
    if tm.get("platform") is not None:  # reported, not failed: whether it moved is the reader's to weigh
        res.extra["platform"] = tm["platform"]
    if tm.get("limited"):
        width = "no interval (one pair)" if one_pair else f"interval width {tm['ci_width']:.3f}"
        res.extra["timing_limited"] = (f"slow program: {tm['pairs']} pair(s) of number=1 within "
                                       f"evaluator.timing_budget_s, {width}")
    if not res.timing_valid:
        res.error_kind = "timing_invalid"
        res.error = (f"timing interval {res.speedup:.3f}x [{res.speedup_lo:.3f}, {res.speedup_hi:.3f}] is "
                     f"{tm['ci_width']:.3f} wide, over the bound {bound} (evaluator.max_ci_width); speedup not "
                     "trusted")


def judged_pairs(cand: Timer, base: Timer, cfg: dict[str, Any], res, gpu: bool = False) -> dict[str, Any] | None:
    """`paired_timing`, its candidate-side failures written into the EvalResult `res` (None then): a
    timed output that is not its inputs' (stale_output), process-wide settings changed (process_state).
    Both evaluation paths (in-process, benchmark/judge/job.py; sandboxed, benchmark/judge/sandbox/checks.py) use it."""
    from benchmark.judge.process_state import ProcessStateChanged

    try:
        return paired_timing(cand, base, cfg, gpu=gpu)
    except StaleOutput as e:
        res.correct = False
        res.error_kind, res.error = "stale_output", (
            f"{e} (the checked runs passed: the kernel returns a result it did not compute for these inputs, "
            "or finishes after returning)")[:4000]
    except ProcessStateChanged as e:
        res.error_kind, res.error = "process_state", f"during timing: {e}"[:4000]
    return None
