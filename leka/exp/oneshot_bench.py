"""`leka bench oneshot` (issue 47): the paper's first result as a command. One generation per instance and
model (the `oneshot` arm, one arm per model), judged by the grid's judge against MetaSchedule-tuned TVM at
a named trial count and against each production engine the backend takes; resumable like any grid
(`--resume EXP_DIR`). The table, in the paper's Table-1 layout (model x backend x level), goes to
EXP_DIR/oneshot_table.md and .html beside the grid's report:

- Compile@1 and Correct@1 over every instance of the cell;
- Fast@1.0 against the tuned reference over the instances that have a cached tuned database; those
  without one (`baseline.prepare: skip`: not tuned yet) are counted apart, never as losses;
- Fast@1 against each production engine over the instances that engine takes (an engine that refuses
  the task is counted apart the same way);
- each rate with its Wilson interval over instances (benchmark.metrics.wilson); a job is fast only when
  its speedup's interval lies above 1 (the judge's paired timing);
- the failure taxonomy of the failed instances (leka.core.failures) and each model's calls, tokens and
  dollars as its provider's usage reported them (None: an unpriced model, e.g. a local one).

Everything is computed from the grid's rows (results.sqlite), so regenerating gives the same table."""

from __future__ import annotations

import html
import json
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from leka.core.types import UserError
from leka.exp import config as C

TABLE_MD, TABLE_HTML = "oneshot_table.md", "oneshot_table.html"


def arm_names(models: Sequence[str]) -> list[str]:
    """A path-safe arm name per model: `oneshot-NAME` (NAME: the part after `|` or the provider prefix)."""
    out: list[str] = []
    for m in models:
        base = m.split("|", 1)[1] if "|" in m else m.split(":", 1)[-1]
        base = re.sub(r"[^A-Za-z0-9._-]+", "_", base.split("?", 1)[0]).strip("_")[:40] or "model"
        name, i = f"oneshot-{base}", 2
        while name in out:
            name, i = f"oneshot-{base}-{i}", i + 1
        out.append(name)
    return out


def model_label(spec: str) -> str:
    """A model spec in a table cell: NAME (provider), without the URL, options or a `|` (a cell separator)."""
    provider, _, rest = spec.partition(":")
    name = rest.split("|", 1)[1] if "|" in rest else rest
    return f"{name.split('?', 1)[0] or spec} ({provider})" if rest else spec


def make_config(*, models: Sequence[str], backends: Sequence[str], subset: str | None = None,
                levels: Sequence[int] | None = None, ids: Sequence[str] = (), limit_per_level: int | None = None,
                trials: int = 64, engines: Sequence[str] = ("auto",), cache_dir: str = ".leka-cache",
                run_set: Sequence[str] = (), name: str = "oneshot") -> C.ExpConfig:
    """The grid of the one-shot benchmark: no subset and no ids is the whole suite (of `levels`)."""
    if not models:
        raise UserError("--model is required (repeatable): openai:MODEL | anthropic:MODEL | compat:URL|MODEL")
    if trials < 0:
        raise UserError("--trials must be >= 0 (0: untuned TVM is the reference)")
    task_ids = list(ids)
    if not subset and not task_ids:
        from benchmark.task import select

        task_ids = [t.id for t in select() if levels is None or t.level in levels]
    data = {
        "name": name,
        "tasks": {"subset": subset, "ids": task_ids, "levels": list(levels) if levels else None,
                  "limit_per_level": limit_per_level},
        "backends": list(backends),
        "arms": [{"name": a, "recipe": "oneshot", "model": m, "notes": f"one call of {m}"}
                 for a, m in zip(arm_names(models), models, strict=True)],
        # one call per job: the budget only bounds the LLM's wall clock (it is not a search budget)
        "budget": {"minutes": {1: 15.0, 2: 15.0, 3: 15.0}},
        "baseline": {"tuned_trials": trials, "torch": False, "prepare": "skip", "cache_dir": cache_dir,
                     "engines": [e for e in engines if e != "none"]},
        "run_set": list(run_set),
    }
    return C.parse(data, "leka bench oneshot")


# ----------------------------------------------------------------------------------------------- the table
def _fast(ok: bool, lo: Any, valid: Any) -> bool:
    return bool(ok and valid and lo is not None and float(lo) > 1.0)


def _rate(k: int, n: int) -> str:
    from benchmark.metrics import wilson

    w = wilson(k, n)
    if w is None:
        return "-"
    p, lo, hi = w
    return f"{100 * p:.0f}% [{100 * lo:.0f}, {100 * hi:.0f}] ({k}/{n})"


def cell(rows: list[dict[str, Any]], engines: Sequence[str]) -> dict[str, Any]:
    """The counts of one (model, backend, level) cell: every rate's k and n."""
    n = len(rows)
    tuned = [r for r in rows if r.get("tuned_baseline") is not False]
    out: dict[str, Any] = {
        "n": n, "compiled": sum(bool(r.get("compiled")) for r in rows), "correct": sum(bool(r.get("correct")) for r in rows),
        "n_tuned": len(tuned), "no_tuned": n - len(tuned),
        "fast_tuned": sum(_fast(r.get("correct"), r.get("speedup_ref_lo"), r.get("timing_valid_ref")) for r in tuned),
        "engines": {}}
    for k in engines:
        took = [r for r in rows if ((r.get("engines") or {}).get(k) or {}).get("supported")]
        fast = sum(_fast(r.get("correct"), r["engines"][k].get("lo"), r["engines"][k].get("timing_valid")) for r in took)
        labels = sorted({r["engines"][k].get("label") for r in took if r["engines"][k].get("label")})
        out["engines"][k] = {"n": len(took), "fast": fast, "apart": n - len(took), "labels": labels}
    return out


class OneShotTable:
    def __init__(self, exp_dir: Path):
        import yaml

        from leka.exp.store import Store

        self.exp_dir = Path(exp_dir)
        self.cfg = yaml.safe_load((self.exp_dir / "experiment.yaml").read_text())
        st = Store(self.exp_dir)
        try:
            self.rows = st.results()
            self.total = st.conn.execute("SELECT count(*) FROM jobs").fetchone()[0]
        finally:
            st.close()
        self.spec = {a["name"]: a.get("model") or self.cfg.get("model") or a["name"] for a in self.cfg["arms"]}
        self.model = {a: model_label(s) for a, s in self.spec.items()}
        self.arms = [a["name"] for a in self.cfg["arms"]]
        self.trials = int(self.cfg["baseline"]["tuned_trials"])
        self.ref = f"MetaSchedule-{self.trials} (tuned TVM, {self.trials} trials)" if self.trials else "untuned TVM"
        self.backends = [b for b in self.cfg["backends"] if any(r["backend"] == b for r in self.rows)]

    def engines(self, backend: str) -> list[str]:
        return C.parse(self.cfg, "experiment.yaml").baseline.engine_kinds(backend)

    def _rows(self, arm: str, backend: str, level: int | None = None) -> list[dict[str, Any]]:
        return [r for r in self.rows if r["arm"] == arm and r["backend"] == backend
                and (level is None or r.get("level") == level)]

    def markdown_lines(self) -> list[str]:
        out = [f"# One-shot benchmark: {self.cfg['name']}", "",
               f"{len(self.rows)} of {self.total} instances judged. One generation per instance and model, judged once. "
               f"Each rate: point [95% Wilson interval over instances] (k/n). Fast@1.0: correct and the speedup's "
               f"interval above 1 against {self.ref}, over the instances with a cached tuned database; the "
               "instances without one are counted apart (`no tuned`), not as losses: `leka bench baseline --all "
               f"--backend B --trials {self.trials or 'N'} --background` tunes them. Fast@1 vs an engine: over the "
               "instances that engine takes (the others apart).", ""]
        for b in self.backends:
            engs = self.engines(b)
            heads = [f"Fast@1 vs {self._engine_label(b, k)}" for k in engs]
            out += [f"### Table 1 (one-shot): {b}", "",
                    "| model | level | instances | Compile@1 | Correct@1 | Fast@1.0 vs " + self.ref + " | no tuned | "
                    + " | ".join(heads) + (" |" if heads else "|"),
                    "|---|---|---|---|---|---|---|" + "---|" * len(heads)]
            for arm in self.arms:
                levels = sorted({r.get("level") for r in self._rows(arm, b)}, key=lambda x: (x is None, x or 0))
                for lv in [*levels, "all"] if len(levels) > 1 else levels:
                    rows = self._rows(arm, b, None if lv == "all" else lv)
                    if not rows:
                        continue
                    c = cell(rows, engs)
                    ecells = [_rate(c["engines"][k]["fast"], c["engines"][k]["n"])
                              + (f", {c['engines'][k]['apart']} apart" if c["engines"][k]["apart"] else "") for k in engs]
                    out.append(f"| {self.model[arm]} | {lv} | {c['n']} | {_rate(c['compiled'], c['n'])} | "
                               f"{_rate(c['correct'], c['n'])} | {_rate(c['fast_tuned'], c['n_tuned'])} | {c['no_tuned']} | "
                               + " | ".join(ecells) + (" |" if ecells else "|"))
            out.append("")
        out += self.failure_lines() + self.cost_lines()
        out += ["", "Models: " + "; ".join(f"{self.model[a]} = `{self.spec[a]}`" for a in self.arms) + ".",
                "", machine_line(self.exp_dir), ""]
        return out

    def failure_lines(self) -> list[str]:
        from leka.core.failures import FAILURE_CLASSES, LABELS
        from leka.exp.report import row_class

        out: list[str] = []
        out += ["### Failures by class (the failed instances; leka.core.failures)", "",
                "| model | backend | failed | " + " | ".join(LABELS[c] for c in FAILURE_CLASSES) + " |",
                "|---|---|---|" + "---|" * len(FAILURE_CLASSES)]
        for arm in self.arms:
            for b in [*self.backends, "pooled"]:
                rows = [r for r in self.rows if r["arm"] == arm and (b == "pooled" or r["backend"] == b)]
                cls = [c for c in (row_class(r) for r in rows) if c]
                if not rows:
                    continue
                cells = [f"{cls.count(c)} ({100 * cls.count(c) / len(cls):.1f}%)" if cls.count(c) else "0"
                         for c in FAILURE_CLASSES]
                out.append(f"| {self.model[arm]} | {b} | {len(cls)} of {len(rows)} | " + " | ".join(cells) + " |")
        return out

    def cost_lines(self) -> list[str]:
        out: list[str] = []
        out += ["", "### Cost per model (the providers' reported usage)", "",
                "| model | instances | LLM calls | input tokens | output tokens | USD | USD per instance |",
                "|---|---|---|---|---|---|---|"]
        for arm in self.arms:
            rows = [r for r in self.rows if r["arm"] == arm]
            if not rows:
                continue
            costs = [r.get("cost_usd") for r in rows if int(r.get("llm_calls") or 0) > 0]
            priced = [float(c) for c in costs if c is not None]
            usd = "unpriced" if costs and not priced else f"${sum(priced):.4f}" + (
                f" ({len(costs) - len(priced)} unpriced)" if len(priced) < len(costs) else "")
            per = f"${sum(priced) / len(rows):.5f}" if priced else "-"
            out.append(f"| {self.model[arm]} | {len(rows)} | {sum(int(r.get('llm_calls') or 0) for r in rows)} | "
                       f"{sum(int(r.get('input_tokens') or 0) for r in rows)} | "
                       f"{sum(int(r.get('output_tokens') or 0) for r in rows)} | {usd} | {per} |")
        return out

    def _engine_label(self, backend: str, kind: str) -> str:
        labels = sorted({lab for r in self.rows if r["backend"] == backend
                         for lab in [((r.get("engines") or {}).get(kind) or {}).get("label")] if lab})
        return labels[0] if len(labels) == 1 else kind

    def markdown(self) -> str:
        return "\n".join(self.markdown_lines())

    def html(self) -> str:
        from leka.exp.report import CSS, _md_to_html

        lines = self.markdown_lines()
        title = lines[0].removeprefix("# ")
        body = _md_to_html([html.escape(x) for x in lines[1:]])
        return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
                f"<style>{CSS}</style></head><body><h1>{html.escape(title)}</h1>\n{body}\n</body></html>")


MACHINE = "oneshot_machine.json"


def machine_line(exp_dir: Path) -> str:
    """The machine, versions and date of the benchmark (committed tables say where they came from): read
    from EXP_DIR/oneshot_machine.json, written the first time, so a table regenerated elsewhere (an export)
    still names the machine that measured it."""
    f = Path(exp_dir) / MACHINE
    if f.is_file():
        return json.loads(f.read_text())["line"]
    line = _machine_now()
    f.write_text(json.dumps({"line": line}))
    return line


def _machine_now() -> str:
    import platform
    from importlib.metadata import PackageNotFoundError, version

    def v(d: str) -> str:
        try:
            return version(d)
        except PackageNotFoundError:
            return "-"

    return (f"Written {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {platform.machine()} "
            f"({platform.processor() or platform.platform()}), Python {platform.python_version()}, "
            f"TVM {v('apache-tvm')}, torch {v('torch')}, onnxruntime {v('onnxruntime')}, MNN {v('MNN')}.")


def write_table(exp_dir: Path) -> list[Path]:
    t = OneShotTable(Path(exp_dir))
    md, ht = Path(exp_dir) / TABLE_MD, Path(exp_dir) / TABLE_HTML
    md.write_text(t.markdown())
    ht.write_text(t.html())
    (Path(exp_dir) / "oneshot_cells.json").write_text(json.dumps(cells_json(t), indent=1))
    return [md, ht]


def cells_json(t: OneShotTable) -> list[dict[str, Any]]:
    """The table's counts as data (model, backend, level -> k and n of every rate)."""
    out = []
    for b in t.backends:
        for arm in t.arms:
            for lv in sorted({r.get("level") for r in t._rows(arm, b)}, key=lambda x: (x is None, x or 0)):
                out.append({"model": t.spec[arm], "arm": arm, "backend": b, "level": lv,
                            **cell(t._rows(arm, b, lv), t.engines(b))})
    return out
