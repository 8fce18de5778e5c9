"""The rows a probe stages for each lane, built exactly as ``submit`` stages them (pure).

Each lane's rows are an answer, a second row it can provoke honestly (Claude, Gemini and open
models: a max-tokens stop; embeddings: a sized vector) and, unless ``invalid`` is False, a row
the service refuses line by line (``probe_shape.PROBE_LANES`` holds each lane's builder).
"""

from __future__ import annotations

import json

__all__ = ["ANSWER", "LONG", "chat_rows", "claude_rows", "embedding_rows", "gemini_rows"]

ANSWER = "Name one primary colour."
LONG = "Count from one to twenty in words."


def claude_rows(invalid: bool) -> bytes:
    from .._requests.lines import claude_line
    from .._values import ClaudeRequest

    def claude(key: str, text: str, max_tokens: int) -> bytes:
        params = {"max_tokens": max_tokens, "messages": [{"role": "user", "content": text}]}
        return claude_line(ClaudeRequest(key=key, params=params)).data

    def refused_by_vertex(line: bytes) -> bytes:
        # max_tokens 0, which submit refuses before staging: only Vertex's answer is wanted.
        row = json.loads(line)
        row["request"]["max_tokens"] = 0
        return json.dumps(row, separators=(",", ":")).encode("utf-8") + b"\n"

    rows = claude("answer", ANSWER, 64) + claude("truncated", LONG, 1)
    return rows + refused_by_vertex(claude("invalid", ANSWER, 1)) if invalid else rows


def gemini_rows(invalid: bool) -> bytes:
    from google.genai import types as genai_types

    from .._requests.lines import gemini_line
    from .._values import GeminiRequest

    def gemini(key: str, text: str, role: str, limit: int) -> bytes:
        contents = [{"role": role, "parts": [{"text": text}]}]
        config = genai_types.GenerateContentConfig(max_output_tokens=limit)
        return gemini_line(GeminiRequest(key=key, contents=contents, config=config)).data

    rows = gemini("answer", ANSWER, "user", 64) + gemini("truncated", LONG, "user", 1)
    return rows + gemini("invalid", ANSWER, "critic", 64) if invalid else rows


def embedding_rows(invalid: bool) -> bytes:
    from .._requests.embedding_line import embedding_line
    from .._values import EmbeddingRequest

    rows = embedding_line(EmbeddingRequest("answer", ANSWER)).data
    rows += embedding_line(EmbeddingRequest("sized", LONG, dimensions=8)).data
    if not invalid:
        return rows
    # A task type no model knows, which submit stages all the same: only Vertex's answer counts.
    return rows + embedding_line(EmbeddingRequest("invalid", ANSWER, task_type="NOT_A_TASK")).data


def chat_rows(invalid: bool) -> bytes:
    from .._requests.lines import chat_line
    from .._values import ChatRequest

    def chat(key: str, text: str, max_tokens: int) -> bytes:
        body = {"max_tokens": max_tokens, "messages": [{"role": "user", "content": text}]}
        return chat_line(ChatRequest(key=key, body=body)).data

    rows = chat("answer", ANSWER, 64) + chat("truncated", LONG, 1)
    return rows + chat("invalid", ANSWER, 64).replace(b'"user"', b'"critic"') if invalid else rows
