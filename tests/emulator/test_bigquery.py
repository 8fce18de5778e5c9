"""BigQuery sources and sinks of the local Vertex service, through the real clients.

Jobs are created with `aiplatform_v1.JobServiceClient`, tables written and read with
`google-cloud-bigquery` and the Storage Read API, all against `LocalStack(bigquery=True)`.
"""

from __future__ import annotations

import io
import json
import uuid
from typing import Any

import pytest
from google.api_core import exceptions as api_exceptions
from google.cloud import aiplatform_v1, bigquery

from tests.lab import CLAUDE, GEMINI, Lab
from vertexbatch.emulator import JobOptions, LocalStack

LOCATION = "us-central1"
DIRECTIVES = ["hello there", "[[vb:refuse]]", "[[vb:error 429]]", "[[vb:truncate]]", "[[vb:drop]]"]


def claude_request(text: str) -> dict[str, Any]:
    return Lab.claude_line(text)["request"]


def gemini_request(text: str) -> dict[str, Any]:
    return {"contents": [{"role": "user", "parts": [{"text": text}]}]}


def new_dataset(stack: LocalStack, location: str = LOCATION) -> str:
    """A fresh dataset `project.ds_x` in `location`."""
    client = stack.bigquery_client()
    dataset = bigquery.Dataset(f"{stack.project}.ds_{uuid.uuid4().hex[:10]}")
    dataset.location = location
    client.create_dataset(dataset)
    return dataset.dataset_id


def load(
    stack: LocalStack, table: str, schema: list[bigquery.SchemaField], rows: list[Any]
) -> None:
    """Create `table` and load `rows` (a resumable NDJSON load: bqemulator refuses multipart)."""
    client = stack.bigquery_client()
    client.create_table(bigquery.Table(table, schema))
    data = "".join(json.dumps(row) + "\n" for row in rows).encode()
    config = bigquery.LoadJobConfig(schema=schema, source_format="NEWLINE_DELIMITED_JSON")
    client.load_table_from_file(io.BytesIO(data), table, job_config=config).result()


def create(
    stack: LocalStack,
    *,
    model: str,
    source: str | None = None,
    destination: str | None = None,
    gcs_source: str | None = None,
    display_name: str | None = None,
    location: str = LOCATION,
) -> aiplatform_v1.BatchPredictionJob:
    """A job with BigQuery (or GCS) sides, created through aiplatform_v1."""
    job_type = aiplatform_v1.BatchPredictionJob
    if source is not None:
        input_config = job_type.InputConfig(
            instances_format="bigquery",
            bigquery_source=aiplatform_v1.BigQuerySource(input_uri=source),
        )
    else:
        input_config = job_type.InputConfig(
            instances_format="jsonl", gcs_source=aiplatform_v1.GcsSource(uris=[gcs_source])
        )
    job = job_type(
        display_name=display_name or f"bq-{uuid.uuid4().hex[:10]}",
        model=model,
        input_config=input_config,
        output_config=job_type.OutputConfig(
            predictions_format="bigquery",
            bigquery_destination=aiplatform_v1.BigQueryDestination(output_uri=destination),
        ),
    )
    return stack.jobs_client().create_batch_prediction_job(
        parent=f"projects/{stack.project}/locations/{location}", batch_prediction_job=job
    )


def output_rows(stack: LocalStack, job: dict[str, Any]) -> tuple[list[str], list[dict[str, Any]]]:
    """The output table's column names and rows, read through the Storage Read API."""
    info = job["outputInfo"]
    dataset = info["bigqueryOutputDataset"].removeprefix("bq://")
    client = stack.bigquery_client()
    table = client.get_table(f"{dataset}.{info['bigqueryOutputTable']}")
    arrow = client.list_rows(table).to_arrow(bqstorage_client=stack.bigquery_read_client())
    return [f.name for f in table.schema], arrow.to_pylist()


def claude_table(stack: LocalStack, texts: list[str]) -> str:
    dataset = new_dataset(stack)
    table = f"{stack.project}.{dataset}.requests"
    schema = [
        bigquery.SchemaField("custom_id", "STRING"),
        bigquery.SchemaField("request", "JSON"),
        bigquery.SchemaField("note", "STRING"),
    ]
    rows = [
        {"custom_id": f"k{i}", "request": claude_request(t), "note": f"n{i}"}
        for i, t in enumerate(texts)
    ]
    load(stack, table, schema, rows)
    return table


def gcs_statuses(stack: LocalStack, lines: list[dict[str, Any]], key: str) -> dict[str, Any]:
    """Each key's (status, response stop) from the same lines run through the GCS path."""
    lab = Lab(stack, f"bq-gcs-{uuid.uuid4().hex[:10]}")
    stack.create_bucket(lab.bucket)
    model = CLAUDE if key == "custom_id" else GEMINI
    _, rows = lab.run(lines, model=model)
    return {row[key]: (row["status"], _stop(row.get("response"))) for row in rows}


def _stop(response: Any) -> Any:
    if not isinstance(response, dict):
        return None
    if "stop_reason" in response:
        return response["stop_reason"]
    candidates = response.get("candidates") or [{}]
    return candidates[0].get("finishReason") or response.get("promptFeedback", {}).get(
        "blockReason"
    )


def test_claude_table_to_dataset(bq_stack: LocalStack) -> None:
    """A Claude job from a table to a dataset ends SUCCEEDED with one row per kept input row, the
    reserved columns, `custom_id`, and the same statuses and stops as the GCS path."""
    table = claude_table(bq_stack, DIRECTIVES)
    dataset_uri = "bq://" + table.rsplit(".", 1)[0]
    created = create(bq_stack, model=CLAUDE, source=f"bq://{table}", destination=dataset_uri)
    assert created.state == aiplatform_v1.JobState.JOB_STATE_PENDING
    assert created.input_config.bigquery_source.input_uri == f"bq://{table}"
    done = bq_stack.wait_job(created.name)
    assert done["state"] == "JOB_STATE_SUCCEEDED", done
    assert done["outputInfo"]["bigqueryOutputDataset"] == dataset_uri
    assert done["outputInfo"]["bigqueryOutputTable"].startswith("predictions_")
    assert done["completionStats"] == {"successfulCount": "3", "failedCount": "1"}
    got = bq_stack.jobs_client().get_batch_prediction_job(name=created.name)
    assert got.output_info.bigquery_output_table == done["outputInfo"]["bigqueryOutputTable"]
    columns, rows = output_rows(bq_stack, done)
    assert columns == ["custom_id", "request", "response", "status", "processed_time"]
    assert sorted(row["custom_id"] for row in rows) == ["k0", "k1", "k2", "k3"]  # k4 dropped
    mine = {
        row["custom_id"]: (
            row["status"],
            _stop(json.loads(row["response"]) if row["response"] else None),
        )
        for row in rows
    }
    lines = [{"custom_id": f"k{i}", "request": claude_request(t)} for i, t in enumerate(DIRECTIVES)]
    assert mine == gcs_statuses(bq_stack, lines, "custom_id")
    assert mine["k0"] == ("", "end_turn") and mine["k2"][0].startswith("Too Many Requests: ")


def test_claude_other_columns_pass_when_asked(bq_stack: LocalStack) -> None:
    """JobOptions(claude_bigquery_columns="pass") copies a Claude input's other columns."""
    bq_stack.set_job_options(JobOptions(claude_bigquery_columns="pass"))
    table = claude_table(bq_stack, ["one"])
    created = create(
        bq_stack, model=CLAUDE, source=f"bq://{table}", destination=f"bq://{table}_out"
    )
    done = bq_stack.wait_job(created.name)
    assert done["outputInfo"]["bigqueryOutputTable"] == "requests_out"
    columns, rows = output_rows(bq_stack, done)
    assert columns[:2] == ["custom_id", "note"] and rows[0]["note"] == "n0"


def test_gemini_passthrough_columns_to_named_table(bq_stack: LocalStack) -> None:
    """A Gemini job copies the other input columns with their types into the named table, and
    its statuses match the GCS path's."""
    dataset = new_dataset(bq_stack)
    table = f"{bq_stack.project}.{dataset}.prompts"
    schema = [
        bigquery.SchemaField("key", "STRING"),
        bigquery.SchemaField("n", "INT64"),
        bigquery.SchemaField("at", "TIMESTAMP"),
        bigquery.SchemaField("request", "JSON"),
    ]
    rows = [
        {"key": f"g{i}", "n": i, "at": "2026-01-02T03:04:05Z", "request": gemini_request(t)}
        for i, t in enumerate(DIRECTIVES)
    ]
    load(bq_stack, table, schema, rows)
    created = create(
        bq_stack, model=GEMINI, source=f"bq://{table}", destination=f"bq://{table}_results"
    )
    done = bq_stack.wait_job(created.name)
    assert done["state"] == "JOB_STATE_SUCCEEDED", done
    assert done["outputInfo"] == {
        "bigqueryOutputDataset": f"bq://{bq_stack.project}.{dataset}",
        "bigqueryOutputTable": "prompts_results",
    }
    client = bq_stack.bigquery_client()
    table_in, table_out = client.get_table(table), client.get_table(f"{table}_results")
    assert [(f.name, f.field_type) for f in table_out.schema] == [
        *((f.name, f.field_type) for f in table_in.schema),
        ("response", "JSON"),
        ("status", "STRING"),
        ("processed_time", "TIMESTAMP"),
    ]
    _, got = output_rows(bq_stack, done)
    assert sorted((row["key"], row["n"]) for row in got) == [(f"g{i}", i) for i in range(4)]
    mine = {
        row["key"]: (row["status"], _stop(json.loads(row["response"]) if row["response"] else None))
        for row in got
    }
    lines = [{"key": f"g{i}", "request": gemini_request(t)} for i, t in enumerate(DIRECTIVES)]
    assert mine == gcs_statuses(bq_stack, lines, "key")
    assert mine["g1"] == ("", "SAFETY") and mine["g3"] == ("", "MAX_TOKENS")


def test_gcs_input_to_bigquery_output(bq_stack: LocalStack) -> None:
    """A JSONL input can write a BigQuery table; its sibling keys become JSON columns."""
    lab = Lab(bq_stack, f"bq-mix-{uuid.uuid4().hex[:10]}")
    bq_stack.create_bucket(lab.bucket)
    uri = lab.upload([lab.gemini_line("a", "x1"), {"id": "x2", **lab.gemini_line("b", "x2")}])
    dataset = new_dataset(bq_stack)
    created = create(
        bq_stack, model=GEMINI, gcs_source=uri, destination=f"bq://{bq_stack.project}.{dataset}"
    )
    done = bq_stack.wait_job(created.name)
    columns, rows = output_rows(bq_stack, done)
    assert columns == ["id", "request", "response", "status", "processed_time"]
    assert sorted(str(row["id"]) for row in rows) == ['"x2"', "None"]


@pytest.mark.parametrize(
    ("column", "detail"),
    [("status", "'status', reserved"), ("response", "'response', reserved")],
)
def test_reserved_input_columns_fail_the_import(
    bq_stack: LocalStack, column: str, detail: str
) -> None:
    """An input table with a `response` or `status` column fails the job with code 3."""
    dataset = new_dataset(bq_stack)
    table = f"{bq_stack.project}.{dataset}.t"
    schema = [bigquery.SchemaField("request", "JSON"), bigquery.SchemaField(column, "STRING")]
    load(bq_stack, table, schema, [{"request": gemini_request("x"), column: "y"}])
    done = bq_stack.wait_job(
        create(bq_stack, model=GEMINI, source=f"bq://{table}", destination=f"bq://{table}_o").name
    )
    assert done["state"] == "JOB_STATE_FAILED"
    assert done["error"]["code"] == 3 and detail in done["error"]["message"]


def test_missing_table_and_dataset_fail_the_job(bq_stack: LocalStack) -> None:
    """A missing input table fails the import (code 3); a missing dataset fails with code 9."""
    dataset = new_dataset(bq_stack)
    project = bq_stack.project
    no_table = create(
        bq_stack,
        model=GEMINI,
        source=f"bq://{project}.{dataset}.nope",
        destination=f"bq://{project}.{dataset}",
    )
    no_dataset = create(
        bq_stack,
        model=CLAUDE,
        source=f"bq://{project}.nope.t",
        destination=f"bq://{project}.{dataset}",
    )
    table = claude_table(bq_stack, ["x"])
    no_output = create(
        bq_stack, model=CLAUDE, source=f"bq://{table}", destination=f"bq://{project}.nope"
    )
    assert bq_stack.wait_job(no_table.name)["error"]["code"] == 3
    for job in (no_dataset, no_output):
        done = bq_stack.wait_job(job.name)
        assert done["state"] == "JOB_STATE_FAILED"
        assert done["error"] == {
            "code": 9,
            "message": f"Failed to get BigQuery dataset location for bq://{project}.nope.",
        }


def test_dataset_in_another_location_is_refused_at_create(bq_stack: LocalStack) -> None:
    """A dataset in `US` for a `us-central1` job is a 400 at create, and no job exists."""
    dataset = new_dataset(bq_stack, location="US")
    table = f"{bq_stack.project}.{dataset}.t"
    load(
        bq_stack,
        table,
        [bigquery.SchemaField("request", "JSON")],
        [{"request": gemini_request("x")}],
    )
    before = len(bq_stack.jobs())
    with pytest.raises(api_exceptions.BadRequest) as info:
        create(bq_stack, model=GEMINI, source=f"bq://{table}", destination=f"bq://{table}_o")
    assert "BigQuery Dataset location `US` must be in the same location as the " in str(info.value)
    assert len(bq_stack.jobs()) == before


def test_bad_bigquery_configs_are_400(bq_stack: LocalStack) -> None:
    """A BigQuery URI without a table, or BigQuery input on `global`, is refused at create."""
    with pytest.raises(api_exceptions.BadRequest, match=r"bq://projectId\.bqDatasetId\.bqTableId"):
        create(bq_stack, model=GEMINI, source="bq://p.d", destination="bq://p.d")
    with pytest.raises(api_exceptions.BadRequest, match="global location"):
        create(
            bq_stack, model=GEMINI, source="bq://p.d.t", destination="bq://p.d", location="global"
        )


def test_faults_apply(bq_stack: LocalStack) -> None:
    """A job fault fails a BigQuery job; a cancel during a hold writes the finished rows."""
    table = claude_table(bq_stack, ["a", "b", "c"])
    bq_stack.faults.fail_job("failing", code=7, message="Permission denied.")
    failed = create(
        bq_stack,
        model=CLAUDE,
        source=f"bq://{table}",
        destination=f"bq://{table}_f",
        display_name="failing",
    )
    done = bq_stack.wait_job(failed.name)
    assert done["state"] == "JOB_STATE_FAILED" and done["error"]["code"] == 7
    bq_stack.faults.hold("held", state="RUNNING", after_rows=2)
    held = create(
        bq_stack,
        model=CLAUDE,
        source=f"bq://{table}",
        destination=f"bq://{table}_h",
        display_name="held",
    )
    bq_stack.wait_job(
        held.name, until=lambda j: j.get("completionStats", {}).get("successfulCount") == "2"
    )
    bq_stack.jobs_client().cancel_batch_prediction_job(name=held.name)
    done = bq_stack.wait_job(held.name)
    assert done["state"] == "JOB_STATE_CANCELLED"
    assert done["completionStats"] == {"successfulCount": "2", "incompleteCount": "1"}
    _, rows = output_rows(bq_stack, done)
    assert len(rows) == 2


def test_stack_without_bigquery_says_how(stack: LocalStack) -> None:
    """The default stack answers a BigQuery create with a 400 naming the option, and its
    BigQuery accessors raise the same sentence."""
    with pytest.raises(api_exceptions.BadRequest, match="started without BigQuery"):
        create(stack, model=GEMINI, source="bq://p.d.t", destination="bq://p.d")
    with pytest.raises(RuntimeError, match=r"LocalStack\(bigquery=True\)"):
        stack.bigquery_client()
    assert "BIGQUERY_EMULATOR_HOST" not in stack.environment("b")


def test_environment_names_the_bigquery_endpoints(bq_stack: LocalStack) -> None:
    """environment() adds BIGQUERY_EMULATOR_HOST, which google-cloud-bigquery honours."""
    env = bq_stack.environment("b")
    assert env["BIGQUERY_EMULATOR_HOST"] == bq_stack.bigquery_endpoint
    assert env["VERTEXBATCH_BIGQUERY_STORAGE_HOST"] == bq_stack.bigquery_grpc_target


def test_missing_extra_check() -> None:
    """The check names the install command and the modules that are missing."""
    from vertexbatch.emulator._bigquery import MISSING_EXTRA, missing_modules, require_bigquery

    assert missing_modules() == []
    gone = {"bqemulator", "duckdb_extension_spatial"}

    def find(name: str) -> object | None:
        return None if name in gone else object()

    with pytest.raises(RuntimeError) as info:
        require_bigquery(find)
    assert str(info.value) == f"{MISSING_EXTRA} (missing: bqemulator, duckdb_extension_spatial)"


@pytest.mark.processes
def test_stack_without_the_extra_says_what_to_install() -> None:
    """With bqemulator unimportable, LocalStack(bigquery=True) refuses to start and the default
    stack's BigQuery create answers with the install command (a fresh interpreter)."""
    import subprocess
    import sys

    script = """
import sys
sys.modules["bqemulator"] = None
from google.api_core import exceptions
from google.cloud import aiplatform_v1
from vertexbatch.emulator import LocalStack
try:
    LocalStack(bigquery=True).start()
except RuntimeError as exc:
    print("start:", exc)
with LocalStack() as stack:
    try:
        stack.jobs_client().create_batch_prediction_job(
            parent="projects/local-project/locations/us-central1",
            batch_prediction_job={
                "display_name": "x",
                "model": "publishers/google/models/gemini-2.5-flash",
                "input_config": {"instances_format": "bigquery",
                                 "bigquery_source": {"input_uri": "bq://p.d.t"}},
                "output_config": {"predictions_format": "bigquery",
                                  "bigquery_destination": {"output_uri": "bq://p.d"}},
            },
        )
    except exceptions.BadRequest as exc:
        print("create:", exc.message)
"""
    done = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    hint = (
        "the local stack's BigQuery needs the bigquery-local extra, from a checkout of "
        "vertexbatch: pip install '.[bigquery-local]' (or 'WHEEL[bigquery-local]' for a wheel "
        "built from it)"
    )
    assert f"start: {hint} (missing: bqemulator)" in done.stdout, done.stdout + done.stderr
    assert done.stdout.rstrip().endswith(f": {hint}"), done.stdout + done.stderr


@pytest.mark.processes
def test_emulator_command_exports_bigquery(tmp_path: Any) -> None:
    """`vertexbatch emulator --bigquery` exports BIGQUERY_EMULATOR_HOST, the stack answers there,
    and SIGTERM stops bqemulator with the rest."""
    import os
    import signal
    import subprocess
    import sys
    import time

    env_file = tmp_path / "stack.env"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "vertexbatch",
            "emulator",
            "--bigquery",
            "--env-file",
            str(env_file),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while not env_file.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        text = env_file.read_text()
        exports = dict(
            line.removeprefix("export ").split("=", 1)
            for line in text.splitlines()
            if line.startswith("export ")
        )
        host = exports["BIGQUERY_EMULATOR_HOST"]
        assert host.startswith("http://127.0.0.1:")
        assert exports["VERTEXBATCH_BIGQUERY_STORAGE_HOST"].startswith("127.0.0.1:")
        from google.auth.credentials import AnonymousCredentials

        os.environ["BIGQUERY_EMULATOR_HOST"] = host
        try:
            client = bigquery.Client(project="local-project", credentials=AnonymousCredentials())
            assert list(client.list_datasets()) == []
            client.close()
        finally:
            del os.environ["BIGQUERY_EMULATOR_HOST"]
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert not env_file.exists()


@pytest.mark.processes
def test_stop_ends_bqemulator() -> None:
    """Stopping the stack ends its bqemulator process and frees its ports."""
    import os

    stack = LocalStack(bigquery=True).start()
    pid = stack.bigquery_pid
    stack.stop()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    with pytest.raises(RuntimeError):
        stack.bigquery_client()
