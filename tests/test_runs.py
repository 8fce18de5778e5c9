"""Runs: shards, attempts and the ledger, advanced one idempotent step at a time."""

from __future__ import annotations

from collections import Counter

import pytest

import vertexbatch as vb
from vertexbatch.emulator import LocalStack

MODEL = "claude-opus-5-5@default"


def _req(i: int, directive: str = "") -> vb.ClaudeRequest:
    return vb.ClaudeRequest(
        f"key-{i}",
        {"max_tokens": 32, "messages": [{"role": "user", "content": f"Task {i} {directive}"}]},
    )


def _settle(stack: LocalStack) -> None:
    """Wait (on the stack's condition, not a clock) until no job is running."""
    for job in stack.jobs():
        if job["state"] in (
            "JOB_STATE_PENDING",
            "JOB_STATE_QUEUED",
            "JOB_STATE_RUNNING",
            "JOB_STATE_CANCELLING",
        ):
            stack.wait_job(job["name"])


def _advance_until_done(stack: LocalStack, run: vb.Run, steps: int = 10) -> vb.RunSummary:
    for _ in range(steps):
        _settle(stack)
        summary = run.advance()
        if summary.done:
            return summary
    raise AssertionError(f"run not done after {steps} steps: {summary}")


def test_run_shards_and_finishes(client: vb.Client, stack: LocalStack) -> None:
    """25 requests with shard size 10 make three jobs; every key ends with one result."""
    run = client.run_claude("shards", MODEL, [_req(i) for i in range(25)], shard_size=10)
    assert [s.keys for s in run.shards] == [10, 10, 5]
    assert len([j for j in stack.jobs() if j["displayName"].startswith("shards.s")]) == 3
    summary = _advance_until_done(stack, run)
    assert summary.outcomes == {"ok": 25} and summary.keys == 25
    results = list(run.results())
    assert sorted(r.key for r in results) == sorted(f"key-{i}" for i in range(25))


def test_retryable_and_dropped_keys_are_resubmitted(client: vb.Client, stack: LocalStack) -> None:
    """Only retryable and missing keys go again; keys failing every attempt end exhausted."""
    requests = [_req(i) for i in range(6)] + [
        _req(6, "[[vb:error 503]]"),
        _req(7, "[[vb:drop]]"),
        _req(8, "[[vb:error 400]]"),
    ]
    run = client.run_claude("retries", MODEL, requests, max_attempts=3)
    summary = _advance_until_done(stack, run)
    assert summary.outcomes == {"ok": 6, "failed": 1, "exhausted": 2}
    attempts = sorted(
        j["displayName"] for j in stack.jobs() if j["displayName"].startswith("retries.")
    )
    assert attempts == ["retries.s0", "retries.s0.r1", "retries.s0.r2"]
    retry_job = client.find("retries.s0.r1")
    assert retry_job is not None and retry_job.keys == 2  # only key-6 and key-7
    outcomes = {r.key: r.outcome for r in run.results()}
    assert outcomes["key-6"] == "retryable" and outcomes["key-7"] == "missing"
    assert outcomes["key-8"] == "failed"
    assert Counter(outcomes.values()) == {"ok": 6, "failed": 1, "retryable": 1, "missing": 1}


def test_latest_attempt_wins(client: vb.Client, stack: LocalStack) -> None:
    """A key that failed once and succeeded on retry reads as its retry's answer."""
    stack.faults.hold(display_name="flaky.s0", state="RUNNING", after_rows=2)
    run = client.run_claude("flaky", MODEL, [_req(i) for i in range(4)])
    job = client.find("flaky.s0")
    assert job is not None
    stack.wait_job(
        job.name, until=lambda j: j.get("completionStats", {}).get("successfulCount") == "2"
    )
    client.cancel(job)  # two rows done, two never run: they are missing
    stack.wait_job(job.name)
    summary = _advance_until_done(stack, run)
    assert summary.outcomes == {"ok": 4}
    retry = client.find("flaky.s0.r1")
    assert retry is not None and retry.keys == 2
    assert Counter(r.outcome for r in run.results()) == {"ok": 4}


def test_open_run_rebuilds_from_gcs(client: vb.Client, stack: LocalStack) -> None:
    """open_run rebuilds the run from its ledger; status changes nothing."""
    client.run_claude("reopen", MODEL, [_req(i) for i in range(3)])
    _settle(stack)
    run = client.open_run("reopen")
    before = len(stack.jobs())
    status = run.status()
    assert status.created == 0 and len(stack.jobs()) == before
    assert run.advance().done
    with pytest.raises(vb.InvalidRequestError, match="no run under id 'never'") as info:
        client.open_run("never")
    assert info.value.field == "run"


def test_same_run_again_rejoins_other_rows_refused(client: vb.Client, stack: LocalStack) -> None:
    """Starting the same run again rejoins it; other rows under the id are refused."""
    first = client.run_claude("again", MODEL, [_req(i) for i in range(3)])
    second = client.run_claude("again", MODEL, [_req(i) for i in range(3)])
    assert second.shards == first.shards
    assert len([j for j in stack.jobs() if j["displayName"].startswith("again.")]) == 1
    with pytest.raises(vb.InvalidRequestError, match="already holds another run"):
        client.run_claude("again", MODEL, [_req(i, "other") for i in range(3)])


def test_run_id_leaves_room_for_suffixes(client: vb.Client) -> None:
    """A run id too long for shard and attempt suffixes is refused up front."""
    with pytest.raises(vb.InvalidRequestError, match="over 52 characters"):
        client.run_claude("r" * 60, MODEL, [_req(0)])


@pytest.mark.parametrize("provider", ["anthropic", "google"])
def test_deadline_fallback_answers_online(
    client: vb.Client, stack: LocalStack, provider: str
) -> None:
    """Past the deadline, jobs PENDING: jobs cancelled, keys answered online, one result each."""
    from datetime import UTC, datetime, timedelta

    run_id = f"late-{provider}"
    stack.faults.hold(display_name=f"{run_id}.s0", state="PENDING")
    stack.reset_calls()
    if provider == "anthropic":
        run = client.run_claude(
            run_id, MODEL, [_req(i) for i in range(5)] + [_req(5, "[[vb:refuse]]")]
        )
    else:
        run = client.run_gemini(
            run_id,
            "gemini-3.8-flash",
            [vb.GeminiRequest(f"key-{i}", f"Task {i}", {"temperature": 0.2}) for i in range(5)]
            + [vb.GeminiRequest("key-5", "x [[vb:refuse]]")],
        )
    before = run.advance(deadline=datetime.now(UTC) + timedelta(hours=1), fallback="online")
    assert not before.done and before.outcomes == {"pending": 6}
    summary = run.advance(deadline=datetime.now(UTC) - timedelta(seconds=1), fallback="online")
    assert summary.done and summary.outcomes == {"ok": 5, "refused": 1}
    job = client.find(f"{run_id}.s0")
    assert job is not None
    assert client.status(job).state in ("JOB_STATE_CANCELLED", "JOB_STATE_CANCELLING")
    online_calls = stack.calls()["rawPredict" if provider == "anthropic" else "generateContent"]
    assert online_calls == 6
    results = {r.key: r for r in run.results()}
    assert sorted(results) == [f"key-{i}" for i in range(6)]
    assert all(results[f"key-{i}"].ok and results[f"key-{i}"].text for i in range(5))
    assert isinstance(results["key-5"].error, vb.RefusedError)
    assert run.advance(deadline=datetime.now(UTC), fallback="online").created == 0
    assert stack.calls()["rawPredict" if provider == "anthropic" else "generateContent"] == 6


def test_run_results_record_each_key_once(stack: LocalStack, bucket: str) -> None:
    """Metrics count one result per key, not one per attempt read."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    reader = InMemoryMetricReader()
    client = stack.client(
        bucket=bucket,
        prefix="t",
        retry=vb.RetryPolicy.no_wait(),
        meter_provider=MeterProvider(metric_readers=[reader]),
    )
    run = client.run_claude("metered", MODEL, [_req(0), _req(1, "[[vb:error 503]]")])
    _advance_until_done(stack, run)
    assert reader.get_metrics_data() is None or not any(
        m.name == "vertexbatch.results"
        for rm in reader.get_metrics_data().resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
    )
    assert len(list(run.results())) == 2
    data = reader.get_metrics_data()
    points = [
        p
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
        if m.name == "vertexbatch.results"
        for p in m.data.data_points
    ]
    assert sorted((p.attributes["vertexbatch.outcome"], p.value) for p in points) == [
        ("ok", 1),
        ("retryable", 1),
    ]
