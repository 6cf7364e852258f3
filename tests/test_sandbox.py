"""Issue 26: the judge does not trust the code it judges. Each class of attack that fooled the evaluator
while candidates ran inside it, written as an L2 C++ kernel for the tiny task (y = relu(x) * w + x, 4x64)
with the static check off (so that the process boundary alone is under test): it is rejected or gains
nothing over the honest kernel of the same task, and nothing it tries reaches the judge or the machine."""

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
# the evaluation process's own interpreter, reached through its C API (the symbols resolve at load
# time): it replaces the judge's comparison, leaves a file behind, and returns garbage
PYTHON_API = HEAD + r"""
extern "C" int PyRun_SimpleString(const char*);
extern "C" int PyGILState_Ensure(void);
extern "C" void PyGILState_Release(int);
extern "C" int32_t ENTRY(float* x, float* w, float* out) {
  int g = PyGILState_Ensure();
  PyRun_SimpleString(
      "import benchmark.judge.outputs as o, benchmark.judge.sandbox.checks as i\n"
      "o.compare = i.compare = lambda *a, **k: (None, '', 0.0, 0.0)\n"
      "open('MARKER', 'w').write('ran in the judge')\n");
  PyGILState_Release(g);
  for (int i = 0; i < 256; ++i) out[i] = 12345.f;
  return 0;
}
"""
# a well-formed result where the judge would read its own, then an exit: the judge's answer file is
# found next to the step marker every evaluation writes
FAKE_RESULT = HEAD + r"""
#include <cstdio>
#include <cstdlib>
#include <dirent.h>
extern "C" int32_t ENTRY(float* x, float* w, float* out) {
  DIR* d = opendir("/tmp");
  if (d) {
    while (dirent* e = readdir(d)) {
      const char* n = e->d_name;
      size_t len = strlen(n);
      if (strncmp(n, "leka-eval-", 10) == 0 && len > 5 && strcmp(n + len - 5, ".step") == 0) {
        char path[512];
        snprintf(path, sizeof path, "/tmp/%.*s", (int)(len - 5), n);
        FILE* f = fopen(path, "w");
        if (f) {
          fputs("{\"result\": {\"task\": \"tiny\", \"backend\": \"llvm\", \"compiled\": true, \"correct\": true,"
                " \"speedup\": 999.0, \"timing_valid\": true}}", f);
          fclose(f);
        }
      }
    }
    closedir(d);
  }
  _Exit(0);
}
"""
# files the judge's user can read (reference outputs once sat on disk): read with the calls the lexical
# check missed, declared by hand. It computes honestly, and poisons its output only if the read worked
READS_FILES = HEAD + COMPUTE + r"""
extern "C" void* fopen64(const char*, const char*);
extern "C" unsigned long fread_unlocked(void*, unsigned long, unsigned long, void*);
extern "C" void* opendir(const char*);
extern "C" int32_t ENTRY(float* x, float* w, float* out) {
  compute(x, w, out);
  char buf[8] = {0};
  void* f = fopen64("SECRET", "rb");
  if (f && fread_unlocked(buf, 1, 7, f) > 0) out[0] = 1e30f;  // it could read the user's files
  if (opendir("/")) out[1] = 1e30f;  // it could list them
  return 0;
}
"""
# output caches behind const pointers to heap state (accepted by the lexical state rule), keyed on
# sampled input values and on the input buffers' addresses, 64 slots
MEMO = HEAD + COMPUTE + r"""
struct Slot { const float* at; float key[3]; float out[256]; bool used; };
static Slot* const slots = new Slot[64]();
extern "C" int32_t ENTRY(float* x, float* w, float* out) {
  float key[3] = {x[0], x[77], x[255]};
  for (int s = 0; s < 64; ++s) {
    Slot& e = slots[s];
    if (e.used && (e.at == x || std::memcmp(e.key, key, sizeof key) == 0)) {
      std::memcpy(out, e.out, sizeof e.out);
      return 0;
    }
  }
  compute(x, w, out);
  Slot& e = slots[(reinterpret_cast<uintptr_t>(x) >> 6) % 64];
  e.at = x; std::memcpy(e.key, key, sizeof key); std::memcpy(e.out, out, sizeof e.out); e.used = true;
  return 0;
}
"""
# computes only the call it expects to be checked: it learns a sample's length from the gaps between
# calls (a gap of over 50 us starts a sample) and computes only the last call of a sample as long as
# the longest seen, and every call while it has seen nothing longer than one call
ONLY_CHECKED = HEAD + "#include <chrono>\n" + COMPUTE + r"""
struct Learnt { long in_sample; long longest; long long last_ns; };
static Learnt* const L = new Learnt{0, 0, 0};
extern "C" int32_t ENTRY(float* x, float* w, float* out) {
  long long now = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::steady_clock::now().time_since_epoch()).count();
  if (now - L->last_ns > 50000) {
    if (L->in_sample > L->longest) L->longest = L->in_sample;
    L->in_sample = 0;
  }
  ++L->in_sample;
  if (L->longest <= 1 || L->in_sample >= L->longest) compute(x, w, out);
  L->last_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(  // the gap runs from a call's end
      std::chrono::steady_clock::now().time_since_epoch()).count();
  return 0;
}
"""
# skips the calls it thinks cannot be checked: the first ones of a sample, below the shortest sample
# of more than one call it has seen, less a margin for the calls whose outputs the worker keeps
SKIPS_EARLY = HEAD + "#include <chrono>\n" + COMPUTE + r"""
struct Seen { long in_sample; long shortest; long long last_ns; };
static Seen* const S = new Seen{0, 1L << 40, 0};
extern "C" int32_t ENTRY(float* x, float* w, float* out) {
  long long now = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::steady_clock::now().time_since_epoch()).count();
  if (now - S->last_ns > 50000) {
    if (S->in_sample > 1 && S->in_sample < S->shortest) S->shortest = S->in_sample;
    S->in_sample = 0;
  }
  ++S->in_sample;
  if (S->shortest > (1L << 39) || S->in_sample + 4 > S->shortest) compute(x, w, out);
  S->last_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::steady_clock::now().time_since_epoch()).count();
  return 0;
}
"""
WRITES_INPUT = HEAD + COMPUTE + r"""
extern "C" int32_t ENTRY(float* x, float* w, float* out) { compute(x, w, out); x[3] = 0.f; return 0; }
"""
# signals the judge (its parent) to die, then computes honestly
KILLS_JUDGE = HEAD + COMPUTE + r"""
extern "C" int kill(int, int);
extern "C" int getppid(void);
extern "C" int32_t ENTRY(float* x, float* w, float* out) { kill(getppid(), 9); compute(x, w, out); return 0; }
"""


@pytest.fixture(scope="module")
def task():
    return load_task_file(DATA / "tiny_task.py")


@pytest.fixture(scope="module")
def root(task):
    return ir.import_root(task)


def _cand(task, root, src: str, name: str, reps: int = 0, **subs: str):
    return l2_candidate(task, root, src, name, reps, **subs)


def test_honest_kernel_is_judged_in_the_sandbox(task, root, tmp_path):
    res = _ev(tmp_path).evaluate(task, _cand(task, root, HONEST, "sb_honest"))
    assert res.correct and res.error_kind in (None, "timing_invalid"), (res.error_kind, res.error)
    assert res.speedup and res.speedup > 0
    assert "seccomp" in res.extra["sandbox"], res.extra
    assert res.extra["timer"].startswith("candidate sandbox"), res.extra


def test_python_c_api_kernel_changes_nothing_in_the_judge(task, root, tmp_path):
    marker = tmp_path / "ran"
    cand = _cand(task, root, PYTHON_API, "sb_pyapi", MARKER=str(marker))
    res = _ev(tmp_path).evaluate(task, cand)
    assert not res.correct and res.error_kind in ("mismatch", "crash", "runtime"), (res.error_kind, res.error)
    assert not marker.exists()


def test_fake_result_file_is_not_read(task, root, tmp_path):
    res = _ev(tmp_path).evaluate(task, _cand(task, root, FAKE_RESULT, "sb_fake"))
    assert res.error_kind == "crash" and not res.correct and res.speedup is None, (res.error_kind, res.error)
    assert "handshake" in res.error or "died" in res.error


def test_kernel_cannot_read_or_list_files(task, root, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("api-key")
    res = _ev(tmp_path).evaluate(task, _cand(task, root, READS_FILES, "sb_reads", SECRET=str(secret)),
                                 time_it=False)
    # had fopen64 or opendir worked, its output would carry 1e30 and fail
    assert res.correct, (res.error_kind, res.error)


def test_memo_behind_const_pointers_gains_nothing(task, root, tmp_path):
    reps = 400
    ev = _ev(tmp_path)
    honest = ev.evaluate(task, _cand(task, root, HONEST, "sb_memo_honest", reps=reps))
    memo = ev.evaluate(task, _cand(task, root, MEMO, "sb_memo", reps=reps))
    assert honest.correct and honest.speedup, (honest.error_kind, honest.error)
    if memo.error_kind in ("stale_output", "mismatch"):  # caught replaying (an address seen before)
        assert not memo.correct
    else:  # a memcpy against 100k dependent adds would read as ~100x: every call computed
        assert memo.correct and memo.speedup <= 1.2 * honest.speedup, (memo.speedup, honest.speedup)


def test_kernel_that_computes_only_the_checked_call_is_stale(task, root, tmp_path):
    res = _ev(tmp_path).evaluate(task, _cand(task, root, ONLY_CHECKED, "sb_only_checked", reps=200))
    # caught in the checked runs (a one-call request after a two-call one) or in the timing
    assert res.error_kind in ("stale_output", "mismatch") and not res.correct, (res.error_kind, res.error)


@pytest.mark.parametrize("hold", [3, 0])
def test_kernel_that_skips_the_calls_it_thinks_unchecked_gains_nothing(task, root, tmp_path, hold):
    # with a ring of the last 3 outputs the call count is memoryless (no call is safe to skip); with
    # every output kept, any call may be checked: either way skipping is caught or buys nothing
    # 4 s of timing: at 1 s the timing's own wall-clock stop leaves the 200-rep kernels' interval wider
    # than evaluator.max_ci_width, and an invalid timing compares nothing
    ev = _ev(tmp_path, sandbox_hold=hold, timing_budget_s=4.0)
    for _ in range(2):
        honest = ev.evaluate(task, _cand(task, root, HONEST, f"sb_skip_honest{hold}", reps=200))
        res = ev.evaluate(task, _cand(task, root, SKIPS_EARLY, f"sb_skips_early{hold}", reps=200))
        assert honest.correct and honest.speedup, (honest.error_kind, honest.error)
        if not res.correct:
            assert res.error_kind in ("stale_output", "mismatch"), (res.error_kind, res.error)
            return
        # a speedup the judge itself marks invalid (the machine moved under the timing: a loaded CI
        # host) compares nothing; measured again once, then the comparison is the verdict
        if "timing_invalid" not in (honest.error_kind, res.error_kind):
            break
    else:
        pytest.skip(f"timings invalid twice on a loaded machine: {honest.error} / {res.error}"[:300])
    # the kernel's own time, not the speedup: the tiny baseline runs in ~1 us, and its noise between two
    # evaluations (1.2 vs 1.5 us on a CI host) moved the ratio by 1.4x while both kernels took 0.19 ms
    assert res.t_candidate_s >= honest.t_candidate_s / 1.2, (res.t_candidate_s, honest.t_candidate_s)


def test_write_into_an_input_faults(task, root, tmp_path):
    """The pool is mapped read-only: the write faults, and the worker's fault handler names it."""
    res = _ev(tmp_path).evaluate(task, _cand(task, root, WRITES_INPUT, "sb_writes"), time_it=False)
    assert res.error_kind == "input_mutated" and "read-only" in res.error, (res.error_kind, res.error)


def test_other_faults_are_crashes(task, root, tmp_path):
    src = HEAD + r"""
extern "C" int32_t ENTRY(float* x, float* w, float* out) { *(volatile int*)8 = 1; return 0; }
"""
    res = _ev(tmp_path).evaluate(task, _cand(task, root, src, "sb_segv"), time_it=False)
    assert res.error_kind == "crash" and "SIGSEGV" in res.error, (res.error_kind, res.error)


def test_kernel_cannot_signal_its_judge(task, root, tmp_path):
    res = _ev(tmp_path).evaluate(task, _cand(task, root, KILLS_JUDGE, "sb_kill"))
    assert res.correct and res.speedup, (res.error_kind, res.error)


def test_worker_has_no_environment_and_no_files(task, root, tmp_path, monkeypatch):
    """What a worker sees, asked through the Python C API from a kernel: it reports into its output
    (the only channel it has), which the judge then reads as a mismatch."""
    monkeypatch.setenv("LEKA_TEST_SECRET_KEY", "sk-should-not-leak")
    src = HEAD + r"""
extern "C" char* getenv(const char*);
extern "C" int32_t ENTRY(float* x, float* w, float* out) {
  for (int i = 0; i < 256; ++i) out[i] = 0.f;
  if (getenv("LEKA_TEST_SECRET_KEY")) out[0] = 1.f;
  if (getenv("HOME")) out[1] = 1.f;
  if (getenv("OMP_NUM_THREADS")) out[2] = 1.f;
  return 0;
}
"""
    res = _ev(tmp_path).evaluate(task, _cand(task, root, src, "sb_env"), time_it=False)
    assert res.error_kind == "mismatch", (res.error_kind, res.error)
    # out[0..2] = (0, 0, 1): the key and HOME are gone, the worker's own thread setting is there
    assert "max abs err" in res.error


def test_sandbox_off_runs_in_the_evaluation_process(task, root, tmp_path):
    res = _ev(tmp_path, sandbox=False).evaluate(task, _cand(task, root, HONEST, "sb_off"), time_it=False)
    assert res.correct and res.extra["sandbox"].startswith("off:"), res.extra


def test_worker_protocol_rejects_malformed_answers():
    import socket

    from benchmark.judge.sandbox import control as sandbox

    class Unstarted(sandbox.SandboxWorker):  # no process behind it: nothing to signal or reap
        def _cont(self) -> None: ...

        def _stop(self) -> None: ...

        def _reap(self) -> None:
            raise sandbox.WorkerDied("reaped")

    a, b = socket.socketpair()
    pool = sandbox.Pool([sandbox.InputSpec((4,), "float32")], 4, max_calls=2)
    pool.map_rw()
    w = Unstarted(pid=0, sock=a, role="candidate", n_outputs=1, layers=[])
    w.pool = pool
    for bad in ({"got": "three"}, {"got": -1}, {"got": 10**9}, {"nothing": 1}):
        sandbox.send_frame(b, bad)
        with pytest.raises(sandbox.WorkerDied):
            w.run([[0]])
    b.sendall(b"\x05\x00\x00\x00\x00\x00\x00\x00{bad}")
    with pytest.raises(sandbox.WorkerDied):
        w.run([[0]])
    b.sendall(b"\xff" * 8)  # a length over the protocol's bound
    with pytest.raises(sandbox.WorkerDied):
        w.run([[0]])
    with pytest.raises(ValueError):  # more calls than the request area holds
        w.run([[0]] * 3)
    pool.close()


def test_worker_jail_and_outputs_read_in_pieces(monkeypatch, tmp_path):
    """The worker machinery without TVM: a Python `run` served from a sandboxed worker. It cannot open
    a file (it would mark its output), its outputs are read from its memory, whole and in pieces."""
    import ctypes

    import numpy as np

    from benchmark.judge.sandbox import checks as isolated
    from benchmark.judge.sandbox import control as sandbox

    secret = tmp_path / "secret"
    secret.write_text("x")
    specs = [sandbox.InputSpec((1024,), "float32")]
    pool = sandbox.Pool(specs, 4, max_calls=8)

    def setup(buf, pool):
        held: list = []

        def run(n, offs_addr, res_addr, cap, progress_addr, nonce):
            offs = np.ctypeslib.as_array((ctypes.c_int64 * n).from_address(offs_addr))
            res = np.ctypeslib.as_array((ctypes.c_int64 * cap).from_address(res_addr))
            held.clear()
            for c in range(n):
                x = np.frombuffer(buf, dtype=np.float32, count=1024, offset=pool.starts[0] + int(offs[c]))
                y = x * 2
                try:
                    open(secret).close()
                    y[0] = 1e9  # it could read the user's files
                except OSError:
                    pass
                held.append(y)
                rec = [y.ctypes.data, y.nbytes, sandbox.dtype_code(y.dtype), 1, 1024] + [0] * 7
                res[sandbox.RECORD * c: sandbox.RECORD * (c + 1)] = rec
            np.ctypeslib.as_array((ctypes.c_int64 * 2).from_address(progress_addr))[:] = (nonce, n)
            return sandbox.RECORD * n

        return run, None

    w = sandbox.start(sandbox.Served(setup=setup, n_outputs=1, threads=1, sandbox=True), pool,
                      "candidate")
    try:
        assert "seccomp" in w.layers, w.layers
        pool.map_rw()
        pool.fill(lambda s: [np.random.default_rng(s).standard_normal(1024).astype(np.float32)], 3, slack_seed=9)
        calls = w.run([[0], [pool.offset(0, 1, 0)]])
        ref = pool.window(0, pool.offset(0, 1, 0)) * 2
        assert isolated.compare_remote(w, calls.outputs[1], [ref.copy()], 1e-6, 1e-6)[0] is None
        monkeypatch.setattr(isolated, "BIG_OUTPUTS", 0)
        monkeypatch.setattr(isolated, "PIECE", 1000)  # 250 floats a piece
        assert isolated.compare_remote(w, calls.outputs[1], [ref.copy()], 1e-6, 1e-6)[0] is None
        bad = ref.copy()
        bad[700] += 1
        kind, msg, _, _ = isolated.compare_remote(w, calls.outputs[1], [bad], 1e-6, 1e-6)
        assert kind == "mismatch" and "elements [500, 750)" in msg, msg
    finally:
        w.close()
        pool.close()


def test_root_import_in_a_child_process(tmp_path):
    # a device backend's judge imports its task in a forked child (torch.export would initialise CUDA in
    # the judge, whose forked device workers then cannot use it): the cache it writes is the same root,
    # and the child's import failure comes back as the parent's ImportFailure, message kept
    from benchmark.roots import load_root
    from benchmark.task import load_task_file
    from leka import tvm_adapter as A

    task = load_task_file(Path(__file__).parent / "data" / "tiny_task.py")
    got = load_root(task, tmp_path / "a", in_child=True)
    assert got.text == load_root(task, tmp_path / "b").text and got.outputs == [((4, 64), "float32")]
    assert list((tmp_path / "a" / "roots").glob("*/meta.json"))
    bad = tmp_path / "bad_task.py"
    bad.write_text((Path(__file__).parent / "data" / "tiny_task.py").read_text()
                   .replace("return torch.relu(x) * self.w + x", "raise RuntimeError('no export for you')"))
    with pytest.raises(A.ImportFailure, match="no export for you"):
        load_root(load_task_file(bad), tmp_path / "c", in_child=True)


def test_timed_requests_never_outgrow_an_untimed_one(task, root, tmp_path):
    # with every call's output held until the next request (sandbox_hold 0), a request with more calls
    # than any before allocates and faults in new buffers while it is timed; an untimed request of that
    # size runs first
    res = _ev(tmp_path, timing_diag=True, sandbox_hold=0).evaluate(task, _cand(task, root, HONEST, "sb_primed"))
    assert res.correct, (res.error_kind, res.error)
    rows = res.extra["timing_diag"]
    assert any(r[5] for r in rows) and any(not r[5] for r in rows), rows
    for arm in "cb":
        most = 0
        for r in (r for r in rows if r[0] == arm):
            if r[5]:
                assert r[1] <= most, (arm, r[1], most)
            else:
                most = max(most, r[1])
    # the split itself: the worker's own clock inside the judge's, the judge idle meanwhile
    assert all(r[3] is not None and 0 < r[3] <= r[2] for r in rows), rows[:3]


def test_a_ring_of_kept_outputs_and_the_request_cost_taken_off(task, root, tmp_path):
    # sandbox_hold 3: the worker keeps the last 3 calls' outputs, timed requests draw their call counts
    # (some over the planned number), the fastest empty request's cost is measured and taken off
    res = _ev(tmp_path, timing_diag=True, sandbox_hold=3).evaluate(task, _cand(task, root, HONEST, "sb_ring"))
    assert res.correct, (res.error_kind, res.error)
    assert res.extra["sandbox_hold"] == 3 and 0 < res.extra["request_fixed_s"] < 0.01, res.extra
    counts = {r[1] for r in res.extra["timing_diag"] if r[5]}
    assert len(counts) > 3, counts


def test_the_warm_call_reads_contents_no_timed_call_reads(task, root, tmp_path):
    # the untimed call before a sampled request warms the machine; were it to read the contents the
    # timed calls then read, a kernel could compute their outputs there, off the clock: it must come
    # before the request's fill
    res = _ev(tmp_path, timing_diag=True).evaluate(task, _cand(task, root, HONEST, "sb_warm", reps=50))
    assert res.correct, (res.error_kind, res.error)
    rows = res.extra["timing_diag"]
    warm = [k for k, r in enumerate(rows) if r[10] == "warm"]
    assert warm, "no warm call before any sampled request"
    for k in warm:
        nxt = next(r for r in rows[k + 1:] if r[0] == rows[k][0])
        assert nxt[5] and nxt[10] == "" and nxt[9] > rows[k][9], (rows[k], nxt)
        # no timed request after it reads those contents (the one before it, the other arm's, did)
        assert not [r for r in rows[k + 1:] if r[5] and r[9] <= rows[k][9]], rows[k]
    # and none where the call would be the whole request
    off = _ev(tmp_path, timing_diag=True, sandbox_warm_call=False).evaluate(
        task, _cand(task, root, HONEST, "sb_warm_off", reps=50))
    assert off.correct and not [r for r in off.extra["timing_diag"] if r[10] == "warm"]


JUDGE = r"""
import ctypes, sys, time
import numpy as np
from benchmark.judge.sandbox import control as sandbox

specs = [sandbox.InputSpec((16,), "float32")]
pool = sandbox.Pool(specs, 4, max_calls=2)

def setup(buf, pool):
    def run(n, offs_addr, res_addr, cap, progress_addr, nonce):
        return 0
    return run, None

w = sandbox.start(sandbox.Served(setup=setup, n_outputs=1, threads=1, sandbox=True), pool, "candidate")
print(w.pid, " ".join(w.layers), flush=True)
time.sleep(600)
"""


def test_a_stopped_worker_dies_with_its_killed_judge(tmp_path):
    # the worker is SIGSTOPped between requests, so it never reads its socket's EOF: only the
    # parent-death signal ends it, and the jail's change of uid (as root) or of user namespace clears
    # that signal unless it is armed again afterwards
    import os
    import signal
    import subprocess

    import psutil

    judge = subprocess.Popen([sys.executable, "-c", JUDGE], cwd=Path(__file__).parents[1], stdout=subprocess.PIPE,
                             text=True, start_new_session=True)
    try:
        pid_s, _, layers = judge.stdout.readline().strip().partition(" ")
        worker = psutil.Process(int(pid_s))
        assert worker.status() == psutil.STATUS_STOPPED and "seccomp" in layers, (worker.status(), layers)
        os.kill(judge.pid, signal.SIGKILL)
        judge.wait(10)
        try:
            worker.wait(10)
        except psutil.TimeoutExpired:
            worker.kill()
            raise AssertionError(f"the worker outlived its judge by 10 s (layers: {layers})") from None
    finally:
        if judge.poll() is None:
            judge.kill()
            judge.wait(10)


OMP_PROBE = r"""
import ctypes, os
import torch
from benchmark.judge.sandbox.worker import _warm_openmp
torch.set_num_threads(1)  # as the judge forks its workers (worker.run_job)
pid = os.fork()
if pid == 0:
    _warm_openmp(2)
    gomp = ctypes.CDLL("libgomp.so.1", mode=os.RTLD_NOLOAD)
    os._exit(gomp.omp_get_max_threads())
print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
"""


def test_a_forked_worker_runs_openmp_kernels_on_its_threads():
    # torch's libgomp is the one L2 kernels link: the judge's one-thread setting, copied by the fork,
    # made every parallel region of a sandboxed kernel run on one thread until the warm-up set it
    import subprocess

    out = subprocess.run([sys.executable, "-c", OMP_PROBE], cwd=Path(__file__).parents[1], capture_output=True,
                         text=True, timeout=120)
    assert out.stdout.strip() == "2", (out.stdout, out.stderr[-500:])
