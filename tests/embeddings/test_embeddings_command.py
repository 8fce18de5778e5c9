"""`vertexbatch submit --provider embeddings` and `results` on the local stack."""

from __future__ import annotations

import json

from click.testing import CliRunner

import vertexbatch as vb
from vertexbatch._command.cli import main
from vertexbatch.emulator import LocalStack


def test_the_command_submits_embeddings_and_reads_them(
    stack: LocalStack, bucket: str, client: vb.Client
) -> None:
    env = stack.environment(bucket, prefix="jobs")
    lines = [
        {"key": "a", "text": "first document", "task_type": "RETRIEVAL_DOCUMENT", "title": "A"},
        {"key": "b", "text": "second document", "dimensions": 8},
    ]
    stdin = "\n".join(json.dumps(line) for line in lines)
    args = ["submit", "--provider", "embeddings", "--model", "gemini-embedding-001"]
    done = CliRunner().invoke(main, [*args, "--id", "emb-cli", "--json", "-"], env=env, input=stdin)
    assert done.exit_code == 0, done.output
    job = vb.Job.from_dict(json.loads(done.stdout))
    assert job.provider == "embeddings" and job.keys == 2
    client.wait(job, timeout=60)
    read = CliRunner().invoke(main, ["results", "emb-cli"], env=env)
    assert read.exit_code == 0, read.output
    assert read.stdout.count("ok") >= 2


def test_a_bad_embeddings_line_names_its_line(stack: LocalStack, bucket: str) -> None:
    env = stack.environment(bucket, prefix="jobs")
    args = ["submit", "--provider", "embeddings", "--model", "gemini-embedding-001", "--id", "e2"]
    done = CliRunner().invoke(main, [*args, "-"], env=env, input='{"key": "a", "text": 3}\n')
    assert done.exit_code != 0
    assert "line 1: 'text' must be a string" in done.output
