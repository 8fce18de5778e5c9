"""The rows of one output file or table, correlated to the job's keys and classified (pure but
for the file's read): a key's row read by its id (or, with none, by its echoed request), each row
read once even when written twice, a damaged line's key held until every file has been read.

``read_output_file`` reads a GCS file, ``read_rows`` correlates rows from either source (a
BigQuery table's through ``_bigquery.read``); ``_job.results`` runs a pass over them.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

from .._errors import LineError, job_errors
from .._gcs.line_blocks import LineBlock
from .._gcs.staging import Staging
from .._json import load_json
from .._observe.progress import Meter
from .._requests.dedupe import shared_result
from .._requests.digests import canonical_digest
from .._requests.keymap import KeyMap
from .._rows.fast_path import row_fields, row_reader, shallow
from .._schemas.parsed import parsed_result, typed_result
from .._values import Job, Result

__all__ = [
    "Read",
    "counted_bytes",
    "damaged_results",
    "parsed_lines",
    "read_output_file",
    "read_rows",
]

logger = logging.getLogger("vertexbatch")


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
            counted_bytes(parsed_lines(blocks, keys), meter),
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


def parsed_lines(blocks: Iterable[LineBlock], keys: KeyMap) -> Iterator[Read]:
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


def counted_bytes(rows: Iterable[Read], meter: Meter | None) -> Iterable[Read]:
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
