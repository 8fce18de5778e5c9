"""``--dest bq://…`` on ``submit`` and ``run submit``, through the command on the BigQuery stack."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from google.cloud import bigquery

from tests.helpers import CLAUDE, invoke, jobs_in, one_error_line, request_line, write_lines
from vertexbatch._command.cli_render import ExitCode
from vertexbatch.emulator import LocalStack


def test_submit_dest_writes_the_table_and_results_read_it(
    bq: LocalStack, bq_bucket: str, dataset: str, tmp_path: Path
) -> None:
    """The job writes to the dataset; ``find`` names the dataset given, ``status`` the table;
    ``results`` reads each key from it; the same id with another dest is refused."""
    bq.create_bucket(bq_bucket)
    env = bq.environment(bq_bucket, prefix="jobs")
    path = write_lines(tmp_path / "in.jsonl", [request_line("a"), request_line("b")])
    args = ["submit", "--provider", "claude", "--model", CLAUDE, "--id", "cli-bq", str(path)]
    first = invoke([*args, "--dest", dataset], env)
    assert first.exit_code == 0, first.output
    (job,) = jobs_in(bq, bq_bucket)
    assert job["outputConfig"]["bigqueryDestination"]["outputUri"] == dataset
    assert invoke(["watch", "cli-bq", "--floor", "0.01", "--ceiling", "0.05"], env).exit_code == 0
    found = invoke(["find", "cli-bq"], env)
    assert f"output   {dataset}\n" in found.output
    assert f"  table {dataset}.predictions_" in invoke(["status", "cli-bq"], env).output
    results = invoke(["results", "cli-bq"], env)
    assert results.exit_code == 0, results.output
    rows = [json.loads(line) for line in results.stdout.splitlines()]
    assert sorted((r["key"], r["outcome"]) for r in rows) == [("a", "ok"), ("b", "ok")]
    other = invoke([*args, "--dest", f"{dataset}.elsewhere"], env)
    assert other.exit_code == ExitCode.INVALID_REQUEST
    assert "rows written to dest" in one_error_line(other)


@pytest.mark.parametrize("command", [["submit"], ["run", "submit"]])
@pytest.mark.parametrize(
    ("dest", "said"),
    [
        (
            "gs://b/out",
            "--dest: dest 'gs://b/out' is not a BigQuery sink: it must start with bq://",
        ),
        ("bq://p", "must name a project and a dataset"),
        ("bq://Local-Project.ds", "project 'Local-Project' must be 6 to 30 lowercase letters"),
        ("bq://local-project.my-ds", "dataset 'my-ds' must be 1 to 1,024 letters"),
        ("bq://local-project.ds.a/b", "table 'a/b' must be 1 to 1,024 bytes"),
        ("bq://local-project.ds.a.b", "at most one table"),
    ],
)
def test_a_bad_dest_exits_2_naming_the_flag_and_the_rule(
    bq: LocalStack, bq_bucket: str, tmp_path: Path, command: list[str], dest: str, said: str
) -> None:
    """Before anything is staged or created."""
    bq.create_bucket(bq_bucket)
    env = bq.environment(bq_bucket, prefix="jobs")
    path = write_lines(tmp_path / "in.jsonl", [request_line("a")])
    args = [*command, "--provider", "claude", "--model", CLAUDE, "--id", "cli-bad", str(path)]
    result = invoke([*args, "--dest", dest], env)
    assert result.exit_code == ExitCode.USAGE, result.output
    assert said in one_error_line(result)
    assert not list(bq.storage_client().list_blobs(bq_bucket))
    assert not jobs_in(bq, bq_bucket)


def test_the_docs_example_runs_as_written(bq: LocalStack, bq_bucket: str, dataset: str) -> None:
    """docs/examples/bigquery_sink.py runs as `python FILE` with the stack's environment."""
    script = Path(__file__).resolve().parents[2] / "docs" / "examples" / "bigquery_sink.py"
    bq.create_bucket(bq_bucket)
    env = {
        **os.environ,
        **bq.environment(bq_bucket),
        "DATASET": dataset.rpartition(".")[2],
    }
    proc = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=110
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    first, table, *results = proc.stdout.splitlines()
    assert first == "refused: id"
    assert table.startswith(f"table: {dataset}.predictions_")  # Status.output_table
    assert sorted(results) == ["a ok", "b ok"]  # in the table's order, never input order


def test_submit_and_run_submit_read_a_source_table(
    bq: LocalStack, bq_bucket: str, dataset: str
) -> None:
    """``--source`` with column names submits the table's rows; ``run submit`` runs them; a
    ``--dry-run`` plans them; FILE and --source both, or neither, is one usage line."""
    from tests.bigquery.test_source import GOOD, make_table

    schema = [bigquery.SchemaField("id", "STRING"), bigquery.SchemaField("body", "JSON")]
    rows = [{"id": key, "body": GOOD} for key in ("a", "b")]
    table = make_table(bq, dataset, rows, schema)
    bq.create_bucket(bq_bucket)
    env = bq.environment(bq_bucket, prefix="jobs")
    source = ["--source", table, "--key-column", "id", "--request-column", "body"]
    args = ["submit", "--provider", "claude", "--model", CLAUDE, "--id", "cli-src", *source]
    planned = invoke([*args, "--dry-run", "--json"], env)
    assert planned.exit_code == 0, planned.output
    assert json.loads(planned.stdout)["requests"] == 2
    first = invoke(args, env)
    assert first.exit_code == 0, first.output
    assert invoke(["watch", "cli-src", "--floor", "0.01", "--ceiling", "0.05"], env).exit_code == 0
    results = invoke(["results", "cli-src"], env)
    rows_out = [json.loads(line) for line in results.stdout.splitlines()]
    assert sorted((r["key"], r["outcome"]) for r in rows_out) == [("a", "ok"), ("b", "ok")]
    ran = invoke(
        ["run", "submit", "--provider", "claude", "--model", CLAUDE, "--id", "cli-run", *source],
        env,
    )
    assert ran.exit_code == 0, ran.output
    assert len(jobs_in(bq, bq_bucket)) == 2
    missing = invoke([*args[:-6], "--source", table, "--key-column", "nope"], env)
    assert missing.exit_code == ExitCode.INVALID_REQUEST
    assert "has no column 'nope' (key_column)" in one_error_line(missing)


@pytest.mark.parametrize("command", [["submit"], ["run", "submit"]])
@pytest.mark.parametrize(
    ("given", "said"),
    [
        (["in.jsonl", "--source", "bq://local-project.ds.t"], "JSONL, - for stdin) or --source"),
        ([], "one is needed"),
        (["in.jsonl", "--key-column", "k"], "--key-column and --request-column go with --source"),
        (["--source", "bq://local-project.ds"], "--source: table 'bq://local-project.ds' names"),
        (["--source", "bq://x"], "--source: table 'bq://x' is not a BigQuery table URI: it must"),
    ],
)
def test_requests_from_both_or_neither_is_one_usage_line(
    bq: LocalStack, bq_bucket: str, command: list[str], given: list[str], said: str
) -> None:
    env = bq.environment(bq_bucket, prefix="jobs")
    args = [*command, "--provider", "claude", "--model", CLAUDE, "--id", "x", *given]
    result = invoke(args, env)
    assert result.exit_code == ExitCode.USAGE
    assert said in one_error_line(result)
    assert len(result.output.strip().splitlines()) == 1


def test_the_source_docs_example_runs_as_written(
    bq: LocalStack, bq_bucket: str, dataset: str
) -> None:
    """docs/examples/bigquery_source.py runs as `python FILE` against a table of two rows."""
    from tests.bigquery.test_source import GOOD, JSON_SCHEMA

    client = bq.bigquery_client()
    table = f"{dataset.removeprefix('bq://')}.prompts"
    client.create_table(bigquery.Table(table, JSON_SCHEMA))
    data = "".join(json.dumps({"custom_id": k, "request": GOOD}) + "\n" for k in "ba").encode()
    config = bigquery.LoadJobConfig(schema=JSON_SCHEMA, source_format="NEWLINE_DELIMITED_JSON")
    client.load_table_from_file(io.BytesIO(data), table, job_config=config).result()
    script = Path(__file__).resolve().parents[2] / "docs" / "examples" / "bigquery_source.py"
    bq.create_bucket(bq_bucket)
    env = {**os.environ, **bq.environment(bq_bucket), "DATASET": dataset.rpartition(".")[2]}
    proc = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=110
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    first, *results = proc.stdout.splitlines()
    assert first == "plan: 2 requests"
    assert sorted(results) == ["a ok", "b ok"]
