"""Step 1 of the identity protocol: stage the rows create-only and claim the id for them.

The input and the key map are uploaded as parts (``_gcs.parts``), each create-only, streamed
(never all rows held), part 0 of each last, once every row is read and checked; then
``manifest.json``, the small object that claims the id for one set of rows: the same rows again
carry on (a retry, recovery after a crash), other rows are refused and nothing staged is
touched (no part is ever deleted). The rest of the protocol (adopt or create, record, twins)
is ``_job.submit``'s.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace

from .._gcs.parts import PartedUpload
from .._gcs.staging import JSONL, Staging
from .._observe.traces import note, stepped
from .._requests.lines import StagedLine
from .._values import Provider
from .._vertex.controls import NO_CONTROLS, Controls
from .manifest import (
    INPUT_STEM,
    KEYS_STEM,
    MANIFEST,
    PLAIN,
    Manifest,
    Tally,
    claim_conflict,
    no_rows,
    read_manifest,
)

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
            for other rows (or by another origin). Nothing that claims the id or blocks other
            rows is left behind: at most later parts, named by their bytes (never part 0).
    """
    staging = staging.keyed(controls.kms_key)
    folder = staging.folder(submission_id)
    rows = iter(lines)
    first = next(rows, None)  # validates the first line before any cloud call
    if first is None:
        raise no_rows(submission_id)
    staged = read_manifest(staging, submission_id)
    # Staging, the input's parts take its MD5 in their own thread; else the tally does.
    tally = Tally(staging.limits, hash_input=staged is not None)
    input_parts = key_parts = None
    if staged is None:
        input_parts = PartedUpload(staging, folder, INPUT_STEM, JSONL, part_size=staging.part_size)
        key_parts = PartedUpload(
            staging, folder, KEYS_STEM, JSONL, part_size=staging.part_size, in_flight=1
        )
    # Until both are finished, any failure stops both (parts not sent never are). Part 0 of
    # each is created last, once every row is read and checked: rows refused as they stream (a
    # bad line, a limit) or a crash leave only later parts, named by their bytes, which block
    # no one and which a retry of the same rows adopts; no part is ever deleted, so none that
    # a concurrent submitter of the same lines adopted can go (docs/guarantees.md, "Staged
    # parts").
    try:
        for line in _chain(first, rows):
            record = line.key_record()
            tally.add(line, record)
            if input_parts is not None and key_parts is not None:
                input_parts.write(line.data)
                key_parts.write(record)
        inputs: tuple[str, ...] = ()
        keys: tuple[str, ...] = ()
        if input_parts is not None and key_parts is not None:
            input_parts.flush()  # every later part written, then the two part 0s
            key_parts.flush()
            inputs = input_parts.finish()
            if input_parts.conflict is None:
                keys = key_parts.finish()
            else:  # other rows' input: its key map is theirs to write, not these rows'
                key_parts.abort()
        md5 = input_parts.md5_hex() if input_parts is not None else None
        given = replace(
            tally.manifest(provider, model, origin, md5),
            controls=controls,
            dest=dest,
            input_parts=inputs if len(inputs) > 1 else (),
            key_parts=keys if len(keys) > 1 else (),
        )
        note({"vertexbatch.requests": tally.rows})
        if amend is not None:
            given = amend(given)
        if staged is not None:
            return _carry_on(staging, submission_id, staged, given)
        assert input_parts is not None and key_parts is not None
        if input_parts.conflict is not None:
            # Staged by an earlier attempt or a concurrent submitter: other rows. The later
            # parts this call wrote are referenced by no manifest; they stay (never deleted:
            # the same lines may be another's), for a lifecycle rule to remove.
            raise claim_conflict(
                submission_id,
                read_manifest(staging, submission_id),
                given,
                input_parts.conflict.existing,
            )
        # The same input can come with another key map (dedupe's repeats and cached keys have
        # no line of their own, and may be other keys or in another order): one already there
        # must be this one, or the job's results could never be read.
        if key_parts.conflict is not None:
            raise claim_conflict(
                submission_id, None, given, staged_keys_md5=key_parts.conflict.existing
            )
    except BaseException:
        # Any failure leaves the parts written whole, for a retry of the same rows to adopt.
        for parts in (input_parts, key_parts):
            if parts is not None:
                parts.abort()
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
    # The same rows carried on: their parts are the staged ones (none were sent this time).
    given = replace(given, input_parts=staged.input_parts, key_parts=staged.key_parts)
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
