"""The embeddings lane end to end on the local stack, through the real Google clients: submit,
wait and read every outcome; the same rows again give the same job; a run; the cache."""

from __future__ import annotations

import math

import pytest

import vertexbatch as vb
from vertexbatch.emulator import LocalStack

MODEL = "gemini-embedding-001"


def _requests() -> list[vb.EmbeddingRequest]:
    return [
        vb.EmbeddingRequest("doc-a", "The cat sat on the mat.", task_type="RETRIEVAL_DOCUMENT"),
        vb.EmbeddingRequest(
            "doc-b", "A dog ran.", dimensions=16, title="Dogs", task_type="RETRIEVAL_DOCUMENT"
        ),
        vb.EmbeddingRequest("cut", "A long text [[vb:truncate]]"),
        vb.EmbeddingRequest("empty", "nothing [[vb:empty]]"),
        vb.EmbeddingRequest("busy", "later [[vb:error 429]]"),
        vb.EmbeddingRequest("bad", "never [[vb:error 400]]"),
        vb.EmbeddingRequest("gone", "lost [[vb:drop]]"),
    ]


def test_every_key_ends_in_one_outcome(client: vb.Client) -> None:
    job = client.submit_embeddings("emb-1", MODEL, _requests())
    assert job.provider == "embeddings" and job.model == MODEL
    client.wait(job, timeout=60)
    results = {r.key: r for r in client.results(job)}
    outcome = {key: r.outcome for key, r in results.items()}
    assert outcome == {
        "doc-a": "ok",
        "doc-b": "ok",
        "cut": "truncated",
        "empty": "retryable",
        "busy": "retryable",
        "bad": "failed",
        "gone": "missing",
    }
    a, b = results["doc-a"].embedding, results["doc-b"].embedding
    assert a is not None and b is not None
    assert len(a) == 768 and len(b) == 16
    assert math.isclose(math.fsum(v * v for v in a), 1.0, rel_tol=1e-4)
    assert results["doc-a"].usage.input > 0
    assert results["cut"].embedding is not None
    again = client.submit_embeddings("emb-1", MODEL, _requests())
    assert again.name == job.name  # the same id and rows: the same job


def test_the_same_text_gets_the_same_vector_and_the_cache_answers_it(client: vb.Client) -> None:
    docs = [vb.EmbeddingRequest("x", "same text"), vb.EmbeddingRequest("y", "other text")]
    job = client.submit_embeddings("emb-cache", MODEL, docs, cache=True)
    client.wait(job, timeout=60)
    first = {r.key: r for r in client.results(job)}
    again = client.submit_embeddings("emb-cache-2", MODEL, docs, cache=True)
    assert again.name.startswith("cached:")
    cached = {r.key: r for r in client.results(again)}
    assert all(r.cached for r in cached.values())
    assert list(cached["x"].embedding or ()) == list(first["x"].embedding or ())


def test_a_run_shards_embeddings(client: vb.Client) -> None:
    docs = [vb.EmbeddingRequest(f"d{i}", f"document number {i}") for i in range(5)]
    run = client.run_embeddings("emb-run", MODEL, docs, shard_size=2)
    while not run.advance().done:
        pass
    got = {r.key: r for r in run.results()}
    assert sorted(got) == sorted(f"d{i}" for i in range(5))
    assert all(r.ok and r.embedding is not None for r in got.values())


def test_what_the_lane_refuses_before_any_cloud_call(
    counted: tuple[vb.Client, list[str]],
) -> None:
    client, seen = counted
    with pytest.raises(vb.InvalidRequestError, match="inline in the text"):
        client.submit_embeddings(
            "emb-2", "gemini-embedding-2", [vb.EmbeddingRequest("q", "t", task_type="X")]
        )
    with pytest.raises(vb.InvalidRequestError, match="BigQuery tables are not supported"):
        client.submit_embeddings("emb-3", MODEL, [], dest="bq://my-project.dataset")
    with pytest.raises(vb.InvalidRequestError, match="BigQuery tables are not supported"):
        client.run_embeddings("emb-3", MODEL, [], dest="bq://my-project.dataset")
    with pytest.raises(vb.InvalidRequestError, match="submit_embeddings, not submit_gemini"):
        client.submit_gemini("emb-4", MODEL, [vb.GeminiRequest("k", "hi")])
    assert seen == []


def test_gemini_embedding_2_is_served_where_google_lists_it(stack: LocalStack, bucket: str) -> None:
    stack.client(bucket=bucket)  # creates the bucket
    env = stack.environment(bucket, prefix="jobs")
    client = vb.Client.from_env({**env, "GOOGLE_CLOUD_LOCATION": "global"})
    job = client.submit_embeddings("emb-g", "gemini-embedding-2", [vb.EmbeddingRequest("k", "t")])
    client.wait(job, timeout=60)
    (result,) = client.results(job)
    assert result.ok and result.embedding is not None


def test_client_aio_submits_and_plans_embeddings(client: vb.Client) -> None:
    import asyncio

    docs = [vb.EmbeddingRequest("p", "planned text"), vb.EmbeddingRequest("q", "other text")]

    async def go() -> tuple[vb.Plan, vb.Job]:
        plan = await client.aio.plan_embeddings("emb-aio", MODEL, docs)
        job = await client.aio.submit_embeddings("emb-aio", MODEL, docs)
        return plan, job

    plan, job = asyncio.run(go())
    assert plan.requests == 2 and job.keys == 2 and job.provider == "embeddings"
    with pytest.raises(vb.InvalidRequestError, match="count_tokens does not apply"):
        client.plan_embeddings("emb-aio", MODEL, docs, count_tokens=True)
