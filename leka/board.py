"""An emulated ARM board: TVM's RPC server running as an aarch64 program under `qemu-aarch64`, for
tests, demos and users without a phone (docs/boards.md, "An emulated aarch64 board").

    leka board setup aarch64            # once (what `make boards` runs): qemu-user, the cross g++, the sysroot
    leka board emulate aarch64          # starts a tracker (or --tracker HOST:PORT) and the board; prints --config
    leka run --task l1_relu --config .leka-cache/boards/aarch64/board.yaml
    leka board stop aarch64             # ends every process it started

The board's sysroot (`.leka-cache/boards/aarch64/sysroot`, ignored) is assembled from Debian's arm64
packages (the C library, libstdc++, libgomp, Python 3.11: `apt-get download`, `dpkg-deb -x`; no
package is installed for arm64) and the aarch64 wheels of the host's apache-tvm from PyPI (`pip
download --platform ...`, unpacked); binfmt_misc is not needed: the server is started as
`qemu-aarch64 -L SYSROOT SYSROOT/usr/bin/python3.11` running TVM's RPC server loop with the runtime-only
TVM library (TVM_USE_RUNTIME_LIB=1: no compiler is loaded on a board).

The board's config says `device.emulated: true`: checks on it count, times do not (every timed result
says timing_valid false, benchmark/judge/remote_job.py `mark_emulated`).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

import yaml

from leka.backends.paths import cache_home
from leka.core.types import UserError


@dataclass(frozen=True)
class Arch:
    """An emulated instruction set: its qemu, the Debian architecture of its sysroot packages, the
    wheel platforms of its TVM, the cross compiler of the host and the board's default target."""

    name: str
    qemu: str
    debian: str
    platforms: tuple[str, ...]
    cross_compiler: str
    apt: tuple[str, ...]
    target: dict


# Debian 12's Python is 3.11: the sysroot's interpreter, and the ABI of the wheels unpacked beside it
PYTHON = "3.11"
SYSROOT_DEBS = ("libc6", "libstdc++6", "libgcc-s1", "libgomp1", "zlib1g", "libexpat1", "libffi8", "libssl3",
                "libbz2-1.0", "liblzma5", f"python{PYTHON}-minimal", f"libpython{PYTHON}-minimal",
                f"libpython{PYTHON}-stdlib")

ARCHES = {
    "aarch64": Arch(
        name="aarch64", qemu="qemu-aarch64", debian="arm64",
        platforms=("manylinux2014_aarch64", "manylinux_2_28_aarch64"),
        cross_compiler="aarch64-linux-gnu-g++", apt=("qemu-user", "g++-aarch64-linux-gnu"),
        # qemu-user's default CPU ("max") runs every ARMv8 extension; the target is a phone-class core
        target={"mtriple": "aarch64-linux-gnu", "mcpu": "cortex-a76", "mattr": ["+neon"], "num-cores": 2},
    ),
}


class BoardError(UserError):
    """The emulated board cannot be set up or started; the message says what to do."""


def arch_of(name: str) -> Arch:
    if name not in ARCHES:
        raise BoardError(f"no emulated board {name!r}; use one of {', '.join(ARCHES)}")
    return ARCHES[name]


def home(arch: str) -> Path:
    return cache_home() / "boards" / arch


def sysroot(arch: str) -> Path:
    return home(arch) / "sysroot"


def _stamp(arch: str) -> Path:
    return home(arch) / "sysroot.json"


def tvm_version() -> str:
    from importlib.metadata import version

    return version("apache-tvm")


def is_ready(arch: str) -> str | None:
    """None when the board can start; else what is missing (one line)."""
    a = arch_of(arch)
    for tool in (a.qemu, a.cross_compiler):
        if shutil.which(tool) is None:
            return f"{tool} not found: run `make boards` (apt-get install {' '.join(a.apt)}, as root)"
    st = _stamp(arch)
    if not st.is_file():
        return f"no sysroot at {sysroot(arch)}: run `make boards` (leka board setup {arch})"
    if json.loads(st.read_text()).get("tvm") != tvm_version():
        return f"the sysroot's TVM is not this host's {tvm_version()}: run `leka board setup {arch} --force`"
    return None


def _run(cmd: list[str], **kw) -> None:
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise BoardError(f"{' '.join(cmd[:4])} ... failed (exit {r.returncode}): {(r.stderr or r.stdout).strip()[-800:]}")


def setup(arch: str = "aarch64", install: bool = True, force: bool = False, log=print) -> Path:
    """Install the host tools (apt, as root) and assemble the board's sysroot; cached: a second call
    with the same TVM version does nothing."""
    a = arch_of(arch)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    missing = [p for p, tool in zip(a.apt, (a.qemu, a.cross_compiler), strict=True) if shutil.which(tool) is None]
    if missing:
        if not install:
            raise BoardError(f"missing {' '.join(missing)}: apt-get install -y {' '.join(missing)} (as root)")
        log(f"apt-get install {' '.join(missing)}")
        _run(["apt-get", "update", "-qq"], env=env)
        _run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing], env=env)
    if is_ready(arch) is None and not force:
        log(f"{sysroot(arch)} is ready (--force rebuilds)")
        return sysroot(arch)
    h = home(arch)
    debs, wheels, root = h / "debs", h / "wheels", sysroot(arch)
    for d in (debs, wheels, root):
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
    # arm64 package lists, for `apt-get download` only: nothing of arm64 is installed on the host
    foreign = subprocess.run(["dpkg", "--print-foreign-architectures"], capture_output=True, text=True).stdout.split()
    if a.debian not in foreign:
        log(f"dpkg --add-architecture {a.debian}")
        _run(["dpkg", "--add-architecture", a.debian])
        _run(["apt-get", "update", "-qq"], env=env)
    log(f"apt-get download {len(SYSROOT_DEBS)} {a.debian} packages")
    try:
        _run(["apt-get", "download", *(f"{p}:{a.debian}" for p in SYSROOT_DEBS)], cwd=debs, env=env)
    except BoardError:  # package lists older than the arch: once more after an update
        _run(["apt-get", "update", "-qq"], env=env)
        _run(["apt-get", "download", *(f"{p}:{a.debian}" for p in SYSROOT_DEBS)], cwd=debs, env=env)
    for deb in sorted(debs.glob("*.deb")):
        _run(["dpkg-deb", "-x", str(deb), str(root)])
    plat = [x for p in a.platforms for x in ("--platform", p)]
    log(f"pip download apache-tvm=={tvm_version()} for {arch}")
    _run([sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:", *plat, "--python-version", PYTHON,
          f"apache-tvm=={tvm_version()}", "-d", str(wheels)])
    site = root / "opt" / "tvm"
    for whl in sorted(wheels.glob("*.whl")):
        with zipfile.ZipFile(whl) as z:
            z.extractall(site)
    for so in site.rglob("*.so*"):  # zipfile drops the mode bits
        so.chmod(0o755)
    shutil.rmtree(debs, ignore_errors=True)
    shutil.rmtree(wheels, ignore_errors=True)
    _stamp(arch).write_text(json.dumps({"tvm": tvm_version(), "python": PYTHON, "debs": list(SYSROOT_DEBS)}))
    log(f"sysroot ready: {root}")
    return root


def server_command(arch: str, port: int, tracker: tuple[str, int], key: str) -> tuple[list[str], dict[str, str]]:
    """The board's RPC server as an aarch64 program under qemu, and its environment."""
    a, root = arch_of(arch), sysroot(arch)
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root / "opt" / "tvm"), "TVM_USE_RUNTIME_LIB": "1",
           "PYTHONDONTWRITEBYTECODE": "1", "HOME": str(home(arch))}
    cmd = [a.qemu, "-L", str(root), str(root / "usr" / "bin" / f"python{PYTHON}"), "-c",
           _SERVE.format(port=port, tracker=tuple(tracker), key=key)]
    return cmd, env


# `tvm.exec.rpc_server` runs its listener in a fresh interpreter (`sys.executable`, TVM's PopenWorker):
# under qemu-user without binfmt_misc an aarch64 program cannot exec another, so the board runs the
# function that worker would run, in its own process; sessions are forked from it (no exec) as usual
_SERVE = """
import ctypes, os, threading
import tvm
# the wheel's runtime-only mode leaves out its contrib kernels (sort, topk, ...), which a board's
# `make runtime` build has: load them as a board would have them
ctypes.CDLL(os.path.join(os.path.dirname(tvm.__file__), "lib", "libtvm_runtime_extra.so"), ctypes.RTLD_GLOBAL)
from tvm.rpc.server import _popen_start_rpc_server
_popen_start_rpc_server("127.0.0.1", {port}, {port} + 1, False, {tracker!r}, {key!r}, None, None, True)
threading.Event().wait()
"""


@dataclass
class Emulated:
    """A running emulated board: its server's process group, and the tracker's when it started one."""

    arch: str
    key: str
    tracker: tuple[str, int]
    server_pid: int
    tracker_pid: int | None = None
    config: str = ""

    @property
    def url(self) -> str:
        return f"rpc://{self.tracker[0]}:{self.tracker[1]}/{self.key}"

    def device(self) -> dict:
        a = arch_of(self.arch)
        return {"url": self.url, "target": dict(a.target), "cross_compiler": a.cross_compiler, "emulated": True,
                "request_timeout_s": 300.0}

    def kill_server(self) -> None:
        _end_group(self.server_pid)

    def stop(self) -> None:
        _end_group(self.server_pid)
        if self.tracker_pid is not None:
            _end_group(self.tracker_pid)


def _alive(pid: int) -> bool:
    try:
        os.killpg(pid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _end_group(pgid: int, grace_s: float = 10.0) -> None:
    """SIGTERM the process group we started (its leader's pid), then SIGKILL what is left."""
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and _alive(pgid):
            try:  # a child of this process: reap it, or it stays a zombie and "alive"
                os.waitpid(pgid, os.WNOHANG)
            except ChildProcessError:
                pass
            time.sleep(0.1)
        if not _alive(pgid):
            break


def _free(tracker: tuple[str, int], key: str) -> int:
    from leka import tvm_adapter as A

    try:
        return int(A.rpc_tracker_summary(*tracker).get("queue_info", {}).get(key, {}).get("free", 0))
    except Exception:  # noqa: BLE001 - the tracker is starting
        return 0


def _wait_port(addr: tuple[str, int], timeout_s: float) -> None:
    """Until the tracker accepts connections: TVM's tracker client retries with a warning per try."""
    import socket

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(addr, timeout=2):
                return
        except OSError:
            time.sleep(0.3)
    raise BoardError(f"no tracker answers at {addr[0]}:{addr[1]} after {timeout_s:.0f} s")


def start_server(arch: str, tracker: tuple[str, int], key: str, timeout_s: float = 600.0,
                 log_path: Path | None = None) -> int:
    """Start the board's server; returns its pid (= its process group) once the tracker lists it."""
    from leka.ir.remote import free_port

    why = is_ready(arch)
    if why:
        raise BoardError(why)
    cmd, env = server_command(arch, free_port(), tracker, key)
    log = open(log_path, "ab") if log_path else subprocess.DEVNULL  # noqa: SIM115 - handed to the child
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                            cwd=str(home(arch)))
    deadline = time.monotonic() + timeout_s
    # Importing TVM under qemu takes 20-60 s (one loaded core): wait until the board has registered
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise BoardError(f"the emulated {arch} server exited with {proc.returncode} while starting"
                             + (f" (log: {log_path})" if log_path else ""))
        if _free(tracker, key):
            return proc.pid
        time.sleep(1.0)
    _end_group(proc.pid)
    raise BoardError(f"the emulated {arch} board did not register at {tracker[0]}:{tracker[1]} within {timeout_s:.0f} s")


def emulate(arch: str = "aarch64", tracker: tuple[str, int] | None = None, key: str = "",
            timeout_s: float = 600.0) -> Emulated:
    """Start the board (and a tracker on 127.0.0.1 unless one is given); returns once it has registered."""
    from leka.ir.remote import free_port

    key = key or f"qemu-{arch}"
    h = home(arch)
    h.mkdir(parents=True, exist_ok=True)
    tracker_pid = None
    if tracker is None:
        port = free_port()
        tr = subprocess.Popen([sys.executable, "-m", "tvm.exec.rpc_tracker", "--host", "127.0.0.1", "--port",
                               str(port), "--port-end", str(port + 1)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
        tracker, tracker_pid = ("127.0.0.1", port), tr.pid
    try:
        _wait_port(tracker, timeout_s)
        pid = start_server(arch, tracker, key, timeout_s, log_path=h / "server.log")
    except BaseException:
        if tracker_pid is not None:
            _end_group(tracker_pid)
        raise
    return Emulated(arch=arch, key=key, tracker=tracker, server_pid=pid, tracker_pid=tracker_pid)


def _state(arch: str) -> Path:
    return home(arch) / "emulate.json"


def save(board: Emulated) -> Path:
    """The state `leka board stop` reads, and the config `leka run --config` takes."""
    cfg = home(board.arch) / "board.yaml"
    cfg.write_text(yaml.safe_dump({"backend": "llvm", "device": board.device()}, sort_keys=False))
    board.config = str(cfg)
    _state(board.arch).write_text(json.dumps(board.__dict__))
    return cfg


def load(arch: str) -> Emulated | None:
    p = _state(arch)
    if not p.is_file():
        return None
    d = json.loads(p.read_text())
    d["tracker"] = tuple(d["tracker"])
    return Emulated(**d)


def stop(arch: str) -> bool:
    """End the board started by `leka board emulate` (and its tracker); False when none was running."""
    b = load(arch)
    if b is None:
        return False
    b.stop()
    _state(arch).unlink(missing_ok=True)
    return True


# ----------------------------------------------------------------------------- `leka board`
def _app():
    import typer

    app = typer.Typer(no_args_is_help=True, add_completion=False)

    @app.command("setup")
    def setup_cmd(arch: str = typer.Argument("aarch64"),
                  install: bool = typer.Option(True, "--install-deps/--no-install-deps",
                                               help="apt-get qemu-user and the cross g++ when missing (root)"),
                  force: bool = typer.Option(False, "--force", help="assemble the sysroot anew")) -> None:
        """Install what the emulated board needs (what `make boards` runs); cached."""
        setup(arch, install=install, force=force, log=typer.echo)

    @app.command("emulate")
    def emulate_cmd(arch: str = typer.Argument("aarch64"),
                    tracker: str = typer.Option("", "--tracker", help="HOST:PORT of a tracker (default: start one)"),
                    key: str = typer.Option("", "--key", help="the key it registers under (default qemu-ARCH)"),
                    stop_it: bool = typer.Option(False, "--stop", help="stop the running board instead")) -> None:
        """Start an emulated board (TVM's RPC server under qemu) and print how to run on it."""
        if stop_it:
            typer.echo("stopped" if stop(arch) else f"no emulated {arch} board is running")
            return
        arch_of(arch)
        tr = None
        if tracker:
            host, _, port = tracker.rpartition(":")
            if not host or not port.isdigit():
                raise BoardError(f"--tracker {tracker!r}: expected HOST:PORT")
            tr = (host, int(port))
        if load(arch) is not None:
            raise BoardError(f"an emulated {arch} board is running already (`leka board stop {arch}` first)")
        t0 = time.monotonic()
        b = emulate(arch, tr, key)
        cfg = save(b)
        typer.echo(f"emulated {arch} board registered as {b.url} in {time.monotonic() - t0:.0f} s")
        typer.echo(f"  leka run --task l1_relu --config {cfg}      (times are marked emulated)")
        typer.echo(f"  leka board stop {arch}")

    @app.command("stop")
    def stop_cmd(arch: str = typer.Argument("aarch64")) -> None:
        """Stop the board `leka board emulate` started, and its tracker: no process is left."""
        typer.echo("stopped" if stop(arch) else f"no emulated {arch} board is running")

    @app.command("status")
    def status_cmd(arch: str = typer.Argument("aarch64")) -> None:
        why = is_ready(arch)
        b = load(arch)
        typer.echo(f"setup: {'ready' if why is None else why}")
        typer.echo(f"board: {b.url + ' (config ' + b.config + ')' if b and _alive(b.server_pid) else 'not running'}")

    return app


app = _app()
