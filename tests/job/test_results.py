"""Results against the local stack: every key ends as exactly one outcome, keyed by its key."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

import vertexbatch as vb
from tests.helpers import claude_request, results_by_key
from vertexbatch.emulator import JobOptions, LocalStack

CLAUDE = "claude-opus-5-5@default"
GEMINI = "gemini-3.8-flash"


def _claude(key: str, text: str) -> vb.ClaudeRequest:
    return claude_request(key, text, max_tokens=256)


# What each directive asks for, and what the Result must then say.
CLAUDE_CASES: dict[str, tuple[str, str, str]] = {
    # key: (prompt, outcome, stop)
    "plain": ("Review this function.", "ok", "end_turn"),
    "refused": ("Do it [[vb:refuse category=cyber detail=not_in_scope]]", "refused", "refusal"),
    "truncated": ("Long essay [[vb:truncate]]", "truncated", "max_tokens"),
    "empty": ("Nothing [[vb:empty]]", "retryable", "end_turn"),
    "rate-limited": ("Busy [[vb:error 429]]", "retryable", ""),
    "overloaded": ("Busy [[vb:error 529 shape=error_envelope]]", "retryable", ""),
    "bad-request": ("Bad [[vb:error 400]]", "failed", ""),
    "server": ("Oops [[vb:error 503 shape=status_object]]", "retryable", ""),
    "paused": ("Tools [[vb:finish pause_turn]]", "failed", "pause_turn"),
    "unknown-stop": ("New [[vb:finish brand_new_reason]]", "failed", "brand_new_reason"),
    "thinking": (
        "Think [[vb:think tokens=40]] [[vb:cached 100]] [[vb:cache_write 7]]",
        "ok",
        "end_turn",
    ),
    "dropped": ("Gone [[vb:drop]]", "missing", ""),
}


def test_claude_every_directive(client: vb.Client, stack: LocalStack) -> None:
    """Each Claude directive yields the outcome, stop, text and usage it asks for."""
    job = client.submit_claude(
        "claude-all", CLAUDE, [_claude(k, p) for k, (p, _, _) in CLAUDE_CASES.items()]
    )
    results = results_by_key(stack, client, job)
    assert set(results) == set(CLAUDE_CASES)
    for key, (_, outcome, stop) in CLAUDE_CASES.items():
        r = results[key]
        assert (key, r.outcome, r.stop) == (key, outcome, stop)
    assert (
        results["plain"].text
        and results["plain"].usage.input > 0
        and results["plain"].usage.output > 0
    )
    refused = results["refused"]
    assert isinstance(refused.error, vb.RefusedError) and refused.text == ""
    assert refused.refusal == vb.Refusal(category="cyber", detail="not in scope")
    assert isinstance(results["truncated"].error, vb.TruncatedError) and results["truncated"].text
    for key, code in [
        ("rate-limited", 429),
        ("overloaded", 529),
        ("bad-request", 400),
        ("server", 503),
    ]:
        error = results[key].error
        assert isinstance(error, vb.LineError) and error.code == code, key
        assert vb.is_retryable(error) == (code != 400)
    assert isinstance(results["dropped"].error, vb.MissingError)
    assert not vb.is_retryable(results["dropped"].error)
    thinking = results["thinking"]
    assert thinking.usage.cache_read == 100 and thinking.usage.cache_write == 7
    assert thinking.response is not None
    thought, answer = thinking.response["content"]
    assert (thought["type"], answer["type"]) == ("thinking", "text")
    assert thinking.text == answer["text"]  # the thinking block is not part of the text
    # Missing keys come last, after every line.
    order = [r.key for r in client.results(job)]
    assert order[-1] == "dropped"


GEMINI_CASES: dict[str, tuple[str, str, str]] = {
    "plain": ("Triage this ticket.", "ok", "STOP"),
    "blocked": ("Bad [[vb:refuse block=PROHIBITED_CONTENT]]", "refused", "PROHIBITED_CONTENT"),
    "safety": ("Unsafe [[vb:finish SAFETY]]", "refused", "SAFETY"),
    "unknown-finish": ("New [[vb:finish SOMETHING_NEW]]", "refused", "SOMETHING_NEW"),
    "truncated": ("Long [[vb:truncate]]", "truncated", "MAX_TOKENS"),
    "empty": ("Nothing [[vb:empty]]", "retryable", "STOP"),
    "no-candidates": ("None [[vb:no_candidates]]", "retryable", ""),
    "rate-limited": ("Busy [[vb:error 429]]", "retryable", ""),
    "invalid": ("Bad [[vb:error 400]]", "failed", ""),
    "thinking": ("Think [[vb:think tokens=30]] [[vb:cached 50]]", "ok", "STOP"),
    "dropped": ("Gone [[vb:drop]]", "missing", ""),
}


def _gemini_job(client: vb.Client, submission_id: str) -> vb.Job:
    return client.submit_gemini(
        submission_id, GEMINI, [vb.GeminiRequest(k, p) for k, (p, _, _) in GEMINI_CASES.items()]
    )


def _check_gemini(results: dict[str, vb.Result]) -> None:
    assert set(results) == set(GEMINI_CASES)
    for key, (_, outcome, stop) in GEMINI_CASES.items():
        r = results[key]
        assert (key, r.outcome, r.stop) == (key, outcome, stop)
    assert results["blocked"].refusal is not None
    assert results["blocked"].refusal.category == "PROHIBITED_CONTENT"
    assert results["unknown-finish"].refusal is not None
    assert results["unknown-finish"].text == ""  # no partial content on a refusal
    assert results["truncated"].text
    thinking = results["thinking"]
    plain = results["plain"]
    assert thinking.usage.cache_read == 50
    assert thinking.usage.input >= 50  # Gemini input includes cached tokens
    assert thinking.response is not None
    thought, answer = thinking.response["candidates"][0]["content"]["parts"]
    assert thought["thought"] is True and thinking.text == answer["text"]
    thoughts = thinking.response["usageMetadata"]["thoughtsTokenCount"]
    assert thoughts == 30
    assert (
        thinking.usage.output
        == thinking.response["usageMetadata"]["candidatesTokenCount"] + thoughts
    )
    assert plain.text and plain.usage.output > 0


def test_gemini_every_directive(client: vb.Client, stack: LocalStack) -> None:
    """Each Gemini directive yields the outcome, stop, text and usage it asks for."""
    job = _gemini_job(client, "gemini-all")
    _check_gemini(results_by_key(stack, client, job))


def test_gemini_correlates_without_echoed_labels(client: vb.Client, stack: LocalStack) -> None:
    """With labels not echoed and the echo normalised, every key still finds its row."""
    stack.set_job_options(JobOptions(echo_labels=False), display_name="gemini-nolabels")
    job = _gemini_job(client, "gemini-nolabels")
    _check_gemini(results_by_key(stack, client, job))


@pytest.mark.parametrize(
    ("success", "error"),
    [("string", "status_object"), ("body", "error_envelope"), ("object", "status_string")],
)
def test_claude_row_shapes(client: vb.Client, stack: LocalStack, success: str, error: str) -> None:
    """Every plausible Claude row shape is read the same way."""
    name = f"shape-{success}-{error}".replace("_", "-")
    stack.set_job_options(
        JobOptions(claude_success_shape=success, claude_error_shape=error), display_name=name
    )  # type: ignore[arg-type]
    job = client.submit_claude(
        name,
        CLAUDE,
        [
            _claude("ok", "Hello"),
            _claude("busy", "x [[vb:error 429]]"),
            _claude("no", "y [[vb:refuse]]"),
        ],
    )
    results = results_by_key(stack, client, job)
    assert {k: r.outcome for k, r in results.items()} == {
        "ok": "ok",
        "busy": "retryable",
        "no": "refused",
    }
    assert results["ok"].text


def test_status_through_states(client: vb.Client, stack: LocalStack) -> None:
    """status reports PENDING, then RUNNING with counts, then a terminal state with counts."""
    requests = [_claude(f"k{i}", f"q{i}") for i in range(4)] + [_claude("x", "[[vb:error 400]]")]
    stack.faults.hold(display_name="queued", state="PENDING")
    queued = client.submit_claude("queued", CLAUDE, requests)
    pending = client.status(queued)
    assert (pending.state, pending.terminal, pending.succeeded) == ("JOB_STATE_PENDING", False, -1)
    stack.faults.hold(display_name="states", state="RUNNING", after_rows=2)
    job = client.submit_claude("states", CLAUDE, requests)
    stack.wait_job(
        job.name, until=lambda j: sum(map(int, j.get("completionStats", {}).values())) == 2
    )
    running = client.status(job)
    assert (running.state, running.terminal) == ("JOB_STATE_RUNNING", False)
    assert running.succeeded + running.failed == 2
    stack.faults.release(display_name="states")
    final = stack.wait_job(job.name)
    status = client.status(job)
    assert status.state == final["state"] == "JOB_STATE_SUCCEEDED"
    assert status.terminal and (status.succeeded, status.failed) == (4, 1)


def test_results_of_running_then_cancelled_job(client: vb.Client, stack: LocalStack) -> None:
    """While running, written lines come back; after cancel finished rows stay, the rest missing."""
    stack.faults.hold(display_name="to-cancel", state="RUNNING", after_rows=3)
    job = client.submit_claude("to-cancel", CLAUDE, [_claude(f"k{i}", f"q{i}") for i in range(8)])
    stack.wait_job(
        job.name, until=lambda j: j.get("completionStats", {}).get("successfulCount") == "3"
    )
    running = client.status(job)
    assert running.state == "JOB_STATE_RUNNING" and running.succeeded == 3
    assert not running.terminal
    partial = list(client.results(job))
    assert len(partial) == 3 and all(r.ok for r in partial)
    client.cancel(job)
    stack.wait_job(job.name)
    status = client.status(job)
    assert status.state == "JOB_STATE_CANCELLED" and status.terminal
    final = list(client.results(job))
    assert sorted(r.key for r in final) == sorted(f"k{i}" for i in range(8))
    assert {r.key for r in final if r.ok} == {r.key for r in partial}
    assert [r.outcome for r in final[3:]] == ["missing"] * 5
    assert [r.key for r in final[3:]] == [
        k for k in (f"k{i}" for i in range(8)) if k not in {r.key for r in partial}
    ]
    client.cancel(job)  # already terminal: not an error


def test_unknown_job_raises(client: vb.Client, stack: LocalStack) -> None:
    """A job that does not exist raises JobError from status and results."""
    ghost = vb.Job(
        id="ghost",
        name=f"projects/{stack.project}/locations/{stack.location}/batchPredictionJobs/1",
        provider="google",
        model=GEMINI,
        input_uri="gs://b/ghost/input.jsonl",
        output_prefix="gs://b/ghost/output",
        keys=1,
    )
    with pytest.raises(vb.JobError, match="does not exist"):
        client.status(ghost)
    with pytest.raises(vb.JobError, match="does not exist"):
        list(client.results(ghost))


def test_telemetry(stack: LocalStack, bucket: str) -> None:
    """Each yielded result records tokens and outcome in the GenAI series, with no content."""
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    client = stack.client(
        bucket=bucket, prefix="t", retry=vb.RetryPolicy.no_wait(), meter_provider=provider
    )
    job = client.submit_claude(
        "telemetry",
        CLAUDE,
        [
            _claude("a", "secret prompt one"),
            _claude("b", "two [[vb:refuse]]"),
            _claude("c", "[[vb:drop]]"),
        ],
    )
    results = results_by_key(stack, client, job)
    data = reader.get_metrics_data()
    metrics = {
        m.name: m for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics
    }
    tokens = metrics["gen_ai.client.token.usage"]
    by_type = {p.attributes["gen_ai.token.type"]: p for p in tokens.data.data_points}
    assert by_type["input"].sum == sum(r.usage.input for r in results.values()) > 0
    assert by_type["output"].sum == sum(r.usage.output for r in results.values()) > 0
    for point in tokens.data.data_points:
        assert point.attributes["gen_ai.operation.name"] == "batch_predict"
        assert point.attributes["gen_ai.provider.name"] == "gcp.vertex_ai"
        assert point.attributes["gen_ai.request.model"] == CLAUDE
    outcomes = {
        p.attributes["vertexbatch.outcome"]: p.value
        for p in metrics["vertexbatch.results"].data.data_points
    }
    assert outcomes == {"ok": 1, "refused": 1, "missing": 1}
    everything = repr(data.to_json())
    assert "secret" not in everything and "prompt" not in everything
    list(client.results(job))  # iterating twice records twice
    again = {
        m.name: m
        for rm in reader.get_metrics_data().resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
    }
    assert sum(p.value for p in again["vertexbatch.results"].data.data_points) == 6
