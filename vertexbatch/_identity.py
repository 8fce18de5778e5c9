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
import logging
import re
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, replace
from typing import Any, TypeVar

from google.api_core import exceptions as api_exceptions

from ._errors import InvalidRequestError, JobError
from ._lines import KeyMap, StagedLine, parse_key_record
from ._models import Job, Provider
from ._retry import RetryPolicy, is_transient_call_error
from ._rules import MAX_INPUT_BYTES, MAX_ROWS, is_job_name
from ._staging import JSONL, Folder, Staging
from ._vertex import BatchJob, JobSpec, Vertex, is_live

__all__ = [
    "Manifest",
    "find",
    "job_manifest",
    "look_up",
    "measure",
    "read_key_map",
    "read_manifest",
    "read_staged_lines",
    "stage",
    "stage_and_submit",
    "submit",
]

logger = logging.getLogger("vertexbatch")

# Create failures that say the job was not made (quota); others may hide a job made anyway.
_REJECTED = (api_exceptions.TooManyRequests, api_exceptions.ResourceExhausted)

INPUT = "input.jsonl"
KEYS = "keys.jsonl"
MANIFEST = "manifest.json"
RECORD = "job.json"
FORMAT = "vertexbatch/1"


# Who staged an id's rows. A run or a resubmission only ever adopts rows it staged itself, so
# an id it derives (``RUN.s0``, ``ID.r1``) that a plain submission already holds is refused,
# never taken over (and the other way round).
PLAIN = ""


def run_origin(run_id: str) -> str:
    return f"run:{run_id}"


def resubmit_origin(submission_id: str) -> str:
    return f"resubmit:{submission_id}"


def _describe_origin(origin: str) -> str:
    kind, _, of = origin.partition(":")
    if kind == "run":
        return f"run {of!r}"
    if kind == "resubmit":
        return f"a resubmission of {of!r}"
    return "a plain submission"


_MD5 = re.compile(r"[0-9a-f]{32}")


@dataclass(frozen=True, slots=True)
class Manifest:
    """What claims an id: who staged it, the rows' provider, model, count, size, MD5s.

    ``md5`` is the MD5 of ``input.jsonl`` and ``keys_md5`` that of ``keys.jsonl``: reading the key
    map or the input back checks both, so a damaged object is an error, not a lost key.
    ``rejected`` is set when Vertex refused to create a job from it (see ``mark_rejected``).
    """

    provider: Provider
    model: str
    rows: int
    bytes: int
    md5: str
    keys_md5: str = ""  # "" in manifests written before key maps were verified
    origin: str = PLAIN
    rejected: str = ""

    def to_json(self) -> dict[str, Any]:
        data = {"format": FORMAT, **asdict(self)}
        if not self.rejected:
            del data["rejected"]
        return data

    @classmethod
    def from_json(cls, data: Any, where: str) -> Manifest:
        def bad(why: str) -> InvalidRequestError:
            return InvalidRequestError(
                f"{where} is not a vertexbatch manifest ({why}): it was not written by "
                "vertexbatch or was edited; submit under a new id",
                field="staging",
            )

        if not isinstance(data, dict):
            raise bad(f"a JSON {type(data).__name__}, not an object")
        for name, kind in (("provider", str), ("model", str), ("rows", int), ("bytes", int)):
            if not isinstance(data.get(name), kind) or isinstance(data.get(name), bool):
                raise bad(f"{name!r} is missing or not a {kind.__name__}")
        for name in ("md5", "keys_md5", "origin", "rejected"):
            if not isinstance(data.get(name, ""), str):
                raise bad(f"{name!r} is not a string")
        if data["provider"] not in ("anthropic", "google"):
            raise bad("'provider' is neither 'anthropic' nor 'google'")
        if data["rows"] < 1 or data["bytes"] < 1:
            raise bad("'rows' and 'bytes' must be positive")
        for name in ("md5", "keys_md5"):
            value = data.get(name, "")
            if (value or name == "md5") and not _MD5.fullmatch(value):
                raise bad(f"{name!r} is not a hex MD5")
        return cls(
            provider=data["provider"],
            model=data["model"],
            rows=data["rows"],
            bytes=data["bytes"],
            md5=data["md5"],
            keys_md5=data.get("keys_md5", ""),
            origin=data.get("origin", PLAIN),
            rejected=data.get("rejected", ""),
        )

    def claims_same(self, given: Manifest) -> bool:
        """Whether ``given`` (rows about to be staged) are the rows this manifest claims."""
        return (self.provider, self.model, self.rows, self.bytes, self.md5, self.origin) == (
            given.provider,
            given.model,
            given.rows,
            given.bytes,
            given.md5,
            given.origin,
        ) and (not self.keys_md5 or self.keys_md5 == given.keys_md5)

    def spec(self, submission_id: str, folder: Folder) -> JobSpec:
        return JobSpec(
            id=submission_id,
            provider=self.provider,
            model=self.model,
            input_uri=folder.input_uri,
            output_prefix=folder.output_prefix,
            keys=self.rows,
        )


def _claim_conflict(
    submission_id: str, staged: Manifest | None, given: Manifest, staged_md5: str = ""
) -> InvalidRequestError:
    if staged is None:
        # A submitter stopped after the input, before the manifest: only the input is known.
        what = f"other rows (its staged input has MD5 {staged_md5 or 'unknown'}; these rows "
        what += f"have MD5 {given.md5})"
    elif staged.origin != given.origin:
        what = (
            f"{_describe_origin(staged.origin)}, not {_describe_origin(given.origin)}: "
            "an id belongs to whoever staged it first"
        )
    elif (staged.provider, staged.model) != (given.provider, given.model):
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


class _Tally:
    """Counts, sizes and digests rows as they stream past, enforcing Vertex's limits."""

    def __init__(self) -> None:
        self.rows = 0
        self.bytes = 0
        self._md5 = hashlib.md5(usedforsecurity=False)
        self._keys_md5 = hashlib.md5(usedforsecurity=False)

    def add(self, line: StagedLine, key_record: bytes) -> None:
        self.rows += 1
        self.bytes += len(line.data)
        if self.rows > MAX_ROWS:
            raise InvalidRequestError(
                f"more than {MAX_ROWS:,} requests for one job, which is Vertex's limit: "
                "split them across ids (runs shard automatically)",
                field="requests",
            )
        if self.bytes > MAX_INPUT_BYTES:
            raise InvalidRequestError(
                f"input passed {MAX_INPUT_BYTES:,} bytes at request {line.key!r}, over "
                "Vertex's 1 GB limit for one job: split the requests across ids",
                field="requests",
            )
        self._md5.update(line.data)
        self._keys_md5.update(key_record)

    def manifest(self, provider: Provider, model: str, origin: str) -> Manifest:
        return Manifest(
            provider=provider,
            model=model,
            rows=self.rows,
            bytes=self.bytes,
            md5=self._md5.hexdigest(),
            keys_md5=self._keys_md5.hexdigest(),
            origin=origin,
        )


def _no_rows(submission_id: str) -> InvalidRequestError:
    return InvalidRequestError(
        f"no requests to submit under id {submission_id!r}: a job needs at least one",
        field="requests",
    )


def measure(
    submission_id: str,
    provider: Provider,
    model: str,
    lines: Iterable[StagedLine],
    origin: str = PLAIN,
) -> Manifest:
    """The manifest ``stage`` would write for these rows, with no I/O (the rows are consumed)."""
    tally = _Tally()
    for line in lines:
        tally.add(line, line.key_record())
    if not tally.rows:
        raise _no_rows(submission_id)
    return tally.manifest(provider, model, origin)


def read_manifest(staging: Staging, submission_id: str) -> Manifest | None:
    """The id's manifest, ``None`` if nothing is staged under it."""
    folder = staging.folder(submission_id)
    raw = staging.read_json(folder.name(MANIFEST))
    return None if raw is None else Manifest.from_json(raw, folder.uri(MANIFEST))


def stage(
    staging: Staging,
    submission_id: str,
    provider: Provider,
    model: str,
    lines: Iterable[StagedLine],
    origin: str = PLAIN,
) -> Manifest:
    """Stage the rows create-only and claim the id for them; stream, never hold all rows.

    Raises:
        InvalidRequestError: no rows, too many rows or bytes, a bad line, or the id is claimed
            for other rows (or by another origin). Nothing partial is left behind.
    """
    folder = staging.folder(submission_id)
    rows = iter(lines)
    first = next(rows, None)  # validates the first line before any cloud call
    if first is None:
        raise _no_rows(submission_id)
    staged = read_manifest(staging, submission_id)
    tally = _Tally()
    input_upload = keys_upload = None
    if staged is None:
        input_upload = staging.upload(folder.name(INPUT), JSONL)
        keys_upload = staging.upload(folder.name(KEYS), JSONL)
    try:
        for line in _chain(first, rows):
            record = line.key_record()
            tally.add(line, record)
            if input_upload is not None and keys_upload is not None:
                input_upload.write(line.data)
                keys_upload.write(record)
    except BaseException:
        for upload in (input_upload, keys_upload):
            if upload is not None:
                upload.abort()
        raise
    given = tally.manifest(provider, model, origin)
    if staged is not None:
        return _carry_on(staging, submission_id, staged, given)
    assert input_upload is not None and keys_upload is not None
    if not input_upload.finish():
        # Staged by an earlier attempt or a concurrent submitter: same bytes or a conflict.
        existing = staging.md5(folder.name(INPUT))
        if existing != given.md5:
            keys_upload.abort()
            raise _claim_conflict(
                submission_id, read_manifest(staging, submission_id), given, existing or ""
            )
    # The same rows give the same key map, so a key map already there is this one (a damaged
    # one is caught when it is read: the manifest holds its MD5).
    keys_upload.finish()
    if staging.create_json(folder.name(MANIFEST), given.to_json()):
        logger.info("staged %d requests under %s", tally.rows, folder.uri(""))
        return given
    staged = read_manifest(staging, submission_id)
    assert staged is not None  # create-only failed: it exists
    return _carry_on(staging, submission_id, staged, given)


def _carry_on(staging: Staging, submission_id: str, staged: Manifest, given: Manifest) -> Manifest:
    """The manifest to go on with when the id already has one: the same rows carry on; the
    same rows with another model replace a manifest Vertex refused; anything else conflicts."""
    if staged.claims_same(given):
        return staged
    if staged.rejected and _only_model_differs(staged, given):
        if staging.replace_json(
            staging.folder(submission_id).name(MANIFEST), given.to_json(), staged.to_json()
        ):
            logger.info(
                "id %s: Vertex refused model %s; its rows are now claimed for model %s",
                submission_id,
                staged.model,
                given.model,
            )
            return given
        again = read_manifest(staging, submission_id)
        if again is not None and again.claims_same(given):
            return again
        raise _claim_conflict(submission_id, again, given)
    raise _claim_conflict(submission_id, staged, given)


def _only_model_differs(staged: Manifest, given: Manifest) -> bool:
    return staged.claims_same(replace(given, model=staged.model))


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
    if not isinstance(name, str) or not is_job_name(name):
        raise InvalidRequestError(
            f"{where} is not a vertexbatch job record (no job resource name in it): it was "
            "damaged or edited; delete it to let the next submit record the id's job again",
            field="staging",
        )
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


def _cancel(vertex: Vertex, job: BatchJob, spec: JobSpec) -> bool:
    """Cancel a twin; a cancel that keeps failing is logged, not raised: the caller's job is
    recorded already, and the next submit of the id cancels the twin."""
    logger.info("cancelling duplicate job %s of id %s", job.name, spec.id)
    try:
        vertex.cancel(job.name)
    except Exception as exc:
        logger.warning(
            "id %s: could not cancel duplicate job %s (%s); the next submit of the id cancels it",
            spec.id,
            job.name,
            type(exc).__name__,
        )
        return False
    return True


def _cancel_twins(
    vertex: Vertex,
    spec: JobSpec,
    chosen: BatchJob,
    policy: RetryPolicy,
    expected: int,
    unsure: int = 0,
) -> None:
    """Cancel the id's live jobs other than ``chosen``; list until ``expected`` jobs were seen.

    ``expected`` counts the jobs this caller may have created (a lost create response may surface
    late in list); the listing stops early once that many are seen, else after the policy's
    attempts, so an attempt that never reached Vertex costs a bounded wait. ``unsure`` counts
    creates refused with 429 (quota): almost always no job, so they are not waited for, but if
    they do not show in the listing a warning says a job may still surface.
    """
    seen = {chosen.name}
    attempt = 0
    while True:
        for job in _ours(vertex.list_for_id(spec.id), spec):
            if job.name in seen:
                continue
            seen.add(job.name)
            if is_live(job):
                _cancel(vertex, job, spec)
        attempt += 1
        if len(seen) >= expected or attempt >= policy.attempts:
            break
        time.sleep(policy.backoff(attempt - 1))
    unseen = expected + unsure - len(seen)
    if unseen > 0:
        logger.warning(
            "id %s: %d create attempt(s) failed without showing in list; if one created a job "
            "it will be cancelled by the next submit of the id",
            spec.id,
            unseen,
        )


def submit(
    staging: Staging, vertex: Vertex, policy: RetryPolicy, submission_id: str, manifest: Manifest
) -> Job:
    """Steps 2-4 of the protocol: adopt or create, record, cancel twins. Staging is done.

    Raises:
        InvalidRequestError: Vertex refused to create the job (400 or 404: an unknown model, a
            model not offered in the location, ...). No job exists, and the id stays usable: the
            same rows submitted again with another model replace the refused manifest.
    """
    folder = staging.folder(submission_id)
    spec = manifest.spec(submission_id, folder)
    where = f"gs://{folder.bucket}/{folder.name(RECORD)}"
    record = staging.read_json(folder.name(RECORD))
    if record is not None:
        chosen = _follow_record(vertex, record, spec, where)
        logger.info("id %s is recorded as job %s", spec.id, chosen.name)
        _cancel_twins(vertex, spec, chosen, policy, expected=1)
        return spec.to_job(chosen)

    lost_creates = refused_creates = 0
    created: BatchJob | None = None
    refusal: api_exceptions.GoogleAPICallError | None = None

    def list_then_create() -> BatchJob:
        nonlocal lost_creates, refused_creates, created, refusal
        ours = _ours(vertex.list_for_id(spec.id), spec)
        if ours:
            job = _earliest(ours)
            logger.info("adopting job %s for id %s", job.name, spec.id)
            return job
        try:
            created = vertex.create(spec)
        except (api_exceptions.BadRequest, api_exceptions.NotFound) as exc:
            refusal = exc
            raise
        except Exception as exc:
            if isinstance(exc, _REJECTED):
                refused_creates += 1
            elif is_transient_call_error(exc):
                # The job may exist all the same: the next attempt lists before creating.
                lost_creates += 1
            raise
        logger.info("created job %s for id %s", created.name, spec.id)
        return created

    try:
        chosen = policy.call(f"create job for {spec.id}", list_then_create)
    except (api_exceptions.BadRequest, api_exceptions.NotFound) as exc:
        if exc is not refusal:
            raise
        raise _refused(staging, vertex, submission_id, manifest, spec, exc) from exc
    if staging.create_json(folder.name(RECORD), {"name": chosen.name, "id": spec.id}):
        logger.info("recorded job %s for id %s", chosen.name, spec.id)
        expected = lost_creates + (1 if created is not None else 0)
    else:
        chosen = _follow_record(vertex, staging.read_json(folder.name(RECORD)), spec, where)
        logger.info("id %s was recorded as job %s by another submitter", spec.id, chosen.name)
        if created is not None and created.name != chosen.name:
            _cancel(vertex, created, spec)
        expected = 1
    _cancel_twins(vertex, spec, chosen, policy, expected=max(expected, 1), unsure=refused_creates)
    return spec.to_job(chosen)


def _refused(
    staging: Staging,
    vertex: Vertex,
    submission_id: str,
    manifest: Manifest,
    spec: JobSpec,
    exc: api_exceptions.GoogleAPICallError,
) -> InvalidRequestError:
    """Vertex refused the create: mark the manifest so the id can take a corrected model."""
    if not _ours(vertex.list_for_id(spec.id), spec):  # no job after all: the id is free
        name = staging.folder(submission_id).name(MANIFEST)
        marked = replace(manifest, rejected=f"{exc.code} {type(exc).__name__}")
        staging.replace_json(name, marked.to_json(), manifest.to_json())
    return InvalidRequestError(
        f"Vertex refused to create the job of id {submission_id!r} with {manifest.provider} "
        f"model {manifest.model!r}: {exc.code} {type(exc).__name__} (is the model offered in "
        "this location, and named by its Vertex id?); no job was made, and the same requests "
        "may be submitted under this id again with another model",
        field="model",
    )


def stage_and_submit(
    staging: Staging,
    vertex: Vertex,
    policy: RetryPolicy,
    submission_id: str,
    provider: Provider,
    model: str,
    lines: Iterable[StagedLine],
    origin: str = PLAIN,
) -> Job:
    """The whole identity protocol for one id: stage create-only, then adopt or create."""
    manifest = stage(staging, submission_id, provider, model, lines, origin)
    return submit(staging, vertex, policy, submission_id, manifest)


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
    record = staging.read_json(folder.name(RECORD))
    if record is not None:
        return Staged(manifest, spec, _follow_record(vertex, record, spec, folder.uri(RECORD)))
    ours = _ours(vertex.list_for_id(submission_id), spec)
    return Staged(manifest, spec, _earliest(ours) if ours else None)


def find(vertex: Vertex, staging: Staging, submission_id: str) -> Job | None:
    """The id's job: the recorded one, else the earliest listed; read-only."""
    staged = look_up(vertex, staging, submission_id)
    if staged is None or staged.job is None:
        return None
    return staged.spec.to_job(staged.job)


def _beside_input(job: Job, leaf: str) -> str:
    return job.input_uri.rsplit("/", 1)[0] + "/" + leaf


def job_manifest(staging: Staging, job: Job) -> Manifest:
    """The manifest staged beside a job's input.

    Raises:
        JobError: it is gone.
    """
    uri = _beside_input(job, MANIFEST)
    raw = _reading(job, uri, lambda: staging.read_json(uri))
    if raw is None:
        raise JobError(
            f"{uri} is gone: job {job.name} cannot be read without its staged records",
            job=job.name,
        )
    return Manifest.from_json(raw, uri)


T = TypeVar("T")


def _reading(job: Job, uri: str, read: Callable[[], T]) -> T:
    try:
        return read()
    except api_exceptions.NotFound as exc:
        raise JobError(
            f"{uri} is gone: job {job.name} cannot be read without its staged records",
            job=job.name,
        ) from exc
    except api_exceptions.GoogleAPICallError as exc:
        raise JobError(f"cannot read {uri}: {type(exc).__name__}", job=job.name) from exc


class _Verified:
    """The lines of a staged object, checked against the count and MD5 its manifest recorded."""

    def __init__(self, staging: Staging, job: Job, uri: str, rows: int, md5: str) -> None:
        self._staging = staging
        self._job = job
        self.uri = uri
        self._rows = rows
        self._md5 = md5

    def __iter__(self) -> Iterator[bytes]:
        digest = hashlib.md5(usedforsecurity=False)
        count = 0
        lines = _reading(self._job, self.uri, lambda: iter(self._staging.read_lines(self.uri)))
        while True:
            line = _reading(self._job, self.uri, lambda: next(lines, None))
            if line is None:
                break
            digest.update(line)
            digest.update(b"\n")
            count += 1
            yield line
        if count != self._rows or (self._md5 and digest.hexdigest() != self._md5):
            raise self.damaged(f"{count} lines, {self._rows} staged")

    def damaged(self, why: str) -> JobError:
        return JobError(
            f"{self.uri} is damaged ({why}; it no longer matches what its manifest recorded): "
            f"the keys of job {self._job.name} cannot be told apart safely",
            job=self._job.name,
        )


def read_key_map(staging: Staging, job: Job) -> KeyMap:
    """The job's staged key map, verified against its manifest.

    Raises:
        JobError: the key map is gone, damaged or does not match the manifest.
    """
    manifest = job_manifest(staging, job)
    records = _Verified(staging, job, _beside_input(job, KEYS), manifest.rows, manifest.keys_md5)
    try:
        return KeyMap.from_records(records)
    except ValueError as exc:
        raise records.damaged(str(exc)) from None


def read_staged_lines(staging: Staging, job: Job, keys: set[str]) -> Iterator[StagedLine]:
    """The job's staged lines for ``keys``, in submission order, read back from GCS.

    The input and the key map were written from one stream, so their lines pair up in order;
    both are checked against the manifest as they are read (an error at the end of the stream
    aborts whatever is being staged from it).
    """
    manifest = job_manifest(staging, job)
    records = _Verified(staging, job, _beside_input(job, KEYS), manifest.rows, manifest.keys_md5)
    inputs = _Verified(staging, job, job.input_uri, manifest.rows, manifest.md5)
    for number, (record, data) in enumerate(zip(records, inputs, strict=True), start=1):
        try:
            key, digest, canonical = parse_key_record(record)
        except ValueError as exc:
            raise records.damaged(f"line {number}: {exc}") from None
        if key in keys:
            yield StagedLine(key=key, digest=digest, canonical=canonical, data=data + b"\n")
