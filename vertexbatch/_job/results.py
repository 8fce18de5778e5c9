"""Reading a job's output: every key ends as exactly one Result, keyed by the caller's key.

GCS output files and a BigQuery sink's table (``_bigquery.read``) go through one correlation,
``_job.correlate`` (the key map, ``_rows``, ``_schemas.parsed``); keys with no row come last,
missing.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator

from .._bigquery.dest import parse_dest
from .._bigquery.read import MISSING_EXTRA, BigQueryReader, missing_extra
from .._cache.fill import CacheFill
from .._cache.submission import cached_status, is_cached_job, read_cached
from .._errors import JobError, MissingError, job_errors
from .._gcs.staging import Staging
from .._observe.metrics import Telemetry
from .._observe.progress import Meter, ProgressCallback, meter_of
from .._providers import PROVIDERS
from .._schemas.check import Schema
from .._staged.read import read_key_map
from .._values import Job, Result, Status
from .._vertex.jobs import Vertex, output_table, status_of
from .correlate import counted_bytes, damaged_results, read_output_file, read_rows

__all__ = ["iter_results", "output_files", "read_results"]

logger = logging.getLogger("vertexbatch")


def output_files(directory: str, names: list[str]) -> list[str]:
    """The JSONL files under ``directory`` to read: final files first, then incremental shards.

    Reading final files first means a row present in both is taken from the final file.
    """
    start = len(directory.rstrip("/")) + 1
    jsonl = [n for n in names if n.endswith(".jsonl")]
    return sorted(jsonl, key=lambda n: ("incremental" in n[start:], n))


def iter_results(
    vertex: Vertex,
    staging: Staging,
    job: Job,
    telemetry: Telemetry,
    fill: CacheFill | None = None,
    bigquery: BigQueryReader | None = None,
    progress: ProgressCallback | None = None,
    schema: Schema | None = None,
) -> Iterator[Result]:
    """Stream the job's results; once it is terminal, yield the missing keys last, in order.

    ``fill`` (a caller's results pass of a ``cache=True`` job) is given the job's ok answers
    when the job was terminal as the pass began, and finished once it is read to the end.
    ``bigquery`` reads the output table of a BigQuery-sink job. ``progress`` is told the
    results yielded of the job's keys and the output bytes read (``vertexbatch.Progress``).

    Raises:
        InvalidRequestError: ``schema`` (a reader's, ``read_results``) is not the job's.
        JobError: the job does not exist, or its key map or output cannot be read (a
            BigQuery-sink job without the ``bigquery`` extra among them).
    """
    table = ""
    if is_cached_job(job):  # answered wholly from the answer cache: no Vertex job
        status, directory = cached_status(job), ""
    else:
        try:
            with job_errors(job.name):
                vertex_job = vertex.get(job.name)
        except JobError as exc:  # deleted (Vertex deletes only ended jobs), or never was
            raise JobError(
                f"{exc}: if it was deleted, what it wrote stays "
                f"{f'in {job.dest}' if job.dest else f'under {job.output_prefix}/'}",
                job=job.name,
            ) from exc
        status = status_of(vertex_job)
        # Only the directory Vertex names is this job's: its time is not createTime, and the
        # output prefix may hold other jobs' directories (a cancelled twin's, say). None yet:
        # no output yet.
        directory = vertex_job.output_info.gcs_output_directory
        # A BigQuery sink: the table Vertex names (None yet: no output yet).
        table = output_table(vertex_job)
        if vertex_job.output_config.bigquery_destination.output_uri and missing_extra():
            raise JobError(f"job {job.name} writes to BigQuery: {MISSING_EXTRA}", job=job.name)
    meter = meter_of(progress, "results", total_rows=job.keys)
    results = read_results(
        staging,
        job,
        status,
        directory,
        telemetry,
        fill,
        table=table,
        bigquery=bigquery,
        meter=meter,
        schema=schema,
    )
    yield from results if meter is None else meter.counted(results, done=True)


def read_results(
    staging: Staging,
    job: Job,
    status: Status,
    directory: str,
    telemetry: Telemetry,
    fill: CacheFill | None = None,
    *,
    table: str = "",
    bigquery: BigQueryReader | None = None,
    meter: Meter | None = None,
    schema: Schema | None = None,
) -> Iterator[Result]:
    """``iter_results`` of a job whose status and output directory (or ``table``, the
    ``bq://P.D.T`` of a BigQuery sink's output table, read with ``bigquery``) are known (no
    Vertex call): a run reads its attempts as one listing of the run's jobs, or its own
    records, found them. ``meter`` counts the output bytes read and their total. ``schema``:
    a reader's ``schema=``, the job's own or refused, its class building ``parsed`` values.

    Raises:
        InvalidRequestError: ``schema`` is not the schema the job was submitted with.
        JobError: the job's key map or output cannot be read.
    """
    keys = read_key_map(staging, job, schema)
    # Each output file is read at the generation listed: one replaced meanwhile is an error,
    # never a splice of two generations.
    generations: dict[str, int] = {}
    sizes: dict[str, int] = {}
    if directory:
        with job_errors(job.name, reading=directory):
            for name, size, gen in staging.list_names(directory):
                generations[name], sizes[name] = gen, size
    # The GCS files, then (None) the BigQuery output table.
    files: list[str | None] = [*(output_files(directory, list(generations)) if generations else [])]
    if meter is not None and not table:
        meter.total_bytes = sum(sizes[name] for name in files if name is not None)
    if table:
        if bigquery is None:
            raise JobError(f"job {job.name} writes to BigQuery: no reader given", job=job.name)
        files.append(None)
    taken: set[int] = set()
    for result in read_cached(staging, job, keys, taken):
        telemetry.record(result, job)
        yield result
    echoed: dict[str, int] = {}
    damaged: dict[int, Result] = {}
    twins: set[str] = set()
    # A cache=True job's ok answers go to the answer cache (a caller's pass of a terminal job).
    sink = fill if keys.fills_cache and status.terminal else None
    for uri in files:
        if uri is None:
            assert bigquery is not None
            dest = parse_dest(table)
            with job_errors(job.name, reading=table):
                sink_id = PROVIDERS[job.provider].sink_id_column  # None: rows read whole
                read = bigquery.rows(dest, staging.limits.output_line, sink_id, keys.match_id)
                rows = counted_bytes(read, meter)
                results = read_rows(
                    rows, keys, taken, job, table, echoed=echoed, damaged=damaged, twins=twins
                )
                yield from _recorded(results, telemetry, job, sink, twins)
            continue
        results = read_output_file(
            staging,
            uri,
            keys,
            taken,
            job,
            echoed=echoed,
            damaged=damaged,
            generation=generations[uri],
            twins=twins,
            meter=meter,
        )
        yield from _recorded(results, telemetry, job, sink, twins)
    for result in damaged_results(keys, damaged, taken):
        telemetry.record(result, job)
        yield result
    if status.terminal and len(taken) < len(keys):  # a key has no row (none, usually)
        missing = _missing_message(status)
        for index in range(len(keys)):
            if index not in taken:
                key = keys.keys[index]  # only a missing key's is read out of the key map
                error = MissingError(
                    missing,
                    key=key,
                    job_error_code=status.error_code,
                    job_error_message=status.error_message,
                )
                result = Result(key=key, error=error)
                telemetry.record(result, job)
                yield result
    if sink is not None:
        sink.finish()


def _recorded(
    results: Iterable[Result],
    telemetry: Telemetry,
    job: Job,
    sink: CacheFill | None,
    twins: set[str],
) -> Iterator[Result]:
    """``results``, each recorded in the metrics and its ok answer given to the cache fill."""
    for result in results:
        telemetry.record(result, job)
        # The cache holds an answer only under its own request: never a twin's.
        if (
            sink is not None
            and result.ok
            and not result.shared
            and result.response
            and result.key not in twins
        ):
            sink.add(result.key, result.response)
        yield result


def _missing_message(status: Status) -> str:
    """Why a key has no line: none was written, and the job's own error when it has one."""
    if not status.error_code:
        return "no output line for this key"
    words = MissingError.bound(status.error_message)
    return (
        f"no output line for this key: the job ended {status.state} with error "
        f"{status.error_code}{': ' + words if words else ''}"
    )
