"""OpenCL on this machine (PoCL through TVM's OpenCL runtime plugin) and boards behind the TVM RPC
tracker on 127.0.0.1: a tracker, an rpc_server that loads the plugin (a PoCL "board"), upload, check,
time; a board killed mid-evaluation gives a failed evaluation and the next one still runs.

CI builds the plugin and installs PoCL first (`.ci/run`: `make opencl`, LEKA_REQUIRE_OPENCL=1), so
there these tests run; elsewhere the fixture builds the plugin when the sources are at hand."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from benchmark.judge import Evaluator
from benchmark.task import load_task_file
from leka import ir
from leka import tvm_adapter as A
from leka.core.config import BaselineConfig, DeviceConfig, EvaluatorConfig
from leka.core.devices import RemoteDevice, parse_device
from leka.core.types import UserError
from leka.ir import remote
from leka.tvm_adapter import opencl_plugin as opencl

DATA = Path(__file__).parent / "data"
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def plugin(opencl_plugin) -> Path:
    return opencl_plugin


@pytest.fixture(scope="module")
def task():
    return load_task_file(DATA / "tiny_task.py")


def _cfg(**kw) -> EvaluatorConfig:
    # the default memory cap: under load in the full suite a PoCL evaluation's process tree went over 4 GiB
    return EvaluatorConfig(**{"timeout_s": 120, "timing_budget_s": 1.0, **kw})


@pytest.fixture()
def board(plugin):
    """A tracker and one PoCL board registered under key `pocl`."""
    with remote.start_tracker() as tr:
        srv = remote.start_server(tracker=(tr.host, tr.port), key="pocl", load_library=plugin)
        try:
            yield tr, srv, DeviceConfig(url=f"rpc://{tr.host}:{tr.port}/pocl", request_timeout_s=60)
        finally:
            srv.stop()


def test_device_urls():
    assert parse_device("local") is None
    assert parse_device("rpc://10.0.0.5:9190/rk3588") == RemoteDevice("10.0.0.5", 9190, "rk3588")
    for bad in ("rpc://host/key", "rpc://host:9190/", "tcp://h:1/k", "rk3588", "rpc://h:x/k"):
        with pytest.raises(UserError):
            parse_device(bad)


def test_bad_device_is_one_line_and_exit_2(tmp_path):
    r = subprocess.run([sys.executable, "-m", "leka.cli", "run", "--task", str(DATA / "tiny_task.py"),
                        "--device", "board:9190", "--out", str(tmp_path)], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines()[-1].startswith("leka: error: --device 'board:9190'")


def test_plugin_built_from_a_source_folder(plugin, tmp_path):
    # the folder given must hold TVM's OpenCL runtime; a wrong one is refused with the reason
    with pytest.raises(opencl.OpenCLUnavailable, match="no TVM OpenCL runtime sources"):
        opencl.runtime_sources(tmp_path)
    assert plugin.is_file() and plugin.stat().st_size > 100_000


def test_local_pocl_evaluation(plugin, task, tmp_path):
    # in the evaluation child: plugin loaded, DLight-scheduled OpenCL kernels run on PoCL, checked
    # over 3 seeds and timed against the untuned (DLight) baseline
    ev = Evaluator(_cfg(), backend="opencl", cache_dir=str(tmp_path))
    res = ev.evaluate(task)
    assert res.compiled and res.correct, res.error
    assert res.backend == "opencl" and res.seeds == [0, 1, 2]
    assert res.t_candidate_s and res.t_candidate_s > 0 and res.speedup and res.speedup > 0


def test_rpc_board_checks_and_times(board, task, tmp_path):
    _, _, dev = board
    ev = Evaluator(_cfg(), backend="opencl", cache_dir=str(tmp_path), device=dev)
    good = ev.evaluate(task)
    assert good.compiled and good.correct, good.error
    assert good.extra["device"] == dev.url and good.extra["upload_s"] > 0
    assert good.n_pairs >= 3 and good.t_candidate_s > 0 and good.t_baseline_s > 0 and good.speedup > 0
    # the check runs on the board: a candidate that returns zeros is caught there
    bad = ev.evaluate(task, ir.candidate_from_file(task, DATA / "adversarial" / "zeros.py", "opencl"),
                      time_it=False)
    assert bad.compiled and not bad.correct and bad.error_kind == "mismatch", bad.error


def _kill_when_busy(tr, srv, key: str, delay_s: float, done: threading.Event) -> None:
    """Kill the board once the tracker hands it out (its session is the evaluation's)."""
    deadline = time.monotonic() + 300
    seen_free = False
    while time.monotonic() < deadline and not done.is_set():
        try:
            free = A.rpc_tracker_summary(tr.host, tr.port).get("queue_info", {}).get(key, {}).get("free", 0)
        except Exception:  # noqa: BLE001 - the tracker is starting
            free = 0
        seen_free = seen_free or free > 0
        if seen_free and free == 0:
            time.sleep(delay_s)
            srv.stop()
            return
        time.sleep(0.1)


def test_board_disconnect_mid_evaluation_is_a_failed_result(board, task, tmp_path, plugin):
    tr, srv, dev = board
    # a long timing phase, so the kill lands while the board is in use
    # a loaded machine builds slowly and a server may register late: a timeout well past both
    ev = Evaluator(_cfg(min_pairs=200, max_pairs=200, timing_budget_s=60.0, sample_s=0.05, timeout_s=400, ci_width=0.0),
                   backend="opencl", cache_dir=str(tmp_path), device=dev)
    done = threading.Event()
    killer = threading.Thread(target=_kill_when_busy, args=(tr, srv, "pocl", 1.0, done), daemon=True)
    killer.start()
    t0 = time.monotonic()
    res = ev.evaluate(task)
    done.set()
    killer.join(5)
    assert not res.correct or res.speedup is None
    assert res.error_kind == "runtime" and f"device {dev.url}" in res.error, (res.error_kind, res.error)
    assert time.monotonic() - t0 < 390  # failed, not hung until the evaluator's timeout
    # the run goes on: a new board under the same key serves the next evaluation
    srv2 = remote.start_server(tracker=(tr.host, tr.port), key="pocl", load_library=plugin)
    try:
        ev.cfg = _cfg()
        res2 = ev.evaluate(task, time_it=False)
        assert res2.correct, res2.error
    finally:
        srv2.stop()


def test_opencl_rule_agents_edits_apply_and_run(plugin, task, tmp_path):
    from agents.l1_opencl import OpenCLRuleL1Agent
    from agents.l2_opencl import OpenCLRuleL2Agent
    from leka.core.protocols import AgentContext
    from leka.ir import edits

    root = ir.import_root(task)
    c = ir.root_candidate(task, "opencl", root)
    l1 = OpenCLRuleL1Agent(root_params=root.params).propose(
        c, AgentContext(task_id=task.id, backend="opencl", level="L1", variants=8))
    assert any("float4" in e.rationale for e in l1) and any("work-group 256" in e.rationale for e in l1)
    vec = next(e for e in l1 if "float4" in e.rationale)
    assert any(s["prim"] == "vectorize" for s in vec.payload["trace"])
    o1 = edits.apply_edit(c, vec, workdir=tmp_path, root_params=root.params)
    assert o1.error is None, o1.error
    l2 = OpenCLRuleL2Agent(root_params=root.params).propose(
        o1.candidate, AgentContext(task_id=task.id, backend="opencl", level="L2", variants=3))
    sized = next(e for e in l2 if "reqd_work_group_size" in e.rationale)
    assert "reqd_work_group_size(" in sized.payload["text"]
    o2 = edits.apply_edit(o1.candidate, sized, workdir=tmp_path, root_params=root.params)
    assert o2.error is None, o2.error
    assert len(o2.candidate.l1) == 1 and len(o2.candidate.l2) == 1
    res = Evaluator(_cfg(), backend="opencl", cache_dir=str(tmp_path)).evaluate(task, o2.candidate, time_it=False)
    assert res.compiled and res.correct, res.error


def test_leka_run_backend_opencl(plugin, tmp_path):
    r = subprocess.run([sys.executable, "-m", "leka.cli", "run", "--task", str(DATA / "tiny_task.py"),
                        "--backend", "opencl", "--budget", "5m", "--max-evals", "2", "--quiet",
                        "--out", str(tmp_path)], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    import json

    (summary,) = tmp_path.glob("*/summary.json")
    s = json.loads(summary.read_text())
    assert s["backend"] == "opencl" and s["best_correct"] and s["evaluations"] == 2


def test_metaschedule_runner_worker_runs_opencl(plugin, task, tmp_path):
    # the piece MetaSchedule tuning needs (the slow test below tunes for real): its runner's worker
    # process has an OpenCL device once the initializer loaded the plugin, and times a kernel there
    from tvm.s_tir import meta_schedule as ms
    from tvm.support.tar import tar

    opencl.load_plugin(plugin)
    root = ir.import_root(task)
    tgt = A.make_target("opencl")
    lowered = A.lower(ir.relax_module(ir.root_candidate(task, "opencl", root), root.params), tgt)
    (func,) = [f for f in A.prim_funcs(lowered).values() if A.is_scheduled(f)]
    art = str(tmp_path / "kernel.tar")
    A.build_prim_func(func, tgt).export_library(art, fcompile=tar)
    runner = ms.runner.LocalRunner(timeout_sec=300, initializer=A.worker_initializer(tgt))
    (fut,) = runner.run([ms.runner.RunnerInput(art, "opencl", ms.arg_info.ArgInfo.from_prim_func(func))])
    res = fut.result()
    assert res.error_msg is None and res.run_secs and 0 < float(res.run_secs[0]) < 1.0, res.error_msg


@pytest.mark.slow
def test_tuned_opencl_baseline(plugin, task, tmp_path):
    # `leka bench baseline --backend opencl` tunes with MetaSchedule: its builder and runner workers
    # load the plugin (else tvm.opencl(0) does not exist there and every trial fails), tuning starts
    # from the unscheduled PrimFuncs (MetaSchedule skips DLight-scheduled ones); the database is cached
    # and the evaluator times a candidate against the tuned module on PoCL
    import json

    from benchmark import baselines

    cache = tmp_path / "cache"
    r = subprocess.run([sys.executable, "-m", "leka.cli", "bench", "baseline", "--backend", "opencl", "--trials", "2",
                        "--task", str(DATA / "tiny_task.py"), "--cache-dir", str(cache)], capture_output=True,
                       text=True, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    d = baselines.ms_dir(task, "opencl", 2, str(cache))
    assert baselines.is_tuned(d), r.stdout[-2000:]
    assert json.loads((d / "DONE").read_text())["tasks"] == 1
    records = [json.loads(ln) for ln in (d / "database_tuning_record.json").read_text().splitlines() if ln.strip()]
    run_secs = [s for rec in records for s in rec[1][1]]
    assert records and min(run_secs) < 1.0  # measured on the device; a failed trial is recorded as 1e10 s
    # the database's schedule replaces the unscheduled kernel (its keys match the tuning's lowering)
    root = ir.import_root(task)
    tgt = A.make_target("opencl")
    lowered = A.lower(ir.relax_module(ir.root_candidate(task, "opencl", root), root.params), tgt, gpu_schedule=False)
    (name,) = [n for n, f in A.prim_funcs(lowered).items() if not A.is_scheduled(f)]
    assert A.is_scheduled(A.prim_funcs(A.apply_tuning_db(lowered, tgt, str(d)))[name])
    ev = Evaluator(_cfg(), backend="opencl", cache_dir=str(cache),
                   baseline=BaselineConfig(kind="tuned", trials=2, cache_dir=str(cache)))
    res = ev.evaluate(task)
    assert res.compiled and res.correct, res.error
    assert res.baseline == "tuned" and res.t_baseline_s and res.t_baseline_s > 0 and res.speedup > 0


@pytest.mark.slow
def test_tuned_baseline_on_a_board(board, task, tmp_path):
    # MetaSchedule's RPCRunner runs the trials on the PoCL board through the tracker; the database is
    # cached per board key, and the remote runner times the candidate against it on the board
    import json

    from benchmark import baselines

    _, _, dev = board
    cache = tmp_path / "cache"
    r = subprocess.run([sys.executable, "-m", "leka.cli", "bench", "baseline", "--backend", "opencl", "--trials", "2",
                        "--task", str(DATA / "tiny_task.py"), "--cache-dir", str(cache), "--device", dev.url],
                       capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    d = baselines.ms_dir(task, "opencl", 2, str(cache), dev)
    assert "-rpc-pocl-" in str(d) and baselines.is_tuned(d), r.stdout[-2000:]
    assert not baselines.is_tuned(baselines.ms_dir(task, "opencl", 2, str(cache)))  # not this machine's
    records = [json.loads(ln) for ln in (d / "database_tuning_record.json").read_text().splitlines() if ln.strip()]
    assert records and min(s for rec in records for s in rec[1][1]) < 1.0
    ev = Evaluator(_cfg(), backend="opencl", cache_dir=str(cache), device=dev,
                   baseline=BaselineConfig(kind="tuned", trials=2, cache_dir=str(cache)))
    res = ev.evaluate(task)
    assert res.correct and res.baseline == "tuned" and res.extra["device"] == dev.url, res.error
    assert res.t_baseline_s > 0 and res.speedup > 0


@pytest.mark.skipif(shutil.which("aarch64-linux-gnu-g++") is None,
                    reason="no aarch64 cross compiler (apt-get install g++-aarch64-linux-gnu)")
def test_board_target_cross_compiles(task, tmp_path):
    # what the remote runner uploads to an RK3588: Mali OpenCL kernels, aarch64 host code
    root = ir.import_root(task)
    tgt = A.make_target("opencl", target={"device": "mali", "host": {"kind": "llvm", "mtriple": "aarch64-linux-gnu"}})
    built = ir.build_candidate(ir.root_candidate(task, "opencl", root), tgt, root.params, for_rpc=True)
    lib = Path(ir.export(built, tmp_path / "mali.so", cross_compiler="aarch64-linux-gnu-g++"))
    head = lib.read_bytes()[:20]
    assert head[:4] == b"\x7fELF" and int.from_bytes(head[18:20], "little") == 183  # EM_AARCH64


@pytest.mark.slow
def test_leka_opencl_build_from_source_folder(tmp_path):
    # what `make opencl` runs, into a fresh path (~50 s of g++); the stamp records the wheel it matches
    src = opencl.default_src()
    if not src.is_dir():
        pytest.skip(f"no TVM source folder at {src} (set LEKA_TVM_OPENCL_SRC)")
    out = tmp_path / "libtvm_opencl.so"
    r = subprocess.run([sys.executable, "-m", "leka.cli", "opencl", "build", "--tvm-src", str(src), "--out", str(out),
                        "--no-install-deps"], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    assert out.is_file() and not opencl.is_stale(out)
    bad = subprocess.run([sys.executable, "-m", "leka.cli", "opencl", "build", "--tvm-src", str(tmp_path),
                          "--out", str(tmp_path / "x.so"), "--no-install-deps"], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
    assert bad.returncode == 2 and "no TVM OpenCL runtime sources" in bad.stderr


def _l2_opencl(task, tmp_path, rewrite):
    """The root's one OpenCL kernel as an L2 edit, its text passed through `rewrite`."""
    from agents.l2_opencl import OpenCLRuleL2Agent
    from leka.core.protocols import AgentContext
    from leka.ir import edits

    root = ir.import_root(task)
    c = ir.root_candidate(task, "opencl", root)
    (e, *_) = OpenCLRuleL2Agent(root_params=root.params).propose(
        c, AgentContext(task_id=task.id, backend="opencl", level="L2", variants=3))
    e = e.model_copy(update={"payload": {**e.payload, "text": rewrite(e.payload["text"])}})
    out = edits.apply_edit(c, e, workdir=tmp_path, root_params=root.params)
    assert out.error is None, out.error
    return out.candidate


def test_pocl_candidate_runs_in_the_sandboxed_worker(plugin, task, tmp_path):
    # issue 26: OpenCL candidates run in the same sandboxed worker as llvm's (the device's slots, the
    # judge's clock and references); PoCL's first launch builds the programs before the filter closes
    ev = Evaluator(_cfg(timing_budget_s=0.5), backend="opencl", cache_dir=str(tmp_path))
    cand = _l2_opencl(task, tmp_path, lambda t: t)
    res = ev.evaluate(task, cand)
    assert res.compiled and res.correct, res.error
    assert "seccomp" in res.extra["sandbox"], res.extra
    assert res.extra["timer"] == "candidate sandbox, baseline sandbox", res.extra
    assert res.t_candidate_s and res.t_baseline_s and res.speedup_lo is not None


@pytest.mark.parametrize("kind", ["torch", "ort"])
def test_pocl_candidate_against_a_cpu_baseline_stays_sandboxed(plugin, task, tmp_path, kind):
    # issue 43: a PyTorch / engine baseline of a device backend no longer pulls the candidate into the
    # judge's process: the candidate's worker is sandboxed, the baseline's is a trusted worker of its
    # own served through the same requests, its slots in host memory refilled with fresh windows
    ev = Evaluator(_cfg(timing_budget_s=0.5), backend="opencl", cache_dir=str(tmp_path),
                   baseline=BaselineConfig(kind=kind))
    res = ev.evaluate(task, _l2_opencl(task, tmp_path, lambda t: t))
    assert res.compiled and res.correct, res.error
    assert "seccomp" in res.extra["sandbox"], res.extra
    assert res.extra["timer"] == "candidate sandbox, baseline worker (trusted, not sandboxed)", res.extra
    assert res.baseline == kind and res.t_baseline_s > 0 and res.speedup_lo is not None, res


def test_pocl_kernel_that_writes_its_input_is_caught(plugin, task, tmp_path):
    # the device's copy of the inputs is read back after the checked call: a write there is input_mutated
    def clobber(text: str) -> str:
        head, _, _ = text.rpartition("}")
        return head + "  x_ptr[(convert_int(get_local_id(0)))] = 0.0f;\n}"

    cand = _l2_opencl(task, tmp_path, clobber)
    res = Evaluator(_cfg(), backend="opencl", cache_dir=str(tmp_path)).evaluate(task, cand, time_it=False)
    assert not res.correct and res.error_kind == "input_mutated", (res.error_kind, res.error)
    assert "seccomp" in res.extra["sandbox"], res.extra
