"""The local small model end to end: `leka run --policy llm` and `leka oneshot` against the rule
policy, on a few suite tasks (two per level), same budget per arm.

Per agent: calls, seconds and tokens per call, replies that parse; per level and edit kind: edits
proposed (well-formed), legal, evaluated, correct, best speedup vs untuned TVM. Also the server's
prompt / generation speed with 1 and 2 threads (`--threads-probe`).

    .venv/bin/python experiments/bench_llm_local.py [--port 8080] [--budget 3m] [--tasks a,b,...]
        [--start-server] [--threads-probe] [--md experiments/results/bench_llm_local.md]

Needs `make llm-local`; with --start-server the script starts (and stops) `leka llm serve`'s server.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sqlite3
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from leka.llm import local as L  # noqa: E402

TASKS = ["l1_gelu_tanh", "l1_relu6", "l2_dwconv3x3_bn_relu6", "l2_conv1x1_bn_hardswish",
         "l3_qwen2_decoder_decode", "l3_mistral_decoder_decode"]
ARMS = ("llm", "oneshot", "rules")


def leka(*args: str, timeout: float) -> tuple[int, float, str]:
    t0 = time.monotonic()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    try:
        r = subprocess.run([sys.executable, "-m", "leka.cli", *args], capture_output=True, text=True, cwd=ROOT,
                           env=env, timeout=timeout)
        return r.returncode, time.monotonic() - t0, r.stderr[-2000:]
    except subprocess.TimeoutExpired:
        return 124, time.monotonic() - t0, "timeout"


def only_dir(folder: Path) -> Path | None:
    dirs = sorted(d for d in folder.iterdir() if d.is_dir()) if folder.is_dir() else []
    return dirs[-1] if dirs else None


def tree_nodes(run_dir: Path) -> list[dict[str, Any]]:
    db = run_dir / "tree.sqlite"
    if not db.is_file():
        return []
    con = sqlite3.connect(db)
    try:
        rows = con.execute("SELECT level, edit, status, result, speedup, correct FROM nodes").fetchall()
    finally:
        con.close()
    out = []
    for level, edit, status, result, speedup, correct in rows:
        if not level:
            continue
        e = json.loads(edit) if edit else {}
        res = json.loads(result) if result else {}
        out.append({"level": level, "kind": e.get("kind"), "status": status, "evaluated": bool(res) and
                    not str(status).startswith("illegal"), "correct": bool(correct), "speedup": speedup})
    return out


def reports(run_dir: Path) -> list[dict[str, Any]]:
    p = run_dir / "llm_reports.jsonl"
    return [json.loads(ln) for ln in p.read_text().splitlines() if ln.strip()] if p.is_file() else []


class Agg:
    """Sums per (arm, agent) and per (arm, level, kind) over tasks."""

    def __init__(self) -> None:
        self.agent: dict[tuple[str, str], dict[str, float]] = defaultdict(lambda: defaultdict(float))
        self.kind: dict[tuple[str, str, str], dict[str, Any]] = defaultdict(lambda: defaultdict(float))

    def add_reports(self, arm: str, reps: list[dict[str, Any]]) -> None:
        for rep in reps:
            a = self.agent[(arm, rep["agent"])]
            for r in rep.get("replies", []):
                a["calls"] += 1
                a["seconds"] += r.get("latency_s", 0.0)
                a["in"] += r.get("input_tokens", 0)
                a["out"] += r.get("output_tokens", 0)
                a["parsed"] += bool(r.get("parsed"))
                for kind, legal in r.get("edits", []):
                    lv = rep["agent"] if rep["agent"] in ("L0", "L1", "L2") else _level_of(kind)
                    k = self.kind[(arm, lv, kind)]
                    k["proposed"] += 1
                    k["legal"] += bool(legal)

    def add_nodes(self, arm: str, nodes: list[dict[str, Any]]) -> None:
        for n in nodes:
            k = self.kind[(arm, n["level"], n["kind"] or "?")]
            if arm == "rules":
                k["proposed"] += 1
                k["legal"] += not str(n["status"]).startswith("illegal")
            k["evaluated"] += n["evaluated"]
            k["correct"] += n["correct"]
            if n["correct"] and n["speedup"]:
                k["best"] = max(k.get("best", 0.0), n["speedup"])


_EXAMPLE = "Example reply, legal for this kernel (a starting point, not the best schedule):\n"


def example_copies(run_dir: Path) -> int:
    """L1 trace edits in the replies that are exactly the example trace the prompt showed."""
    p = run_dir / "llm_transcript.jsonl"
    n = 0
    for ln in p.read_text().splitlines() if p.is_file() else []:
        e = json.loads(ln)
        prompt = "".join(m["content"] for m in e.get("messages", []) if m["role"] == "user")
        if _EXAMPLE not in prompt or not e.get("reply"):
            continue
        try:
            ex = json.loads(prompt.split(_EXAMPLE, 1)[1].splitlines()[0].strip())["edits"][0]["payload"]["trace"]
            got = json.loads(e["reply"]["text"] or json.dumps(e["reply"]["tool_args"]))
        except (ValueError, KeyError, IndexError, TypeError):
            continue
        n += sum(1 for it in got.get("edits", []) if isinstance(it, dict)
                 and (it.get("payload") or {}).get("trace") == ex)
    return n


def _level_of(kind: str) -> str:
    return {"pass": "L0", "relax_text": "L0", "trace": "L1", "tir_text": "L1"}.get(kind, "L2")


def run_arm(tid: str, arm: str, args, spec: str, out: Path) -> None:
    """One arm on one task; its run folder lands in out/<arm>/<task>/, its exit in status.json."""
    folder = out / arm / tid
    common = ["--set", f"evaluator.timing_budget_s={args.timing_budget}", "--quiet"]
    limit = args.budget_s + 900
    if arm != "rules":
        common += [x for kv in args.llm_set for x in ("--set", kv)]
    if arm == "oneshot":
        rc, wall, err = leka("oneshot", "--task", tid, "--model", spec, "--out", str(folder), *common, timeout=limit)
    else:
        extra = (["--policy", "llm", "--model", spec, "--routing", args.llm_routing] if arm == "llm"
                 else ["--policy", "rules"])
        rc, wall, err = leka("run", "--task", tid, *extra, "--budget", f"{args.budget_s}s", "--out", str(folder),
                             *common, timeout=limit)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "status.json").write_text(json.dumps({"rc": rc, "wall_s": round(wall, 1),
                                                    "error": err.strip().splitlines()[-1:] if rc not in (0, 1) else []}))


def collect_task(tid: str, out: Path, agg: Agg) -> dict[str, Any]:
    row: dict[str, Any] = {"task": tid}
    for arm in ARMS:
        folder = out / arm / tid
        st = json.loads((folder / "status.json").read_text()) if (folder / "status.json").is_file() else None
        if st is None:
            continue
        rd = only_dir(folder)
        row[f"{arm}_wall"], row[f"{arm}_rc"] = st["wall_s"], st["rc"]
        if st["error"]:
            row[f"{arm}_error"] = st["error"]
        if rd is None:
            continue
        if arm in ("llm", "oneshot"):
            agg.add_reports(arm, reports(rd))
            agg.kind[(arm, "L1", "trace")]["example"] += example_copies(rd)
        if arm == "oneshot":
            o = json.loads((rd / "oneshot.json").read_text()) if (rd / "oneshot.json").is_file() else {}
            row["oneshot"] = {k: o.get(k) for k in ("compile_at_1", "correct_at_1", "fast_at_1", "speedup")}
            for e in o.get("edits", []):
                k = agg.kind[("oneshot", e["level"], e["kind"])]
                k["evaluated"] += int(bool(o.get("compile_at_1")))
                k["correct"] += int(bool(o.get("correct_at_1")))
                if o.get("correct_at_1") and o.get("speedup"):
                    k["best"] = max(k.get("best", 0.0), o["speedup"])
            continue
        agg.add_nodes(arm, tree_nodes(rd))
        s = json.loads((rd / "summary.json").read_text()) if (rd / "summary.json").is_file() else {}
        row[f"{arm}_best"] = s.get("best_speedup_vs_untuned") if s.get("best_correct") else None
        row[f"{arm}_evals"] = s.get("evaluations")
        if arm == "llm":
            row["llm_calls"] = (s.get("llm") or {}).get("calls")
    return row


def threads_probe(port: int, out: Path) -> list[dict[str, Any]]:
    """Prompt and generation speed of the server with 1 and 2 threads, side by side."""
    import openai

    prompt = ("Explain what this TVMScript loop nest computes.\n" +
              "\n".join(f"    for ax{i} in T.grid(64, 2048):  # line {i}" for i in range(120)))
    rows = []
    for threads in (1, 2):
        proc = L.start_server(port, threads, log=out / f"server-t{threads}.log")
        try:
            c = openai.OpenAI(api_key="none", base_url=f"http://127.0.0.1:{port}/v1", max_retries=0, timeout=600)
            msgs = [{"role": "user", "content": prompt}]
            c.chat.completions.create(model=L.MODEL_ALIAS, messages=[{"role": "user", "content": "hi"}], max_tokens=1)
            t0 = time.monotonic()
            r1 = c.chat.completions.create(model=L.MODEL_ALIAS, messages=msgs, max_tokens=1, temperature=0)
            t_prompt = time.monotonic() - t0
            # same prompt again: llama.cpp reuses the cached prefix, so this is generation only
            t0 = time.monotonic()
            r2 = c.chat.completions.create(model=L.MODEL_ALIAS, messages=msgs, max_tokens=128, temperature=0)
            t_gen = time.monotonic() - t0
            rows.append({"threads": threads, "omp_wait_policy": "PASSIVE" if threads > 1 else "-",
                         "prompt_tokens": r1.usage.prompt_tokens, "prompt_tok_s": r1.usage.prompt_tokens / t_prompt,
                         "gen_tokens": r2.usage.completion_tokens, "gen_tok_s": r2.usage.completion_tokens / t_gen})
        finally:
            L.stop_server(proc)
    return rows


def fmt(x: Any, nd: int = 2) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.{nd}f}"
    return str(x)


def markdown(args, rows: list[dict[str, Any]], agg: Agg, probe: list[dict[str, Any]], wall: float) -> str:  # noqa: ARG001
    lines = [f"# bench_llm_local: {L.MODEL_ALIAS} (Q4_K_M GGUF) through llama-cpp-python's server", "",
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.machine()} "
             f"{os.cpu_count()} cores, **loaded by other work** (about 6 other sessions sharing the cores); "
             f"`{' '.join(sys.argv[1:]) or '(defaults)'}`.",
             f"Server: `{' '.join(L.server_command(Path(L.MODEL_FILE), args.port, args.threads)[1:])}`"
             f"{' with OMP_WAIT_POLICY=PASSIVE' if args.threads > 1 else ''}; spec `{L.model_spec(args.port)}`. "
             f"Budget per task: {args.budget_s:.0f}s wall clock for the llm arm (routing {args.llm_routing}) and the "
             f"rules arm; the one-shot arm is one call and one evaluation. "
             f"`evaluator.timing_budget_s={args.timing_budget}`.", ""]
    if probe:
        lines += ["## Server speed by thread count (same prompt, one after the other)", "",
                  "| threads | OMP_WAIT_POLICY | prompt tokens | prompt tok/s | generated | gen tok/s |", "|---|---|---|---|---|---|"]
        for p in probe:
            lines.append(f"| {p['threads']} | {p['omp_wait_policy']} | {p['prompt_tokens']} | {p['prompt_tok_s']:.1f} "
                         f"| {p['gen_tokens']} | {p['gen_tok_s']:.1f} |")
        lines.append("")
    lines += ["## Per task: best correct speedup vs untuned TVM", "",
              "| task | rules best | llm best | llm calls | evals rules / llm | oneshot compile / correct / speedup |",
              "|---|---|---|---|---|---|"]
    for r in rows:
        o = r.get("oneshot") or {}
        lines.append(f"| {r['task']} | {fmt(r.get('rules_best'))} | {fmt(r.get('llm_best'))} | {fmt(r.get('llm_calls'))} "
                     f"| {fmt(r.get('rules_evals'))} / {fmt(r.get('llm_evals'))} | {fmt(o.get('compile_at_1'))} / "
                     f"{fmt(o.get('correct_at_1'))} / {fmt(o.get('speedup'))} |")
    lines += ["", "## Per agent (all tasks): calls, cost, replies that parse", "",
              "| arm | agent | calls | s / call | prompt tok / call | reply tok / call | replies parsed |",
              "|---|---|---|---|---|---|---|"]
    for (arm, agent), a in sorted(agg.agent.items()):
        n = max(a["calls"], 1)
        lines.append(f"| {arm} | {agent} | {int(a['calls'])} | {a['seconds'] / n:.1f} | {a['in'] / n:.0f} "
                     f"| {a['out'] / n:.0f} | {int(a['parsed'])}/{int(a['calls'])} |")
    lines += ["", "## Per level and edit kind (all tasks)", "",
              "| arm | level | kind | edits proposed | legal | evaluated | correct | best speedup | = prompt's example |",
              "|---|---|---|---|---|---|---|---|---|"]
    for (arm, lv, kind), k in sorted(agg.kind.items()):
        if not k["proposed"] and not k["evaluated"]:
            continue
        ex = int(k["example"]) if arm != "rules" and kind == "trace" else "-"
        lines.append(f"| {arm} | {lv} | {kind} | {int(k['proposed'])} | {int(k['legal'])} | {int(k['evaluated'])} "
                     f"| {int(k['correct'])} | {fmt(k.get('best'))} | {ex} |")
    errs = [(r["task"], a, r[f"{a}_error"]) for r in rows for a in ARMS if r.get(f"{a}_error")]
    if errs:
        lines += ["", "Arms that ended with an error: " + "; ".join(f"{t} {a}: {e}" for t, a, e in errs)]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=8080)
    ap.add_argument("--threads", type=int, default=L.DEFAULT_THREADS)
    ap.add_argument("--budget", default="3m")
    ap.add_argument("--timing-budget", type=float, default=1.0)
    ap.add_argument("--tasks", default=",".join(TASKS))
    ap.add_argument("--arms", default=",".join(ARMS))
    ap.add_argument("--start-server", action="store_true")
    ap.add_argument("--threads-probe", action="store_true")
    ap.add_argument("--out", default=str(ROOT / "experiments" / "out" / "bench_llm_local"))
    ap.add_argument("--llm-routing", default="round_robin",
                    help="routing of the llm arm (profile = one more model call per step)")
    ap.add_argument("--llm-set", action="append", default=[], help="extra --set for the llm and oneshot arms")
    ap.add_argument("--report-only", action="store_true", help="only write the table from --out's run folders")
    ap.add_argument("--md", default="")
    args = ap.parse_args()
    from leka.run import parse_duration

    args.budget_s = parse_duration(args.budget)
    args.arms = [a for a in args.arms.split(",") if a]
    tasks = [t for t in args.tasks.split(",") if t]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    probe_file = out / "threads_probe.json"
    if args.threads_probe and not args.report_only:
        probe_file.write_text(json.dumps(threads_probe(args.port, out)))
    probe = json.loads(probe_file.read_text()) if probe_file.is_file() else []
    proc = None
    if args.start_server and not args.report_only and set(args.arms) & {"llm", "oneshot"}:
        proc = L.start_server(args.port, args.threads, log=out / "server.log")
    try:
        for i, tid in enumerate(tasks if not args.report_only else [], 1):
            for arm in args.arms:
                print(f"[{i}/{len(tasks)}] {tid} {arm} ...", flush=True)
                run_arm(tid, arm, args, L.model_spec(args.port), out)
    finally:
        if proc is not None:
            L.stop_server(proc)
    agg = Agg()
    rows = [collect_task(tid, out, agg) for tid in tasks]
    text = markdown(args, rows, agg, probe, time.monotonic() - t0)
    (out / "table.md").write_text(text)
    if args.md:
        Path(args.md).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
