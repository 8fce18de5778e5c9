"""Reading a job's output: every key ends as exactly one Result, keyed by the caller's key.

GCS output files and a BigQuery sink's table (``_bigquery.read``) go through one correlation,
``read_rows`` (the key map, ``_rows``, ``_schemas.parsed``); keys with no row come last, missing.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

from .._bigquery.dest import parse_dest
from .._bigquery.read import MISSING_EXTRA, BigQueryReader, missing_extra
from .._cache.fill import CacheFill
from .._cache.submission import cached_status, is_cached_job, read_cached
from .._errors import JobError, LineError, MissingError, job_errors
from .._gcs.line_blocks import LineBlock
from .._gcs.staging import Staging
from .._json import load_json
from .._observe.metrics import Telemetry
from .._observe.progress import Meter, ProgressCallback, meter_of
from .._providers import PROVIDERS
from .._requests.dedupe import shared_result
from .._requests.digests import canonical_digest
from .._requests.keymap import KeyMap
from .._rows.fast_path import row_fields, row_reader, shallow
from .._schemas.check import Schema
from .._schemas.parsed import parsed_result, typed_result
from .._staged.read import read_key_map
from .._values import Job, Result, Status
from .._vertex.jobs import Vertex, output_table, status_of

__all__ = [
    "damaged_results",
    "iter_results",
    "output_files",
    "read_output_file",
    "read_results",
    "read_rows",
]

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
                rows = _bytes_of(read, meter)
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


def _shared(keys: KeyMap, index: int, result: Result, taken: set[int]) -> Iterator[Result]:
    """The same outcome for the other keys of a deduplicated line (none, usually)."""
    for other in keys.shared(index):
        taken.add(other)
        yield shared_result(result, keys.keys[other])


def damaged_results(keys: KeyMap, damaged: dict[int, Result], taken: set[int]) -> Iterator[Result]:
    """The ``MALFORMED_LINE`` results of damaged lines whose keys no intact row answered.

    Called once a pass has read every file: only then is a damaged line known to be the key's
    only copy.
    """
    for index, result in damaged.items():
        if index not in taken:
            taken.add(index)
            yield result
            yield from _shared(keys, index, result, taken)


def read_output_file(
    staging: Staging,
    uri: str,
    keys: KeyMap,
    taken: set[int],
    job: Job,
    *,
    echoed: dict[str, int] | None = None,
    damaged: dict[int, Result] | None = None,
    generation: int = 0,
    twins: set[str] | None = None,
    meter: Meter | None = None,
) -> Iterator[Result]:
    """Yield a result for each line of ``uri`` that answers a key not yet in ``taken``.

    A line that is not a JSON object (not UTF-8, nested too deeply, longer than the staging's
    ``limits.output_line``) is a ``MALFORMED_LINE`` for the key its id fields name, if they name
    one, unless an intact row answers that key: its result is put in ``damaged`` for the caller
    to yield with ``damaged_results`` once the pass has read every file (with no ``damaged``, at
    the end of this file). A row with an id that names no key is skipped. A row with no id is
    matched by its echoed request; ``echoed`` counts such rows by content across the files of a
    job, so that a row also present in an earlier file is not credited to a second key. With
    ``generation``, the file is read at that generation (``Staging.read_lines``). ``twins``
    collects the keys answered by a row matched by an echo other keys' requests share.
    ``meter`` counts the bytes read."""
    with job_errors(job.name, reading=uri):
        blocks = staging.read_line_blocks(
            uri, max_line=staging.limits.output_line, generation=generation
        )
        yield from read_rows(
            _bytes_of(_parsed(blocks, keys), meter),
            keys,
            taken,
            job,
            uri,
            echoed=echoed,
            damaged=damaged,
            twins=twins,
        )


# A row read from a file or a table: its value (``None`` when it is not a readable JSON object),
# its bytes, and the index of the key its id names when that is known already (else ``None``).
Read = tuple[Any, bytes, int | None]


def _parsed(blocks: Iterable[LineBlock], keys: KeyMap) -> Iterator[Read]:
    """Each non-blank line, read. A row whose id names one of ``keys`` is read as
    ``row_fields`` (only the fields a pass reads of it); any other line whole: its echoed request
    may be what matches it."""
    match_id = keys.match_id
    for data, lines, joined in blocks:
        counted = shallow(data)  # the lines that are pieces of data need no count of their own
        for number, raw in enumerate(lines):
            fields = row_fields(raw, counted=counted and number >= joined)
            if fields is not None:
                index = match_id(fields)
                if index is not None:
                    yield fields, raw, index
                    continue
            if not raw.strip():
                continue
            try:
                row = load_json(raw)
            except ValueError:  # not UTF-8, not JSON, too deep, or cut at the longest line
                row = None
            yield (row if type(row) is dict else None), raw, None


def _bytes_of(rows: Iterable[Read], meter: Meter | None) -> Iterable[Read]:
    """``rows``, their bytes (and a newline each) counted by ``meter``."""
    if meter is None:
        return rows
    return _counting(rows, meter)


def _counting(rows: Iterable[Read], meter: Meter) -> Iterator[Read]:
    add = meter.add_bytes
    for read in rows:
        add(len(read[1]) + 1)
        yield read


def read_rows(
    rows: Iterable[Read],
    keys: KeyMap,
    taken: set[int],
    job: Job,
    where: str,
    *,
    echoed: dict[str, int] | None = None,
    damaged: dict[int, Result] | None = None,
    twins: set[str] | None = None,
) -> Iterator[Result]:
    """``read_output_file``'s correlation and classification of parsed rows, each with its raw
    bytes (``None`` for a row that is not a readable JSON object: its raw bytes are searched for
    an id) and the index its id matched, if known, from a GCS file or a BigQuery table (``where``
    names it in the log)."""
    alone = damaged is None  # read alone: its damaged lines' keys end with these rows
    if damaged is None:
        damaged = {}
    skipped = 0
    earlier = echoed if echoed is not None else {}
    here: Counter[str] = Counter()
    sharing = keys.sharing  # whether any line answers several keys (dedupe; none, usually)
    schema = keys.schema  # the answer schema (``schema=``): each usable answer checked
    typed = schema is not None and schema.model is not None  # answers built as a reader's class
    classify = row_reader(job.provider)
    for row, raw, matched in rows:
        if row is None:
            index = keys.find_digest(raw)
            if index is None or index in taken or index in damaged:
                skipped += 1
                continue
            # Not taken yet: an intact copy of the row (later in this file, or in another
            # file: a writer cut short, then retried) still answers the key.
            key = keys.keys[index]
            damaged[index] = Result(
                key=key,
                error=LineError(
                    "output line is not a readable JSON object",
                    key=key,
                    status="MALFORMED_LINE",
                ),
            )
            continue
        index = keys.match_id(row) if matched is None else matched
        if index is None:
            if keys.carries_id(row):  # another job's row, or a damaged id: no key's
                skipped += 1
                continue
            # Only the echoed request tells whose row this is. Identical rows in one file are
            # rows of identical requests; a row already counted in an earlier file is the same
            # row written twice (incremental and final), never a second key's.
            try:
                content = canonical_digest(row)
            except ValueError:
                skipped += 1
                continue
            here[content] += 1
            if here[content] <= earlier.get(content, 0):
                continue
            index = keys.match_echo(row, taken)
            if index is None:
                skipped += 1
                continue
            if twins is not None and keys.echo_shared(index):
                # Other keys' requests echo alike (they may differ where the echo cannot
                # show, a null field, 2.0 for 2): this answer may be a twin's.
                twins.add(keys.keys[index])
        elif index in taken:
            continue  # the same row in an incremental and a final file
        taken.add(index)
        key = keys.keys[index]
        try:
            result = classify(row, key)
            if schema is not None:
                result = parsed_result(result, schema)
        except Exception as exc:  # a row of a shape nobody foresaw: the key still gets one
            # The exception's text and traceback may quote the response: only its type.
            logger.warning(
                "output row for a key of job %s has an unexpected shape (%s)",
                job.name,
                type(exc).__name__,
            )
            result = Result(
                key=key,
                error=LineError(
                    "output row has an unexpected shape", key=key, status="MALFORMED_ROW"
                ),
            )
        if typed:  # outside the try: the reader's class's exception
            result = typed_result(result, schema)
        yield result
        if sharing:
            yield from _shared(keys, index, result, taken)
    for content, count in here.items():
        if count > earlier.get(content, 0):
            earlier[content] = count
    if skipped:
        logger.warning(
            "skipped %d line(s) of %s that are not JSON or match no key; their keys surface as "
            "missing",
            skipped,
            where,
        )
    if alone:
        yield from damaged_results(keys, damaged, taken)
