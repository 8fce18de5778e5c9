"""What a submission id holds, read-only: its jobs listed and chosen, its record followed.

Shared by the identity protocol (``_job.submit``: adopt, record, cancel twins), runs' steps
(``_runs.jobs``) and plans (``existing_job``). Nothing here writes or cancels.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from .._cache.submission import answer_from_cache, cached_job
from .._errors import InvalidRequestError, JobError, job_errors
from .._gcs.staging import Staging
from .._requests.dedupe import dedupe as dedupe_lines
from .._requests.lines import StagedLine
from .._rules import is_job_name
from .._schemas.check import Schema
from .._staged.amend import with_schema
from .._staged.manifest import RECORD, Manifest, claim_conflict, measure, read_manifest
from .._staged.write import only_job_settings_differ
from .._values import Job, Provider
from .._vertex.controls import NO_CONTROLS, Controls
from .._vertex.jobs import JobSpec, Vertex, controls_of, is_live, output_of, reads_input, succeeded

if TYPE_CHECKING:
    from google.cloud.aiplatform_v1 import BatchPredictionJob as BatchJob

__all__ = [
    "Staged",
    "choose",
    "find",
    "follow_record",
    "existing_job",
    "look_up",
    "matching",
    "recorded_job",
    "recorded_or_gone",
]


def choose(jobs: list[BatchJob]) -> BatchJob:
    """The job an id's record names when none does yet, and the one ``find`` returns meanwhile.

    A job that is live or succeeded wins over one that was cancelled, failed or expired, then
    the earliest: recording a cancelled twin would cancel the id's live job and leave every key
    missing (a record deleted to recover from damage is rebuilt this way).
    """
    return min(jobs, key=lambda j: (not is_live(j) and not succeeded(j), j.create_time, j.name))


def matching(listed: list[BatchJob], spec: JobSpec) -> list[BatchJob]:
    """The listed jobs created for this spec; raise on one that reads our input elsewhere, or
    with other job controls."""
    ours = []
    for job in listed:
        if spec.matches(job):
            ours.append(job)
        elif spec.writes_here(job):
            other = controls_of(job)
            raise InvalidRequestError(
                f"job {job.name} of id {spec.id!r} was created with "
                f"{other.difference(spec.controls)} (this submission's): it was not created by "
                "this submission; cancel or delete it, or use a new id",
                field="id",
            )
        elif reads_input(job, spec):
            raise InvalidRequestError(
                f"job {job.name} reads the input of id {spec.id!r} but writes to "
                f"{output_of(job)!r}, not {spec.dest or spec.output_prefix!r}: it was not "
                "created by this client configuration (or with this dest); delete it or use a "
                "new id",
                field="dest" if spec.dest or job.output_config.bigquery_destination else "id",
            )
    return ours


def follow_record(vertex: Vertex, record: Any, spec: JobSpec, where: str) -> BatchJob:
    name = record.get("name") if isinstance(record, dict) else None
    if not isinstance(name, str) or not is_job_name(name):
        raise InvalidRequestError(
            f"{where} is not a vertexbatch job record (no job resource name in it): it was "
            "damaged or edited; delete it to let the next submit record the id's job again",
            field="staging",
        )
    return recorded_job(vertex, name, spec, where)


def recorded_job(vertex: Vertex, name: str, spec: JobSpec, where: str) -> BatchJob:
    """The job a record at ``where`` names, checked to exist and to be the id's."""
    job = recorded_or_gone(vertex, name, spec, where)
    if job is None:  # the record is wrong, not the caller's job value
        raise _gone(spec, name, where)
    return job


def _gone(spec: JobSpec, name: str, where: str) -> InvalidRequestError:
    """The refusal to go on with an id whose record names a job Vertex does not know."""
    return InvalidRequestError(
        f"{where} names job {name}, which does not exist: it was deleted (once it ended), or "
        f"the record was edited. What it wrote stays "
        f"{f'in {spec.dest}' if spec.dest else f'under {spec.output_prefix}/'}; to submit "
        "the id's rows again as a new job, delete the record: the next submit creates and "
        "records one",
        field="staging",
    )


def recorded_or_gone(vertex: Vertex, name: str, spec: JobSpec, where: str) -> BatchJob | None:
    """The job a record at ``where`` names, checked to be the id's; ``None`` if Vertex does
    not know it (deleted: Vertex deletes only jobs that have ended).

    Raises:
        InvalidRequestError: the job exists but was not created for the id.
    """
    try:
        with job_errors(name):
            job = vertex.get(name)
    except JobError:
        return None
    if not spec.matches(job):
        raise InvalidRequestError(
            f"{where} names job {name}, which was not created for id {spec.id!r}",
            field="staging",
        )
    return job


@dataclass(frozen=True, slots=True)
class Staged:
    """An id that has staged rows, and its job as Vertex last said (``None``: not created)."""

    manifest: Manifest
    spec: JobSpec
    job: BatchJob | None


def look_up(vertex: Vertex, staging: Staging, submission_id: str) -> Staged | None:
    """What an id holds: ``None`` if nothing is staged; read-only."""
    folder = staging.folder(submission_id)
    manifest = read_manifest(staging, submission_id)
    if manifest is None:
        return None
    spec = manifest.spec(submission_id, folder)
    if not manifest.rows:  # answered from the answer cache: no job
        return Staged(manifest, spec, None)
    record = staging.read_json(folder.name(RECORD))
    if record is not None:
        return Staged(manifest, spec, follow_record(vertex, record, spec, folder.uri(RECORD)))
    ours = matching(vertex.list_for_id(submission_id), spec)
    return Staged(manifest, spec, choose(ours) if ours else None)


def find(vertex: Vertex, staging: Staging, submission_id: str) -> Job | None:
    """The id's job: the recorded one, else the one ``choose`` picks of those listed; read-only.

    Raises:
        InvalidRequestError: the id's record names a job Vertex does not know (deleted once it
            ended, or the record edited): the message says where its output stays.
    """
    staged = look_up(vertex, staging, submission_id)
    if staged is not None and not staged.manifest.rows:
        return cached_job(staged.spec)
    if staged is None or staged.job is None:
        return None
    return staged.spec.to_job(staged.job)


def existing_job(
    staging: Staging,
    vertex: Vertex,
    submission_id: str,
    provider: Provider,
    model: str,
    lines: list[StagedLine],
    *,
    dedupe: bool,
    cache: bool,
    schema: Schema | None = None,
    controls: Controls = NO_CONTROLS,
    dest: str = "",
    source: str = "",
) -> tuple[Job, int] | None:
    """The job submitting ``lines`` under the id would return without creating one (a plan's
    question), and how many of its keys the cache answered; read-only. ``None`` if nothing is
    staged, or it is staged with no job yet.

    Raises:
        InvalidRequestError: the id is claimed for other rows: submit would refuse them.
    """
    staged = look_up(vertex, staging, submission_id)
    if staged is None:
        return None
    given_lines = list(dedupe_lines(iter(lines))) if dedupe else lines
    amend = None
    # The keys the id took from the cache, read back from its claim: with a manifest there,
    # ``answer_from_cache`` neither looks up nor writes (a plan writes nothing).
    if cache:
        given_lines, amend = answer_from_cache(
            staging, submission_id, provider, model, iter(given_lines), None
        )
    given = replace(
        measure(submission_id, provider, model, given_lines, staging.limits),
        controls=controls,
        dest=dest,
        source=source,
    )
    amend = with_schema(amend, schema)
    if amend is not None:
        given = amend(given)
    if not staged.manifest.claims_same(given):
        if not (staged.manifest.rejected and only_job_settings_differ(staged.manifest, given)):
            raise claim_conflict(submission_id, staged.manifest, given)
        return None  # the same rows Vertex refused under another model: submit tries again
    cached = staged.manifest.cached
    if not staged.manifest.rows:
        return cached_job(staged.spec), cached
    return None if staged.job is None else (staged.spec.to_job(staged.job), cached)
