"""ARM CPU boards: llvm targets from the device config, L2 C/C++ cross-compiled for the board, and an
emulated aarch64 board (leka/board.py: TVM's RPC server under qemu-aarch64) that `leka run --device
rpc://...` checks candidates on.

Default tier: the targets and the toolchain (no board), a NEON GEMM from the rule L2 agent run under
qemu against numpy, and one small task end to end on the emulated board. The `board` tier (`make
test-boards`, run by CI after `make test`): 5 llvm subset tasks end to end, one with an L2 C++ kernel
cross-compiled for the board; a board killed mid-evaluation; `leka board emulate/stop` leave no
process. CI installs what they need first (`make boards`, LEKA_REQUIRE_BOARD=1)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

from leka import tvm_adapter as A
from leka.core.devices import board_of, use_board

REPO = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data"
CROSS = "aarch64-linux-gnu-g++"
PHONE = {"url": "rpc://10.0.0.5:9190/phone", "cross_compiler": CROSS,
         "target": {"mtriple": "aarch64-linux-gnu", "mcpu": "cortex-a76", "mattr": ["+neon"], "num-cores": 4}}
EM_AARCH64 = 183  # ELF e_machine


def _need_cross() -> None:
    missing = [t for t in (CROSS, "qemu-aarch64") if shutil.which(t) is None]
    if missing:
        if os.environ.get("LEKA_REQUIRE_BOARD"):
            raise RuntimeError(f"{missing} not found: `make boards` installs them")
        pytest.skip(f"{missing} not found (`make boards`: apt-get install qemu-user g++-aarch64-linux-gnu)")


def _elf_machine(path: Path) -> int:
    return int.from_bytes(path.read_bytes()[18:20], "little")


def test_board_target_is_the_boards_not_this_machines():
    host = A.make_target("llvm")
    with use_board(PHONE):
        t = A.make_target("llvm")
        # the board's triple, core and cores; NEON's 4 fp32 lanes whatever this machine has
        assert str(t.attrs["mtriple"]) == "aarch64-linux-gnu" and str(t.attrs["mcpu"]) == "cortex-a76"
        assert int(t.attrs["num-cores"]) == 4 and A.vector_lanes_fp32(t) == 4
        assert A.cpu_arch(t) == "aarch64" and not A.runs_here(t)
        # a Jetson: CUDA for sm_87, host code for its aarch64 CPU
    with use_board({"url": "rpc://h:9190/orin", "target": {"arch": "sm_87", "host": {
            "kind": "llvm", "mtriple": "aarch64-linux-gnu", "mcpu": "cortex-a78"}}}):
        c = A.make_target("cuda")
        assert str(c.attrs["arch"]) == "sm_87" and A.cpu_arch(c) == "aarch64"
    # outside the run's block: this machine again
    assert A.make_target("llvm").export() == host.export() and A.runs_here(host)
    assert board_of({"url": "local"}) is None


def test_l2_cpp_is_cross_compiled_for_the_board(tmp_path):
    _need_cross()
    from leka import ir
    from leka.ir import l2 as L2

    src = ('#include <arm_neon.h>\n#include <cstdint>\n'
           'extern "C" int32_t k(float* x, float* y) {\n'
           '  for (int i = 0; i < 64; i += 4) vst1q_f32(y + i, vaddq_f32(vld1q_f32(x + i), vdupq_n_f32(1.f)));\n'
           '  return 0;\n}\n')
    with pytest.raises(L2.L2Error):  # NEON intrinsics do not build for this x86 machine
        ir.compile_l2_source("cpp", src, tmp_path / "host")
    with use_board(PHONE):
        tc = L2.toolchain()
        assert tc.cxx == CROSS and "-mcpu=cortex-a76" in tc.flags and "-march=native" not in tc.flags
        comp = ir.compile_l2_source("cpp", src, tmp_path / "board")
        sealed = L2.check_symbol(comp, "k")  # checked (l2_object) and sealed with the board's binutils
    assert _elf_machine(comp.obj) == EM_AARCH64 and _elf_machine(sealed.so) == EM_AARCH64
    # the same kernel with a call off the allow-list is still refused for the board
    with use_board(PHONE), pytest.raises(L2.IllegalObject):
        ir.compile_l2_source("cpp", src.replace("return 0;", 'return __builtin_printf("x");'), tmp_path / "b2")


def test_rule_l2_neon_gemm_is_right_under_qemu(tmp_path):
    """The NEON micro-kernel the rule L2 agent writes for an aarch64 board, run under qemu-aarch64 on
    a transposed (packed) B with row and column tails, against numpy."""
    _need_cross()
    from agents.l2_source import GemmShape, gemm_source

    m, n, k = 13, 37, 19  # tails in both directions
    g = GemmShape(batch=2, m=m, n=n, k=k, a=0, b=1, c=2, sa=(m * k, k, 1), sb=(n * k, 1, k), sc=(m * n, n, 1),
                  n_params=3)
    text = gemm_source(g, "gemm", lanes=4, mr=6, nv=2, arch="aarch64")
    assert "arm_neon.h" in text and "immintrin" not in text
    harness = text + f"""
#include <cstdio>
int main() {{
  static float a[{2 * m * k}], b[{2 * n * k}], c[{2 * m * n}];
  for (int i = 0; i < {2 * m * k}; ++i) a[i] = (float)((i * 7) % 11) - 5.f;
  for (int i = 0; i < {2 * n * k}; ++i) b[i] = (float)((i * 5) % 13) - 6.f;
  gemm(a, b, c);
  fwrite(c, sizeof(float), {2 * m * n}, stdout);
  return 0;
}}
"""
    (tmp_path / "g.cc").write_text(harness)
    exe = tmp_path / "g"
    subprocess.run([CROSS, "-O2", "-mcpu=cortex-a76", "-fopenmp", "-static", str(tmp_path / "g.cc"), "-o", str(exe)],
                   check=True, capture_output=True)
    out = subprocess.run(["qemu-aarch64", str(exe)], check=True, capture_output=True, timeout=120).stdout
    got = np.frombuffer(out, dtype=np.float32).reshape(2, m, n)
    a = (np.arange(2 * m * k) * 7 % 11 - 5).astype(np.float32).reshape(2, m, k)
    b = (np.arange(2 * n * k) * 5 % 13 - 6).astype(np.float32).reshape(2, n, k)  # B^T stored
    np.testing.assert_allclose(got, a @ b.transpose(0, 2, 1), rtol=1e-5, atol=1e-4)


def _board_config(board, tmp_path: Path, **extra) -> Path:
    cfg = tmp_path / "board.yaml"
    cfg.write_text(yaml.safe_dump({"device": {**board.device(), **extra}}))
    return cfg


def _leka_run(board, tmp_path: Path, task: str, *args: str, timeout: int = 900) -> dict:
    out = tmp_path / "runs"
    r = subprocess.run([sys.executable, "-m", "leka.cli", "run", "--task", task, "--backend", "llvm",
                        "--device", board.url, "--config", str(_board_config(board, tmp_path)),
                        "--budget", "10m", "--quiet", "--out", str(out), *args],
                       capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=timeout)
    assert r.returncode == 0, (r.stdout[-1500:], r.stderr[-2500:])
    (summary,) = out.glob("*/summary.json")
    return json.loads(summary.read_text())


def test_leka_run_on_the_emulated_board(emulated_board, tmp_path):
    s = _leka_run(emulated_board, tmp_path, str(DATA / "tiny_task.py"), "--max-evals", "2", "--layers", "L1")
    assert s["best_correct"] and s["evaluations"] == 2 and s["emulated"]
    # checked on the board, timed there, and never a speedup
    assert not s["best_timing_valid"] and not s["best_faster"]
    assert _elf_machine(Path(s["run_dir"]) / "best.so") == EM_AARCH64


# ----------------------------------------------------------------------------- the board tier
# l1_logsumexp calls TVM's contrib topk: the board's runtime must have it (libtvm_runtime_extra)
SUBSET_L1 = ["l1_gelu_tanh", "l1_channel_shuffle", "l1_mul_broadcast_channel", "l1_logsumexp"]


@pytest.mark.board
@pytest.mark.parametrize("task", SUBSET_L1)
def test_subset_task_on_the_emulated_board(emulated_board, tmp_path, task):
    s = _leka_run(emulated_board, tmp_path, task, "--max-evals", "2", "--layers", "L1")
    assert s["best_correct"] and s["evaluations"] == 2 and not s["best_faster"]


@pytest.mark.board
def test_l2_cpp_kernel_cross_compiled_and_checked_on_the_board(emulated_board, tmp_path):
    s = _leka_run(emulated_board, tmp_path, "l2_dequant_int4_linear", "--max-evals", "2", "--layers", "L2",
                  "--routing", "fixed:L2")
    run = Path(s["run_dir"])
    l2 = [n for n in (run / "nodes").iterdir() if list(n.glob("l2/*.cpp"))]
    assert l2, "the rule L2 agent wrote a C++ kernel"
    assert "arm_neon.h" in next(l2[0].glob("l2/*.cpp")).read_text()
    from candidate_tree import Tree

    tree = Tree(run)
    try:
        checked = [n for n in tree.nodes() if n.level == "L2" and n.result is not None]
        assert checked and all(n.result.correct for n in checked), [n.result.error for n in checked]
    finally:
        tree.close()


def _kill_when_busy(board, key: str, done: threading.Event) -> None:
    deadline = time.monotonic() + 600
    seen_free = False
    while time.monotonic() < deadline and not done.is_set():
        try:
            free = A.rpc_tracker_summary(*board.tracker).get("queue_info", {}).get(key, {}).get("free", 0)
        except Exception:  # noqa: BLE001
            free = 0
        seen_free = seen_free or free > 0
        if seen_free and free == 0:
            time.sleep(2.0)
            board.kill_server()
            return
        time.sleep(0.2)


@pytest.mark.board
def test_board_killed_mid_evaluation_is_one_failed_evaluation(emulated_board, tmp_path):
    from benchmark.judge import Evaluator
    from benchmark.task import load_task_file
    from leka import board as B
    from leka.core.config import DeviceConfig, EvaluatorConfig

    task = load_task_file(DATA / "tiny_task.py")
    dev = DeviceConfig(**emulated_board.device())
    ev = Evaluator(EvaluatorConfig(min_pairs=200, max_pairs=200, timing_budget_s=120.0, timeout_s=600,
                                   ci_width=0.0), backend="llvm", cache_dir=str(tmp_path), device=dev)
    done = threading.Event()
    killer = threading.Thread(target=_kill_when_busy, args=(emulated_board, emulated_board.key, done), daemon=True)
    killer.start()
    res = ev.evaluate(task)
    done.set()
    killer.join(5)
    assert res.error_kind == "runtime" and f"device {dev.url}" in res.error, (res.error_kind, res.error)
    # the run goes on: a new board under the same key serves the next evaluation
    emulated_board.server_pid = B.start_server("aarch64", emulated_board.tracker, emulated_board.key)
    ev.cfg = EvaluatorConfig(timeout_s=600)
    res2 = ev.evaluate(task, time_it=False)
    assert res2.correct, res2.error


@pytest.mark.board
def test_board_emulate_and_stop_leave_no_process(tmp_path):
    from leka import board as B

    if B.is_ready("aarch64"):
        pytest.skip(B.is_ready("aarch64"))
    if B.load("aarch64") is not None:
        pytest.skip("an emulated board of this checkout is running (leka board stop aarch64)")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    r = subprocess.run([sys.executable, "-m", "leka.cli", "board", "emulate", "aarch64", "--key", "qemu-cli"],
                       capture_output=True, text=True, env=env, timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    b = B.load("aarch64")
    assert b is not None and "qemu-cli" in r.stdout
    assert yaml.safe_load(Path(b.config).read_text())["device"]["emulated"] is True
    r = subprocess.run([sys.executable, "-m", "leka.cli", "board", "stop", "aarch64"], capture_output=True,
                       text=True, env=env, timeout=120)
    assert r.returncode == 0 and "stopped" in r.stdout
    left = [p for p in _group_members({b.server_pid, b.tracker_pid})]
    assert not left, left
    assert B.load("aarch64") is None


def _group_members(groups: set[int | None]) -> list[str]:
    """Live (not zombie) processes of these process groups: the server's forked sessions included."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[2]) in groups:
            out.append(stat.parent.name)
    return out


def test_board_bad_input_is_one_line():
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for args, needle in ((["emulate", "riscv64"], "no emulated board 'riscv64'"),
                         (["emulate", "aarch64", "--tracker", "nohost"], "expected HOST:PORT")):
        r = subprocess.run([sys.executable, "-m", "leka.cli", "board", *args], capture_output=True, text=True,
                           env=env, timeout=300)
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
        assert r.returncode == 2 and len(lines) == 1 and needle in lines[0], (args, r.returncode, r.stderr[-800:])


def test_a_task_with_several_outputs_is_checked_through_rpc(tmp_path):
    """main returning a tuple of tensors (torch.chunk): the board hands the fields back one by one (RPC
    cannot index a remote tuple). A host llvm server stands in for the board here."""
    from benchmark.judge import Evaluator
    from benchmark.task import resolve
    from leka.core.config import DeviceConfig, EvaluatorConfig
    from leka.ir import remote

    with remote.start_tracker() as tr:
        srv = remote.start_server(tracker=(tr.host, tr.port), key="host")
        try:
            dev = DeviceConfig(url=f"rpc://{tr.host}:{tr.port}/host", request_timeout_s=120)
            ev = Evaluator(EvaluatorConfig(timeout_s=300), backend="llvm", cache_dir=str(tmp_path), device=dev)
            res = ev.evaluate(resolve("l1_split_chunk"), time_it=False)
        finally:
            srv.stop()
    assert res.compiled and res.correct, res.error
