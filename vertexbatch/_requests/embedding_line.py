"""An embedding request's staged line, checked first (pure): Google's Gemini embedding batch row,
or, for a text-embedding model, its instance (``_requests.embedding_text``).

Google's page for batch embeddings ("Get batch embeddings inferences",
https://docs.cloud.google.com/gemini-enterprise-agent-platform/models/embeddings/batch-prediction-genai-embeddings,
read 2026-12-07) gives each input line as::

    {"key": "id_1", "request": {"content": {"parts": [{"text": "Hello World"}]},
     "embed_content_config": {"output_dimensionality": 768, "title": "some_title",
                              "task_type": "RETRIEVAL_DOCUMENT"}}}

The line's ``key`` carries the digest of the caller's key (``_requests.keymap``), as a Claude
line's ``custom_id`` does: output rows name the key they answer by it. ``embed_content_config``
is written only with what the request sets. What a model ignores in it (``gemini-embedding-2``:
``task_type`` and ``title``) is refused by ``check_for_model`` before anything is staged.

The lane serves both families; the family is the model's, so the lane marks each request for a
text-embedding model (``embedding_text.TextEmbedding``) and ``embedding_line`` writes it as that
family's instance, after the checks both share (the text, ``task_type``, ``title``, no schema).
"""

from __future__ import annotations

from typing import Any, Final

from .._errors import InvalidRequestError
from .._schemas.check import Schema
from .._values import EmbeddingRequest
from .digests import key_digest
from .embedding_text import TextEmbedding, text_embedding_line
from .importer_types import FieldTypes
from .keymap import EMBEDDING_KEY_FIELD
from .lines import StagedLine, staged_line

__all__ = [
    "EMBEDDING_ID_FIELD",
    "EMBEDDINGS_PAGE",
    "MAX_DIMENSIONS",
    "check_embedding_fields",
    "check_for_model",
    "embedding_line",
]

EMBEDDINGS_PAGE: Final = (
    "https://docs.cloud.google.com/gemini-enterprise-agent-platform/models/embeddings/"
    "batch-prediction-genai-embeddings"
)
EMBEDDING_ID_FIELD: Final = EMBEDDING_KEY_FIELD
# The largest vector a Gemini embedding model gives (gemini-embedding-001: 3,072 dimensions, its
# default; docs/platform-facts.md "Embeddings"): a larger output_dimensionality is refused here.
MAX_DIMENSIONS: Final = 3072
# The models that ignore task_type and title in embed_content_config: the page says
# "gemini-embedding-2 expects the task type and title to be inlined directly within the prompt"
# and that given in embed_content_config they are silently ignored (EMBEDDINGS_PAGE, read
# 2026-12-07).
_INLINED: Final = ("gemini-embedding-2",)


def _text(value: object, what: str, key: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise InvalidRequestError(
            f"{what} of request {key!r} must be a non-empty string, got {type(value).__name__}",
            field=what,
        )
    return value


def check_embedding_fields(request: Any) -> None:
    """What the lane checks of a request before its line is built (an unknown field cannot
    occur: ``EmbeddingRequest`` has its fields)."""


def check_for_model(model: str, request: EmbeddingRequest) -> None:
    """Refuse what ``model`` would ignore: ``task_type`` and ``title`` for ``gemini-embedding-2``.

    Raises:
        InvalidRequestError: naming the key, the fields, the model and what the page says to do.
    """
    set_here = [name for name in ("task_type", "title") if getattr(request, name) is not None]
    if set_here and model.lower().startswith(_INLINED):
        raise InvalidRequestError(
            f"request {request.key!r} sets {' and '.join(set_here)}, which {model} ignores in a "
            "batch row's embed_content_config: Google's page says to write the task and title "
            f"inline in the text instead ({EMBEDDINGS_PAGE}); drop them and put them in the text",
            field=set_here[0],
        )


def embedding_line(
    request: EmbeddingRequest, types: FieldTypes | None = None, schema: Schema | None = None
) -> StagedLine:
    """The Vertex batch line of an embedding request (``{"key": digest, "request": ...}``; a
    ``TextEmbedding``'s instance, ``{"content": ...}``).

    Raises:
        InvalidRequestError: the text is empty or not a string, ``task_type`` or ``title`` is
            not a non-empty string, ``dimensions`` is not a whole number from 1 to
            ``MAX_DIMENSIONS`` (is set at all, for a text-embedding model), or ``schema=`` was
            given (an embedding has none).
    """
    key = request.key
    if schema is not None:
        raise InvalidRequestError(
            f"request {key!r}: schema= does not apply to embeddings (the answer is a vector)",
            field="schema",
        )
    text = request.text
    if not isinstance(text, str) or not text.strip():
        what = "empty" if isinstance(text, str) else type(text).__name__
        raise InvalidRequestError(
            f"text of request {key!r} must be non-blank text, got {what}", field="text"
        )
    task_type = _text(request.task_type, "task_type", key)
    title = _text(request.title, "title", key)
    dimensions = request.dimensions
    if isinstance(request, TextEmbedding):
        return text_embedding_line(key, text, task_type, title, dimensions)
    config: dict[str, Any] = {}
    if dimensions is not None:
        if (
            isinstance(dimensions, bool)
            or not isinstance(dimensions, int)
            or not 1 <= dimensions <= MAX_DIMENSIONS
        ):
            raise InvalidRequestError(
                f"dimensions of request {key!r} must be a whole number from 1 to "
                f"{MAX_DIMENSIONS:,}, got {dimensions!r}",
                field="dimensions",
            )
        config["output_dimensionality"] = dimensions
    if task_type is not None:
        config["task_type"] = task_type
    if title is not None:
        config["title"] = title
    body: dict[str, Any] = {"content": {"parts": [{"text": text}]}}
    if config:
        body["embed_content_config"] = config
    return staged_line(key, key_digest(key), EMBEDDING_ID_FIELD, body, types)
