"""Providers without a model: `Scripted` (deterministic replies, for tests and demos), `Replay`
(re-runs a recorded transcript) and `Recorder` (wraps any provider and writes that transcript).

Transcript format (JSONL, one call per line):
    {"i": 0, "digest": "...", "provider": "openai:gpt-4o-mini", "tool": "propose_edits",
     "messages": [{"role": ..., "content": ...}], "reply": {"text": ..., "tool_args": ...},
     "usage": {...}, "model": "...", "latency_s": 1.2, "raw_id": "..."}
or, for a call that failed for good, "error": {"kind": ..., "message": ...} instead of "reply".
"""

from __future__ import annotations

import json
import logging
import math
import threading
from collections import defaultdict, deque
from pathlib import Path
from typing import Any

from leka.core.types import UserError
from leka.llm.base import (
    CallRecord,
    Completion,
    Ledger,
    Message,
    Provider,
    ProviderError,
    Usage,
    call_timeout,
    redact,
    request_digest,
)

log = logging.getLogger("leka.llm")


def _estimate_tokens(text: str) -> int:
    return max(1, math.ceil(len(text) / 4))  # the usual ~4 characters per token


class _Offline:
    """Ledger and deadline handling shared by the providers that answer without a network."""

    name: str
    ledger: Ledger | None

    def _begin(self, deadline: float | None) -> None:
        if self.ledger is not None:
            self.ledger.reserve()
        call_timeout(math.inf, deadline)

    def _log(self, comp: Completion | None, digest: str, err: ProviderError | None = None) -> None:
        if self.ledger is None:
            return
        u = comp.usage if comp else Usage()
        self.ledger.record(CallRecord(
            provider=self.name, model=comp.model if comp else self.name, ok=comp is not None,
            error_kind=err.kind if err else None, error=str(err) if err else None,
            input_tokens=u.input_tokens, output_tokens=u.output_tokens, cost_usd=u.cost_usd, digest=digest))


class Scripted(_Offline):
    """Answers from a list. A reply is a string (text) or an object with any of
    "text", "tool_args", "usage" ({"input_tokens", "output_tokens"}), "error" (a ProviderError kind).
    Token counts default to len/4 of the prompt and the reply; once the list is spent, calls fail
    with ProviderError("exhausted")."""

    def __init__(self, replies: list[str | dict[str, Any]], *, ledger: Ledger | None = None, name: str = "scripted"):
        self.replies = deque(replies)
        self.ledger = ledger
        self.name = name
        self.calls: list[list[Message]] = []  # what the caller sent, for assertions and debugging
        self._lock = threading.Lock()

    @classmethod
    def from_file(cls, path: str | Path, *, ledger: Ledger | None = None) -> Scripted:
        p = Path(path)
        try:
            data = json.loads(p.read_text())
        except (OSError, json.JSONDecodeError) as e:
            raise UserError(f"scripted replies {path}: {e}") from None
        if not isinstance(data, list):
            raise UserError(f"scripted replies {path}: expected a JSON list of replies")
        return cls(data, ledger=ledger, name=f"scripted:{p.name}")

    def __repr__(self) -> str:
        return f"Scripted(name={self.name!r}, left={len(self.replies)})"

    def complete(self, messages: list[Message], *, tool: dict | None = None, max_tokens: int = 4096,
                 temperature: float = 0.2, deadline: float | None = None) -> Completion:
        self._begin(deadline)
        digest = request_digest(messages, tool)
        with self._lock:
            self.calls.append(list(messages))
            reply = self.replies.popleft() if self.replies else None
        if reply is None:
            err = ProviderError("exhausted", f"{self.name}: no scripted reply left")
            self._log(None, digest, err)
            raise err
        if isinstance(reply, str):
            reply = {"text": reply}
        if reply.get("error"):
            err = ProviderError(str(reply["error"]), reply.get("message", "scripted failure"))
            self._log(None, digest, err)
            raise err
        text = reply.get("text") or ""
        args = reply.get("tool_args")
        u = reply.get("usage") or {}
        usage = Usage(
            input_tokens=int(u.get("input_tokens", _estimate_tokens("".join(m.content for m in messages)))),
            output_tokens=int(u.get("output_tokens", _estimate_tokens(text + json.dumps(args) if args else text))))
        comp = Completion(text=text, tool_args=args, usage=usage, model=self.name, raw_id=None)
        self._log(comp, digest)
        return comp


class Replay(_Offline):
    """Re-runs a transcript written by `Recorder`.

    A request is matched by digest (same conversation and tool); when nothing matches (prompts embed
    measured timings, which differ run to run), the next unused entry in recorded order answers,
    unless `strict`, which raises ProviderError("replay_miss"). `misses` counts the fallbacks.
    Usage is the recorded one, so a replayed run accounts like the original."""

    def __init__(self, path: str | Path, *, ledger: Ledger | None = None, strict: bool = False):
        p = Path(path)
        if not p.is_file():
            raise UserError(f"replay transcript {path} not found")
        self.entries: list[dict[str, Any]] = []
        for n, line in enumerate(p.read_text().splitlines()):
            if not line.strip():
                continue
            try:
                self.entries.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise UserError(f"replay transcript {path}, line {n + 1}: {e}") from None
        self.name = f"replay:{p.name}"
        self.ledger, self.strict = ledger, strict
        self.misses = 0
        self._by_digest: dict[str, deque[int]] = defaultdict(deque)
        for i, e in enumerate(self.entries):
            self._by_digest[e.get("digest", "")].append(i)
        self._used: set[int] = set()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Replay(name={self.name!r}, entries={len(self.entries)}, used={len(self._used)})"

    def _take(self, digest: str) -> int | None:
        with self._lock:
            q = self._by_digest.get(digest)
            while q:
                i = q.popleft()
                if i not in self._used:
                    self._used.add(i)
                    return i
            if self.strict:
                return None
            for i in range(len(self.entries)):
                if i not in self._used:
                    self._used.add(i)
                    self.misses += 1
                    return i
            return None

    def complete(self, messages: list[Message], *, tool: dict | None = None, max_tokens: int = 4096,
                 temperature: float = 0.2, deadline: float | None = None) -> Completion:
        self._begin(deadline)
        digest = request_digest(messages, tool)
        i = self._take(digest)
        if i is None:
            err = ProviderError("replay_miss", f"{self.name}: no recorded reply for request {digest}")
            self._log(None, digest, err)
            raise err
        e = self.entries[i]
        if e.get("error"):
            err = ProviderError(e["error"].get("kind", "server"), e["error"].get("message", "recorded failure"))
            self._log(None, digest, err)
            raise err
        r = e.get("reply") or {}
        comp = Completion(text=r.get("text") or "", tool_args=r.get("tool_args"),
                          usage=Usage.model_validate(e.get("usage") or {}), model=e.get("model", self.name),
                          latency_s=0.0, raw_id=e.get("raw_id"))
        self._log(comp, digest)
        return comp


class Recorder:
    """Wraps a provider; appends each call to a JSONL transcript that `Replay` can re-run.
    Everything written passes through `redact`, so no key can land in the file."""

    def __init__(self, inner: Provider, path: str | Path):
        self.inner = inner
        self.name = inner.name
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._n = sum(1 for _ in self.path.open()) if self.path.exists() else 0

    def __repr__(self) -> str:
        return f"Recorder({self.inner!r}, path={str(self.path)!r})"

    @property
    def ledger(self) -> Ledger | None:
        return getattr(self.inner, "ledger", None)

    def _write(self, entry: dict[str, Any]) -> None:
        with self._lock:
            entry = {"i": self._n, **entry}
            self._n += 1
            with self.path.open("a") as f:
                f.write(redact(json.dumps(entry, sort_keys=False)) + "\n")

    def complete(self, messages: list[Message], *, tool: dict | None = None, max_tokens: int = 4096,
                 temperature: float = 0.2, deadline: float | None = None) -> Completion:
        base = {"digest": request_digest(messages, tool), "provider": self.name,
                "tool": tool.get("name") if tool else None, "messages": [m.model_dump() for m in messages]}
        try:
            comp = self.inner.complete(messages, tool=tool, max_tokens=max_tokens, temperature=temperature,
                                       deadline=deadline)
        except ProviderError as e:
            self._write({**base, "error": {"kind": e.kind, "message": str(e)}})
            raise
        self._write({**base, "reply": {"text": comp.text, "tool_args": comp.tool_args},
                     "usage": comp.usage.model_dump(), "model": comp.model, "latency_s": round(comp.latency_s, 4),
                     "raw_id": comp.raw_id})
        return comp
