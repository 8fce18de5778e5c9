"""Submission identity: one id, one set of rows, one live job — whatever crashes and races.

The protocol (DESIGN.md, "Submission identity"):

1. ``_staged.write``: the input and key map (in parts), then ``manifest.json``, create-only; the
   manifest claims the id for one set of rows (the same rows carry on, others are refused).
2. Before each create attempt, list the id's jobs; adopt one that reads the id's input and writes
   its output prefix: one an earlier attempt of the same call made if it is live or succeeded,
   else ``choose``'s (live or succeeded first, then the earliest). One that reads the input but
   writes elsewhere is an error.
3. After create, record the job's name in ``job.json``, create-only. Every caller returns the
   recorded job and cancels the id's other jobs; the recording caller lists again after recording.
   Each create attempt carries a fresh nonce label, so a caller that ends up with another job
   keeps listing (bounded) until the job of each of its lost creates shows, and cancels it.
4. With no record (a submitter stopped between create and record, or a damaged record deleted),
   the next submit records the job ``choose`` picks; ``find`` returns that same job meanwhile.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from google.api_core import exceptions as api_exceptions

from .._bigquery.dest import parse_dest
from .._cache.submission import record_cached
from .._errors import InvalidRequestError
from .._gcs.staging import Staging
from .._observe.traces import step, stepped
from .._requests.lines import StagedLine
from .._retry import RetryPolicy, is_transient_call_error
from .._staged.amend import with_schema
from .._staged.manifest import MANIFEST, PLAIN, RECORD, Manifest
from .._staged.read import job_manifest, read_key_map, read_staged_lines
from .._staged.write import stage
from .._values import Job, Provider
from .._vertex.controls import NO_CONTROLS, NONCE_LABEL, Controls
from .._vertex.jobs import JobSpec, Vertex, is_live, succeeded
from .find import choose, follow_record, matching

if TYPE_CHECKING:
    from google.cloud.aiplatform_v1 import BatchPredictionJob as BatchJob

__all__ = ["resubmit", "sink_of_resubmission", "stage_and_submit", "submit"]

logger = logging.getLogger("vertexbatch")

# Create failures that say the job was not made (quota); others may hide a job made anyway.
_REJECTED = (api_exceptions.TooManyRequests, api_exceptions.ResourceExhausted)
# Creates Vertex refuses: the job is not made, and the id stays usable (``_refused``). A 403 is
# one only for a job with a CMEK key or a service account (the service agent may not use the
# key, the caller may not act as the account); without them it is the caller's own permission.
_REFUSED = (api_exceptions.BadRequest, api_exceptions.NotFound)
_REFUSED_CONTROLLED = (*_REFUSED, api_exceptions.Forbidden)


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


def _nonce(job: BatchJob) -> str:
    """The nonce of the create attempt that made the job ("" for a job made without one)."""
    return str(job.labels.get(NONCE_LABEL, ""))


@stepped("cancel_twins")
def _cancel_twins(
    vertex: Vertex,
    spec: JobSpec,
    chosen: BatchJob,
    policy: RetryPolicy,
    lost: frozenset[str] = frozenset(),
    unsure: frozenset[str] = frozenset(),
) -> None:
    """Cancel the id's live jobs other than ``chosen``; list until each ``lost`` nonce was seen.

    ``lost`` are the nonces of this caller's creates whose answer was lost (their job may surface
    late in list); the listing stops once a job carrying each was seen, else after the policy's
    attempts, so an attempt that never reached Vertex costs a bounded wait. ``unsure`` are those
    of creates refused with 429 (quota): almost always no job, so they are not waited for, but if
    they do not show in the listing a warning says a job may still surface.
    """
    seen = {chosen.name}
    unseen = set(lost | unsure) - {_nonce(chosen)}
    attempt = 0
    while True:
        for job in matching(vertex.list_for_id(spec.id), spec):
            unseen.discard(_nonce(job))
            if job.name in seen:
                continue
            seen.add(job.name)
            if is_live(job):
                _cancel(vertex, job, spec)
        attempt += 1
        if not unseen & lost or attempt >= policy.attempts:
            break
        time.sleep(policy.backoff(attempt - 1))
    if unseen:
        logger.warning(
            "id %s: %d create attempt(s) failed without showing in list; if one created a job "
            "it will be cancelled by the next submit of the id",
            spec.id,
            len(unseen),
        )


def submit(
    staging: Staging,
    vertex: Vertex,
    policy: RetryPolicy,
    submission_id: str,
    manifest: Manifest,
    labels: Mapping[str, str] | None = None,
) -> Job:
    """Steps 2-4 of the protocol: adopt or create, record, cancel twins. Staging is done.

    ``labels`` go on the job if this call creates it (a run's label on its attempts' jobs).

    Raises:
        InvalidRequestError: Vertex refused to create the job (400 or 404: an unknown model, a
            model not offered in the location, ...). No job exists, and the id stays usable: the
            same rows submitted again with another model replace the refused manifest.
    """
    staging = staging.keyed(manifest.controls.kms_key)  # the record too is written with the key
    folder = staging.folder(submission_id)
    spec = manifest.spec(submission_id, folder)
    if not manifest.rows:  # every key answered from the answer cache: no job to create
        return record_cached(staging, spec, manifest)
    where = f"gs://{folder.bucket}/{folder.name(RECORD)}"
    record = staging.read_json(folder.name(RECORD))
    if record is not None:
        chosen = follow_record(vertex, record, spec, where)
        logger.info("id %s is recorded as job %s", spec.id, chosen.name)
        _cancel_twins(vertex, spec, chosen, policy)
        return spec.to_job(chosen)

    refusals = (
        _REFUSED_CONTROLLED if spec.controls.kms_key or spec.controls.service_account else _REFUSED
    )
    lost: set[str] = set()  # the nonces of creates whose answer was lost
    refused: set[str] = set()  # and of those refused with 429
    created: BatchJob | None = None  # the job this caller made and knows of
    refusal: api_exceptions.GoogleAPICallError | None = None

    def list_then_create() -> BatchJob:
        nonlocal created, refusal
        with step("list"):  # once: this call's own policy makes the next attempt
            ours = matching(vertex.list_for_id(spec.id, once=True), spec)
        if ours:
            # A job an earlier attempt of this call made is this call's own, as if its create
            # had answered; it goes first unless it ended badly (``choose``).
            mine = [j for j in ours if _nonce(j) in lost | refused]
            job = choose([j for j in mine if is_live(j) or succeeded(j)] or ours)
            if _nonce(job) in lost | refused:
                created = job
            logger.info("adopting job %s for id %s", job.name, spec.id)
            return job
        nonce = secrets.token_hex(8)  # a label value: lowercase hex, 16 of at most 63 chars
        try:
            with step("create"):
                created = vertex.create(spec, labels, nonce)
        except refusals as exc:
            refusal = exc
            raise
        except Exception as exc:
            if isinstance(exc, _REJECTED):
                refused.add(nonce)
            elif is_transient_call_error(exc):
                # The job may exist all the same: the next attempt lists before creating.
                lost.add(nonce)
            raise
        logger.info("created job %s for id %s", created.name, spec.id)
        return created

    try:
        chosen = policy.call(f"create job for {spec.id}", list_then_create)
    except refusals as exc:
        if exc is not refusal:
            raise
        raise _refused(staging, vertex, submission_id, manifest, spec, exc) from exc
    with step("record"):
        recorded = staging.create_json(folder.name(RECORD), {"name": chosen.name, "id": spec.id})
    if recorded:
        logger.info("recorded job %s for id %s", chosen.name, spec.id)
    else:
        record = staging.read_json(folder.name(RECORD))
        try:
            chosen = follow_record(vertex, record, spec, where)
        except BaseException:
            # The record is unusable: a job this caller made, and the record does not name,
            # would run on with nothing naming it.
            named = record.get("name") if isinstance(record, dict) else None
            if created is not None and named != created.name:
                _cancel(vertex, created, spec)
            raise
        logger.info("id %s was recorded as job %s by another submitter", spec.id, chosen.name)
        if created is not None and created.name != chosen.name:
            _cancel(vertex, created, spec)  # the job this caller made and knows of
    # Each job whose create answer was lost is cancelled once listed (it is known by its nonce),
    # unless it is the one returned.
    known = {_nonce(created)} if created is not None else set()
    _cancel_twins(vertex, spec, chosen, policy, frozenset(lost - known), frozenset(refused - known))
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
    if not matching(vertex.list_for_id(spec.id), spec):  # no job after all: the id is free
        name = staging.folder(submission_id).name(MANIFEST)
        marked = replace(manifest, rejected=f"{exc.code} {type(exc).__name__}")
        staging.replace_json(name, marked.to_json(), manifest.to_json())
    controls = manifest.controls
    if controls.kms_key or controls.service_account:
        said = " and ".join(
            what
            for what, on in (
                (f"kms_key {controls.kms_key!r}", controls.kms_key),
                (f"service_account {controls.service_account!r}", controls.service_account),
            )
            if on
        )
        return InvalidRequestError(
            f"Vertex refused to create the job of id {submission_id!r} with {manifest.provider} "
            f"model {manifest.model!r} and {said} in location {vertex.location!r}: {exc.code} "
            f"{type(exc).__name__} (may the Vertex AI service agent use the key, and may you act "
            "as the account? `vertexbatch doctor --kms-key ... --service-account ...` checks); no "
            "job was made, and the same requests may be submitted under this id again with "
            "another model, key or account",
            field=_named_control(controls, str(exc.message)),
        )
    if manifest.dest:
        return InvalidRequestError(
            f"Vertex refused to create the job of id {submission_id!r} with {manifest.provider} "
            f"model {manifest.model!r} and dest {manifest.dest!r} in location "
            f"{vertex.location!r}: {exc.code} {type(exc).__name__} (is the model offered here, "
            "and is the dataset in this location?); no job was made, and the same requests may "
            "be submitted under this id again with another model or dest",
            field="dest" if "dataset" in str(exc.message).lower() else "model",
        )
    return InvalidRequestError(
        f"Vertex refused to create the job of id {submission_id!r} with {manifest.provider} "
        f"model {manifest.model!r} in location {vertex.location!r}: {exc.code} "
        f"{type(exc).__name__} (is the model offered in this location, and named by its Vertex "
        "id?); no job was made, and the same requests may be submitted under this id again with "
        "another model",
        field="model",
    )


def _named_control(controls: Controls, message: str) -> str:
    """The control a refusal is about: the one Vertex's message names, else the key's."""
    if controls.service_account and (controls.service_account in message or not controls.kms_key):
        return "service_account"
    return "kms_key"


def stage_and_submit(
    staging: Staging,
    vertex: Vertex,
    policy: RetryPolicy,
    submission_id: str,
    provider: Provider,
    model: str,
    lines: Iterable[StagedLine],
    origin: str = PLAIN,
    amend: Callable[[Manifest], Manifest] | None = None,
    labels: Mapping[str, str] | None = None,
    controls: Controls = NO_CONTROLS,
    dest: str = "",
) -> Job:
    """The whole identity protocol for one id: stage create-only, then adopt or create.

    ``controls`` (checked) go in the manifest and on the job; with a ``kms_key``, ``staging``
    is keyed with it (``Staging.keyed``) by the caller. ``dest`` (checked): the BigQuery sink.
    """
    manifest = stage(staging, submission_id, provider, model, lines, origin, amend, controls, dest)
    return submit(staging, vertex, policy, submission_id, manifest, labels)


def resubmit(
    staging: Staging,
    vertex: Vertex,
    policy: RetryPolicy,
    job: Job,
    keys: set[str],
    submission_id: str,
    origin: str,
    labels: Mapping[str, str] | None = None,
) -> Job:
    """Submit ``keys`` of ``job`` again under ``submission_id``, read back from its staged input.

    A resubmission of a ``cache=True`` job is made with ``cache`` too: its ok answers fill the
    answer cache when its results are read, as the first job's do. It keeps the job's controls
    (labels, CMEK key, service account), read from its manifest, and its sink: a BigQuery
    dataset as it was, a table's dataset (``sink_of_resubmission``).

    Raises:
        InvalidRequestError: a key is not in the job or was answered from the answer cache (it
            has an ok answer and no staged line), or the id is held by another origin.
        JobError: the job's staged input or key map is gone or damaged.
    """
    key_map = read_key_map(staging, job)
    unknown = keys.difference(key_map.keys)
    if unknown:
        raise InvalidRequestError(
            f"keys {sorted(unknown)[:5]} are not in job {job.name}", field="keys"
        )
    cached = keys.intersection(key_map.cached_keys()) if key_map.cached else set()
    if cached:
        raise InvalidRequestError(
            f"keys {sorted(cached)[:5]} of job {job.name} were answered from the answer cache: "
            "each has an ok answer and no staged request, so there is nothing to resubmit for "
            "them; leave them out of keys",
            field="keys",
        )
    staged = job_manifest(staging, job)
    controls = staged.controls
    staging = staging.keyed(controls.kms_key)
    lines = read_staged_lines(staging, job, keys)
    amend = with_schema(_with_cache if key_map.fills_cache else None, key_map.schema)
    return stage_and_submit(
        staging,
        vertex,
        policy,
        submission_id,
        job.provider,
        job.model,
        lines,
        origin,
        amend,
        labels,
        controls,
        sink_of_resubmission(staged.dest),
    )


def sink_of_resubmission(dest: str) -> str:
    """The sink a resubmission (or a run's next attempt) writes: a dataset as given; for a table,
    its dataset, where Vertex names a table per job: appended to the first job's table, the
    new job's rows for the same keys would change what reading the first job gives."""
    return parse_dest(dest).dataset_uri if dest else ""


def _with_cache(manifest: Manifest) -> Manifest:
    return replace(manifest, cache=True)
