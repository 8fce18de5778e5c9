"""Submission identity: one id, one set of rows, one live job — whatever crashes and races.

The protocol (DESIGN.md, "Submission identity"):

1. Stage ``input.jsonl`` and ``keys.jsonl``, then ``manifest.json``, all create-only. The manifest
   claims the id for one set of rows: the same rows again carry on, other rows are refused and
   nothing staged is touched.
2. Before each create attempt, list the id's jobs; adopt the earliest that reads the id's input and
   writes its output prefix. One that reads the input but writes elsewhere is an error.
3. After create, record the job's name in ``job.json``, create-only. Every caller returns the
   recorded job and cancels the id's other jobs; the recording caller lists again after recording,
   and keeps listing (bounded) while a create whose response was lost may still show up.
4. With no record (a submitter stopped between create and record), the next submit records the
   earliest listed job; ``find`` returns that same job meanwhile.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from typing import Any

from google.api_core import exceptions as api_exceptions

from ._errors import InvalidRequestError
from ._lines import KeyMap, StagedLine
from ._models import Job, Provider
from ._retry import RetryPolicy, is_transient_call_error
from ._rules import MAX_INPUT_BYTES, MAX_ROWS
from ._staging import JSONL, Folder, Staging
from ._vertex import BatchJob, JobSpec, Vertex, is_live

__all__ = ["Manifest", "find", "read_key_map", "stage", "submit"]

logger = logging.getLogger("vertexbatch")

# Create failures that say the job was not made (quota); others may hide a job made anyway.
_REJECTED = (api_exceptions.TooManyRequests, api_exceptions.ResourceExhausted)

INPUT = "input.jsonl"
KEYS = "keys.jsonl"
MANIFEST = "manifest.json"
RECORD = "job.json"
FORMAT = "vertexbatch/1"


@dataclass(frozen=True, slots=True)
class Manifest:
    """What claims an id: the rows' provider, model, count, size and MD5."""

    provider: Provider
    model: str
    rows: int
    bytes: int
    md5: str

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, **asdict(self)}

    @classmethod
    def from_json(cls, data: Any, where: str) -> Manifest:
        try:
            return cls(
                provider=data["provider"],
                model=data["model"],
                rows=int(data["rows"]),
                bytes=int(data["bytes"]),
                md5=str(data["md5"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidRequestError(
                f"{where} is not a vertexbatch manifest", field="staging"
            ) from exc

    def spec(self, submission_id: str, folder: Folder) -> JobSpec:
        return JobSpec(
            id=submission_id,
            provider=self.provider,
            model=self.model,
            input_uri=folder.input_uri,
            output_prefix=folder.output_prefix,
            keys=self.rows,
        )


def _claim_conflict(submission_id: str, staged: Manifest, given: Manifest) -> InvalidRequestError:
    if (staged.provider, staged.model) != (given.provider, given.model):
        what = f"{staged.provider} model {staged.model!r}, not {given.model!r}"
    else:
        what = (
            f"other rows ({staged.rows} rows, MD5 {staged.md5}; these are {given.rows} rows, "
            f"MD5 {given.md5})"
        )
    return InvalidRequestError(
        f"submission id {submission_id!r} is already claimed for {what}: submit these rows "
        "under a new id; nothing staged was changed",
        field="id",
    )


def stage(
    staging: Staging,
    submission_id: str,
    provider: Provider,
    model: str,
    lines: Iterable[StagedLine],
) -> Manifest:
    """Stage the rows create-only and claim the id for them; stream, never hold all rows.

    Raises:
        InvalidRequestError: no rows, too many rows or bytes, a bad line, or the id is claimed
            for other rows. Nothing partial is left behind.
    """
    folder = staging.folder(submission_id)
    rows = iter(lines)
    first = next(rows, None)  # validates the first line before any cloud call
    if first is None:
        raise InvalidRequestError(
            f"no requests to submit under id {submission_id!r}: a job needs at least one",
            field="requests",
        )
    where = f"gs://{folder.bucket}/{folder.name(MANIFEST)}"
    raw = staging.read_json(folder.name(MANIFEST))
    staged = Manifest.from_json(raw, where) if raw is not None else None
    digest = hashlib.md5(usedforsecurity=False)
    count = size = 0
    input_upload = keys_upload = None
    if staged is None:
        input_upload = staging.upload(folder.name(INPUT), JSONL)
        keys_upload = staging.upload(folder.name(KEYS), JSONL)
    try:
        for line in _chain(first, rows):
            count += 1
            size += len(line.data)
            if count > MAX_ROWS:
                raise InvalidRequestError(
                    f"more than {MAX_ROWS:,} requests for one job, which is Vertex's limit: "
                    "split them across ids (runs shard automatically)",
                    field="requests",
                )
            if size > MAX_INPUT_BYTES:
                raise InvalidRequestError(
                    f"input passed {MAX_INPUT_BYTES:,} bytes at request {line.key!r}, over "
                    "Vertex's 1 GB limit for one job: split the requests across ids",
                    field="requests",
                )
            digest.update(line.data)
            if input_upload is not None and keys_upload is not None:
                input_upload.write(line.data)
                keys_upload.write(line.key_record())
    except BaseException:
        for upload in (input_upload, keys_upload):
            if upload is not None:
                upload.abort()
        raise
    given = Manifest(provider=provider, model=model, rows=count, bytes=size, md5=digest.hexdigest())
    if staged is not None:
        if staged != given:
            raise _claim_conflict(submission_id, staged, given)
        return staged
    assert input_upload is not None and keys_upload is not None
    if not input_upload.finish():
        # Staged by an earlier attempt or a concurrent submitter: same bytes or a conflict.
        existing = staging.md5(folder.name(INPUT))
        if existing != given.md5:
            keys_upload.abort()
            raw = staging.read_json(folder.name(MANIFEST))
            staged = Manifest.from_json(raw, where) if raw is not None else None
            raise _claim_conflict(
                submission_id,
                staged or Manifest(provider, model, -1, -1, existing or "unknown"),
                given,
            )
    # The same rows give the same key map, so a key map already there is this one.
    keys_upload.finish()
    if staging.create_json(folder.name(MANIFEST), given.to_json()):
        logger.info("staged %d requests under %s", count, folder.uri(""))
        return given
    raw = staging.read_json(folder.name(MANIFEST))
    staged = Manifest.from_json(raw, where)
    if staged != given:
        raise _claim_conflict(submission_id, staged, given)
    return staged


def _chain(first: StagedLine, rest: Iterator[StagedLine]) -> Iterator[StagedLine]:
    yield first
    yield from rest


def _earliest(jobs: list[BatchJob]) -> BatchJob:
    return min(jobs, key=lambda j: (j.create_time, j.name))


def _ours(listed: list[BatchJob], spec: JobSpec) -> list[BatchJob]:
    """The listed jobs created for this spec; raise on one that reads our input elsewhere."""
    ours = []
    for job in listed:
        if spec.matches(job):
            ours.append(job)
        elif list(job.input_config.gcs_source.uris) == [spec.input_uri]:
            raise InvalidRequestError(
                f"job {job.name} reads the input of id {spec.id!r} but writes to "
                f"{job.output_config.gcs_destination.output_uri_prefix!r}, not "
                f"{spec.output_prefix!r}: it was not created by this client configuration; "
                "delete it or use a new id",
                field="id",
            )
    return ours


def _follow_record(vertex: Vertex, record: Any, spec: JobSpec, where: str) -> BatchJob:
    name = record.get("name") if isinstance(record, dict) else None
    if not isinstance(name, str) or not name:
        raise InvalidRequestError(f"{where} is not a vertexbatch job record", field="staging")
    try:
        job = vertex.get(name)
    except api_exceptions.NotFound as exc:
        raise InvalidRequestError(
            f"{where} names job {name}, which does not exist", field="staging"
        ) from exc
    if not spec.matches(job):
        raise InvalidRequestError(
            f"{where} names job {name}, which was not created for id {spec.id!r}",
            field="staging",
        )
    return job


def _cancel_twins(
    vertex: Vertex, spec: JobSpec, chosen: BatchJob, policy: RetryPolicy, expected: int
) -> None:
    """Cancel the id's live jobs other than ``chosen``; list until ``expected`` jobs were seen.

    ``expected`` counts the jobs this caller may have created (a lost create response may surface
    late in list); the listing stops early once that many are seen, else after the policy's
    attempts, so an attempt that never reached Vertex costs a bounded wait.
    """
    seen = {chosen.name}
    for attempt in range(policy.attempts):
        for job in _ours(vertex.list_for_id(spec.id), spec):
            if job.name in seen:
                continue
            seen.add(job.name)
            if is_live(job):
                logger.info("cancelling duplicate job %s of id %s", job.name, spec.id)
                vertex.cancel(job.name)
        if len(seen) >= expected:
            return
        time.sleep(policy.backoff(attempt))
    logger.warning(
        "id %s: %d create attempt(s) never showed in list; if one created a job it will be "
        "cancelled by the next submit of the id",
        spec.id,
        expected - len(seen),
    )


def submit(vertex: Vertex, staging: Staging, spec: JobSpec, policy: RetryPolicy) -> Job:
    """Steps 2-4 of the protocol: adopt or create, record, cancel twins. Staging is done."""
    folder = staging.folder(spec.id)
    where = f"gs://{folder.bucket}/{folder.name(RECORD)}"
    record = staging.read_json(folder.name(RECORD))
    if record is not None:
        chosen = _follow_record(vertex, record, spec, where)
        logger.info("id %s is recorded as job %s", spec.id, chosen.name)
        _cancel_twins(vertex, spec, chosen, policy, expected=1)
        return spec.to_job(chosen)

    lost_creates = 0
    created: BatchJob | None = None

    def list_then_create() -> BatchJob:
        nonlocal lost_creates, created
        ours = _ours(vertex.list_for_id(spec.id), spec)
        if ours:
            job = _earliest(ours)
            logger.info("adopting job %s for id %s", job.name, spec.id)
            return job
        try:
            created = vertex.create(spec)
        except Exception as exc:
            if is_transient_call_error(exc) and not isinstance(exc, _REJECTED):
                # The job may exist all the same: the next attempt lists before creating.
                lost_creates += 1
            raise
        logger.info("created job %s for id %s", created.name, spec.id)
        return created

    chosen = policy.call(f"create job for {spec.id}", list_then_create)
    if staging.create_json(folder.name(RECORD), {"name": chosen.name, "id": spec.id}):
        logger.info("recorded job %s for id %s", chosen.name, spec.id)
        expected = lost_creates + (1 if created is not None else 0)
    else:
        mine = chosen
        chosen = _follow_record(vertex, staging.read_json(folder.name(RECORD)), spec, where)
        logger.info("id %s was recorded as job %s by another submitter", spec.id, chosen.name)
        if created is not None and created.name != chosen.name:
            logger.info("cancelling duplicate job %s of id %s", mine.name, spec.id)
            vertex.cancel(created.name)
        expected = 1
    _cancel_twins(vertex, spec, chosen, policy, expected=max(expected, 1))
    return spec.to_job(chosen)


@dataclass(frozen=True, slots=True)
class Staged:
    """An id that has staged rows, and its job as Vertex last said (``None``: not created)."""

    spec: JobSpec
    job: BatchJob | None


def look_up(vertex: Vertex, staging: Staging, submission_id: str) -> Staged | None:
    """What an id holds: ``None`` if nothing is staged; read-only."""
    folder = staging.folder(submission_id)
    raw = staging.read_json(folder.name(MANIFEST))
    if raw is None:
        return None
    spec = Manifest.from_json(raw, folder.uri(MANIFEST)).spec(submission_id, folder)
    record = staging.read_json(folder.name(RECORD))
    if record is not None:
        return Staged(spec, _follow_record(vertex, record, spec, folder.uri(RECORD)))
    ours = _ours(vertex.list_for_id(submission_id), spec)
    return Staged(spec, _earliest(ours) if ours else None)


def find(vertex: Vertex, staging: Staging, submission_id: str) -> Job | None:
    """The id's job: the recorded one, else the earliest listed; read-only."""
    staged = look_up(vertex, staging, submission_id)
    if staged is None or staged.job is None:
        return None
    return staged.spec.to_job(staged.job)


def _beside_input(job: Job, leaf: str) -> str:
    return job.input_uri.rsplit("/", 1)[0] + "/" + leaf


def read_key_map(staging: Staging, job: Job) -> KeyMap:
    """The job's staged key map."""
    return KeyMap.from_records(staging.read_lines(_beside_input(job, KEYS)))


def read_staged_lines(staging: Staging, job: Job, keys: set[str]) -> Iterator[StagedLine]:
    """The job's staged lines for ``keys``, in submission order, read back from GCS.

    The input and the key map were written from one stream, so their lines pair up in order.
    """
    records = staging.read_lines(_beside_input(job, KEYS))
    inputs = (line for line in staging.read_lines(job.input_uri) if line.strip())
    for record, data in zip(records, inputs, strict=False):
        key, digest, canonical = json.loads(record)
        if key in keys:
            yield StagedLine(key=key, digest=digest, canonical=canonical, data=data + b"\n")
