"""The benchmark's requests: deterministic, realistic (about 1-2 KB per JSONL line), cheap to make.

Both sides of a pair consume the same data from a generator: the raw baseline as plain dicts it
serialises itself, vertexbatch as ``ClaudeRequest`` / ``GeminiRequest`` values. Text comes from a
small pool built once, so making a request costs next to nothing and does not pad the baseline.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Iterator
from typing import Any

__all__ = [
    "CLAUDE_MODEL",
    "GEMINI_MODEL",
    "claude_requests",
    "gemini_requests",
    "raw_lines",
    "request_parts",
]

CLAUDE_MODEL = "claude-opus-5-5@default"
GEMINI_MODEL = "gemini-3.8-flash"
ANTHROPIC_VERSION = "vertex-2023-10-16"

_WORDS = [
    "contract",
    "clause",
    "liability",
    "payment",
    "schedule",
    "delivery",
    "warranty",
    "supplier",
    "customer",
    "invoice",
    "ticket",
    "escalation",
    "outage",
    "latency",
    "region",
    "deployment",
    "rollback",
    "incident",
    "summary",
    "severity",
    "review",
    "finding",
    "evidence",
    "risk",
    "mitigation",
    "owner",
    "deadline",
    "quarter",
    "revenue",
    "forecast",
    "churn",
    "feature",
    "request",
    "priority",
    "backlog",
    "sprint",
    "release",
    "note",
    "changelog",
    "migration",
    "schema",
    "index",
]
_SYSTEM = (
    "You are a careful analyst. Answer in at most five sentences, cite the passage you rely on, "
    "and say so plainly when the passage does not contain the answer."
)
_POOL_SIZE = 97  # prime, so pool entries and key numbers do not fall into step


# What a line holds besides its passage (key, system prompt, question, fields): about 400 bytes.
_ENVELOPE = 400


@functools.cache
def _pool(line_bytes: int | None = None) -> list[str]:
    """The passages; ``line_bytes``: lines of about that many bytes on average (within ±25%)
    instead of the default 1-2 KB."""
    rng = random.Random(20240601)
    texts = []
    for _ in range(_POOL_SIZE):
        if line_bytes is None:
            target = rng.randint(750, 1650)  # with the envelope, lines land between ~1 and ~2 KB
        else:
            target = max(rng.randint(line_bytes * 3 // 4, line_bytes * 5 // 4) - _ENVELOPE, 20)
        words: list[str] = []
        size = 0
        while size < target:
            word = rng.choice(_WORDS)
            words.append(word)
            size += len(word) + 1
        texts.append(" ".join(words))
    return texts


def request_parts(
    provider: str, i: int, line_bytes: int | None = None
) -> tuple[str, dict[str, Any]]:
    """Key and plain-dict parts of request ``i``: Claude params, or Gemini contents and config
    (``line_bytes``: see ``_pool``)."""
    key = f"doc-{i:07d}"
    passage = _pool(line_bytes)[i % _POOL_SIZE]
    text = f"Passage {i}: {passage}\n\nWhat obligations does it create, and for whom?"
    if provider == "claude":
        return key, {
            "max_tokens": 1024,
            "temperature": 0.2,
            "system": _SYSTEM,
            "messages": [{"role": "user", "content": text}],
        }
    return key, {
        "contents": [{"role": "user", "parts": [{"text": text}]}],
        "config": {
            "system_instruction": _SYSTEM,
            "temperature": 0.2,
            "max_output_tokens": 1024,
        },
    }


def claude_requests(n: int, line_bytes: int | None = None) -> Iterator[Any]:
    """``n`` ``vb.ClaudeRequest`` values, made one at a time."""
    import vertexbatch as vb

    for i in range(n):
        key, params = request_parts("claude", i, line_bytes)
        yield vb.ClaudeRequest(key, params)


def gemini_requests(n: int, line_bytes: int | None = None) -> Iterator[Any]:
    """``n`` ``vb.GeminiRequest`` values, made one at a time (config in its dict form)."""
    import vertexbatch as vb

    for i in range(n):
        key, parts = request_parts("gemini", i, line_bytes)
        yield vb.GeminiRequest(key, parts["contents"], parts["config"])


def raw_lines(provider: str, n: int, line_bytes: int | None = None) -> Iterator[dict[str, Any]]:
    """The same ``n`` requests as the JSONL line objects a hand-written client would upload."""
    for i in range(n):
        key, parts = request_parts(provider, i, line_bytes)
        if provider == "claude":
            yield {"custom_id": key, "request": {**parts, "anthropic_version": ANTHROPIC_VERSION}}
        else:
            config = parts["config"]
            yield {
                "key": key,
                "request": {
                    "contents": parts["contents"],
                    "systemInstruction": {
                        "role": "user",
                        "parts": [{"text": config["system_instruction"]}],
                    },
                    "generationConfig": {
                        "temperature": config["temperature"],
                        "maxOutputTokens": config["max_output_tokens"],
                    },
                },
            }
