"""A bucket that does not exist is a vertexbatch error naming it and saying what to do, at every
entry point: never google's bare ``NotFound`` with a raw URL, and never "no job" from ``find``.

fake-gcs-server creates a missing bucket on the first upload and answers a bare "Not Found" for
reads, so a gate in front of it answers every request about the test's bucket as GCS does once
the bucket is gone: 404 ``notFound``, "The specified bucket does not exist."
"""

from __future__ import annotations

import pickle
import threading
from collections.abc import Iterator
from email.message import Message
from pathlib import Path

import pytest
from click.testing import CliRunner

import vertexbatch as vb
from tests.gcs_gate import Spoil, gate
from tests.helpers import (
    CLAUDE,
    GEMINI,
    claude_requests,
    gemini_requests,
    local_client,
    write_lines,
)
from vertexbatch._command.cli import main
from vertexbatch.emulator import LocalStack

GCS_NO_BUCKET = "The specified bucket does not exist."
LINE = '{"key": "a", "params": {"max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}}'


class Gone:
    """A gate that, once ``delete()`` is called, answers every request about ``bucket`` as GCS
    answers for a bucket that does not exist; ``url`` is its address."""

    def __init__(self, bucket: str) -> None:
        self.bucket = bucket
        self.url = ""
        self._gone = threading.Event()

    def delete(self) -> None:
        self._gone.set()

    def script(self, method: str, path: str, headers: Message) -> Spoil | None:
        about = path.split("?", 1)[0].rstrip("/")
        named = f"/b/{self.bucket}/" in about + "/"
        if self._gone.is_set() and named:
            return Spoil(status=404, message=GCS_NO_BUCKET)
        return None


@pytest.fixture
def gone(stack: LocalStack, bucket: str) -> Iterator[tuple[vb.Client, Gone]]:
    """A client whose GCS requests pass a ``Gone`` gate on the test's bucket."""
    door = Gone(bucket)
    with gate(stack.storage_endpoint, door.script) as url:
        door.url = url
        yield local_client(stack, bucket, storage_endpoint=url), door


def _names_the_bucket(error: vb.BucketNotFoundError, bucket: str) -> None:
    text = str(error)
    assert error.bucket == bucket and error.field == "bucket"
    assert f"gs://{bucket}" in text and "does not exist" in text
    assert "VERTEXBATCH_BUCKET" in text and "buckets create" in text
    assert "storage/v1" not in text and "http" not in text  # no raw upload or listing URL
    assert isinstance(error, vb.InvalidRequestError)


def test_every_entry_point_names_the_missing_bucket(
    gone: tuple[vb.Client, Gone], stack: LocalStack
) -> None:
    """submit (cache too), plan with cache, find, runs (tasked too) and open_run raise
    ``BucketNotFoundError`` naming the bucket; no job is created."""
    client, door = gone
    door.delete()
    before = len(stack.jobs())
    calls = {
        "submit_claude": lambda: client.submit_claude("a", CLAUDE, claude_requests(2)),
        "submit_gemini": lambda: client.submit_gemini("a", GEMINI, gemini_requests(2)),
        "submit cache": lambda: client.submit_claude("a", CLAUDE, claude_requests(2), cache=True),
        "plan cache": lambda: client.plan_gemini("a", GEMINI, gemini_requests(2), cache=True),
        "find": lambda: client.find("a"),
        "run_claude": lambda: client.run_claude("r", CLAUDE, claude_requests(2)),
        "run task": lambda: client.run_gemini("r", GEMINI, gemini_requests(2), task=vb.Task(0, 2)),
        "open_run": lambda: client.open_run("r"),
    }
    for name, call in calls.items():
        with pytest.raises(vb.BucketNotFoundError) as caught:
            call()
        _names_the_bucket(caught.value, door.bucket)
        assert caught.value.__cause__ is not None, name  # google's error kept as the cause
    assert len(stack.jobs()) == before


def test_a_bucket_deleted_under_a_job_names_it_on_results_and_runs(
    gone: tuple[vb.Client, Gone], stack: LocalStack
) -> None:
    """``results`` of a job, and a run's ``advance`` and ``results``, once the bucket is deleted,
    name the bucket (not "the key map is gone")."""
    client, door = gone
    job = client.submit_claude("j", CLAUDE, claude_requests(2))
    run = client.run_claude("r", CLAUDE, claude_requests(2))
    stack.settle()
    door.delete()
    for call in (lambda: list(client.results(job)), run.advance, lambda: list(run.results())):
        with pytest.raises(vb.BucketNotFoundError) as caught:
            call()
        _names_the_bucket(caught.value, door.bucket)


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_async_view_names_the_missing_bucket(
    gone: tuple[vb.Client, Gone], anyio_backend: str
) -> None:
    """``client.aio`` raises the same error."""
    client, door = gone
    door.delete()
    with pytest.raises(vb.BucketNotFoundError) as caught:
        await client.aio.submit_gemini("a", GEMINI, gemini_requests(1))
    _names_the_bucket(caught.value, door.bucket)
    with pytest.raises(vb.BucketNotFoundError):
        await client.aio.find("a")


def test_the_error_pickles_with_its_fields() -> None:
    """``BucketNotFoundError`` pickles (a worker process's error) with its bucket and field."""
    error = vb.BucketNotFoundError("gone-bucket")
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is vb.BucketNotFoundError
    assert (back.bucket, back.field, str(back)) == ("gone-bucket", "bucket", str(error))


@pytest.mark.parametrize(
    "args",
    [
        ["submit", "--provider", "claude", "--model", CLAUDE, "--id", "a", "FILE"],
        ["find", "a"],
        ["run", "submit", "--provider", "claude", "--model", CLAUDE, "--id", "r", "FILE"],
    ],
)
def test_the_command_names_the_missing_bucket_as_configuration(
    gone: tuple[vb.Client, Gone], stack: LocalStack, tmp_path: Path, args: list[str]
) -> None:
    """The command exits 2 (configuration) with one line naming the bucket and the fix."""
    _, door = gone
    door.delete()
    path = str(write_lines(tmp_path / "r.jsonl", [LINE]))
    env = {**stack.environment(door.bucket, prefix="jobs"), "STORAGE_EMULATOR_HOST": door.url}
    given = [path if a == "FILE" else a for a in args]
    result = CliRunner().invoke(main, given, env=env)
    assert result.exit_code == 2, result.output
    assert f"gs://{door.bucket}" in result.output and "VERTEXBATCH_BUCKET" in result.output
    assert "Google Cloud error" not in result.output and "a bug" not in result.output
