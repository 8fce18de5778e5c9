"""A BigQuery sink through the rest of the client: checks before any cloud call, the missing
extra, persisted jobs, plans, resubmit, dedupe, the answer cache, ``client.aio``, metrics and
traces."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import vertexbatch as vb
from tests.helpers import CLAUDE, claude_request, claude_requests, jobs_in, wait_briefly
from vertexbatch._bigquery.dest import parse_dest
from vertexbatch.emulator import LocalStack


@pytest.mark.parametrize(
    ("dest", "rule"),
    [
        ("bq:/p.d", "it must start with bq://"),
        ("bq://p.d", "project 'p' must be 6 to 30 lowercase letters"),
        ("bq://my-project-.d", "not ending with a hyphen"),
        ("bq://1project.d", "starting with a letter"),
        ("bq://" + "a" * 31 + ".d", "6 to 30"),
        ("bq://my-project", "must name a project and a dataset"),
        ("bq://my-project.", "dataset '' must be 1 to 1,024"),
        ("bq://my-project.d" + "x" * 1024, "dataset"),
        ("bq://my-project.d.", "table '' must be 1 to 1,024 bytes"),
        ("bq://my-project.d.t@x", "table 't@x'"),
        ("bq://my-project.d." + "é" * 513, "1 to 1,024 bytes"),
        ("bq://Exa_mple:my-project.d", "DOMAIN:PROJECT"),
        (7, "must be a bq://PROJECT.DATASET"),
    ],
)
def test_a_bad_dest_is_refused_before_any_cloud_call(dest: Any, rule: str) -> None:
    """Each BigQuery naming rule, named with the field; no client call is made (the client's
    endpoints are not even listening)."""
    client = vb.Client.for_endpoints(
        vertex_endpoint="http://127.0.0.1:9",
        storage_endpoint="http://127.0.0.1:9",
        project="p",
        location="us-central1",
        bucket="b",
    )
    with pytest.raises(vb.InvalidRequestError) as caught:
        client.submit_claude("bad-dest", CLAUDE, claude_requests(1), dest=dest)
    assert caught.value.field == "dest"
    assert rule in str(caught.value)
    with pytest.raises(vb.InvalidRequestError, match="dest"):
        client.plan_gemini("bad-dest", "gemini-3.8-flash", [vb.GeminiRequest("k", "x")], dest=dest)


@pytest.mark.parametrize(
    ("uri", "parts"),
    [
        ("bq://my-project.ds", ("my-project", "ds", "")),
        ("bq://my-project.ds_1.table-2 x", ("my-project", "ds_1", "table-2 x")),
        ("bq://example.com:my-project.ds.t", ("example.com:my-project", "ds", "t")),
        ("bq://my-project.DS.表", ("my-project", "DS", "表")),
    ],
)
def test_a_good_dest_names_its_parts(uri: str, parts: tuple[str, str, str]) -> None:
    dest = parse_dest(uri)
    assert (dest.project, dest.dataset, dest.table) == parts
    assert dest.uri == uri


def test_without_the_bigquery_extra_one_sentence_says_what_to_install(
    bq: LocalStack, bq_client: vb.Client, dataset: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A submit with dest refuses before staging; results of a sink job already made fail with
    a JobError; both name pip install '.[bigquery]', from a checkout."""
    job = bq_client.submit_claude("no-extra", CLAUDE, claude_requests(1), dest=dataset)
    wait_briefly(bq_client, job)
    monkeypatch.setitem(sys.modules, "google.cloud.bigquery_storage_v1", None)
    with pytest.raises(
        vb.InvalidRequestError, match=r"checkout of vertexbatch: pip install '\.\[bigquery\]'"
    ):
        bq_client.submit_claude("no-extra-2", CLAUDE, claude_requests(1), dest=dataset)
    with pytest.raises(vb.JobError, match=r"writes to BigQuery: .*pip install '\.\[bigquery\]'"):
        list(bq_client.results(job))


def test_a_job_persisted_as_json_reads_the_same_and_old_json_loads() -> None:
    """``dest`` round-trips; a dict written before sinks (no ``dest``) is a GCS-sink job."""
    job = vb.Job(
        "i",
        "projects/p/locations/l/batchPredictionJobs/1",
        "anthropic",
        CLAUDE,
        "gs://b/i/input.jsonl",
        "gs://b/i/output",
        2,
        "bq://my-project.ds.t",
    )
    assert vb.Job.from_dict(job.to_dict()) == job
    old = {k: v for k, v in job.to_dict().items() if k != "dest"}
    assert vb.Job.from_dict(old).dest == ""
    with pytest.raises(vb.InvalidRequestError, match="'dest' must be str"):
        vb.Job.from_dict({**old, "dest": 3})


def test_a_plan_reports_the_sink_of_a_submission_and_of_a_run(
    bq_client: vb.Client, dataset: str
) -> None:
    plan = bq_client.plan_claude("planned", CLAUDE, claude_requests(2), dest=dataset)
    assert plan.dest == dataset and plan.to_dict()["dest"] == dataset
    run_plan = bq_client.plan_claude(
        "planned", CLAUDE, claude_requests(2), dest=dataset, shard_size=1
    )
    assert run_plan.dest == dataset and run_plan.jobs == 2


def test_resubmit_keeps_the_sink_and_a_tables_resubmission_gets_its_own_table(
    bq: LocalStack, bq_client: vb.Client, bq_bucket: str, dataset: str
) -> None:
    """The retryable and missing keys go again to the same dataset; a job that wrote a named
    table is resubmitted into that table's dataset (a table per job), so the first job's table
    and results stay what they were."""
    table = f"{dataset}.first"
    rows = [
        claude_request("a", "fine"),
        claude_request("b", "[[vb:error 429]]"),
        claude_request("c", "[[vb:drop]]"),
    ]
    job = bq_client.submit_claude("resub", CLAUDE, rows, dest=table)
    wait_briefly(bq_client, job)
    again = bq_client.resubmit(job)
    (made,) = [j for j in jobs_in(bq, bq_bucket) if j["displayName"] == again.id]
    assert made["outputConfig"]["bigqueryDestination"]["outputUri"] == dataset
    wait_briefly(bq_client, again)
    assert again.keys == 2
    # The same requests, the same directives: dropped and refused with 429 again, now read from
    # the second job's own table.
    assert sorted(r.outcome for r in bq_client.results(again)) == ["missing", "retryable"]
    assert sorted(r.outcome for r in bq_client.results(job)) == ["missing", "ok", "retryable"]


def test_dedupe_and_the_answer_cache_work_with_a_sink(bq_client: vb.Client, dataset: str) -> None:
    """Repeated requests are staged once and answered under each key; the cache fills from the
    table's answers, and the same requests again are answered from it with no job."""
    rows = [claude_request("a", "same"), claude_request("b", "same"), claude_request("c", "x")]
    job = bq_client.submit_claude("dd", CLAUDE, rows, dest=dataset, dedupe=True, cache=True)
    wait_briefly(bq_client, job)
    first = {r.key: r for r in bq_client.results(job)}
    assert [first[k].outcome for k in "abc"] == ["ok"] * 3 and first["b"].shared
    cached = bq_client.submit_claude("dd2", CLAUDE, rows, dest=dataset, dedupe=True, cache=True)
    assert cached.name == "cached:dd2"
    assert {r.key: r.text for r in bq_client.results(cached)} == {
        k: r.text for k, r in first.items()
    }


def test_the_async_view_submits_and_reads_a_sink(bq_client: vb.Client, dataset: str) -> None:
    async def main() -> list[str]:
        aio = bq_client.aio
        job = await aio.submit_gemini(
            "aio-bq",
            "gemini-3.8-flash",
            [vb.GeminiRequest("g", "hi [[vb:truncate]]")],
            dest=dataset,
        )
        await aio.wait(job, floor=0.01, ceiling=0.05)
        return [r.outcome async for r in aio.results(job)]

    assert anyio.run(main) == ["truncated"]


@pytest.fixture
def observed(bq: LocalStack, bq_bucket: str) -> Iterator[tuple[vb.Client, Any, Any]]:
    """A client on the BigQuery stack whose metrics and spans are kept in memory."""
    reader, exporter = InMemoryMetricReader(), InMemorySpanExporter()
    tracer = TracerProvider()
    tracer.add_span_processor(SimpleSpanProcessor(exporter))
    bq.create_bucket(bq_bucket)
    with vb.Client.for_endpoints(
        vertex_endpoint=bq.vertex_endpoint,
        storage_endpoint=bq.storage_endpoint,
        project=bq.project,
        location=bq.location,
        bucket=bq_bucket,
        prefix="jobs",
        retry=vb.RetryPolicy.no_wait(),
        meter_provider=MeterProvider(metric_readers=[reader]),
        tracer_provider=tracer,
        bigquery_storage_endpoint=bq.bigquery_grpc_target,
    ) as client:
        yield client, reader, exporter


def test_metrics_and_the_results_span_are_those_of_gcs(
    observed: tuple[vb.Client, Any, Any], dataset: str
) -> None:
    """Tokens and outcomes are recorded per result, the pass is one span counting outcomes, and
    no request or response text is in any of them."""
    client, reader, exporter = observed
    marker = f"secret-{uuid.uuid4().hex}"
    rows = [claude_request("a", marker), claude_request("b", f"{marker} [[vb:drop]]")]
    job = client.submit_claude("seen", CLAUDE, rows, dest=dataset)
    wait_briefly(client, job)
    exporter.clear()
    results = list(client.results(job))
    assert sorted(r.outcome for r in results) == ["missing", "ok"]
    (span,) = exporter.get_finished_spans()
    assert span.name == "vertexbatch.results"
    assert span.attributes["vertexbatch.results.ok"] == 1
    assert span.attributes["vertexbatch.results.missing"] == 1
    assert span.attributes["vertexbatch.results.complete"] is True
    data = reader.get_metrics_data().to_json()
    assert "gen_ai.client.token.usage" in data
    assert marker not in data
    assert marker not in str(span.attributes) and marker not in repr(results)
