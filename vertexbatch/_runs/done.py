"""A finished shard's record in GCS: its keys' final outcome counts and what its answers used.

::

    PREFIX/RUN.s0/done.json   {"shard": "RUN.s0", "outcomes": {"ok": 98, "exhausted": 2},
                               "online": false,
                               "usage": {"batch": [answers, input, output, cache_read,
                                                   cache_write], ...},
                               "priced_on": "2026-12-08"}

``online``: whether the counts include the shard's online answers (``counts_online``).
``usage``: the usage of the answers the shard paid for, per tier they were billed at
(``_runs.usage``), so that a run's ``status`` shows its spend without reading answers; a
record written before it has none (its spend is unknown to ``status``, never 0).
``priced_on``: ``"YYYY-MM-DD"``, the latest day (UTC) its paid answers are priced on (a batch
answer's job's creation day, an online answer's day of this record: ``_runs.usage``); written
only when every paid answer has a day. A record without it is priced on today's date.

Written create-only (replaced only by the online fallback's finisher) and may have been edited
by hand since: every field read back is checked, and a record that does not hold is an
``InvalidRequestError`` naming it.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass

from .._errors import InvalidRequestError
from .._gcs.staging import Staging
from .ledger import Shard
from .usage import ShardUsage, parse_day, parse_usage, usage_json

__all__ = [
    "DONE",
    "FINAL_OUTCOMES",
    "OUTCOME_ORDER",
    "Done",
    "counts_online",
    "parse_done",
    "read_done",
    "write_done",
    "write_done_online",
]

DONE = "done.json"
# Outcome names in a fixed order, for records that count them in a row (``_runs.records``).
OUTCOME_ORDER = ("exhausted", "failed", "ok", "refused", "truncated")
FINAL_OUTCOMES = frozenset(OUTCOME_ORDER)


@dataclass(frozen=True, slots=True)
class Done:
    """A finished shard: its keys per final outcome, its answers' usage per tier (``None``:
    its record was written before records kept usage), and the latest day they are priced on
    (``None``: not recorded, priced on today's)."""

    outcomes: Mapping[str, int]
    usage: ShardUsage | None = None
    day: datetime.date | None = None


def read_done(staging: Staging, shard: Shard) -> Done | None:
    """A finished shard's record, ``None`` while it is not finished."""
    folder = staging.folder(shard.id)
    done = staging.read_json(folder.name(DONE))
    return None if done is None else parse_done(done, shard, folder.uri(DONE))


def parse_done(done: object, shard: Shard, where: str) -> Done:
    """A shard's done record read from ``where``, every field checked."""
    outcomes = done.get("outcomes") if isinstance(done, dict) else None
    usage = day = None
    if isinstance(done, dict) and "usage" in done:
        usage = parse_usage(done["usage"], shard.keys)
    if isinstance(done, dict) and "priced_on" in done:
        day = parse_day(done["priced_on"])
    if (
        not isinstance(done, dict)
        or done.get("shard") != shard.id
        or not isinstance(outcomes, dict)
        or not set(outcomes) <= FINAL_OUTCOMES
        or not all(type(n) is int and n >= 0 for n in outcomes.values())
        or sum(outcomes.values()) != shard.keys
        or ("usage" in done and usage is None)
        or ("priced_on" in done and (day is None or usage is None))
    ):
        raise InvalidRequestError(
            f"{where} is not a vertexbatch shard record (outcome counts of its "
            f"{shard.keys} keys, their usage and the day it is priced on): it was damaged or "
            "edited",
            field="staging",
        )
    return Done(outcomes, usage, day)


def _record(shard: Shard, done: Done, online: bool) -> dict[str, object]:
    record: dict[str, object] = {
        "shard": shard.id,
        "outcomes": dict(done.outcomes),
        "online": online,
    }
    if done.usage is not None:
        record["usage"] = usage_json(done.usage)
        if done.day is not None:
            record["priced_on"] = done.day.isoformat()
    return record


def write_done(staging: Staging, shard: Shard, done: Done) -> None:
    """Record a shard as finished (create-only: the first finisher's record stands).

    The record says its counts do not include online answers: a reader takes the shard's
    ``online.jsonl`` only if no record says so (``counts_online``).
    """
    staging.create_json(staging.folder(shard.id).name(DONE), _record(shard, done, False))


def write_done_online(staging: Staging, shard: Shard, done: Done) -> None:
    """Record a shard answered online as finished, with counts that include its online answers.

    Written after ``online.jsonl``, so it replaces a record another step made meanwhile from
    the batch attempts alone (conditional on the generation read): the record and the results
    then agree, and no key has two outcomes.
    """
    name = staging.folder(shard.id).name(DONE)
    record = _record(shard, done, True)
    for _ in range(3):  # replaced only by finishers of this shard: a second pass is plenty
        if staging.create_json(name, record):
            return
        current = staging.read_json(name)
        if current == record or staging.replace_json(name, record, current):
            return
    raise InvalidRequestError(
        f"{staging.folder(shard.id).uri(DONE)} kept changing while shard {shard.id} was "
        "recorded as answered online: advance the run again",
        field="staging",
    )


def counts_online(staging: Staging, shard: Shard) -> bool:
    """Whether the shard's results take its online answers: unless its done record was made
    from the batch attempts alone (a record before this field counted them)."""
    done = staging.read_json(staging.folder(shard.id).name(DONE))
    return not (isinstance(done, dict) and done.get("online") is False)
