"""Resubmitting a subset from the staged input, and waiting with a floor and a deadline."""

from __future__ import annotations

import functools
import random
import warnings
from datetime import UTC, datetime, timedelta

import pytest

import vertexbatch as vb
from tests.helpers import claude_request, metered_client
from vertexbatch._rules import next_attempt_id
from vertexbatch._waiting.schedule import poll_delays
from vertexbatch.emulator import LocalStack

MODEL = "claude-opus-5-5@default"


def test_next_attempt_id() -> None:
    """Derived ids count attempts: ID.r1, ID.r2, ...; too long is a clear error."""
    assert next_attempt_id("batch") == "batch.r1"
    assert next_attempt_id("batch.r1") == "batch.r2"
    assert next_attempt_id("a.r9") == "a.r10"
    with pytest.raises(vb.InvalidRequestError, match="over 63 characters"):
        next_attempt_id("x" * 62)


def test_resubmit_default_takes_retryable_and_missing(client: vb.Client, stack: LocalStack) -> None:
    """By default only retryable and missing keys go again, with their original requests."""
    requests = [
        claude_request("ok", "fine"),
        claude_request("busy", "busy [[vb:error 429]]"),
        claude_request("gone", "gone [[vb:drop]]"),
        claude_request("no", "no [[vb:refuse]]"),
        claude_request("bad", "bad [[vb:error 400]]"),
    ]
    job = client.submit_claude("resub", MODEL, requests)
    stack.wait_job(job.name)
    retry = client.resubmit(job)
    assert retry.id == "resub.r1" and retry.keys == 2
    assert client.resubmit(job) == retry  # idempotent, like submit
    stack.wait_job(retry.name)
    outcomes = {r.key: r.outcome for r in client.results(retry)}
    # The directives travel with the staged request: the same outcomes come back.
    assert outcomes == {"busy": "retryable", "gone": "missing"}
    again = client.resubmit(retry)
    assert again.id == "resub.r2"


def test_resubmit_chosen_keys_and_errors(client: vb.Client, stack: LocalStack, bucket: str) -> None:
    """Chosen keys are resubmitted under a chosen id; unknown keys and running jobs are refused."""
    stack.faults.hold(display_name="resub2", state="PENDING")
    job = client.submit_claude(
        "resub2", MODEL, [claude_request(f"k{i}", f"q{i}") for i in range(4)]
    )
    with pytest.raises(vb.InvalidRequestError, match="JOB_STATE_PENDING"):
        client.resubmit(job)
    with pytest.raises(vb.InvalidRequestError, match=r"\['nope'\] are not in job"):
        client.resubmit(job, keys=["k1", "nope"], id="resub2-custom")
    assert not list(stack.storage_client().list_blobs(bucket, prefix="jobs/resub2-custom/"))
    again = client.resubmit(job, keys=["k3", "k1"], id="resub2-custom")
    assert again.id == "resub2-custom" and again.keys == 2
    stack.wait_job(again.name)
    assert sorted(r.key for r in client.results(again)) == ["k1", "k3"]


def test_poll_delays_respect_floor_and_ceiling() -> None:
    """Delays never go below the floor nor above the ceiling, and grow."""
    delays = poll_delays(5.0, 60.0, rng=random.Random(1))
    taken = [next(delays) for _ in range(30)]
    assert taken[0] == 5.0
    assert all(5.0 <= d <= 60.0 for d in taken)
    assert max(taken[-5:]) > 30.0


@pytest.mark.parametrize(
    ("floor", "ceiling", "field"),
    [
        (0, 1, "floor"),
        (-1.0, 1.0, "floor"),
        (float("nan"), 1.0, "floor"),
        (True, 2, "floor"),
        ("5", 60, "floor"),
        (5.0, 4.0, "ceiling"),
        (5.0, float("nan"), "ceiling"),
        (5.0, None, "ceiling"),
    ],
)
def test_poll_delays_refuse_bounds_no_pause_fits(
    floor: object, ceiling: object, field: str
) -> None:
    """Bounds no pause fits are InvalidRequestError naming the bound, at the call, as the
    deadline and timeout are."""
    with pytest.raises(vb.InvalidRequestError, match="floor") as raised:
        poll_delays(floor, ceiling)  # type: ignore[arg-type]
    assert raised.value.field == field


def test_wait_refuses_a_bad_floor_before_polling(client: vb.Client, stack: LocalStack) -> None:
    """A floor of 0 is refused before the first poll, even for a job that is already done."""
    job = client.submit_claude("floor-0", MODEL, [claude_request("a", "x")])
    stack.wait_job(job.name)
    stack.reset_calls()
    with pytest.raises(vb.InvalidRequestError) as raised:
        client.wait(job, floor=0)
    assert raised.value.field == "floor"
    assert stack.calls()["get"] == 0


def test_wait_returns_terminal_status(client: vb.Client, stack: LocalStack) -> None:
    """wait returns the final status, reporting progress on the way."""
    job = client.submit_claude("waited", MODEL, [claude_request("a", "x")])
    seen: list[vb.Status] = []
    status = client.wait(job, floor=0.01, ceiling=0.05, on_progress=seen.append)
    assert status.terminal and status.state == "JOB_STATE_SUCCEEDED"
    assert seen[-1] == status


class FakeTime:
    """A clock that moves only when slept on: waiting without waiting."""

    def __init__(self) -> None:
        self.moment = datetime(2026, 11, 29, tzinfo=UTC)
        self.slept: list[float] = []

    def now(self) -> datetime:
        return self.moment

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.moment += timedelta(seconds=seconds)


def test_wait_on_a_job_that_never_finishes(client: vb.Client, stack: LocalStack) -> None:
    """A job stuck PENDING: wait raises at the deadline with the last status, within the floor."""
    stack.faults.hold(display_name="stuck", state="PENDING")
    job = client.submit_claude("stuck", MODEL, [claude_request("a", "x")])
    clock = FakeTime()
    stack.reset_calls()
    with pytest.raises(vb.WaitTimeout) as info:
        client.wait(job, timeout=3600, floor=5.0, ceiling=120.0, sleep=clock.sleep, now=clock.now)
    assert info.value.status.state == "JOB_STATE_PENDING"
    assert sum(clock.slept) == pytest.approx(3600)
    polls = stack.calls()["get"]
    assert polls == len(clock.slept) + 1
    assert polls <= 3600 / 5.0 + 1
    assert polls < 60  # backoff, not a poll every floor


def test_client_wait_is_vertexbatch_wait(client: vb.Client, stack: LocalStack) -> None:
    """Client.wait polls and pauses exactly as the deprecated vertexbatch.wait does (which
    warns), to the same deadline."""
    stack.faults.hold(display_name="stuck-method", state="PENDING")
    job = client.submit_claude("stuck-method", MODEL, [claude_request("a", "x")])
    slept = []
    for deprecated, wait in ((False, client.wait), (True, functools.partial(vb.wait, client))):
        clock = FakeTime()
        with pytest.raises(vb.WaitTimeout) as info, warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            wait(job, timeout=900, floor=5.0, ceiling=120.0, sleep=clock.sleep, now=clock.now)
        assert [str(w.message) for w in seen if w.category is DeprecationWarning] == (
            ["vertexbatch.wait(client, job) is deprecated: use client.wait(job)"]
            if deprecated
            else []
        )
        assert info.value.status.state == "JOB_STATE_PENDING"
        assert sum(clock.slept) == pytest.approx(900)
        slept.append(len(clock.slept))
    # Each wait draws its own jitter, so the number of pauses differs run to run; both back off.
    assert min(slept) > 3


def test_a_timeout_of_zero_gives_up_at_the_first_poll(client: vb.Client, stack: LocalStack) -> None:
    """``timeout=0`` is a timeout, not none: one poll, no sleep, WaitTimeout."""
    stack.faults.hold(display_name="zero", state="PENDING")
    job = client.submit_claude("zero", MODEL, [claude_request("a", "x")])
    clock = FakeTime()
    with pytest.raises(vb.WaitTimeout):
        client.wait(job, timeout=0, floor=5.0, sleep=clock.sleep, now=clock.now)
    assert clock.slept == []


@pytest.mark.parametrize("timeout", [-1, float("nan"), float("inf"), True, "60"])
def test_a_timeout_that_is_no_number_of_seconds_is_refused(
    client: vb.Client, stack: LocalStack, timeout: object
) -> None:
    stack.faults.hold(display_name="bad-timeout", state="PENDING")
    job = client.submit_claude("bad-timeout", MODEL, [claude_request("a", "x")])
    with pytest.raises(vb.InvalidRequestError, match="timeout must be a number of seconds") as err:
        client.wait(job, timeout=timeout, floor=5.0)  # type: ignore[arg-type]
    assert err.value.field == "timeout"


def test_wait_is_bounded_by_the_job_lifetime(client: vb.Client, stack: LocalStack) -> None:
    """With no deadline, wait still ends: no Vertex job lives past 96 hours."""
    stack.faults.hold(display_name="forever", state="PENDING")
    job = client.submit_claude("forever", MODEL, [claude_request("a", "x")])
    clock = FakeTime()
    created = client.status(job).created
    assert created is not None
    clock.moment = created
    with pytest.raises(vb.WaitTimeout):
        client.wait(job, floor=60.0, ceiling=3600.0, sleep=clock.sleep, now=clock.now)
    assert clock.moment - created == timedelta(hours=96)


def test_wait_refuses_a_job_given_as_the_client(client: vb.Client, stack: LocalStack) -> None:
    """``vb.wait(job, job)`` is InvalidRequestError naming the argument and the right call."""
    job = client.submit_claude("swapped", "claude-opus-5-5@default", [claude_request("k", "hi")])
    with pytest.raises(
        vb.InvalidRequestError, match=r"not Job: call client\.wait\(job\)"
    ) as raised:
        vb.wait(job, job, floor=0.01)  # type: ignore[arg-type]
    assert raised.value.field == "client"
    assert "client must be a vertexbatch.Client" in str(raised.value)
    with pytest.raises(vb.InvalidRequestError, match=r"not Job: use client\.aio"):
        vb.AsyncClient(job)  # type: ignore[arg-type]


def test_resubmit_records_nothing_in_the_metrics(stack: LocalStack, bucket: str) -> None:
    """Reading results, then resubmitting: the counts are those of the one read, not doubled."""
    client, reader = metered_client(stack, bucket, "m")
    requests = [claude_request("ok", "fine"), claude_request("busy", "busy [[vb:error 429]]")]
    job = client.submit_claude("metered", MODEL, requests)
    stack.wait_job(job.name)
    read = list(client.results(job))

    def counted() -> tuple[int, int]:
        data = reader.get_metrics_data()
        metrics = {
            m.name: m for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics
        }
        tokens = sum(p.sum for p in metrics["gen_ai.client.token.usage"].data.data_points)
        results = sum(p.value for p in metrics["vertexbatch.results"].data.data_points)
        return tokens, results

    once = counted()
    assert once == (sum(r.usage.input + r.usage.output for r in read), 2)
    retry = client.resubmit(job)
    assert retry.keys == 1
    assert counted() == once
