"""Embeddings staged by the tasks of a Cloud Run job under one run id, read back by tasks:
every key once, each with its vector (the runs-across-tasks protocol, docs/runs.md)."""

from __future__ import annotations

from collections import Counter

import vertexbatch as vb
from tests.helpers import advance_until_done
from vertexbatch.emulator import LocalStack

MODEL = "gemini-embedding-001"


def test_three_tasks_stage_one_embeddings_run_and_three_read_it(
    stack: LocalStack, client: vb.Client
) -> None:
    texts = [vb.EmbeddingRequest(f"doc-{i}", f"Document number {i}.") for i in range(11)]
    tasks = [vb.Task(i, 3) for i in range(3)]
    for task in tasks:
        run = client.run_embeddings("corpus", MODEL, task.slice(texts), shard_size=2, task=task)
    assert run.keys == 11
    summary = advance_until_done(stack, client.open_run("corpus"), steps=12)
    assert summary.done and summary.outcomes == {"ok": 11}
    shares = [
        {r.key: r for r in client.open_run("corpus").results(task=vb.Task(i, 3))} for i in range(3)
    ]
    assert all(shares)
    assert Counter(k for share in shares for k in share) == Counter(t.key for t in texts)
    vectors = [r.embedding for share in shares for r in share.values()]
    assert all(v is not None and len(v) > 0 for v in vectors)
    # A task's next attempt rejoins: nothing staged again.
    again = client.run_embeddings(
        "corpus", MODEL, tasks[1].slice(texts), shard_size=2, task=vb.Task(1, 3, 1)
    )
    assert again.keys == 11
