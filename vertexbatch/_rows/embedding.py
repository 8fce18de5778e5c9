"""An embedding answer read into a ``Result`` (pure, fail closed): the vector kept as float32.

A Gemini embedding batch row answers ``{"key": ..., "request": ..., "response": {"embedding":
{"values": [...]}}, "status": ""}``: the vector under ``response.embedding.values`` (read by
code that runs these jobs, e.g. github.com/kmeanskaran/lean-rag's batch script, which also
reads ``usageMetadata.promptTokenCount``; Google's batch embeddings page shows the input rows
only: docs/platform-facts.md, "Embeddings"). google-genai's ``EmbedContentResponse`` shape
(``embeddings[0].values``) is read too, and ``statistics`` (``token_count``, ``truncated``) as
the text-embedding models write it: their rows, ``{"instance": ..., "predictions":
[{"embeddings": {"statistics": ..., "values": [...]}}], "status": ""}``, are read with the first
prediction as the response (``prediction_response``, called by ``_rows.classify.classify_row``).

The ``Result`` keeps the vector as ``array("f")`` (``Result.embedding``: 4 bytes a value, where a
list of Python floats takes 32) and its ``response`` holds the vector once more in compact form,
``{"embedding": {"float32": BASE64}}`` (little-endian float32 bytes): what the answer cache
stores, a third of the JSON text's size, and what this reader reads back.

    what came back                          Result
    --------------------------------------  ----------------------------------------------
    a vector of numbers                     ok, ``embedding`` set
    a vector, statistics.truncated true     TruncatedError, ``embedding`` kept
    no vector, or an empty one              LineError EMPTY_RESPONSE, transient
    a vector holding something not a number LineError UNREADABLE_RESPONSE, permanent
    an error body                           the LineError it describes
"""

from __future__ import annotations

import base64
import binascii
import sys
from array import array
from collections.abc import Mapping
from typing import Any, Final

from .._errors import TruncatedError
from .._json import is_number, load_json
from .._requests.keymap import EMBEDDING_KEY_FIELD
from .._values import Result, Usage
from .build import usage_of
from .failures import is_error_body, line_error_for, parse_error_object

__all__ = [
    "COMPACT_FIELD",
    "EMBEDDING_ID",
    "compact_response",
    "prediction_response",
    "read_embedding",
    "read_usual_embedding",
]

COMPACT_FIELD: Final = "float32"
# The field of an embedding row holding its id (``_requests.keymap``).
EMBEDDING_ID: Final = EMBEDDING_KEY_FIELD
_TRUNCATED: Final = "input was truncated before it was embedded"
_MAX_COUNT: Final = 2**63 - 1
_FLOAT32_MAX: Final = 3.4028234663852886e38


def _vector_bytes(vector: array[float]) -> bytes:
    if sys.byteorder == "little":
        return vector.tobytes()
    swapped = array("f", vector)
    swapped.byteswap()
    return swapped.tobytes()


def _from_bytes(data: bytes) -> array[float] | None:
    if len(data) % 4:
        return None
    vector = array("f")
    vector.frombytes(data)
    if sys.byteorder != "little":
        vector.byteswap()
    return vector


def compact_response(vector: array[float], usage: Mapping[str, Any] | None) -> dict[str, Any]:
    """The response a ``Result`` keeps: the vector as base64 float32, the usage as it came."""
    response: dict[str, Any] = {
        "embedding": {COMPACT_FIELD: base64.b64encode(_vector_bytes(vector)).decode("ascii")}
    }
    if usage:
        response["usageMetadata"] = dict(usage)
    return response


def _count(value: object) -> int:
    if type(value) is int:
        return value if 0 < value <= _MAX_COUNT else 0
    if isinstance(value, float) and value.is_integer() and 0 < value <= _MAX_COUNT:
        return int(value)
    if isinstance(value, str) and is_number(value.strip()):
        return _count(int(value.strip()))
    return 0


def _embedding_of(response: Mapping[str, Any]) -> Any:
    embedding = response.get("embedding")
    if embedding is None:
        many = response.get("embeddings")
        if isinstance(many, list) and many:
            embedding = many[0]
        elif isinstance(many, Mapping):  # text-embedding predictions: {"embeddings": {...}}
            embedding = many
    return embedding


def _vector(embedding: Mapping[str, Any]) -> tuple[array[float] | None, bool]:
    """(the vector, whether it could not be read); ``(None, False)``: no vector."""
    compact = embedding.get(COMPACT_FIELD)
    if compact is not None:
        if not isinstance(compact, str):
            return None, True
        try:
            vector = _from_bytes(base64.b64decode(compact, validate=True))
        except (binascii.Error, ValueError):
            return None, True
        if vector is None or not _finite(vector):
            return None, True
        return vector, False
    values = embedding.get("values")
    if values is None:
        return None, False
    if not isinstance(values, list):
        return None, True
    if not all(type(v) is float or (type(v) is int) for v in values):
        return None, True
    vector = array("f", values)
    if not _finite(vector):
        return None, True  # past float32's range (infinite as float32): not an embedding
    return vector, False


def _finite(vector: array[float]) -> bool:
    """Whether every value is a finite float32 (NaN compares false both ways)."""
    return not vector or (max(vector) <= _FLOAT32_MAX and min(vector) >= -_FLOAT32_MAX)


def read_embedding(response: Mapping[str, Any], *, key: str) -> Result:
    """Classify one embedding response (see the module docstring). Never raises on content."""
    if is_error_body(response):
        code, name = parse_error_object(response)
        return Result(key=key, error=line_error_for(key, code=code, status=name), response=response)
    meta = response.get("usageMetadata")
    if meta is None:
        meta = response.get("usage_metadata")
    meta = meta if isinstance(meta, Mapping) else None
    embedding = _embedding_of(response)
    if not isinstance(embedding, Mapping):
        embedding = {}
    vector, unreadable = _vector(embedding)
    statistics = embedding.get("statistics")
    statistics = statistics if isinstance(statistics, Mapping) else {}
    tokens = _count(meta.get("promptTokenCount") if meta else None) or _count(
        statistics.get("token_count", statistics.get("tokenCount"))
    )
    usage = usage_of(tokens, 0, 0, 0) if tokens else Usage()
    if unreadable or (vector is None and embedding.get("values") is not None):
        error = line_error_for(
            key, code=0, status="UNREADABLE_RESPONSE", message_kind="unusable", transient=False
        )
        return Result(key=key, usage=usage, error=error, response=response)
    if not vector:
        error = line_error_for(
            key, code=0, status="EMPTY_RESPONSE", message_kind="unusable", transient=True
        )
        return Result(key=key, usage=usage, error=error, response=response)
    kept = compact_response(vector, meta)
    if statistics.get("truncated") is True:
        truncated = TruncatedError(_TRUNCATED, key=key)
        return Result(key=key, usage=usage, error=truncated, response=kept, embedding=vector)
    return Result(key=key, usage=usage, response=kept, embedding=vector)


def prediction_response(predictions: object) -> object:
    """The response of an older prediction row (``{"instance", "predictions", "status"}``, the
    text-embedding models' rows on Google's older batch embeddings page): its first prediction,
    ``{"embeddings": {"statistics": ..., "values": [...]}}``, which ``read_embedding`` reads;
    ``None`` for no prediction. A JSON string of the list (the page's BigQuery output column) is
    read first; what is not a list is handed on as it is, for the caller to find unreadable."""
    if isinstance(predictions, str):
        try:
            predictions = load_json(predictions)
        except ValueError:
            return predictions  # read again by the caller, and found unreadable
    if isinstance(predictions, list):
        return predictions[0] if predictions else None
    return predictions


def read_usual_embedding(response: dict[str, Any], key: str) -> Result | None:
    """The usual answer (a vector under ``embedding``) read whole; the reader is one step."""
    if type(response.get("embedding")) is not dict or "body" in response:
        return None
    return read_embedding(response, key=key)
