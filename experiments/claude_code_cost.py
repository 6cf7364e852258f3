"""Token cost of the Claude Code arm per task at the paper's budgets, estimated from logged requests.

No model is reachable here, so the real CLI (the pinned one) runs a scripted session against
`tests/fake_llm_server.py` on a real workspace: it reads the contract, the task, the starting Relax
text and the kernel views, then runs `./measure` once. From the requests the CLI actually sent we take
the first request's size (system prompt + tool schemas + contract prompt) and the context each kind of
turn adds; from `./measure` the wall time of one evaluation. A session is then projected:

- a turn takes `--llm-s` seconds of model time, and every `--turns-per-measure`-th turn also runs
  `./measure` (its measured wall time): turns per minute follow;
- each request re-sends the whole context: the first request's tokens plus the mean growth per turn
  measured here, until Claude Code auto-compacts at `--compact-at` tokens (back to the first request's
  size plus `--summary` tokens);
- output tokens are `--out-per-turn` per turn; prompt caching re-reads the previous request's context
  (cache read) and writes what is new (cache write).

Characters become tokens at `--chars-per-token`. Prices are arguments (default: Claude Sonnet 4.5 list
prices, USD per million tokens). Prints one table per budget.

    .venv/bin/python experiments/claude_code_cost.py [--tasks ID,ID] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from fake_llm_server import FakeLLMServer  # noqa: E402

from leka.arms.claude_code import run_claude_code  # noqa: E402


def measure_session(task: str, out: Path) -> dict:
    script = [{"tool": {"name": "Read", "arguments": {"file_path": "{cwd}/" + f}}}
              for f in ("CONTRACT.md", "task.py", "candidate/relax.py", "views/kernels.txt",
                        "views/l2_prototypes.txt")]
    script += [{"tool": {"name": "Bash", "arguments": {"command": "./measure", "description": "measure"}}},
               {"text": "done"}]
    os.environ.setdefault("ANTHROPIC_API_KEY", "sk-not-a-key")
    with FakeLLMServer(script) as srv:
        res = run_claude_code(task, budget_s=1800, model="fake-model", out_dir=out, base_url=srv.url, max_retries=0)
    sizes = [len(json.dumps(r.body)) for r in srv.requests if r.path.startswith("/v1/messages")
             and isinstance(r.body, dict) and "count_tokens" not in r.path]
    rows = [json.loads(x) for x in (Path(res.run_dir) / "evals.jsonl").read_text().splitlines()]
    return {"task": res.task, "first_chars": sizes[0], "growth_chars": [b - a for a, b in zip(sizes, sizes[1:], strict=False)],
            "eval_s": rows[0]["wall_s"] if rows else None, "requests": len(sizes)}


def project(m: dict, minutes: float, a: argparse.Namespace) -> dict:
    cpt = a.chars_per_token
    base = m["first_chars"] / cpt
    growth = sum(m["growth_chars"]) / len(m["growth_chars"]) / cpt
    turn_s = a.llm_s + (m["eval_s"] or 60.0) / a.turns_per_measure
    turns = int(minutes * 60 / turn_s)
    ctx, tot_in, reads, writes, compactions = base, 0.0, 0.0, 0.0, 0
    prev = 0.0
    for _ in range(turns):
        tot_in += ctx
        reads += min(prev, ctx)
        writes += ctx - min(prev, ctx)
        prev = ctx
        ctx += growth + a.out_per_turn
        if ctx > a.compact_at:
            ctx, prev, compactions = base + a.summary, 0.0, compactions + 1
    out_tok = turns * a.out_per_turn
    usd = (reads * a.price_cache_read + writes * a.price_cache_write + out_tok * a.price_out) / 1e6
    usd_nocache = (tot_in * a.price_in + out_tok * a.price_out) / 1e6
    return {"minutes": minutes, "turns": turns, "turns_per_min": round(60 / turn_s, 2),
            "first_request_tokens": round(base), "growth_per_turn_tokens": round(growth),
            "input_tokens": round(tot_in), "cache_read_tokens": round(reads), "cache_write_tokens": round(writes),
            "output_tokens": out_tok, "compactions": compactions, "usd_cached": round(usd, 2),
            "usd_uncached": round(usd_nocache, 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", default="l1_conv1d_depthwise_k15,l3_mobilenet_v2",
                    help="one task per budget: Level 1 (90 min), Level 2-3 (155 min)")
    ap.add_argument("--chars-per-token", type=float, default=3.5)
    ap.add_argument("--llm-s", type=float, default=15.0, help="model seconds per turn")
    ap.add_argument("--turns-per-measure", type=float, default=3.0)
    ap.add_argument("--out-per-turn", type=int, default=800)
    ap.add_argument("--compact-at", type=float, default=160_000)
    ap.add_argument("--summary", type=float, default=20_000)
    ap.add_argument("--price-in", type=float, default=3.0)
    ap.add_argument("--price-cache-write", type=float, default=3.75)
    ap.add_argument("--price-cache-read", type=float, default=0.30)
    ap.add_argument("--price-out", type=float, default=15.0)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    tasks = a.tasks.split(",")
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for task, minutes in zip(tasks, (90.0, 155.0), strict=False):
            m = measure_session(task, Path(tmp))
            p = project(m, minutes, a)
            out.append({**m, **p})
            print(f"\n{m['task']}: {m['requests']} requests logged, first {m['first_chars']} chars, "
                  f"growth per turn {m['growth_chars']} chars, one ./measure {m['eval_s']} s")
            print(f"{'budget':>8} {'turns':>6} {'t/min':>6} {'input tok':>11} {'cache read':>11} "
                  f"{'cache write':>11} {'output tok':>10} {'compact':>7} {'USD cached':>10} {'USD no cache':>12}")
            print(f"{minutes:>6.0f}m {p['turns']:>6} {p['turns_per_min']:>6} {p['input_tokens']:>11,} "
                  f"{p['cache_read_tokens']:>11,} {p['cache_write_tokens']:>11,} {p['output_tokens']:>10,} "
                  f"{p['compactions']:>7} {p['usd_cached']:>10} {p['usd_uncached']:>12}")
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
