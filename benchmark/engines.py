"""Production inference engines as baselines (issue 29): ONNX Runtime, MNN and TensorRT, each fed one
ONNX export of the task's model; and the names every baseline kind is reported under, with its version
and settings ("MNN 3.6.1 CPU, 2 threads, fp32").

- **Conversion, in processes of their own.** The ONNX export (torch.export + torch.onnx) sets process
  state of its own (TORCHINDUCTOR_CACHE_DIR in the C environment: the guard of benchmark/judge/process_state.py
  blamed the candidate for it) and an engine's converter is native code that may crash or print: both
  run in a child (`python -m benchmark.engines onnx|mnn|trt ...`), never in the judge. Their files are
  cached under the cache home (`engines/<task>-<digest>/`), keyed by the task's digest and the versions
  of what made them; a refusal is cached with its reason too, so a sweep does not repeat a failed export.
- **Verified before it is timed.** A second child, the judge's (benchmark/judge/engine_check.py), runs
  the engine once on seed-0 inputs and compares its outputs with the PyTorch model's at the task's
  tolerance: a baseline that computes something else is refused (`BaselineUnsupported`), never timed.
- **Refusals are rows.** What an engine cannot take (an export that fails, an op its converter lacks, a
  device its build has not: the PyPI MNN wheel has no OpenCL backend, TensorRT not installed) raises
  `BaselineUnsupported`; the evaluation reports it as error_kind `baseline_unsupported` with the reason.
- Sessions are made from the cached files by `call(kind, ...)`: in the baseline's own trusted worker
  (sandboxed protocol) or, in the in-process protocol, before the guard's snapshot (benchmark/judge/job.py).

Stdlib at import; torch, onnx, onnxruntime, MNN, tensorrt are imported where used.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

ENGINES = ("ort", "mnn", "tensorrt")  # the kinds converted through ONNX
CONVERT_TIMEOUT_S = 600.0
# part of every cached file's stamp: raise it when this module's conversion or check changes what a
# cached file or refusal means (a refusal cached by an older check is then tried again)
REVISION = 2


class BaselineUnsupported(RuntimeError):
    """The baseline engine cannot take this task (or this machine): the message is its reason."""


def version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return ""


def _threads(threads: int | None) -> int:
    return int(threads) if threads else len(os.sched_getaffinity(0))


def label(kind: str, *, device: str = "", threads: int | None = None, trials: int = 64) -> str:
    """The baseline in words, version and settings included (reports, summaries, the workspace brief).
    `device` is the backend's engine device for the kind (leka/backends: `Backend.baselines`)."""
    n = _threads(threads)
    tv = version("torch")
    on_gpu = device in ("cuda", "OPENCL")
    where = device.upper() if on_gpu else f"CPU, {n} thread{'s' if n != 1 else ''}"
    return {
        "untuned": "untuned TVM",
        "tuned": f"MetaSchedule-tuned TVM ({trials} trials)",
        "torch": f"PyTorch {tv} eager, {where}",
        "torch_compile": f"torch.compile (inductor, default mode), PyTorch {tv}, {where}",
        "torch_compile_cg": f"torch.compile (reduce-overhead, CUDA graphs), PyTorch {tv}, CUDA",
        "ort": f"ONNX Runtime {version('onnxruntime')} CPU EP, {n} threads, fp32",
        "mnn": f"MNN {version('MNN')} {device or 'CPU'}{'' if on_gpu else f', {n} threads'}, fp32",
        "tensorrt": f"TensorRT {version('tensorrt') or '(not installed)'} through ONNX, CUDA, fp32",
    }.get(kind, kind)


# ----------------------------------------------------------------------------- conversion (judge side)

def engine_dir(task: Any, cache_dir: str | None = None) -> Path:
    from benchmark.roots import cache_root

    return cache_root(cache_dir) / "engines" / f"{task.id}-{task.digest}"


# the children: conversions here; the checks of a converted baseline against PyTorch are the judge's
CHILD_MODULE = {"verify": "benchmark.judge.engine_check", "inductor": "benchmark.judge.engine_check"}


def _child(args: list[str], out: Path) -> None:
    """Run one conversion (or check) child; its failure becomes BaselineUnsupported with the child's last words."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[1]),
                                                        os.environ.get("PYTHONPATH", "")])}
    try:
        p = subprocess.run([sys.executable, "-m", CHILD_MODULE.get(args[0], "benchmark.engines"), *args], capture_output=True, text=True,
                           timeout=CONVERT_TIMEOUT_S, env=env)
    except subprocess.TimeoutExpired as e:
        raise BaselineUnsupported(f"{args[0]}: no answer within {CONVERT_TIMEOUT_S:g} s") from e
    if p.returncode == 0 and out.is_file():
        return
    said = _reason(p.stdout + "\n" + p.stderr)
    if p.returncode < 0:  # the engine's native code crashed on this model
        raise BaselineUnsupported(f"{args[0]}: the engine crashed (signal {-p.returncode})"
                                  + (f" after: {said}" if said else ""))
    raise BaselineUnsupported(said or f"{args[0]}: exit code {p.returncode}")


def _reason(text: str) -> str:
    """The child's own one-line verdict (`REASON: ...`) where it wrote one, else its last error line."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in reversed(lines):
        if "REASON: " in ln:  # a native library's unflushed output may share its line
            return ln.split("REASON: ", 1)[1][:800]
    errs = [ln for ln in lines if "rror" in ln or "not support" in ln.lower()]
    return (errs[-1] if errs else (lines[-1] if lines else ""))[:800]


def _cached(d: Path, name: str, stamp: str, make: Callable[[Path], None]) -> Path:
    """d/name made once per stamp (the versions that made it); a refusal is kept as d/name.refused."""
    out, refused, stamp_file = d / name, d / f"{name}.refused", d / f"{name}.stamp"
    stamp = f"r{REVISION} {stamp}"
    if stamp_file.is_file() and stamp_file.read_text() == stamp:
        if out.is_file():
            return out
        if refused.is_file():
            raise BaselineUnsupported(refused.read_text())
    d.mkdir(parents=True, exist_ok=True)
    for p in (out, refused):
        p.unlink(missing_ok=True)
    try:
        make(out)
    except BaselineUnsupported as e:
        refused.write_text(str(e))
        stamp_file.write_text(stamp)
        raise
    stamp_file.write_text(stamp)
    return out


def onnx_file(task: Any, cache_dir: str | None = None) -> Path:
    """The task's model exported to ONNX (torch.onnx, dynamo), in a child; cached per task digest."""
    stamp = f"torch {version('torch')}, onnx {version('onnx')}, onnxscript {version('onnxscript')}"
    return _cached(engine_dir(task, cache_dir), "model.onnx", stamp,
                   lambda out: _child(["onnx", str(task.path), str(out)], out))


def prepare(kind: str, task: Any, *, device: str = "CPU", cache_dir: str | None = None,
            threads: int | None = None) -> Path:
    """The engine's model file for the task, converted and verified (cached); BaselineUnsupported with
    the engine's reason where it cannot take it. `device` is the backend's engine device for `kind`."""
    if kind == "ort":
        src = onnx_file(task, cache_dir)
        stamp = f"{src.stat().st_mtime_ns} onnxruntime {version('onnxruntime')}"
        # nothing to convert: the verified marker is ONNX Runtime's own check of the export
        return _verified(task, kind, src, stamp, device, cache_dir, threads)
    if kind == "mnn":
        if device != "CPU" and not mnn_has(device):
            raise BaselineUnsupported(f"MNN {version('MNN')} (this install) has no {device} backend: "
                                      f"its library falls back to the CPU")
        if not version("MNN"):
            raise BaselineUnsupported("MNN is not installed (pip install MNN)")
        src = onnx_file(task, cache_dir)
        out = _cached(engine_dir(task, cache_dir), "model.mnn", f"{src.stat().st_mtime_ns} MNN {version('MNN')}",
                      lambda o: _child(["mnn", str(src), str(o)], o))
        return _verified(task, kind, out, f"{out.stat().st_mtime_ns} MNN {version('MNN')}", device, cache_dir, threads)
    if kind == "tensorrt":
        if not _importable("tensorrt"):
            raise BaselineUnsupported("TensorRT is not installed here (no `tensorrt` Python package)")
        src = onnx_file(task, cache_dir)
        out = _cached(engine_dir(task, cache_dir), "model.plan",
                      f"{src.stat().st_mtime_ns} tensorrt {version('tensorrt')}",
                      lambda o: _child(["trt", str(src), str(o)], o))
        return _verified(task, kind, out, f"{out.stat().st_mtime_ns}", device, cache_dir, threads)
    raise ValueError(f"{kind!r} is not an engine baseline ({', '.join(ENGINES)})")


def inductor_dir(cache_dir: str | None = None) -> Path:
    """torch.compile's on-disk caches (TORCHINDUCTOR_CACHE_DIR) for the CPU baseline: in the cache home,
    so the conversion child's compile is the baseline worker's cache hit."""
    from benchmark.roots import cache_root

    return cache_root(cache_dir) / "inductor"


def warm_compile(task: Any, cache_dir: str | None = None, threads: int | None = None) -> Path:
    """torch.compile (CPU, inductor) of the task's model, compiled once in a child, its result compared
    with eager's; the baseline's own compile then reads the caches. Returns the caches' folder."""
    d = inductor_dir(cache_dir)
    _cached(engine_dir(task, cache_dir), "torch_compile.verified", f"torch {version('torch')}",
            lambda o: _child(["inductor", str(task.path), str(d), str(_threads(threads)), str(o)], o))
    return d


def _verified(task: Any, kind: str, path: Path, stamp: str, device: str, cache_dir: str | None,
              threads: int | None) -> Path:
    d = engine_dir(task, cache_dir)
    _cached(d, f"{kind}-{device}.verified", stamp,
            lambda o: _child(["verify", kind, str(task.path), str(path), device, str(_threads(threads)), str(o)], o))
    return path


def _importable(mod: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(mod) is not None


@functools.cache
def mnn_has(device: str) -> bool:
    """Whether this MNN build has the `device` backend: MNN says "Can't Find type=N backend, use 0
    instead" and runs on the CPU where it has not (asked in a child: its native code prints)."""
    code = "import MNN.nn as nn; nn.create_runtime_manager(({'backend': " + repr(device) + ", 'numThread': 1},))"
    try:
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    except (subprocess.TimeoutExpired, OSError):
        return False
    return p.returncode == 0 and "Can't Find" not in (p.stdout + p.stderr)


# ----------------------------------------------------------------------------- sessions (trusted side)

def call(kind: str, path: Path | str, *, threads: int, device: str = "CPU") -> Callable[[list[Any]], list[Any]]:
    """The engine's session on `path` as call(list of numpy inputs) -> list of numpy outputs."""
    if kind == "ort":
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
        names = [i.name for i in sess.get_inputs()]
        return lambda args: sess.run(None, dict(zip(names, args, strict=True)))
    if kind == "mnn":
        return _mnn_call(Path(path), threads, device)
    if kind == "tensorrt":
        raise BaselineUnsupported("TensorRT runs on the GPU only (`engine_gpu_call`, timed by benchmark/judge/gpu_timing.py)")
    raise ValueError(f"{kind!r} is not an engine baseline ({', '.join(ENGINES)})")


def _mnn_call(path: Path, threads: int, device: str) -> Callable[[list[Any]], list[Any]]:
    import MNN.expr as F
    import MNN.nn as nn
    import numpy as np
    import onnx

    onnx_model = onnx.load(str(path.with_name("model.onnx")), load_external_data=False)
    inames = [i.name for i in onnx_model.graph.input]
    onames = [o.name for o in onnx_model.graph.output]
    # the ONNX outputs' static shapes: MNN may hand back a squeezed dimension as 1 (a Conv1d's (N, C, L)
    # as (N, C, L, 1)), the same values in another shape
    oshapes = [tuple(d.dim_value for d in o.type.tensor_type.shape.dim) for o in onnx_model.graph.output]
    # precision "high": fp32 arithmetic (MNN's default "normal" may compute in fp16 where the CPU has it)
    rt = nn.create_runtime_manager(({"backend": device, "numThread": int(threads), "precision": "high"},))
    mod = nn.load_module_from_file(str(path), inames, onames, runtime_manager=rt)

    def run(args: list[Any]) -> list[Any]:
        # MNN keeps integer tensors as int32 (its converter turns ONNX's int64 into int32), and its
        # const() reads an array as float unless told its dtype: indices go as int32, as an MNN user would
        ins = [F.const(np.ascontiguousarray(a, dtype=np.int32), list(a.shape), F.NCHW, F.int)
               if a.dtype.kind in "iu" else F.const(np.ascontiguousarray(a), list(a.shape), F.NCHW) for a in args]
        out = mod.forward(ins)
        outs = out if isinstance(out, (list, tuple)) else [out]
        # read() waits for the computation; its array is a view of the Var's memory, freed with it: copied
        got = [np.array(o.read()) for o in outs]
        return [g.reshape(sh) if sh and all(sh) and g.shape != sh and g.size == int(np.prod(sh)) else g
                for g, sh in zip(got, oshapes, strict=False)]

    return run


def _trt_context(engine, trt, torch, inputs: list) -> tuple[Any, list]:
    """An execution context of `engine` bound to `inputs` (torch CUDA tensors) and outputs of its own."""
    import numpy as np

    ctx = engine.create_execution_context()
    names = [engine.get_tensor_name(i) for i in range(engine.num_io_tensors)]
    ins = [n for n in names if engine.get_tensor_mode(n) == trt.TensorIOMode.INPUT]
    outs = [n for n in names if engine.get_tensor_mode(n) == trt.TensorIOMode.OUTPUT]
    bufs = {}
    for n, t in zip(ins, inputs, strict=True):
        bufs[n] = t
        ctx.set_input_shape(n, tuple(t.shape))
    for n in outs:
        dt = torch.from_numpy(np.zeros(0, dtype=trt.nptype(engine.get_tensor_dtype(n)))).dtype
        bufs[n] = torch.empty(tuple(ctx.get_tensor_shape(n)), dtype=dt, device="cuda")
    for n, t in bufs.items():
        ctx.set_tensor_address(n, t.data_ptr())
    return ctx, [bufs[n] for n in outs]


def engine_gpu_slots(kind: str, plan, slots: list[list[Any]]) -> list[Callable[[], list[Any]]]:
    """TensorRT's engine (the serialized `plan` file) on CUDA, one execution context per argument set of
    `slots` (torch CUDA tensors, bound in place: a sandboxed protocol's device worker uploads each call's
    fresh inputs into them): call s enqueues one inference on set s on torch's current stream and returns
    its output tensors (its own, so the outputs of a request's calls on distinct sets all stay valid)."""
    import tensorrt as trt
    import torch

    if kind != "tensorrt":
        raise ValueError(f"{kind!r} is not a GPU engine")
    engine = trt.Runtime(trt.Logger(trt.Logger.WARNING)).deserialize_cuda_engine(Path(plan).read_bytes())
    calls = []
    for args in slots:
        ctx, outs = _trt_context(engine, trt, torch, args)

        def call(ctx=ctx, outs=outs) -> list[Any]:
            ctx.execute_async_v3(torch.cuda.current_stream().cuda_stream)
            return outs
        calls.append(call)
    return calls


def engine_gpu_call(kind: str, plan, inputs, keep_outputs: bool = False) -> Callable[[], Any]:
    """TensorRT's engine on one fixed input set (the in-process path, `evaluator.sandbox=false`): call()
    enqueues one inference on torch's current stream (timed by its CUDA events). `keep_outputs`: call()
    returns the outputs as numpy arrays, synchronised (the conversion child's check)."""
    import torch

    (call_set,) = engine_gpu_slots(kind, plan, [[torch.from_numpy(a.copy()).to("cuda") for a in inputs]])

    def call():
        outs = call_set()
        if keep_outputs:
            torch.cuda.synchronize()
            return [o.cpu().numpy() for o in outs]
        return None

    call()
    torch.cuda.synchronize()
    return call


# ----------------------------------------------------------------------------- the children

def _load_task(path: str):
    from benchmark.task import load_task_file

    return load_task_file(path)


def _inputs(task: Any, seed: int = 0) -> list[Any]:
    import numpy as np
    import torch

    return [t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else np.asarray(t) for t in task.make_inputs(seed)]


def _export(task_path: str, out: str) -> None:
    import warnings

    import torch

    warnings.filterwarnings("ignore")
    task = _load_task(task_path)
    tin = tuple(torch.from_numpy(a.copy()) for a in _inputs(task))
    tmp = Path(out + ".tmp")
    try:
        with torch.no_grad():
            torch.onnx.export(task.make_model().eval(), tin, str(tmp), dynamo=True, external_data=False)
    except Exception as e:  # noqa: BLE001 - the exporter's refusal is the row's reason
        print(f"REASON: the ONNX export (torch.onnx, dynamo) failed: {type(e).__name__}: "
              f"{str(e).strip().splitlines()[0][:400] if str(e).strip() else ''}")
        sys.exit(3)
    tmp.replace(out)


def _mnn_convert(src: str, out: str) -> None:
    # the converter's native entry point: MNN.tools.mnnconvert's Python wrapper imports a telemetry
    # logger that pip-installs a package and posts to a remote server; the converter itself does neither
    import _tools

    tmp = out + ".tmp"
    code = _tools.mnnconvert(["mnnconvert", "-f", "ONNX", "--modelFile", src, "--MNNModel", tmp, "--bizCode", "leka"])
    sys.stdout.flush()
    if not Path(tmp).is_file() or Path(tmp).stat().st_size == 0:
        print(f"REASON: MNN's converter wrote no model (returned {code!r}); see its messages above")
        sys.exit(3)
    Path(tmp).replace(out)


def _trt_build(src: str, out: str) -> None:
    import tensorrt as trt

    logger = trt.Logger(trt.Logger.WARNING)
    builder = trt.Builder(logger)
    net = builder.create_network(0)
    parser = trt.OnnxParser(net, logger)
    if not parser.parse(Path(src).read_bytes()):
        errs = "; ".join(str(parser.get_error(i)) for i in range(parser.num_errors))
        print(f"REASON: TensorRT's ONNX parser refused the model: {errs[:600]}")
        sys.exit(3)
    config = builder.create_builder_config()  # fp32: no FP16/INT8 flags
    plan = builder.build_serialized_network(net, config)
    if plan is None:
        print("REASON: TensorRT could not build an engine for this network")
        sys.exit(3)
    Path(out).write_bytes(bytes(plan))


def main(argv: list[str]) -> None:
    op, args = argv[0], argv[1:]
    {"onnx": _export, "mnn": _mnn_convert, "trt": _trt_build}[op](*args)


if __name__ == "__main__":
    main(sys.argv[1:])
