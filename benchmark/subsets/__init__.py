"""Named task subsets of EdgeKernelBench (JSON files beside this module, made by make_subset.py)."""

from __future__ import annotations

import json
from pathlib import Path

SUBSET_DIR = Path(__file__).parent


def subset_path(name: str = "subset69") -> Path:
    return SUBSET_DIR / f"{name}.json"


def load_subset(name: str = "subset69", backend: str | None = None) -> list[str]:
    """Task ids of a subset: one backend's list, or the union over backends in file order."""
    p = subset_path(name)
    if not p.exists():
        raise FileNotFoundError(f"no subset {name!r} ({p}); run `python -m benchmark.subsets.make_subset`")
    data = json.loads(p.read_text())
    backends: dict[str, list[str]] = data["backends"]
    if backend is not None:
        if backend not in backends:
            raise KeyError(f"subset {name!r} has no backend {backend!r}; it has {', '.join(backends)}")
        return list(backends[backend])
    seen: dict[str, None] = {}
    for ids in backends.values():
        seen.update(dict.fromkeys(ids))
    return list(seen)
