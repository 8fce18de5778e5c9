"""The older text-embedding family (``text-embedding-005``) end to end on the local stack,
through the real Google clients: every outcome of the stack's directives, rows correlated by
their echoed instance (identical texts, strangers, rows written twice), dedupe, the answer
cache, a run, a plan, ``client.aio``, the command, and what is refused before any cloud call."""

from __future__ import annotations

import asyncio
import json
import math

import pytest
from click.testing import CliRunner

import vertexbatch as vb
from tests.helpers import run_docs_example
from vertexbatch._command.cli import main
from vertexbatch.emulator import LocalStack

MODEL = "text-embedding-005"


def _requests() -> list[vb.EmbeddingRequest]:
    return [
        vb.EmbeddingRequest("doc-a", "The cat sat on the mat.", task_type="RETRIEVAL_DOCUMENT"),
        vb.EmbeddingRequest("doc-b", "A dog ran.", title="Dogs", task_type="RETRIEVAL_DOCUMENT"),
        vb.EmbeddingRequest("twin", "The cat sat on the mat.", task_type="RETRIEVAL_DOCUMENT"),
        vb.EmbeddingRequest("cut", "A long text [[vb:truncate]]"),
        vb.EmbeddingRequest("empty", "nothing [[vb:empty]]"),
        vb.EmbeddingRequest("busy", "later [[vb:error 429]]"),
        vb.EmbeddingRequest("bad", "never [[vb:error 400]]"),
        vb.EmbeddingRequest("gone", "lost [[vb:drop]]"),
        vb.EmbeddingRequest("odd", "an odd task", task_type="NOT_A_TASK"),
    ]


def test_every_key_ends_in_one_outcome(client: vb.Client) -> None:
    job = client.submit_embeddings("text-1", MODEL, _requests())
    assert job.provider == "embeddings" and job.model == MODEL and job.keys == 9
    client.wait(job, timeout=60)
    results = {r.key: r for r in client.results(job)}
    assert {key: r.outcome for key, r in results.items()} == {
        "doc-a": "ok",
        "doc-b": "ok",
        "twin": "ok",  # the same text as doc-a: its own row, found by the echoed instance
        "cut": "truncated",
        "empty": "retryable",
        "busy": "retryable",
        "bad": "failed",
        "gone": "missing",
        "odd": "failed",  # the stack refuses a task type it does not know: a 400 line
    }
    a = results["doc-a"].embedding
    assert a is not None and len(a) == 768
    assert math.isclose(math.fsum(v * v for v in a), 1.0, rel_tol=1e-4)
    assert list(results["twin"].embedding or ()) == list(a)
    assert results["doc-a"].usage.input > 0
    assert results["cut"].embedding is not None
    assert getattr(results["busy"].error, "code", None) == 429
    again = client.submit_embeddings("text-1", MODEL, _requests())
    assert again.name == job.name  # the same id and rows: the same job


def test_the_staged_rows_are_instances_with_no_key(
    stack: LocalStack, bucket: str, client: vb.Client
) -> None:
    docs = [vb.EmbeddingRequest("k", "plain text", task_type="RETRIEVAL_QUERY", title="T")]
    job = client.submit_embeddings("text-wire", MODEL, docs)
    bucket_name, _, path = job.input_uri.removeprefix("gs://").partition("/")
    staged = stack.storage_client().bucket(bucket_name).blob(path).download_as_bytes()
    assert json.loads(staged) == {
        "content": "plain text",
        "task_type": "RETRIEVAL_QUERY",
        "title": "T",
    }
    client.wait(job, timeout=60)
    (result,) = client.results(job)
    assert result.ok


def test_rows_of_no_key_and_rows_written_twice_are_skipped(
    stack: LocalStack, bucket: str, client: vb.Client
) -> None:
    """A file of the job's output directory holding a stranger's row and a copy of an answered
    row (as Vertex writes a row in an incremental and a final file): each key still ends once."""
    docs = [vb.EmbeddingRequest("x", "first text"), vb.EmbeddingRequest("y", "second text")]
    job = client.submit_embeddings("text-extra", MODEL, docs)
    client.wait(job, timeout=60)
    storage = stack.storage_client()
    prefix = job.output_prefix.removeprefix(f"gs://{bucket}/")
    (written,) = [b for b in storage.list_blobs(bucket, prefix=prefix) if b.name.endswith(".jsonl")]
    rows = [json.loads(line) for line in written.download_as_text().splitlines()]
    copy = next(row for row in rows if row["instance"] == {"content": "first text"})
    stranger = {"instance": {"content": "not ours"}, "predictions": copy["predictions"]}
    extra = written.name.rsplit("/", 1)[0] + "/zz-extra.jsonl"
    text = "".join(json.dumps(row) + "\n" for row in (copy, stranger | {"status": ""}))
    storage.bucket(bucket).blob(extra).upload_from_string(text)
    results = list(client.results(job))
    assert sorted((r.key, r.outcome) for r in results) == [("x", "ok"), ("y", "ok")]


def test_dedupe_sends_a_text_once_and_answers_every_key(client: vb.Client) -> None:
    docs = [
        vb.EmbeddingRequest("one", "repeated text"),
        vb.EmbeddingRequest("two", "repeated text"),
        vb.EmbeddingRequest("three", "another text"),
    ]
    job = client.submit_embeddings("text-dedupe", MODEL, docs, dedupe=True)
    client.wait(job, timeout=60)
    assert client.status(job).succeeded == 2  # two lines for three keys
    results = {r.key: r for r in client.results(job)}
    assert all(r.ok for r in results.values()) and results["two"].shared
    assert list(results["two"].embedding or ()) == list(results["one"].embedding or ())


def test_the_answer_cache_answers_the_same_texts(client: vb.Client) -> None:
    docs = [vb.EmbeddingRequest("x", "cached text"), vb.EmbeddingRequest("y", "other text")]
    job = client.submit_embeddings("text-cache", MODEL, docs, cache=True)
    client.wait(job, timeout=60)
    first = {r.key: r for r in client.results(job)}  # the pass fills the cache
    again = client.submit_embeddings("text-cache-2", MODEL, docs, cache=True)
    assert again.name.startswith("cached:")
    cached = {r.key: r for r in client.results(again)}
    assert all(r.cached and r.ok for r in cached.values())
    assert list(cached["x"].embedding or ()) == list(first["x"].embedding or ())
    # Another model's cache is its own: the Gemini family sends its rows.
    other = client.submit_embeddings("text-cache-3", "gemini-embedding-001", docs, cache=True)
    assert not other.name.startswith("cached:")


def test_a_run_a_plan_and_client_aio(client: vb.Client) -> None:
    docs = [vb.EmbeddingRequest(f"d{i}", f"document number {i}") for i in range(5)]
    plan = client.plan_embeddings("text-run", MODEL, docs, shard_size=2)
    assert plan.requests == 5 and plan.jobs == 3
    run = client.run_embeddings("text-run", MODEL, docs, shard_size=2)
    while not run.advance().done:
        pass
    got = {r.key: r for r in run.results()}
    assert sorted(got) == [f"d{i}" for i in range(5)]
    assert all(r.ok and r.embedding is not None for r in got.values())

    async def go() -> vb.Job:
        return await client.aio.submit_embeddings("text-aio", MODEL, docs[:2])

    job = asyncio.run(go())
    client.wait(job, timeout=60)
    assert [r.outcome for r in client.results(job)] == ["ok", "ok"]


def test_what_the_family_refuses_before_any_cloud_call(
    counted: tuple[vb.Client, list[str]],
) -> None:
    client, seen = counted
    with pytest.raises(vb.InvalidRequestError, match="request parameter") as caught:
        client.submit_embeddings("text-r", MODEL, [vb.EmbeddingRequest("k", "t", dimensions=64)])
    assert caught.value.field == "dimensions"
    with pytest.raises(vb.InvalidRequestError, match="request parameter"):
        client.plan_embeddings("text-r", MODEL, [vb.EmbeddingRequest("k", "t", dimensions=64)])
    with pytest.raises(vb.InvalidRequestError, match="BigQuery tables are not supported"):
        client.submit_embeddings("text-r", MODEL, [], dest="bq://my-project.dataset")
    assert seen == []


def test_the_command_submits_the_older_family(
    stack: LocalStack, bucket: str, client: vb.Client
) -> None:
    env = stack.environment(bucket, prefix="jobs")
    lines = [{"key": "a", "text": "first document", "task_type": "RETRIEVAL_DOCUMENT"}]
    lines.append({"key": "b", "text": "second document", "title": "B"})
    args = ["submit", "--provider", "embeddings", "--model", MODEL, "--id", "text-cli", "--json"]
    stdin = "\n".join(json.dumps(line) for line in lines)
    done = CliRunner().invoke(main, [*args, "-"], env=env, input=stdin)
    assert done.exit_code == 0, done.output
    job = vb.Job.from_dict(json.loads(done.stdout))
    assert job.model == MODEL and job.keys == 2
    client.wait(job, timeout=60)
    assert [r.outcome for r in client.results(job)] == ["ok", "ok"]
    bad = json.dumps({"key": "c", "text": "t", "dimensions": 8})
    refused = CliRunner().invoke(main, [*args[:-2], "text-cli-2", "-"], env=env, input=bad)
    assert refused.exit_code != 0 and "request parameter" in refused.output


@pytest.mark.timeout(120)
def test_the_docs_example_runs_as_written(stack: LocalStack, bucket: str) -> None:
    """docs/examples/text_embeddings.py runs as `python FILE` with the stack's environment."""
    stdout = run_docs_example(stack, bucket, "text_embeddings.py")
    assert sorted(stdout.splitlines()) == [
        "doc-bread: 768 floats, 11 tokens",
        "doc-rivers-copy: 768 floats, 12 tokens",
        "doc-rivers: 768 floats, 12 tokens",
    ]
