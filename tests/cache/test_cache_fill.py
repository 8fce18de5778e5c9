"""Filling the answer cache: best-effort on storage only, and never the same answers twice."""

from __future__ import annotations

import itertools
import logging
from typing import Any

import pytest
from google.api_core import exceptions as api_exceptions

import vertexbatch as vb
from tests.gcs_gate import body_gate, refusing_writes
from tests.helpers import CLAUDE, claude_requests, local_client, object_names, results_filling
from vertexbatch._cache.store import AnswerCache
from vertexbatch._gcs.staging import Staging
from vertexbatch.emulator import LocalStack


def _requests(n: int) -> list[vb.ClaudeRequest]:
    return claude_requests(n, key="k{i}", text="Item {i}.")


def test_a_bug_in_the_fill_raises(client: vb.Client, stack: LocalStack) -> None:
    """Only storage errors are passed over: a bug in the fill (a TypeError: here its clock
    answers None) reaches the caller instead of a warning that hides it on every pass."""
    job = client.submit_claude("bug", CLAUDE, _requests(2), cache=True)
    stack.wait_job(job.name)
    with pytest.raises(TypeError, match="NoneType"):
        list(results_filling(client, job, clock=lambda: None))


def test_a_storage_error_in_the_fill_is_logged_with_its_traceback_at_debug(
    client: vb.Client, stack: LocalStack, bucket: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A 403 on the cache: every result, a warning naming the id, and the traceback at DEBUG."""
    job = client.submit_claude("denied", CLAUDE, _requests(2), cache=True)
    stack.wait_job(job.name)
    with (
        body_gate(stack.storage_endpoint, refusing_writes("/_cache/")) as url,
        caplog.at_level(logging.DEBUG, logger="vertexbatch"),
    ):
        assert (
            sum(r.ok for r in local_client(stack, bucket, storage_endpoint=url).results(job)) == 2
        )
    warned = [
        r for r in caplog.records if r.levelno == logging.WARNING and "id denied" in r.msg % r.args
    ]
    traced = [r for r in caplog.records if r.levelno == logging.DEBUG and r.exc_info]
    assert len(warned) == 1 and "Forbidden" in warned[0].getMessage()
    assert len(traced) == 1 and isinstance(traced[0].exc_info[1], api_exceptions.Forbidden)


def test_passes_that_stop_early_write_each_part_once(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """Every answer is a part of its own; three passes stop after four of six answers: the
    parts they write are named alike, so the cache holds four objects, not twelve, and a full
    pass adds the last two."""
    ticks = itertools.count(2_000_000_000, 10)  # every write at a later time
    job = client.submit_claude("parts", CLAUDE, _requests(6), cache=True)
    stack.wait_job(job.name)
    for _ in range(3):
        results = results_filling(client, job, limit=1, clock=lambda: next(ticks))
        for _, _result in zip(range(4), results, strict=False):
            pass
        results.close()  # type: ignore[attr-defined]
        assert len(object_names(stack, bucket, "jobs/_cache/")) == 4
    assert sum(r.ok for r in results_filling(client, job, limit=1, clock=lambda: next(ticks))) == 6
    assert len(object_names(stack, bucket, "jobs/_cache/")) == 6
    assert client.submit_claude("parts2", CLAUDE, _requests(6), cache=True).name == "cached:parts2"


class _BuggyMerge(Staging):
    """Staging whose write of a merged object fails as a bug would (not as storage does)."""

    def create(self, name: str, *args: Any, **kwargs: Any) -> Any:
        if "/merged/" in name:
            raise KeyError("a bug")
        return super().create(name, *args, **kwargs)


def test_a_bug_in_a_merge_raises(client: vb.Client, stack: LocalStack, bucket: str) -> None:
    """A merge that fails on storage is a warning; one that fails on a bug raises."""
    staging = Staging(stack.storage_client(), bucket, "jobs", vb.RetryPolicy.no_wait())
    for w in range(9):
        old = AnswerCache(
            staging, "anthropic", CLAUDE, clock=itertools.repeat(1_000.0 + w).__next__
        )
        old.fill(f"w{w}", {f"ab{w:030x}": {"n": w}})
    buggy = _BuggyMerge(stack.storage_client(), bucket, "jobs", vb.RetryPolicy.no_wait())
    later = AnswerCache(buggy, "anthropic", CLAUDE, clock=lambda: 100_000)
    with pytest.raises(KeyError, match="a bug"):
        later.lookup([f"ab{0:030x}"], compact=True)
