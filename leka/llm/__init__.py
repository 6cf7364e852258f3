"""LLM providers (OpenAI, Anthropic, OpenAI-compatible, Scripted, Replay), the call ledger, prompt
rendering and reply parsing. See README.md in this folder."""

from leka.llm.base import (
    Completion,
    Ledger,
    Message,
    Provider,
    ProviderError,
    Usage,
    redact,
)
from leka.llm.factory import make_provider

__all__ = ["Completion", "Ledger", "Message", "Provider", "ProviderError", "Usage", "make_provider", "redact"]
