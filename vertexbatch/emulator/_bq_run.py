"""A job with BigQuery sides: its input rows read from a table, its output rows written to one.

The rows run through the GCS path's lifecycle unchanged (`_runner.JobRun`: the same model,
directives, faults, holds, cancel and expiry, and `_rows.format_row`); only the reading and the
writing differ. As Vertex describes it (wire reference §9b):

- Input: Claude reads `custom_id` and `request`; Gemini reads `request`, and its other columns
  are copied into the output table. A Claude input's other columns are ignored or copied as
  `JobOptions.claude_bigquery_columns` says (the docs disagree). `request` is a JSON column (or a
  STRING holding JSON). `response` and `status` are reserved for the output: an input with
  either, or without `request` (Claude: `custom_id`), fails the job's import (code 3), as does a
  Gemini column of a type Vertex does not copy (ARRAY, STRUCT, RANGE, DATETIME, GEOGRAPHY).
- Output: the copied columns with their input types, then `request` (JSON), `response` (JSON),
  `status` (STRING, "" for a row with a response) and `processed_time` (TIMESTAMP), written once
  at the end (or at a cancel or expiry: the finished rows) by a load job, into the named table
  or `JobOptions.bigquery_table_name` in the named dataset (for `bq://PROJECT`, a dataset the
  job creates in its location: `_bq_spec.output_dataset`). No incremental output is written.
- A named output table must not exist (the v1 BigQueryDestination reference): the job creates
  it, empty, when it starts, and one that already exists fails the job with code 9 (Vertex's
  code and words there are UNCONFIRMED); it is never appended to.
- A dataset that does not exist fails the job with code 9; an input table that does not exist
  fails its import (code 3). A dataset in another location than the job's is refused at create
  (`admit`, 400), with the message Vertex is reported to give.
"""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Callable
from datetime import date, datetime, time
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from google.api_core import exceptions as api_exceptions

from vertexbatch.emulator._bigquery import MISSING_EXTRA, missing_modules
from vertexbatch.emulator._bq_spec import TableRef, output_dataset, output_table_name, parse_uri
from vertexbatch.emulator._errors import ApiError
from vertexbatch.emulator._importer import MAX_ROWS, ImportFailure
from vertexbatch.emulator._jobs import JobRecord, JobStore
from vertexbatch.emulator._runner import JobRun, StoreMissing
from vertexbatch.emulator._spec import JobSpec

if TYPE_CHECKING:
    from google.cloud import bigquery, storage

__all__ = ["BigQueryRun", "make_admit", "make_lifecycle"]

RESERVED = ("response", "status")
# Column types Vertex does not copy to a Gemini output table (§9b).
_UNCOPIED = {"RECORD", "STRUCT", "RANGE", "DATETIME", "GEOGRAPHY"}
_OUTPUT_COLUMNS = (
    ("request", "JSON"),
    ("response", "JSON"),
    ("status", "STRING"),
    ("processed_time", "TIMESTAMP"),
)
NO_BIGQUERY = (
    "the local stack was started without BigQuery: LocalStack(bigquery=True) or "
    "vertexbatch emulator --bigquery"
)


def _no_bigquery_message() -> str:
    return MISSING_EXTRA if missing_modules() else NO_BIGQUERY


def make_admit(
    bigquery_factory: Callable[[], bigquery.Client] | None,
) -> Callable[[str, JobSpec], None]:
    """The create-time check of a job's BigQuery sides (`JobStore(admit=...)`).

    No BigQuery in the stack: 400 FAILED_PRECONDITION saying what to install or pass. A dataset
    that exists in a location other than the job's: 400, as Vertex refuses it. A dataset that
    does not exist is left to the job, which fails.
    """

    def admit(location: str, spec: JobSpec) -> None:
        uris = [u for u in (spec.bigquery_source, spec.bigquery_destination) if u]
        if not uris:
            return
        if bigquery_factory is None:
            raise ApiError(400, _no_bigquery_message(), "FAILED_PRECONDITION")
        client = bigquery_factory()
        try:
            for uri in uris:
                ref = parse_uri(uri)
                assert ref is not None
                if not ref.dataset:
                    continue  # bq://PROJECT: the job creates its dataset, in its location
                try:
                    where = client.get_dataset(f"{ref.project}.{ref.dataset}").location
                except api_exceptions.NotFound:
                    continue
                if (where or "US").lower() != location.lower():
                    raise ApiError(
                        400,
                        f"BigQuery Dataset location `{where}` must be in the same location as "
                        f"the BatchPredictionJob `{location}`.",
                        "INVALID_ARGUMENT",
                    )
        finally:
            client.close()  # type: ignore[no-untyped-call]

    return admit


def make_lifecycle(
    storage_factory: Callable[[], storage.Client],
    bigquery_factory: Callable[[], bigquery.Client] | None,
) -> Callable[[JobStore, JobRecord], JobRun]:
    """The `lifecycle_factory` of `make_runner`: a BigQueryRun for a job with a BigQuery side."""

    def lifecycle(store: JobStore, job: JobRecord) -> JobRun:
        spec = job.spec
        if bigquery_factory is not None and (spec.bigquery_source or spec.bigquery_destination):
            return BigQueryRun(store, job, storage_factory, bigquery_factory)
        return JobRun(store, job, storage_factory)

    return lifecycle


def _json_safe(value: Any) -> Any:
    """A BigQuery cell as the NDJSON a load job takes back."""
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    return value


class BigQueryRun(JobRun):
    """A JobRun whose input, output check and writes go to BigQuery for its BigQuery sides."""

    def __init__(
        self,
        store: JobStore,
        job: JobRecord,
        storage_factory: Callable[[], storage.Client],
        bigquery_factory: Callable[[], bigquery.Client],
    ) -> None:
        super().__init__(store, job, storage_factory)
        self._bigquery_factory = bigquery_factory
        self._bq: bigquery.Client | None = None
        # The copied columns of the output table, in order: (name, type, mode).
        self._copied: list[tuple[str, str, str]] = []

    @property
    def bq(self) -> bigquery.Client:
        if self._bq is None:
            self._bq = self._bigquery_factory()
        return self._bq

    def close(self) -> None:
        super().close()
        if self._bq is not None:
            self._bq.close()  # type: ignore[no-untyped-call]

    def _dataset_exists(self, ref: TableRef) -> bool:
        try:
            self.bq.get_dataset(f"{ref.project}.{ref.dataset}")
        except api_exceptions.GoogleAPIError:
            return False
        return True

    # Input.

    def _read_input(self) -> tuple[list[dict[str, Any]], Callable[[dict[str, Any]], Any]]:
        spec = self.job.spec
        if not spec.bigquery_source:
            rows, echoed_of = super()._read_input()
            # GCS input to a BigQuery table: the sibling keys become JSON columns.
            keys = {k: None for line in rows for k in line if k not in ("request", *RESERVED)}
            self._copied = [(k, "JSON", "NULLABLE") for k in keys]
            return rows, echoed_of
        ref = parse_uri(spec.bigquery_source)
        assert ref is not None
        if not self._dataset_exists(ref):
            raise StoreMissing(f"Failed to get BigQuery dataset location for {ref.dataset_uri}.")
        try:
            table = self.bq.get_table(ref.table_id())
        except api_exceptions.GoogleAPIError:
            raise ImportFailure("The input table does not exist or cannot be read.") from None
        fields = {field.name: field for field in table.schema}
        for name in RESERVED:
            if name in fields:
                raise ImportFailure(f"The input table has a column named {name!r}, reserved.")
        claude = spec.publisher == "anthropic"
        for name in ("custom_id", "request") if claude else ("request",):
            if name not in fields:
                raise ImportFailure(f"The input table has no {name!r} column.")
        keep = [name for name in fields if name != "request"]
        if claude and self.job.options.claude_bigquery_columns == "ignore":
            keep = ["custom_id"]
        for name in keep:
            field = fields[name]
            if field.field_type in _UNCOPIED or field.mode == "REPEATED":
                raise ImportFailure(
                    f"The input column {name!r} has a type that cannot be copied to the output."
                )
        self._copied = [(n, fields[n].field_type, "NULLABLE") for n in keep]
        if (table.num_rows or 0) > MAX_ROWS:
            raise ImportFailure(f"The input has more than {MAX_ROWS} rows.")
        lines = []
        for number, row in enumerate(self.bq.list_rows(table, page_size=10_000), 1):
            request = row["request"]
            if isinstance(request, str):
                try:
                    request = json.loads(request)
                except ValueError:
                    request = None
            if not isinstance(request, dict):
                raise ImportFailure(f"Row {number}: request is not a JSON object.")
            line = {name: _json_safe(row[name]) for name in keep}
            line["request"] = request
            lines.append(line)
        return lines, _as_read  # a table's row is echoed as it was read

    # Output.

    def _destination(self) -> TableRef:
        spec = self.job.spec
        return output_dataset(spec.bigquery_destination, spec.model_id, self.job.create_time)

    def _schema(self) -> list[bigquery.SchemaField]:
        from google.cloud import bigquery

        columns = [*self._copied, *((n, t, "NULLABLE") for n, t in _OUTPUT_COLUMNS)]
        return [bigquery.SchemaField(n, t, mode=m) for n, t, m in columns]

    def _check_output(self) -> None:
        spec = self.job.spec
        if not spec.bigquery_destination:
            super()._check_output()
            return
        ref = self._destination()
        if parse_uri(spec.bigquery_destination) != ref:  # bq://PROJECT: the job's own dataset
            from google.cloud import bigquery

            dataset = bigquery.Dataset(ref.dataset_id)
            dataset.location = self.job.location
            self.bq.create_dataset(dataset, exists_ok=True)
        elif not self._dataset_exists(ref):
            raise StoreMissing(f"Failed to get BigQuery dataset location for {ref.dataset_uri}.")
        if ref.table is None:
            return
        from google.cloud import bigquery

        try:  # the named table must not exist: made now, empty, so that it is never shared
            self.bq.create_table(bigquery.Table(ref.table_id(), self._schema()))
        except api_exceptions.Conflict:
            raise StoreMissing(
                f"BigQuery table {ref.table_id()} already exists: a BigQuery output table "
                "given in full must not exist (name its dataset, bq://PROJECT.DATASET, and the "
                "job creates a table of its own)."
            ) from None

    def _write_shard(self) -> None:
        if not self.job.spec.bigquery_destination:
            super()._write_shard()

    def _write_final(self) -> None:
        if not self.job.spec.bigquery_destination:
            super()._write_final()
            return
        from google.cloud import bigquery

        job = self.job
        ref = self._destination()
        name = output_table_name(
            job.spec.bigquery_destination, job.create_time, job.options.bigquery_table_name
        )
        schema = self._schema()
        # The job's own table: a named one was made when the job started.
        table = self.bq.create_table(bigquery.Table(ref.table_id(name), schema), exists_ok=True)
        if not self.lines:
            return
        names = [field.name for field in schema]
        data = io.BytesIO()
        for line in self.lines:
            row = json.loads(line)
            if not isinstance(row.get("status"), str):
                row["status"] = json.dumps(row["status"])
            data.write(json.dumps({k: row.get(k) for k in names}).encode() + b"\n")
        data.seek(0)
        config = bigquery.LoadJobConfig(
            schema=schema,
            source_format=bigquery.SourceFormat.NEWLINE_DELIMITED_JSON,
            write_disposition=bigquery.WriteDisposition.WRITE_APPEND,
        )
        # No `size`: a resumable upload (bqemulator refuses the client's multipart uploads).
        self.bq.load_table_from_file(data, table, job_config=config).result()


def _as_read(line: dict[str, Any]) -> dict[str, Any]:
    """A table row's echo: the row itself."""
    return line
