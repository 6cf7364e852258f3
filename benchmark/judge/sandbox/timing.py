"""The sandboxed protocol's paired timing (benchmark/judge/sandbox/checks.py sets the workers up and checks): each
arm's samples are requests to its worker, and each request is checked after it.

- Every call of a request reads its own windows, none overlapping another's (benchmark/judge/sandbox/pool.py),
  refilled with fresh contents before the request.
- The worker keeps every call's outputs (`sandbox_hold` 0; N > 0, a ring of the last N, is for
  diagnostics: a kernel reads the loop's call count from its frames and computes only the kept calls);
  the number of calls is drawn around the planned `number`.
- A request of more than one planned call follows one untimed call on the pool's previous contents
  (`sandbox_warm_call`): a request's first call after the other arm's finds the machine cold, and the
  drawn counts make short requests common.
- After the answer (its nonce and the loop's progress checked: benchmark/judge/sandbox/control.py) one call, drawn
  among all those kept, is checked before the worker runs again: its output against the other arm's
  on the same inputs (an untimed one-call request to the other worker), at twice the task's tolerance.
- The clock is the judge's, around the request (less, with a ring, the fastest empty request's cost).
  Both arms go through exactly this path, so whatever it costs, both pay it.

No tvm import here.
"""

from __future__ import annotations

import math
import random
import time
from typing import Any

from benchmark.judge import timing
from benchmark.judge.outputs import compare
from benchmark.judge.process_state import ProcessStateChanged
from benchmark.judge.sandbox import control
from benchmark.judge.sandbox.checks import SYSRAND, fail, input_maker, outputs_like


def draw_calls(rng: random.Random, n: int, most: int, hold: int) -> int:
    """A timed request's call count for a planned `n`, drawn per sample so that a kernel cannot count
    its way to the checked call. Where every call's outputs are kept (hold 0), 3/4 of n to all of it:
    any call may be checked. Where only the last `hold` calls' are, memoryless: geometric with mean n
    (at most half of `most`, the request's cap, so the cap is seldom hit), so that whatever call a
    kernel has reached, the chance that the request ends within `hold` calls, and so that the call can
    be checked, is the same: no call is safe to skip."""
    if n <= 1:
        return 1
    if hold <= 0:
        return rng.randint(max(1, (3 * n + 3) // 4), n)
    mean = max(1, min(n, most // 2))
    if mean == 1:
        return 1
    u = 1.0 - rng.random()  # (0, 1]
    return max(1, min(most, 1 + int(math.log(u) / math.log1p(-1.0 / mean))))


class _Arm:
    """One arm's sandboxed timing: `sample(number)` is its Timer's (see the module docstring). Arms share
    the judge's rng, pool and diagnostics list; each checks a drawn call against the other arm."""

    def __init__(self, st: Any, me: control.SandboxWorker, other: control.SandboxWorker | None, role: str,
                 rng: random.Random, diag: list | None, fixed: list[float]):
        self.st, self.me, self.other, self.role, self.rng, self.diag = st, me, other, role, rng, diag
        self.make, self.like = input_maker(st), outputs_like(st)
        self.guard = bool(st.cfg.get("process_check", True))
        self.calibrated = False
        self.primed = 0  # the most calls a request of this arm has made
        self.fixed = fixed  # [a request's fixed cost, s]: both arms' fastest empty request (shared)
        self.warm_call = bool(st.cfg.get("sandbox_warm_call", True))  # evaluator.sandbox_warm_call

    def sample(self, number: int) -> float:
        if number == 1 and not self.calibrated:
            self.calibrated = True
            return self._calibrate()
        return self.one(number)

    def _empty(self) -> None:
        """Requests of no call on both workers: the fixed cost of a request (signals, the socket, the
        loop's setup) as the fastest of them. It is taken off every timed request before dividing by its
        calls, so that the drawn call counts (few calls: that cost weighs more) do not pull a ratio
        towards 1. The fastest over both arms: an arm cannot raise it above the other's."""
        if self.me.device or not self.me.hold:
            return  # call counts near the planned one: the cost weighs alike on both arms (as before)
        for w in (self.me, self.other) if self.other is not None else (self.me,):
            for _ in range(3):
                self.fixed[0] = min(self.fixed[0], w.run([]).seconds)

    def _calibrate(self) -> float:
        """The warm-up: a request costs ~0.1 ms of its own (signals, the socket), so one call says little
        about a call's time; grow the request until it lasts a few ms, as a sample will."""
        self._empty()
        t = self.one(1, draw=False)  # a fresh worker's first call (lazy setup, faults): not a measure
        if t >= self.st.cfg.get("sample_s", 0.03):
            # a call as long as a sample: one call per request whatever the warm-up says, and more calls
            # here would spend the timing budget's pairs (a program of 0.35 s got one)
            return t
        n = 1
        while True:  # best of two at each size: one slow request must not stop the growth
            t = min(self.one(n, draw=False) for _ in range(2))
            if n >= self.st.max_calls or t * n >= 2e-3:
                break
            n = min(self.st.max_calls, n * 4)
        return min([t] + [self.one(n, draw=False) for _ in range(2)])

    def _rows(self, n: int) -> tuple[list[list[int]], float]:
        """n calls' windows, each its own (disjoint from every other call's: `control.Pool`), filled
        with fresh contents; each call's inputs as byte offsets, and the refill's seconds."""
        pool, rng = self.st.pool, self.rng
        first = rng.randrange(pool.sets)  # call c reads copy first + c: consecutive calls, other bytes
        per_copy = [rng.sample(range(pool.positions), -(-n // pool.sets)) for _ in range(pool.sets)]
        wins = [((first + c) % pool.sets, per_copy[(first + c) % pool.sets][c // pool.sets]) for c in range(n)]
        t_fill = time.perf_counter()
        pool.fill(self.make, rng.randrange(10**6, 2**31 - 10**5), slack_seed=rng.randrange(10**6, 2**31 - 10**5),
                  windows=wins)
        t_fill = time.perf_counter() - t_fill
        return [[pool.offset(i, cp, p) for i in range(len(pool.specs))] for cp, p in wins], t_fill

    def one(self, number: int, draw: bool = True) -> float:
        n = max(1, min(int(number), self.st.max_calls))
        if not draw:
            self.primed = max(self.primed, n)
        elif n > self.primed and not self.me.hold:
            # a request of this many calls once, untimed, first: its output buffers (every call's is held)
            # are allocated and faulted in before a timed request needs them
            self.primed = n
            self.one(n, draw=False)
        if draw and n > 1 and self.warm_call and not self.me.device:
            # untimed, before this request's fill: nothing it computes can serve the timed calls
            warm = self.me.run([[self.st.pool.offset(i, 0, 0) for i in range(len(self.st.pool.specs))]])
            if self.diag is not None:
                self.diag.append([self.role[0], 1, warm.seconds, self.me.worker_s, 0.0, False, None, 0.0, None,
                                  self.st.pool.generation, "warm"])
        if draw:
            n = draw_calls(self.rng, n, self.st.max_calls, 0 if self.me.device else self.me.hold)
        rows, t_fill = self._rows(n)
        me, diag = self.me, self.diag
        f0, p0 = (control.faults(me.pid), time.process_time()) if diag is not None else (None, 0.0)
        calls = me.run(rows)
        if diag is not None:
            f1, judge_cpu = control.faults(me.pid), time.process_time() - p0
            diag.append([self.role[0], n, calls.seconds, me.worker_s, t_fill, draw,
                         [b - a for a, b in zip(f0, f1, strict=True)] if f0 and f1 else None, judge_cpu,
                         control.cpus(me.pid), self.st.pool.generation, ""])
        # the check first, before the worker runs again: a kernel that answered before its calls ran
        # (its clock stopped early) could otherwise finish them while the judge asks for its state
        self._check(calls, rows, n)
        if self.guard:
            changed = me.state()  # untimed, after the request; both arms alike
            if changed and self.role == "candidate":
                raise ProcessStateChanged(changed)
        fixed = self.fixed[0] if math.isfinite(self.fixed[0]) else 0.0
        # never below a tenth of the request: a fixed cost measured when the machine was quieter than now
        return max(calls.seconds - fixed, 0.1 * calls.seconds) / n

    def _check(self, calls: control.Calls, rows: list[list[int]], n: int) -> None:
        """A call drawn after the request among those whose outputs were kept, against the other arm's
        on the same inputs."""
        j = self.rng.randrange(calls.first, n)
        mine = self.me.read_outputs(calls.outputs[j - calls.first], self.like)
        if self.other is None:  # timed alone (issue 44): the task's model on the same inputs, in the judge
            theirs = self._reference(rows[j])
            kind, msg, _, _ = compare(mine, theirs, self.st.atol, self.st.rtol)
            if kind:
                raise timing.StaleOutput(f"timed call {j + 1} of {n} of a candidate sample timed alone, against "
                                         f"the task's model on the same inputs: {msg}")
            return
        theirs = self.other.read_outputs(self.other.run([rows[j]]).outputs[0], self.like)
        cand, base = (mine, theirs) if self.role == "candidate" else (theirs, mine)
        kind, msg, _, _ = compare(cand, base, 2 * self.st.atol, 2 * self.st.rtol)
        if kind:
            raise timing.StaleOutput(f"timed call {j + 1} of {n} of a {self.role} sample, against the other arm "
                                     f"on the same inputs: {msg}")


    def _reference(self, row: list[int]) -> list:
        """The task's PyTorch model on one call's inputs (its windows of the pool), in the judge: what a
        call timed alone is checked against, at the task's tolerance (a slow TVM baseline's call would cost
        what timing alone saves; the model is the reference the check uses anyway)."""
        import torch

        from benchmark.judge import refs as refstore

        if getattr(self.st, "ref_model", None) is None:
            self.st.ref_model = self.st.task.make_model()
        xs = [torch.from_numpy(self.st.pool.window(i, off).copy()) for i, off in enumerate(row)]
        with torch.no_grad():
            return refstore.flat_outputs(self.st.ref_model(*xs))


def timers(st: Any) -> tuple[timing.Timer, timing.Timer]:
    """The two arms' Timers (see the module docstring)."""
    cw, bw = st.workers["candidate"], st.workers["baseline"]
    rng = random.Random(SYSRAND.getrandbits(64))
    # evaluator.timing_diag: each request as [arm, calls, judge's s, worker's own s, fill s, timed,
    # [worker's minor, major faults], judge's own CPU s, the CPUs the worker's threads last ran on], to
    # split a request's time into the worker's compute and the rest (the worker's clock is no verdict),
    # then the pool's fill the request read and "warm" for the untimed call before a sampled request
    diag = st.res.extra.setdefault("timing_diag", []) if st.cfg.get("timing_diag") else None
    st.request_fixed = fixed = [math.inf]  # read back into the result (time_step)
    # warm: the workers' setup and check requests have run both programs, an OpenCL program's
    # first-launch build included, so their first timed calls are alike (within 1.5x on 23/23 CUDA and
    # 22/23 OpenCL tasks on the H200) and planning from a later one-call round only made the plan
    # noisier (16 and 19: experiments/results/bench_aa_h200.md)
    return (timing.Timer(_Arm(st, cw, bw, "candidate", rng, diag, fixed).sample, "sandbox", warm=True),
            timing.Timer(_Arm(st, bw, cw, "baseline", rng, diag, fixed).sample, "sandbox", warm=True))


def time_step(st: Any) -> bool:
    import torch

    res, cfg = st.res, st.cfg
    if timing.times_alone(cfg) and not st.gpu:
        return _time_alone(st, cfg.get("reuse_baseline"))
    cand, base = timers(st)
    # the judge makes each request's inputs (Pool.fill, the task's torch code) on one thread: with two,
    # libgomp's second thread spins after every parallel region (GOMP_SPINCOUNT), on a core the worker's
    # request is being timed on, and the worker's two threads then share one core for milliseconds
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    calls = len(st.seeds) + (1 if cfg.get("poison", True) and not cfg.get("root_program") else 0)
    if not st.gpu and timing.alone_for(cfg, (res.check_s or 0.0) / max(1, calls)):
        torch.set_num_threads(threads)  # the reference of a checked call is the judge's only torch work
        return _time_alone(st, cfg.get("reuse_baseline"))
    try:
        tm = timing.judged_pairs(cand, base, cfg, res, gpu=bool(st.gpu))
    except (control.WorkerDied, control.WorkerError, control.ShapeMismatch) as e:
        res.correct = False
        return fail(st, e, "timing")
    finally:
        torch.set_num_threads(threads)
    if tm is None:
        return False
    timing.record(res, tm)
    res.extra["timer"] = "candidate sandbox, baseline sandbox" if st.workers["baseline"].layers else \
        "candidate sandbox, baseline worker (trusted, not sandboxed)"
    res.extra["max_calls"] = st.max_calls
    res.extra["sandbox_hold"] = st.workers["candidate"].hold
    if math.isfinite(st.request_fixed[0]):
        res.extra["request_fixed_s"] = st.request_fixed[0]
    return True


def _time_alone(st: Any, base_samples: list[float] | None) -> bool:
    """The candidate's worker timed alone (benchmark/judge/timing.py alone_timing), each sample's drawn call
    checked against the task's model: the root of a slow task (its samples become the baseline's) or a
    later evaluation against the root's samples (issue 44)."""
    res, cfg = st.res, st.cfg
    rng = random.Random(SYSRAND.getrandbits(64))
    st.request_fixed = fixed = [math.inf]
    arm = _Arm(st, st.workers["candidate"], None, "candidate", rng, None, fixed)
    cand = timing.Timer(arm.sample, "sandbox", warm=True)
    try:
        tm = timing.alone_timing(cand, base_samples, cfg)
    except timing.StaleOutput as e:
        res.correct = False
        res.error_kind, res.error = "stale_output", str(e)
        return False
    except ProcessStateChanged as e:
        res.correct = False
        res.error_kind, res.error = "process_state", f"during the timing: {e}"
        return False
    except (control.WorkerDied, control.WorkerError, control.ShapeMismatch) as e:
        res.correct = False
        return fail(st, e, "timing")
    timing.record(res, tm)
    res.extra["timer"] = "candidate sandbox, timed alone"
    res.extra["max_calls"] = st.max_calls
    res.extra["sandbox_hold"] = st.workers["candidate"].hold
    return True
