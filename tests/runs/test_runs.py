"""Runs: shards, attempts and the ledger, advanced one idempotent step at a time."""

from __future__ import annotations

from collections import Counter
from email.message import Message

import pytest

import vertexbatch as vb
from tests.gcs_gate import Spoil, body_gate
from tests.helpers import advance_until_done, jobs_in, local_client, metered_client, task
from vertexbatch.emulator import LocalStack

MODEL = "claude-opus-5-5@default"


def test_run_shards_and_finishes(client: vb.Client, stack: LocalStack) -> None:
    """25 requests with shard size 10 make three jobs; every key ends with one result."""
    run = client.run_claude("shards", MODEL, [task(i) for i in range(25)], shard_size=10)
    assert [s.keys for s in run.shards] == [10, 10, 5]
    assert len(jobs_in(stack, client.bucket)) == 3
    summary = advance_until_done(stack, run)
    assert summary.outcomes == {"ok": 25} and summary.keys == 25
    results = list(run.results())
    assert sorted(r.key for r in results) == sorted(f"key-{i}" for i in range(25))


def test_retryable_and_dropped_keys_are_resubmitted(client: vb.Client, stack: LocalStack) -> None:
    """Only retryable and missing keys go again; keys failing every attempt end exhausted."""
    requests = [task(i) for i in range(6)] + [
        task(6, "[[vb:error 503]]"),
        task(7, "[[vb:drop]]"),
        task(8, "[[vb:error 400]]"),
    ]
    run = client.run_claude("retries", MODEL, requests, max_attempts=3)
    summary = advance_until_done(stack, run)
    assert summary.outcomes == {"ok": 6, "failed": 1, "exhausted": 2}
    attempts = sorted(j["displayName"] for j in jobs_in(stack, client.bucket))
    assert attempts == ["retries.s0", "retries.s0.r1", "retries.s0.r2"]
    retry_job = client.find("retries.s0.r1")
    assert retry_job is not None and retry_job.keys == 2  # only key-6 and key-7
    results = {r.key: r for r in run.results()}
    outcomes = {key: r.outcome for key, r in results.items()}
    lasts = {k: getattr(results[k].error, "last", None) for k in ("key-6", "key-7")}
    assert outcomes["key-6"] == outcomes["key-7"] == "exhausted"
    assert isinstance(lasts["key-6"], vb.LineError) and lasts["key-6"].transient
    assert isinstance(lasts["key-7"], vb.MissingError)
    assert outcomes["key-8"] == "failed"
    assert Counter(outcomes.values()) == {"ok": 6, "failed": 1, "exhausted": 2}


def test_latest_attempt_wins(client: vb.Client, stack: LocalStack) -> None:
    """A key that failed once and succeeded on retry reads as its retry's answer."""
    stack.faults.hold(display_name="flaky.s0", state="RUNNING", after_rows=2)
    run = client.run_claude("flaky", MODEL, [task(i) for i in range(4)])
    job = client.find("flaky.s0")
    assert job is not None
    stack.wait_job(
        job.name, until=lambda j: j.get("completionStats", {}).get("successfulCount") == "2"
    )
    client.cancel(job)  # two rows done, two never run: they are missing
    stack.wait_job(job.name)
    summary = advance_until_done(stack, run)
    assert summary.outcomes == {"ok": 4}
    retry = client.find("flaky.s0.r1")
    assert retry is not None and retry.keys == 2
    assert Counter(r.outcome for r in run.results()) == {"ok": 4}


def test_open_run_rebuilds_from_gcs(client: vb.Client, stack: LocalStack) -> None:
    """open_run rebuilds the run from its ledger; status changes nothing."""
    client.run_claude("reopen", MODEL, [task(i) for i in range(3)])
    stack.settle()
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
    first = client.run_claude("again", MODEL, [task(i) for i in range(3)])
    second = client.run_claude("again", MODEL, [task(i) for i in range(3)])
    assert second.shards == first.shards
    assert len(jobs_in(stack, client.bucket)) == 1
    with pytest.raises(vb.InvalidRequestError, match="already holds another run"):
        client.run_claude("again", MODEL, [task(i, "other") for i in range(3)])


def test_run_id_leaves_room_for_suffixes(client: vb.Client) -> None:
    """A run id too long for shard and attempt suffixes is refused up front."""
    with pytest.raises(vb.InvalidRequestError, match="over 52 characters"):
        client.run_claude("r" * 60, MODEL, [task(0)])


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
            run_id, MODEL, [task(i) for i in range(5)] + [task(5, "[[vb:refuse]]")]
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
    assert stack.wait_job(job.name)["state"] == "JOB_STATE_CANCELLED"
    online_calls = stack.calls()["rawPredict" if provider == "anthropic" else "generateContent"]
    assert online_calls == 6
    results = {r.key: r for r in run.results()}
    assert sorted(results) == [f"key-{i}" for i in range(6)]
    assert all(results[f"key-{i}"].ok and results[f"key-{i}"].text for i in range(5))
    assert isinstance(results["key-5"].error, vb.RefusedError)
    assert run.advance(deadline=datetime.now(UTC), fallback="online").created == 0
    assert stack.calls()["rawPredict" if provider == "anthropic" else "generateContent"] == 6


def test_deadline_fallback_answers_a_deduplicated_line_once_for_its_keys(
    client: vb.Client, stack: LocalStack
) -> None:
    """A dedupe=True shard past its deadline: the shared line is answered online once and both
    its keys take the answer; later steps call nothing more."""
    from datetime import UTC, datetime, timedelta

    stack.faults.hold(display_name="late-dd.s0", state="PENDING")
    requests = [task(0), vb.ClaudeRequest("twin", task(0).params), task(1)]
    run = client.run_claude("late-dd", MODEL, requests, dedupe=True)
    stack.reset_calls()
    past = datetime.now(UTC) - timedelta(seconds=1)
    summary = run.advance(deadline=past, fallback="online")
    assert summary.done and summary.outcomes == {"ok": 3}
    assert stack.calls()["rawPredict"] == 2  # two distinct requests
    results = {r.key: r for r in run.results()}
    assert sorted(results) == ["key-0", "key-1", "twin"]
    assert results["twin"].text == results["key-0"].text and results["twin"].ok
    run.advance(deadline=past, fallback="online")
    assert stack.calls()["rawPredict"] == 2


def test_past_the_deadline_a_shard_never_created_is_finished_exhausted(
    client: vb.Client, stack: LocalStack
) -> None:
    """Five shards, four live at most: the fifth is staged but has no job when the deadline
    passes. With no fallback the run still ends, that shard's key exhausted, every key once."""
    from datetime import UTC, datetime, timedelta

    run = client.run_claude("late5", MODEL, [task(i) for i in range(5)], shard_size=1)
    past = datetime.now(UTC) - timedelta(seconds=1)
    for _ in range(3):
        stack.settle()
        summary = run.advance(deadline=past)
    assert summary.done and summary.outcomes == {"ok": 4, "exhausted": 1}
    assert client.find("late5.s4") is None  # never created
    results = {r.key: r for r in run.results()}
    assert sorted(results) == [f"key-{i}" for i in range(5)]
    error = results["key-4"].error
    assert isinstance(error, vb.ExhaustedError) and isinstance(error.last, vb.MissingError)
    assert "deadline passed before" in str(error.last)
    outcomes = {k.result.key: k.outcome for k in run.key_results()}
    assert outcomes["key-4"] == "exhausted" and list(outcomes.values()).count("ok") == 4


def _race_online_with_a_finisher(
    client: vb.Client, stack: LocalStack, run_id: str
) -> tuple[vb.Run, dict[str, object]]:
    """Both keys of a one-attempt shard missing (its job fails); step B, past the deadline, is
    answering them online when step A (another scheduler, no deadline) finishes the shard from
    its attempt: done.json says exhausted. Then B goes on. B's summary (or error) is returned."""
    import threading
    from datetime import UTC, datetime, timedelta

    stack.faults.fail_job(display_name=f"{run_id}.s0")
    run = client.run_claude(run_id, MODEL, [task(0), task(1)], max_attempts=1)
    stack.settle()
    stack.faults.block("rawPredict", times=2)
    out: dict[str, object] = {}

    def late() -> None:
        try:
            out["b"] = run.advance(
                deadline=datetime.now(UTC) - timedelta(seconds=1),
                fallback="online",
                online_concurrency=2,
            )
        except BaseException as exc:  # reported by the caller's assertions (a kill, too)
            out["b"] = exc

    b = threading.Thread(target=late)
    b.start()
    stack.faults.wait_blocked("rawPredict", count=1)
    a = client.open_run(run_id).advance()
    assert a.done and a.outcomes == {"exhausted": 2}
    stack.faults.unblock("rawPredict")
    b.join(60)
    return run, out


def test_online_answers_written_after_another_step_finished_the_shard_are_its_outcome(
    client: vb.Client, stack: LocalStack
) -> None:
    """The online step records the shard again with its answers: status, key results and
    results agree (both keys ok), and so does the online step's own summary."""
    run, out = _race_online_with_a_finisher(client, stack, "race")
    assert isinstance(out["b"], vb.RunSummary) and out["b"].outcomes == {"ok": 2}
    assert run.status().outcomes == {"ok": 2}
    assert Counter(k.outcome for k in run.key_results()) == {"ok": 2}
    assert sorted(r.key for r in run.results() if r.ok) == ["key-0", "key-1"]


def test_online_answers_of_a_step_that_died_before_recording_them_are_not_read(
    stack: LocalStack, bucket: str
) -> None:
    """The online step dies after writing online.jsonl, before recording the shard again (GCS
    refuses its record's write, as a killed step never makes it): the record another step
    made from the attempt stands, and results agree with it."""
    from google.api_core import exceptions as api_exceptions

    def refuse_the_online_record(
        method: str, path: str, headers: Message, body: bytes
    ) -> Spoil | None:
        writes_record = method == "POST" and b"race-died.s0/done.json" in body
        return Spoil(status=403) if writes_record and b'"online": true' in body else None

    with body_gate(stack.storage_endpoint, refuse_the_online_record) as url:
        client = local_client(stack, bucket, storage_endpoint=url)
        run, out = _race_online_with_a_finisher(client, stack, "race-died")
        assert isinstance(out["b"], api_exceptions.Forbidden)
        assert run.status().outcomes == {"exhausted": 2}
        assert Counter(k.outcome for k in run.key_results()) == {"exhausted": 2}
        assert [r.outcome for r in run.results()] == ["exhausted", "exhausted"]


def test_run_results_record_each_key_once(stack: LocalStack, bucket: str) -> None:
    """Metrics count one result per key, not one per attempt read."""
    client, reader = metered_client(stack, bucket, "t")
    run = client.run_claude("metered", MODEL, [task(0), task(1, "[[vb:error 503]]")])

    def counted() -> list[tuple[str, int]]:
        data = reader.get_metrics_data()  # None before anything is recorded
        return sorted(
            (p.attributes["vertexbatch.outcome"], p.value)
            for rm in (data.resource_metrics if data is not None else [])
            for sm in rm.scope_metrics
            for m in sm.metrics
            if m.name == "vertexbatch.results"
            for p in m.data.data_points
        )

    advance_until_done(stack, run)
    assert counted() == []  # advancing reads every attempt's results without counting them
    assert len(list(run.results())) == 2
    assert counted() == [("exhausted", 1), ("ok", 1)]
