"""Devices as configuration: `local` (this machine) or `rpc://HOST:PORT/KEY`, a board registered
under KEY at the TVM RPC tracker HOST:PORT (docs/boards.md), and the board builds are for
(`use_board`). No tvm here."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from leka.core.types import UserError


@dataclass(frozen=True)
class RemoteDevice:
    host: str
    port: int
    key: str

    @property
    def url(self) -> str:
        return f"rpc://{self.host}:{self.port}/{self.key}"


def parse_device(url: str) -> RemoteDevice | None:
    """None for `local`; a RemoteDevice for `rpc://HOST:PORT/KEY`; UserError for anything else."""
    if url in ("", "local"):
        return None
    parts = urlsplit(url)
    key = parts.path.strip("/")
    try:
        port = parts.port
    except ValueError:
        port = None
    if parts.scheme != "rpc" or not parts.hostname or port is None or not key or "/" in key:
        raise UserError(f"--device {url!r}: expected `local` or rpc://HOST:PORT/KEY "
                        "(a TVM RPC tracker and the key the board registered under)")
    return RemoteDevice(parts.hostname, port, key)


@dataclass(frozen=True)
class Board:
    """What code generation needs to know about the board candidates run on (device.target,
    device.cross_compiler, device.emulated): the target every build of this process is for, the
    compiler that links and compiles L2 C/C++ for its CPU, and whether its clock is an emulator's."""

    target: dict[str, Any] = field(default_factory=dict)
    cross_compiler: str = ""
    emulated: bool = False


# The board of this process's run. Every build an agent, an edit's check or the evaluator's child makes
# is for it, and they are reached through some twenty call sites that take a backend name only: one
# process-wide setting (set by `use_board` for the duration of a run) keeps them all on the board.
_BOARD: Board | None = None


def current_board() -> Board | None:
    return _BOARD


@contextmanager
def use_board(device: Any) -> Iterator[Board | None]:
    """Builds in this block are for `device`'s board (a DeviceConfig, its dict, or None / a local
    device: this machine). Restores the previous board after."""
    global _BOARD
    prev = _BOARD
    _BOARD = board_of(device)
    try:
        yield _BOARD
    finally:
        _BOARD = prev


def board_of(device: Any) -> Board | None:
    if device is None:
        return None
    d = device if isinstance(device, dict) else device.model_dump(mode="json")
    if parse_device(d.get("url", "local")) is None and not d.get("target"):
        return None
    return Board(target=dict(d.get("target") or {}), cross_compiler=d.get("cross_compiler") or "",
                 emulated=bool(d.get("emulated")))
