"""A submission made with ``cache=True``: answered in part (or whole) from the answer cache.

Submitting: every request's canonical digest is looked up in the cache (``_cache``) before
anything is staged. A key the cache answers gets a key record with ``cache_digest(key)`` and no
input line, and its answer is staged in the submission's folder, create-only, as
``cached-<MD5>.jsonl`` (one ``{"d": cache digest, "r": response}`` line per key); the manifest
records ``cache``, ``cached`` and that MD5, so the id claims those answers with its rows and a
retry carries on with the same ones (it reads them back from the staged key map rather than
asking the cache again). When every key is cached, no Vertex job is created: the record says the
id was answered from the cache, and the ``Job`` is named ``cached:ID``.

Reading: ``read_cached`` yields the staged answers (``Result.cached``), verified against the
manifest; ``fill_cache`` stores a ``cache=True`` submission's ok answers in the cache (``results``
calls it once the job is terminal and its results have been read to the end).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from datetime import timedelta
from typing import Any

from ._cache import AnswerCache
from ._errors import InvalidRequestError, JobError, job_errors
from ._keymap import KeyMap, cache_digest, parse_key_record
from ._lines import StagedLine
from ._manifest import KEYS, RECORD, Manifest, read_manifest
from ._models import Job, Provider, Result, Status
from ._outcomes import classify_row
from ._staged import job_manifest
from ._staging import JSONL, Staging
from ._vertex import JobSpec

__all__ = [
    "CACHED_PREFIX",
    "answer_from_cache",
    "cached_job",
    "cached_status",
    "fill_cache",
    "is_cached_job",
    "read_cached",
]

logger = logging.getLogger("vertexbatch")

# The name of the job of an id answered wholly from the cache: no Vertex job exists.
CACHED_PREFIX = "cached:"
FILLED = "cache.filled.json"


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

    The lines are held (every digest is looked up before anything is staged). The answers of
    the cached keys are staged now, create-only under their MD5, so the manifest written after
    the rows can claim them.
    """
    held = list(lines)
    staged = read_manifest(staging, submission_id)
    answers: dict[str, Mapping[str, Any]] = {}  # key -> response
    if staged is not None and staged.cache:
        # A retry: the same keys come from the cache as the first time, whatever it holds now.
        for key in _staged_cached_keys(staging, submission_id, staged):
            answers[key] = {}
        out = [_cached_line(line) if line.key in answers else line for line in held]
        counted = len(answers)
        amend_md5 = staged.cached_md5
    else:
        found = AnswerCache(staging, provider, model, ttl=ttl).lookup(
            {line.canonical for line in held}
        )
        out = []
        body = hashlib.md5(usedforsecurity=False)
        text: list[bytes] = []
        for line in held:
            entry = found.get(line.canonical)
            if entry is None:
                out.append(line)
                continue
            out.append(_cached_line(line))
            # The answer's text as the cache holds it (its hash checked): not parsed here.
            row = b'{"d":"' + cache_digest(line.key).encode("ascii") + b'","r":'
            row += entry.response + b"}\n"
            text.append(row)
            body.update(row)
        counted = len(text)
        amend_md5 = body.hexdigest() if text else ""
        if text:
            upload = staging.upload(
                staging.folder(submission_id).name(cached_name(amend_md5)), JSONL
            )
            for row_bytes in text:
                upload.write(row_bytes)
            upload.finish()  # False: staged by an earlier attempt, the same bytes (its MD5)
        logger.info(
            "id %s: %d of %d requests answered from the answer cache",
            submission_id,
            counted,
            len(held),
        )

    def amend(manifest: Manifest) -> Manifest:
        return replace(manifest, cache=True, cached=counted, cached_md5=amend_md5)

    return out, amend


def _cached_line(line: StagedLine) -> StagedLine:
    return StagedLine(
        key=line.key, digest=cache_digest(line.key), canonical=line.canonical, data=b""
    )


def _staged_cached_keys(staging: Staging, submission_id: str, manifest: Manifest) -> list[str]:
    if not manifest.cached:
        return []
    folder = staging.folder(submission_id)
    keys = []
    for number, raw in enumerate(staging.read_lines(folder.name(KEYS)), start=1):
        try:
            key, digest, _ = parse_key_record(raw)
        except ValueError as exc:
            raise InvalidRequestError(
                f"{folder.uri(KEYS)} line {number} is damaged ({exc}): the answers id "
                f"{submission_id!r} took from the cache cannot be told; submit under a new id",
                field="staging",
            ) from None
        if digest.startswith("c"):
            keys.append(key)
    return keys


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
                row = json.loads(raw)
                index = keys.cached_index(row["d"])
                response = row["r"]
            except (ValueError, TypeError, KeyError):
                raise damaged(f"line {count} is not a cached answer") from None
            if index is None or index in taken or type(response) is not dict:
                raise damaged(f"line {count} names no cached key")
            taken.add(index)
            key = keys.keys[index]
            result = classify_row({"response": response}, key=key, provider=job.provider)
            yield replace(result, cached=True)
    if count != manifest.cached or digest.hexdigest() != manifest.cached_md5:
        raise damaged(f"{count} lines, {manifest.cached} staged")


def fill_cache(
    staging: Staging,
    job: Job,
    answers: Mapping[str, Mapping[str, Any]],
    manifest: Manifest | None = None,
) -> int:
    """Store ``answers`` (key -> ok response) of a ``cache=True`` submission (or run shard) in
    the answer cache, keyed by the canonical digests of its staged key map; once per id.

    Returns the entries written (0: not a ``cache=True`` submission, or filled before).
    """
    if not answers:
        return 0
    manifest = manifest or job_manifest(staging, job)
    folder = staging.folder(job.id)
    if not manifest.cache or staging.exists(folder.name(FILLED)):
        return 0
    by_digest: dict[str, Mapping[str, Any]] = {}
    for raw in staging.read_lines(folder.name(KEYS)):
        key, _, canonical = parse_key_record(raw)
        response = answers.get(key)
        if response is not None and canonical:
            by_digest[canonical] = response
    written = AnswerCache(staging, job.provider, job.model).fill(job.id, by_digest)
    staging.create_json(folder.name(FILLED), {"entries": written, "id": job.id})
    return written
