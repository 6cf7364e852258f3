"""The live view of `leka run`: current node, best speedup, budget left, nodes per level, and a log line
per evaluation when the terminal has no live table (or `--quiet` says nothing)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.live import Live
from rich.table import Table

from leka.core.config import LekaConfig
from leka.core.levels import level_names

console = Console()


class LiveView:
    """Follows the loop's events (`RunContext.on_event`)."""

    def __init__(self, cfg: LekaConfig, task_id: str, quiet: bool = False):
        self.cfg, self.task_id, self.quiet = cfg, task_id, quiet
        self.best = 0.0
        self.best_node: int | None = None
        self.current: int | None = None
        self.by_level = {"root": 0, **dict.fromkeys(level_names(), 0)}
        self.failed = 0
        self.used = 0.0
        self.last = ""
        self.live: Live | None = None

    def table(self) -> Table:
        t = Table(title=f"LEKA {self.task_id} [{self.cfg.backend}, {self.cfg.run.policy}, {self.cfg.run.routing}]")
        for col in ("current", "best speedup", "budget left", *level_names(), "failed", "last"):
            t.add_column(col)
        left = max(0.0, self.cfg.run.budget_s - self.used)
        t.add_row(str(self.current), f"{self.best:.2f}x (#{self.best_node})", f"{left:.0f}s",
                  *(str(self.by_level[lv]) for lv in level_names()), str(self.failed), self.last[:60])
        return t

    def event(self, kind: str, info: dict[str, Any]) -> None:
        if kind == "sense":
            self.current = info["node"]
            self.used = info["budget_used_s"]
        elif kind == "route":
            self.last = f"#{info['node']} -> {info['level']}: {info['reason']}"
        elif kind in ("evaluated", "illegal"):
            self._result(kind, info)
        elif kind == "widen":
            self.last = f"every node exhausted: widened round {info['round']} from #{info['node']}"
        if self.live is not None:
            self.live.update(self.table())

    def _result(self, kind: str, info: dict[str, Any]) -> None:
        lv = info.get("level") or "root"
        self.by_level[lv] += 1
        res = info.get("result")
        if kind == "illegal" or (res is not None and not res.correct):
            self.failed += 1
        if res is not None and res.correct and res.timing_valid and (res.speedup or 0) > self.best:
            self.best, self.best_node = res.speedup, info["node"]
        if not self.quiet and self.live is None:
            sp = f"{res.speedup:.2f}x" if res is not None and res.speedup else "-"
            if kind == "illegal":
                st = f"illegal edit: {(info.get('error') or '').splitlines()[0][:100] if info.get('error') else ''}"
            else:
                st = info.get("status") or (res.error_kind if res is not None and res.error_kind else "ok")
            console.print(f"  node {info['node']:>4} {lv:>4} {sp:>8} {st}")

    def follow(self, go):
        """go() under the live table when one is shown, else plainly; returns what it returns."""
        with Live(self.table(), console=console, refresh_per_second=4) as lv:
            self.live = lv
            try:
                return go()
            finally:
                self.live = None
