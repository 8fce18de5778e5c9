"""A job deleted in Vertex after it ended, before a step recorded it, costs only its own
shard's attempt: its output is read from GCS where it is still there, else its keys are
submitted again; every other shard reads and steps as before."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import vertexbatch as vb
from tests.helpers import CLAUDE, object_names, task
from vertexbatch._command.cli import main
from vertexbatch.emulator import LocalStack


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _ended_run(client: vb.Client, stack: LocalStack, run_id: str) -> list[vb.Job]:
    """A run of two shards of two keys whose jobs have both ended, no step having seen them end."""
    client.run_claude(run_id, CLAUDE, [task(i) for i in range(4)], shard_size=2)
    jobs = [client.find(f"{run_id}.s{n}") for n in range(2)]
    assert all(job is not None for job in jobs)
    for job in jobs:
        assert job is not None
        stack.wait_job(job.name)
    return [job for job in jobs if job is not None]


def _delete(stack: LocalStack, job: vb.Job) -> None:
    """Delete the job as a user would, through aiplatform's own client."""
    stack.jobs_client().delete_batch_prediction_job(name=job.name).result(timeout=30)


def test_a_deleted_job_s_output_is_read_from_gcs(client: vb.Client, stack: LocalStack) -> None:
    """Shard 0's ended job deleted: status, advance, results and key_results all go on, shard
    0's answers read from the output its job left in GCS, and no job is made again."""
    first, _ = _ended_run(client, stack, "deleted")
    _delete(stack, first)
    run = client.open_run("deleted")
    assert run.status().outcomes == {"ok": 4}
    results = {r.key: r.outcome for r in run.results()}
    assert results == {f"key-{i}": "ok" for i in range(4)}
    summary = run.advance()
    assert summary.done and summary.outcomes == {"ok": 4} and summary.created == 0
    assert client.find("deleted.s0.r1") is None
    assert {item.result.key: item.outcome for item in run.key_results()} == results


def test_a_deleted_job_with_no_output_has_its_keys_submitted_again(
    client: vb.Client, stack: LocalStack
) -> None:
    """Shard 0's job deleted and its output removed too: its two keys are missing, the next
    step submits them again as .r1, and the run ends with every key answered; shard 1 is read
    meanwhile."""
    first, _ = _ended_run(client, stack, "deleted-bare")
    _delete(stack, first)
    storage = stack.storage_client().bucket(client.bucket)
    for name in object_names(stack, client.bucket, "jobs/deleted-bare.s0/output/"):
        storage.blob(name).delete()
    run = client.open_run("deleted-bare")
    before = {r.key: r.outcome for r in run.results()}
    assert before == {"key-0": "missing", "key-1": "missing", "key-2": "ok", "key-3": "ok"}
    summary = run.advance()
    assert summary.created == 1 and summary.outcomes == {"ok": 2, "pending": 2}
    again = client.find("deleted-bare.s0.r1")
    assert again is not None and again.keys == 2
    stack.wait_job(again.name)
    assert run.advance().outcomes == {"ok": 4}
    assert {r.key: r.outcome for r in run.results()} == {f"key-{i}": "ok" for i in range(4)}


def test_the_command_reads_a_run_whose_job_was_deleted(
    client: vb.Client, stack: LocalStack, stack_env: str
) -> None:
    """`vertexbatch run status` and `run results` of the run go on too (exit 0, every key ok)."""
    first, _ = _ended_run(client, stack, "deleted-cli")
    _delete(stack, first)
    runner = CliRunner()
    status = runner.invoke(main, ["run", "status", "deleted-cli", "--json"])
    assert status.exit_code == 0, status.output
    assert json.loads(status.stdout)["outcomes"] == {"ok": 4}
    results = runner.invoke(main, ["run", "results", "deleted-cli"])
    assert results.exit_code == 0, results.output
    lines = [json.loads(line) for line in results.stdout.splitlines()]
    assert sorted((x["key"], x["outcome"]) for x in lines) == [(f"key-{i}", "ok") for i in range(4)]


def test_a_deleted_single_job_s_errors_say_where_its_output_stays(
    client: vb.Client, stack: LocalStack
) -> None:
    """Once the id's job is deleted, find and submit of the id raise InvalidRequestError and
    results JobError, each naming where its output stays (and how to submit the rows again)."""
    rows = [task(i) for i in range(2)]
    job = client.submit_claude("deleted-one", CLAUDE, rows)
    stack.wait_job(job.name)
    _delete(stack, job)
    stays = f"stays under {job.output_prefix}/"
    with pytest.raises(vb.InvalidRequestError, match="deleted") as found:
        client.find("deleted-one")
    with pytest.raises(vb.InvalidRequestError, match="deleted") as submitted:
        client.submit_claude("deleted-one", CLAUDE, rows)
    for info in (found, submitted):
        assert stays in str(info.value) and "delete the record" in str(info.value)
    with pytest.raises(vb.JobError, match="does not exist"):
        client.status(job)
    with pytest.raises(vb.JobError, match=stays):
        list(client.results(job))


@pytest.mark.anyio
async def test_a_deleted_single_job_s_aio_errors_say_the_same(
    client: vb.Client, stack: LocalStack
) -> None:
    """``client.aio.find`` and ``client.aio.results`` raise as their sync twins do."""
    job = client.submit_claude("deleted-aio", CLAUDE, [task(0)])
    stack.wait_job(job.name)
    _delete(stack, job)
    with pytest.raises(vb.InvalidRequestError, match=f"stays under {job.output_prefix}/"):
        await client.aio.find("deleted-aio")
    with pytest.raises(vb.JobError, match=f"stays under {job.output_prefix}/"):
        async for _ in client.aio.results(job):
            pass


def test_a_run_of_the_first_format_reads_past_a_deleted_job(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """A run started before the run label (each attempt looked up by its id) goes on the same
    way: the deleted job's answers read from GCS, no job made again."""
    first, _ = _ended_run(client, stack, "deleted-old")
    ledger = stack.storage_client().bucket(bucket).blob("jobs/deleted-old/run.json")
    data = json.loads(ledger.download_as_bytes())
    data["format"] = "vertexbatch-run/1"
    ledger.upload_from_string(json.dumps(data))
    _delete(stack, first)
    run = client.open_run("deleted-old")
    summary = run.advance()
    assert summary.done and summary.outcomes == {"ok": 4} and summary.created == 0
    assert sorted(r.key for r in run.results() if r.ok) == [f"key-{i}" for i in range(4)]


def test_a_tasked_run_reads_past_a_deleted_job(client: vb.Client, stack: LocalStack) -> None:
    """A run staged by Cloud Run tasks goes on the same way once its ledger is made."""
    rows = [task(i) for i in range(4)]
    for index in (0, 1):
        part = vb.Task(index, 2).slice(rows)
        client.run_claude("deleted-tasks", CLAUDE, part, task=vb.Task(index, 2), shard_size=2)
    first, second = client.find("deleted-tasks.s0"), client.find("deleted-tasks.s1")
    assert first is not None and second is not None
    for job in (first, second):
        stack.wait_job(job.name)
    _delete(stack, first)
    run = client.open_run("deleted-tasks")
    assert run.status().outcomes == {"ok": 4}
    for share in (vb.Task(0, 2), vb.Task(1, 2)):
        assert all(r.ok for r in run.results(task=share))
