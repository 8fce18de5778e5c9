"""Output rows of `predictions.jsonl` in Vertex's format (pure).

`{"status": "", "processed_time": "...+00:00", <echoed sibling keys>, "request": {echo},
"response": {...}}`; a failed row has a non-empty `status` and no `response` (or, in the Claude
`error_envelope` shape, an Anthropic error object in `response`). The status is a string with a
JSON tail (`"Bad Request: {json}"`), a `{code, message}` object, or a plain sentence with no
JSON and no code (`status_text`).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Literal

from vertexbatch.emulator._errors import LineFailure, reason_phrase
from vertexbatch.emulator._model import Answer
from vertexbatch.emulator._options import GEMINI_ERROR_SHAPES, JobOptions

__all__ = ["Provider", "format_row", "processed_time"]

Provider = Literal["anthropic", "google", "openmaas"]


def processed_time(moment: datetime) -> str:
    """Millisecond precision, trailing zeros trimmed, `+00:00` (as Vertex writes it)."""
    base = moment.strftime("%Y-%m-%dT%H:%M:%S")
    millis = f"{moment.microsecond // 1000:03d}".rstrip("0")
    return f"{base}.{millis}+00:00" if millis else f"{base}+00:00"


def _status_string(error: LineFailure) -> str:
    body = {"error": {"code": error.code, "message": error.message, "status": error.status}}
    return f"{reason_phrase(error.code)}: {json.dumps(body)}"


def _openai_row(
    line: dict[str, Any], answer: Answer, moment: datetime, options: JobOptions
) -> dict[str, Any]:
    """An open model's row: the input line's fields echoed (`custom_id`, `method`, `url`,
    `body`), then `response`, the OpenAI chat completion (`chat_response="batch_body"`: inside
    `{"status_code": 200, "body": ...}`); a failure's `status` as the other lanes write it, or
    (`error_envelope`) an OpenAI error body in `response`."""
    row: dict[str, Any] = {"status": "", "processed_time": processed_time(moment)}
    row.update((k, v) for k, v in line.items() if k not in ("status", "response"))
    error = answer.error
    if error is None and options.chat_response == "batch_body":
        row["response"] = {"status_code": 200, "body": answer.response}
    elif error is None:
        row["response"] = answer.response
    elif error.shape == "error_envelope":
        row["status"] = reason_phrase(error.code)
        body = {"message": error.message, "type": error.anthropic_type, "code": error.code}
        row["response"] = {"error": body}
    elif error.shape == "status_object":
        row["status"] = {"code": error.code, "message": error.message}
    elif error.shape == "status_text":
        row["status"] = error.sentence
    else:
        row["status"] = _status_string(error)
    return row


def format_row(
    *,
    provider: Provider,
    line: dict[str, Any],
    answer: Answer,
    moment: datetime,
    options: JobOptions,
) -> dict[str, Any] | None:
    """The output row for one normalised input line, or None when the row is dropped.

    Args:
        provider: the job's publisher.
        line: the normalised input line (`request` plus any sibling keys).
        answer: what the local model said.
        moment: when the row was processed (UTC).
        options: the job's output shape options.
    """
    if answer.dropped:
        return None
    if provider == "openmaas":
        return _openai_row(line, answer, moment, options)
    request = line.get("request")
    if provider == "google" and not options.echo_labels and isinstance(request, dict):
        request = {k: v for k, v in request.items() if k != "labels"}
    row: dict[str, Any] = {"status": "", "processed_time": processed_time(moment)}
    if options.siblings_echoed(provider):
        row.update((k, v) for k, v in line.items() if k not in ("request", "status", "response"))
    row["request"] = (
        json.dumps(request, ensure_ascii=False)
        if options.echo_of_request(provider) == "string"
        else request
    )
    if answer.error is not None:
        error = answer.error
        if provider == "anthropic":
            shape = error.shape or options.claude_error_shape
        elif error.shape in GEMINI_ERROR_SHAPES:
            shape = error.shape
        else:
            shape = options.gemini_error_shape
        if shape == "status_object":
            row["status"] = {"code": error.code, "message": error.message}
        elif shape == "status_text":
            row["status"] = error.sentence
        elif shape == "error_envelope":
            row["status"] = reason_phrase(error.code)
            row["response"] = {
                "type": "error",
                "error": {"type": error.anthropic_type, "message": error.message},
            }
        else:
            row["status"] = _status_string(error)
        return row
    response = answer.response
    if options.embedding_response == "embeddings" and isinstance(response, dict):
        response = _embeddings_form(response)
    if provider == "anthropic" and options.claude_success_shape == "string":
        row["response"] = json.dumps(response)
    elif provider == "anthropic" and options.claude_success_shape == "body":
        row["response"] = {"body": response}
    else:
        row["response"] = response
    return row


def _embeddings_form(response: dict[str, Any]) -> dict[str, Any]:
    """A Gemini embedding answer in google-genai's EmbedContentResponse form (`embeddings`, a
    list; the tokens in each one's `statistics`); any other answer unchanged."""
    embedding = response.get("embedding")
    if not isinstance(embedding, dict):
        return response
    tokens = (response.get("usageMetadata") or {}).get("promptTokenCount", 0)
    statistics = {"token_count": tokens, "truncated": False, **embedding.get("statistics", {})}
    return {"embeddings": [{"values": embedding.get("values", []), "statistics": statistics}]}
