"""Issue 26, item 8: the worker dies with its judge. `leka bench eval` and `leka run`, stopped
mid-evaluation by SIGKILL, SIGTERM or SIGINT, leave no process behind: not the forkserver, not the
evaluation child it forked (its own session), not the reference child."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

DATA = Path(__file__).parent / "data"
TASK = str(DATA / "tiny_task.py")


def _tree(pid: int) -> dict[int, float]:
    """{pid: create_time} of the process's descendants (a pid alone could be reused)."""
    try:
        kids = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return {}
    out = {}
    for k in kids:
        try:
            out[k.pid] = k.create_time()
        except psutil.NoSuchProcess:
            pass
    return out


def _alive(procs: dict[int, float]) -> list[str]:
    left = []
    for pid, created in procs.items():
        try:
            p = psutil.Process(pid)
            if p.create_time() == created and p.status() != psutil.STATUS_ZOMBIE:
                left.append(f"{pid} {' '.join(p.cmdline())[:120]}")
        except psutil.NoSuchProcess:
            pass
    return left


def _evaluating(pid: int) -> bool:
    """An evaluation child exists: a grandchild of leka (forked by the forkserver, leka's child)."""
    try:
        return any(c.children() for c in psutil.Process(pid).children())
    except psutil.NoSuchProcess:
        return False


def _stacks(pid: int) -> str:
    """Where leka and its children are (py-spy's dump of each Python stack, else their kernel wait
    channel): a run that never forks its evaluation child is a hang this test must explain."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    out = []
    for q in [pid, *_tree(pid)]:
        try:
            pr = psutil.Process(q)
            head = f"--- {q} {pr.status()} wchan={Path(f'/proc/{q}/wchan').read_text()} {' '.join(pr.cmdline())[:100]}"
        except (psutil.Error, OSError):
            continue
        try:
            dump = subprocess.run([spy, "dump", "--pid", str(q)], capture_output=True, text=True, timeout=30).stdout
        except (OSError, subprocess.TimeoutExpired) as e:
            dump = f"(no py-spy dump: {e})"
        out.append(f"{head}\n{dump[-3000:]}")
    return "\n".join(out)


def _stop_mid_evaluation(args: list[str], sig: int, tmp_path: Path) -> None:
    # leka's stderr kept (its progress, a forkserver it had to replace) for a failure's message
    err = tmp_path / "leka.stderr"
    with open(err, "wb") as f:
        p = subprocess.Popen([sys.executable, "-m", "leka.cli", *args], cwd=tmp_path,
                             stdout=subprocess.DEVNULL, stderr=f, start_new_session=True)
    seen: dict[int, float] = {}
    try:
        # monotonic: a CI host's wall clock can step forward by minutes (NTP on a fresh VM), which
        # once ended a 240 s wait on time.time() seconds after leka started
        t0, w0 = time.monotonic(), time.time()
        while time.monotonic() - t0 < 240 and p.poll() is None and not _evaluating(p.pid):
            time.sleep(0.1)
        assert p.poll() is None, (f"leka ended (exit {p.returncode}) before any evaluation child was seen:\n"
                                  f"{err.read_text(errors='replace')[-2000:]}")
        if not _evaluating(p.pid):
            waited = (f"{time.monotonic() - t0:.0f} s monotonic, {time.time() - w0:.0f} s wall clock")
            stacks = _stacks(p.pid)
            raise AssertionError(f"no evaluation child after {waited}; it came while its stacks were taken: "
                                 f"{_evaluating(p.pid)}; where it waits:\n{stacks}\nleka's stderr:\n"
                                 f"{err.read_text(errors='replace')[-2000:]}")
        time.sleep(0.5)  # into the evaluation: the reference child may be up too
        seen = _tree(p.pid)
        os.kill(p.pid, sig)
        # SIGTERM / SIGINT: leka's own cleanup first (children killed, joined), so more time on a busy machine
        end = time.monotonic() + (10 if sig == signal.SIGKILL else 20)
        while time.monotonic() < end and (_alive(seen) or p.poll() is None):
            time.sleep(0.2)
        assert p.poll() is not None, f"leka did not stop on signal {sig}"
        left = _alive(seen)
        assert not left, f"left running after signal {sig} to leka: {left}"
    finally:
        for pid in [p.pid, *seen]:
            try:
                os.kill(pid, signal.SIGKILL)  # only what this test started (recorded by pid)
            except (ProcessLookupError, PermissionError):
                pass
        p.wait(10)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
def test_bench_eval_leaves_nothing_behind(sig, tmp_path):
    _stop_mid_evaluation(["bench", "eval", TASK, "--set", "evaluator.timing_budget_s=30",
                          "--set", f"baseline.cache_dir={tmp_path / 'cache'}"], sig, tmp_path)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_run_leaves_nothing_behind(sig, tmp_path):
    _stop_mid_evaluation(["run", "--task", TASK, "--budget", "1m", "--out", str(tmp_path / "out"),
                          "--set", "evaluator.timing_budget_s=30",
                          "--set", f"baseline.cache_dir={tmp_path / 'cache'}"], sig, tmp_path)


_HANG = '''
import sys, time
from benchmark.judge import runner
import multiprocessing as mp
ctx = mp.get_context("forkserver")
ctx.set_forkserver_preload(["hang_mod"])
p = ctx.Process(target=time.sleep, args=(0,))
try:
    runner._start(p)
except RuntimeError as e:
    print("raised:", e)
    sys.exit(3)
p.join(30)
print("exit", p.exitcode)
'''


@pytest.mark.parametrize("hangs", ["once", "always"])
def test_a_hung_forkserver_is_replaced(hangs, tmp_path):
    """The forkserver's preload hangs (an import of torch or TVM that never returns): the bounded
    start kills it and forks through a fresh one; a preload that always hangs is a clear error, not
    a leka waiting for good. No forkserver is left behind either way."""
    flag = tmp_path / "hung"
    (tmp_path / "hang_mod.py").write_text(
        "import os, time\n"
        f"if {hangs == 'always'} or not os.path.exists({str(flag)!r}):\n"
        f"    open({str(flag)!r}, 'a').write(str(os.getpid()) + '\\n')\n"
        "    time.sleep(600)\n")
    # PYTHONPATH, as the forkserver of Python 3.11 does not take its parent's sys.path
    env = {**os.environ, "LEKA_FORKSERVER_START_S": "3",
           "PYTHONPATH": os.pathsep.join([str(tmp_path), *filter(None, [os.environ.get("PYTHONPATH")])])}
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-c", _HANG], capture_output=True, text=True, env=env,
                       timeout=120, cwd=Path(__file__).parent.parent)
    took = time.monotonic() - t0
    hung = [int(x) for x in flag.read_text().split()]
    if hangs == "once":
        assert p.returncode == 0 and "exit 0" in p.stdout, p.stdout + p.stderr
        assert "starting a new one" in p.stderr and len(hung) == 1
    else:
        assert p.returncode == 3 and "forked nothing in 3 s, twice" in p.stdout, p.stdout + p.stderr
        assert "giving up" in p.stderr and len(hung) == 2 and took < 60
    time.sleep(0.5)
    assert not [q for q in hung if psutil.pid_exists(q) and psutil.Process(q).status() != psutil.STATUS_ZOMBIE]
