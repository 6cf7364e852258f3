"""Where an evaluation job runs, in the manner of MetaSchedule's builder / runner split
(`Runner.create(kind)`, `Runner.submit(job) -> EvalFuture`, `future.done()`, `future.result()`).

A job is the JSON-able dict `Evaluator` makes (task path, candidate, evaluator config, baseline, ...);
running it means the steps of benchmark/judge/job.py (prepare -> build -> check -> profile/export ->
time) somewhere, and its answer is `(EvalResult, profile dict or None)`. Failures are data there too:
a runner never raises for a candidate's fault.

`Runner` and `EvalFuture` are protocols of `leka.core.protocols`; `create(kind, ...)` makes one of
the table `RUNNERS`:

- `local` (`LocalRunner`): a child process forked from a forkserver that has torch and TVM loaded,
  running benchmark/judge/job.py's steps, with a wall-clock timeout and a memory cap over the child's
  whole process tree (crash / hang / OOM become results). Once the child has passed its memory check
  (it writes `OUT.prepared`), a second child from the same forkserver computes the PyTorch references
  into a folder (benchmark/judge/refs.py), which the first reads memory-mapped seed by seed; the cap covers
  both. Without a configured cap the child's derived one (benchmark/judge/memory.py) replaces this
  machine's share once it is known.
- `rpc` (`RPCRunner`): a board behind the TVM RPC tracker (`device.url = rpc://...`, e.g. an OpenCL
  board). Its child, watched the same way (timeout, memory cap), runs
  `benchmark.judge.remote_job.run_remote_job`: build and references here, check and timing on the board.

`Evaluator` creates `rpc` when its device config names a board, else `local`, unless a runner is
passed in (`Evaluator(runner=...)`). Each runner refuses a job meant for the other kind.

No tvm import here.
"""

from __future__ import annotations

import importlib
import json
import multiprocessing as mp
import os
import random
import shutil
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, ClassVar

import psutil

from benchmark.judge import memory, refs, slots
from benchmark.judge.proc import become_subreaper, die_with_parent, kill_descendants, leave_forkserver
from leka.core.protocols import EvalFuture, Runner
from leka.core.types import EvalResult

_CTX: Any = None


def _context():
    global _CTX
    if _CTX is None:
        # CUDA must be first touched in each child, never in the forkserver that forks them: tvm_ffi's
        # import asks torch.cuda.is_available(), which marks torch's CUDA as unusable after a fork
        # (children then fail "Cannot re-initialize CUDA in forked subprocess"); the NVML check does not
        os.environ.setdefault("TVM_FFI_DISABLE_TORCH_C_DLPACK", "1")
        os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")
        _CTX = mp.get_context("forkserver")
        _CTX.set_forkserver_preload(["torch", "tvm", "tvm.relax", "tvm.relax.frontend.torch", "leka.ir",
                                     "benchmark.judge.job", "benchmark.baselines"])
    return _CTX


# how long one Process.start() may wait for the forkserver (LEKA_FORKSERVER_START_S); the second try
# gets three times as long
_START_S = float(os.environ.get("LEKA_FORKSERVER_START_S", "90"))


def _start(proc: Any) -> None:
    """`proc.start()` through the forkserver, bounded. start() blocks with no timeout until the
    forkserver has imported its preload list and forked; a forkserver stuck there (a hung import of
    torch or TVM, a wedged filesystem) would hang leka for good. Past the limit it is killed, which ends
    the blocked start() with EOF, and started afresh once; a second hang raises RuntimeError."""
    from multiprocessing import forkserver

    fs = forkserver._forkserver  # noqa: SLF001 - the stdlib keeps the server's pid there
    for attempt, limit in enumerate((_START_S, 3 * _START_S)):
        fired = threading.Event()

        def stuck(fired: threading.Event = fired, limit: float = limit, last: bool = attempt > 0) -> None:
            pid = fs._forkserver_pid
            if pid:
                fired.set()
                print(f"leka: the evaluation forkserver {pid} forked nothing in {limit:.0f} s; killed "
                      f"({'giving up' if last else 'starting a new one'})", file=sys.stderr)
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass

        timer = threading.Timer(limit, stuck)
        timer.daemon = True
        timer.start()
        try:
            proc.start()
            return
        except (EOFError, OSError):
            if not fired.is_set():
                raise
        finally:
            timer.cancel()
        # ensure_running() restarts a server only once its waitpid sees it dead: wait for the zombie
        # (not reaping it: that waitpid would then fail)
        end = time.monotonic() + 10
        while time.monotonic() < end:
            try:
                if psutil.Process(fs._forkserver_pid).status() == psutil.STATUS_ZOMBIE:
                    break
            except (psutil.Error, TypeError, ValueError):
                break
            time.sleep(0.05)
    raise RuntimeError(f"the evaluation forkserver forked nothing in {_START_S:.0f} s, twice "
                       "(its preload of torch and TVM hangs: see `python -c 'import torch, tvm'`)")


def _child(job: dict[str, Any], out_path: str, entry: str) -> None:
    # the forkserver exits when leka does (EOF on its alive pipe, which this child must not hold open),
    # and this child with it
    leave_forkserver()
    die_with_parent()
    os.setsid()  # own process group: a timeout kills whatever the candidate spawned too
    # and what left the group (setsid, a double fork) is orphaned to this process, which kills all of it
    # when the job ends, however it ends (issue 43: a normal end killed nothing)
    become_subreaper()
    try:
        _run_entry(job, out_path, entry)
    finally:
        kill_descendants()


def _run_entry(job: dict[str, Any], out_path: str, entry: str) -> None:
    import warnings

    warnings.filterwarnings("ignore", category=FutureWarning)  # torch.export's internal deprecations
    # imported here, in the child: the parent (and its forkserver's preload list) decides what is loaded
    from leka.core.levels import load_extensions

    try:
        load_extensions(job.get("levels") or [])  # levels the parent registered at run time
    except Exception as e:  # noqa: BLE001 - the job's fault, answered as a result in one line
        res = EvalResult(task=job.get("task_id", "?"), backend=job.get("backend", "llvm"), error_kind="bad_input",
                         error=f"the evaluation process cannot load a registered level: {type(e).__name__}: {e}")
        Path(out_path).write_text(json.dumps({"result": res.model_dump(mode="json"), "profile": None}))
        return
    module, func = entry.split(":")
    getattr(importlib.import_module(module), func)(job, out_path)


def _refs_child(job: dict[str, Any], seeds: list[int], refs_dir: str) -> None:
    leave_forkserver()
    die_with_parent()
    os.setsid()
    import torch

    torch.set_num_threads(job.get("threads", 2))
    refs.compute(job["task_path"], seeds, refs_dir)


# A descendant's USS walks its page tables (/proc/PID/smaps: ~14 ms for a process with torch and TVM
# loaded, smaps_rollup as slow). Read on every 50-ms poll for two sandboxed workers and the reference
# child, it kept the watching process busy for most of a core, on the 2 cores the evaluation was timing
# on (commit b5b7b0c; experiments/results/bench_eval_integrity.md). So descendants are read at most every USS_EVERY_S:
# a sandboxed worker cannot outgrow the cap meanwhile (its RLIMIT_DATA, and on the CPU RLIMIT_AS), the
# child's own RSS is read every poll, and the reference child is trusted code.
USS_EVERY_S = 1.0


def _at_most_every(cache: dict[str, float], read) -> int:
    """`read()`, or its value from `cache` when that is under USS_EVERY_S old."""
    now = time.perf_counter()
    if now - cache.get("t", -1e9) >= USS_EVERY_S:
        cache["t"], cache["v"] = now, read()
    return int(cache["v"])


def _tree_rss(proc: psutil.Process, cache: dict[str, float] | None = None,
              seen: dict[int, float] | None = None) -> int:
    """The evaluation's resident memory: the child's RSS plus what each descendant holds alone (USS).
    Its sandboxed workers are forks of it: their RSS would count the pages they share with it again.
    With `cache`, the descendants' sum is re-read only every USS_EVERY_S; `seen` collects them
    ({pid: create_time}), for `_kill_seen`."""
    try:
        total = proc.memory_info().rss
    except psutil.Error:
        return 0

    def uss() -> int:
        kids = proc.children(recursive=True)
        if seen is not None:
            for k in kids:
                try:
                    seen.setdefault(k.pid, k.create_time())
                except psutil.Error:
                    pass
        return sum(_unique_bytes(p) for p in kids)

    return total + (uss() if cache is None else _at_most_every(cache, uss))


def _unique_bytes(proc: psutil.Process) -> int:
    """Memory only this process holds (USS): a child of the same forkserver shares the loaded torch and
    TVM with the evaluation child, which its RSS would count twice."""
    try:
        return proc.memory_full_info().uss
    except psutil.Error:
        return 0


def _kill_seen(seen: dict[int, float]) -> None:
    """Kill what the polls saw under the evaluation child and still runs (the create time rules out a
    reused pid): the child's own `kill_descendants` does not run where it died abruptly (a crash), and
    its orphans then went to init."""
    for pid, created in seen.items():
        try:
            p = psutil.Process(pid)
            if p.create_time() == created:
                p.kill()
        except psutil.Error:
            pass


def _kill_group(pid: int) -> None:
    try:  # stopped first, so that it forks nothing new while what is under it is killed
        os.kill(pid, signal.SIGSTOP)
    except (ProcessLookupError, PermissionError):
        pass
    kill_descendants(pid)  # those that left its group too
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


class LocalFuture:
    """A job in a forked child; `result()` watches it (timeout, memory cap) and reads its answer."""

    def __init__(self, job: dict[str, Any], timeout_s: float, memory_cap_gb: float | None, measure_slots: int = 0,
                 entry: str = "benchmark.judge.job:run_job", refs_child: bool = True):
        self.timeout_s, self.cap_gb = timeout_s, memory_cap_gb
        self.cap, self.cap_where = memory.cap_bytes(memory_cap_gb)  # the child's own replaces it when derived
        job = {**job, "memory_cap_gb": memory_cap_gb, "slot_dir": str(slots.slot_dir(job.get("backend", "llvm")))}
        if job["evaluator"].get("fresh_seed", True) and "fresh_seed" not in job:
            # drawn here, as both children need it: a seed nobody knew before this evaluation
            job["fresh_seed"] = random.SystemRandom().randrange(10**6, 2**31 - 8000)
        self.refs_dir: str | None = None
        if refs_child:  # else the job's child computes its references itself (an RPC board's)
            self.refs_dir = job["refs_dir"] = tempfile.mkdtemp(prefix="leka-refs-")
        self.job = job
        self.refs_proc: Any = None
        fd, self.out_path = tempfile.mkstemp(prefix="leka-eval-", suffix=".json")
        os.close(fd)
        os.unlink(self.out_path)
        # the whole child (build, check, time) holds a measuring slot (benchmark/judge/slots.py); the wait
        # for it is not part of the evaluation's timeout
        self.slot = slots.acquire(measure_slots, job.get("backend", "llvm"))
        self.t0 = time.perf_counter()
        try:
            self.proc = _context().Process(target=_child, args=(job, self.out_path, entry), daemon=False)
            _start(self.proc)
        except BaseException:
            self.slot.release()
            raise
        self._result: tuple[EvalResult, dict | None] | None = None

    def done(self) -> bool:
        return self._result is not None or not self.proc.is_alive()

    def _refs_step(self) -> None:
        """Start the reference child once the evaluation child has passed its memory check; report its
        death without references to the evaluation child (which waits for them)."""
        if self.refs_dir is None:
            return
        if self.refs_proc is None:
            prepared = os.path.exists(self.out_path + ".prepared")
            if prepared:
                try:
                    rec = json.loads(open(self.out_path + ".prepared").read())
                except (OSError, ValueError):
                    return  # being written: next round
                if self.cap_gb is None and rec.get("cap_bytes"):
                    self.cap, self.cap_where = int(rec["cap_bytes"]), rec.get("cap_where", "derived")
                if not rec.get("refs", True):  # the judge computes its references itself (sandboxed path)
                    shutil.rmtree(self.refs_dir, ignore_errors=True)
                    self.refs_dir = None
                    return
                self.refs_proc = _context().Process(target=_refs_child, args=(self.job, rec["seeds"], self.refs_dir),
                                                    daemon=False)
                _start(self.refs_proc)
            return
        code = self.refs_proc.exitcode
        failed = os.path.join(self.refs_dir, refs.FAILED)
        if code not in (None, 0) and not os.path.exists(failed):
            how = f"killed by signal {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
            with open(failed, "w") as f:
                f.write(f"the reference process died ({how})")

    def _watch(self) -> tuple[str | None, str | None, int]:
        proc, ps = self.proc, psutil.Process(self.proc.pid)
        kill_kind = kill_msg = None
        peak = 0
        uss: dict[str, float] = {}
        refs_uss: dict[str, float] = {}
        seen: dict[int, float] = {}
        try:
            while proc.is_alive():
                proc.join(0.05)
                if time.perf_counter() - self.t0 > self.timeout_s:
                    kill_kind, kill_msg = "timeout", f"no result after {self.timeout_s:g} s (evaluator.timeout_s)"
                    break
                self._refs_step()
                try:
                    rss = _tree_rss(ps, uss, seen)
                    if self.refs_proc is not None and self.refs_proc.is_alive():
                        rss += _at_most_every(refs_uss, lambda: _unique_bytes(psutil.Process(self.refs_proc.pid)))
                except psutil.Error:
                    rss = 0
                peak = max(peak, rss)
                if rss > self.cap:
                    kill_kind, kill_msg = "oom", (f"resident memory {rss / 2**30:.2f} GiB over the cap of "
                                                  f"{self.cap / 2**30:.2f} GiB ({self.cap_where})")
                    break
        except KeyboardInterrupt:
            self._kill_all()
            raise
        finally:
            if kill_kind or proc.is_alive():
                _kill_group(proc.pid)
                proc.join(5)
            _kill_seen(seen)
            self._kill_all()
        return kill_kind, kill_msg, peak

    def _kill_all(self) -> None:
        """The reference child and folder go with the evaluation (also when it ended early)."""
        if self.proc.is_alive():
            _kill_group(self.proc.pid)
        if self.refs_proc is not None:
            if self.refs_proc.is_alive():
                _kill_group(self.refs_proc.pid)
            self.refs_proc.join(5)
        if self.refs_dir is not None:
            shutil.rmtree(self.refs_dir, ignore_errors=True)
        try:
            os.unlink(self.out_path + ".prepared")
        except FileNotFoundError:
            pass

    def result(self) -> tuple[EvalResult, dict | None]:
        if self._result is None:
            self._result = self._collect()
        return self._result

    def _collect(self) -> tuple[EvalResult, dict | None]:
        try:
            res, prof = self._collect_child()
        finally:
            self.slot.release()
        if self.slot.index >= 0:
            res.extra["slot_wait_s"] = round(self.slot.waited_s, 3)
        return res, prof

    def _collect_child(self) -> tuple[EvalResult, dict | None]:
        kill_kind, kill_msg, peak = self._watch()
        wall = time.perf_counter() - self.t0
        job = self.job
        base = {"task": job.get("task_id", "?"), "backend": job.get("backend", "llvm"), "baseline": job["baseline"],
                "wall_s": wall, "seeds": list(job["evaluator"]["seeds"]), "peak_rss_bytes": peak or None}
        p = Path(self.out_path)
        # the child marks that it holds the GPU (benchmark/judge/gpu_timing.py): dying without a result then is
        # a CUDA fault (illegal address, launch failure), and the next evaluation is a fresh child
        on_gpu = Path(self.out_path + ".gpu")
        died_on_gpu = on_gpu.exists()
        on_gpu.unlink(missing_ok=True)
        step = Path(self.out_path + ".step")
        during = step.read_text().strip() if step.exists() else ""
        step.unlink(missing_ok=True)
        if kill_kind:
            p.unlink(missing_ok=True)
            if during:  # where it was: a kill in the timing is not one in the check
                kill_msg = f"{kill_msg}, during the {during} step"
            return EvalResult(**base, error_kind=kill_kind, error=kill_msg, extra={"killed_in": during}), None
        if not p.exists():
            code = self.proc.exitcode
            how = f"killed by signal {signal.Signals(-code).name}" if code is not None and code < 0 else f"exit code {code}"
            if died_on_gpu:
                return EvalResult(**base, error_kind="gpu_fault", error=f"evaluation process died ({how}) while "
                                  "running on the GPU without a result (a CUDA fault: illegal address, launch "
                                  "failure)"), None
            return EvalResult(**base, error_kind="crash", error=f"evaluation process died ({how}) without a result"), None
        payload = json.loads(p.read_text())
        p.unlink()
        res = EvalResult.model_validate(payload["result"])
        res.wall_s = wall
        return res, payload.get("profile")


class _ChildRunner:
    """Each job in a watched child process of this machine; the subclass says what the child runs."""

    kind: ClassVar[str]
    entry: ClassVar[str]  # "module:function" the child calls with (job, out_path)
    refs_child: ClassVar[bool]  # a second child computes the references (benchmark/judge/refs.py)

    def __init__(self, timeout_s: float = 600.0, memory_cap_gb: float | None = None, measure_slots: int = 0):
        self.timeout_s, self.memory_cap_gb, self.measure_slots = timeout_s, memory_cap_gb, measure_slots

    def _refuse(self, job: dict[str, Any]) -> str | None:
        raise NotImplementedError

    def submit(self, job: dict[str, Any]) -> LocalFuture:
        why = self._refuse(job)
        if why:  # a caller's mistake, not a candidate's: it would run the job somewhere else than asked
            raise ValueError(f"the {self.kind} runner cannot run this job: {why}")
        return LocalFuture(job, self.timeout_s, self.memory_cap_gb, self.measure_slots,
                           entry=self.entry, refs_child=self.refs_child)


class LocalRunner(_ChildRunner):
    """Each job on this machine, in a child running benchmark/judge/job.py's steps (the default runner)."""

    kind, entry, refs_child = "local", "benchmark.judge.job:run_job", True

    def _refuse(self, job: dict[str, Any]) -> str | None:
        return f"it is for the device {job['device'].get('url')!r} (use the rpc runner)" if job.get("device") else None


class RPCRunner(_ChildRunner):
    """Each job on a board behind the TVM RPC tracker (`job["device"]`, a DeviceConfig as a dict): its
    local child builds and computes the references, the board checks and times
    (benchmark/judge/remote_job.py)."""

    kind, entry, refs_child = "rpc", "benchmark.judge.remote_job:run_remote_job", False

    def _refuse(self, job: dict[str, Any]) -> str | None:
        return None if job.get("device") else "it names no device (device.url = rpc://HOST:PORT/KEY)"


RUNNERS: dict[str, type[_ChildRunner]] = {r.kind: r for r in (LocalRunner, RPCRunner)}


def create(kind: str = "local", **kwargs: Any) -> Runner:
    """A runner of the table by kind (MetaSchedule's `Runner.create`); kwargs go to its constructor
    (timeout_s, memory_cap_gb, measure_slots)."""
    if kind not in RUNNERS:
        raise ValueError(f"unknown runner kind {kind!r}; one of {sorted(RUNNERS)}")
    return RUNNERS[kind](**kwargs)


__all__ = ["RUNNERS", "EvalFuture", "LocalFuture", "LocalRunner", "RPCRunner", "Runner", "create"]
