"""Inside a sandboxed worker (benchmark/judge/sandbox/control.py forks it; docs/threat_model.md): file descriptors
closed, the environment emptied, the empty root and unprivileged uid, the resource limits, the seccomp
allow-list, then the request loop. Nothing here returns to the judge's code: a worker ends in
`os._exit`."""

from __future__ import annotations

import ctypes
import errno
import mmap
import os
import socket
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.ctypeslib  # noqa: F401 - loaded before a worker's root is emptied (its Python loops use it)

from benchmark.judge import proc
from benchmark.judge.sandbox.wire import LIBC, RECORD, Served, dtype_code, recv_frame, send_frame
from leka.core.confine import NOBODY

try:  # loaded here, in the judge (and the forkserver that preloads it), not in every worker
    import pyseccomp as _seccomp_lib
except (ImportError, OSError) as _e:  # no libseccomp.so.2: workers refuse to start (fail closed)
    _seccomp_lib = None
    _SECCOMP_MISSING = f"{type(_e).__name__}: {_e}"



def _close_fds(keep: set[int]) -> None:
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    keep = keep | {0, 1, 2}
    try:
        fds = [int(x) for x in os.listdir("/proc/self/fd")]
    except OSError:
        fds = list(range(3, 4096))
    for fd in fds:
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def _vm_bytes(field: str = "VmData") -> int:
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0


def _jail(root_dir: str | None) -> list[str]:
    """An empty root and an unprivileged uid: as root directly, else inside a new user namespace where
    the machine allows one. The layers that held, by name."""
    layers: list[str] = []
    if root_dir is None:
        return layers
    uid, gid = os.geteuid(), os.getegid()
    if uid != 0:
        CLONE_NEWUSER = 0x10000000
        if LIBC.unshare(CLONE_NEWUSER) != 0:
            return layers  # no user namespaces here: seccomp alone
        try:
            with open("/proc/self/setgroups", "w") as f:
                f.write("deny")
            with open("/proc/self/uid_map", "w") as f:
                f.write(f"0 {uid} 1")
            with open("/proc/self/gid_map", "w") as f:
                f.write(f"0 {gid} 1")
        except OSError:
            return layers
        layers.append("userns")
    os.chroot(root_dir)
    os.chdir("/")
    layers.append("chroot")
    if os.geteuid() == 0 and uid == 0:
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)
        layers.append("uid nobody")
    return layers


def _limits(data_limit: int | None, address_space: bool = True) -> None:
    """No file written, no core, nothing locked; the data segment and (`address_space`) the whole
    address space bounded by the memory cap above what the worker holds now, after its warm-up."""
    import resource

    for lim, val in ((resource.RLIMIT_FSIZE, 0), (resource.RLIMIT_CORE, 0), (resource.RLIMIT_MEMLOCK, 0)):
        try:
            resource.setrlimit(lim, (val, val))
        except (ValueError, OSError):
            pass
    if data_limit:
        try:
            cur = _vm_bytes()
            resource.setrlimit(resource.RLIMIT_DATA, (cur + data_limit, cur + data_limit))
        except (ValueError, OSError):
            pass
    if data_limit and address_space:
        # RLIMIT_DATA does not count shared mappings: MAP_SHARED|MAP_ANONYMOUS memory went past a 2 GiB
        # cap to 3.4 GiB before the runner's once-a-second poll saw it (issue 43). The address space
        # counts every mapping; measured now, its thread stacks and the pool are in it already. Not on a
        # device: its driver reserves address space as it goes (CUDA's unified memory)
        try:
            cur = _vm_bytes("VmSize")
            resource.setrlimit(resource.RLIMIT_AS, (cur + data_limit, cur + data_limit))
        except (ValueError, OSError):
            pass


# What a running kernel needs. Everything else fails with EPERM (an unknown new syscall included).
ALLOWED = (
    "read", "write", "readv", "writev", "recvfrom", "recvmsg", "sendto", "sendmsg", "close", "fstat",
    "lseek", "brk", "munmap", "mremap", "madvise", "futex", "sched_yield", "sched_getaffinity",
    "getpid", "gettid", "getppid", "getuid", "geteuid", "getgid", "getegid", "clock_gettime",
    "clock_getres", "gettimeofday", "nanosleep", "clock_nanosleep", "rt_sigaction", "rt_sigprocmask",
    "rt_sigreturn", "sigaltstack", "exit", "exit_group", "getrandom", "poll", "ppoll", "select",
    "pselect6", "getrusage", "times", "sysinfo", "uname", "membarrier", "rseq", "restart_syscall",
    "getcpu", "fcntl", "sched_getparam", "sched_getscheduler", "getpriority", "getrlimit", "dup",
)


def _seccomp(sc: Any, own_pid: int, device: bool = False) -> None:
    f = sc.SyscallFilter(defaction=sc.ERRNO(errno.EPERM))
    if device:  # the driver's requests on the device files it opened during the setup (none opened later)
        f.add_rule(sc.ALLOW, "ioctl")
    for name in ALLOWED:
        try:
            f.add_rule(sc.ALLOW, name)
        except (RuntimeError, OSError, ValueError):
            pass  # a name this architecture does not have
    prot_exec = 0x4
    # memory may be mapped and protected, never executable (no new code after the filter)
    f.add_rule(sc.ALLOW, "mmap", sc.Arg(2, sc.MASKED_EQ, prot_exec, 0))
    f.add_rule(sc.ALLOW, "mprotect", sc.Arg(2, sc.MASKED_EQ, prot_exec, 0))
    # signals to itself only (abort, raise): never to the judge or the other arm
    f.add_rule(sc.ALLOW, "tgkill", sc.Arg(0, sc.EQ, own_pid))
    f.add_rule(sc.ALLOW, "prlimit64", sc.Arg(2, sc.EQ, 0))  # reading limits, not raising them
    f.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")  # glibc then tries clone, which fails: no thread
    f.load()


def _warm_openmp(threads: int) -> None:
    """The OpenMP runtime's pool (torch's libgomp.so.1, which L2 kernels link), made while threads may
    still be created, and its thread count for the kernels' parallel regions: the judge forks the worker
    with torch on one thread (worker.run_job), an OpenMP setting the fork copies, so without it every
    `#pragma omp parallel` of a sandboxed kernel ran on one thread (2x slower than in-process)."""
    try:
        gomp = ctypes.CDLL("libgomp.so.1", mode=os.RTLD_NOLOAD | ctypes.RTLD_GLOBAL)
    except OSError:
        return
    fn_t = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
    noop = fn_t(lambda _p: None)
    try:
        gomp.omp_set_dynamic(0)
        gomp.omp_set_num_threads(ctypes.c_int(threads))
        gomp.GOMP_parallel(noop, None, ctypes.c_uint(threads), ctypes.c_uint(0))
    except AttributeError:
        pass


def place_threads() -> dict[str, list[int]]:
    """Each of the worker's compute threads on a core of its own, made after its pools exist. TVM's pool
    pins its workers one core each and leaves the calling thread (worker 0, this main thread) free on
    all cores; in-process that thread keeps running and stays apart, but the worker sleeps between the
    judge's requests (SIGSTOP, a blocking read) and the wake-up may put it on a pinned worker's core,
    where the two share one core for the request: sandboxed readings of parallel kernels were bimodal,
    the slow mode about 2x (experiments/results/bench_eval_integrity.md). So the main thread goes to a
    core no pinned thread holds, and the threads left free (libgomp's team) to the other cores, round
    robin. Returns {tid: cpus} as placed, for the judge's record; nothing changes where the cores are
    too few to keep anything apart."""
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        return {}
    pinned: dict[int, set[int]] = {}
    free: list[int] = []
    for tid in sorted(int(t) for t in os.listdir("/proc/self/task") if int(t) != os.getpid()):
        try:
            cpus = os.sched_getaffinity(tid)
        except OSError:
            continue
        if len(cpus) == 1:
            pinned[tid] = cpus
        else:
            free.append(tid)
    taken = set().union(*pinned.values())
    main = next((c for c in allowed if c not in taken), allowed[0])
    os.sched_setaffinity(0, {main})
    rest = [c for c in allowed if c != main]
    placed = {str(os.getpid()): [main], **{str(t): sorted(c) for t, c in pinned.items()}}
    for i, tid in enumerate(free):
        cpu = rest[i % len(rest)]
        try:
            os.sched_setaffinity(tid, {cpu})
            placed[str(tid)] = [cpu]
        except OSError:
            continue
    return placed


# what a device's driver and compilers read while the device is set up (nvcc through PATH, the OpenCL
# ICD loader, PoCL's cache and linker); every other variable (keys, tokens) is gone before the setup
DEVICE_ENV = ("PATH", "LD_LIBRARY_PATH", "HOME", "TMPDIR", "XDG_CACHE_HOME")
DEVICE_ENV_PREFIXES = ("CUDA", "NVIDIA", "OCL_", "OPENCL", "POCL_", "TVM_")


def _records(arrays: list[np.ndarray], results: np.ndarray, keep: list) -> int:
    """Host arrays as RECORD-int64 records (address, bytes, dtype, ndim, dims) in `results`; the arrays
    stay alive in `keep` until the next fetch, for the judge to read."""
    keep.clear()
    flat: list[int] = []
    for a in arrays:
        a = np.ascontiguousarray(a)
        keep.append(a)
        dims = list(a.shape)[:8]
        flat += [int(a.ctypes.data), int(a.nbytes), dtype_code(a.dtype), a.ndim] + dims + [0] * (8 - len(dims))
    if len(flat) > results.size:
        raise RuntimeError("more outputs than the results area holds")
    results[:len(flat)] = flat
    return len(flat)


def _close_in(served: Served, judge: int, root_dir: str | None, data_limit: int | None,
              late: Callable[[bool], Any] | None = None) -> tuple[list[str], Any]:
    """Limits, the jail, the filter: what a sandboxed worker runs under from here on (its layers).
    `late(jailed)` runs inside the jail, before the allow-list: the candidate's libraries load there."""
    if _seccomp_lib is None:
        raise RuntimeError(f"no seccomp filter can be made here ({_SECCOMP_MISSING}): install libseccomp2 "
                           "and pyseccomp, or set evaluator.sandbox=false to run candidates unsandboxed")
    _limits(data_limit, address_space=not served.device)
    layers = _jail(root_dir)
    # a change of credentials (uid nobody, a user namespace) clears the parent-death signal
    # (prctl(2)): armed again, or a worker stopped between requests outlived a killed judge, stopped
    # forever (the orphaned pairs of the test sessions' leak check)
    proc.die_with_parent()
    if os.getppid() != judge:
        os._exit(71)
    made = late("chroot" in layers) if late is not None else None
    _seccomp(_seccomp_lib, os.getpid(), device=served.device)
    return layers + ["seccomp"], made


# what a sealed L2 library may need loaded (g++ -fopenmp -shared adds them), by soname: loaded before the
# jail, so the loader finds them without a file inside it
L2_NEEDED = ("libgomp.so.1", "libstdc++.so.6", "libm.so.6", "libc.so.6", "libgcc_s.so.1")


def _late_l2(served: Served, ro: Any, pool: Any) -> Callable[[bool], Any]:
    """The candidate's L2 libraries loaded and its VM made inside the jail, under leka.core.confine's
    filter (no exec, fork, socket, file write, kill): their load-time code (constructors, IFUNC
    resolvers) runs nowhere else, and here with no keys, no files of the user's and no way out."""
    for name in L2_NEEDED:
        try:
            ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)
        except OSError:
            pass  # a library the machine lacks: the load below names it if the candidate needs it

    def late(jailed: bool) -> Any:
        from leka.core import confine

        confine.deny_filter()
        for so in served.l2_libs:
            ctypes.CDLL("/" + os.path.basename(so) if jailed else so, mode=ctypes.RTLD_GLOBAL)
        return served.setup(memoryview(ro), pool)

    return late


def main(sock: socket.socket, served: Served, pool: Any, judge: int, root_dir: str | None,
         data_limit: int | None) -> None:
    proc.die_with_parent()
    if os.getppid() != judge:
        os._exit(71)
    ro_fd = os.open(f"/proc/self/fd/{pool.fd}", os.O_RDONLY)
    ro = mmap.mmap(ro_fd, pool.size, prot=mmap.PROT_READ)
    os.close(ro_fd)
    req_fd = os.open(f"/proc/self/fd/{pool.req_fd}", os.O_RDONLY)
    req_size = max(8, 8 * pool.max_calls * max(1, len(pool.specs)))
    req = mmap.mmap(req_fd, req_size, prot=mmap.PROT_READ)
    os.close(req_fd)
    offsets = np.frombuffer(req, dtype=np.int64)
    results = np.zeros(RECORD * (pool.max_calls * max(1, served.n_outputs) + len(pool.specs)) + RECORD,
                       dtype=np.int64)
    progress = np.zeros(2, dtype=np.int64)  # the request's nonce, the calls made: read by the judge
    keep = {sock.fileno()}
    _close_fds(keep)
    env_keep = {"OMP_NUM_THREADS": str(served.threads), "TVM_NUM_THREADS": str(served.threads),
                "OMP_WAIT_POLICY": "PASSIVE"}
    if served.sandbox:
        kept = {k: v for k, v in os.environ.items()
                if k in DEVICE_ENV or k.startswith(DEVICE_ENV_PREFIXES)} if served.device else {}
        os.environ.clear()  # no keys, no paths: nothing of the user's environment
        os.environ.update(kept)
    os.environ.update(env_keep)
    # with L2 libraries the VM is made inside the jail, after they load (`_late_l2`)
    late = _late_l2(served, ro, pool) if served.l2_libs and served.sandbox and not served.device else None
    served_now = served.setup(memoryview(ro), pool) if late is None else None
    if served.device and served.sandbox:
        os.environ.clear()  # the device is set up: its compilers ran, nothing reads the environment now
        os.environ.update(env_keep)
    if served.guard_inputs is not None:
        lo = int(np.frombuffer(ro, dtype=np.uint8).ctypes.data)
        served.guard_inputs(lo, lo + pool.size, sock.fileno())
    if served.warm is not None:
        served.warm()
    _warm_openmp(served.threads)
    placed = place_threads() if served.pin and not served.device else {}
    guard = None
    if served.guard:
        from benchmark.judge.process_state import Guard

        guard = Guard(read_proc=False)
    threads_now = len(os.listdir("/proc/self/task"))  # its pools' threads, for the judge's record
    layers, made = _close_in(served, judge, root_dir, data_limit, late) if served.sandbox else ([], None)
    served_now = made if late is not None else served_now
    hello = {"ok": True, "layers": layers, "threads": threads_now, "results": int(results.ctypes.data),
             "progress": int(progress.ctypes.data), "placed": placed}
    if served.device:
        send_frame(sock, {**hello, "device": True, "slots": int(served_now.slots)})
        _serve_device(sock, served_now, guard, offsets, results, progress)
    else:
        run, profile = served_now
        send_frame(sock, hello)
        _serve(sock, run, profile, guard, offsets, results, progress)


def _state(guard: Any) -> dict[str, Any]:
    reply: dict[str, Any] = {"process_state": None}
    if guard is not None:
        try:
            guard.check()
        except Exception as e:  # noqa: BLE001 - ProcessStateChanged: reported, the judge decides
            reply["process_state"] = str(e)
    return reply


def _error(e: BaseException) -> dict[str, Any]:
    lines = [ln for ln in str(e).strip().splitlines() if ln.strip()]
    tail = lines[-1] if lines else type(e).__name__
    return {"error": f"{type(e).__name__}: {tail}"[:2000]}


def _loop(sock: socket.socket, ops: dict[str, Callable[[dict[str, Any]], dict[str, Any]]], guard: Any) -> None:
    """Answer requests until `exit`: `ops[op](msg)` is the reply; `state` (the guard's report, asked
    apart from `run` so its ~0.1 ms stays out of the timed request) and `exit` are every worker's. Every
    answer carries its request's nonce (an answer to another request is out of protocol)."""
    ops = {**ops, "state": lambda _m: _state(guard)}
    while True:
        msg = recv_frame(sock)
        op = msg.get("op")
        if op == "exit":
            os._exit(0)
        try:
            fn = ops.get(op)
            reply = fn(msg) if fn is not None else {"error": f"unknown request {op!r}"}
        except Exception as e:  # noqa: BLE001 - the candidate's runtime error, as data
            reply = _error(e)
        send_frame(sock, {**reply, "nonce": msg.get("nonce")})


def _serve(sock: socket.socket, run: Callable[..., int], profile: Any, guard: Any, offsets: np.ndarray,
           results: np.ndarray, progress: np.ndarray) -> None:
    def do_run(msg: dict[str, Any]) -> dict[str, Any]:
        # "ns": the worker's own clock around its calls, a diagnostic only (evaluator.timing_diag): the
        # candidate controls this process, so the judge never times by it
        t0 = time.perf_counter_ns()
        got = int(run(int(msg["n"]), offsets.ctypes.data, results.ctypes.data, results.size,
                      progress.ctypes.data, int(msg["nonce"])))
        return {"got": got, "ns": time.perf_counter_ns() - t0}

    def do_profile(msg: dict[str, Any]) -> dict[str, Any]:
        rows, total = profile(list(msg["offsets"]), int(msg.get("repeat", 5)))
        return {"rows": rows, "total": total}

    _loop(sock, {"run": do_run, **({"profile": do_profile} if profile is not None else {})}, guard)


def _serve_device(sock: socket.socket, dev: Any, guard: Any, offsets: np.ndarray, results: np.ndarray,
                  progress: np.ndarray) -> None:
    """The device worker's requests: `upload` (the pool's windows into the slots, untimed), `run` (the
    timed calls, slot c for call c), `fetch` / `inputs` (host copies, read by the judge), `state`,
    `profile`."""
    order = np.arange(max(1, dev.slots), dtype=np.int64)  # call c on slot c
    held: list = []

    def upload(msg: dict[str, Any]) -> dict[str, Any]:
        dev.upload(offsets, int(msg["n"]))
        return {"ok": True}

    def run(msg: dict[str, Any]) -> dict[str, Any]:
        n = int(msg["n"])
        if not 1 <= n <= dev.slots:
            raise ValueError(f"{n} calls, over the {dev.slots} slots")
        progress[:] = (int(msg["nonce"]), 0)
        calls = int(dev.run(n, int(order.ctypes.data)))
        progress[1] = calls
        return {"calls": calls}

    def profile(msg: dict[str, Any]) -> dict[str, Any]:
        rows, total = dev.profile(int(msg.get("slot", 0)), int(msg.get("repeat", 5)))
        return {"rows": rows, "total": total}

    ops = {"upload": upload, "run": run,
           "fetch": lambda m: {"got": _records(dev.fetch(int(m["j"])), results, held)},
           "inputs": lambda m: {"got": _records(dev.inputs(int(m["s"])), results, held)}}
    if dev.profile is not None:
        ops["profile"] = profile
    _loop(sock, ops, guard)
