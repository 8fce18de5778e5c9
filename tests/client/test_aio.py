"""``client.aio`` against the local stack: the same guarantees, awaited, on one event loop."""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import vertexbatch as vb
from tests.helpers import (
    CLAUDE,
    GEMINI,
    claude_request,
    claude_requests,
    client_with_spans,
    gemini_requests,
    jobs_in,
)
from tests.observe.test_tracing import tree
from vertexbatch import _aio_threads as _aio
from vertexbatch.emulator import LocalStack

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Outcomes(logging.Handler):
    """Collects vertexbatch's log lines about cancelled calls; ``ended`` is set by the last one."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []
        self.ended = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "cancelled" in message:
            self.messages.append(message)
            if "in its thread:" in message:
                self.ended.set()


@pytest.fixture
def outcomes() -> Iterator[Outcomes]:
    handler = Outcomes()
    logger = logging.getLogger("vertexbatch")
    logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.DEBUG)
    yield handler
    logger.setLevel(level)
    logger.removeHandler(handler)


async def test_round_trip(client: vb.Client, stack: LocalStack) -> None:
    """Submit, find, wait, results, resubmit and cancel, awaited, as the sync client does them."""
    aio = client.aio
    assert client.aio is aio
    requests = [claude_request("a", "one"), claude_request("b", "gone [[vb:drop]]")]
    job = await aio.submit_claude("round", CLAUDE, requests)
    assert await aio.submit_claude("round", CLAUDE, requests) == job
    assert await aio.find("round") == job
    assert await aio.find("nothing") is None
    status = await aio.wait(job, floor=0.01, ceiling=0.05)
    assert status.terminal and status == await aio.status(job)
    results = [r async for r in aio.results(job)]

    def seen(results: list[vb.Result]) -> list[tuple[str, str, str]]:
        return [(r.key, r.outcome, r.text) for r in results]

    assert seen(results) == seen(list(client.results(job)))
    assert {r.key: r.outcome for r in results} == {"a": "ok", "b": "missing"}
    again = await aio.resubmit(job)
    assert again.id == "round.r1" and again.keys == 1
    await aio.cancel(again)
    gemini = await aio.submit_gemini("gem", GEMINI, gemini_requests(2))
    assert gemini.provider == "google"


async def test_bad_input_raises_before_any_call(client: vb.Client) -> None:
    """Bad arguments fail as the sync client's do; a bad job fails when results are asked."""
    with pytest.raises(vb.InvalidRequestError, match="id"):
        await client.aio.submit_claude("bad id!", CLAUDE, claude_requests(1))
    with pytest.raises(vb.InvalidRequestError, match="expected a vertexbatch Job"):
        client.aio.results("not a job")  # type: ignore[arg-type]
    with pytest.raises(vb.InvalidRequestError, match="expected a vertexbatch Job"):
        await client.aio.wait("not a job")  # type: ignore[arg-type]
    with pytest.raises(vb.InvalidRequestError, match="expected a vertexbatch Job"):
        client.wait("not a job")  # type: ignore[arg-type]
    job = await client.aio.submit_claude("deadline", CLAUDE, claude_requests(1))
    with pytest.raises(vb.InvalidRequestError, match="timezone"):
        await client.aio.wait(job, deadline=datetime(2030, 1, 1))


async def test_ten_ids_at_once_give_ten_jobs(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """Ten different ids submitted together on one loop give ten jobs."""
    jobs = await asyncio.gather(
        *(client.aio.submit_claude(f"many-{i}", CLAUDE, claude_requests(3)) for i in range(10))
    )
    assert len({job.name for job in jobs}) == 10
    assert len(jobs_in(stack, bucket)) == 10


async def test_six_submits_of_one_id_give_one_job(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """Six concurrent submits of one id and rows give one job, returned to all six; any twin
    a racing create made is cancelled."""
    stack.faults.hold(display_name="same", state="PENDING")  # twins stay live until cancelled
    requests = claude_requests(5)
    jobs = await asyncio.gather(
        *(client.aio.submit_claude("same", CLAUDE, requests) for _ in range(6))
    )
    assert len(set(jobs)) == 1
    cancelled = ("JOB_STATE_CANCELLING", "JOB_STATE_CANCELLED")
    live = [j["name"] for j in jobs_in(stack, bucket) if j["state"] not in cancelled]
    assert live == [jobs[0].name]


@pytest.mark.parametrize("when", ["before", "after"])
async def test_cancel_during_submit(
    client: vb.Client, stack: LocalStack, bucket: str, outcomes: Outcomes, when: str
) -> None:
    """A submit cancelled while its create is held goes on in its thread and says so; the
    next submit of the same id and rows completes with one job."""
    requests = claude_requests(4)
    stack.faults.block("create", when=when)  # type: ignore[arg-type]
    task = asyncio.ensure_future(client.aio.submit_claude("cancelled", CLAUDE, requests))
    await asyncio.to_thread(stack.faults.wait_blocked, "create")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert any("goes on in its thread" in m for m in outcomes.messages)
    # "after": the job exists and the held call is answered 503, as if its response were lost.
    await asyncio.to_thread(stack.faults.unblock, "create", drop=when == "after")
    assert await asyncio.to_thread(outcomes.ended.wait, 30)
    assert "finished in its thread: job projects/" in outcomes.messages[-1]

    job = await client.aio.submit_claude("cancelled", CLAUDE, requests)
    assert await client.aio.find("cancelled") == job
    stack.settle()
    (only,) = jobs_in(stack, bucket)
    assert only["name"] == job.name


async def test_cancel_reports_a_failure_in_the_thread(
    client: vb.Client, stack: LocalStack, outcomes: Outcomes
) -> None:
    """A cancelled call that then fails in its thread logs the error's type, not nothing."""
    job = await client.aio.submit_claude("held", CLAUDE, claude_requests(1))
    stack.faults.block("get")
    task = asyncio.ensure_future(client.aio.status(job))
    await asyncio.to_thread(stack.faults.wait_blocked, "get")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    stack.faults.fail("get", status=404)  # the retry of the dropped call: the job is gone
    await asyncio.to_thread(stack.faults.unblock, "get", drop=True)
    assert await asyncio.to_thread(outcomes.ended.wait, 30)
    assert "failed in its thread: JobError" in outcomes.messages[-1]


async def test_wait_keeps_the_loop_free(client: vb.Client, stack: LocalStack) -> None:
    """wait pauses with asyncio.sleep: other coroutines run; its deadline rule holds."""
    stack.faults.hold("waiting", "RUNNING")
    job = await client.aio.submit_claude("waiting", CLAUDE, claude_requests(1))
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.005)
            ticks += 1

    ticker = asyncio.ensure_future(tick())
    seen: list[vb.Status] = []
    try:
        with pytest.raises(vb.WaitTimeout) as raised:
            await client.aio.wait(
                job, timeout=0.3, floor=0.02, ceiling=0.05, on_progress=seen.append
            )
    finally:
        ticker.cancel()
    assert raised.value.status is not None and raised.value.status.state == "JOB_STATE_RUNNING"
    assert len(seen) >= 2 and ticks >= 10
    stack.faults.release("waiting")


def _parameters(function: object, skip: str) -> list[tuple[str, object, object]]:
    """A callable's parameters as (name, kind, default), without the leading ``skip``."""
    found = list(inspect.signature(function).parameters.values())  # type: ignore[arg-type]
    assert found[0].name == skip
    return [(p.name, p.kind, p.default) for p in found[1:]]


def test_sync_and_async_wait_take_the_same_parameters() -> None:
    """Client.wait, AsyncClient.wait and vertexbatch.wait take the same parameters: names,
    kinds and defaults."""
    sync = _parameters(vb.Client.wait, "self")
    assert [name for name, _, _ in sync] == [
        "job",
        "deadline",
        "timeout",
        "floor",
        "ceiling",
        "on_progress",
        "sleep",
        "now",
    ]
    assert _parameters(vb.AsyncClient.wait, "self") == sync
    assert _parameters(vb.wait, "client") == sync


async def test_wait_pauses_with_the_sleep_it_is_given(client: vb.Client, stack: LocalStack) -> None:
    """AsyncClient.wait awaits an injected sleep and reads an injected clock, as Client.wait."""
    stack.faults.hold("fake-clock", "PENDING")
    job = await client.aio.submit_claude("fake-clock", CLAUDE, claude_requests(1))
    moment = datetime(2026, 11, 29, tzinfo=UTC)
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        nonlocal moment
        slept.append(seconds)
        moment += timedelta(seconds=seconds)

    with pytest.raises(vb.WaitTimeout):
        await client.aio.wait(job, timeout=600, floor=5.0, sleep=sleep, now=lambda: moment)
    assert sum(slept) == pytest.approx(600) and slept[0] == 5.0
    stack.faults.release("fake-clock")


async def test_results_stream_a_few_chunks_ahead() -> None:
    """A stream reads a bounded number of results ahead, and closing it closes the iterator."""
    pulled = 0
    closed = threading.Event()

    def items() -> Iterator[int]:
        nonlocal pulled
        try:
            for i in range(100_000):
                pulled += 1
                yield i
        finally:
            closed.set()

    stream = _aio.ResultStream("test", items())
    assert [await anext(stream) for _ in range(3)] == [0, 1, 2]
    producer = stream._producer
    assert producer is not None
    # Wait until the thread stops reading (every slot taken), not for a while: unbounded, it
    # would never park, and would run through all 100,000 items.
    assert await asyncio.to_thread(producer.parked.wait, 30), f"never parked; pulled {pulled}"
    assert pulled <= _aio.CHUNK * (_aio.SLOTS + 2)
    await stream.aclose()
    assert await asyncio.to_thread(closed.wait, 10)
    assert pulled < 100_000
    with pytest.raises(StopAsyncIteration):
        await anext(stream)


def _counting_up(closed: threading.Event) -> Iterator[int]:
    """A long blocking iterator that sets ``closed`` once it is closed (or ends)."""
    try:
        yield from range(100_000)
    finally:
        closed.set()


async def test_breaking_out_and_dropping_the_stream_stops_it() -> None:
    """``break`` out of ``async for``, then the stream dropped: the thread closes the iterator."""
    closed = threading.Event()
    stream = _aio.ResultStream("test", _counting_up(closed))
    async for item in stream:
        assert item == 0
        break
    del stream
    assert await asyncio.to_thread(closed.wait, 10)


async def test_a_break_alone_leaves_a_held_stream_parked_until_aclose() -> None:
    """docs/asyncio.md: ``break`` with the stream still held stops nothing; ``aclose`` does."""
    closed = threading.Event()
    stream = _aio.ResultStream("test", _counting_up(closed))
    async for item in stream:
        assert item == 0
        break
    producer = stream._producer
    assert producer is not None
    assert await asyncio.to_thread(producer.parked.wait, 30)
    assert not closed.is_set()  # parked, still open: the thread waits for a slot
    await stream.aclose()
    assert await asyncio.to_thread(closed.wait, 10)


async def test_results_stream_raises_the_iterators_error() -> None:
    """An error of the blocking iterator is raised by the async one, after what came before."""

    def items() -> Iterator[int]:
        yield 1
        raise vb.JobError("output is gone", job="j")

    stream = _aio.ResultStream("test", items())
    assert await anext(stream) == 1
    with pytest.raises(vb.JobError, match="gone"):
        await anext(stream)


def _slow(n: int, gate: threading.Event) -> Iterator[int]:
    """``n`` items, each once ``gate`` is set (the reader waits in between)."""
    for i in range(n):
        gate.wait(10)
        yield i


async def test_aclose_from_another_task_ends_a_readers_wait() -> None:
    """A task waits in ``async for`` for the next chunk; another task closes the stream (an
    ``async with`` block left): the reader's iteration ends, it does not wait for ever."""
    gate = threading.Event()
    stream = _aio.ResultStream("test", _slow(3, gate))
    got: list[int] = []

    async def reader() -> None:
        async for item in stream:
            got.append(item)

    task = asyncio.ensure_future(reader())
    await _until_a_task_awaits(stream)
    assert not task.done()
    await stream.aclose()
    await asyncio.wait_for(task, 5)
    gate.set()  # let the thread run to its end
    assert got == []


async def test_a_second_task_reading_one_stream_is_refused() -> None:
    """One stream, one reader: a second task's ``anext`` while the first waits is a
    RuntimeError naming the stream (it would wait for ever once the first took the end); the
    first reader gets every item."""
    gate = threading.Event()
    stream = _aio.ResultStream("results of job j", _slow(5, gate))
    first = asyncio.ensure_future(_all(stream))
    await _until_a_task_awaits(stream)
    with pytest.raises(RuntimeError, match="results of job j is being read by another task"):
        await asyncio.wait_for(anext(stream), 5)
    gate.set()
    assert await asyncio.wait_for(first, 5) == [0, 1, 2, 3, 4]


async def _until_a_task_awaits(stream: _aio.ResultStream[int]) -> None:
    """Yield to the loop until a task awaits the stream's next chunk (no timed sleep)."""
    for _ in range(10_000):
        if stream._reading:
            return
        await asyncio.sleep(0)
    raise AssertionError("no task came to await the stream")


async def _all(stream: AsyncIterator[int]) -> list[int]:
    return [item async for item in stream]


async def test_leaving_a_pass_early_then_reading_again(
    client: vb.Client, stack: LocalStack
) -> None:
    """A pass left early (``async with`` closes it) leaves the next pass whole."""
    job = await client.aio.submit_claude("early", CLAUDE, claude_requests(600))
    stack.wait_job(job.name)
    async with client.aio.results(job) as stream:
        async for result in stream:
            assert result.outcome == "ok"
            break
    count = sum([1 async for _ in client.aio.results(job)])
    assert count == 600


async def test_runs(client: vb.Client, stack: LocalStack) -> None:
    """run_claude, advance and results, awaited; open_run rejoins the same run."""
    run = await client.aio.run_claude("arun", CLAUDE, claude_requests(5), shard_size=2)
    assert run.keys == 5
    stack.settle()
    summary = await run.advance()
    assert summary.done, summary
    again = await client.aio.open_run("arun")
    assert (await again.status()).done
    keys = sorted([r.key async for r in again.results()])
    assert keys == sorted(f"key-{i}" for i in range(5))
    outcomes = {k.outcome async for k in again.key_results()}
    assert outcomes == {"ok"}


async def test_async_calls_give_the_same_spans(stack: LocalStack, bucket: str) -> None:
    """An awaited submit and results pass record the same span tree as the sync calls."""
    exporter = InMemorySpanExporter()
    client = client_with_spans(stack, bucket, exporter)
    job = await client.aio.submit_claude("spans-a", CLAUDE, claude_requests(2))
    stack.wait_job(job.name)
    await client.aio.wait(job, floor=0.01, ceiling=0.05)
    assert len([r async for r in client.aio.results(job)]) == 2
    async_tree = tree(exporter.get_finished_spans())
    exporter.clear()
    job = client.submit_claude("spans-s", CLAUDE, claude_requests(2))
    stack.wait_job(job.name)
    client.wait(job, floor=0.01, ceiling=0.05)
    assert len(list(client.results(job))) == 2
    assert async_tree == tree(exporter.get_finished_spans())
    assert [name for name, _ in async_tree] == [
        "vertexbatch.submit",
        "vertexbatch.wait",
        "vertexbatch.results",
    ]
    assert async_tree[1][1] == ["vertexbatch.status"]


def test_deadline_type_is_checked_without_a_loop(client: vb.Client) -> None:
    """The async wait checks its deadline as the sync one does (a timezone is required)."""
    job = vb.Job(
        id="x",
        name="projects/p/locations/l/batchPredictionJobs/1",
        provider="anthropic",
        model=CLAUDE,
        input_uri="gs://b/x/input.jsonl",
        output_prefix="gs://b/x/output",
        keys=1,
    )
    with pytest.raises(vb.InvalidRequestError, match="timezone"):
        asyncio.run(client.aio.wait(job, deadline=datetime.now() + timedelta(hours=1)))


async def test_dedupe_cache_and_plans_pass_through(client: vb.Client, stack: LocalStack) -> None:
    """``dedupe``, ``cache`` and the plans reach the blocking core unchanged."""
    aio = client.aio
    requests = [claude_request("a", "same"), claude_request("b", "same")]
    plan = await aio.plan_claude("aio-pay", CLAUDE, requests, dedupe=True, cache=True)
    assert (plan.requests, plan.distinct, plan.to_send, plan.jobs) == (2, 1, 1, 1)
    job = await aio.submit_claude("aio-pay", CLAUDE, requests, dedupe=True, cache=True)
    await aio.wait(job, floor=0.01, ceiling=0.05)
    results = {r.key: r async for r in aio.results(job)}  # a cache=True pass fills the cache
    assert [results[k].shared for k in ("a", "b")] == [False, True]
    again = await aio.plan_gemini("aio-pay-g", GEMINI, gemini_requests(2), dedupe=True)
    assert again.requests == 2
    answered = await aio.submit_claude("aio-pay-2", CLAUDE, requests, cache=True)
    assert answered.name == "cached:aio-pay-2"
    run = await aio.run_claude("aio-pay-run", CLAUDE, requests, dedupe=True, cache=True)
    assert [r.cached async for r in run.results()] == [True, True]
