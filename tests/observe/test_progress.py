"""Progress callbacks (``progress=``): counts of the caller's requests and results, at a bounded
rate, never content, against the local stack."""

from __future__ import annotations

import asyncio
import dataclasses
import json

import pytest

import vertexbatch as vb
from tests.helpers import CLAUDE, claude_request, claude_requests, object_names, run_docs_example
from vertexbatch._observe.progress import INTERVAL, Meter
from vertexbatch.emulator import LocalStack


class _Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_meter_calls_at_most_once_per_interval_then_the_end() -> None:
    """Rows within one interval make no call; the first row past it makes one; the end makes
    one more with the final counts, and ``done`` one after that."""
    seen: list[vb.Progress] = []
    clock = _Clock()
    meter = Meter(seen.append, "stage", total_rows=5, clock=clock)
    rows = meter.counted(iter(range(5)), lambda n: 10)
    assert next(rows) == 0 and next(rows) == 1
    assert seen == []
    clock.now += INTERVAL
    assert next(rows) == 2
    assert [(p.rows, p.bytes, p.elapsed) for p in seen] == [(3, 30, pytest.approx(INTERVAL))]
    assert next(rows) == 3  # within the next interval: no call
    assert len(seen) == 1
    assert list(rows) == [4]
    assert [(p.rows, p.done) for p in seen] == [(3, False), (5, False)]
    meter.report(done=True)
    assert seen[-1] == vb.Progress("stage", 5, 50, 5, None, pytest.approx(INTERVAL), True)


def test_meter_never_reports_more_bytes_than_the_total() -> None:
    """A last line without its newline counts one byte more than the file: clamped."""
    seen: list[vb.Progress] = []
    meter = Meter(seen.append, "results", total_rows=1)
    meter.total_bytes = 10
    meter.add_bytes(11)
    meter.report(done=True)
    assert seen[-1].bytes == 10 and seen[-1].total_bytes == 10


def test_progress_is_frozen_counts_only() -> None:
    """The value is frozen and holds counts: nothing of a request fits in it."""
    progress = vb.Progress("results", 1, 2, 3, 4, 0.5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        progress.rows = 2  # type: ignore[misc]
    assert [f.name for f in dataclasses.fields(vb.Progress)] == [
        "phase",
        "rows",
        "bytes",
        "total_rows",
        "total_bytes",
        "elapsed",
        "done",
    ]


def _input_size(stack: LocalStack, job: vb.Job) -> int:
    bucket, name = job.input_uri.removeprefix("gs://").split("/", 1)
    return len(stack.storage_client().bucket(bucket).blob(name).download_as_bytes())


def test_submit_reports_the_requests_and_their_bytes(client: vb.Client, stack: LocalStack) -> None:
    """A list's length is the total; the last call is ``done`` with every row and byte staged."""
    seen: list[vb.Progress] = []
    job = client.submit_claude("p-list", CLAUDE, claude_requests(40), progress=seen.append)
    last = seen[-1]
    assert last.done and last.phase == "stage"
    assert (last.rows, last.total_rows, last.total_bytes) == (40, 40, None)
    assert last.bytes == _input_size(stack, job)
    assert all(not p.done for p in seen[:-1])
    assert [p.rows for p in seen] == sorted(p.rows for p in seen)


def test_a_generator_has_no_total(client: vb.Client) -> None:
    """Requests of unknown number (a generator): ``total_rows`` is None, the rows still count."""
    seen: list[vb.Progress] = []
    client.submit_claude("p-gen", CLAUDE, (r for r in claude_requests(7)), progress=seen.append)
    assert (seen[-1].rows, seen[-1].total_rows, seen[-1].done) == (7, None, True)


def test_under_dedupe_progress_counts_the_callers_requests(client: vb.Client) -> None:
    """20 requests of 10 distinct bodies: 20 rows reported (what the caller submitted), not the
    10 staged lines."""
    requests = [claude_request(f"k{i}", f"body {i % 10}") for i in range(20)]
    seen: list[vb.Progress] = []
    job = client.submit_claude("p-dd", CLAUDE, requests, dedupe=True, progress=seen.append)
    assert job.keys == 20
    assert (seen[-1].rows, seen[-1].total_rows) == (20, 20)


def test_progress_is_no_part_of_the_ids_identity(client: vb.Client) -> None:
    """The same id and rows with and without a callback: the same job, no conflict."""
    first = client.submit_claude("p-same", CLAUDE, claude_requests(3), progress=lambda p: None)
    assert client.submit_claude("p-same", CLAUDE, claude_requests(3)) == first


def test_a_callback_that_raises_stops_the_submit_and_a_retry_succeeds(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """The callback's exception propagates; nothing claims the id (no manifest), so the same
    submission again, without the callback, stages and creates its job."""

    class Stop(Exception):
        pass

    def stop(progress: vb.Progress) -> None:
        raise Stop

    with pytest.raises(Stop):
        client.submit_claude("p-raise", CLAUDE, claude_requests(30), progress=stop)
    assert not [n for n in object_names(stack, bucket, "jobs/p-raise/") if "manifest" in n]
    assert client.find("p-raise") is None
    job = client.submit_claude("p-raise", CLAUDE, claude_requests(30))
    assert job.keys == 30


def test_a_callback_that_is_not_callable_is_refused_before_any_cloud_call(
    counted: tuple[vb.Client, list[str]],
) -> None:
    """``progress=3`` is an InvalidRequestError naming the keyword; nothing reaches GCS."""
    client, seen = counted
    with pytest.raises(vb.InvalidRequestError, match="progress must be a callable") as caught:
        client.submit_claude("p-bad", CLAUDE, claude_requests(2), progress=3)  # type: ignore[typeddict-item]
    assert caught.value.field == "progress"
    with pytest.raises(vb.InvalidRequestError, match="progress must be a callable"):
        client.results(
            vb.Job(
                "x",
                "projects/p/locations/l/batchPredictionJobs/1",
                "anthropic",
                CLAUDE,
                "gs://b/i",
                "gs://b/o",
                1,
            ),
            progress="no",
        )  # type: ignore[arg-type]
    assert seen == []


def test_results_report_keys_and_output_bytes(client: vb.Client, stack: LocalStack) -> None:
    """Results count the job's keys (missing ones too) and the output's bytes of its total."""
    requests = [*claude_requests(9), claude_request("gone", "x [[vb:drop]]")]
    job = client.submit_claude("p-res", CLAUDE, requests)
    stack.wait_job(job.name)
    seen: list[vb.Progress] = []
    results = list(client.results(job, progress=seen.append))
    assert len(results) == 10
    last = seen[-1]
    assert last.done and last.phase == "results"
    assert (last.rows, last.total_rows) == (10, 10)
    assert last.total_bytes is not None and last.total_bytes > 0
    assert last.bytes == last.total_bytes
    assert sum(p.done for p in seen) == 1


def test_a_plan_reports_the_requests_it_reads(client: vb.Client) -> None:
    """``plan_*`` reads every request: phase ``plan``, done once planned."""
    seen: list[vb.Progress] = []
    plan = client.plan_claude("p-plan", CLAUDE, claude_requests(12), progress=seen.append)
    assert plan.requests == 12
    assert (seen[-1].phase, seen[-1].rows, seen[-1].total_rows, seen[-1].done) == (
        "plan",
        12,
        12,
        True,
    )


def test_a_run_reports_its_requests_and_its_results(client: vb.Client, stack: LocalStack) -> None:
    """``run_*`` counts the requests over its shards; ``Run.results`` the run's keys (bytes
    not counted: None)."""
    staged: list[vb.Progress] = []
    run = client.run_claude(
        "p-run", CLAUDE, claude_requests(10), shard_size=4, progress=staged.append
    )
    assert (staged[-1].rows, staged[-1].total_rows, staged[-1].done) == (10, 10, True)
    for shard in run.shards:
        job = client.find(shard.id)
        assert job is not None
        stack.wait_job(job.name)
    run.advance()
    read: list[vb.Progress] = []
    assert len(list(run.results(progress=read.append))) == 10
    assert (read[-1].rows, read[-1].total_rows, read[-1].bytes, read[-1].done) == (
        10,
        10,
        None,
        True,
    )


def test_the_async_twins_take_the_callback(client: vb.Client, stack: LocalStack) -> None:
    """``client.aio.submit_claude`` and ``client.aio.results`` report as the blocking ones do."""
    staged: list[vb.Progress] = []
    read: list[vb.Progress] = []

    async def main() -> int:
        job = await client.aio.submit_claude(
            "p-aio", CLAUDE, claude_requests(5), progress=staged.append
        )
        stack.wait_job(job.name)
        return len([r async for r in client.aio.results(job, progress=read.append)])

    assert asyncio.run(main()) == 5
    assert (staged[-1].rows, staged[-1].done) == (5, True)
    assert (read[-1].rows, read[-1].total_rows, read[-1].done) == (5, 5, True)


def test_a_progress_holds_no_request_content(client: vb.Client) -> None:
    """Every value given to the callback is counts: its repr names no text of a request."""
    seen: list[vb.Progress] = []
    client.submit_claude(
        "p-private", CLAUDE, [claude_request("k", "secret-words")], progress=seen.append
    )
    assert "secret" not in json.dumps([repr(p) for p in seen])


@pytest.mark.timeout(120)
def test_the_docs_example_runs_as_written(stack: LocalStack, bucket: str) -> None:
    """docs/examples/progress.py runs as `python FILE` with the stack's environment and prints
    the two done lines."""
    import re

    stdout = run_docs_example(stack, bucket, "progress.py")
    lines = stdout.splitlines()
    assert [re.sub(r"[0-9.]+s$", "Ns", line) for line in lines] == [
        "stage: 1000 of 1000 in Ns",
        "results: 1000 of 1000 in Ns",
    ]


def test_a_callback_that_raises_stops_a_run_and_the_run_starts_again(client: vb.Client) -> None:
    """A run stopped by its callback mid-staging wrote no ledger; the same run again starts."""

    class Stop(Exception):
        pass

    def stop(progress: vb.Progress) -> None:
        raise Stop

    with pytest.raises(Stop):
        client.run_claude("p-run-raise", CLAUDE, claude_requests(9), shard_size=4, progress=stop)
    run = client.run_claude("p-run-raise", CLAUDE, claude_requests(9), shard_size=4)
    assert run.keys == 9 and len(run.shards) == 3


def test_a_callback_that_raises_stops_a_results_pass(client: vb.Client, stack: LocalStack) -> None:
    """The results iterator raises the callback's exception; a pass without it reads them all."""
    job = client.submit_claude("p-res-raise", CLAUDE, claude_requests(4))
    stack.wait_job(job.name)

    def stop(progress: vb.Progress) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        list(client.results(job, progress=stop))
    assert len(list(client.results(job))) == 4
