"""BigQuery with the options that change what is staged: a table source under dedupe and the
answer cache, and a run writing to a dataset that fills the cache and is answered from it.

Through the real clients on the BigQuery stack, as tests/bigquery/test_source.py and
test_runs.py set it up.
"""

from __future__ import annotations

import vertexbatch as vb
from tests.bigquery.test_source import make_table
from tests.helpers import CLAUDE, advance_until_done, claude_request, jobs_in, wait_briefly
from vertexbatch.emulator import LocalStack


def test_a_table_source_under_dedupe_and_the_cache(
    bq: LocalStack, bq_client: vb.Client, bq_bucket: str, dataset: str
) -> None:
    """Two rows of one request are staged once and answered under each key; a second id from
    the same table is answered from the cache with no job."""
    same = {"max_tokens": 32, "messages": [{"role": "user", "content": "same"}]}
    other = {"max_tokens": 32, "messages": [{"role": "user", "content": "other"}]}
    rows = [{"custom_id": k, "request": r} for k, r in (("a", same), ("b", same), ("c", other))]
    source = vb.BigQuerySource(make_table(bq, dataset, rows))
    job = bq_client.submit_claude("src-dd", CLAUDE, source, dedupe=True, cache=True)
    wait_briefly(bq_client, job)
    first = {r.key: r for r in bq_client.results(job)}
    assert sorted(first) == ["a", "b", "c"] and all(r.outcome == "ok" for r in first.values())
    assert first["a"].text == first["b"].text and (first["a"].shared or first["b"].shared)
    name = job.input_uri.removeprefix(f"gs://{bq_bucket}/")
    staged = bq.storage_client().bucket(bq_bucket).blob(name)
    assert len(staged.download_as_bytes().splitlines()) == 2  # the repeated request once
    cached = bq_client.submit_claude("src-dd2", CLAUDE, source, dedupe=True, cache=True)
    assert cached.name == "cached:src-dd2"
    assert {r.key: r.text for r in bq_client.results(cached)} == {
        k: r.text for k, r in first.items()
    }
    assert [j["displayName"] for j in jobs_in(bq, bq_bucket)] == ["src-dd"]


def test_a_run_to_a_dataset_fills_the_cache_and_is_answered_from_it(
    bq: LocalStack, bq_client: vb.Client, dataset: str
) -> None:
    """The finished shards' answers, read from their tables, fill the cache; the same requests
    again, as another run, are answered from it."""
    requests = [claude_request(f"k{i}", f"Question {i}") for i in range(4)]
    run = bq_client.run_claude("bq-cache", CLAUDE, requests, shard_size=2, dest=dataset, cache=True)
    assert advance_until_done(bq, run).outcomes == {"ok": 4}
    first = {r.key: r.text for r in run.results()}
    again = bq_client.run_claude(
        "bq-cache-2", CLAUDE, requests, shard_size=2, dest=dataset, cache=True
    )
    assert advance_until_done(bq, again).outcomes == {"ok": 4}
    assert {r.key: r.text for r in again.results()} == first
    assert all(r.cached for r in again.results())
