"""The older text-embedding models (text-embedding-005, Google's batch sample's model) through
the same lane: one batch, every vector read back by its key."""

import vertexbatch as vb

client = vb.Client.from_env()
model = "text-embedding-005"  # its rows are instances: {"content": ..., "task_type": ...}
documents = {
    "doc-rivers": "Rivers carry water from mountains to the sea.",
    "doc-bread": "Bread rises when yeast ferments the dough.",
    "doc-rivers-copy": "Rivers carry water from mountains to the sea.",  # the same text
}
requests = [
    vb.EmbeddingRequest(key, text, task_type="RETRIEVAL_DOCUMENT")  # no dimensions: refused
    for key, text in documents.items()
]
job = client.submit_embeddings("texts-1", model, requests, dedupe=True)  # one line per text
client.wait(job, floor=1)

for result in client.results(job):
    if result.embedding is not None:
        print(f"{result.key}: {len(result.embedding)} floats, {result.usage.input} tokens")
    else:
        print(f"{result.key}: {result.outcome}")  # retryable, failed, missing
