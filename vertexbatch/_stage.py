"""Step 1 of the identity protocol: stage the rows create-only and claim the id for them.

``input.jsonl`` and ``keys.jsonl`` are uploaded create-only, streamed (never all rows held), then
``manifest.json``, the small object that claims the id for one set of rows: the same rows again
carry on (a retry, recovery after a crash), other rows are refused and nothing staged is
touched. The rest of the protocol (adopt or create, record, twins) is ``_identity``'s.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace

from ._controls import NO_CONTROLS, Controls
from ._gcs.staging import JSONL, Staging
from ._gcs.upload import SMALL_CHUNK
from ._lines import StagedLine
from ._manifest import (
    INPUT,
    KEYS,
    MANIFEST,
    PLAIN,
    Manifest,
    Tally,
    claim_conflict,
    no_rows,
    read_manifest,
)
from ._models import Provider
from ._tracing import note, stepped

__all__ = ["only_job_settings_differ", "stage"]

logger = logging.getLogger("vertexbatch")


@stepped("stage")
def stage(
    staging: Staging,
    submission_id: str,
    provider: Provider,
    model: str,
    lines: Iterable[StagedLine],
    origin: str = PLAIN,
    amend: Callable[[Manifest], Manifest] | None = None,
    controls: Controls = NO_CONTROLS,
    dest: str = "",
) -> Manifest:
    """Stage the rows create-only and claim the id for them; stream, never hold all rows.

    ``amend`` completes the manifest of the rows (the answers staged from the cache);
    ``controls`` are the job controls the manifest claims the id with, ``dest`` its BigQuery
    sink ("": the GCS prefix).

    Raises:
        InvalidRequestError: no rows, too many rows or bytes, a bad line, or the id is claimed
            for other rows (or by another origin). Nothing partial is left behind.
    """
    staging = staging.keyed(controls.kms_key)
    folder = staging.folder(submission_id)
    rows = iter(lines)
    first = next(rows, None)  # validates the first line before any cloud call
    if first is None:
        raise no_rows(submission_id)
    staged = read_manifest(staging, submission_id)
    # Staging, the input's upload takes its MD5 in its sending thread; else the tally does.
    tally = Tally(staging.limits, hash_input=staged is not None)
    input_upload = keys_upload = None
    if staged is None:
        input_upload = staging.upload(folder.name(INPUT), JSONL)
        keys_upload = staging.upload(folder.name(KEYS), JSONL, chunk=SMALL_CHUNK)
    # Until both objects are finished, any failure abandons both uploads (their sessions
    # cancelled, their sending threads ended): a finished upload has nothing left to abandon.
    try:
        for line in _chain(first, rows):
            record = line.key_record()
            tally.add(line, record)
            if input_upload is not None and keys_upload is not None:
                input_upload.write(line.data)
                keys_upload.write(record)
        md5 = input_upload.md5_hex() if input_upload is not None else None
        given = replace(tally.manifest(provider, model, origin, md5), controls=controls, dest=dest)
        note({"vertexbatch.requests": tally.rows})
        if amend is not None:
            given = amend(given)
        if staged is not None:
            return _carry_on(staging, submission_id, staged, given)
        assert input_upload is not None and keys_upload is not None
        if not input_upload.finish():
            # Staged by an earlier attempt or a concurrent submitter: same bytes or a conflict.
            existing = staging.md5(folder.name(INPUT))
            if existing != given.md5:
                raise claim_conflict(
                    submission_id, read_manifest(staging, submission_id), given, existing or ""
                )
        # The same input can come with another key map (dedupe's repeats and cached keys have
        # no line of their own, and may be other keys or in another order): one already there
        # must be this one, or the job's results could never be read.
        if not keys_upload.finish():
            existing = staging.md5(folder.name(KEYS))
            if existing != given.keys_md5:
                raise claim_conflict(
                    submission_id, None, given, staged_keys_md5=existing or "unknown"
                )
    except BaseException:
        for upload in (input_upload, keys_upload):
            if upload is not None:
                upload.abort()
        raise
    if staging.create_json(folder.name(MANIFEST), given.to_json()):
        logger.info("staged %d requests under %s", tally.rows, folder.uri(""))
        return given
    staged = read_manifest(staging, submission_id)
    assert staged is not None  # create-only failed: it exists
    return _carry_on(staging, submission_id, staged, given)


def _carry_on(staging: Staging, submission_id: str, staged: Manifest, given: Manifest) -> Manifest:
    """The manifest to go on with when the id already has one: the same rows carry on; the
    same rows with another model or other job controls replace a manifest Vertex refused;
    anything else conflicts."""
    if staged.claims_same(given):
        return staged
    if staged.rejected and only_job_settings_differ(staged, given):
        if staging.replace_json(
            staging.folder(submission_id).name(MANIFEST), given.to_json(), staged.to_json()
        ):
            logger.info(
                "id %s: Vertex refused model %s (or its job controls); its rows are now claimed "
                "for model %s",
                submission_id,
                staged.model,
                given.model,
            )
            return given
        again = read_manifest(staging, submission_id)
        if again is not None and again.claims_same(given):
            return again
        raise claim_conflict(submission_id, again, given)
    raise claim_conflict(submission_id, staged, given)


def only_job_settings_differ(staged: Manifest, given: Manifest) -> bool:
    """Whether the rows are the same, only the model, the job controls or the sink differing."""
    return staged.claims_same(
        replace(given, model=staged.model, controls=staged.controls, dest=staged.dest)
    )


def _chain(first: StagedLine, rest: Iterator[StagedLine]) -> Iterator[StagedLine]:
    yield first
    yield from rest
