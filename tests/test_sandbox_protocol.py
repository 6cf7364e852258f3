"""Issue 43, item 2: nothing a kernel can read tells it which call is checked or timed. Each attack
measured on the protocol before, written as an L2 C++ kernel for the tiny task (tests/tiny_l2.py) with
the static check off: it is rejected, or gains at most 1.2x over the honest kernel of the same task.

- FRAMES learns where the worker's loop keeps the request's call count (a word of the stack above its
  frame that always equals the count a request turned out to have), then computes only the last calls,
  those a ring of kept outputs held: every call's outputs are kept now, and the checked one drawn among
  all of them after the answer.
- FORGES answers the request on the control socket itself after three calls and skips the rest: the
  answer does not carry the request's nonce, and the loop's progress, read by the judge, would not say
  the calls ran.
- SHARES keeps, per request, the 64-byte blocks of input it has read (by address) and skips the slow
  part of each block an earlier call read: windows no longer overlap within a request.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from tiny_l2 import COMPUTE, HEAD, HONEST, l2_candidate
from tiny_l2 import sandbox_evaluator as _ev

from benchmark.task import load_task_file
from leka import ir

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox is Linux-only")

DATA = Path(__file__).parent / "data"
CLOCK = r"""
#include <chrono>
static long long now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::steady_clock::now().time_since_epoch()).count();
}
"""
# a call more than 50 us after the last one's end starts a request (the worker is stopped between them)
FRAMES = HEAD + CLOCK + COMPUTE + r"""
constexpr int SLOTS = 1024;
struct Frames { long in_req, reqs, slot; long long last_ns; long snap[SLOTS]; int votes[SLOTS]; };
static Frames* const F = new Frames();
static void learn() {  // a vote for each word that held, at a request's first call, its call count
  ++F->reqs;
  int best = 0;
  for (int s = 0; s < SLOTS; ++s) {
    if (F->snap[s] == F->in_req) ++F->votes[s];
    if (F->votes[s] > F->votes[best]) best = s;
  }
  F->slot = F->reqs >= 4 && F->votes[best] * 10 >= F->reqs * 7 ? best + 1 : 0;
}
extern "C" int32_t ENTRY(float* x, float* w, float* out) {
  const long* fp = static_cast<const long*>(__builtin_frame_address(0));
  if (now_ns() - F->last_ns > 50000) {
    if (F->in_req > 3) learn();
    F->in_req = 0;
  }
  if (F->in_req == 0)
    for (int s = 0; s < SLOTS; ++s) F->snap[s] = fp[s];
  const long i = F->in_req++;
  const long n = F->slot ? fp[F->slot - 1] : -1;
  if (n <= 0 || i + 3 >= n) compute(x, w, out);  // only the calls a ring of 3 would keep
  F->last_ns = now_ns();
  return 0;
}
"""
FORGES = HEAD + CLOCK + COMPUTE + r"""
#include <fcntl.h>
#include <unistd.h>
struct Forge { long in_req; long long last_ns; };
static Forge* const G = new Forge{0, 0};
static void answer_early() {  // on every descriptor it has (fstat is refused: glibc's is newfstatat)
  static const char body[] = "{\"got\":36,\"ns\":1}";
  const uint64_t n = sizeof(body) - 1;
  for (int fd = 3; fd < 256; ++fd)
    if (fcntl(fd, F_GETFD) >= 0 && write(fd, &n, sizeof n) == sizeof n) (void)!write(fd, body, n);
}
extern "C" int32_t ENTRY(float* x, float* w, float* out) {
  if (now_ns() - G->last_ns > 50000) G->in_req = 0;
  const long i = G->in_req++;
  if (i < 3) compute(x, w, out);
  else if (i == 3) answer_early();  // the judge's clock stops here; the other calls compute nothing
  G->last_ns = now_ns();
  return 0;
}
"""
SHARES = HEAD + "#include <unordered_set>\n" + CLOCK + r"""
struct Cover { long long last_ns; std::unordered_set<uintptr_t>* seen; };
static Cover* const C = new Cover{0, new std::unordered_set<uintptr_t>()};
extern "C" int32_t ENTRY(float* x, float* w, float* out) {
  if (now_ns() - C->last_ns > 50000) C->seen->clear();  // a new request: new contents
  bool shared = false;
  for (int b = 0; b < 16; ++b) {  // the slow part per 64-byte block, once per block a request reads
    if (!C->seen->insert(reinterpret_cast<uintptr_t>(x + 16 * b)).second) {
      shared = true;
      continue;
    }
    volatile float sink = 0.f;
    for (int r = 0; r < REPS; ++r)
      for (int i = 0; i < 16; ++i) sink = sink + x[16 * b + i] * 1e-30f;
  }
  for (int i = 0; i < 256; ++i) out[i] = (x[i] > 0.f ? x[i] : 0.f) * w[i % 64] + x[i];
  if (shared) out[0] = 1e30f;  // SHARED: a call that shared work marks its output (the test's probe)
  C->last_ns = now_ns();
  return 0;
}
"""


@pytest.fixture(scope="module")
def task():
    return load_task_file(DATA / "tiny_task.py")


@pytest.fixture(scope="module")
def root(task):
    return ir.import_root(task)


def test_a_kernel_that_reads_the_loop_for_the_call_count_gains_nothing(task, root, tmp_path):
    # on the protocol before (a ring of 3), measured side by side on a loaded machine: 17x the honest
    # kernel's speedup (0.158x against 0.0093x); now it finds the count and is caught (stale_output)
    ev = _ev(tmp_path)
    honest = ev.evaluate(task, l2_candidate(task, root, HONEST, "proto_honest", reps=200))
    assert honest.correct and honest.speedup, (honest.error_kind, honest.error)
    assert honest.extra["sandbox_hold"] == 0, honest.extra
    res = ev.evaluate(task, l2_candidate(task, root, FRAMES, "proto_frames", reps=200))
    if res.correct:  # it never found the count: it computed every call
        assert res.speedup <= 1.2 * honest.speedup, (res.speedup, honest.speedup)
    else:
        assert res.error_kind in ("stale_output", "mismatch"), (res.error_kind, res.error)


def test_no_two_calls_of_a_request_share_input_bytes(task, root, tmp_path):
    # SHARES marks its output wherever it skipped a block an earlier call of its request had read, so
    # that it passes only where it did every block's work (no gain over HONEST by construction). On the
    # protocol before, windows 64 bytes apart, the probe fired (stale_output, default settings), and
    # unmarked, with 4 KiB of window offsets, it read 7.8x the honest kernel's speedup
    res = _ev(tmp_path).evaluate(task, l2_candidate(task, root, SHARES, "proto_shares", reps=50))
    assert res.correct and res.speedup, (res.error_kind, res.error)


def test_an_answer_the_kernel_sends_itself_is_refused(task, root, tmp_path):
    res = _ev(tmp_path).evaluate(task, l2_candidate(task, root, FORGES, "proto_forges", reps=200))
    assert not res.correct and res.error_kind == "crash", (res.error_kind, res.error)
    assert "out of protocol" in res.error, res.error


def test_the_judge_reads_the_loop_progress_after_the_answer():
    """Without TVM: a worker whose `run` answers on its socket itself, with the right nonce, after one
    call of two, then stalls: its loop's progress does not say the calls ran, so the answer is out of
    protocol; and one without the nonce is refused too."""
    import ctypes
    import os
    import struct
    import time

    import numpy as np

    from benchmark.judge.sandbox import control as sandbox

    def setup(buf, pool):
        def run(n, offs_addr, res_addr, cap, progress_addr, nonce):
            prog = np.ctypeslib.as_array((ctypes.c_int64 * 2).from_address(progress_addr))
            prog[:] = (nonce, 1)
            body = f'{{"got":{sandbox.RECORD * n},"ns":1,"nonce":{nonce if n > 1 else 7}}}'.encode()
            for fd in range(3, 256):  # whichever is the control socket (fstat is refused here)
                try:
                    os.write(fd, struct.pack("<Q", len(body)) + body)
                except OSError:
                    pass
            time.sleep(2)  # the judge reads the progress while this worker is stopped
            return 0

        return run, None

    pool = sandbox.Pool([sandbox.InputSpec((16,), "float32")], 4, max_calls=4)
    w = sandbox.start(sandbox.Served(setup=setup, n_outputs=1, threads=1, sandbox=True), pool, "candidate")
    try:
        pool.map_rw()
        with pytest.raises(sandbox.WorkerDied, match="progress"):
            w.run([[0], [pool.offset(0, 1, 0)]])
    finally:
        w.close()
    w = sandbox.start(sandbox.Served(setup=setup, n_outputs=1, threads=1, sandbox=True), pool, "candidate")
    try:
        with pytest.raises(sandbox.WorkerDied, match="another request"):
            w.run([[0]])
    finally:
        w.close()
        pool.close()
