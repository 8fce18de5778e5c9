"""The demo's embeddings section: a corpus embedded in one batch, every vector read back.

Eight short documents go to ``gemini-embedding-001`` as one ``submit_embeddings`` batch (one of
them scripted to fail with a 429 by a directive of the local stack); the results give each
document's vector (``Result.embedding``, float32) by its key, and the failed key is named with
its outcome, never dropped.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from .._client import Client
from .._values import EmbeddingRequest

__all__ = ["EMBEDDINGS_ID", "EMBEDDINGS_MODEL", "embedding_requests", "embeddings_section"]

EMBEDDINGS_ID = "demo-docs-index"
EMBEDDINGS_MODEL = "gemini-embedding-001"
_DOCS = (
    "How to rotate a service account key without downtime.",
    "Batch prediction answers large request sets within a day.",
    "Retry a 429 with exponential backoff and jitter.",
    "Label every job with its team and cost centre.",
    "A submission id names one job, however often it is sent.",
    "Read results as a stream: memory stays flat.",
    "Cancel a job; its answered lines stay readable.",
    "This document meets a busy service. [[vb:error 429]]",
)


def embedding_requests() -> list[EmbeddingRequest]:
    """The demo's documents, as RETRIEVAL_DOCUMENT requests of 64 dimensions."""
    return [
        EmbeddingRequest(f"doc-{i:02d}", text, task_type="RETRIEVAL_DOCUMENT", dimensions=64)
        for i, text in enumerate(_DOCS)
    ]


def embeddings_section(client: Client, say: Callable[[str], None], *, interval: float) -> None:
    """Submit the documents, wait, and say what came back for each."""
    job = client.submit_embeddings(EMBEDDINGS_ID, EMBEDDINGS_MODEL, embedding_requests())
    say(f"   {EMBEDDINGS_ID:<20} {job.keys} documents, {EMBEDDINGS_MODEL}")
    while not client.status(job).terminal:
        time.sleep(interval)
    vectors, other = 0, []
    for result in client.results(job):
        if result.ok and result.embedding is not None:
            vectors += 1
            size = len(result.embedding)
        else:
            other.append(f"{result.key} ({result.outcome})")
    say(f"   {vectors} vectors of {size} float32 values; not embedded: {', '.join(other)}")
