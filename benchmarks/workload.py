"""The benchmark's requests: deterministic, realistic (about 1-2 KB per JSONL line), cheap to make.

Both sides of a pair consume the same data from a generator: the raw baseline as plain dicts it
serialises itself, vertexbatch as ``ClaudeRequest`` / ``GeminiRequest`` / ``EmbeddingRequest``
values. Text comes from a small pool built once, so making a request costs next to nothing and
does not pad the baseline. An embedding request is one passage to index
(``RETRIEVAL_DOCUMENT``, ``EMBEDDING_DIMENSIONS`` values), its output row about 9.5 KB.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Iterator
from typing import Any

__all__ = [
    "CLAUDE_MODEL",
    "EMBEDDING_DIMENSIONS",
    "EMBEDDING_MODEL",
    "GEMINI_MODEL",
    "MODELS",
    "PROVIDERS",
    "claude_requests",
    "embedding_requests",
    "gemini_requests",
    "raw_lines",
    "request_parts",
    "requests",
]

CLAUDE_MODEL = "claude-opus-5-5@default"
GEMINI_MODEL = "gemini-3.8-flash"
ANTHROPIC_VERSION = "vertex-2023-10-16"
# A regional embedding model (the LocalStack's default location, us-central1, serves it) at 768
# dimensions: the smallest of the output sizes Google recommends for it (768, 1536, 3072; 128 to
# 3072 supported: https://ai.google.dev/gemini-api/docs/models/gemini-embedding-001, read in its
# ?hl=ja and ?hl=zh-cn versions, updated 2026-02-18, read 2026-12-07); the local model's
# default too.
EMBEDDING_MODEL = "gemini-embedding-001"
EMBEDDING_DIMENSIONS = 768
EMBEDDING_TASK = "RETRIEVAL_DOCUMENT"
PROVIDERS = ("claude", "gemini", "embeddings")
MODELS = {"claude": CLAUDE_MODEL, "gemini": GEMINI_MODEL, "embeddings": EMBEDDING_MODEL}

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
    """Key and plain-dict parts of request ``i``: Claude params, Gemini contents and config, or
    the text to embed (``line_bytes``: see ``_pool``)."""
    key = f"doc-{i:07d}"
    passage = _pool(line_bytes)[i % _POOL_SIZE]
    if provider == "embeddings":
        return key, {"text": f"Passage {i}: {passage}"}
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


def embedding_requests(n: int, line_bytes: int | None = None) -> Iterator[Any]:
    """``n`` ``vb.EmbeddingRequest`` values, made one at a time."""
    import vertexbatch as vb

    for i in range(n):
        key, parts = request_parts("embeddings", i, line_bytes)
        yield vb.EmbeddingRequest(
            key, parts["text"], task_type=EMBEDDING_TASK, dimensions=EMBEDDING_DIMENSIONS
        )


def requests(provider: str, n: int, line_bytes: int | None = None) -> Iterator[Any]:
    """``n`` requests of ``provider``'s kind (``PROVIDERS``)."""
    if provider == "claude":
        return claude_requests(n, line_bytes)
    if provider == "gemini":
        return gemini_requests(n, line_bytes)
    if provider == "embeddings":
        return embedding_requests(n, line_bytes)
    raise ValueError(f"provider {provider!r} is not one of {', '.join(PROVIDERS)}")


def raw_lines(provider: str, n: int, line_bytes: int | None = None) -> Iterator[dict[str, Any]]:
    """The same ``n`` requests as the JSONL line objects a hand-written client would upload."""
    for i in range(n):
        key, parts = request_parts(provider, i, line_bytes)
        if provider == "claude":
            yield {"custom_id": key, "request": {**parts, "anthropic_version": ANTHROPIC_VERSION}}
        elif provider == "embeddings":  # Google's row (docs/embeddings.md)
            yield {
                "key": key,
                "request": {
                    "content": {"parts": [{"text": parts["text"]}]},
                    "embed_content_config": {
                        "task_type": EMBEDDING_TASK,
                        "output_dimensionality": EMBEDDING_DIMENSIONS,
                    },
                },
            }
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
