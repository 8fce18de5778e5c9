"""A small search index: embed documents in one batch, read the vectors back, rank by a query.

``build_index`` submits one embeddings batch (``submit_embeddings``) of the documents as
``RETRIEVAL_DOCUMENT`` with their titles, waits, and keeps each document's vector
(``Result.embedding``, float32) by its key; a key that got no vector is reported with its
outcome, never dropped. ``search`` embeds the query the same way (``RETRIEVAL_QUERY``) and ranks
the documents by cosine similarity.

``python examples/embeddings_index.py`` runs it against the local stack, whose vectors are
derived from a hash of each text (deterministic, not meaningful: the ranking shows the plumbing,
not semantics).

Install: ``pip install '.[local]'`` in a clone (the local stack it runs on; no package index
serves vertexbatch).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import vertexbatch as vb

MODEL = "gemini-embedding-001"
DIMENSIONS = 256


@dataclass(frozen=True, slots=True)
class Index:
    """Each document's vector by its key, and the keys that got none (with their outcome)."""

    vectors: Mapping[str, Sequence[float]]
    failed: Mapping[str, str]


def build_index(
    client: vb.Client, batch_id: str, documents: Mapping[str, tuple[str, str]]
) -> Index:
    """Embed ``documents`` (key -> (title, text)) in one batch and read the vectors back."""
    requests = [
        vb.EmbeddingRequest(
            key, text, task_type="RETRIEVAL_DOCUMENT", title=title, dimensions=DIMENSIONS
        )
        for key, (title, text) in documents.items()
    ]
    job = client.submit_embeddings(batch_id, MODEL, requests)
    client.wait(job)
    vectors: dict[str, Sequence[float]] = {}
    failed: dict[str, str] = {}
    for result in client.results(job):
        if result.ok and result.embedding is not None:
            vectors[result.key] = result.embedding
        else:
            failed[result.key] = result.outcome
    return Index(vectors, failed)


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = math.fsum(x * y for x, y in zip(a, b, strict=True))
    norms = math.sqrt(math.fsum(x * x for x in a)) * math.sqrt(math.fsum(y * y for y in b))
    return dot / norms if norms else 0.0


def search(client: vb.Client, batch_id: str, index: Index, query: str) -> list[tuple[str, float]]:
    """The documents ranked by cosine similarity to ``query`` (embedded in a batch of one)."""
    request = vb.EmbeddingRequest(
        "query", query, task_type="RETRIEVAL_QUERY", dimensions=DIMENSIONS
    )
    job = client.submit_embeddings(batch_id, MODEL, [request])
    client.wait(job)
    (result,) = client.results(job)
    if result.embedding is None:
        raise RuntimeError(f"the query got no vector: {result.outcome}")
    scores = [(key, _cosine(result.embedding, vector)) for key, vector in index.vectors.items()]
    return sorted(scores, key=lambda pair: pair[1], reverse=True)


DOCUMENTS = {
    "doc-rivers": ("Rivers", "Rivers carry water from mountains to the sea."),
    "doc-bread": ("Bread", "Bread rises when yeast ferments the dough."),
    "doc-stars": ("Stars", "Stars fuse hydrogen into helium in their cores."),
    # A directive of the local stack: this document's line fails (retryable), and is reported.
    "doc-busy": ("Busy", "A document the service is too busy for. [[vb:error 429]]"),
}


def main() -> None:
    """Build the index on the local stack, print each vector's size, and rank a query."""
    from vertexbatch.emulator import LocalStack, Timing

    with (
        LocalStack(timing=Timing(row_seconds=0.01)) as stack,
        stack.client(bucket="embeddings-demo") as client,
    ):
        index = build_index(client, "index-1", DOCUMENTS)
        for key, vector in sorted(index.vectors.items()):
            print(f"{key:<12} {len(vector)} floats")
        for key, outcome in sorted(index.failed.items()):
            print(f"{key:<12} {outcome}")
        for key, score in search(client, "query-1", index, "Where does water flow?"):
            print(f"{key:<12} {score:+.3f}")


if __name__ == "__main__":
    main()
