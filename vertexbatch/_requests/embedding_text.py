"""The older text-embedding models' staged line: an instance, no key on the wire (pure).

``text-embedding-*`` and ``text-multilingual-embedding-*`` models take batch rows of their own
(Google's older batch embeddings page, ``OLDER_PAGE``, read 2026-12-07)::

    {"content": "Give a short description of a machine learning model:"}

and answer ``{"instance": {...the line...}, "predictions": [{"embeddings": {"statistics":
{"token_count": 8, "truncated": false}, "values": [...]}}], "status": ""}``. A line is one
instance of the Text Embeddings API (``API_PAGE``: ``content``, and optionally ``task_type``
and ``title``); ``outputDimensionality`` is no instance field there but a request *parameter*
(``TextEmbeddingPredictionParams``), and the batch page shows no way to give it per row, so
``dimensions`` is refused for these models, naming the rule.

The row carries no key: output finds its key by the echoed instance, whose canonical digest the
key record holds (``_requests.keymap``: ``KeyMap.match_echo`` reads ``instance`` as it reads a
``request``); identical texts under distinct keys are told apart as other lanes' identical
requests are (each echo takes the first key not yet answered). The line is the instance's
canonical text (keys sorted, compact), so its digest is the text's own.

The lane (``_lanes.embeddings``) marks each request for such a model as a ``TextEmbedding``
(the model is the submission's, not the request's), and ``embedding_line`` writes it here.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Final

from .._errors import InvalidRequestError
from .._values import EmbeddingRequest
from .digests import key_digest
from .lines import StagedLine
from .plain_json import STRICT_SORTED

__all__ = [
    "API_PAGE",
    "OLDER_PAGE",
    "TEXT_PREFIXES",
    "TextEmbedding",
    "is_text_embedding",
    "text_embedding_line",
    "text_requests",
]

OLDER_PAGE: Final = (
    "https://cloud.google.com/vertex-ai/generative-ai/docs/embeddings/"
    "batch-prediction-genai-embeddings"
)
API_PAGE: Final = (
    "https://cloud.google.com/vertex-ai/generative-ai/docs/model-reference/text-embeddings-api"
)
# How the older family's model ids begin (the Text Embeddings API's models: text-embedding-005,
# text-multilingual-embedding-002, ...; the lane's prefixes in ``_rules.LANES``).
TEXT_PREFIXES: Final = ("text-embedding", "text-multilingual-embedding")


def is_text_embedding(model: object) -> bool:
    """Whether ``model`` is of the older text-embedding family (its own rows)."""
    return isinstance(model, str) and model.lower().startswith(TEXT_PREFIXES)


@dataclass(frozen=True, slots=True)
class TextEmbedding(EmbeddingRequest):
    """An ``EmbeddingRequest`` bound for a text-embedding model: ``embedding_line`` writes it as
    an instance. Made by the lane (``text_requests``), never by a caller."""

    @classmethod
    def of(cls, request: EmbeddingRequest) -> TextEmbedding:
        """``request``, marked for the older rows."""
        return cls(
            request.key,
            request.text,
            task_type=request.task_type,
            title=request.title,
            dimensions=request.dimensions,
        )


def text_requests(requests: Iterable[Any]) -> Iterator[Any]:
    """Each ``EmbeddingRequest`` of ``requests`` marked for the older rows, as it is taken
    (anything else passes, refused by the submission naming its type)."""
    for request in requests:
        yield TextEmbedding.of(request) if isinstance(request, EmbeddingRequest) else request


def text_embedding_line(
    key: str, text: str, task_type: str | None, title: str | None, dimensions: object
) -> StagedLine:
    """The staged line of a text-embedding model's request: ``{"content", "task_type"?,
    "title"?}``, with no key; its canonical digest is the instance's (what the output echoes).
    The text, task type and title are checked by the caller (``embedding_line``).

    Raises:
        InvalidRequestError: ``dimensions`` is set (no instance field takes it: see the module
            docstring), or the text is not UTF-8 (a lone surrogate).
    """
    if dimensions is not None:
        raise InvalidRequestError(
            f"dimensions of request {key!r}: a text-embedding model's batch row is an instance "
            f"of content, task_type and title ({API_PAGE}); the output dimensionality is a "
            f"request parameter there, which a batch row cannot carry ({OLDER_PAGE}); leave "
            "dimensions unset (or use a Gemini embedding model, which takes it per row)",
            field="dimensions",
        )
    instance = {"content": str(text)}
    if task_type is not None:
        instance["task_type"] = str(task_type)
    if title is not None:
        instance["title"] = str(title)
    try:
        data: bytes | None = STRICT_SORTED.encode(instance).encode("utf-8")
    except UnicodeEncodeError:
        data = None
    if data is None:  # refused outside the except block: nothing chained holds the text
        bad = next(name for name, value in instance.items() if _not_utf8(value))
        field = "text" if bad == "content" else bad
        raise InvalidRequestError(
            f"request {key!r} cannot be staged: its {field} is not UTF-8 text (a lone surrogate)",
            field=field,
        )
    canonical = hashlib.sha256(data).hexdigest()[:32]  # ``keymap.digest_text`` of the same text
    return StagedLine(key, key_digest(key), canonical, data + b"\n")


def _not_utf8(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
