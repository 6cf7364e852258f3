"""The `claude_code` arm: the real Claude Code CLI, headless, on one task, with the same model, the
same evaluator and the same wall clock as the LEKA arm.

    from leka.arms.claude_code import run_claude_code
    row = run_claude_code(task, backend="llvm", budget_s=5400.0, model="claude-sonnet-4-5",
                          out_dir="runs", base_url=None, config_files=(), overrides=(),
                          claude_bin=None, max_retries=None, grace_s=10.0, seed=0, quiet=True)
    row.correct, row.speedup, row.turns, row.input_tokens, row.run_dir   # a ClaudeCodeResult

- `task`: a suite id or the path of a KernelBench-format file; `budget_s`: the wall clock of the CLI
  (the paper: 5400 s at Level 1, 9300 s at Levels 2-3); `model`: the name the CLI sends, or a LEKA
  spec: `anthropic:NAME`, or `compat:URL|NAME` (a grid's `model:` for a local or fake server) whose
  NAME is sent to URL without its `/v1` (the CLI appends `/v1/messages`); `base_url`: an
  Anthropic-compatible endpoint (default: the compat spec's URL, else `$ANTHROPIC_BASE_URL`, else the
  real service). The key is read from `$ANTHROPIC_API_KEY` only and handed to the CLI's environment,
  never written; a compat endpoint without it gets `$LEKA_COMPAT_API_KEY` or "none", as LEKA's compat
  provider does; its calls are unpriced (cost_usd None: the CLI would price them as Claude's).
- `config_files` / `overrides`: LEKA config overlays and `key=value`s, as for `leka run`; the
  evaluator and baseline sections judge every candidate (`./measure` and the final re-evaluation).
- `claude_bin`: the CLI to run (default: `$LEKA_CLAUDE_BIN`, else the binary bundled in the pinned
  `claude-agent-sdk` wheel, else `claude` on PATH). `max_retries`: the CLI's API retries
  (`CLAUDE_CODE_MAX_RETRIES`; None keeps its default). `grace_s`: SIGTERM -> SIGKILL delay.
- Returns a `ClaudeCodeResult`, also written to RUN_DIR/result.json; raises `UserError` only for bad
  input (unknown backend, missing key or CLI). A CLI that crashes or an API that fails gives a row with
  `status="failed"` and its `error`.

How it runs (the workspace: `leka/arms/workspace.py`): `claude -p PROMPT --output-format stream-json
--verbose --model M --permission-mode acceptEdits --tools ... --allowedTools ... --settings
RUN_DIR/cli_settings.json` in RUN_DIR/workspace (its file tools read and write the workspace only),
in its own process group, HOME inside the workspace, telemetry and the updater off. The only command it
may run is `./measure`, which logs each evaluation into RUN_DIR. At the deadline the process group and
every descendant get SIGTERM, then SIGKILL after `grace_s`. Turns and tokens are read from the stream
(RUN_DIR/stream.jsonl). The best correct candidate measured (or, when none was correct, the final
`candidate/` folder) is evaluated again by the harness: the agent's claims are never read.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import psutil
from pydantic import BaseModel, Field

from leka.backends import require_runnable
from leka.core.config import load_config
from leka.core.proc import die_with_parent
from leka.core.types import UserError

CLI_PACKAGE = "claude-agent-sdk==0.2.184"  # pinned in pyproject's [claude] extra; bundles Claude Code 2.1.327
TOOLS = ["Read", "Edit", "Write", "Glob", "Grep", "Bash"]
# Edit / Write are left to acceptEdits, which approves them inside the working directory only (listed
# here they are approved anywhere); Read needs no approval there either (a bare "Read" would approve
# it anywhere: the caches, other runs); Bash is approved for ./measure only. Where the tools may reach
# is RUN_DIR/cli_settings.json's (leka/arms/workspace.py `cli_settings`)
ALLOWED = ["Glob", "Grep", "Bash(./measure)", "Bash(./measure *)"]
PROMPT = ("Read CONTRACT.md in the working directory and follow it: make the candidate in candidate/ "
          "faster, measuring with ./measure, until the time runs out.")


class ClaudeCodeResult(BaseModel):
    """One row of the arm (RUN_DIR/result.json)."""

    arm: str = "claude_code"
    task: str
    backend: str
    model: str
    run_dir: str
    status: str = "ok"  # ok: the CLI finished or was stopped at the deadline; failed: it ended in an error
    error: str | None = None
    cli_version: str | None = None
    exit_code: int | None = None
    stopped_at_deadline: bool = False
    budget_s: float = 0.0
    wall_s: float = 0.0  # the whole call: workspace, CLI, re-evaluation
    cli_s: float = 0.0  # the CLI's own run, start to exit or kill
    turns: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0
    cost_usd: float | None = None  # as the CLI reports it (its price table; None when it never said)
    tool_calls: dict[str, int] = Field(default_factory=dict)
    permission_denials: int = 0
    evals: int = 0  # ./measure calls logged
    best_eval: int | None = None  # its number (RUN_DIR/evals/NNN), None: the final candidate/ was judged
    # the harness's re-evaluation of the best candidate
    compiled: bool = False
    correct: bool = False
    fast: bool = False  # the speedup's interval is above 1 (EvalResult.is_faster)
    speedup: float | None = None
    speedup_lo: float | None = None
    speedup_hi: float | None = None
    timing_valid: bool | None = None
    error_kind: str | None = None
    eval_error: str | None = None


def find_cli(claude_bin: str | None = None) -> str:
    """The pinned CLI: explicit, $LEKA_CLAUDE_BIN, the claude-agent-sdk wheel's bundled binary, PATH."""
    if claude_bin or os.environ.get("LEKA_CLAUDE_BIN"):
        p = claude_bin or os.environ["LEKA_CLAUDE_BIN"]
        if not (Path(p).is_file() or shutil.which(p)):
            raise UserError(f"Claude Code CLI {p!r} not found")
        return p
    import importlib.util

    spec = importlib.util.find_spec("claude_agent_sdk")
    if spec and spec.submodule_search_locations:
        b = Path(next(iter(spec.submodule_search_locations))) / "_bundled" / "claude"
        if b.is_file():
            return str(b)
    found = shutil.which("claude")
    if not found:
        raise UserError(f"Claude Code CLI not found: `make setup` installs {CLI_PACKAGE} (or set LEKA_CLAUDE_BIN)")
    return found


def cli_version(binary: str, home: Path) -> str | None:
    try:
        p = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=60,
                           env={"PATH": os.environ.get("PATH", ""), "HOME": str(home), "DISABLE_AUTOUPDATER": "1"})
        return p.stdout.strip() or None
    except (OSError, subprocess.TimeoutExpired):
        return None


def model_endpoint(spec: str, base_url: str | None) -> tuple[str, str | None, bool]:
    """(model name the CLI sends, Anthropic base URL or None, whether the spec named a compat endpoint)
    from a name or a LEKA model spec: a grid's `model:` is the same string for every arm."""
    if spec.startswith("anthropic:"):
        return spec.split(":", 1)[1], base_url, False
    if spec.startswith("compat:"):
        url, bar, name = spec.removeprefix("compat:").rpartition("|")
        name = name.split("?", 1)[0]  # the compat provider's ?options are not the CLI's business
        if not bar or not url or not name:
            raise UserError(f"model {spec!r}: compat needs compat:URL|NAME, e.g. compat:http://127.0.0.1:8000/v1|qwen")
        url = url.rstrip("/")
        return name, base_url or (url[:-3] if url.endswith("/v1") else url), True
    return spec, base_url, False


def messages_api_missing(base_url: str, timeout_s: float = 5.0) -> str:
    """The reason first, when a compat endpoint has no Anthropic Messages route: the CLI's own words for
    a 404 ("There's an issue with the selected model") point at the model, not at the server. A GET is
    answered 405 (or 501) where the route exists for POST, 404 where it does not (llama-cpp-python's
    server, which has only the OpenAI routes); it sends no request a scripted server would count."""
    import urllib.error
    import urllib.request

    url = base_url.rstrip("/") + "/v1/messages"
    try:
        urllib.request.urlopen(urllib.request.Request(url, method="GET"), timeout=timeout_s).close()
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return (f"{base_url} has no Anthropic Messages API (GET /v1/messages: 404); the claude_code arm "
                    "needs one (llama-cpp-python's server answers only the OpenAI routes). The CLI said: ")
    except (OSError, ValueError):
        pass
    return ""


def cli_env(home: Path, base_url: str | None, model: str, max_retries: int | None,
            eval_timeout_s: float, key: str | None = None) -> dict[str, str]:
    """A clean environment: no variable of the harness's leaks in but PATH, locale and the key."""
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TMPDIR", "TZ")}
    env.update(HOME=str(home), CLAUDE_CONFIG_DIR=str(home / ".claude"),
               ANTHROPIC_API_KEY=key or os.environ["ANTHROPIC_API_KEY"],
               CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_TELEMETRY="1", DISABLE_AUTOUPDATER="1",
               DISABLE_ERROR_REPORTING="1", CLAUDE_CODE_DISABLE_TERMINAL_TITLE="1",
               # one evaluation may take minutes: the Bash tool must not give up on ./measure first
               BASH_DEFAULT_TIMEOUT_MS=str(int((eval_timeout_s + 120) * 1000)),
               BASH_MAX_TIMEOUT_MS=str(int((eval_timeout_s + 120) * 1000)))
    # the same model for every call the CLI makes (sub-agents, titles, summaries)
    for k in ("ANTHROPIC_MODEL", "ANTHROPIC_SMALL_FAST_MODEL", "ANTHROPIC_DEFAULT_HAIKU_MODEL",
              "ANTHROPIC_DEFAULT_SONNET_MODEL", "ANTHROPIC_DEFAULT_OPUS_MODEL", "CLAUDE_CODE_SUBAGENT_MODEL"):
        env[k] = model
    if base_url:
        env["ANTHROPIC_BASE_URL"] = base_url
    if max_retries is not None:
        env["CLAUDE_CODE_MAX_RETRIES"] = str(max_retries)
    return env


def cli_argv(binary: str, model: str, settings: Path) -> list[str]:
    return [binary, "-p", PROMPT, "--output-format", "stream-json", "--verbose", "--model", model,
            "--permission-mode", "acceptEdits", "--tools", ",".join(TOOLS), "--allowedTools", *ALLOWED,
            "--settings", str(settings), "--strict-mcp-config", "--no-session-persistence"]


# ------------------------------------------------------------------------------------------- the process
def _kill_tree(proc: subprocess.Popen, grace_s: float) -> None:
    """SIGTERM the process group and every descendant (a tool may start its own session), then SIGKILL."""
    try:
        procs = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        procs = []
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        for p in procs:
            try:
                p.send_signal(sig)
            except psutil.Error:
                pass
        if sig == signal.SIGTERM:
            _, alive = psutil.wait_procs(procs, timeout=grace_s)
            if not alive and proc.poll() is not None:
                break
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pass


def run_cli(argv: list[str], cwd: Path, env: dict[str, str], run_dir: Path, budget_s: float,
            grace_s: float) -> tuple[int | None, bool, list[dict[str, Any]]]:
    """Run the CLI until it exits or the budget ends: (exit code, stopped at the deadline, events)."""
    events: list[dict[str, Any]] = []
    with open(run_dir / "stream.jsonl", "wb") as out, open(run_dir / "stderr.txt", "wb") as err:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=err, start_new_session=True, preexec_fn=die_with_parent)

        def pump() -> None:
            for line in proc.stdout:  # type: ignore[union-attr]
                out.write(line)
                out.flush()
                try:
                    ev = json.loads(line)
                except ValueError:
                    continue
                if isinstance(ev, dict):
                    events.append(ev)

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        stopped = False
        try:
            proc.wait(timeout=max(budget_s, 0.0))
        except subprocess.TimeoutExpired:
            stopped = True
        _kill_tree(proc, grace_s if stopped else 1.0)  # background tools die with it, finished or not
        reader.join(timeout=10)
    return proc.returncode, stopped, events


def read_stream(events: list[dict[str, Any]]) -> dict[str, Any]:
    """Turns, tokens, tool calls and the final outcome from the CLI's stream-json events."""
    usage: dict[str, dict[str, Any]] = {}
    tools: dict[str, int] = {}
    final = None
    for ev in events:
        if ev.get("type") == "assistant" and isinstance(ev.get("message"), dict):
            m = ev["message"]
            usage[m.get("id") or str(len(usage))] = m.get("usage") or {}  # one message, one block per event
            for b in m.get("content") or []:
                if isinstance(b, dict) and b.get("type") == "tool_use":
                    tools[b.get("name", "?")] = tools.get(b.get("name", "?"), 0) + 1
        elif ev.get("type") == "result":
            final = ev

    def total(key: str) -> int:
        return sum(int(u.get(key) or 0) for u in usage.values())

    got = {"turns": len(usage), "input_tokens": total("input_tokens"), "output_tokens": total("output_tokens"),
           "cache_read_tokens": total("cache_read_input_tokens"),
           "cache_creation_tokens": total("cache_creation_input_tokens"), "tool_calls": tools,
           "final": final, "cli_error": None, "cost_usd": None, "permission_denials": 0}
    if final is not None:
        mu = final.get("modelUsage") or {}
        if mu:  # the CLI's own totals over all models count calls whose messages are not streamed
            got["input_tokens"] = sum(int(v.get("inputTokens") or 0) for v in mu.values())
            got["output_tokens"] = sum(int(v.get("outputTokens") or 0) for v in mu.values())
            got["cache_read_tokens"] = sum(int(v.get("cacheReadInputTokens") or 0) for v in mu.values())
            got["cache_creation_tokens"] = sum(int(v.get("cacheCreationInputTokens") or 0) for v in mu.values())
        got["turns"] = max(got["turns"], int(final.get("num_turns") or 0))
        got["cost_usd"] = final.get("total_cost_usd")
        got["permission_denials"] = len(final.get("permission_denials") or [])
        if final.get("is_error") or final.get("subtype") != "success":
            errs = final.get("errors") or []
            what = final.get("result") or "; ".join(map(str, errs)) or final.get("api_error_status") or "error"
            sub = final.get("subtype")
            got["cli_error"] = (f"{sub}: {what}" if sub and sub != "success" else str(what))[:2000]
    return got


# ---------------------------------------------------------------------------------------------- the arm
def _new_run_dir(out: Path, name: str) -> Path:
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UserError(f"--out {out}: not writable ({e.strerror or e})") from e
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for n in range(1, 1000):
        d = out / f"{name}-{stamp}" if n == 1 else out / f"{name}-{stamp}-{n}"
        try:
            d.mkdir()
            return d.resolve()
        except FileExistsError:
            continue
        except OSError as e:
            raise UserError(f"--out {out}: not writable ({e.strerror or e})") from e
    raise UserError(f"--out {out}: too many run folders named {name}-{stamp}")


def _judge(res: ClaudeCodeResult, run_dir: Path, task, cfg, ws: Path) -> None:
    """Evaluate the best measured candidate (or the final folder) again, in the harness."""
    from benchmark.judge import Evaluator
    from leka.arms.workspace import best_eval, folder_digest, read_evals
    from leka.core.types import EvalResult
    from leka.ir.files import CandidateFilesError, read_candidate

    rows = read_evals(run_dir)
    res.evals = len(rows)
    best = best_eval(rows)
    folder = run_dir / best["folder"] if best else ws / "candidate"
    res.best_eval = best["n"] if best else None
    if not rows and folder_digest(folder) == (run_dir / "start.digest").read_text():
        res.eval_error = "no candidate: nothing was measured and candidate/ is unchanged"
        return
    (run_dir / "judged.txt").write_text(str(folder.relative_to(run_dir)) + "\n")
    try:
        cand = read_candidate(task, folder, cfg.backend, workdir=run_dir / "judge")
        (run_dir / "candidate.json").write_text(cand.model_dump_json(indent=1))
        ev = Evaluator(cfg.evaluator, cfg.backend, cfg.baseline).evaluate(task, cand)
    except CandidateFilesError as e:
        ev = EvalResult(task=task.id, backend=cfg.backend, baseline=cfg.baseline.kind, error_kind="compile",
                        error=str(e))
    (run_dir / "final_eval.json").write_text(ev.model_dump_json(indent=1))
    res.compiled, res.correct, res.speedup, res.timing_valid = ev.compiled, ev.correct, ev.speedup, ev.timing_valid
    res.speedup_lo, res.speedup_hi = ev.speedup_lo, ev.speedup_hi
    res.fast = ev.is_faster(1.0)
    res.error_kind, res.eval_error = ev.error_kind, ev.error


def run_claude_code(task: str, *, backend: str = "llvm", budget_s: float = 5400.0, model: str = "",
                    out_dir: str | Path = "runs", base_url: str | None = None, config_files: list[str] = (),
                    overrides: list[str] = (), claude_bin: str | None = None, max_retries: int | None = None,
                    grace_s: float = 10.0, seed: int = 0, quiet: bool = True) -> ClaudeCodeResult:
    from benchmark.task import resolve
    from leka.arms import workspace as W

    t0 = time.monotonic()
    model, base_url, compat = model_endpoint(model, base_url)
    if not model:
        raise UserError("--model is required: the model name the Claude Code CLI sends, e.g. claude-sonnet-4-5")
    if budget_s <= 0:
        raise UserError("--budget must be positive")
    cfg = load_config(list(config_files), [*overrides, f"backend={backend}", f"run.seed={seed}"])
    require_runnable(cfg.backend, cfg.device.url)
    key = os.environ.get("ANTHROPIC_API_KEY") or (os.environ.get("LEKA_COMPAT_API_KEY", "none") if compat else "")
    if not key:
        raise UserError("ANTHROPIC_API_KEY is not set (any value for an endpoint without keys)")
    binary = find_cli(claude_bin)
    t = resolve(task)
    run_dir = _new_run_dir(Path(out_dir), f"claude_code-{t.id}-s{seed}")
    res = ClaudeCodeResult(task=t.id, backend=cfg.backend, model=model, run_dir=str(run_dir), budget_s=budget_s)
    try:
        ws = W.prepare(run_dir, t, cfg, budget_s, deadline=time.time() + budget_s)
    except Exception as e:  # noqa: BLE001 - a task TVM cannot import is a failed row, as in the other arms
        res.status, res.error = "failed", f"workspace: {type(e).__name__}: {str(e).strip()[:2000]}"
        res.wall_s = round(time.monotonic() - t0, 2)
        (run_dir / "result.json").write_text(res.model_dump_json(indent=1))
        return res
    home = ws / ".home"
    res.cli_version = cli_version(binary, home)
    env = cli_env(home, base_url or os.environ.get("ANTHROPIC_BASE_URL"), model, max_retries,
                  cfg.evaluator.timeout_s, key)
    argv = cli_argv(binary, model, run_dir / "cli_settings.json")
    (run_dir / "command.json").write_text(json.dumps(
        {"argv": argv, "cwd": str(ws), "env_names": sorted(env), "base_url": env.get("ANTHROPIC_BASE_URL"),
         "cli_version": res.cli_version, "budget_s": budget_s}, indent=1))
    if not quiet:
        print(f"claude_code: {t.id} for {budget_s:g}s in {ws}", flush=True)
    t_cli = time.monotonic()
    code, stopped, events = run_cli(argv, ws, env, run_dir, budget_s, grace_s)
    res.cli_s = round(time.monotonic() - t_cli, 2)
    got = read_stream(events)
    res.exit_code, res.stopped_at_deadline = code, stopped
    for k in ("turns", "input_tokens", "output_tokens", "cache_read_tokens", "cache_creation_tokens",
              "tool_calls", "cost_usd", "permission_denials"):
        setattr(res, k, got[k])
    if compat:  # the CLI prices every model name as a Claude model: a compat server's calls are unpriced
        res.cost_usd = None
    if not stopped and (code != 0 or got["cli_error"] or got["final"] is None):
        res.status = "failed"
        tail = (run_dir / "stderr.txt").read_text(errors="replace").strip()[-1500:]
        res.error = got["cli_error"] or f"Claude Code exited with {code} without a result" + (f": {tail}" if tail else "")
        if compat and not got["output_tokens"]:  # not one reply came back (the CLI counts a failed turn)
            res.error = f"{messages_api_missing(env.get('ANTHROPIC_BASE_URL', ''))}{res.error}"
    _judge(res, run_dir, t, cfg, ws)
    res.wall_s = round(time.monotonic() - t0, 2)
    (run_dir / "result.json").write_text(res.model_dump_json(indent=1))
    return res
