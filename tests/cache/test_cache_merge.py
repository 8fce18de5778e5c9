"""Merged cache shards: a merge names what it holds, keeps each entry's age, happens once."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime

import pytest

import vertexbatch as vb
from tests.helpers import CLAUDE, cache_digest, object_names
from vertexbatch._cache.store import AnswerCache
from vertexbatch.emulator import LocalStack

NOW = 2_000_000_000
DAY = 86400


def _cache(client: vb.Client, at: float) -> AnswerCache:
    return AnswerCache(client._cloud.staging, "anthropic", CLAUDE, clock=lambda: at)


def _merged(stack: LocalStack, bucket: str) -> list[str]:
    return [n for n in object_names(stack, bucket, "jobs/_cache/") if "/merged/" in n]


def test_an_object_named_before_a_merge_but_written_after_it_is_read(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """A writer whose clock is 11 minutes behind fills right after a merge: its object's name
    is older than the merge's cut-off, yet every later lookup finds its entry."""
    for w in range(9):
        _cache(client, NOW - 1200 + w).fill(f"w{w}", {cache_digest(w): {"n": w}})
    assert len(_cache(client, NOW).lookup([cache_digest(0)], compact=True)) == 1
    assert len(_merged(stack, bucket)) == 1
    _cache(client, NOW - 660).fill("late", {cache_digest(10): {"n": 10}})
    for at in (NOW + 1, NOW + DAY):
        found = _cache(client, at).lookup([cache_digest(i) for i in range(11)], compact=True)
        assert sorted(found) == [cache_digest(i) for i in (*range(9), 10)]


@pytest.mark.parametrize(
    "damage",
    [
        lambda lines: b"".join(lines[:4]),  # truncated: the header and 3 entries
        lambda lines: b"[" * 100_000 + b"]" * 100_000 + b"\n" + b"".join(lines[1:]),  # deep header
    ],
    ids=["truncated", "header-nested-too-deeply"],
)
def test_a_damaged_merged_object_falls_back_to_what_it_merged(
    client: vb.Client,
    stack: LocalStack,
    bucket: str,
    caplog: pytest.LogCaptureFixture,
    damage: Callable[[list[bytes]], bytes],
) -> None:
    """The merged object is damaged: lookups read the objects it merged instead (they still
    exist), with a warning naming it, and lose no entry."""
    for w in range(9):
        _cache(client, NOW - 1200 + w).fill(f"w{w}", {cache_digest(w): {"n": w}})
    _cache(client, NOW).lookup([cache_digest(0)], compact=True)
    (name,) = _merged(stack, bucket)
    blob = stack.storage_client().bucket(bucket).blob(name)
    blob.upload_from_string(damage(blob.download_as_bytes().splitlines(keepends=True)))
    with caplog.at_level(logging.WARNING, logger="vertexbatch"):
        found = _cache(client, NOW + 1).lookup([cache_digest(i) for i in range(9)])
    assert sorted(found) == [cache_digest(i) for i in range(9)]
    assert any(name in r.getMessage() and "damaged" in r.getMessage() for r in caplog.records)
    # The next submit merges again, past the damaged object; then lookups stop warning.
    for at in (NOW + 1, NOW + 2, NOW + 3):
        caplog.clear()
        found = _cache(client, at).lookup([cache_digest(i) for i in range(9)], compact=True)
        assert sorted(found) == [cache_digest(i) for i in range(9)]
    assert len(_merged(stack, bucket)) == 2
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_a_merge_keeps_each_entrys_age_for_lifecycle_rules(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """A merged object's customTime is its oldest entry's write time, so lifecycle rules on
    ``age`` (plain objects) and ``daysSinceCustomTime`` (merged ones) of 30 days retire a
    day-0 entry by day 90 however often shards merge, and younger entries stay served."""
    store = stack.storage_client().bucket(bucket)
    _cache(client, NOW).fill("day0", {cache_digest(0): {"n": 0}})
    for step in range(1, 46):  # a fill every 2 days, and a submit's lookup after it
        now = NOW + step * 2 * DAY
        for blob in store.list_blobs(prefix="jobs/_cache/"):
            born = blob.custom_time or datetime.fromtimestamp(
                int(blob.name.rsplit("/", 1)[1][:10]), UTC
            )
            if born.timestamp() < now - 30 * DAY:
                blob.delete()
        _cache(client, now).fill(f"w{step}", {cache_digest(step): {"n": step}})
        _cache(client, now + 700).lookup([cache_digest(step)], compact=True)
    assert _merged(stack, bucket)  # shards did merge
    found = _cache(client, NOW + 90 * DAY + 800).lookup([cache_digest(i) for i in range(46)])
    assert cache_digest(0) not in found
    assert sorted(found) == [cache_digest(i) for i in range(30, 46)]  # days 60 to 90


def test_a_burst_of_fills_is_not_merged_at_every_lookup(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """Only objects older than the margin that no merged object holds count towards a merge:
    twelve fresh fills beside three old ones merge nothing; ten old ones merge once, not at
    each of the lookups that follow."""
    for w in range(3):
        _cache(client, NOW - 5000 + w).fill(f"old{w}", {cache_digest(w): {"n": w}})
    for w in range(12):
        _cache(client, NOW - 300 + w).fill(f"new{w}", {cache_digest(100 + w): {"n": w}})
    for k in range(3):
        _cache(client, NOW + k).lookup([cache_digest(1)], compact=True)
    assert _merged(stack, bucket) == []
    for w in range(3, 10):
        _cache(client, NOW - 5000 + w).fill(f"old{w}", {cache_digest(w): {"n": w}})
    for k in range(3):
        found = _cache(client, NOW + k).lookup([cache_digest(1), cache_digest(105)], compact=True)
        assert sorted(found) == [cache_digest(1), cache_digest(105)]
    assert len(_merged(stack, bucket)) == 1
