"""Devices as configuration: `local` (this machine) or `rpc://HOST:PORT/KEY`, a board registered
under KEY at the TVM RPC tracker HOST:PORT (docs/boards.md). Parsing only; no tvm here."""

from __future__ import annotations

from dataclasses import dataclass
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
