"""The imported root of a task (lifted Relax text + constants), cached on disk.

torch.export + the Relax importer cost a second or more per task; every evaluation child needs the
root, so it is stored once per (task file content, TVM, torch) under the cache folder.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from benchmark.task import Task
from leka import ir


def cache_root(cache_dir: str | os.PathLike | None = None) -> Path:
    return Path(cache_dir or os.environ.get("LEKA_CACHE", ".leka-cache"))


def _key(task: Task) -> str:
    import torch

    from leka.tvm_adapter import IMPORTER_REVISION, tvm_version

    h = hashlib.sha256(f"{task.digest}|{tvm_version()}|{torch.__version__}|{IMPORTER_REVISION}".encode())
    return h.hexdigest()[:16]


def load_root(task: Task, cache_dir: str | os.PathLike | None = None, in_child: bool = False) -> ir.Root:
    """The cached root, imported (and cached) first where it is not cached yet. `in_child`: the import
    runs in a forked child: torch.export initialises CUDA in the process that runs it, and a process
    that forks sandboxed device workers afterwards must not have (a forked worker cannot use it)."""
    d = cache_root(cache_dir) / "roots" / f"{task.id}-{_key(task)}"
    if in_child and not (d / "meta.json").exists():
        _import_in_child(task, cache_dir)
    text_p, params_p, meta_p = d / "root.py", d / "params.npz", d / "meta.json"
    json_p = d / "root.json"  # TVM's serialisation, only where the text is not exact (ir.Root.module_json)
    if meta_p.exists():
        try:
            meta = json.loads(meta_p.read_text())
            return ir.Root(task=task, text=text_p.read_text(), params=ir.load_params(str(params_p)),
                           n_inputs=meta["n_inputs"], model=None,
                           module_json=json_p.read_text() if meta.get("module_json") else None,
                           outputs=[(tuple(s), d) for s, d in meta["outputs"]])
        except (OSError, ValueError, KeyError):
            pass  # a damaged cache entry is rebuilt below
    root = ir.import_root(task)
    d.mkdir(parents=True, exist_ok=True)
    tmp = d / f".params.{os.getpid()}.npz"
    import numpy as np

    np.savez(tmp, **root.params)
    tmp.replace(params_p)
    text_p.write_text(root.text)
    if root.module_json:
        json_p.write_text(root.module_json)
    meta_p.write_text(json.dumps({"n_inputs": root.n_inputs, "task": task.id, "module_json": bool(root.module_json),
                                  "outputs": [[list(s), d] for s, d in root.outputs]}))  # written last: the commit
    return root


def _import_in_child(task: Task, cache_dir: str | os.PathLike | None) -> None:
    """`load_root` in a forked child, which writes the cache; its ImportFailure comes back as one."""
    from leka.tvm_adapter import ImportFailure

    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        code = 0
        try:
            load_root(task, cache_dir)
        except BaseException as e:  # noqa: BLE001 - reported to the parent, which raises it
            code = 3
            os.write(w, json.dumps({"message": str(e)[:8000], "ops": list(getattr(e, "ops", []))}).encode())
        os.close(w)
        os._exit(code)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        msg = f.read()
    _, status = os.waitpid(pid, 0)
    if status != 0:
        info = json.loads(msg) if msg else {"message": f"the import's child process ended with status {status}"}
        raise ImportFailure(info["message"], info.get("ops", ()))
