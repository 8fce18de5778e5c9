"""Traces: one span per public operation, steps nested under it, and no request text anywhere."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

import vertexbatch as vb
from tests.helpers import CLAUDE, claude_request, client_with_spans
from vertexbatch.emulator import LocalStack


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def traced(stack: LocalStack, bucket: str, exporter: InMemorySpanExporter) -> vb.Client:
    """A client on the stack whose spans go to ``exporter``."""
    return client_with_spans(stack, bucket, exporter)


def tree(spans: tuple[ReadableSpan, ...]) -> list[tuple[str, list[str]]]:
    """Each root span's name with its children's names, in start order."""
    children: dict[int, list[ReadableSpan]] = {}
    for span in spans:
        if span.parent is not None:
            children.setdefault(span.parent.span_id, []).append(span)
    roots = [s for s in spans if s.parent is None]

    def names(span: ReadableSpan) -> list[str]:
        below = sorted(children.get(span.context.span_id, []), key=lambda s: s.start_time or 0)
        return [n for child in below for n in [child.name, *names(child)]]

    return [(root.name, names(root)) for root in sorted(roots, key=lambda s: s.start_time or 0)]


def strings_of(spans: tuple[ReadableSpan, ...]) -> Iterator[str]:
    """Every name, attribute key and value, event name and event attribute of the spans."""
    for span in spans:
        yield span.name
        yield span.status.description or ""
        for key, value in (span.attributes or {}).items():
            yield key
            yield str(value)
        for event in span.events:
            yield event.name
            for key, value in (event.attributes or {}).items():
                yield key
                yield str(value)


def test_submit_span_tree(
    traced: vb.Client, stack: LocalStack, exporter: InMemorySpanExporter
) -> None:
    """A submit is one span with stage, list, create, record and cancel-twins steps under it."""
    job = traced.submit_claude("tree", CLAUDE, [claude_request("a", "hello")])
    spans = exporter.get_finished_spans()
    assert tree(spans) == [
        (
            "vertexbatch.submit",
            [
                "vertexbatch.stage",
                "vertexbatch.list",
                "vertexbatch.create",
                "vertexbatch.record",
                "vertexbatch.cancel_twins",
            ],
        )
    ]
    (submit,) = [s for s in spans if s.name == "vertexbatch.submit"]
    assert submit.attributes is not None
    assert dict(submit.attributes) == {
        "gen_ai.operation.name": "batch_predict",
        "gen_ai.provider.name": "gcp.vertex_ai",
        "cloud.provider": "gcp",
        "cloud.region": stack.location,
        "gen_ai.request.model": CLAUDE,
        "vertexbatch.submission.id": "tree",
        "vertexbatch.job.name": job.name,
        "vertexbatch.job.keys": 1,
    }
    (stage,) = [s for s in spans if s.name == "vertexbatch.stage"]
    assert stage.attributes is not None and stage.attributes["vertexbatch.requests"] == 1
    assert all(s.status.status_code is StatusCode.UNSET for s in spans)

    exporter.clear()
    assert traced.submit_claude("tree", CLAUDE, [claude_request("a", "hello")]) == job
    assert tree(exporter.get_finished_spans()) == [
        ("vertexbatch.submit", ["vertexbatch.stage", "vertexbatch.cancel_twins"])
    ]


def test_no_request_text_reaches_a_span(
    traced: vb.Client, stack: LocalStack, exporter: InMemorySpanExporter
) -> None:
    """Every operation's spans, errors included, carry no request text."""
    marker = f"secret-{uuid.uuid4().hex}"
    requests = [
        claude_request("ok", f"{marker} plain"),
        claude_request("refused", f"{marker} [[vb:refuse]]"),
        claude_request("retry", f"{marker} [[vb:error 429]]"),
        claude_request("gone", f"{marker} [[vb:drop]]"),
    ]
    job = traced.submit_claude("marker", CLAUDE, requests)
    with pytest.raises(vb.InvalidRequestError):  # other rows under the same id
        traced.submit_claude("marker", CLAUDE, [claude_request("ok", f"{marker} changed")])
    assert traced.find("marker") == job
    traced.wait(job, floor=0.01, ceiling=0.05)
    outcomes = {r.key: r.outcome for r in traced.results(job)}
    assert outcomes == {"ok": "ok", "refused": "refused", "retry": "retryable", "gone": "missing"}
    again = traced.resubmit(job)
    traced.cancel(again)
    run = traced.run_claude("marker-run", CLAUDE, requests, shard_size=2)
    run.advance()
    stack.settle()
    run.advance(deadline=datetime.now(UTC) - timedelta(seconds=1), fallback="online")
    assert len(list(run.results())) == 4
    plan = traced.plan_claude("marker-plan", CLAUDE, requests, cache=True, count_tokens=True)
    assert plan.requests == 4
    cached = traced.submit_claude("marker-cached", CLAUDE, requests, dedupe=True, cache=True)
    traced.wait(cached, floor=0.01, ceiling=0.05)
    assert len(list(traced.results(cached))) == 4

    spans = exporter.get_finished_spans()
    names = {s.name for s in spans}
    for name in (
        "submit",
        "find",
        "status",
        "wait",
        "results",
        "resubmit",
        "cancel",
        "run.start",
        "run.advance",
        "run.results",
        "online_fallback",
        "plan",
    ):
        assert f"vertexbatch.{name}" in names
    assert not [text for text in strings_of(spans) if marker in text or "plain" in text]


def test_results_span_counts_outcomes(
    traced: vb.Client, stack: LocalStack, exporter: InMemorySpanExporter
) -> None:
    """A results pass is one span, with the count of each outcome set when it ends."""
    job = traced.submit_claude(
        "counts",
        CLAUDE,
        [
            claude_request("a", "one"),
            claude_request("b", "two"),
            claude_request("c", "[[vb:drop]]"),
        ],
    )
    stack.wait_job(job.name)
    exporter.clear()
    assert len(list(traced.results(job))) == 3
    (span,) = exporter.get_finished_spans()
    assert span.name == "vertexbatch.results"
    assert span.attributes is not None
    assert span.attributes["vertexbatch.results.ok"] == 2
    assert span.attributes["vertexbatch.results.missing"] == 1
    assert span.attributes["vertexbatch.results"] == 3
    assert span.attributes["vertexbatch.results.complete"] is True
    assert span.attributes["vertexbatch.job.name"] == job.name

    exporter.clear()
    stream = traced.results(job)
    next(stream)
    stream.close()  # type: ignore[attr-defined]
    (span,) = exporter.get_finished_spans()
    assert span.attributes is not None
    assert span.attributes["vertexbatch.results.complete"] is False
    assert span.attributes["vertexbatch.results"] == 1


def test_error_sets_status_and_type_only(
    traced: vb.Client, stack: LocalStack, exporter: InMemorySpanExporter
) -> None:
    """A failed operation's span is an error naming the exception's type, not its message."""
    ghost = vb.Job(
        id="ghost",
        name=f"projects/{stack.project}/locations/{stack.location}/batchPredictionJobs/999",
        provider="anthropic",
        model=CLAUDE,
        input_uri="gs://b/ghost/input.jsonl",
        output_prefix="gs://b/ghost/output",
        keys=1,
    )
    with pytest.raises(vb.JobError):
        traced.status(ghost)
    (span,) = exporter.get_finished_spans()
    assert span.name == "vertexbatch.status"
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description == "JobError"
    assert span.attributes is not None and span.attributes["error.type"] == "JobError"
    (event,) = span.events
    assert event.name == "exception"
    assert dict(event.attributes or {}) == {"exception.type": "JobError"}


def test_run_advance_says_what_it_did(
    traced: vb.Client, stack: LocalStack, exporter: InMemorySpanExporter
) -> None:
    """A run step's span counts its actions and the keys' outcomes; its submits nest under it."""
    run = traced.run_claude(
        "advance", CLAUDE, [claude_request(f"k{i}", f"task {i}") for i in range(3)], shard_size=2
    )
    stack.settle()
    exporter.clear()
    summary = run.advance()
    assert summary.done
    roots = tree(exporter.get_finished_spans())
    assert [name for name, _ in roots] == ["vertexbatch.run.advance"]
    (span,) = [s for s in exporter.get_finished_spans() if s.name == "vertexbatch.run.advance"]
    assert span.attributes is not None
    assert span.attributes["vertexbatch.run.id"] == "advance"
    assert span.attributes["vertexbatch.run.actions.finish"] == 2
    assert span.attributes["vertexbatch.run.keys.ok"] == 3
    assert span.attributes["vertexbatch.run.done"] is True


def test_global_provider_by_default(
    stack: LocalStack, bucket: str, exporter: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no tracer_provider the client uses OpenTelemetry's global one."""
    from opentelemetry import trace

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: provider)
    client = stack.client(bucket=bucket, prefix="jobs", retry=vb.RetryPolicy.no_wait())
    assert client.find("nothing-here") is None
    assert [s.name for s in exporter.get_finished_spans()] == ["vertexbatch.find"]
