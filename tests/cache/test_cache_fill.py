"""Filling the answer cache: best-effort on storage only, and never the same answers twice."""

from __future__ import annotations

import itertools
import logging
from typing import Any

import pytest
from google.api_core import exceptions as api_exceptions

import vertexbatch as vb
from tests.helpers import CLAUDE, claude_request, object_names
from vertexbatch._cache.store import AnswerCache
from vertexbatch.emulator import LocalStack


def _requests(n: int) -> list[vb.ClaudeRequest]:
    return [claude_request(f"k{i}", f"Item {i}.") for i in range(n)]


def _failing_fill(monkeypatch: pytest.MonkeyPatch, error: Exception) -> None:
    def fill_text(self: AnswerCache, writer: str, texts: Any, **kwargs: Any) -> int:
        raise error

    monkeypatch.setattr(AnswerCache, "fill_text", fill_text)


def test_a_bug_in_the_fill_raises(
    client: vb.Client, stack: LocalStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only storage errors are passed over: a bug in the fill (a TypeError) reaches the caller
    instead of a warning that hides it on every pass."""
    job = client.submit_claude("bug", CLAUDE, _requests(2), cache=True)
    stack.wait_job(job.name)
    _failing_fill(monkeypatch, TypeError("unsupported operand"))
    with pytest.raises(TypeError, match="unsupported operand"):
        list(client.results(job))


def test_a_storage_error_in_the_fill_is_logged_with_its_traceback_at_debug(
    client: vb.Client,
    stack: LocalStack,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A 403 on the cache: every result, a warning naming the id, and the traceback at DEBUG."""
    job = client.submit_claude("denied", CLAUDE, _requests(2), cache=True)
    stack.wait_job(job.name)
    _failing_fill(monkeypatch, api_exceptions.Forbidden("no storage.objects.create"))
    with caplog.at_level(logging.DEBUG, logger="vertexbatch"):
        assert sum(r.ok for r in client.results(job)) == 2
    warned = [
        r for r in caplog.records if r.levelno == logging.WARNING and "id denied" in r.msg % r.args
    ]
    traced = [r for r in caplog.records if r.levelno == logging.DEBUG and r.exc_info]
    assert len(warned) == 1 and "Forbidden" in warned[0].getMessage()
    assert len(traced) == 1 and isinstance(traced[0].exc_info[1], api_exceptions.Forbidden)


def test_passes_that_stop_early_write_each_part_once(
    client: vb.Client, stack: LocalStack, bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every answer is a part of its own; three passes stop after four of six answers: the
    parts they write are named alike, so the cache holds four objects, not twelve, and a full
    pass adds the last two."""
    from vertexbatch._cache import fill as _cache_fill

    monkeypatch.setattr(_cache_fill, "FILL_BUFFER", 1)
    ticks = itertools.count(2_000_000_000, 10)  # every write at a later time

    class Ticking(AnswerCache):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs, clock=lambda: next(ticks))

    monkeypatch.setattr(_cache_fill, "AnswerCache", Ticking)
    job = client.submit_claude("parts", CLAUDE, _requests(6), cache=True)
    stack.wait_job(job.name)
    for _ in range(3):
        results = client.results(job)
        for _, _result in zip(range(4), results, strict=False):
            pass
        results.close()
        assert len(object_names(stack, bucket, "jobs/_cache/")) == 4
    assert sum(r.ok for r in client.results(job)) == 6
    assert len(object_names(stack, bucket, "jobs/_cache/")) == 6
    assert client.submit_claude("parts2", CLAUDE, _requests(6), cache=True).name == "cached:parts2"


def test_a_bug_in_a_merge_raises(client: vb.Client, monkeypatch: pytest.MonkeyPatch) -> None:
    """A merge that fails on storage is a warning; one that fails on a bug raises."""
    from vertexbatch._client import cloud_of

    staging = cloud_of(client).staging
    for w in range(9):
        old = AnswerCache(
            staging, "anthropic", CLAUDE, clock=itertools.repeat(1_000.0 + w).__next__
        )
        old.fill(f"w{w}", {f"ab{w:030x}": {"n": w}})

    def write_merged(self: AnswerCache, *args: Any) -> None:
        raise KeyError("a bug")

    monkeypatch.setattr(AnswerCache, "_write_merged", write_merged)
    later = AnswerCache(staging, "anthropic", CLAUDE, clock=lambda: 100_000)
    with pytest.raises(KeyError, match="a bug"):
        later.lookup([f"ab{0:030x}"], compact=True)
