"""The sandboxed worker's thread placement (benchmark/judge/sandbox/worker.py place_threads): its main thread on
a core no pinned pool thread holds, the free threads on the other cores. Run in a child process, since
it changes the caller's affinity."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, os, threading, time
from benchmark.judge.sandbox.worker import place_threads
cpus = sorted(os.sched_getaffinity(0))
ready, stop = threading.Barrier(3), threading.Event()
ids = {}
def pinned():
    os.sched_setaffinity(0, {cpus[0]})  # as TVM's pool pins its worker 1
    ids["pinned"] = threading.get_native_id(); ready.wait(); stop.wait()
def free():
    ids["free"] = threading.get_native_id(); ready.wait(); stop.wait()
ts = [threading.Thread(target=pinned), threading.Thread(target=free)]
[t.start() for t in ts]; ready.wait()
placed = place_threads()
out = {"placed": placed, "ids": ids, "main": sorted(os.sched_getaffinity(0)),
       "free_now": sorted(os.sched_getaffinity(ids["free"])), "cpus": cpus}
stop.set(); [t.join() for t in ts]
print(json.dumps(out))
"""


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one core: nothing to keep apart")
def test_the_main_thread_leaves_the_pinned_pool_threads_core():
    r = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    first = out["cpus"][0]
    assert out["main"] != [first] and len(out["main"]) == 1, out  # off the pinned thread's core
    assert out["free_now"] != out["main"] and len(out["free_now"]) == 1, out  # the free one apart from main
    assert out["placed"][str(out["ids"]["pinned"])] == [first], out  # the pinned one left where it was
