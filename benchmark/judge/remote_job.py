"""The remote runner: one evaluation on a board behind the TVM RPC tracker (`device.url =
rpc://HOST:PORT/KEY`, docs/boards.md).

On this host: build the candidate and the baseline (untuned, or MetaSchedule-tuned on a board of the
same key by `leka bench baseline --device`) for the device's target (`device.target`,
e.g. the board's host triple) and link both with `device.cross_compiler`. On the board: upload both,
check the candidate over the seeds (poisoned buffers first, inputs checked unchanged) against the
PyTorch reference computed here, then time candidate and baseline in interleaved pairs with the
board's own `time_evaluator` (benchmark.judge.job.paired_timing), so both are device times.

It runs inside the evaluation child of `benchmark.judge.runner.RPCRunner` (the runner `Evaluator` creates
for a remote device), so a board that hangs hits the evaluator's timeout; a board that disconnects
raises here and becomes an EvalResult with error_kind "runtime" and the device in the message; the run goes on.
An emulated board (`device.emulated`, `leka board emulate`) is checked as any board; its timed results
say timing_valid false with the reason (`mark_emulated`).
"""

from __future__ import annotations

import json
import math
import resource
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np

from benchmark.judge.errors import set_error, short_error
from benchmark.judge.outputs import as_numpy, compare
from benchmark.judge.refs import flat_outputs
from benchmark.judge.timing import paired_timing, record, tvm_timer
from leka.core.devices import parse_device, use_board
from leka.core.types import EvalResult


class DeviceError(Exception):
    """The board failed us (no free device, disconnect, remote error): the message names it."""


def _built_libs(job: dict[str, Any], task, root, target, workdir: Path, res: EvalResult) -> dict[str, Path] | None:
    """Build and export candidate (and baseline when timing); None when the candidate does not build."""
    from leka import ir

    dev_cfg = job["device"]
    cc = dev_cfg.get("cross_compiler", "")
    backend = job.get("backend", "llvm")
    cand = ir.Candidate.model_validate(job["candidate"]) if job.get("candidate") else ir.root_candidate(task, backend, root)
    t0 = time.perf_counter()
    try:
        built = ir.build_candidate(cand, target, root.params, for_rpc=True)
        libs = {"cand": Path(ir.export(built, workdir / "cand.so", cross_compiler=cc))}
    except Exception as e:  # noqa: BLE001 - a candidate that does not build is data
        res.build_s = time.perf_counter() - t0
        set_error(res, "illegal_source" if isinstance(e, ir.IllegalObject) else "compile", short_error(e))
        return None
    res.build_s = time.perf_counter() - t0
    res.compiled = True
    if job.get("export"):
        ir.export(built, job["export"], cross_compiler=cc)
    if job.get("time") and job.get("baseline") == "tuned":  # tuned on a board of this key (`leka bench baseline --device`)
        from benchmark.baselines import tuned_executable
        from leka import tvm_adapter as A

        A.export_library(tuned_executable(task, root, backend, target, job["ms_dir"], for_rpc=True),
                         str(workdir / "base.so"), cross_compiler=cc)
        libs["base"] = workdir / "base.so"
    elif job.get("time") and job.get("baseline"):
        base = ir.build_candidate(ir.root_candidate(task, backend, root), target, root.params, for_rpc=True)
        libs["base"] = Path(ir.export(base, workdir / "base.so", cross_compiler=cc))
    return libs


def _check(runner, task, seeds: list[int], poison: bool, atol: float, rtol: float, res: EvalResult):
    """Candidate outputs for every seed on the board, then the reference here; the seed-0 inputs on
    success, None after a recorded failure."""
    import torch

    outs_by_seed, first_inputs = [], None
    for seed in seeds:
        inputs = [as_numpy(t) for t in task.make_inputs(seed)]
        if poison:
            try:
                runner.run_device(runner.to_device([as_numpy(t) for t in task.make_inputs(seed + 7919)]))
            except Exception:  # noqa: BLE001 - the checked run below reports the error
                pass
        args = runner.to_device(inputs)
        try:
            outs = [o.numpy() for o in runner.run_device(args)]
        except Exception as e:  # noqa: BLE001
            raise DeviceError(f"seed {seed}: {short_error(e)}") from e
        for i, (a, d) in enumerate(zip(inputs, args, strict=True)):
            if not np.array_equal(a, d.numpy(), equal_nan=True):
                set_error(res, "input_mutated", f"seed {seed}: the candidate wrote into input {i}")
                return None
        outs_by_seed.append(outs)
        first_inputs = first_inputs or inputs
    model = task.make_model()
    max_abs = max_rel = 0.0
    for seed, outs in zip(seeds, outs_by_seed, strict=True):
        with torch.no_grad():
            refs = flat_outputs(model(*task.make_inputs(seed)))
        kind, msg, ea, er = compare(outs, refs, atol, rtol)
        if not math.isnan(ea):
            max_abs, max_rel = max(max_abs, ea), max(max_rel, er)
        if kind:
            res.max_abs_err = None if math.isnan(ea) else ea
            res.max_rel_err = None if math.isnan(er) else er
            set_error(res, kind, f"seed {seed}: {msg}")
            return None
    res.max_abs_err, res.max_rel_err = max_abs, max_rel
    res.correct = True
    return first_inputs


def _on_board(job: dict[str, Any], task, libs: dict[str, Path], res: EvalResult) -> None:
    from leka import tvm_adapter as A
    from leka.ir import remote

    cfg, dev_cfg = job["evaluator"], job["device"]
    dev = parse_device(dev_cfg["url"])
    backend = job.get("backend", "llvm")
    try:
        sess = remote.request(dev.host, dev.port, dev.key, timeout_s=dev_cfg.get("request_timeout_s", 120.0),
                              session_timeout=int(dev_cfg.get("session_timeout_s", 600)))
    except Exception as e:  # noqa: BLE001
        raise DeviceError(f"no session: {short_error(e)}") from e
    try:
        t0 = time.perf_counter()
        for p in libs.values():
            sess.upload(str(p))
        cand = A.remote_runner(sess, libs["cand"].name, backend)
        res.extra["upload_s"] = time.perf_counter() - t0
    except Exception as e:  # noqa: BLE001
        raise DeviceError(f"upload/load: {short_error(e)}") from e
    t0 = time.perf_counter()
    inputs = _check(cand, task, list(cfg["seeds"]), cfg.get("poison", True), job.get("atol", task.atol),
                    job.get("rtol", task.rtol), res)
    res.check_s = time.perf_counter() - t0
    if inputs is None or "base" not in libs:
        return
    try:
        base = A.remote_runner(sess, libs["base"].name, backend)
        tm = paired_timing(tvm_timer(cand, cand.to_device(inputs)), tvm_timer(base, base.to_device(inputs)), cfg,
                           probe_load=False)  # timed on the board: this host's load is not the timing's
    except Exception as e:  # noqa: BLE001
        raise DeviceError(f"timing: {short_error(e)}") from e
    record(res, tm)
    if dev_cfg.get("emulated"):
        mark_emulated(res)


EMULATED = ("emulated board (device.emulated): times under an instruction-set emulator (qemu) are not the "
            "board's speed; the checks count, the speedup does not")


def mark_emulated(res: EvalResult) -> None:
    """A timed result from an emulated board: kept, but never a speedup (`EvalResult.measured` and
    every table that counts speedups read timing_valid)."""
    res.timing_valid = False
    res.extra["emulated"] = True
    if res.error_kind is None:
        res.error_kind, res.error = "timing_invalid", EMULATED


def run_remote_job(job: dict[str, Any], out_path: str) -> None:
    """Entry point of the evaluation child for a remote device; always writes out_path (the same
    JSON as benchmark.judge.job.run_job) unless the process itself dies."""
    import torch

    from benchmark.roots import load_root
    from benchmark.task import load_task_file
    from leka import tvm_adapter as A

    torch.set_num_threads(job.get("threads", 2))
    t_start = time.perf_counter()
    cfg, dev_cfg = job["evaluator"], job["device"]
    backend = job.get("backend", "llvm")
    res = EvalResult(task=job.get("task_id", "?"), backend=backend, baseline=job.get("baseline"),
                     seeds=list(cfg["seeds"]))
    res.extra["device"] = dev_cfg["url"]
    if dev_cfg.get("emulated"):
        res.extra["emulated"] = True

    def finish() -> None:
        res.peak_rss_bytes = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        res.wall_s = time.perf_counter() - t_start
        tmp = Path(out_path + ".tmp")
        tmp.write_text(json.dumps({"result": res.model_dump(mode="json"), "profile": None}))
        tmp.replace(out_path)

    try:
        task = load_task_file(job["task_path"])
        res.task = task.id
        if job.get("time") and job.get("baseline") not in (None, "untuned", "tuned"):
            set_error(res, "bad_input", f"a remote device is timed against the untuned or tuned TVM baseline only, "
                 f"not {job.get('baseline')!r} (torch/ort run on this host)")
            return finish()
        try:
            root = load_root(task, cache_dir=job.get("cache_dir"))
        except A.ImportFailure as e:
            set_error(res, "import", str(e))
            return finish()
        # the board's target and toolchain for every build here (L2 C/C++ with its cross compiler)
        with use_board(dev_cfg), tempfile.TemporaryDirectory(prefix="leka-rpc-") as tmp:
            target = A.make_target(backend, target=dev_cfg.get("target") or None)
            libs = _built_libs(job, task, root, target, Path(tmp), res)
            if libs is not None:
                _on_board(job, task, libs, res)
        return finish()
    except DeviceError as e:
        set_error(res, "runtime", f"device {dev_cfg['url']}: {e}")
        return finish()
    except Exception as e:  # noqa: BLE001 - anything else is still a result, with its traceback
        set_error(res, "runtime", f"{short_error(e)}\n{traceback.format_exc()[-1500:]}")
        return finish()
