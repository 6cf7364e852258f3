"""Text helpers shared by the views agents read and the prompts of small models (no TVM here)."""

from __future__ import annotations


def elide(text: str, max_chars: int, margin: int = 60) -> str:
    """Keep the head and the tail, drop whole lines in the middle."""
    if len(text) <= max_chars:
        return text
    lines = text.splitlines()
    budget = max(max_chars - margin, 0)
    head: list[str] = []
    tail: list[str] = []
    used = 0
    i, j = 0, len(lines) - 1
    while i <= j:
        take_head = len(head) <= len(tail)
        ln = lines[i] if take_head else lines[j]
        if used + len(ln) + 1 > budget:
            break
        used += len(ln) + 1
        if take_head:
            head.append(ln)
            i += 1
        else:
            tail.append(ln)
            j -= 1
    n = j - i + 1
    return "\n".join(head + [f"... [{n} lines elided] ..."] + tail[::-1])
