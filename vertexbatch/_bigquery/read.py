"""A BigQuery-sink job's output table, read through the Storage Read API in bounded memory.

The table's rows are read as Arrow, one stream at a time and a slice of one message at a time
(never the whole table), and each becomes the row a GCS output line would have parsed to
(``output_row``), so ``_job.results`` correlates and classifies it as it does a line of
``predictions.jsonl``: ``request`` and ``response`` are JSON columns (Arrow strings: BigQuery
marks them only by an extension name some servers omit, so both are read as JSON text),
``status`` is a STRING ("" with a response), a Claude row's ``custom_id`` is the staged line's
sibling (a JSON column when the input was JSONL: its value is quoted JSON), ``processed_time``
a TIMESTAMP.

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
from typing import TYPE_CHECKING, Any

from google.api_core import exceptions as api_exceptions

from .._errors import InvalidRequestError
from .._json import load_json
from .._retry import RetryPolicy
from .dest import Dest

if TYPE_CHECKING:
    from google.cloud import bigquery_storage_v1

__all__ = [
    "MISSING_EXTRA",
    "BigQueryReader",
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


def output_row(cells: Mapping[str, Any], max_bytes: int) -> tuple[dict[str, Any] | None, bytes]:
    """One output table row as the parsed GCS line it stands for (pure).

    Returns ``(row, b"")``, or ``(None, raw)`` for a row longer than ``max_bytes`` in its text
    cells (a damaged line, as ``_job.results`` reads one): ``raw`` holds only its id fields, for the
    key they name.
    """
    size = sum(len(v) for v in cells.values() if isinstance(v, str))
    custom_id = cells.get("custom_id")
    if isinstance(custom_id, str) and custom_id.startswith('"'):
        with contextlib.suppress(ValueError):
            custom_id = json.loads(custom_id)
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

    def rows(self, dest: Dest, max_bytes: int) -> Iterator[tuple[dict[str, Any] | None, bytes]]:
        """The rows of the table ``dest`` names (``output_row``); none if it does not exist yet.

        Raises:
            RuntimeError: the ``bigquery`` extra is missing (``MISSING_EXTRA``).
        """
        from google.cloud.bigquery_storage_v1 import types

        client = self.client()
        request = types.ReadSession(table=dest.table_path, data_format=types.DataFormat.ARROW)

        def open_session() -> types.ReadSession:
            return client.create_read_session(
                parent=f"projects/{self._project}",
                read_session=request,
                max_stream_count=_STREAMS,
                retry=None,
                timeout=self._policy.timeout,
            )

        try:
            session = self._policy.call(f"read session of {dest.uri}", open_session)
        except api_exceptions.NotFound:
            logger.info("output table %s does not exist (yet): no rows", dest.uri)
            return
        for stream in session.streams:
            # The stream reconnects at its offset after a transient failure (the client's own).
            stream_rows = client.read_rows(stream.name)  # type: ignore[no-untyped-call]
            for page in stream_rows.rows(session).pages:
                batch = page.to_arrow()
                for start in range(0, batch.num_rows, _SLICE):
                    for cells in batch.slice(start, _SLICE).to_pylist():
                        yield output_row(cells, max_bytes)


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
