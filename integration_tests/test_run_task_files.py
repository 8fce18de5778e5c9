"""Tasks as processes staging one run from a GCS prefix's request files, each its share by
bytes: one SIGKILLed mid-staging and retried lists again, gets the same share and finishes it."""

from __future__ import annotations

import json
import signal
from typing import Any

import pytest

import vertexbatch as vb
from tests.gcs_gate import hold_write
from tests.helpers import child_processes
from vertexbatch.emulator import LocalStack

from . import _task_workers as workers
from ._workers import endpoints as endpoints_of
from .test_run_tasks import _finish, _results

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def _put_files(stack: LocalStack, bucket: str, files: int, lines: int) -> None:
    """``files`` request files of ``lines`` Claude lines each under ``in/``."""
    blobs = stack.storage_client().bucket(bucket)
    for number in range(files):
        body = "".join(
            json.dumps({"key": f"f{number}-{i}", "params": {"max_tokens": 16, "messages": [
                {"role": "user", "content": f"Summarise file {number} item {i}."}]}}) + "\n"
            for i in range(lines)
        )  # fmt: skip
        blobs.blob(f"in/part-{number:05d}.jsonl").upload_from_string(body)


def test_three_tasks_stage_a_prefix_one_killed_and_retried(
    stack: LocalStack, bucket: str, client: vb.Client
) -> None:
    """6 files x 400 lines, 3 tasks (2 files each), shards of 200: task 1 is SIGKILLed before
    its second shard's input is written, and its next attempt adopts its first shard."""
    _put_files(stack, bucket, 6, 400)
    prefix, count, size, total = f"gs://{bucket}/in/", 3, 200, 2_400
    endpoints = endpoints_of(stack, bucket)
    out: Any = child_processes().Queue()
    others = [
        child_processes().Process(
            target=workers.stage_files_task,
            args=(endpoints, "files", prefix, (i, count, 0), size, out),
        )
        for i in (0, 2)
    ]
    for process in others:
        process.start()
    # Task 1's shard 1 is files.s4 (1*3 + 1): killed while its input's write is held.
    with hold_write(stack.storage_endpoint, "files.s4/input.jsonl") as gate:
        held = {**endpoints, "storage": gate.url}
        killed = child_processes().Process(
            target=workers.stage_files_task, args=(held, "files", prefix, (1, count, 0), size)
        )
        killed.start()
        try:
            assert gate.held.wait(300), "task 1 never wrote its second shard"
        finally:
            killed.kill()
            killed.join(timeout=60)
    assert killed.exitcode == -signal.SIGKILL
    reports = _results(out, 2)
    for process in others:
        process.join(timeout=300)
    assert all(1 in r[3] for r in reports)  # each still waits for the killed task
    retry = child_processes().Process(
        target=workers.stage_files_task,
        args=(endpoints, "files", prefix, (1, count, 1), size, out),
    )
    retry.start()
    (report,) = _results(out, 1)
    retry.join(timeout=300)
    assert report[2] == total and report[3] == []
    run = client.open_run("files")
    assert [s.id for s in run.shards] == [f"files.s{i}" for i in range(total // size)]
    for _ in range(40):
        stack.settle(30)
        if run.advance(max_live_jobs=16).done:
            break
    failed = [(r.key, r.outcome, r.error) for r in run.results() if r.outcome != "ok"]
    assert not failed, (len(failed), failed[:2])  # why, if the stack ever fails a row here
    _finish(stack, client, "files", total)
