"""Issue 27: a grid on a two-node Ray cluster survives random kills (experiments/chaos_grid.py, short).

Slow tier: a reference grid and a disturbed one, about 4 minutes on 2 cores.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_grid_under_kills_completes_once_and_equals_the_undisturbed_run(tmp_path):
    r = subprocess.run([sys.executable, str(ROOT / "experiments/chaos_grid.py"), "--kills", "3", "--gap", "3,6",
                        "--seed", "1", "--out", str(tmp_path)], capture_output=True, text=True, timeout=1500)
    res = json.loads((tmp_path / "chaos.json").read_text())
    assert r.returncode == 0 and res["ok"], r.stdout[-3000:] + r.stderr[-3000:]
    assert len(res["kills"]) >= 1 and all(j["done_events"] == 1 for j in res["jobs"])
    # the cluster it started is gone
    left = [p.pid for p in psutil.process_iter(["cmdline"]) if "leka-chaos-" in " ".join(p.info["cmdline"] or [])]
    assert not left, left
