"""`make_provider(spec, ...)`: a provider from a model spec. Apart from `base` so that the concrete
providers (which import `base`) are not imported by it: the package's imports go one way."""

from __future__ import annotations

from pathlib import Path

from leka.core.config import LLMConfig
from leka.core.types import UserError
from leka.llm.base import Ledger, Provider
from leka.llm.providers import AnthropicProvider, OpenAIProvider
from leka.llm.scripted import Recorder, Replay, Scripted


def make_provider(spec: str, cfg: LLMConfig, ledger: Ledger | None = None, *,
                  record_to: str | Path | None = None, backoff_s: float = 1.0) -> Provider:
    """Build a provider from `spec`:

    openai:MODEL | anthropic:MODEL | compat:URL|MODEL | scripted:PATH.json | replay:PATH.jsonl

    `record_to` wraps it in a transcript recorder (JSONL, replayable with `replay:`); `backoff_s` is
    the base of the exponential retry backoff (tests shrink it).
    """
    kind, sep, rest = spec.partition(":")
    if not sep or not rest:
        raise UserError(f"llm model {spec!r}: expected openai:MODEL, anthropic:MODEL, compat:URL|MODEL, "
                        "scripted:PATH.json or replay:PATH.jsonl")
    p: Provider
    if kind == "openai":
        p = OpenAIProvider(rest, cfg, ledger, backoff_s=backoff_s)
    elif kind == "anthropic":
        p = AnthropicProvider(rest, cfg, ledger, backoff_s=backoff_s)
    elif kind == "compat":
        url, bar, model = rest.rpartition("|")
        if not bar or not url or not model:
            raise UserError(f"llm model {spec!r}: compat needs compat:URL|MODEL, e.g. compat:http://127.0.0.1:8000/v1|qwen")
        p = OpenAIProvider(model, cfg, ledger, base_url=url, compat=True, backoff_s=backoff_s)
    elif kind == "scripted":
        p = Scripted.from_file(rest, ledger=ledger)
    elif kind == "replay":
        p = Replay(rest, ledger=ledger)
    else:
        raise UserError(f"llm model {spec!r}: unknown provider {kind!r} (openai, anthropic, compat, scripted, replay)")
    return Recorder(p, record_to) if record_to is not None else p
