"""`run submit|results --task-index/--task-count`: one run staged and read by tasks."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import vertexbatch as vb
from tests.helpers import CLAUDE, jobs_in, request_line, write_lines
from vertexbatch._command.cli import main
from vertexbatch._command.cli_render import ExitCode
from vertexbatch.emulator import LocalStack


@pytest.fixture(autouse=True)
def _environment(stack_env: str) -> str:
    return stack_env


def cli(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)


def test_tasks_submit_their_parts_and_read_their_shares(
    stack: LocalStack, client: vb.Client, tmp_path: Path
) -> None:
    path = write_lines(tmp_path / "in.jsonl", [request_line(f"k{i}") for i in range(9)])
    submit = ("run", "submit", "--provider", "claude", "--model", CLAUDE, "--id", "crt")
    first = cli(*submit, "--shard-size", "2", "--task-index", "0", "--task-count", "2", str(path))
    assert first.exit_code == 0, first.output
    assert first.stdout == (
        "run crt: 5 keys, waiting for task(s) 1 to register; pending 5: no job is created "
        "until every task has registered\n"
    )
    status = cli("run", "status", "crt", "--json")
    assert json.loads(status.stdout)["waiting"] == [1] and jobs_in(stack, client.bucket) == []
    # The second task's place comes from the Cloud Run variables.
    env = {"CLOUD_RUN_TASK_INDEX": "1", "CLOUD_RUN_TASK_COUNT": "2"}
    second = cli(*submit, "--shard-size", "2", str(path), env=env)
    assert second.exit_code == 0 and "run crt: 9 keys" in second.stdout, second.output
    assert "waiting" not in json.dumps(json.loads(cli("run", "status", "crt", "--json").stdout))
    for _ in range(8):
        stack.settle()
        if cli("run", "advance", "crt").exit_code == ExitCode.OK:
            break
    shares = []
    for i in range(2):
        read = cli("run", "results", "crt", "--task-index", str(i), "--task-count", "2")
        assert read.exit_code == 0, read.output
        shares.append([json.loads(line)["key"] for line in read.stdout.splitlines()])
    assert all(shares)
    assert Counter(k for s in shares for k in s) == Counter(f"k{i}" for i in range(9))
    bad = cli("run", "results", "crt", "--task-index", "2", "--task-count", "2")
    assert bad.exit_code == ExitCode.USAGE and "--task-index 2 is not below" in bad.output
    half = cli("run", "results", "crt", "--task-index", "1")
    assert half.exit_code == ExitCode.USAGE and "go together" in half.output


def test_tasks_submit_their_shares_of_a_prefix(
    stack: LocalStack, client: vb.Client, bucket: str
) -> None:
    """`run submit gs://BUCKET/in/` with task flags: each task its share of the files."""
    files = stack.storage_client().bucket(bucket)
    for number in range(3):  # three files of 2, 3 and 4 lines
        lines = [request_line(f"f{number}-{i}") for i in range(number + 2)]
        files.blob(f"in/part-{number:05d}.jsonl").upload_from_string("\n".join(lines) + "\n")
    prefix = f"gs://{bucket}/in/"
    submit = ("run", "submit", "--provider", "claude", "--model", CLAUDE, "--id", "pre")
    outputs = []
    for i in range(4):  # four tasks, three files: one task's share is empty
        done = cli(*submit, "--task-index", str(i), "--task-count", "4", prefix)
        assert done.exit_code == 0, done.output
        outputs.append(done.output)
    assert sum("registers an empty part of the run" in o for o in outputs) == 1
    assert "run pre: 9 keys" in outputs[-1] and jobs_in(stack, client.bucket)
    whole = cli(*submit[:-1], "whole", prefix)  # no task: the whole prefix, one process
    assert whole.exit_code == 0 and "run whole: 9 keys" in whole.stdout, whole.output
    empty = cli(*submit[:-1], "none", f"gs://{bucket}/nothing/")
    assert (
        empty.exit_code == ExitCode.INVALID_REQUEST
        and f"no request files under gs://{bucket}/nothing/" in (empty.output)
    )
    files.blob("in/part-00001.jsonl").upload_from_string('{"key": "x", "params": 1}\n')
    bad = cli(*submit[:-1], "bad", prefix)
    assert bad.exit_code == ExitCode.INVALID_REQUEST
    assert f"{prefix}part-00001.jsonl line 1: 'params' must be an object" in bad.output
