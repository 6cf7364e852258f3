"""Where machine-local files go (built plugins, the calibrated roofs, the local model): one rule for a
source checkout and a wheel install. At the bottom layer because a backend keeps its built runtime
plugin there (opencl.py). No TVM; stdlib only.

- `LEKA_CACHE` set: there.
- Run from a source checkout (this package beside the project's pyproject.toml): `<checkout>/.leka-cache`,
  ignored by git, where `make` puts what it builds.
- Installed (site-packages, `pip install .`): the user's cache, `$XDG_CACHE_HOME/leka` or
  `~/.cache/leka`: never a folder inside site-packages.
"""

from __future__ import annotations

import os
from pathlib import Path


def checkout() -> Path | None:
    """The source checkout this package runs from, or None when it is installed."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "pyproject.toml").is_file() and (root / "leka" / "backends").is_dir() else None


def cache_home() -> Path:
    env = os.environ.get("LEKA_CACHE")
    if env:
        return Path(env)
    root = checkout()
    if root is not None:
        return root / ".leka-cache"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "leka"
