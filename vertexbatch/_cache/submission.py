"""A submission made with ``cache=True``: answered in part (or whole) from the answer cache.

Submitting: every request's exact digest (``_requests.dedupe.exact_digest``; with the generation of
each ``gs://`` object it names, ``files``) is looked up in the cache
(``_cache``) before anything is staged. A key the cache answers gets a key record with
``cache_digest(key)`` and no input line, and its answer is staged in the submission's folder,
create-only, as ``cached-<MD5>.jsonl`` (one ``{"d": cache digest, "x": exact digest, "r":
response}`` line per key). Then ``cache.claim.json`` (create-only, before any row is staged)
claims that set for the id: a retry after a crash, a second submitter of the id, or a run
re-staging a shard reads the claim instead of asking the cache again, so it stages the same rows
whatever the cache holds by then. The manifest records ``cache``, ``cached`` and that MD5 with the
rows. When every key is cached, no Vertex job is created: the record says the id was answered
from the cache, and the ``Job`` is named ``cached:ID``.

Reading: ``read_cached`` yields the staged answers (``Result.cached``), verified against the
manifest; ``CacheFill`` stores a ``cache=True`` job's ok answers in the cache as a caller's
results pass reads them (``Client.results``, ``Run.results``, ``Run.key_results``; ``status``
and ``advance`` never fill), best-effort and in bounded memory.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import timedelta
from typing import Any

from google.api_core.exceptions import NotFound

from .._errors import InvalidRequestError, JobError, job_errors
from .._gcs.staging import JSONL, Staging
from .._json import load_json
from .._requests.dedupe import exact_digests
from .._requests.digests import cache_digest
from .._requests.keymap import KeyMap
from .._requests.lines import StagedLine
from .._rows.classify import classify_row
from .._schemas.parsed import parsed_result, typed_result
from .._staged.manifest import RECORD, Manifest, check_limits, no_rows, read_manifest
from .._staged.read import job_manifest
from .._values import Job, Provider, Result, Status
from .._vertex.jobs import JobSpec
from .files import file_versions, stored_versions
from .store import AnswerCache

__all__ = [
    "CACHED_PREFIX",
    "answer_from_cache",
    "cached_job",
    "cached_status",
    "is_cached_job",
    "read_cached",
]

logger = logging.getLogger("vertexbatch")

# The name of the job of an id answered wholly from the cache: no Vertex job exists.
CACHED_PREFIX = "cached:"
# Which keys an id took from the cache, claimed before any row is staged (``answer_from_cache``).
CLAIM = "cache.claim.json"


def cached_name(manifest_md5: str) -> str:
    return f"cached-{manifest_md5}.jsonl"


def is_cached_job(job: object) -> bool:
    """Whether ``job`` is a submission answered wholly from the cache (no Vertex job)."""
    return isinstance(job, Job) and job.name == CACHED_PREFIX + job.id


def cached_job(spec: JobSpec) -> Job:
    """The ``Job`` of an id answered wholly from the cache."""
    return Job(
        id=spec.id,
        name=CACHED_PREFIX + spec.id,
        provider=spec.provider,
        model=spec.model,
        input_uri=spec.input_uri,
        output_prefix=spec.output_prefix,
        keys=spec.keys,
        dest=spec.dest,
    )


def cached_status(job: Job) -> Status:
    """An id answered wholly from the cache has succeeded: every key has its answer."""
    return Status(
        state="JOB_STATE_SUCCEEDED", terminal=True, succeeded=job.keys, failed=0, incomplete=0
    )


def record_cached(staging: Staging, spec: JobSpec, manifest: Manifest) -> Job:
    """Record that the id was answered from the cache (create-only) and return its job."""
    folder = staging.folder(spec.id)
    staging.create_json(
        folder.name(RECORD),
        {"id": spec.id, "answered_from_cache": True, "keys": manifest.key_count},
    )
    logger.info("id %s: every request answered from the answer cache; no job created", spec.id)
    return cached_job(spec)


def answer_from_cache(
    staging: Staging,
    submission_id: str,
    provider: Provider,
    model: str,
    lines: Iterator[StagedLine],
    ttl: timedelta | None,
) -> tuple[list[StagedLine], Callable[[Manifest], Manifest]]:
    """The lines to stage for a ``cache=True`` submission, and how to amend its manifest.

    The lines are held (every digest is looked up before anything is staged). Which keys the
    cache answers is decided once per id: the first submitter stages their answers, create-only
    under their MD5, then claims them in ``cache.claim.json`` (create-only) before staging any
    row. Every later attempt — a retry after a crash before the manifest, a second process, a
    run re-staging a half-staged shard — reads that claim and takes the same keys, whatever the
    cache holds by then, so it stages the same rows.

    Raises:
        InvalidRequestError: no lines; the rows left to stage pass Vertex's limits (before
            anything is written, so a corrected retry finds no claim); the id's claim names keys
            or requests these lines do not have (the id is claimed for other rows), or its
            staged answers are damaged.
    """
    given = list(lines)
    if not given:
        # Before any cloud call: a claim of nothing would turn the cache off for the id.
        raise no_rows(submission_id)
    folder = staging.folder(submission_id)
    claim = staging.read_json(folder.name(CLAIM))
    _check_claim_model(submission_id, claim, provider, model)
    if claim is None and read_manifest(staging, submission_id) is not None:
        # Claimed for rows staged without the cache: nothing is looked up or written, and
        # staging refuses these rows as other rows.
        claim = {"cached": 0, "cached_md5": ""}
        held = list(exact_digests(given))
    elif claim is None:
        # The files the requests name, their generations read and recorded before the claim.
        held = list(exact_digests(given, file_versions(staging, submission_id, given)))
        mine = _claim(staging, submission_id, provider, model, held, ttl)
        claim = mine if mine is not None else staging.read_json(folder.name(CLAIM))
    else:  # keyed as the claim was: by the generations the id recorded
        held = list(exact_digests(given, stored_versions(staging, submission_id)))
    cached_md5, claimed = _claimed(staging, submission_id, claim)
    out = _take_claimed(submission_id, held, claimed)
    # The rows of a claim already there, before staging reads anything.
    check_limits(out, staging.limits)
    counted = sum(1 for line in out if line.digest.startswith("c"))
    logger.info(
        "id %s: %d of %d requests answered from the answer cache",
        submission_id,
        counted,
        len(held),
    )

    def amend(manifest: Manifest) -> Manifest:
        return replace(manifest, cache=True, cached=counted, cached_md5=cached_md5)

    return out, amend


def _take_claimed(
    submission_id: str, held: list[tuple[StagedLine, str]], claimed: dict[str, str]
) -> list[StagedLine]:
    """The lines to stage given an id's claim (each claimed key's line made a cached one).

    Raises:
        InvalidRequestError: the claim names keys or requests these lines do not have.
    """
    claimed = dict(claimed)
    out: list[StagedLine] = []
    for line, exact in held:
        want = claimed.pop(cache_digest(line.key), None)
        if want is None:
            out.append(line)
        elif want == exact:
            out.append(_cached_line(line))
        else:
            raise _other_rows(submission_id, f"request {line.key!r} differs from the one")
    if claimed:
        raise _other_rows(submission_id, f"{len(claimed)} key(s) are not among these requests")
    return out


def _check_claim_model(submission_id: str, claim: Any, provider: Provider, model: str) -> None:
    """Refuse to take answers an id claimed from another model's cache.

    The staged rows left out the claimed keys, so the id cannot take other rows either: a model
    Vertex refused is corrected under the same id only when nothing came from the cache.
    A claim of nothing, or one written before claims named their model, is any model's.
    """
    if not isinstance(claim, dict) or not claim.get("cached"):
        return
    theirs = (claim.get("provider", provider), claim.get("model", model))
    if theirs != (provider, model):
        raise InvalidRequestError(
            f"submission id {submission_id!r} took {claim['cached']} answer(s) from the answer "
            f"cache of {theirs[0]} model {theirs[1]!r}, not {model!r}: submit these requests "
            "with that model, or under a new id; nothing staged was changed",
            field="model",
        )


def claimed_digests(
    staging: Staging,
    submission_id: str,
    lines: Iterator[StagedLine],
    provider: Provider,
    model: str,
) -> set[str] | None:
    """The exact digests of the requests an id claimed from the cache (``cache.claim.json``,
    left by a submit that stopped before its manifest), or ``None`` if it claimed nothing yet;
    read-only: what a plan counts as cached, since a submit takes the claim, not the cache.

    Raises:
        InvalidRequestError: the claim is damaged, or names keys or requests these lines do
            not have (a submit would refuse them).
    """
    claim = staging.read_json(staging.folder(submission_id).name(CLAIM))
    if claim is None:
        return None
    _check_claim_model(submission_id, claim, provider, model)
    _, claimed = _claimed(staging, submission_id, claim)
    versions = stored_versions(staging, submission_id)
    _take_claimed(submission_id, list(exact_digests(lines, versions)), claimed)
    return set(claimed.values())


def _claim(
    staging: Staging,
    submission_id: str,
    provider: Provider,
    model: str,
    held: list[tuple[StagedLine, str]],
    ttl: timedelta | None,
) -> dict[str, Any] | None:
    """Look the lines up, stage the answers found and claim them; ``None`` if another
    submitter claimed the id first (its claim wins)."""
    cache = AnswerCache(staging, provider, model, ttl=ttl)
    found = cache.lookup({exact for _, exact in held}, compact=True)
    # Before the answers and the claim are written: a claim of rows staging then refuses
    # would refuse the corrected retry as other rows.
    check_limits((line for line, exact in held if exact not in found), staging.limits)
    body = hashlib.md5(usedforsecurity=False)
    text: list[bytes] = []
    for line, exact in held:
        entry = found.get(exact)
        if entry is None:
            continue
        # The answer's text as the cache holds it (its hash checked): not parsed here.
        row = b'{"d":"' + cache_digest(line.key).encode("ascii") + b'","x":"'
        row += exact.encode("ascii") + b'","r":' + entry.response + b"}\n"
        text.append(row)
        body.update(row)
    md5 = body.hexdigest() if text else ""
    # The model too: its answers are another model's answers (``_check_claim_model``).
    claim: dict[str, Any] = {
        "cached": len(text),
        "cached_md5": md5,
        "provider": provider,
        "model": model,
    }
    folder = staging.folder(submission_id)
    if text:
        # The rows as they are held, in one request; False: staged by an earlier attempt, the
        # same bytes (named by their MD5).
        staging.create(folder.name(cached_name(md5)), text, JSONL, md5=md5)
    return claim if staging.create_json(folder.name(CLAIM), claim) else None


def _claimed(staging: Staging, submission_id: str, claim: Any) -> tuple[str, dict[str, str]]:
    """The MD5 of the answers an id claimed, and each claimed key's cache digest -> the exact
    digest of its request, read back from the staged answers and checked against the claim."""
    folder = staging.folder(submission_id)
    where = folder.uri(CLAIM)
    if (
        not isinstance(claim, dict)
        or type(claim.get("cached")) is not int
        or not isinstance(claim.get("cached_md5"), str)
    ):
        raise InvalidRequestError(
            f"{where} is not a vertexbatch cache claim: it was damaged or edited; submit under "
            "a new id",
            field="staging",
        )
    md5, count = claim["cached_md5"], claim["cached"]
    claimed: dict[str, str] = {}
    if not count:
        return md5, claimed
    uri = folder.uri(cached_name(md5))
    digest = hashlib.md5(usedforsecurity=False)
    try:
        for raw in staging.read_lines(uri):
            digest.update(raw + b"\n")
            row = load_json(raw)
            claimed[row["d"]] = row["x"]
    except (ValueError, TypeError, KeyError):
        claimed = {}
    except NotFound:
        claimed, digest = {}, hashlib.md5(usedforsecurity=False)
    if len(claimed) != count or digest.hexdigest() != md5:
        raise InvalidRequestError(
            f"{uri}, the answers id {submission_id!r} claimed from the answer cache, is gone or "
            "damaged: submit under a new id",
            field="staging",
        )
    return md5, claimed


def _other_rows(submission_id: str, why: str) -> InvalidRequestError:
    return InvalidRequestError(
        f"submission id {submission_id!r} is already claimed for other rows ({why} it took "
        "from the answer cache): submit these rows under a new id; nothing staged was changed",
        field="id",
    )


def _cached_line(line: StagedLine) -> StagedLine:
    return StagedLine(
        key=line.key, digest=cache_digest(line.key), canonical=line.canonical, data=b""
    )


def read_cached(staging: Staging, job: Job, keys: KeyMap, taken: set[int]) -> Iterator[Result]:
    """The answers staged from the cache for ``job``'s keys, marked ``cached``.

    Raises:
        JobError: the staged answers are gone or do not match the manifest.
    """
    if not keys.cached:
        return
    manifest = job_manifest(staging, job)
    uri = job.input_uri.rsplit("/", 1)[0] + "/" + cached_name(manifest.cached_md5)
    digest = hashlib.md5(usedforsecurity=False)
    count = 0

    def damaged(why: str) -> JobError:
        return JobError(
            f"{uri} is damaged ({why}; it no longer matches what its manifest recorded): the "
            f"cached answers of job {job.name} cannot be read safely",
            job=job.name,
        )

    with job_errors(job.name, reading=uri):
        lines = iter(staging.read_lines(uri))
        while (raw := next(lines, None)) is not None:
            digest.update(raw + b"\n")
            count += 1
            try:
                row = load_json(raw)
                index = keys.cached_index(row["d"])
                response = row["r"]
            except (ValueError, TypeError, KeyError):
                raise damaged(f"line {count} is not a cached answer") from None
            if index is None or index in taken or type(response) is not dict:
                raise damaged(f"line {count} names no cached key")
            taken.add(index)
            key = keys.keys[index]
            result = classify_row({"response": response}, key=key, provider=job.provider)
            if keys.schema is not None:  # cached only once validated: validated again alike
                result = typed_result(parsed_result(result, keys.schema), keys.schema)
            yield replace(result, cached=True)
    if count != manifest.cached or digest.hexdigest() != manifest.cached_md5:
        raise damaged(f"{count} lines, {manifest.cached} staged")
