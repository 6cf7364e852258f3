"""Confinement for a process that runs a step able to execute candidate code before any judge has
seen it (issue 43): a compile-time evaluation (Relax's FoldConstant runs a PrimFunc it finds called on
constants) or the load of a candidate's library (its constructors and IFUNC resolvers run at load).

`confine()` is called in a freshly forked child that is about to run such a step and then only
computes and writes to pipes or sockets it already holds. After it:
- the environment is empty (no API keys, no paths);
- no new program, process, socket or file for writing: execve, fork, non-thread clone, socket,
  connect, open with write/create flags, unlink, rename, mkdir, chmod, link ... fail with EPERM
  (a seccomp filter, default allow: the step may still read files and make threads, which the
  TVM passes and the loader need);
- no files grow (RLIMIT_FSIZE 0), no core dump, the address space bounded;
- as root: uid nobody, so the user's files are closed to it.

What it cannot stop: CPU time (the parent bounds the wall clock and kills the child) and reads of
world-readable files where the process is not root. No tvm; stdlib + pyseccomp.
"""

from __future__ import annotations

import errno
import os
import resource
from typing import Any

from leka.core import proc

try:  # loaded in the parent: nothing is loaded after the fork
    import pyseccomp as _sc
except (ImportError, OSError):  # no libseccomp.so.2: confine() refuses (fail closed)
    _sc = None

NOBODY = 65534
# calls a compile-time evaluation or a library's load-time code has no use for and an attack needs
DENIED = (
    "execve", "execveat", "fork", "vfork", "socket", "socketpair", "connect", "bind", "listen", "accept",
    "accept4", "ptrace", "process_vm_readv", "process_vm_writev", "unlink", "unlinkat", "rename",
    "renameat", "renameat2", "mkdir", "mkdirat", "rmdir", "chmod", "fchmod", "fchmodat", "chown", "fchown",
    "fchownat", "lchown", "link", "linkat", "symlink", "symlinkat", "truncate", "ftruncate", "mknod",
    "mknodat", "mount", "umount2", "pivot_root", "chroot", "setns", "unshare", "kill", "tkill",
    "memfd_create", "io_uring_setup", "bpf", "init_module", "finit_module", "delete_module", "kexec_load",
    "reboot", "swapon", "swapoff", "sethostname", "setdomainname", "keyctl", "add_key", "request_key",
    "personality", "userfaultfd", "perf_event_open", "open_by_handle_at", "name_to_handle_at",
)
_CLONE_THREAD = 0x00010000


class ConfineError(RuntimeError):
    """The confinement could not be set up here (no libseccomp): the step is not run."""


def available() -> str | None:
    """None where `confine` works; else why not."""
    return None if _sc is not None else "no seccomp filter can be made here (install libseccomp2 and pyseccomp)"


def _drop() -> list[str]:
    """As root: uid nobody, so the user's files are closed to it. No chroot: a TVM pass may import
    Python modules lazily, from files."""
    if os.geteuid() != 0:
        return []
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)
    return ["uid nobody"]


def _filter(sc: Any) -> None:
    f = sc.SyscallFilter(defaction=sc.ALLOW)
    deny = sc.ERRNO(errno.EPERM)
    for name in DENIED:
        try:
            f.add_rule(deny, name)
        except (RuntimeError, OSError, ValueError):
            pass  # a name this architecture does not have
    for name, arg in (("open", 1), ("openat", 2)):
        # reading is allowed (the loader, TVM's lazy imports), writing or creating is not
        for mask, value in ((os.O_ACCMODE, os.O_WRONLY), (os.O_ACCMODE, os.O_RDWR), (os.O_CREAT, os.O_CREAT),
                            (os.O_TRUNC, os.O_TRUNC)):
            try:
                f.add_rule(deny, name, sc.Arg(arg, sc.MASKED_EQ, mask, value))
            except (RuntimeError, OSError, ValueError):
                pass
    for name in ("creat", "openat2"):  # openat2's flags sit in a struct the filter cannot read
        try:
            f.add_rule(deny, name)
        except (RuntimeError, OSError, ValueError):
            pass
    # threads yes (TVM's and LLVM's pools), new processes no
    f.add_rule(deny, "clone", sc.Arg(0, sc.MASKED_EQ, _CLONE_THREAD, 0))
    f.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")  # flags in a struct: glibc falls back to clone
    f.load()


def deny_filter() -> None:
    """The filter alone (no other layer): for a sandboxed worker about to load a candidate's library
    inside its jail (benchmark/judge/sandbox/worker.py), before its own allow-list closes."""
    if _sc is None:
        raise ConfineError(available() or "")
    _filter(_sc)


def confine(address_space: int | None = None) -> list[str]:
    """Confine this (forked, single-purpose) process; returns the layers that held. Irreversible."""
    if _sc is None:
        raise ConfineError(available() or "")
    proc.die_with_parent()
    os.environ.clear()
    for lim, val in ((resource.RLIMIT_FSIZE, 0), (resource.RLIMIT_CORE, 0)):
        resource.setrlimit(lim, (val, val))
    if address_space:
        try:
            resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
        except (ValueError, OSError):
            pass
    layers = ["empty environment", "rlimits"] + _drop()
    proc.die_with_parent()  # a change of credentials clears it (prctl(2))
    _filter(_sc)
    return layers + ["seccomp"]
