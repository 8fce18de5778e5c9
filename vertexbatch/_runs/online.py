"""The online fallback: answer staged requests through the online APIs, as output rows.

Used by runs past their deadline. Each key's staged request body is sent as it was staged
(``_vertex.online``), with bounded concurrency and retries on 429/529/5xx; every answer is written
as a Vertex output row carrying the key's digest, so it is read, correlated and classified
exactly like a batch row. Only what the service says becomes a key's row (an HTTP status, a
transport failure once retries are spent); any other failure is a bug and propagates, and the
claim is released so that a fixed version answers the shard.

Online calls bill at the full rate, so each key is answered online at most once across
processes, and an answer paid for is written before more are paid for. Before calling anything,
a caller claims the shard in GCS::

    PREFIX/SHARD/online.claim.json          {"format", "owner", "expires"}: who answers, until when
    PREFIX/SHARD/creating/ID.json           the same fields: a caller creating an attempt's job
    PREFIX/SHARD/online/part-00000.jsonl    the answers of one group of calls, create-only
    PREFIX/SHARD/online.jsonl               every answer, written create-only once each key has one

Each row is a Vertex output row (the key's digest, ``status``, ``response``) and ``tier``: the
price tier it was billed at, the answer's ``usageMetadata.trafficType`` as ``_vertex.tiers``
names it (``standard``, ``flex``, ``priority``, ``provisioned``), else the tier the run asked
for (a Claude answer, a failed call: not billed). Readers give it as ``Result.tier``.

1. ``online.jsonl`` exists: the shard was answered; nothing is called. Readers take answers
   from it alone (and the later pieces it names, past 8 MiB: ``_runs.online_rows``), and it is
   what a shard answered by an earlier version holds, alone.
2. The claim is created create-only (``if_generation_match=0``). Of callers racing, one creates
   it; the others find it held and unexpired, call nothing and report the shard pending.
3. The holder renews the claim every ``CLAIM_SECONDS / 5`` (60 s) to ``CLAIM_SECONDS`` (300 s)
   ahead, each renewal conditional on the claim still being the one it last wrote (checked,
   then overwritten on that generation); it starts no call once its own claim is within one
   renewal of expiring or was taken over, and then writes nothing more.
4. The holder first reads the parts already written (by an earlier holder that died, failed or
   lost its claim) and calls only the keys none of them answers. It calls the rest in groups of
   ``concurrency``; once a group's calls have all ended, their rows are written as the next
   part, create-only (a part number taken meanwhile by a stale holder moves it to the next), and
   only then does the next group start. So a holder that dies, or whose write fails for the whole
   retry window, leaves unwritten at most the one group in flight: the next holder pays again
   for those keys only.
5. Once every key has a row in some part, the parts are joined into ``online.jsonl`` (each
   digest once, the first part's row winning; past 8 MiB in pieces it names, each one request,
   ``_runs.online_rows``); the parts stay, unread from then on.
6. A claim past its expiry was left by a holder that died (or stopped renewing; a holder that
   fails with an exception expires its claim at once): a later caller takes it over by
   overwriting it conditional on the stale claim's generation, so of two callers seeing the
   same stale claim exactly one wins; the winner goes on from step 4.
7. The claim is never deleted: once ``online.jsonl`` exists, step 1 ends every later attempt.
   A holder done with it without answering (step 9, or a failure) releases it: expires it at
   once, marked ``released``, and the next caller takes it over as in step 6.
8. A run step creating a batch attempt's job of the shard (``creating``) first writes its own
   token, ``PREFIX/SHARD/creating/ID.json`` (a claim's fields, renewed as a claim is), then
   creates nothing if the claim is held (unexpired, not released) or any online answer or part
   exists; it deletes the token once the job is recorded (``job.json``). A holder of the claim,
   before anything else, looks for tokens: while an unexpired one exists it calls nothing and
   releases the claim. Whichever of the two writes second sees the other, so an attempt's
   create and the online answers exclude each other (``_runs.claim``); creators never wait
   for one another (the identity protocol makes one job of an id).
9. Under the claim, the holder reads the shard's attempts afresh (``settled``): while one's job
   has not ended (a cancel that lands late leaves it CANCELLING, then maybe SUCCEEDED) it is
   cancelled, nothing is called and the claim is released; once all have ended, their output
   is read and only the keys no attempt settled are called: those keep the batch answer.

Assumptions: clocks agree to well within a renewal period (60 s), and a holder that cannot
reach GCS for a whole ``CLAIM_SECONDS`` loses its claim (the group it has in flight may then be
answered twice: the taker does not see it; a create that outlasts its token likewise). A
crashed holder, or a creator that died with its token, delays the shard's online answers by at
most ``CLAIM_SECONDS``.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from .._errors import InvalidRequestError
from .._gcs.staging import JSONL, Folder, Staging
from .._observe.traces import note, stepped
from .._providers import PROVIDERS
from .._requests.lines import StagedLine, staged_body
from .._staged.read import read_key_map, read_staged_lines
from .._values import Job
from .._vertex.online import from_service, status_code
from .._vertex.tiers import billed_tier
from .claim import CLAIM_SECONDS, Lease, claimed, creator_token, live_creators, take_claim
from .online_rows import write_rows

if TYPE_CHECKING:
    from .._cloud import Cloud

__all__ = [
    "answer_online",
    "creating",
    "online_parts",
]

logger = logging.getLogger("vertexbatch")

# Online calls in flight at once, by default (Run.advance's online_concurrency).
CONCURRENCY = 8
_PART = "part-{:05d}.jsonl"


@contextlib.contextmanager
def creating(staging: Staging, folder: Folder, rows_leaf: str) -> Iterator[bool]:
    """While an attempt's job of the shard is created (step 8 above): yields ``True`` if it
    may be, ``False`` (create nothing) if a caller holds the shard's claim to answer it online
    or a key of it was answered online. The creator's token is removed when the block ends,
    once the job is recorded."""
    with creator_token(staging, folder):
        yield not (
            claimed(staging, folder)
            or staging.exists(folder.name(rows_leaf))
            or bool(online_parts(staging, folder, rows_leaf))
        )


@stepped("online_fallback")
def answer_online(
    cloud: Cloud,
    job: Job,
    settled: Callable[[], set[str] | None],
    folder: Folder,
    rows_leaf: str,
    concurrency: int = CONCURRENCY,
    tier: str = "standard",
) -> bool:
    """Answer the job's keys not in ``settled()`` online, once across processes (see above),
    each call asking for price ``tier`` (``_vertex.tiers``); each row records the tier it was
    billed at (``tier``: the answer's ``usageMetadata.trafficType``, else the tier asked).

    The rows go to ``folder``'s ``rows_leaf``, create-only, by way of parts under ``rows_leaf``
    without its suffix (``online.jsonl``: ``online/``). ``settled`` is called only by the caller
    that holds the claim: the keys a batch attempt answered, or ``None`` while one of the
    shard's batch attempts may still answer (then nothing is called and the claim is released).

    Returns:
        ``True`` once the rows are written (by this call or an earlier one), ``False`` while
        another caller holds the claim (or this one lost it), or ``settled`` gave ``None``: the
        shard is still pending.

    Raises:
        Whatever is not the service's answer to a call (a failed GCS write once retried, a bug
        building a call), after the claim is released.
    """
    staging = cloud.staging
    name = folder.name(rows_leaf)
    if staging.exists(name):
        return True
    lease = take_claim(staging, folder, CLAIM_SECONDS)
    if lease is None:
        return False
    parts = _Parts(staging, folder, rows_leaf, job)
    with lease:
        # A holder whose claim went stale may have written the rows before this one took over.
        if staging.exists(name):
            return True
        # A caller creating an attempt's job, or an attempt that may still answer: the next
        # step looks again.
        keep = None if live_creators(staging, folder) else settled()
        if keep is None:
            lease.release()
            return False
        answered = parts.read()
        if not _answer(cloud, job, keep, answered, parts, lease, concurrency, tier):
            logger.warning("gave up answering %s online: its claim was lost", job.id)
            return False
        rows = 0

        def counted() -> Iterator[bytes]:
            nonlocal rows
            for row in parts.rows():
                rows += 1
                yield row

        if write_rows(staging, folder, rows_leaf, counted()):
            logger.info("answered %d key(s) of %s online", rows, job.id)
    return True


def online_parts(staging: Staging, folder: Folder, rows_leaf: str) -> list[str]:
    """The URIs of the parts written for a shard's online answers, in order (for tests and
    operators: readers take ``rows_leaf`` only)."""
    prefix = folder.uri(rows_leaf.removesuffix(".jsonl"))
    return sorted(uri for uri, _, _ in staging.list_names(prefix) if _part_number(uri) is not None)


def _part_number(uri: str) -> int | None:
    leaf = uri.rsplit("/", 1)[-1]
    if not (leaf.startswith("part-") and leaf.endswith(".jsonl")):
        return None
    number = leaf[len("part-") : -len(".jsonl")]
    return int(number) if number.isdigit() else None


class _Parts:
    """The parts of one shard's online answers: read back, and written one group at a time."""

    def __init__(self, staging: Staging, folder: Folder, rows_leaf: str, job: Job) -> None:
        self._staging = staging
        self._folder = folder
        self._leaf = rows_leaf
        self._id_field = PROVIDERS[job.provider].id_field
        self._next = 0

    def _lines(self) -> Iterator[tuple[str, bytes]]:
        """Every row of every part, with its digest, in part order."""
        for uri in online_parts(self._staging, self._folder, self._leaf):
            number = _part_number(uri)
            assert number is not None
            self._next = max(self._next, number + 1)
            for line in self._staging.read_lines(uri):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except ValueError:
                    row = None
                digest = row.get(self._id_field) if isinstance(row, dict) else None
                if not isinstance(digest, str):
                    raise InvalidRequestError(
                        f"{uri} is not a vertexbatch online part: it was damaged or edited; "
                        "delete it to let the fallback answer its keys again",
                        field="staging",
                    )
                yield digest, line + b"\n"

    def read(self) -> set[str]:
        """The digests the parts already answer."""
        return {digest for digest, _ in self._lines()}

    def rows(self) -> Iterator[bytes]:
        """Every part's rows, each digest once (the first part's row winning)."""
        seen: set[str] = set()
        for digest, line in self._lines():
            if digest not in seen:
                seen.add(digest)
                yield line

    def write(self, rows: list[bytes]) -> None:
        """Write rows as the next part, create-only; a number taken meanwhile (by a holder
        that lost its claim) moves them to the next."""
        prefix = self._leaf.removesuffix(".jsonl")
        while True:
            name = self._folder.name(f"{prefix}/{_PART.format(self._next)}")
            self._next += 1
            # One group of calls' rows (``concurrency`` of them): held, in one request.
            if self._staging.create(name, rows, JSONL):
                return


def _answer(
    cloud: Cloud,
    job: Job,
    settled: set[str],
    answered: set[str],
    parts: _Parts,
    lease: Lease,
    concurrency: int,
    tier: str,
) -> bool:
    """Answer every unsettled key no part answers, a group of calls per part; ``False`` if the
    claim was lost before the last call."""
    staging = cloud.staging
    wanted = {k for k in read_key_map(staging, job).keys if k not in settled}
    # A deduplicated key's alias (no data) is answered by its line's row, as in a batch job.
    lines = (
        [
            line
            for line in read_staged_lines(staging, job, wanted)
            if line.data and line.digest not in answered
        ]
        if wanted
        else []
    )
    if not lines:
        return True
    lane = PROVIDERS[job.provider]
    caller = lane.online(cloud.online, job.model, concurrency, tier)
    id_field = lane.id_field

    def answer(line: StagedLine) -> bytes | None:
        if not lease.held():
            return None
        body = staged_body(json.loads(line.data))
        row: dict[str, Any] = {id_field: line.digest}
        try:
            row["response"] = cloud.retry.call(
                f"online answer for a key of {job.id}", lambda: caller.call(body)
            )
            row["status"] = ""
            row["tier"] = billed_tier(row["response"], tier)
        except Exception as exc:
            if not from_service(exc):
                raise  # a call that could not be built is a bug, never a key's answer
            code = status_code(exc)
            logger.warning(
                "online call for a key of %s failed: %s %s", job.id, type(exc).__name__, code
            )
            row["status"] = {"code": code, "message": f"online call failed: {type(exc).__name__}"}
            row["tier"] = tier  # asked, and not billed
        return json.dumps(row).encode("utf-8") + b"\n"

    written = 0
    try:
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            for start in range(0, len(lines), concurrency):
                group: list[Future[bytes | None]] = [
                    pool.submit(answer, line) for line in lines[start : start + concurrency]
                ]
                rows: list[bytes] = []
                failure: BaseException | None = None
                for future in group:
                    try:
                        row = future.result()
                    except BaseException as exc:  # the others of the group were paid for
                        failure = failure or exc
                        continue
                    if row is not None:
                        rows.append(row)
                if rows:
                    parts.write(rows)  # before the next group is paid for
                    written += len(rows)
                if failure is not None:
                    raise failure
                if len(rows) < len(group):
                    return False  # the claim was lost: the taker answers the rest
    finally:
        caller.close()
        note({"vertexbatch.online.answered": written})
    return True
