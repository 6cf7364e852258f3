"""What every LLM provider shares: messages, completions, the `Provider` protocol, the call ledger,
the price table, key handling and redaction, and `make_provider`.

Keys are read from environment variables at client construction and handed to the SDK; nothing in
this package stores them on a record, in a repr, in a log line or in a file. `redact` is a second
line of defence for text that came back from elsewhere (an SDK error message, a server body).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from leka.core.types import BudgetExhausted, LekaError, UserError

if TYPE_CHECKING:
    from leka.core.config import RunConfig

KEY_ENV = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "LEKA_COMPAT_API_KEY")


class Message(BaseModel):
    role: Literal["system", "user", "assistant"]
    content: str


class Usage(BaseModel):
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(input_tokens=self.input_tokens + other.input_tokens,
                     output_tokens=self.output_tokens + other.output_tokens,
                     cost_usd=self.cost_usd + other.cost_usd)


class Completion(BaseModel):
    text: str = ""
    tool_args: dict[str, Any] | None = None  # parsed arguments of the one tool call
    usage: Usage = Field(default_factory=Usage)
    model: str = ""
    latency_s: float = 0.0
    raw_id: str | None = None


@runtime_checkable
class Provider(Protocol):
    name: str  # e.g. "openai:gpt-4o-mini"; never contains a key

    def complete(self, messages: list[Message], *, tool: dict | None = None, max_tokens: int = 4096,
                 temperature: float = 0.2, deadline: float | None = None) -> Completion: ...


class ProviderError(LekaError):
    """A call that failed for good (after retries): kind is one of rate_limit, server, timeout,
    connection, bad_response, bad_request, auth, exhausted, replay_miss."""

    def __init__(self, kind: str, message: str, *, attempts: int = 1):
        super().__init__(f"{kind}: {redact(message)[:500]}")
        self.kind, self.attempts = kind, attempts


# -- keys and redaction --------------------------------------------------------------------------

def api_key(env: str, default: str | None = None) -> str:
    """The key from `env`, or `default`; a missing key is a UserError naming the variable only."""
    v = os.environ.get(env, "").strip()
    if v:
        return v
    if default is not None:
        return default
    raise UserError(f"{env} is not set: export it to use this provider (keys come from the environment only)")


def _secrets() -> list[str]:
    # Short values ("none", "x") would redact ordinary words; real keys are long.
    vals = {os.environ.get(k, "").strip() for k in KEY_ENV}
    return sorted((v for v in vals if len(v) >= 8), key=len, reverse=True)


def redact(text: str) -> str:
    for s in _secrets():
        text = text.replace(s, "***")
    return text


# -- prices ---------------------------------------------------------------------------------------

# USD per 1M tokens (input, output), public list prices; the longest matching prefix wins, so dated
# snapshots ("gpt-4o-2024-08-06") price like their family. Unknown and compat models cost 0 and their
# ledger records say `priced: false`, so a report never shows an invented number.
PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-5-nano": (0.05, 0.40),
    "gpt-5-mini": (0.25, 2.00),
    "gpt-5": (1.25, 10.00),
    "o3-mini": (1.10, 4.40),
    "o4-mini": (1.10, 4.40),
    "o3": (2.00, 8.00),
    "claude-3-5-haiku": (0.80, 4.00),
    "claude-haiku-4-5": (1.00, 5.00),
    "claude-3-7-sonnet": (3.00, 15.00),
    "claude-sonnet-4": (3.00, 15.00),
    "claude-opus-4-5": (5.00, 25.00),
    "claude-opus-4": (15.00, 75.00),
}


def price_of(provider_kind: str, model: str) -> tuple[float, float] | None:
    if provider_kind not in ("openai", "anthropic"):
        return None
    best = max((p for p in PRICES if model.startswith(p)), key=len, default=None)
    return PRICES[best] if best else None


def cost_usd(provider_kind: str, model: str, input_tokens: int, output_tokens: int) -> float:
    p = price_of(provider_kind, model)
    return 0.0 if p is None else (input_tokens * p[0] + output_tokens * p[1]) / 1e6


# -- digests --------------------------------------------------------------------------------------

def request_digest(messages: list[Message], tool: dict | None) -> str:
    """What determines a reply, for Replay: the conversation and the tool schema (not the sampling
    settings, so a replay works under a different config)."""
    blob = json.dumps({"messages": [m.model_dump() for m in messages], "tool": tool},
                      sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


# -- ledger ---------------------------------------------------------------------------------------

class CallRecord(BaseModel):
    """One logical call (retries included). No prompt bodies, no keys."""

    provider: str
    model: str
    ok: bool
    error_kind: str | None = None
    error: str | None = None
    attempts: int = 1
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    priced: bool = False
    latency_s: float = 0.0
    digest: str | None = None
    tag: str | None = None  # who called (agent level), set through Ledger.tagged
    t: float = Field(default_factory=time.time)


class Ledger:
    """Thread-safe totals of LLM calls, tokens and cost, with optional limits.

    `reserve()` runs before each call and raises BudgetExhausted once the calls or tokens are spent;
    a reply already paid for is always recorded and returned, so the limit stops the *next* call.
    `mark()` / `usage_since(mark)` let a caller attribute usage to one tree node.
    """

    def __init__(self, max_calls: int | None = None, max_tokens: int | None = None):
        self.max_calls, self.max_tokens = max_calls, max_tokens
        self._lock = threading.Lock()
        self._records: list[CallRecord] = []
        self._local = threading.local()

    @classmethod
    def from_config(cls, run: RunConfig) -> Ledger:
        """The run's LLM limits (`run.max_llm_calls`, `run.max_tokens`)."""
        return cls(max_calls=run.max_llm_calls, max_tokens=run.max_tokens)

    # totals
    @property
    def calls(self) -> int:
        with self._lock:
            return len(self._records)

    @property
    def usage(self) -> Usage:
        return self.usage_since(0)

    @property
    def records(self) -> list[CallRecord]:
        with self._lock:
            return list(self._records)

    def mark(self) -> int:
        with self._lock:
            return len(self._records)

    def usage_since(self, mark: int) -> Usage:
        with self._lock:
            recs = self._records[mark:]
        return Usage(input_tokens=sum(r.input_tokens for r in recs),
                     output_tokens=sum(r.output_tokens for r in recs),
                     cost_usd=sum(r.cost_usd for r in recs))

    # limits
    def reserve(self) -> None:
        with self._lock:
            n = len(self._records)
            tokens = sum(r.input_tokens + r.output_tokens for r in self._records)
        if self.max_calls is not None and n >= self.max_calls:
            raise BudgetExhausted("llm_calls", n, self.max_calls)
        if self.max_tokens is not None and tokens >= self.max_tokens:
            raise BudgetExhausted("llm_tokens", tokens, self.max_tokens)

    def record(self, rec: CallRecord) -> None:
        tag = getattr(self._local, "tag", None)
        if tag is not None and rec.tag is None:
            rec = rec.model_copy(update={"tag": tag})
        if rec.error:
            rec = rec.model_copy(update={"error": redact(rec.error)})
        with self._lock:
            self._records.append(rec)

    def tagged(self, tag: str | None):
        """Context manager: records made by this thread inside it carry `tag`."""
        ledger = self

        class _Tag:
            def __enter__(self) -> None:
                self.prev = getattr(ledger._local, "tag", None)
                ledger._local.tag = tag

            def __exit__(self, *exc: object) -> None:
                ledger._local.tag = self.prev

        return _Tag()

    def to_dict(self, *, records: bool = True) -> dict[str, Any]:
        with self._lock:
            recs = list(self._records)
        u = Usage(input_tokens=sum(r.input_tokens for r in recs), output_tokens=sum(r.output_tokens for r in recs),
                  cost_usd=sum(r.cost_usd for r in recs))
        out: dict[str, Any] = {
            "calls": len(recs), "failed_calls": sum(not r.ok for r in recs),
            "attempts": sum(r.attempts for r in recs),
            "input_tokens": u.input_tokens, "output_tokens": u.output_tokens, "cost_usd": round(u.cost_usd, 6),
            "unpriced_calls": sum(r.ok and not r.priced for r in recs),
            "limits": {"max_calls": self.max_calls, "max_tokens": self.max_tokens},
        }
        if records:
            out["records"] = [r.model_dump(mode="json") for r in recs]
        return out

    def __repr__(self) -> str:
        d = self.to_dict(records=False)
        return f"Ledger(calls={d['calls']}, tokens={d['input_tokens'] + d['output_tokens']}, cost_usd={d['cost_usd']})"


# -- deadlines ------------------------------------------------------------------------------------

def call_timeout(timeout_s: float, deadline: float | None) -> float:
    """min(timeout_s, time left); raises BudgetExhausted once the deadline (time.monotonic()) is past.

    BudgetExhausted's used/limit are monotonic clock readings here (the caller knows its own start); its
    message says only that the run's wall clock is spent."""
    if deadline is None:
        return timeout_s
    now = time.monotonic()
    left = deadline - now
    if left <= 0:
        raise BudgetExhausted("wall_clock", now, deadline, message="budget exhausted: the run's wall-clock "
                              f"budget ended {-left:.1f} s before this LLM call")
    return min(timeout_s, left)
