"""Submission identity with a BigQuery sink across real processes: racing submitters."""

from __future__ import annotations

import json
import uuid

from google.cloud import bigquery

from tests.helpers import child_processes, claude_requests, jobs_in
from tests.helpers import endpoints as endpoints_of
from vertexbatch.emulator import LocalStack

from . import _workers
from ._workers import CANCELLED


def test_four_processes_submit_one_id_to_one_sink(bigquery_local: LocalStack) -> None:
    """4 processes submit the same id, rows and dest at once, each create held until all four
    listed no job (so four jobs are made): one job name returned, the three twins cancelled, and
    the one left live writes to the sink."""
    stack, bucket = bigquery_local, f"bq-race-{uuid.uuid4().hex[:8]}"
    stack.create_bucket(bucket)
    made = bigquery.Dataset(f"{stack.project}.race_{uuid.uuid4().hex[:8]}")
    made.location = stack.location
    stack.bigquery_client().create_dataset(made)
    dest = f"bq://{stack.project}.{made.dataset_id}"
    stack.faults.hold(display_name="bq-race", state="PENDING")  # twins stay live, as real ones
    try:
        ctx = child_processes()
        barrier = ctx.Barrier(4)
        out = ctx.Queue()
        procs = [
            ctx.Process(
                target=_workers.submit_to_dest_after_barrier,
                args=(endpoints_of(stack, bucket), "bq-race", dest, barrier, out),
            )
            for _ in range(4)
        ]
        stack.faults.block("create", when="before", times=4)
        for p in procs:
            p.start()
        stack.faults.wait_blocked("create", count=4, timeout=120)
        stack.faults.unblock("create")
        answers = [out.get(timeout=120) for _ in procs]
        for p in procs:
            p.join(timeout=60)
        assert all(kind == "ok" for kind, _ in answers), answers
        names = {name for _, name in answers}
        assert len(names) == 1
        jobs = [j for j in jobs_in(stack, bucket) if j["displayName"] == "bq-race"]
        live = [j for j in jobs if j["state"] not in CANCELLED]
        assert len(jobs) == 4
        assert [j["name"] for j in live] == list(names)
        assert live[0]["outputConfig"]["bigqueryDestination"]["outputUri"] == dest
    finally:
        stack.faults.reset()
        stack.settle()


def test_four_processes_submit_one_id_from_one_table(bigquery_local: LocalStack) -> None:
    """4 processes submit the same id from the same BigQuery table at once, each create held
    until all four listed no job: one job name returned, the three twins cancelled, one live job
    reading the id's staged copy of the table's rows, and the manifest naming the table."""
    from tests.bigquery.test_source import table_of

    stack, bucket = bigquery_local, f"bq-src-race-{uuid.uuid4().hex[:8]}"
    stack.create_bucket(bucket)
    made = bigquery.Dataset(f"{stack.project}.srcrace_{uuid.uuid4().hex[:8]}")
    made.location = stack.location
    stack.bigquery_client().create_dataset(made)
    dataset = f"bq://{stack.project}.{made.dataset_id}"
    table = table_of(stack, dataset, claude_requests(20))
    stack.faults.hold(display_name="bq-src-race", state="PENDING")
    try:
        ctx = child_processes()
        barrier = ctx.Barrier(4)
        out = ctx.Queue()
        where = {
            **endpoints_of(stack, bucket),
            "bigquery_storage": stack.bigquery_grpc_target,
        }
        procs = [
            ctx.Process(
                target=_workers.submit_source_after_barrier,
                args=(where, "bq-src-race", table, barrier, out),
            )
            for _ in range(4)
        ]
        stack.faults.block("create", when="before", times=4)
        for p in procs:
            p.start()
        stack.faults.wait_blocked("create", count=4, timeout=120)
        stack.faults.unblock("create")
        answers = [out.get(timeout=120) for _ in procs]
        for p in procs:
            p.join(timeout=60)
        assert all(kind == "ok" for kind, _ in answers), answers
        names = {name for _, name in answers}
        assert len(names) == 1
        jobs = [j for j in jobs_in(stack, bucket) if j["displayName"] == "bq-src-race"]
        live = [j for j in jobs if j["state"] not in CANCELLED]
        assert len(jobs) == 4
        assert [j["name"] for j in live] == list(names)
        blob = stack.storage_client().bucket(bucket).blob("jobs/bq-src-race/manifest.json")
        assert json.loads(blob.download_as_bytes())["source"] == table
    finally:
        stack.faults.reset()
        stack.settle()
