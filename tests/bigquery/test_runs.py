"""Runs with a BigQuery sink: a dataset, a table per attempt's job, the sink in the ledger.

Through the real aiplatform_v1, google-cloud-storage, BigQuery and Storage Read clients on the
BigQuery stack: shards and their retries each write a table of their own in the dataset; a run
reads each key once from them (and from its online answers); a process that holds nothing but
the run id advances and reads it; another sink under the id, and a table, are refused.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest

import vertexbatch as vb
from tests.helpers import (
    CLAUDE,
    GEMINI,
    advance_until_done,
    invoke,
    jobs_in,
    one_error_line,
    request_line,
    task,
    write_lines,
)
from vertexbatch._command.cli_render import ExitCode
from vertexbatch.emulator import LocalStack

# Every outcome a run gives a key: two answers, a refusal, a truncation, a permanent line error,
# and a retryable error and a dropped row that stay unsettled on every attempt (exhausted).
DIRECTIVES = ["", "", "[[vb:refuse]]", "[[vb:truncate]]", "[[vb:error 400]]"]
UNSETTLED = ["[[vb:error 429]]", "[[vb:drop]]"]
REQUESTS = [task(i, d) for i, d in enumerate(DIRECTIVES + UNSETTLED)]
OUTCOMES = {"ok": 2, "refused": 1, "truncated": 1, "failed": 1, "exhausted": 2}


def tables(bq: LocalStack, dataset: str) -> set[str]:
    """The ``bq://P.D.T`` of every table in the dataset."""
    client = bq.bigquery_client()
    try:
        name = dataset.removeprefix("bq://")
        return {f"{dataset}.{t.table_id}" for t in client.list_tables(name)}
    finally:
        client.close()  # type: ignore[no-untyped-call]


def row_count(bq: LocalStack, table: str) -> int:
    client = bq.bigquery_client()
    try:
        return int(client.get_table(table.removeprefix("bq://")).num_rows or 0)
    finally:
        client.close()  # type: ignore[no-untyped-call]


def output_tables(bq: LocalStack, bucket: str) -> dict[str, str]:
    """Each of the bucket's jobs' display name and the table it reports."""
    found = {}
    for job in jobs_in(bq, bucket):
        info = job.get("outputInfo")
        if not info:  # cancelled before it ran
            continue
        found[job["displayName"]] = f"{info['bigqueryOutputDataset']}.{info['bigqueryOutputTable']}"
    return found


def ledger(bq: LocalStack, bucket: str, run_id: str) -> dict[str, Any]:
    blob = bq.storage_client().bucket(bucket).blob(f"jobs/{run_id}/run.json")
    data: dict[str, Any] = json.loads(blob.download_as_bytes())
    return data


def test_a_run_of_shards_writes_a_table_per_attempt_and_reads_each_key_once(
    bq: LocalStack, bq_client: vb.Client, bq_bucket: str, dataset: str
) -> None:
    """Three shards and their retries, each job its own table in the dataset; every outcome kind
    is what the same run to GCS gives, and each key is read once."""
    run = bq_client.run_claude(
        "bq-run", CLAUDE, REQUESTS, shard_size=3, max_attempts=2, dest=dataset
    )
    assert [s.keys for s in run.shards] == [3, 3, 1]
    assert ledger(bq, bq_bucket, "bq-run")["dest"] == dataset
    assert advance_until_done(bq, run).outcomes == OUTCOMES
    assert run.status().outcomes == OUTCOMES
    written = output_tables(bq, bq_bucket)
    # The unsettled keys (5 and 6) are in shards 1 and 2: each was tried again as .r1.
    assert sorted(written) == [
        "bq-run.s0",
        "bq-run.s1",
        "bq-run.s1.r1",
        "bq-run.s2",
        "bq-run.s2.r1",
    ]
    assert all(table.startswith(f"{dataset}.") for table in written.values())
    assert len(set(written.values())) == len(written)  # a table per attempt's job
    assert tables(bq, dataset) == set(written.values())
    # key-5's error row again; key-6 dropped again (a table of no rows).
    assert [row_count(bq, written[f"bq-run.s{n}.r1"]) for n in (1, 2)] == [1, 0]
    results = list(run.results())
    assert sorted(r.key for r in results) == sorted(r.key for r in REQUESTS)  # each key once
    gcs = bq_client.run_claude("gcs-run", CLAUDE, REQUESTS, shard_size=3, max_attempts=2)
    advance_until_done(bq, gcs)
    from_gcs = {r.key: (r.outcome, r.text, type(r.error).__name__) for r in gcs.results()}
    from_bq = {r.key: (r.outcome, r.text, type(r.error).__name__) for r in results}
    assert from_bq == from_gcs
    assert Counter(o for o, _, _ in from_bq.values())["exhausted"] == 2  # key-5, key-6
    keyed = {k.result.key: (k.attempts, k.outcome) for k in run.key_results()}
    assert keyed["key-5"] == (2, "exhausted") and keyed["key-0"] == (1, "ok")


def test_a_shard_retried_reads_its_answers_from_both_attempts_tables(
    bq: LocalStack, bq_client: vb.Client, bq_bucket: str, dataset: str
) -> None:
    """Two keys answered before the first job was cancelled, two by the retry: two tables, and
    each key's answer read once from the table that holds it."""
    bq.faults.hold(display_name="flaky.s0", state="RUNNING", after_rows=2)
    run = bq_client.run_gemini(
        "flaky", GEMINI, [vb.GeminiRequest(f"g{i}", f"hi {i}") for i in range(4)], dest=dataset
    )
    job = bq_client.find("flaky.s0")
    assert job is not None
    bq.wait_job(
        job.name, until=lambda j: j.get("completionStats", {}).get("successfulCount") == "2"
    )
    bq_client.cancel(job)
    bq.wait_job(job.name)
    assert advance_until_done(bq, run).outcomes == {"ok": 4}
    written = output_tables(bq, bq_bucket)
    assert sorted(written) == ["flaky.s0", "flaky.s0.r1"]
    assert written["flaky.s0"] != written["flaky.s0.r1"]
    assert [row_count(bq, written[n]) for n in ("flaky.s0", "flaky.s0.r1")] == [2, 2]
    retry = bq_client.find("flaky.s0.r1")
    assert retry is not None and retry.keys == 2 and retry.dest == dataset
    assert bq_client.status(retry).output_table == written["flaky.s0.r1"]
    keyed = {k.result.key: k for k in run.key_results()}
    assert sorted(keyed) == ["g0", "g1", "g2", "g3"]
    assert all(k.result.ok and k.result.text for k in keyed.values())
    assert sorted(k.attempts for k in keyed.values()) == [1, 1, 2, 2]


def test_a_process_holding_only_the_run_id_advances_and_reads_it(
    bq: LocalStack, bq_client: vb.Client, bq_bucket: str, dataset: str
) -> None:
    """A scheduler's advancer opens the run by its id: the sink comes from the ledger."""
    bq_client.run_claude("stateless", CLAUDE, REQUESTS, shard_size=4, max_attempts=2, dest=dataset)
    with bq.client(bucket=bq_bucket, prefix="jobs", retry=vb.RetryPolicy.no_wait()) as fresh:
        run = fresh.open_run("stateless")
        assert run.dest == dataset
        assert advance_until_done(bq, run).outcomes == OUTCOMES
        assert len(list(run.results())) == len(REQUESTS)
    assert all(
        job["outputConfig"]["bigqueryDestination"]["outputUri"] == dataset
        for job in jobs_in(bq, bq_bucket)
    )


def test_past_the_deadline_the_fallback_answers_online_and_results_read_both(
    bq: LocalStack, bq_client: vb.Client, bq_bucket: str, dataset: str
) -> None:
    """Shard 0's job is held and answered online (to the shard's GCS folder); shard 1's is read
    from its table: one result per key from the two places."""
    bq.faults.hold(display_name="late.s0", state="PENDING")
    run = bq_client.run_claude(
        "late", CLAUDE, [task(i) for i in range(4)], shard_size=2, dest=dataset
    )
    bq.wait_job(bq_client.find("late.s1").name)  # type: ignore[union-attr]
    summary = run.advance(deadline=datetime.now(UTC) - timedelta(seconds=1), fallback="online")
    assert summary.done and summary.outcomes == {"ok": 4}
    online = bq.storage_client().bucket(bq_bucket).blob("jobs/late.s0/online.jsonl")
    assert len(online.download_as_bytes().splitlines()) == 2
    assert row_count(bq, output_tables(bq, bq_bucket)["late.s1"]) == 2
    results = {k.result.key: k.attempts for k in run.key_results()}
    assert results == {"key-0": 2, "key-1": 2, "key-2": 1, "key-3": 1}


def test_a_run_started_again_with_another_sink_is_refused(
    bq: LocalStack, bq_client: vb.Client, dataset: str
) -> None:
    """The same rows under the run id with another dataset, or none, are refused naming both;
    a GCS run given a dataset later is refused too. Nothing is staged by the refusals."""
    bq_client.run_claude("sunk", CLAUDE, REQUESTS[:2], dest=dataset)
    other = f"{dataset}_b"
    for given, said in ((other, f"dest {other!r}"), (None, "the GCS output prefix")):
        with pytest.raises(vb.InvalidRequestError, match="was started writing to") as caught:
            bq_client.run_claude("sunk", CLAUDE, REQUESTS[:2], dest=given)
        assert caught.value.field == "id"
        assert f"dest {dataset!r}" in str(caught.value) and said in str(caught.value)
        with pytest.raises(vb.InvalidRequestError, match="was started writing to"):
            bq_client.plan_claude("sunk", CLAUDE, REQUESTS[:2], dest=given, shard_size=100_000)
    bq_client.run_claude("plain", CLAUDE, REQUESTS[:2], dest=None)
    with pytest.raises(vb.InvalidRequestError, match="the GCS output prefix \\(no dest\\), not"):
        bq_client.run_claude("plain", CLAUDE, REQUESTS[:2], dest=dataset)
    again = bq_client.run_claude("sunk", CLAUDE, REQUESTS[:2], dest=dataset)  # rejoins
    assert again.dest == dataset


def test_a_run_to_a_table_is_refused_before_anything_is_staged(
    bq: LocalStack, bq_client: vb.Client, bq_bucket: str, dataset: str
) -> None:
    table = f"{dataset}.mine"
    with pytest.raises(vb.InvalidRequestError, match="dest must name a dataset") as caught:
        bq_client.run_claude("to-table", CLAUDE, REQUESTS, dest=table)
    assert caught.value.field == "dest" and repr(dataset) in str(caught.value)
    with pytest.raises(vb.InvalidRequestError, match="dest must name a dataset"):
        bq_client.plan_claude("to-table", CLAUDE, REQUESTS, dest=table, shard_size=2)
    assert not list(bq.storage_client().list_blobs(bq_bucket))


def test_an_async_run_to_a_dataset(bq: LocalStack, bq_client: vb.Client, dataset: str) -> None:
    async def main() -> list[str]:
        run = await bq_client.aio.run_claude("aio-run", CLAUDE, REQUESTS[:3], dest=dataset)
        for _ in range(10):
            bq.settle()
            if (await run.advance()).done:
                break
        return sorted([r.outcome async for r in run.results()])

    assert anyio.run(main) == ["ok", "ok", "refused"]


def test_the_command_runs_to_a_dataset_and_refuses_a_table(
    bq: LocalStack, bq_bucket: str, dataset: str, tmp_path: Path
) -> None:
    """``run submit --dest DATASET``, then ``run advance`` and ``run results`` given only the id;
    ``--dest`` naming a table exits with one line, nothing staged."""
    bq.create_bucket(bq_bucket)
    env = bq.environment(bq_bucket, prefix="jobs")
    path = write_lines(tmp_path / "in.jsonl", [request_line("a"), request_line("b")])
    args = ["run", "submit", "--provider", "claude", "--model", CLAUDE, str(path)]
    refused = invoke([*args, "--id", "cli-t", "--dest", f"{dataset}.t"], env)
    assert refused.exit_code == ExitCode.INVALID_REQUEST, refused.output
    assert "dest must name a dataset (bq://PROJECT.DATASET), not the table" in one_error_line(
        refused
    )
    assert not list(bq.storage_client().list_blobs(bq_bucket))
    started = invoke([*args, "--id", "cli-run", "--dest", dataset, "--shard-size", "1"], env)
    assert started.exit_code == 0, started.output
    for _ in range(10):
        bq.settle()
        if invoke(["run", "advance", "cli-run"], env).exit_code == 0:
            break
    assert invoke(["run", "status", "cli-run"], env).exit_code == 0
    results = invoke(["run", "results", "cli-run"], env)
    rows = [json.loads(line) for line in results.stdout.splitlines()]
    assert sorted((r["key"], r["run_outcome"]) for r in rows) == [("a", "ok"), ("b", "ok")]
    assert len(output_tables(bq, bq_bucket)) == 2


def test_the_ledger_holds_a_dataset_counted_in_its_size_and_refuses_anything_else() -> None:
    """A ledger with a sink reads back the same, its size counts the sink exactly, and a
    ledger edited to name a table or a non-URI is refused naming the field."""
    from vertexbatch._runs.ledger import Ledger, Shard, ledger_size

    dest = f"bq://my-project.{'d' * 1024}"
    shards = tuple(Shard(f"r.s{i}", 5) for i in range(12))
    ledger = Ledger("r", "google", GEMINI, 3, shards, True, dest=dest)
    data = ledger.to_json()
    assert data["dest"] == dest and Ledger.from_json(data, "r", "run.json") == ledger
    written = json.dumps(data, sort_keys=True, indent=1).encode()
    assert ledger_size("r", "google", GEMINI, 3, 12, 5, dest=dest) == len(written)
    assert "dest" not in Ledger("r", "google", GEMINI, 3, shards, True).to_json()
    for bad in (f"{dest}.t", "gs://b/p", 3, ""):
        with pytest.raises(vb.InvalidRequestError, match=r"'dest' is not a bq://PROJECT\.DATASET"):
            Ledger.from_json({**data, "dest": bad}, "r", "run.json")


def test_the_docs_example_runs_as_written(bq: LocalStack, bq_bucket: str, dataset: str) -> None:
    """docs/examples/bigquery_run.py runs as `python FILE` with the stack's environment."""
    script = Path(__file__).resolve().parents[2] / "docs" / "examples" / "bigquery_run.py"
    bq.create_bucket(bq_bucket)
    env = {**os.environ, **bq.environment(bq_bucket), "DATASET": dataset.rpartition(".")[2]}
    proc = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=110
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    refused, said, *results = proc.stdout.splitlines()
    assert (refused, said) == ("refused: dest", f"dest: {dataset}")
    assert sorted(results) == [f"t{i} ok" for i in range(6)]
    assert len(output_tables(bq, bq_bucket)) == 2  # two shards, a table each
