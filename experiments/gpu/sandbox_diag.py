"""Which of the sandbox's layers a device backend's worker trips on (issue 26, run on the GPU host).

Each variant runs one evaluation job (`benchmark.judge.job.run_job`, in a forked child of this process,
so the variant's change to the worker's layers applies) of a task's root against untuned TVM:
`full` is the default sandbox; the others drop one layer (`no_seccomp`, `no_jail`, `no_limits`) or add
one group of system calls to the allow-list (`+open`, `+clone`, `+exec_mem`, `+misc`). A variant that
passes where `full` fails names what the device's driver needs. Prints one line per variant. On the CPU
(`--backend llvm`) `in_process` (no sandbox) and `no_pin` (threads placed by the kernel) with `--rounds N`
compare the root's absolute time (`t_cand_us`) per layer: where the sandbox's time goes; `no_refill`,
`fixed_pos` and `stale_inputs` keep every layer but turn the input protocol's freshness off in part
(inputs filled once, windows at fixed offsets, both): what the fresh inputs cost; `hold0`, `hold1`,
`hold3` keep every call's outputs or the last 1 or 3 calls' (`evaluator.sandbox_hold`; the other variants
keep its default): what fresh output pages cost. `--candidate
RUN_DIR` times a run's best node instead of the root; `worker_us` is the worker's own clock per call.

    python3 experiments/gpu/sandbox_diag.py --backend cuda --task l1_mish [--variants full,no_seccomp]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

# as benchmark/judge/runner.py sets them for its evaluation children: tvm_ffi's import asks torch whether CUDA
# is there, which must not initialise it in a process that forks device workers
os.environ.setdefault("TVM_FFI_DISABLE_TORCH_C_DLPACK", "1")
os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")

GROUPS = {
    "+open": ("open", "openat", "openat2", "access", "faccessat", "faccessat2", "stat", "lstat", "newfstatat",
              "statx", "readlink", "readlinkat", "getdents64"),
    "+clone": ("clone", "clone3", "set_robust_list", "unshare"),
    "+exec_mem": (),  # mmap / mprotect with PROT_EXEC
    "+misc": ("sched_setaffinity", "setpriority", "prctl", "mlock", "munlock", "mincore", "shmget", "shmat",
              "shmctl", "eventfd2", "epoll_create1", "epoll_ctl", "epoll_wait", "epoll_pwait", "pipe2", "kill",
              "tkill", "socket", "connect", "memfd_create", "ftruncate", "fallocate", "msync", "set_mempolicy",
              "get_mempolicy", "mbind"),
}


def _protocol(refill: bool, positions: bool) -> None:
    """The sandboxed timing's input protocol with one of its two freshness rules off: `refill` False =
    the pool filled once, not before every request; `positions` False = every call's window at its
    copy's start (consecutive calls still alternate copies, as the in-process loop's two sets do)."""
    from benchmark.judge.sandbox import timing as T

    filled: set[int] = set()

    def rows(self, n):
        pool, rng = self.st.pool, self.rng
        t = time.perf_counter()
        if refill or id(pool) not in filled:
            pool.fill(self.make, rng.randrange(10**6, 2**31 - 10**5), slack_seed=rng.randrange(10**6, 2**31 - 10**5))
            filled.add(id(pool))
        t = time.perf_counter() - t
        # a copy's windows are disjoint (benchmark/judge/sandbox/pool.py): calls on one copy take distinct ones
        per_input = [rng.sample(range(pool.positions), -(-n // pool.sets)) if positions else [0] * n
                     for _ in pool.specs]
        first = rng.randrange(pool.sets)
        return [[pool.offset(i, first + c, per_input[i][c // pool.sets if positions else c])
                 for i in range(len(pool.specs))] for c in range(n)], t

    T._Arm._rows = rows


# sandboxed, with the input protocol's freshness partly off: (refill before every request, drawn positions)
PROTOCOL = {"no_refill": (False, True), "fixed_pos": (True, False), "stale_inputs": (False, False)}


def _patch(variant: str) -> None:
    from benchmark.judge.sandbox import worker as W

    if variant in PROTOCOL:
        _protocol(*PROTOCOL[variant])
    elif variant == "no_seccomp":
        W._seccomp = lambda sc, pid, device=False: None
    elif variant == "no_jail":
        W._jail = lambda root: []
    elif variant == "no_limits":
        W._limits = lambda limit: None
    elif variant in GROUPS:
        orig = W._seccomp

        def more(sc, pid, device=False):
            real_load = sc.SyscallFilter.load

            def load(self):
                for name in GROUPS[variant]:
                    try:
                        self.add_rule(sc.ALLOW, name)
                    except Exception:  # noqa: BLE001 - not on this architecture, or already a rule
                        pass
                if variant == "+exec_mem":
                    for name in ("mmap", "mprotect"):
                        self.add_rule(sc.ALLOW, name, sc.Arg(2, sc.MASKED_EQ, 0x4, 0x4))
                return real_load(self)

            sc.SyscallFilter.load = load
            try:
                orig(sc, pid, device=device)
            finally:
                sc.SyscallFilter.load = real_load

        W._seccomp = more


# sandboxed, the worker keeping the last N calls' outputs (evaluator.sandbox_hold; 0: every call's, the
# count from 3/4 of the plan to all of it); every other variant keeps the config's default
HOLD = {"hold0": 0, "hold1": 1, "hold3": 3}
# sandboxed, with or without the untimed call before each sampled request (evaluator.sandbox_warm_call)
WARM = {"warm": True, "no_warm": False}


def _own_us(diag: list) -> float | None:
    """The candidate worker's own clock per call (median over its timed requests): the kernel's time
    without the request around it."""
    xs = sorted(r[3] / r[1] for r in diag or [] if r[0] == "c" and r[3] is not None and r[5] and r[1])
    return xs[len(xs) // 2] * 1e6 if xs else None


def run_variant(variant: str, task, backend: str, cache: str, cand=None) -> dict:
    from leka.core.config import EvaluatorConfig

    hold = {"sandbox_hold": HOLD[variant]} if variant in HOLD else {}
    if variant in WARM:
        hold["sandbox_warm_call"] = WARM[variant]
    cfg = EvaluatorConfig(timeout_s=300, memory_cap_gb=16.0, timing_budget_s=1.0, sandbox=variant != "in_process",
                          sandbox_pin=variant != "no_pin", timing_diag=True, **hold)
    job = {"task_path": str(task.path), "task_id": task.id, "backend": backend,
           "candidate": cand.model_dump(mode="json") if cand is not None else None,
           "evaluator": cfg.model_dump(mode="json"), "baseline": "untuned", "time": True, "profile": True,
           "export": None, "cache_dir": cache, "threads": len(os.sched_getaffinity(0)), "device": None}
    out = tempfile.mktemp(prefix="leka-diag-", suffix=".json")
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            _patch(variant)
            from benchmark.judge import run_job

            run_job(job, out)
        except BaseException:  # noqa: BLE001
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    wall = time.perf_counter() - t0
    if not os.path.exists(out):
        return {"variant": variant, "died": status, "wall_s": round(wall, 1)}
    res = json.loads(open(out).read())
    r = res["result"]
    prof = res.get("profile") or {}
    return {"variant": variant, "correct": r.get("correct"), "error_kind": r.get("error_kind"),
            "error": (r.get("error") or "")[:600], "speedup": r.get("speedup"),
            "interval": [r.get("speedup_lo"), r.get("speedup_hi")], "t_cand_us": (r.get("t_candidate_s") or 0) * 1e6,
            "t_base_us": (r.get("t_baseline_s") or 0) * 1e6, "worker_us": _own_us(r.get("extra", {}).get("timing_diag")),
            "sandbox": r.get("extra", {}).get("sandbox"), "timer": r.get("extra", {}).get("timer"),
            "threads": r.get("extra", {}).get("sandbox_threads"), "profile": "error" if prof.get("error") else "ok",
            "wall_s": round(wall, 1), "timing_diag": r.get("extra", {}).get("timing_diag")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--task", default="l1_mish")
    ap.add_argument("--variants", default="full,no_seccomp,no_jail,no_limits,+open,+clone,+exec_mem,+misc")
    ap.add_argument("--stop-on-pass", action="store_true", help="after `full`, run the others only if it failed")
    ap.add_argument("--rounds", type=int, default=1, help="the variants this many times, in turn")
    ap.add_argument("--diag-out", default=None, metavar="FILE",
                    help="each variant's requests (timing_diag: arm, calls, seconds, ...) as JSON lines here")
    ap.add_argument("--candidate", default=None, metavar="RUN_DIR",
                    help="a `leka run` folder: its best node instead of the task's root (llvm)")
    args = ap.parse_args()
    from pathlib import Path

    from benchmark.task import resolve
    from leka.ir.files import load_candidate

    task = resolve(args.task)
    cache = tempfile.mkdtemp(prefix="leka-diag-cache-")
    cand = load_candidate(task, Path(args.candidate), args.backend, workdir=Path(cache) / "candidates") \
        if args.candidate else None
    for _ in range(args.rounds):
        for v in args.variants.split(","):
            row = run_variant(v, task, args.backend, cache, cand)
            requests = row.pop("timing_diag", None)
            if args.diag_out:
                with open(args.diag_out, "a") as f:
                    f.write(json.dumps({"variant": v, "requests": requests}) + "\n")
            print(json.dumps(row), flush=True)
            if v == "full" and row.get("correct") and args.stop_on_pass:
                return


if __name__ == "__main__":
    main()
