"""bqemulator as the local stack runs it: a Storage Read stream sent in bounded pages.

bqemulator 1.4.0 sends a read stream's rows as Arrow record batches of up to 65,536 rows each
(`bqemulator/grpc_api/read_servicer.py`, `_handle_read_rows`: `to_batches(max_chunksize=65536)`
over the stream's slice, whose chunks are whatever DuckDB returned): a 10,000-row output table
reached a reader as one message, and each 25,000-row stream of a 100,000-row one (1-2 KB rows)
as one or two, each held whole by the reader. BigQuery bounds its pages: each
`ReadRowsResponse` holds "one or more table rows, up to a maximum of 10 MiB per response"
(google-cloud-bigquery-storage 2.43.0, `bigquery_storage_v1/client.py`,
`BigQueryReadClient.read_rows`; the generated `services/big_query_read/client.py` says 128 MB),
and the messages seen from it are a few MB: 1,024 rows of 1.24 MiB
(GoogleCloudDataproc/hadoop-connectors issue 245), 6.3 MB (googleapis/python-bigquery-storage
issue 78).

So the stack sends at most ``PAGE_ROWS`` rows a page, fewer when the stream's rows average
more than ``PAGE_BYTES / PAGE_ROWS`` bytes (never under one row): each stream's slice is cut
into zero-copy slices before bqemulator batches it (``paged``). Everything else is bqemulator's.

The stack's BigQuery process runs ``LAUNCH`` (`python -c LAUNCH THIS_FILE start --rest-port
...`, bqemulator's own arguments after the file): it loads this file by its path and calls
``main`` (``install``, then bqemulator's command), so the process imports no package of
vertexbatch (``-m`` would run ``vertexbatch/__init__.py`` and the stack's) and puts no directory
of it on ``sys.path``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["LAUNCH", "PAGE_BYTES", "PAGE_ROWS", "install", "main", "page_rows", "paged"]

PAGE_ROWS = 1024
PAGE_BYTES = 10 * 1024 * 1024
# `python -c LAUNCH PATH ARGS...`: this module loaded from PATH, its ``main`` run with ARGS.
LAUNCH = (
    "import importlib.util, sys\n"
    "spec = importlib.util.spec_from_file_location('vertexbatch_bq_pages', sys.argv.pop(1))\n"
    "module = importlib.util.module_from_spec(spec)\n"
    "spec.loader.exec_module(module)\n"
    "module.main()\n"
)


def page_rows(rows: int, size: int) -> int:
    """The rows of one page of a stream of ``rows`` rows and ``size`` bytes (pure): at most
    ``PAGE_ROWS``, and the rows of ``PAGE_BYTES`` at the stream's average row size, at least 1."""
    if rows <= 0 or size <= 0:
        return PAGE_ROWS
    return max(1, min(PAGE_ROWS, PAGE_BYTES * rows // size))


def paged(table: pa.Table) -> pa.Table:
    """``table`` in chunks of ``page_rows`` rows (zero-copy slices), which bqemulator's
    `to_batches` then sends one a message."""
    import pyarrow as pa

    rows = page_rows(table.num_rows, table.nbytes)
    return pa.Table.from_batches(table.to_batches(max_chunksize=rows), schema=table.schema)


def install() -> None:
    """Make bqemulator's read streams send ``paged`` slices (its ``get_stream_data``, which
    `_handle_read_rows` calls for each ReadRows, wrapped).

    Raises:
        RuntimeError: bqemulator has no such function (another version than the extra's).
    """
    from bqemulator.grpc_api import read_servicer

    original = getattr(read_servicer, "get_stream_data", None)
    if original is None:
        raise RuntimeError(
            "bqemulator.grpc_api.read_servicer has no get_stream_data: the local stack pages "
            "bqemulator 1.4.0's read streams (the bigquery-local extra's version)"
        )

    def get_stream_data(session_name: str, stream_name: str) -> pa.Table | None:
        table = original(session_name, stream_name)
        return None if table is None else paged(table)

    read_servicer.get_stream_data = get_stream_data  # type: ignore[attr-defined]


def main() -> None:
    """``install``, then bqemulator's command on ``sys.argv`` (the stack's BigQuery process)."""
    from bqemulator.cli import main as bqemulator

    install()
    bqemulator()
