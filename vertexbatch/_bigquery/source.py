"""A BigQuery source: a caller's table, read once through the Storage Read API, as requests.

``BigQuerySource`` names the table and its key and request columns; it goes where ``requests``
goes. ``SourceRows`` reads the table in one read session (one snapshot of it), the two columns
only, one stream, an Arrow slice at a time, and checks each row against the table's own rules
(the key a non-empty string, the request a JSON object, no key twice) before a single request
is handed on: each row's key and request text go to a temporary file, only the keys and their
offsets stay in memory. The requests are then handed on **sorted by key**, each built as the
caller would (``ClaudeRequest(key, params)``; a Gemini ``GenerateContentRequest`` split into
``contents`` and a config), so the staged rows, their digests and the id's claim are the same
whatever order the read session's streams give. What rules the requests themselves break is
checked by the line builders, as for requests given in Python.

Errors name the table, the column, the row's key (its position in the read when the key itself
is bad) and the rule, never a request's content.
"""

from __future__ import annotations

import difflib
import itertools
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

from google.api_core import exceptions as api_exceptions

from .._errors import InvalidRequestError
from .._json import MAX_DEPTH, too_deep
from .._requests.sdk_fields import GEMINI_REQUEST_LEVEL
from .._retry import RetryPolicy
from .._values import ChatRequest, ClaudeRequest, GeminiRequest, Provider
from .dest import Dest, parse_dest
from .read import _SLICE, missing_extra

if TYPE_CHECKING:
    from google.cloud import bigquery_storage_v1

__all__ = [
    "BigQuerySource",
    "ChatRequests",
    "ClaudeRequests",
    "GeminiRequests",
    "ROW_REQUESTS",
    "Share",
    "SourceRows",
    "check_source_extra",
    "EMBEDDINGS_NO_BIGQUERY",
    "chat_of_row",
    "claude_of_row",
    "embeddings_of_row",
    "gemini_of_row",
]

MISSING_EXTRA = (
    "reading a BigQuery source needs the bigquery extra, from a checkout of vertexbatch: "
    "pip install '.[bigquery]' (or 'WHEEL[bigquery]' for a wheel built from it)"
)

_FIELD = "requests"
_MAX_COLUMN = 300  # BigQuery's longest column name
# A GenerateContentRequest's request-level fields, by wire name, as a GenerateContentConfig
# names them (``_requests.gemini_body`` maps them back); ``generationConfig`` is spread into the
# config.
_GEMINI_FIELDS = {wire: name for name, wire in GEMINI_REQUEST_LEVEL.items()}
_GEMINI_NAMES = sorted({"contents", "generationConfig", *_GEMINI_FIELDS})
_NAMES = frozenset(_GEMINI_NAMES)


def _place(position: int, name: object) -> str:
    """An unknown field by its position, and the request's field it is closest to, if any."""
    near = difflib.get_close_matches(str(name), _GEMINI_NAMES, n=1, cutoff=0.75)
    return f"<field {position}>" + (f" (did you mean {near[0]!r}?)" if near else "")


# (key, the request column's object, bad) -> the request; ``bad(rule)`` is the error to raise.
AnyRequest = ClaudeRequest | GeminiRequest | ChatRequest
RowRequest = Callable[
    [str, dict[str, Any], Callable[[str], InvalidRequestError]],
    ClaudeRequest | GeminiRequest | ChatRequest,
]


def claude_of_row(
    key: str, body: dict[str, Any], bad: Callable[[str], InvalidRequestError]
) -> ClaudeRequest:
    """A row's Claude request: the column's object is the Messages request as it is."""
    return ClaudeRequest(key, body)


def gemini_of_row(
    key: str, body: dict[str, Any], bad: Callable[[str], InvalidRequestError]
) -> GeminiRequest:
    """A row's Gemini request: the column's object is a GenerateContentRequest (wire names)."""
    # Named by position, with the closest field a request has: a mapping's keys may be
    # content, so the caller's own names are never shown.
    unknown = [_place(place, name) for place, name in enumerate(body, 1) if name not in _NAMES]
    if unknown:
        raise bad(
            f"the request has unknown field(s) {', '.join(unknown)}; a GenerateContentRequest "
            f"has {_GEMINI_NAMES}"
        )
    generation = body.get("generationConfig")
    if generation is not None and not isinstance(generation, dict):
        raise bad("the request's generationConfig is not an object")
    config = dict(generation or {})
    config.update({_GEMINI_FIELDS[name]: body[name] for name in _GEMINI_FIELDS if name in body})
    return GeminiRequest(key, body.get("contents"), config or None)  # type: ignore[arg-type]


def chat_of_row(
    key: str, body: dict[str, Any], bad: Callable[[str], InvalidRequestError]
) -> ChatRequest:
    """A row's open-model request: the column's object is the chat-completions body as it is."""
    return ChatRequest(key, body)


# Google's batch embeddings page: "BigQuery tables are not supported for Gemini embedding models"
# (https://docs.cloud.google.com/gemini-enterprise-agent-platform/models/embeddings/
# batch-prediction-genai-embeddings, read 2026-12-07).
EMBEDDINGS_NO_BIGQUERY: Final = (
    "embedding batch jobs read and write JSONL in Cloud Storage only: Google's batch embeddings "
    "page says BigQuery tables are not supported for Gemini embedding models "
    "(https://docs.cloud.google.com/gemini-enterprise-agent-platform/models/embeddings/"
    "batch-prediction-genai-embeddings); read the table yourself and pass EmbeddingRequest items"
)


def embeddings_of_row(
    key: str, body: dict[str, Any], bad: Callable[[str], InvalidRequestError]
) -> ClaudeRequest | GeminiRequest:
    """Refused: an embedding job takes no BigQuery source (``EMBEDDINGS_NO_BIGQUERY``)."""
    raise InvalidRequestError(EMBEDDINGS_NO_BIGQUERY, field="requests")


# How each provider reads a row's request column: the ``of_row`` column of
# ``_providers.PROVIDERS``, which sits above this module (tests/test_providers.py holds the two
# equal).
ROW_REQUESTS: Final[Mapping[Provider, RowRequest]] = MappingProxyType(
    {
        "anthropic": claude_of_row,
        "google": gemini_of_row,
        "embeddings": embeddings_of_row,
        "openmaas": chat_of_row,
    }
)


def _column(value: object, name: str) -> str:
    if not isinstance(value, str) or not value or len(value) > _MAX_COLUMN:
        raise InvalidRequestError(
            f"{name} must be a column name of 1 to {_MAX_COLUMN} characters, got {value!r}",
            field=name,
        )
    return value


@dataclass(frozen=True, slots=True)
class Share:
    """How one task reads a source table: its row restriction and the run's snapshot time
    (``None``: now, a plan's read before any task has read)."""

    restriction: str
    at: datetime | None


@dataclass(frozen=True, slots=True)
class BigQuerySource:
    """A caller's BigQuery table of requests, passed where ``requests`` goes.

    ``table`` is ``bq://PROJECT.DATASET.TABLE``; ``key_column`` (default ``custom_id``) holds
    each row's key, a non-empty STRING; ``request_column`` (default ``request``) a JSON column,
    or a STRING holding JSON text, with the request as a JSON object: Claude's Messages
    parameters, or Gemini's ``GenerateContentRequest``. Other columns are not read. Checked when
    built (``InvalidRequestError`` naming the field and the rule).
    """

    table: str
    key_column: str = "custom_id"
    request_column: str = "request"

    def __post_init__(self) -> None:
        if not self.dest.table:
            raise InvalidRequestError(
                f"table {self.table!r} names a dataset: a source is a table, "
                "bq://PROJECT.DATASET.TABLE",
                field="table",
            )
        _column(self.key_column, "key_column")
        _column(self.request_column, "request_column")
        if self.key_column == self.request_column:
            raise InvalidRequestError(
                f"key_column and request_column are both {self.key_column!r}: they must differ",
                field="request_column",
            )

    @property
    def dest(self) -> Dest:
        """The table's parts (``Dest``), checked against BigQuery's naming rules."""
        return parse_dest(self.table, field="table")


class SourceRows:
    """The requests of one ``BigQuerySource``, read once (``requests``), and the snapshot read."""

    def __init__(
        self,
        source: BigQuerySource,
        provider: Provider,
        client: Callable[[], bigquery_storage_v1.BigQueryReadClient],
        project: str,
        policy: RetryPolicy,
        share: Share | None = None,
    ) -> None:
        self.source = source
        self._share = share  # a task's share of the table, at the run's snapshot
        self._provider = provider
        self._client = client  # built at the first read (``BigQueryReader.client``)
        self._project = project  # the read session's parent: billed for the read
        self._policy = policy
        self.snapshot = ""  # the read session's snapshot time, when BigQuery reports it
        self.rows = 0

    def record(self) -> tuple[str, str]:
        """What the manifest records of the read: the table, and its snapshot time or ""."""
        return self.source.table, self.snapshot

    def _bad(self, where: str, rule: str) -> InvalidRequestError:
        where = f" {where}" if where else ""
        return InvalidRequestError(f"table {self.source.table}{where}: {rule}", field=_FIELD)

    def requests(self) -> Iterator[AnyRequest]:
        """Every row's request, sorted by key, once every row has been read and checked."""
        with tempfile.TemporaryFile() as spill:
            index: list[tuple[str, int, int, int]] = []  # key, offset, length, row number
            for number, key, text in self._read():
                data = text.encode()
                index.append((key, spill.tell(), len(data), number))
                spill.write(data)
            self.rows = len(index)
            index.sort()
            for (key, _, _, first), (again, _, _, number) in itertools.pairwise(index):
                if key == again:
                    rows = sorted((first, number))
                    raise self._bad(
                        f"key {key!r}", f"it is on more than one row (rows {rows[0]} and {rows[1]})"
                    )
            for key, offset, length, _ in index:
                spill.seek(offset, os.SEEK_SET)
                yield self._request(key, json.loads(spill.read(length)))

    def _request(
        self, key: str, body: dict[str, Any]
    ) -> ClaudeRequest | GeminiRequest | ChatRequest:
        return ROW_REQUESTS[self._provider](key, body, lambda rule: self._bad(f"key {key!r}", rule))

    def _session(self, columns: list[str] | None) -> Any:
        from google.cloud.bigquery_storage_v1 import types

        share = self._share if columns else None  # a schema-only session takes neither
        options = types.ReadSession.TableReadOptions(
            selected_fields=columns or [], row_restriction=share.restriction if share else ""
        )
        modifiers = {}
        if share is not None and share.at is not None:
            modifiers["table_modifiers"] = types.ReadSession.TableModifiers(snapshot_time=share.at)
        wanted = types.ReadSession(
            table=self.source.dest.table_path,
            data_format=types.DataFormat.ARROW,
            read_options=options,
            **modifiers,
        )

        def open_session() -> Any:
            return self._client().create_read_session(
                parent=f"projects/{self._project}",
                read_session=wanted,
                max_stream_count=1,
                retry=None,
                timeout=self._policy.timeout,
            )

        return self._policy.call(f"read session of {self.source.table}", open_session)

    def _open(self) -> Any:
        """The read session of the two columns; a missing table or column named."""
        source = self.source
        columns = [source.key_column, source.request_column]
        try:
            return self._session(columns)
        except (api_exceptions.NotFound, api_exceptions.BadRequest):
            pass  # which is missing, the table or a column: asked of a session of the table
        try:
            session = self._session(None)  # its schema only: no stream of it is read
        except api_exceptions.NotFound:
            raise self._bad("", "it does not exist (or the caller cannot read it)") from None
        names = set(_schema(session).names)
        for name, option in ((source.key_column, "key_column"), (source.request_column, "")):
            if name not in names:
                option = option or "request_column"
                raise self._bad("", f"it has no column {name!r} ({option})")
        self._check_types(_schema(session))
        at = self._share.at if self._share is not None else None
        if at is not None:
            raise self._bad(
                "",
                f"its read session at the run's snapshot time {at.isoformat()} was refused: a "
                "table is readable as it was only within its time travel window (7 days by "
                "default) and not before it was created; start the run again under a new id",
            )
        raise self._bad("", "its read session was refused")

    def _check_types(self, schema: Any) -> None:
        import pyarrow as pa

        for name in (self.source.key_column, self.source.request_column):
            kind = schema.field(name).type
            if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
                raise self._bad(
                    f"column {name!r}",
                    f"it is of Arrow type {kind}: the key column must be a STRING, the "
                    "request column a JSON or STRING column",
                )

    def _read(self) -> Iterator[tuple[int, str, str]]:
        """``(row number, key, request text)`` of every row, checked, in the read's order."""
        session = self._open()
        when = session.table_modifiers.snapshot_time
        if when and when.timestamp() > 0:
            self.snapshot = when.isoformat()
        self._check_types(_schema(session))
        number = 0
        key_name, request_name = self.source.key_column, self.source.request_column
        for stream in session.streams:
            for page in self._client().read_rows(stream.name).rows(session).pages:  # type: ignore[no-untyped-call]
                batch = page.to_arrow()
                for start in range(0, batch.num_rows, _SLICE):
                    for cells in batch.slice(start, _SLICE).to_pylist():
                        number += 1
                        yield number, *self._checked(number, cells[key_name], cells[request_name])

    def _checked(self, number: int, key: Any, text: Any) -> tuple[str, str]:
        column = self.source.key_column
        if key is None:
            raise self._bad(f"row {number}", f"its key ({column!r}) is NULL")
        if not isinstance(key, str) or not key:
            raise self._bad(f"row {number}", f"its key ({column!r}) must be a non-empty string")
        column = self.source.request_column
        if text is None:
            raise self._bad(f"key {key!r}", f"its request ({column!r}) is NULL")
        if not isinstance(text, str):
            problem = "is not JSON text"
        elif too_deep(text):
            # Measured before parsing, never met by the parser at its limit (where whatever the
            # garbage collector finalizes there would fail too).
            problem = f"is nested too deeply to read (past {MAX_DEPTH} levels)"
        else:
            try:
                body = json.loads(text)
            except ValueError:
                problem = "is not JSON text"
            else:
                problem = "" if isinstance(body, dict) else f"is a JSON {type(body).__name__}"
        if problem:  # raised outside the except block: the decoder's error quotes the text
            raise self._bad(
                f"key {key!r}", f"its request ({column!r}) {problem}, not a JSON object"
            )
        return key, text


def check_source_extra() -> None:
    """Raise ``InvalidRequestError`` (``field="requests"``) unless the ``bigquery`` extra is
    there: a source cannot be read without it."""
    if missing_extra():
        raise InvalidRequestError(f"requests: {MISSING_EXTRA}", field=_FIELD)


def _schema(session: Any) -> Any:
    import pyarrow as pa

    return pa.ipc.read_schema(pa.py_buffer(session.arrow_schema.serialized_schema))


# What every entry point takes as ``requests``: requests given in Python (any iterable, a
# generator too), or a caller's table of them (``BigQuerySource``).
ClaudeRequests = Iterable[ClaudeRequest] | BigQuerySource
GeminiRequests = Iterable[GeminiRequest] | BigQuerySource
ChatRequests = Iterable[ChatRequest] | BigQuerySource
