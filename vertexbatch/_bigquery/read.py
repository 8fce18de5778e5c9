"""A BigQuery-sink job's output table, read through the Storage Read API in bounded memory.

The table's rows are read as Arrow, one stream at a time and a slice of one message at a time
(never the whole table), and each becomes the row a GCS output line would have parsed to
(``output_row``), so ``_job.results`` correlates and classifies it as it does a line of
``predictions.jsonl``: ``request`` and ``response`` are JSON columns (Arrow strings: BigQuery
marks them only by an extension name some servers omit, so both are read as JSON text),
``status`` is a STRING ("" with a response), a Claude row's ``custom_id`` is the staged line's
sibling (a JSON column when the input was JSONL: its value is quoted JSON), ``processed_time``
a TIMESTAMP. A Claude or open-model table is read by its id and the columns a matched row is
classified by (``READ_COLUMNS``), its echoed request left on the server; only
the rows no id matches, if any, are read again whole (``BigQueryReader.rows``).

The ``BigQueryReadClient`` is the caller's (``Client(bigquery_read=...)``; ``for_endpoints``
makes one for a local stack's plaintext gRPC endpoint, ``VERTEXBATCH_BIGQUERY_STORAGE_HOST``),
or built at first use with application default credentials. Its package is the ``bigquery``
extra, imported only here, only when a BigQuery-sink job is read.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from datetime import date, datetime
from typing import TYPE_CHECKING, Any, Final

from google.api_core import exceptions as api_exceptions

from .._errors import InvalidRequestError
from .._json import load_json
from .._retry import RetryPolicy
from .dest import Dest

if TYPE_CHECKING:
    from google.cloud import bigquery_storage_v1

__all__ = [
    "MISSING_EXTRA",
    "READ_COLUMNS",
    "BigQueryReader",
    "Read",
    "check_extra",
    "endpoint_read_client",
    "missing_extra",
    "output_row",
]

logger = logging.getLogger("vertexbatch")

MISSING_EXTRA = (
    "reading a BigQuery sink needs the bigquery extra, from a checkout of vertexbatch: "
    "pip install '.[bigquery]' (or 'WHEEL[bigquery]' for a wheel built from it)"
)
_MODULES = ("google.cloud.bigquery_storage_v1", "pyarrow")
# Rows turned into Python values at a time: a Storage Read message may hold tens of thousands.
_SLICE = 512
# Streams asked of a read session; they are read one after another.
_STREAMS = 4
_GRPC_OPTIONS = [("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", -1)]
# What a row whose id names a key is read by, beside its id column (the provider table's
# ``sink_id_column``: Claude's and an open model's ``custom_id``): all a results pass reads of
# such a row (``_rows.fast_path.ROW_FIELDS``), never the echoed request (Claude's ``request``,
# an open model's ``body``: the largest cells). A Gemini row is read whole: its id is in its
# ``request``'s labels, a JSON column, and a session selects columns (and STRUCT fields), never
# a path inside a JSON value; with no label, only the whole request (its canonical form) names
# the key.
READ_COLUMNS: Final = ("response", "status", "processed_time")

# A row of the table as ``_job.results`` reads a line: ``output_row``'s two values, and the
# index of the key its id names when that is known already.
Read = tuple[dict[str, Any] | None, bytes, int | None]


def missing_extra(find: Callable[[str], Any] = importlib.util.find_spec) -> bool:
    """Whether a module of the ``bigquery`` extra cannot be imported."""
    for name in _MODULES:
        try:
            if find(name) is None:
                return True
        except (ImportError, ValueError):  # a parent package is missing
            return True
    return False


def check_extra(field: str = "dest") -> None:
    """Raise ``InvalidRequestError`` naming ``field`` unless the ``bigquery`` extra is there."""
    if missing_extra():
        raise InvalidRequestError(f"{field}: {MISSING_EXTRA}", field=field)


def _cell(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    return value


def _unquoted(value: Any) -> Any:
    """An id cell as a GCS line holds it: a JSON column's quoted string read as JSON."""
    if isinstance(value, str) and value.startswith('"'):
        with contextlib.suppress(ValueError):
            return json.loads(value)
    return value


def output_row(cells: Mapping[str, Any], max_bytes: int) -> tuple[dict[str, Any] | None, bytes]:
    """One output table row as the parsed GCS line it stands for (pure).

    Returns ``(row, b"")``, or ``(None, raw)`` for a row longer than ``max_bytes`` in its text
    cells (a damaged line, as ``_job.results`` reads one): ``raw`` holds only its id fields, for the
    key they name.
    """
    size = sum(len(v) for v in cells.values() if isinstance(v, str))
    custom_id = _unquoted(cells.get("custom_id"))
    if size > max_bytes:
        if isinstance(custom_id, str):
            return None, json.dumps({"custom_id": custom_id}).encode()
        request = cells.get("request")
        return None, (request.encode()[:max_bytes] if isinstance(request, str) else b"")
    row = {name: _cell(value) for name, value in cells.items()}
    if custom_id is not None:
        row["custom_id"] = custom_id
    for name in ("request", "response"):
        text = row.get(name)
        if isinstance(text, str) and text:
            # Kept as text when it is not JSON: an unreadable response, an echo matching none.
            with contextlib.suppress(ValueError):
                row[name] = load_json(text)
    return row, b""


class BigQueryReader:
    """The Storage Read API of one client: its rows of a table, read as ``output_row``s."""

    def __init__(
        self,
        project: str,
        policy: RetryPolicy,
        own: Callable[[Callable[[], None]], None],
        *,
        given: bigquery_storage_v1.BigQueryReadClient | None = None,
    ) -> None:
        self._project = project  # the read session's parent: the project billed for the read
        self._policy = policy
        self._own = own
        self._client = given
        self._lock = threading.Lock()

    def client(self) -> bigquery_storage_v1.BigQueryReadClient:
        """The caller's client, or the one built at first use (closed with the ``Client``)."""
        with self._lock:
            if self._client is None:
                if missing_extra():
                    raise RuntimeError(MISSING_EXTRA)
                from google.cloud import bigquery_storage_v1

                self._client = bigquery_storage_v1.BigQueryReadClient()  # type: ignore[no-untyped-call]
                self._own(self._client.transport.close)
            return self._client

    def rows(
        self,
        dest: Dest,
        max_bytes: int,
        id_column: str | None = None,
        match: Callable[[Mapping[str, Any]], int | None] | None = None,
    ) -> Iterator[Read]:
        """The rows of the table ``dest`` names, each ``(row, raw, index)``: ``output_row``'s
        two values and the index of the key its id names, when known (else ``None``); none if
        the table does not exist yet.

        With ``id_column`` (the lane's ``sink_id_column``) and ``match`` (the key map's
        ``KeyMap.match_id``), the session selects only that column and ``READ_COLUMNS``: the
        echoed request, the largest cell, stays on the server. A row whose id ``match`` finds
        comes with its key's index; the others (no id, another key's id) are read again
        whole, by a second session after the first, only if there are any, so each is
        correlated by its echo as before (GCS's ``_rows.fast_path`` reads a line so). A
        table without one of those columns is read whole (BigQuery refuses a session naming
        a column a table lacks).

        Raises:
            RuntimeError: the ``bigquery`` extra is missing (``MISSING_EXTRA``).
        """
        session = None
        if id_column is not None and match is not None:
            # A missing column: INVALID_ARGUMENT from BigQuery, NOT_FOUND from the local stack's
            # server; then the table is read whole, as it was before the selection.
            with contextlib.suppress(api_exceptions.NotFound, api_exceptions.BadRequest):
                session = self._session(dest, (id_column, *READ_COLUMNS))
        if session is None:
            try:
                whole = self._session(dest, None)
            except api_exceptions.NotFound:
                logger.info("output table %s does not exist (yet): no rows", dest.uri)
                return
            for cells in _cells(self.client(), whole):
                row, raw = output_row(cells, max_bytes)
                yield row, raw, None
            return
        assert id_column is not None and match is not None
        again = False
        for cells in _cells(self.client(), session):
            index = _id_index(cells, id_column, match)
            if index is None:
                again = True  # read whole below
                continue
            row, raw = output_row(cells, max_bytes)
            yield row, raw, index
        if not again:
            return
        try:
            whole = self._session(dest, None)
        except api_exceptions.NotFound:  # deleted since
            return

        def unread(value: Any) -> bool:  # a row the first session gave no key
            return _id_index({id_column: value}, id_column, match) is None

        for cells in _cells(self.client(), whole, unread, id_column):
            if _id_index(cells, id_column, match) is None:  # not read above
                row, raw = output_row(cells, max_bytes)
                yield row, raw, None

    def _session(
        self, dest: Dest, columns: tuple[str, ...] | None
    ) -> bigquery_storage_v1.types.ReadSession:
        """A read session of the table ``dest`` names, of ``columns`` (``None``: every one).

        Raises:
            google.api_core.exceptions.GoogleAPIError: as the session's create answered.
        """
        from google.cloud.bigquery_storage_v1 import types

        client = self.client()
        request = types.ReadSession(table=dest.table_path, data_format=types.DataFormat.ARROW)
        if columns is not None:
            request.read_options = types.ReadSession.TableReadOptions(selected_fields=columns)

        def open_session() -> types.ReadSession:
            return client.create_read_session(
                parent=f"projects/{self._project}",
                read_session=request,
                max_stream_count=_STREAMS,
                retry=None,
                timeout=self._policy.timeout,
            )

        return self._policy.call(f"read session of {dest.uri}", open_session)


def _id_index(
    cells: Mapping[str, Any], id_column: str, match: Callable[[Mapping[str, Any]], int | None]
) -> int | None:
    """The index of the key a row's id names (its ``id_column``, unquoted as ``output_row``
    reads it), or ``None``."""
    value = _unquoted(cells.get(id_column))
    return match({id_column: value}) if isinstance(value, str) else None


def _cells(
    client: bigquery_storage_v1.BigQueryReadClient,
    session: bigquery_storage_v1.types.ReadSession,
    keep: Callable[[Any], bool] | None = None,
    column: str = "",
) -> Iterator[dict[str, Any]]:
    """Each row of the session's streams as Python values, ``_SLICE`` rows at a time: one page
    (one ``ReadRowsResponse``) at a time, released before the next is read. With ``keep``: only
    the rows whose ``column`` value it keeps (every row of a page without that column)."""
    for stream in session.streams:
        # The stream reconnects at its offset after a transient failure (the client's own).
        stream_rows = client.read_rows(stream.name)  # type: ignore[no-untyped-call]
        for page in stream_rows.rows(session).pages:
            batch = page.to_arrow()
            del page
            if keep is not None and column in batch.schema.names:
                values = batch.column(column).to_pylist()
                batch = batch.take([n for n, value in enumerate(values) if keep(value)])
            for start in range(0, batch.num_rows, _SLICE):
                yield from batch.slice(start, _SLICE).to_pylist()
            del batch  # released before the next page is read


def endpoint_read_client(endpoint: str | None) -> bigquery_storage_v1.BigQueryReadClient | None:
    """A read client on a plaintext gRPC ``host:port`` (a local stack's), anonymous; ``None``
    for no endpoint or without the ``bigquery`` extra (a sink's results then say to install
    it). The caller closes it (``transport.close``)."""
    if not endpoint or missing_extra():
        return None
    import grpc
    from google.cloud import bigquery_storage_v1
    from google.cloud.bigquery_storage_v1.services.big_query_read.transports import (
        BigQueryReadGrpcTransport,
    )

    channel = grpc.insecure_channel(endpoint, options=_GRPC_OPTIONS)
    return bigquery_storage_v1.BigQueryReadClient(  # type: ignore[no-untyped-call]
        transport=BigQueryReadGrpcTransport(channel=channel)
    )
