"""HTTP providers: OpenAI Chat Completions (also any OpenAI-compatible server) and Anthropic Messages.

The SDKs' own retries are off (`max_retries=0`); retries happen here, with tenacity, so they share
one policy across providers and respect the run's deadline: exponential backoff with full jitter,
a server's Retry-After taken as a floor, every wait clipped to the time left, and each attempt's
timeout = min(cfg.timeout_s, time left). Retried: 408/409/429, 5xx, timeouts, dropped connections
and unparsable bodies. Not retried: other 4xx (a bad request does not improve by repetition).
"""

from __future__ import annotations

import json
import logging
import os
import random
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import anthropic
import openai
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

from leka.core.types import BudgetExhausted
from leka.llm.base import (
    CallRecord,
    Completion,
    Ledger,
    Message,
    ProviderError,
    Usage,
    api_key,
    call_timeout,
    cost_usd,
    price_of,
    redact,
    request_digest,
)

if TYPE_CHECKING:
    from leka.core.config import LLMConfig

log = logging.getLogger("leka.llm")

MAX_BACKOFF_S = 30.0
_RETRY_STATUS = {408, 409, 429}


def classify(exc: BaseException) -> tuple[str, bool]:
    """(kind, retryable) for an exception raised by either SDK during one attempt."""
    if isinstance(exc, (openai.APITimeoutError, anthropic.APITimeoutError)):
        return "timeout", True
    if isinstance(exc, (openai.APIConnectionError, anthropic.APIConnectionError)):
        return "connection", True
    if isinstance(exc, (openai.APIStatusError, anthropic.APIStatusError)):
        s = exc.status_code
        if s == 429:
            return "rate_limit", True
        if s >= 500 or s in _RETRY_STATUS:
            return "server", True
        if s in (401, 403):
            return "auth", False
        return "bad_request", False
    if isinstance(exc, (ValueError, openai.APIResponseValidationError, anthropic.APIResponseValidationError)):
        # the body was not JSON / not the expected shape: a proxy or server hiccup
        return "bad_response", True
    return "unexpected", False


def _retry_after(exc: BaseException) -> float | None:
    resp = getattr(exc, "response", None)
    if resp is None:
        return None
    for header, div in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        v = resp.headers.get(header)
        if v is not None:
            try:
                return float(v) / div
            except ValueError:
                return None  # an HTTP date: fall back to our own backoff
    return None


class HTTPProvider:
    """Shared call loop: ledger reservation, deadline, retries, accounting. Subclasses do one attempt."""

    kind = "http"

    def __init__(self, model: str, cfg: LLMConfig, ledger: Ledger | None, *, backoff_s: float = 1.0):
        self.model, self.cfg, self.ledger = model, cfg, ledger
        self.backoff_s = backoff_s
        self.name = f"{self.kind}:{model}"

    def __repr__(self) -> str:  # the SDK client (which holds the key) stays out of reprs
        return f"{type(self).__name__}(name={self.name!r})"

    # one attempt; raises SDK exceptions
    def _once(self, messages: list[Message], tool: dict | None, max_tokens: int, temperature: float,
              timeout: float) -> Completion:
        raise NotImplementedError

    def _wait(self, state: RetryCallState, deadline: float | None) -> float:
        n = state.attempt_number  # attempts made so far (>= 1)
        w = random.uniform(0, min(MAX_BACKOFF_S, self.backoff_s * 2 ** (n - 1)))  # full jitter
        exc = state.outcome.exception() if state.outcome else None
        ra = _retry_after(exc) if exc is not None else None
        if ra is not None and 0 <= ra <= MAX_BACKOFF_S:
            w = max(w, ra)
        if deadline is not None:
            w = max(0.0, min(w, deadline - time.monotonic()))  # the next attempt then reports the deadline
        kind = classify(exc)[0] if exc is not None else "?"
        log.info("%s: attempt %d failed (%s); retrying in %.2fs", self.name, n, kind, w)
        return w

    def complete(self, messages: list[Message], *, tool: dict | None = None, max_tokens: int = 4096,
                 temperature: float = 0.2, deadline: float | None = None) -> Completion:
        if self.ledger is not None:
            self.ledger.reserve()
        call_timeout(self.cfg.timeout_s, deadline)  # already past the deadline: no request at all
        digest = request_digest(messages, tool)
        t0 = time.monotonic()
        attempts = 0

        def attempt() -> Completion:
            nonlocal attempts
            timeout = call_timeout(self.cfg.timeout_s, deadline)
            attempts += 1
            return self._once(messages, tool, max_tokens, temperature, timeout)

        retrying = Retrying(
            retry=retry_if_exception(lambda e: not isinstance(e, BudgetExhausted) and classify(e)[1]),
            stop=stop_after_attempt(self.cfg.max_retries + 1),
            wait=lambda s: self._wait(s, deadline),
            reraise=True,
        )
        try:
            comp = retrying(attempt)
        except BudgetExhausted as e:
            self._record(False, attempts, t0, digest, error_kind="deadline", error=str(e))
            raise
        except Exception as e:  # noqa: BLE001 - every SDK failure becomes a ProviderError
            if deadline is not None and time.monotonic() >= deadline:
                # the last attempt timed out because the run's time ran out, not the server
                self._record(False, attempts, t0, digest, error_kind="deadline", error=str(e))
                raise BudgetExhausted("wall_clock", time.monotonic(), deadline) from None
            kind = classify(e)[0]
            msg = f"{type(e).__name__}: {e}"
            self._record(False, attempts, t0, digest, error_kind=kind, error=msg)
            raise ProviderError(kind, f"{self.name} after {attempts} attempt(s): {msg}", attempts=attempts) from None
        comp = comp.model_copy(update={"latency_s": time.monotonic() - t0})
        self._record(True, attempts, t0, digest, comp=comp)
        return comp

    def _record(self, ok: bool, attempts: int, t0: float, digest: str, *, comp: Completion | None = None,
                error_kind: str | None = None, error: str | None = None) -> None:
        if self.ledger is None:
            return
        u = comp.usage if comp else Usage()
        self.ledger.record(CallRecord(
            provider=self.name, model=comp.model if comp else self.model, ok=ok, error_kind=error_kind,
            error=redact(error)[:300] if error else None, attempts=attempts,
            input_tokens=u.input_tokens, output_tokens=u.output_tokens, cost_usd=u.cost_usd,
            priced=price_of(self.kind, self.model) is not None, latency_s=time.monotonic() - t0, digest=digest))

    def _usage(self, input_tokens: int, output_tokens: int) -> Usage:
        return Usage(input_tokens=input_tokens, output_tokens=output_tokens,
                     cost_usd=cost_usd(self.kind, self.model, input_tokens, output_tokens))


def _parse_args(raw: str | None) -> tuple[dict[str, Any] | None, str]:
    """Tool arguments arrive as a JSON string: (dict, "") or (None, the raw text for the parser/repair)."""
    if not raw:
        return None, ""
    try:
        v = json.loads(raw)
    except json.JSONDecodeError:
        return None, raw
    return (v, "") if isinstance(v, dict) else (None, raw)


def _public_url(url: str) -> str:
    """The URL without user:password@ (a provider name is logged and stored)."""
    parts = urlsplit(url)
    if parts.username or parts.password:
        parts = parts._replace(netloc=parts.hostname + (f":{parts.port}" if parts.port else ""))
    return urlunsplit(parts)


# Reasoning models reject `temperature` other than the default.
_NO_TEMPERATURE = ("o1", "o3", "o4", "gpt-5")


class OpenAIProvider(HTTPProvider):
    """OpenAI Chat Completions; with `compat=True`, any server that speaks it (vLLM, llama.cpp, ...)."""

    def __init__(self, model: str, cfg: LLMConfig, ledger: Ledger | None = None, *, base_url: str | None = None,
                 compat: bool = False, backoff_s: float = 1.0):
        self.kind = "compat" if compat else "openai"
        super().__init__(model, cfg, ledger, backoff_s=backoff_s)
        if compat:
            key = api_key("LEKA_COMPAT_API_KEY", default="none")
            self.name = f"compat:{_public_url(base_url or '')}|{model}"
        else:
            key = api_key("OPENAI_API_KEY")
            base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        self.compat = compat
        self.tools_supported = True  # a compat server that rejects `tools` gets JSON-in-text instead
        self.schema_supported = True  # likewise for `response_format` with a schema (cfg.json_schema)
        self._client = openai.OpenAI(api_key=key, base_url=base_url, max_retries=0, timeout=cfg.timeout_s)

    def _request(self, messages: list[Message], tool: dict | None, max_tokens: int,
                 temperature: float) -> dict[str, Any]:
        req: dict[str, Any] = {"model": self.model, "messages": [m.model_dump() for m in messages]}
        if self.compat:
            req["max_tokens"] = max_tokens  # the field every compatible server knows
        else:
            req["max_completion_tokens"] = max_tokens  # `max_tokens` is rejected by reasoning models
        if self.compat or not self.model.startswith(_NO_TEMPERATURE):
            req["temperature"] = temperature
        if tool is not None and self.compat and self.schema_supported and self.cfg.json_schema:
            # llama.cpp servers turn this schema into a grammar: the reply is the tool's arguments as
            # JSON that fits the schema by construction (no tool list in the prompt either).
            req["response_format"] = {"type": "json_object", "schema": tool["parameters"]}
        elif tool is not None and self.tools_supported:
            req["tools"] = [{"type": "function", "function": {
                "name": tool["name"], "description": tool.get("description", ""), "parameters": tool["parameters"]}}]
            req["tool_choice"] = {"type": "function", "function": {"name": tool["name"]}}
        return req

    def _once(self, messages: list[Message], tool: dict | None, max_tokens: int, temperature: float,
              timeout: float) -> Completion:
        req = self._request(messages, tool, max_tokens, temperature)
        try:
            r = self._client.chat.completions.create(**req, timeout=timeout)
        except openai.BadRequestError:
            if not (self.compat and ("tools" in req or "response_format" in req)):
                raise
            # Servers without tool (or schema) support answer 400; the prompt carries the schema, so
            # ask for JSON text.
            what = "tools" if "tools" in req else "response_format"
            log.warning("%s: server rejected %s; falling back to JSON in text", self.name, what)
            if what == "tools":
                self.tools_supported = False
            else:
                self.schema_supported = False
            req = self._request(messages, tool, max_tokens, temperature)
            r = self._client.chat.completions.create(**req, timeout=timeout)
        if isinstance(r, str) or not getattr(r, "choices", None):
            raise ValueError(f"unexpected response body: {str(r)[:200]!r}")
        msg = r.choices[0].message
        text = msg.content or ""
        args: dict[str, Any] | None = None
        for tc in msg.tool_calls or []:
            fn = getattr(tc, "function", None)
            if fn is None:
                continue
            args, raw = _parse_args(fn.arguments)
            if args is None and raw:
                text = (text + "\n" + raw).strip()
            break
        u = r.usage
        return Completion(text=text, tool_args=args,
                          usage=self._usage(u.prompt_tokens if u else 0, u.completion_tokens if u else 0),
                          model=r.model or self.model, raw_id=r.id)


class AnthropicProvider(HTTPProvider):
    """Anthropic Messages API: system text as `system`, tools as `tool_use` blocks."""

    kind = "anthropic"

    def __init__(self, model: str, cfg: LLMConfig, ledger: Ledger | None = None, *, base_url: str | None = None,
                 backoff_s: float = 1.0):
        super().__init__(model, cfg, ledger, backoff_s=backoff_s)
        key = api_key("ANTHROPIC_API_KEY")
        base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL") or None
        self._client = anthropic.Anthropic(api_key=key, base_url=base_url, max_retries=0, timeout=cfg.timeout_s)

    @staticmethod
    def _split(messages: list[Message]) -> tuple[str, list[dict[str, str]]]:
        system = "\n\n".join(m.content for m in messages if m.role == "system")
        turns: list[dict[str, str]] = []
        for m in messages:
            if m.role == "system":
                continue
            if turns and turns[-1]["role"] == m.role:  # the API wants strictly alternating turns
                turns[-1]["content"] += "\n\n" + m.content
            else:
                turns.append({"role": m.role, "content": m.content})
        if not turns or turns[0]["role"] != "user":
            turns.insert(0, {"role": "user", "content": "(start)"})
        return system, turns

    def _once(self, messages: list[Message], tool: dict | None, max_tokens: int, temperature: float,
              timeout: float) -> Completion:
        system, turns = self._split(messages)
        # anthropic 2.x's messages.create takes no sampling parameters (no `temperature`): the
        # model's default applies, and `temperature` is accepted here only for the common interface.
        req: dict[str, Any] = {"model": self.model, "messages": turns, "max_tokens": max_tokens}
        if system:
            req["system"] = system
        if tool is not None:
            req["tools"] = [{"name": tool["name"], "description": tool.get("description", ""),
                             "input_schema": tool["parameters"]}]
            req["tool_choice"] = {"type": "tool", "name": tool["name"]}
        r = self._client.messages.create(**req, timeout=timeout)
        if isinstance(r, str) or not hasattr(r, "content"):
            raise ValueError(f"unexpected response body: {str(r)[:200]!r}")
        texts, args = [], None
        for block in r.content:
            if block.type == "text":
                texts.append(block.text)
            elif block.type == "tool_use" and args is None:
                args = block.input if isinstance(block.input, dict) else None
        u = r.usage
        return Completion(text="\n".join(texts), tool_args=args,
                          usage=self._usage(u.input_tokens if u else 0, u.output_tokens if u else 0),
                          model=r.model or self.model, raw_id=r.id)
