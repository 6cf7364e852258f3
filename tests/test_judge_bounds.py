"""Issue 43's smaller gaps of the judge, each closed at its mechanism: a worker's shared mappings are
bounded by the memory cap (RLIMIT_AS, not only RLIMIT_DATA), a worker that stops answering is killed at
its request's deadline long before `timeout_s`, and what the evaluation child's descendants started
(in its group or out of it) is gone once the evaluation returns. Kernels as tests/test_sandbox.py
writes them: L2 C++ for the tiny task, the static checks off so the boundary alone is tested."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from tiny_l2 import COMPUTE, HEAD, l2_candidate
from tiny_l2 import sandbox_evaluator as _ev

from benchmark.task import load_task_file
from leka import ir

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox is Linux-only")

DATA = Path(__file__).parent / "data"
# shared anonymous memory (not in RLIMIT_DATA) past the 2 GiB cap, every page touched; a refused
# mapping is written all the same (MAP_FAILED: a fault)
SHARED_MAP = HEAD + COMPUTE + r"""
#include <sys/mman.h>
extern "C" int32_t ENTRY(float* x, float* w, float* out) {
  size_t n = (size_t)3 << 30;
  char* p = (char*)mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  for (size_t i = 0; i < n; i += 4096) p[i] = 1;
  compute(x, w, out);
  return 0;
}
"""
# honest for its first AFTER calls, then never returns
SPINS = HEAD + COMPUTE + r"""
static long* const calls = new long(0);
extern "C" int32_t ENTRY(float* x, float* w, float* out) {
  if (++*calls > AFTER) { volatile int spin = 1; while (spin) {} }
  compute(x, w, out);
  return 0;
}
"""


@pytest.fixture(scope="module")
def task():
    return load_task_file(DATA / "tiny_task.py")


@pytest.fixture(scope="module")
def root(task):
    return ir.import_root(task)


def test_shared_memory_past_the_cap_is_refused_in_the_worker(task, root, tmp_path):
    t0 = time.monotonic()
    res = _ev(tmp_path).evaluate(task, l2_candidate(task, root, SHARED_MAP, "gap_shared_map"), time_it=False)
    took = time.monotonic() - t0
    assert res.error_kind in ("crash", "oom") and not res.correct, (res.error_kind, res.error)
    # the judge's own verdict (its worker died at the refused mapping), not the runner's poll killing
    # the evaluation once its resident memory had passed the cap
    assert "resident memory" not in res.error and not res.extra.get("killed_in"), (res.error, res.extra)
    assert "seed" in res.error and (res.peak_rss_bytes or 0) < 2 * 2**30, (res.error, res.peak_rss_bytes)
    assert took < 100, took


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


@pytest.mark.parametrize(("after", "step"), [(0, "check"), (2, "check"), (40, "time_step")])
def test_a_worker_that_stops_answering_ends_the_evaluation_early(task, root, tmp_path, after, step):
    # after 0 calls: its very first request (poison + seed 0) never answers, before any call of it was
    # measured (sandbox_first_request_s bounds it); after 2: the first request answered, seed 1's never
    # is; after 40: the checks pass, the timing's warm-up or a sample never ends
    ev = _ev(tmp_path, sandbox_request_floor_s=3.0, sandbox_first_request_s=3.0, timing_budget_s=3.0)
    t0 = time.monotonic()
    res = ev.evaluate(task, l2_candidate(task, root, SPINS, f"gap_spins{after}", reps=20, AFTER=str(after)))
    took = time.monotonic() - t0
    assert res.error_kind == "timeout" and not res.correct, (res.error_kind, res.error)
    assert f"during the {step} step" in res.error and "no answer" in res.error, res.error
    # the worker's own deadline (floor 3 s + 3 s, or + 10 x its calls' time), not the evaluation's 120 s
    # timeout_s: the wall clock of the whole evaluation (builds included) is load-sensitive, this is not
    within = float(res.error.split(" within ")[1].split(" s")[0])
    assert within < 20, res.error
    assert took < 120, (took, res.error)
    pid = int(res.error.split("(pid ")[1].split(")")[0])
    assert _gone(pid), f"the worker {pid} outlived its evaluation"


HELPER = r'''
import os, sys, time
from pathlib import Path


def _sleeper(log, how):
    if how != "group":
        os.setsid()
    with open(log, "a") as f:
        f.write(f"{os.getpid()} {how}\n")
    time.sleep(600)
    os._exit(0)


def job(job, out_path):
    log = job["log"]
    for how in ("group", "setsid"):
        if os.fork() == 0:
            _sleeper(log, how)
    mid = os.fork()
    if mid == 0:  # a double fork: its child is orphaned at once
        if os.fork() == 0:
            _sleeper(log, "double fork")
        os._exit(0)
    os.waitpid(mid, 0)
    while len(Path(log).read_text().splitlines()) < 3:
        time.sleep(0.05)
    if job.get("hang"):
        time.sleep(600)
    from leka.core.types import EvalResult
    res = EvalResult(task="reap", backend="llvm")
    Path(out_path).write_text(__import__("json").dumps({"result": res.model_dump(mode="json"), "profile": None}))
'''

DRIVER = r'''
import json, multiprocessing as mp, sys
from benchmark.judge import runner
runner._CTX = mp.get_context("forkserver")
runner._CTX.set_forkserver_preload(["reap_helper"])
job = {"evaluator": {"fresh_seed": False, "seeds": [0]}, "baseline": None, "task_id": "reap", "backend": "llvm",
       "levels": [], "log": sys.argv[1], "hang": sys.argv[2] == "hang"}
fut = runner.LocalFuture(job, timeout_s=float(sys.argv[3]), memory_cap_gb=None, entry="reap_helper:job",
                         refs_child=False)
res, _ = fut.result()
print(json.dumps({"error_kind": res.error_kind, "error": res.error}))
'''


@pytest.mark.parametrize("ends", ["normally", "killed"])
def test_what_the_evaluation_started_is_gone_when_it_returns(tmp_path, ends):
    # a helper entry (LocalFuture's `entry`, as the RPC runner's) runs in the evaluation child in place of
    # the job's steps: it leaves a sleeper in its group, one in a session of its own and one double-forked
    # (orphaned), then returns a result, or hangs until the runner's timeout kills it
    (tmp_path / "reap_helper.py").write_text(HELPER)
    log = tmp_path / "pids"
    log.touch()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(Path(__file__).parents[1]),
                                                        *filter(None, [os.environ.get("PYTHONPATH")])])}
    hang = ends == "killed"
    # output to files, not pipes: a sleeper left behind holds what it inherited open
    with open(tmp_path / "out", "w") as o, open(tmp_path / "err", "w") as e:
        code = subprocess.run([sys.executable, "-c", DRIVER, str(log), "hang" if hang else "-", "4" if hang else "60"],
                              stdout=o, stderr=e, env=env, timeout=120, cwd=Path(__file__).parents[1]).returncode
    pids = {int(ln.split()[0]): ln.split(maxsplit=1)[1] for ln in log.read_text().splitlines()}
    try:
        assert code == 0, (tmp_path / "err").read_text()[-3000:]
        got = json.loads((tmp_path / "out").read_text().strip().splitlines()[-1])
        assert got["error_kind"] == ("timeout" if hang else None), got
        assert len(pids) == 3, pids
        end = time.monotonic() + 5
        while time.monotonic() < end and not all(_gone(p) for p in pids):
            time.sleep(0.1)
        left = {p: how for p, how in pids.items() if not _gone(p)}
        assert not left, f"left running after the evaluation {ends}: {left}"
    finally:
        for p in pids:  # only what this test started, by pid
            try:
                os.kill(p, 9)
            except (ProcessLookupError, PermissionError):
                pass
