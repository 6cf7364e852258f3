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


def load_root(task: Task, cache_dir: str | os.PathLike | None = None) -> ir.Root:
    d = cache_root(cache_dir) / "roots" / f"{task.id}-{_key(task)}"
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
