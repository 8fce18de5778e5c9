"""A caller's results pass of one job (``Client.results``): its arguments checked before
anything is read, the answer cache filled from it, the pass traced.

``schema=`` (a reader's, ``_schemas.parsed.reader_schema``) is checked as a submission's is
here; that it is the schema the job was submitted with is checked on the job's manifest as the
pass begins, before any result (``_staged.read.read_key_map``).
"""

from __future__ import annotations

from collections.abc import Iterator

from .._cache.fill import CacheFill
from .._cache.submission import is_cached_job
from .._cloud import Cloud
from .._observe.progress import ProgressCallback, check_progress
from .._observe.traces import job_attributes
from .._rules import check_job
from .._schemas.parsed import reader_schema
from .._values import Job, Result
from .results import iter_results

__all__ = ["results_pass"]


def results_pass(
    cloud: Cloud, job: Job, schema: object, progress: ProgressCallback | None
) -> Iterator[Result]:
    """``iter_results`` of ``job`` for a caller: its ok answers fill the answer cache (a
    ``cache=True`` job's), and with ``schema`` each ``parsed`` is built as its class.

    Raises:
        InvalidRequestError: ``progress`` is not callable, ``job`` is not a ``Job`` naming a
            Vertex batch job, or ``schema`` is not one ``schema=`` takes (here); ``schema`` is
            not the job's own (as the pass begins).
    """
    progress = check_progress(progress)
    if not is_cached_job(job):
        check_job(job)
    given = reader_schema(schema)
    fill = CacheFill(cloud.staging, job)
    results = iter_results(
        cloud.vertex, cloud.staging, job, cloud.telemetry, fill, cloud.bigquery, progress, given
    )
    return cloud.tracing.passing(results, job_attributes(job))
