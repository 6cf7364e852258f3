"""Issue 27's chaos run: a small grid on a two-node Ray cluster on this machine, under random kills.

1. The reference: the grid undisturbed (`leka exp run CONFIG`, local Ray).
2. A head node and a second node (`ray start`, one CPU each, the second node with its own resource
   `chaos_node2`), the same grid driven against them (`--address`), and N random kills while it runs:
   a job's worker (`ray::run_job`), the second node's raylet (the node is lost; restarted a few seconds
   later), or the driver (SIGKILL of its process group; then `leka exp run --resume`).
3. Checks: every job done, exactly one `done` event per job, at most one attempt folder per job with a
   `job_result.json` (no job run twice to completion), and each row equal to the reference's in
   everything but timing (correct, compiled, evaluations, nodes per level, the tree's edits).

    python experiments/chaos_grid.py [--kills 20] [--config experiments/configs/chaos.yaml] [--out DIR]
    python experiments/chaos_grid.py --render DIR/chaos.json   # the markdown of a finished run

Writes DIR/chaos.json (kills, checks, per-job comparison) and prints the markdown table. Every process
it starts is stopped at the end (`ray stop --force` on its own temp dir, the driver's group).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
RAY = str(Path(PY).with_name("ray"))
TIMELESS = ("correct", "compiled", "evaluations", "nodes_by_level", "llm_calls")


def _env(tmp: Path) -> dict[str, str]:
    # token auth is Ray's default for a new cluster; every client of this one reads the same token
    return {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_worker_niceness": "0", "RAY_AUTH_MODE": "token",
            "PYTHONPATH": str(ROOT), "RAY_DISABLE_IMPORT_WARNING": "1", "RAY_TMPDIR": str(tmp)}


def _leka(*args: str) -> list[str]:
    return [PY, "-m", "leka.cli", *args]


def _raylets() -> set[int]:
    return {p.pid for p in psutil.process_iter(["cmdline"]) if (p.info["cmdline"] or [""])[0].endswith("raylet/raylet")}


def _job_workers() -> list[psutil.Process]:
    out = []
    for p in psutil.process_iter(["cmdline"]):
        cmd = p.info["cmdline"] or []
        if cmd and cmd[0].startswith("ray::run_job"):
            out.append(p)
    return out


class Cluster:
    def __init__(self, tmp: Path, port: int):
        self.tmp, self.port, self.env = tmp, port, _env(tmp)
        self.addr = f"127.0.0.1:{port}"
        self.node2: int | None = None

    def _start(self, *args: str) -> None:
        r = subprocess.run([RAY, "start", *args, "--num-cpus", "1", "--node-ip-address", "127.0.0.1",
                            "--object-store-memory", str(100 * 2**20), "--disable-usage-stats"],
                           env=self.env, capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise RuntimeError(f"ray start {' '.join(args)}: {r.stderr[-1500:]}")

    def up(self) -> None:
        self._start("--head", "--port", str(self.port), "--include-dashboard", "false", "--temp-dir", str(self.tmp))
        self.start_node2()

    def start_node2(self) -> None:
        before = _raylets()
        self._start("--address", self.addr, "--resources", '{"chaos_node2": 1}')
        new = _raylets() - before
        self.node2 = new.pop() if new else None

    def down(self) -> None:
        subprocess.run([RAY, "stop", "--force"], env=self.env, capture_output=True, timeout=120)


class Driver:
    def __init__(self, cmd: list[str], env: dict[str, str], log: Path):
        self.cmd, self.env, self.log, self.proc = cmd, env, log, None
        self.starts = 0

    def start(self, resume_dir: Path | None) -> None:
        cmd = _leka("exp", "run", "--resume", str(resume_dir), *self.cmd[1:]) if resume_dir else _leka("exp", "run", *self.cmd)
        self.starts += 1
        with self.log.open("a") as f:
            f.write(f"\n=== start {self.starts}: {' '.join(cmd)}\n")
            self.proc = subprocess.Popen(cmd, env=self.env, stdout=f, stderr=subprocess.STDOUT, cwd=ROOT,
                                         start_new_session=True)

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


def _tree_edits(run_dir: Path) -> list:
    db = run_dir / "tree.sqlite"
    if not db.is_file():
        return []
    con = sqlite3.connect(db)
    try:
        rows = con.execute("SELECT id, parent, level, edit, candidate_hash FROM nodes ORDER BY id").fetchall()
    finally:
        con.close()
    # an edit's rationale quotes measured shares; the edit itself must not differ
    return [(i, p, lv, {k: v for k, v in json.loads(e).items() if k != "rationale"} if e else None, h)
            for i, p, lv, e, h in rows]


def _rows(exp_dir: Path) -> dict[str, dict]:
    con = sqlite3.connect(exp_dir / "results.sqlite")
    try:
        out = {}
        for jid, state, res in con.execute("SELECT job_id, state, result FROM jobs"):
            row = json.loads(res) if res else {}
            row["_state"] = state
            rd = row.get("run_dir")
            row["_tree"] = _tree_edits(exp_dir / rd) if rd else []
            out[jid] = row
        return out
    finally:
        con.close()


def _events(exp_dir: Path) -> list[tuple]:
    con = sqlite3.connect(exp_dir / "results.sqlite")
    try:
        return con.execute("SELECT job_id, attempt, what FROM events ORDER BY rowid").fetchall()
    finally:
        con.close()


def _grid_done(exp_dir: Path) -> bool:
    db = exp_dir / "results.sqlite"
    if not db.is_file():
        return False
    con = sqlite3.connect(db, timeout=30)
    try:
        (left,) = con.execute("SELECT count(*) FROM jobs WHERE state != 'done'").fetchone()
        (n,) = con.execute("SELECT count(*) FROM jobs").fetchone()
        return n > 0 and left == 0
    finally:
        con.close()


def reference(config: Path, out: Path, workers: int) -> float:
    t0 = time.time()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with (out / "reference.log").open("w") as f:
        r = subprocess.run(_leka("exp", "run", str(config), "--out", str(out / "reference"), "--workers", str(workers),
                                 "--no-report"), env=env, stdout=f, stderr=subprocess.STDOUT, cwd=ROOT, timeout=3600)
    if r.returncode != 0:
        raise SystemExit(f"the undisturbed grid failed (rc {r.returncode}); see {out / 'reference.log'}")
    return time.time() - t0


def chaos(config: Path, out: Path, kills: int, seed: int, workers: int, gap: tuple[float, float],
          deadline_s: float) -> dict:
    rng = random.Random(seed)
    tmp = Path(f"/tmp/leka-chaos-{os.getpid()}")
    exp = out / "chaos"
    cl = Cluster(tmp, 6390 + os.getpid() % 500)
    log: list[dict] = []
    t0 = time.time()
    cl.up()
    drv = Driver([str(config), "--out", str(exp), "--address", cl.addr, "--workers", str(workers), "--no-report"],
                 cl.env, out / "chaos_driver.log")
    try:
        drv.start(None)
        while len(log) < kills and time.time() - t0 < deadline_s and not _grid_done(exp):
            time.sleep(rng.uniform(*gap))
            if not drv.running():  # ended by itself (done, or an error): resume unless done
                if _grid_done(exp):
                    break
                drv.start(exp)
                continue
            kind = rng.choice(["worker", "worker", "raylet", "driver"])
            workers_now = _job_workers()
            if kind == "worker" and not workers_now:
                kind = "driver"
            t = round(time.time() - t0, 1)
            if kind == "worker":
                p = rng.choice(workers_now)
                p.kill()
                log.append({"t": t, "kill": "worker", "pid": p.pid})
            elif kind == "raylet":
                if cl.node2 and psutil.pid_exists(cl.node2):
                    os.kill(cl.node2, signal.SIGKILL)
                log.append({"t": t, "kill": "raylet (node 2)", "pid": cl.node2})
                time.sleep(rng.uniform(2, 6))  # the node is lost; its jobs are rescheduled on the head meanwhile
                cl.start_node2()
            else:
                pid = drv.proc.pid
                drv.kill()
                log.append({"t": t, "kill": "driver", "pid": pid})
                time.sleep(1.0)
                drv.start(exp)
        # the kills are spent: let the grid finish, resuming once more if its driver ends short of done
        for _ in range(3):
            while drv.running() and time.time() - t0 < deadline_s:
                time.sleep(2)
            if _grid_done(exp) or time.time() - t0 >= deadline_s:
                break
            drv.start(exp)
    finally:
        drv.kill()
        cl.down()
    return {"kills": log, "driver_starts": drv.starts, "wall_s": round(time.time() - t0, 1)}


def compare(out: Path) -> dict:
    ref, got = _rows(out / "reference"), _rows(out / "chaos")
    events = _events(out / "chaos")
    jobs = []
    for jid in sorted(ref):
        a, b = ref[jid], got.get(jid, {})
        diff = [k for k in TIMELESS if a.get(k) != b.get(k)]
        if a["_tree"] != b.get("_tree"):
            diff.append("tree")
        attempt_dir = (out / "chaos" / b.get("attempt_dir", "")).parent if b.get("attempt_dir") else None
        completed = sorted(p.parent.name for p in attempt_dir.glob("a*/job_result.json")) if attempt_dir else []
        jobs.append({"job": jid, "state": b.get("_state"), "attempts": b.get("attempt"),
                     "done_events": sum(1 for j, _, w in events if j == jid and w == "done"),
                     "completed_attempts": completed, "differs": diff,
                     "requeued": sum(1 for j, _, w in events if j == jid and w.startswith("requeued"))})
    checks = {
        "every job done": all(j["state"] == "done" for j in jobs),
        "one done event per job": all(j["done_events"] == 1 for j in jobs),
        "no job run twice to completion": all(len(j["completed_attempts"]) <= 1 for j in jobs),
        "rows equal the undisturbed run's (but timing)": all(not j["differs"] for j in jobs),
        "no job missing": set(got) == set(ref),
    }
    return {"jobs": jobs, "checks": checks, "ok": all(checks.values())}


def render(res: dict) -> str:
    kinds: dict[str, int] = {}
    for k in res["kills"]:
        kinds[k["kill"]] = kinds.get(k["kill"], 0) + 1
    lines = [f"kills: {len(res['kills'])} ({', '.join(f'{v} {k}' for k, v in sorted(kinds.items()))}); driver started "
             f"{res['driver_starts']} times; chaos run {res['wall_s']:.0f} s, undisturbed {res['reference_s']:.0f} s", "",
             "| job | state | attempts | requeued | done events | attempts with a result | differs from undisturbed |",
             "|---|---|---|---|---|---|---|"]
    for j in res["jobs"]:
        lines.append(f"| {j['job']} | {j['state']} | {j['attempts']} | {j['requeued']} | {j['done_events']} | "
                     f"{','.join(j['completed_attempts']) or '-'} | {', '.join(j['differs']) or 'no'} |")
    lines += ["", "| check | holds |", "|---|---|"] + [f"| {k} | {'yes' if v else '**no**'} |"
                                                      for k, v in res["checks"].items()]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default=str(ROOT / "experiments/configs/chaos.yaml"))
    ap.add_argument("--out", default=str(ROOT / "experiments/out" / time.strftime("chaos-%Y%m%d-%H%M%S")))
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--gap", default="4,12", help="seconds between kills, drawn uniformly from LO,HI")
    ap.add_argument("--deadline-s", type=float, default=2400)
    ap.add_argument("--render", help="print the markdown of a finished run's chaos.json and stop")
    a = ap.parse_args()
    if a.render:
        print(render(json.loads(Path(a.render).read_text())))
        return
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    lo, hi = (float(x) for x in a.gap.split(","))
    ref_s = reference(Path(a.config), out, a.workers)
    res = chaos(Path(a.config), out, a.kills, a.seed, a.workers, (lo, hi), a.deadline_s)
    cfg = Path(a.config).resolve()
    # the record is committed: the config as the repo names it, not as this machine does
    res.update(compare(out), reference_s=ref_s, config=str(cfg.relative_to(ROOT)) if cfg.is_relative_to(ROOT) else cfg.name,
               seed=a.seed)
    (out / "chaos.json").write_text(json.dumps(res, indent=1))
    print(render(res))
    sys.exit(0 if res["ok"] else 1)


if __name__ == "__main__":
    main()
