"""Profile the two embedded example tasks (untuned root candidates) and show where the router sends them.

    python -m experiments.profile_demo            # mbv2 + llama examples, llvm
    python -m experiments.profile_demo --refresh  # re-measure this machine's roofs first
    python -m experiments.profile_demo --task benchmark/examples/mbv2_block.py

Prints each report's short text (what an agent's prompt gets) and the routing decision, and writes
the reports as JSON to experiments/out/profile_demo.json.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from agents.hw_sensing import HardwareSensingAgent
from benchmark.task import load_task_file
from leka import ir
from leka.core.protocols import AgentContext
from profilers.calibrate import peaks
from profilers.profile import profile_candidate

ROOT = Path(__file__).resolve().parents[1]

EXAMPLES = [ROOT / "benchmark" / "examples" / "mbv2_block.py", ROOT / "benchmark" / "examples" / "llama_block.py"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", action="append", help="task file (repeatable); default: the two examples")
    ap.add_argument("--backend", default="llvm")
    ap.add_argument("--refresh", action="store_true", help="re-measure the roofs")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    t0 = time.perf_counter()
    pk = peaks(args.backend if args.backend != "llvm" else None, refresh=args.refresh)
    print(f"roofs: {pk.gflops:.1f} GFLOP/s, {pk.gbps:.2f} GB/s ({pk.source}, {pk.cpu}, "
          f"measured in {pk.seconds:.2f} s)\n")
    out = {}
    for path in args.task or EXAMPLES:
        task = load_task_file(path)
        t1 = time.perf_counter()
        cand = ir.root_candidate(task, backend=args.backend)
        rep = profile_candidate(cand, repeat=args.repeat)
        route = HardwareSensingAgent().decide(cand, rep, AgentContext(task.id, args.backend, ""))
        print(f"== {task.id} ({time.perf_counter() - t1:.1f} s to import, build and profile)")
        print(rep.text())
        print(f"route: {route.level}  scores {route.scores}\n  {route.reason}\n")
        out[task.id] = {"report": rep.model_dump(), "route": route.model_dump()}
    dest = ROOT / "experiments" / "out" / "profile_demo.json"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps(out, indent=1))
    print(f"wrote {dest.relative_to(ROOT)} in {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
