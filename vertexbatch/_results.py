"""Reading a job's output: every key ends as exactly one Result, keyed by the caller's key."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

from google.api_core import exceptions as api_exceptions

from ._errors import JobError, LineError, MissingError
from ._identity import read_key_map
from ._lines import KeyMap
from ._models import Job, Result
from ._outcomes import classify_row
from ._staging import Staging
from ._telemetry import Telemetry
from ._vertex import Vertex, status_of

__all__ = ["iter_results", "output_files", "read_output_file"]

logger = logging.getLogger("vertexbatch")


def output_files(directory: str, names: list[str]) -> list[str]:
    """The JSONL files under ``directory`` to read: final files first, then incremental shards.

    Reading final files first means a row present in both is taken from the final file.
    """
    start = len(directory.rstrip("/")) + 1
    jsonl = [n for n in names if n.endswith(".jsonl")]
    return sorted(jsonl, key=lambda n: ("incremental" in n[start:], n))


def iter_results(
    vertex: Vertex, staging: Staging, job: Job, telemetry: Telemetry
) -> Iterator[Result]:
    """Stream the job's results; once it is terminal, yield the missing keys last, in order.

    Raises:
        JobError: the job does not exist, or its key map or output cannot be read.
    """
    try:
        vertex_job = vertex.get(job.name)
    except api_exceptions.NotFound as exc:
        raise JobError(f"job {job.name} does not exist", job=job.name) from exc
    status = status_of(vertex_job)
    try:
        keys = read_key_map(staging, job)
        directory = vertex_job.output_info.gcs_output_directory or job.output_prefix
        files = output_files(directory, [name for name, _ in staging.list_names(directory)])
    except api_exceptions.GoogleAPICallError as exc:
        raise JobError(
            f"cannot read the key map or output of job {job.name}: {type(exc).__name__}",
            job=job.name,
        ) from exc
    taken: set[int] = set()
    for uri in files:
        for result in read_output_file(staging, uri, keys, taken, job):
            telemetry.record(result, job)
            yield result
    if status.terminal:
        for index, key in enumerate(keys.keys):
            if index not in taken:
                result = Result(key=key, error=MissingError("no output line for this key", key=key))
                telemetry.record(result, job)
                yield result


def read_output_file(
    staging: Staging, uri: str, keys: KeyMap, taken: set[int], job: Job
) -> Iterator[Result]:
    skipped = 0
    try:
        lines = staging.read_lines(uri)
        for raw in lines:
            if not raw.strip():
                continue
            try:
                row = json.loads(raw)
            except ValueError:
                row = None
            if not isinstance(row, dict):
                index = keys.find_digest(raw)
                if index is None or index in taken:
                    skipped += 1
                    continue
                taken.add(index)
                key = keys.keys[index]
                yield Result(
                    key=key,
                    error=LineError(
                        "output line is not a JSON object", key=key, status="MALFORMED_LINE"
                    ),
                )
                continue
            index = keys.match(row, taken)
            if index is None:
                skipped += 1
                continue
            if index in taken:
                continue  # the same row in an incremental and a final file
            taken.add(index)
            key = keys.keys[index]
            try:
                yield classify_row(row, key=key, provider=job.provider)
            except Exception:  # a row of a shape nobody foresaw: the key still gets an outcome
                logger.exception("output row for a key of job %s has an unexpected shape", job.name)
                yield Result(
                    key=key,
                    error=LineError(
                        "output row has an unexpected shape", key=key, status="MALFORMED_ROW"
                    ),
                )
    except api_exceptions.GoogleAPICallError as exc:
        raise JobError(f"cannot read {uri}: {type(exc).__name__}", job=job.name) from exc
    if skipped:
        logger.warning(
            "skipped %d line(s) of %s that are not JSON or match no key; their keys surface as "
            "missing",
            skipped,
            uri,
        )
