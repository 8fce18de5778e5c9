"""The local embedding model: a deterministic vector for one input line, in both row formats (pure).

Two families, two formats, as Google's pages give them (docs/platform-facts.md, "Embeddings"):

- Gemini embedding models (`gemini-embedding-*`): an input line is `{"key": ..., "request":
  {"content": {"parts": [{"text": ...}]}, "embed_content_config": {...}}}` and its output row
  echoes the line with `"response": {"embedding": {"values": [...]}, "usageMetadata":
  {"promptTokenCount": N}}` (the response's shape is UNCONFIRMED: Google's page shows inputs
  only; this is what code that reads these jobs reads). `gemini-embedding-2` ignores `task_type`
  and `title` in `embed_content_config`, as the page says; here they change nothing either.
- The text-embedding models (`text-embedding-*`, `text-multilingual-embedding-*`): an input line
  is an instance, `{"content": "...", "task_type"?: ..., "title"?: ...}` (the Text Embeddings
  API's instance fields; a task_type not in `TASK_TYPES` fails the line with a 400), and its row
  is `{"instance": {...}, "predictions": [{"embeddings": {"statistics": {"token_count": N,
  "truncated": false}, "values": [...]}}], "status": ""}` (the older batch embeddings page's
  JSONL output example); a failed row has no prediction and a `status` as the stack writes
  every lane's (`"Bad Request: {json}"`: the real shape is not on the page).

The vector is derived from a hash of the text without its directives, unit length, with
`output_dimensionality` values (`outputDimensionality` too) or `DEFAULT_DIMENSIONS` (the local
model's choice, not Google's default). Directives (`_directives.py`) give every outcome:
`error CODE`, `drop`, `truncate` (statistics.truncated, the vector kept), `empty` (no values);
any other outcome directive is a 400 line error saying it does not apply to an embedding.
"""

from __future__ import annotations

import hashlib
import json
import math
from datetime import datetime
from typing import Any

from vertexbatch.emulator._directives import DirectiveError, plan_directives, without_directives
from vertexbatch.emulator._errors import LineFailure, reason_phrase
from vertexbatch.emulator._model import Answer

__all__ = [
    "DEFAULT_DIMENSIONS",
    "TASK_TYPES",
    "answer_embedding",
    "is_embedding_model",
    "is_text_embedding_model",
    "text_embedding_row",
]

DEFAULT_DIMENSIONS = 768
MAX_DIMENSIONS = 3072
# The task types of EmbedContentConfig (google-genai's types.EmbedContentConfig.task_type; the
# Gemini API's TaskType enum).
TASK_TYPES = frozenset(
    {
        "TASK_TYPE_UNSPECIFIED",
        "RETRIEVAL_QUERY",
        "RETRIEVAL_DOCUMENT",
        "SEMANTIC_SIMILARITY",
        "CLASSIFICATION",
        "CLUSTERING",
        "QUESTION_ANSWERING",
        "FACT_VERIFICATION",
        "CODE_RETRIEVAL_QUERY",
    }
)
_GEMINI_PREFIX = "gemini-embedding"
_TEXT_PREFIXES = ("text-embedding", "text-multilingual-embedding")


def is_embedding_model(model: str) -> bool:
    """Whether the local model answers ``model`` with embeddings (either family)."""
    return model.lower().startswith((_GEMINI_PREFIX, *_TEXT_PREFIXES))


def is_text_embedding_model(model: str) -> bool:
    """Whether ``model`` takes the older rows (``{"content": ...}``)."""
    return model.lower().startswith(_TEXT_PREFIXES)


def _vector(text: str, dimensions: int) -> list[float]:
    seed = hashlib.sha256(without_directives(text).strip().encode("utf-8")).digest()
    raw = hashlib.shake_256(seed).digest(2 * dimensions)
    values = [
        int.from_bytes(raw[i : i + 2], "little") / 32767.5 - 1.0 for i in range(0, len(raw), 2)
    ]
    norm = math.sqrt(sum(v * v for v in values)) or 1.0
    return [round(v / norm, 6) for v in values]


def _config(request: dict[str, Any]) -> dict[str, Any]:
    config = request.get("embed_content_config")
    if config is None:
        config = request.get("embedContentConfig")
    return config if isinstance(config, dict) else {}


def _text_of(request: dict[str, Any]) -> str | None:
    content = request.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, dict) or not isinstance(content.get("parts"), list):
        return None
    texts = [p.get("text") for p in content["parts"] if isinstance(p, dict)]
    strings = [t for t in texts if isinstance(t, str)]
    if not texts or len(strings) != len(texts):
        return None
    return "\n".join(strings)


def answer_embedding(request: Any, model: str) -> tuple[Answer, bool]:
    """The answer to one line's request (Gemini: its ``request``; text-embedding: the line), and
    whether the input was truncated (a ``truncate`` directive)."""
    if not isinstance(request, dict):
        return Answer(error=LineFailure(400, "Local model: the request is not an object.")), False
    text = _text_of(request)
    if text is None or not text.strip():
        return Answer(
            error=LineFailure(400, "Local model: the request has no text to embed.")
        ), False
    # A text-embedding line is an instance: its task_type is a field of it (the Text Embeddings
    # API's instance), and no instance field sets the dimensionality.
    text_family = is_text_embedding_model(model)
    config = {"task_type": request.get("task_type")} if text_family else _config(request)
    dimensions = config.get("output_dimensionality", config.get("outputDimensionality"))
    if dimensions is None:
        dimensions = DEFAULT_DIMENSIONS
    if type(dimensions) is not int or not 1 <= dimensions <= MAX_DIMENSIONS:
        return Answer(
            error=LineFailure(400, "Local model: output_dimensionality is invalid.")
        ), False
    task = config.get("task_type", config.get("taskType"))
    if task is not None and task not in TASK_TYPES:
        return Answer(error=LineFailure(400, "Local model: task_type is not a task type.")), False
    try:
        plan = plan_directives([text])
    except DirectiveError as exc:
        return Answer(error=LineFailure(400, f"Local model: {exc}")), False
    if plan.outcome == "drop":
        return Answer(dropped=True), False
    if plan.outcome == "error":
        code = plan.error_code
        return Answer(error=LineFailure(code=code, message=f"Local model error {code}.")), False
    if plan.outcome not in ("answer", "truncate", "empty"):
        message = f"Local model: the {plan.outcome} directive does not apply to an embedding."
        return Answer(error=LineFailure(400, message)), False
    values = [] if plan.outcome == "empty" else _vector(text, dimensions)
    tokens = len(without_directives(text)) // 4 + 1
    embedding: dict[str, Any] = {"values": values}
    if plan.outcome == "truncate":  # the local model's way to say so (UNCONFIRMED for Gemini)
        embedding["statistics"] = {"token_count": tokens, "truncated": True}
    response = {"embedding": embedding, "usageMetadata": {"promptTokenCount": tokens}}
    return Answer(response=response), plan.outcome == "truncate"


def text_embedding_row(line: dict[str, Any], model: str, moment: datetime) -> dict[str, Any] | None:
    """The output row of a text-embedding model's line (the older format), or None (dropped)."""
    answer, truncated = answer_embedding(line, model)
    if answer.dropped:
        return None
    row: dict[str, Any] = {"instance": line}
    if answer.error is not None:
        # The shape of a failed row's status is not on Google's page: written as the stack
        # writes every other lane's (``"Bad Request: {json}"``), so its code is read again.
        error = answer.error
        body = {"error": {"code": error.code, "message": error.message, "status": error.status}}
        row["predictions"] = []
        row["status"] = f"{reason_phrase(error.code)}: {json.dumps(body)}"
        return row
    response = answer.response or {}
    values = response["embedding"]["values"]
    tokens = response["usageMetadata"]["promptTokenCount"]
    statistics = {"token_count": tokens, "truncated": truncated}
    row["predictions"] = [{"embeddings": {"statistics": statistics, "values": values}}]
    row["status"] = ""
    return row
