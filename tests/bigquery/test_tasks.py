"""Runs staged by tasks from a BigQuery table, and to a BigQuery dataset, through the real clients.

Each task of ``N`` reads only its share of the table (the row restriction ``vb.table_share``
gives, evaluated by the stack's BigQuery), at the run's one snapshot time
(``RUN/tasks/snapshot.json``, recorded create-only by the first task to read); the shares are
disjoint and cover the table, and the run's keys and outcomes are those of a one-process run of
the same table. A retried task adopts; another table, other columns or another sink is refused
naming both; a duplicate key is refused naming it.

bqemulator ignores a read session's ``snapshot_time`` (it reads the table as it is now; see
docs/bigquery.md): what is tested of the snapshot is that every read session of every task,
each attempt included, asks for the same time, the one the record holds, seen on the wire by a
gRPC interceptor in front of the real Storage Read client.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from email.message import Message
from pathlib import Path
from typing import Any

import grpc
import pytest
from click.testing import CliRunner
from google.cloud import bigquery_storage_v1
from google.cloud.bigquery_storage_v1.services.big_query_read.transports import (
    BigQueryReadGrpcTransport,
)

import vertexbatch as vb
from tests.bigquery.conftest import client_reading_with
from tests.bigquery.test_runs import output_tables, tables
from tests.bigquery.test_source import body, make_table
from tests.gcs_gate import Spoil, body_gate
from tests.helpers import CLAUDE, advance_until_done, child_processes, jobs_in, task
from vertexbatch._command.cli import main
from vertexbatch._command.cli_render import ExitCode
from vertexbatch.emulator import LocalStack

REQUESTS = [task(i) for i in range(40)]
COUNT = 3


class _Sessions(grpc.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    """Records every CreateReadSession request that goes over the channel."""

    def __init__(self) -> None:
        self.seen: list[Any] = []

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        if details.method.endswith("/CreateReadSession"):
            self.seen.append(request.read_session)
        return continuation(details, request)


@contextmanager
def recorded(
    bq: LocalStack, bucket: str, storage: str = ""
) -> Iterator[tuple[vb.Client, _Sessions]]:
    """A client whose Storage Read client's read sessions are recorded as they are sent (its
    GCS requests to ``storage``, a gate in front of the stack's, when given)."""
    recorder = _Sessions()
    channel = grpc.intercept_channel(grpc.insecure_channel(bq.bigquery_grpc_target), recorder)
    read = bigquery_storage_v1.BigQueryReadClient(  # type: ignore[no-untyped-call]
        transport=BigQueryReadGrpcTransport(channel=channel)
    )
    with client_reading_with(bq, bucket, read, storage) as client:
        yield client, recorder
    channel.close()


@pytest.fixture
def sessions(bq: LocalStack, bq_bucket: str) -> Iterator[tuple[vb.Client, _Sessions]]:
    with recorded(bq, bq_bucket) as made:
        yield made


def table_of(bq: LocalStack, dataset: str, given: list[vb.ClaudeRequest]) -> str:
    return make_table(bq, dataset, [{"custom_id": r.key, "request": body(r)} for r in given])


def blob(bq: LocalStack, bucket: str, name: str) -> bytes | None:
    found = bq.storage_client().bucket(bucket).blob(f"jobs/{name}")
    return found.download_as_bytes() if found.exists() else None


def task_keys(bq: LocalStack, bucket: str, run_id: str, index: int) -> list[str]:
    """The keys task ``index`` registered (its keys file)."""
    data = blob(bq, bucket, f"{run_id}/tasks/t{index}.keys") or b""
    return [json.loads(line.partition(b" ")[2]) for line in data.splitlines() if line]


def snapshot(bq: LocalStack, bucket: str, run_id: str) -> dict[str, Any]:
    data = blob(bq, bucket, f"{run_id}/tasks/snapshot.json")
    assert data is not None, "no snapshot record"
    found: dict[str, Any] = json.loads(data)
    return found


def objects(bq: LocalStack, bucket: str) -> dict[str, int]:
    return {b.name: b.generation for b in bq.storage_client().list_blobs(bucket)}


def query_keys(bq: LocalStack, table: str, where: str) -> list[str]:
    client = bq.bigquery_client()
    try:
        sql = f"SELECT custom_id FROM `{table.removeprefix('bq://')}` WHERE {where}"
        return sorted(row[0] for row in client.query(sql).result())
    finally:
        client.close()  # type: ignore[no-untyped-call]


def stage_all(client: vb.Client, run_id: str, source: object, **options: Any) -> vb.Run:
    run = None
    for index in range(COUNT):
        run = client.run_claude(
            run_id, CLAUDE, source, task=vb.Task(index, COUNT), shard_size=4, **options
        )
    assert run is not None
    return run


def test_three_tasks_from_one_table_give_the_keys_of_a_one_process_run(
    bq: LocalStack, sessions: tuple[vb.Client, _Sessions], bq_bucket: str, dataset: str
) -> None:
    """Each task reads its share only, at the one recorded snapshot; the shares partition the
    table; the run's every key has one outcome, as a run of one process from the table gives."""
    client, recorder = sessions
    table = table_of(bq, dataset, REQUESTS)
    source = vb.BigQuerySource(table)
    run = stage_all(client, "from-table", source)
    shares = [task_keys(bq, bq_bucket, "from-table", i) for i in range(COUNT)]
    everything = sorted(r.key for r in REQUESTS)
    assert sorted(k for share in shares for k in share) == everything  # disjoint, covering
    assert all(shares), "a task of three got no rows of forty"
    for index, share in enumerate(shares):  # each is what BigQuery's own SQL gives the share
        where = vb.table_share(source, vb.Task(index, COUNT))
        assert sorted(share) == query_keys(bq, table, where)
    # Each task's read session: its own restriction, and the record's one snapshot time.
    record = snapshot(bq, bq_bucket, "from-table")
    assert (record["table"], record["key_column"], record["request_column"]) == (
        table, "custom_id", "request",
    )  # fmt: skip
    at = datetime.fromisoformat(record["snapshot_time"])
    assert [s.read_options.row_restriction for s in recorder.seen] == [
        vb.table_share(source, vb.Task(i, COUNT)) for i in range(COUNT)
    ]
    assert {s.table_modifiers.snapshot_time.timestamp() for s in recorder.seen} == {at.timestamp()}
    summary = advance_until_done(bq, run)
    assert summary.keys == len(REQUESTS) and summary.outcomes == {"ok": len(REQUESTS)}
    tasked = {r.key: (r.outcome, r.text) for r in run.results()}
    alone = client.run_claude("from-table-1", CLAUDE, source, shard_size=4)
    advance_until_done(bq, alone)
    assert {r.key: (r.outcome, r.text) for r in alone.results()} == tasked
    assert sorted(tasked) == everything
    assert [s.read_options.row_restriction for s in recorder.seen[COUNT:]] == [""]  # untasked


def test_a_retried_task_adopts_its_share_at_the_recorded_snapshot(
    bq: LocalStack, sessions: tuple[vb.Client, _Sessions], bq_bucket: str, dataset: str
) -> None:
    """Its second attempt reads the same share at the same time, and writes nothing new."""
    client, recorder = sessions
    source = vb.BigQuerySource(table_of(bq, dataset, REQUESTS))
    client.run_claude("retried", CLAUDE, source, task=vb.Task(1, COUNT), shard_size=4)
    record = snapshot(bq, bq_bucket, "retried")
    before = objects(bq, bq_bucket)
    again = client.run_claude(
        "retried", CLAUDE, source, task=vb.Task(1, COUNT, attempt=1), shard_size=4
    )
    assert objects(bq, bq_bucket) == before
    assert snapshot(bq, bq_bucket, "retried") == record
    assert again.status().waiting == (0, 2)
    first, second = recorder.seen
    assert first.read_options.row_restriction == second.read_options.row_restriction != ""
    at = datetime.fromisoformat(record["snapshot_time"]).timestamp()
    assert first.table_modifiers.snapshot_time.timestamp() == at
    assert second.table_modifiers.snapshot_time.timestamp() == at
    # A plan of a task that has not read yet adopts the snapshot too, and writes nothing.
    plan = client.plan_claude("retried", CLAUDE, source, task=vb.Task(0, COUNT), shard_size=4)
    assert plan.requests == len(task_keys_of(source, bq, 0))
    assert recorder.seen[-1].table_modifiers.snapshot_time == first.table_modifiers.snapshot_time
    assert objects(bq, bq_bucket) == before


def task_keys_of(source: vb.BigQuerySource, bq: LocalStack, index: int) -> list[str]:
    return query_keys(bq, source.table, vb.table_share(source, vb.Task(index, COUNT)))


def test_a_task_losing_the_race_to_record_the_snapshot_reads_the_winners(
    bq: LocalStack, bq_bucket: str, dataset: str
) -> None:
    """Another task's record lands between this task's look (none yet) and its create-only
    write: the write is refused, and the task reads at the winner's time."""
    source = vb.BigQuerySource(table_of(bq, dataset, REQUESTS))
    won = datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
    winner = {
        "format": "vertexbatch-run-snapshot/1", "run": "raced", "table": source.table,
        "key_column": "custom_id", "request_column": "request",
        "snapshot_time": won.isoformat(),
    }  # fmt: skip

    def first_lands(method: str, path: str, headers: Message, body: bytes) -> Spoil | None:
        if method == "POST" and b"raced/tasks/snapshot.json" in body:
            target = bq.storage_client().bucket(bq_bucket).blob("jobs/raced/tasks/snapshot.json")
            if not target.exists():
                target.upload_from_string(json.dumps(winner), if_generation_match=0)
        return None

    bq.create_bucket(bq_bucket)
    with (
        body_gate(bq.storage_endpoint, first_lands) as url,
        recorded(bq, bq_bucket, url) as (
            client,
            recorder,
        ),
    ):
        client.run_claude("raced", CLAUDE, source, task=vb.Task(2, COUNT), shard_size=4)
    assert snapshot(bq, bq_bucket, "raced") == winner
    (session,) = recorder.seen
    assert session.table_modifiers.snapshot_time.timestamp() == won.timestamp()


def stage_share(endpoints: dict[str, str], run_id: str, table: str, index: int) -> None:
    """A task process (``tests.helpers.child_processes``): task ``index`` of ``COUNT`` stages its
    share of ``table``."""
    client = vb.Client.for_endpoints(
        vertex_endpoint=endpoints["vertex"], storage_endpoint=endpoints["storage"],
        project=endpoints["project"], location=endpoints["location"], bucket=endpoints["bucket"],
        prefix="jobs", retry=vb.RetryPolicy.no_wait(),
        bigquery_storage_endpoint=endpoints["grpc"],
    )  # fmt: skip
    client.run_claude(run_id, CLAUDE, vb.BigQuerySource(table), task=vb.Task(index, COUNT))


def test_a_task_killed_before_it_registers_is_retried_and_adopts(
    bq: LocalStack, bq_client: vb.Client, bq_bucket: str, dataset: str
) -> None:
    """Task 1 is SIGKILLed as it writes its record (its shards staged, the snapshot recorded);
    its second attempt reads the same share at the same time, adopts every shard, and the run
    of three tasks ends with every key of the table one outcome."""
    from tests.gcs_gate import hold_write

    table = table_of(bq, dataset, REQUESTS)
    endpoints = {
        "vertex": bq.vertex_endpoint, "project": bq.project, "location": bq.location,
        "bucket": bq_bucket, "grpc": bq.bigquery_grpc_target,
    }  # fmt: skip
    with hold_write(bq.storage_endpoint, "killed/tasks/t1.json") as gate:
        process = child_processes().Process(
            target=stage_share, args=({**endpoints, "storage": gate.url}, "killed", table, 1)
        )
        process.start()
        try:
            assert gate.held.wait(120), "the task never wrote its record"
        finally:
            process.kill()
            process.join(timeout=60)
    assert process.exitcode == -signal.SIGKILL
    record = snapshot(bq, bq_bucket, "killed")
    staged = objects(bq, bq_bucket)
    assert blob(bq, bq_bucket, "killed/tasks/t1.json") is None
    assert any(name.startswith("jobs/killed.s1/") for name in staged)  # its first shard
    source = vb.BigQuerySource(table)
    bq_client.run_claude("killed", CLAUDE, source, task=vb.Task(1, COUNT, attempt=1))
    after = objects(bq, bq_bucket)
    assert {n: g for n, g in after.items() if n in staged} == staged  # adopted, not rewritten
    assert snapshot(bq, bq_bucket, "killed") == record
    for index in (0, 2):
        run = bq_client.run_claude("killed", CLAUDE, source, task=vb.Task(index, COUNT))
    summary = advance_until_done(bq, run)
    assert summary.keys == len(REQUESTS) and summary.outcomes == {"ok": len(REQUESTS)}
    assert sorted(r.key for r in run.results()) == sorted(r.key for r in REQUESTS)


def test_a_plan_before_any_task_read_records_no_snapshot(
    bq: LocalStack, bq_client: vb.Client, bq_bucket: str, dataset: str
) -> None:
    source = vb.BigQuerySource(table_of(bq, dataset, REQUESTS))
    plan = bq_client.plan_claude("planned", CLAUDE, source, task=vb.Task(2, COUNT), shard_size=4)
    assert plan.requests == len(task_keys_of(source, bq, 2))
    assert blob(bq, bq_bucket, "planned/tasks/snapshot.json") is None


@pytest.mark.parametrize(
    ("other", "said"),
    [
        ({"table": "other"}, "reads {other} (key_column 'custom_id'"),
        ({"key_column": "id"}, "(key_column 'id', request_column 'request')"),
        ({"request_column": "body"}, "(key_column 'custom_id', request_column 'body')"),
    ],
    ids=["another table", "another key column", "another request column"],
)
def test_a_task_reading_another_table_or_columns_is_refused_naming_both(
    bq: LocalStack,
    bq_client: vb.Client,
    bq_bucket: str,
    dataset: str,
    other: dict[str, str],
    said: str,
) -> None:
    table = table_of(bq, dataset, REQUESTS)
    bq_client.run_claude("mixed", CLAUDE, vb.BigQuerySource(table), task=vb.Task(0, 2))
    before = objects(bq, bq_bucket)
    elsewhere = table_of(bq, dataset, REQUESTS)
    given = {"table": table, **other}
    if "table" in other:
        given["table"] = elsewhere
    with pytest.raises(vb.InvalidRequestError) as info:
        bq_client.run_claude("mixed", CLAUDE, vb.BigQuerySource(**given), task=vb.Task(1, 2))
    message = str(info.value)
    assert said.format(other=elsewhere) in message
    assert f"the run's tasks read {table} (key_column 'custom_id', request_column 'request')" in (
        message
    )
    assert info.value.field == "requests"
    assert objects(bq, bq_bucket) == before  # nothing staged


def test_a_duplicate_key_is_refused_naming_it(
    bq: LocalStack, bq_client: vb.Client, bq_bucket: str, dataset: str
) -> None:
    """A key on two rows hashes to one share: that task refuses it naming the key and both
    rows. A key in a table task's share and in another task's requests: the run's key check
    names both tasks. No job either way."""
    rows = [{"custom_id": r.key, "request": body(r)} for r in REQUESTS[:9]]
    table = make_table(bq, dataset, [*rows, rows[4]])
    source = vb.BigQuerySource(table)
    owner = next(i for i in range(COUNT) if "key-4" in task_keys_of(source, bq, i))
    with pytest.raises(vb.InvalidRequestError, match=r"key 'key-4': it is on more than one row"):
        bq_client.run_claude("twice", CLAUDE, source, task=vb.Task(owner, COUNT))
    clean = vb.BigQuerySource(table_of(bq, dataset, REQUESTS[:9]))
    taken = next(i for i in range(2) if "key-4" in query_keys(
        bq, clean.table, vb.table_share(clean, vb.Task(i, 2))
    ))  # fmt: skip
    bq_client.run_claude("across", CLAUDE, clean, task=vb.Task(taken, 2))
    with pytest.raises(vb.InvalidRequestError) as info:
        bq_client.run_claude("across", CLAUDE, [REQUESTS[4]], task=vb.Task(1 - taken, 2))
    assert "'key-4' is in the requests of both task" in str(info.value)
    assert f"task {min(taken, 1 - taken)} and task {max(taken, 1 - taken)}" in str(info.value)
    assert info.value.field == "key"
    assert jobs_in(bq, bq_bucket) == []


def test_a_null_key_is_in_task_zeros_share_and_refused_there(
    bq: LocalStack, bq_client: vb.Client, bq_bucket: str, dataset: str
) -> None:
    """A NULL key hashes to nothing: it is put in task 0's share, which refuses it as a
    one-process read does, so no task's share loses it silently."""
    rows = [{"custom_id": r.key, "request": body(r)} for r in REQUESTS[:6]]
    source = vb.BigQuerySource(make_table(bq, dataset, [*rows, {"request": body(REQUESTS[0])}]))
    for index in (1, 2):
        bq_client.run_claude("nulls", CLAUDE, source, task=vb.Task(index, COUNT))
    with pytest.raises(vb.InvalidRequestError, match=r"its key \('custom_id'\) is NULL"):
        bq_client.run_claude("nulls", CLAUDE, source, task=vb.Task(0, COUNT))
    assert jobs_in(bq, bq_bucket) == []


def test_a_tasked_run_to_a_dataset_writes_its_tables_there(
    bq: LocalStack, bq_client: vb.Client, bq_bucket: str, dataset: str
) -> None:
    """Every task's record and the ledger carry the dest; each attempt's job writes a table of
    its own in the dataset; each key is read once from them."""
    source = vb.BigQuerySource(table_of(bq, dataset, REQUESTS[:12]))
    run = stage_all(bq_client, "to-dataset", source, dest=dataset)
    for index in range(COUNT):
        data = blob(bq, bq_bucket, f"to-dataset/tasks/t{index}.json")
        assert data is not None and json.loads(data)["dest"] == dataset
    assert json.loads(blob(bq, bq_bucket, "to-dataset/run.json") or b"")["dest"] == dataset
    assert run.dest == dataset
    summary = advance_until_done(bq, bq_client.open_run("to-dataset"))
    assert summary.outcomes == {"ok": 12}
    written = output_tables(bq, bq_bucket)
    assert sorted(written) == sorted(s.id for s in run.shards)
    assert all(t.startswith(f"{dataset}.") for t in written.values())
    assert set(written.values()) <= tables(bq, dataset)
    assert sorted(r.key for r in run.results()) == sorted(r.key for r in REQUESTS[:12])


@pytest.mark.parametrize(
    ("first", "then", "said"),
    [
        (True, False, "writes to the GCS output prefix (no dest), but task 0 to dest '{d}'"),
        (False, True, "writes to dest '{d}', but task 0 to the GCS output prefix (no dest)"),
    ],
    ids=["dest, then none", "none, then dest"],
)
def test_a_task_with_another_sink_is_refused_naming_both_before_it_stages(
    bq: LocalStack,
    bq_client: vb.Client,
    bq_bucket: str,
    dataset: str,
    first: bool,
    then: bool,
    said: str,
) -> None:
    requests = REQUESTS[:6]
    bq_client.run_claude(
        "sinks", CLAUDE, requests[:3], task=vb.Task(0, 2), dest=dataset if first else None
    )
    before = objects(bq, bq_bucket)
    with pytest.raises(vb.InvalidRequestError) as info:
        bq_client.run_claude(
            "sinks", CLAUDE, requests[3:], task=vb.Task(1, 2), dest=dataset if then else None
        )
    assert said.format(d=dataset) in str(info.value) and info.value.field == "dest"
    assert objects(bq, bq_bucket) == before  # nothing staged
    with pytest.raises(vb.InvalidRequestError) as planned:  # a plan says the same
        bq_client.plan_claude(
            "sinks", CLAUDE, requests[3:], task=vb.Task(1, 2), shard_size=10,
            dest=dataset if then else None,
        )  # fmt: skip
    assert str(planned.value) == str(info.value)


def test_two_tasks_registering_at_once_with_other_sinks_make_no_ledger(
    bq: LocalStack, bq_bucket: str, dataset: str
) -> None:
    """Task 1 (no dest) registers while task 0 (a dest), past its check, writes its record:
    neither saw the other before staging, and the step that finds both refuses the run."""
    from tests.helpers import local_client

    requests = REQUESTS[:6]
    bq.create_bucket(bq_bucket)
    other = local_client(bq, bq_bucket)
    meanwhile: list[vb.Run] = []

    def task_one_registers(method: str, path: str, headers: Message, body: bytes) -> Spoil | None:
        if method == "POST" and b"split/tasks/t0.json" in body and not meanwhile:
            meanwhile.append(other.run_claude("split", CLAUDE, requests[3:], task=vb.Task(1, 2)))
        return None

    with body_gate(bq.storage_endpoint, task_one_registers) as url:
        zero = local_client(bq, bq_bucket, storage_endpoint=url)
        with pytest.raises(vb.InvalidRequestError) as info:
            zero.run_claude("split", CLAUDE, requests[:3], task=vb.Task(0, 2), dest=dataset)
    assert len(meanwhile) == 1  # task 1 registered first, and found task 0 missing
    said = (
        f"tasks 0 and 1 of run 'split' were started differently (dest '{dataset}' against the "
        "GCS output prefix (no dest))"
    )
    assert said in str(info.value)
    with pytest.raises(vb.InvalidRequestError) as again:  # every later step says the same
        meanwhile[0].status()
    assert str(again.value) == str(info.value)
    assert blob(bq, bq_bucket, "split/run.json") is None and jobs_in(bq, bq_bucket) == []
    zero.close()
    other.close()


def test_the_command_stages_a_share_of_a_table_to_a_dataset(
    bq: LocalStack, bq_bucket: str, dataset: str
) -> None:
    """``run submit --source bq://... --task-index I --task-count N --dest bq://P.D``."""
    table = table_of(bq, dataset, REQUESTS[:10])
    bq.create_bucket(bq_bucket)
    env = bq.environment(bq_bucket, prefix="jobs")
    for index in range(2):
        args = [
            "run", "submit", "--provider", "claude", "--model", CLAUDE, "--id", "cli-tasks",
            "--source", table, "--task-index", str(index), "--task-count", "2", "--dest", dataset,
        ]  # fmt: skip
        result = CliRunner().invoke(main, args, env=env, catch_exceptions=False)
        assert result.exit_code == ExitCode.OK, result.output
    ledger = json.loads(blob(bq, bq_bucket, "cli-tasks/run.json") or b"")
    assert (ledger["tasks"], ledger["dest"]) == (2, dataset)
    keys = task_keys(bq, bq_bucket, "cli-tasks", 0) + task_keys(bq, bq_bucket, "cli-tasks", 1)
    assert sorted(keys) == sorted(r.key for r in REQUESTS[:10])


def test_the_docs_example_runs_as_written(bq: LocalStack, bq_bucket: str, dataset: str) -> None:
    """docs/examples/bigquery_tasks.py runs as `python FILE` once per task, as Cloud Run would."""
    script = Path(__file__).resolve().parents[2] / "docs" / "examples" / "bigquery_tasks.py"
    bq.create_bucket(bq_bucket)
    name = table_of(bq, dataset, REQUESTS[:8]).rpartition(".")[2]
    env = {
        **os.environ, **bq.environment(bq_bucket), "DATASET": dataset.rpartition(".")[2],
        "TABLE": name, "RUN_ID": "example-tasks", "CLOUD_RUN_TASK_COUNT": "2",
    }  # fmt: skip
    said = []
    for index in range(2):
        proc = subprocess.run(
            [sys.executable, str(script)],
            env={**env, "CLOUD_RUN_TASK_INDEX": str(index)},
            capture_output=True,
            text=True,
            timeout=110,
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        said.append(proc.stdout.splitlines())
    share = "IFNULL(MOD(MOD(FARM_FINGERPRINT(`custom_id`), 2) + 2, 2), 0) = 0"
    assert said[0] == [f"task 0 of 2 reads the rows where {share}", "waiting for tasks: [1]"]
    assert said[1][1] == "waiting for tasks: none"
    assert {j["displayName"].rpartition(".")[0] for j in jobs_in(bq, bq_bucket)} == {
        "example-tasks"
    }
