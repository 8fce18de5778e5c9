"""Jobs run: output rows line by line, import failures, options, cancel, expiry, incremental."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import anthropic
import pytest
from google.genai import types as genai_types

from vertexbatch.emulator import JobOptions, LocalStack, Timing

PROCESSED_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,3})?\+00:00$")


def nested(levels: int) -> dict[str, Any]:
    """`levels` objects in a chain."""
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(levels - 1):
        value = {"n": value}
    return value


def by_key(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Rows keyed by Claude custom_id or Gemini request label."""
    out = {}
    for row in rows:
        key = row.get("custom_id") or row["request"]["labels"]["vb_id"]
        out[key] = row
    return out


def test_gemini_rows_line_by_line(lab: Any) -> None:
    """Each Gemini row: status "", processed_time, the normalised request echo, a response."""
    lines = [lab.gemini_line(f"question {i}", f"k{i}") for i in range(6)]
    lines[0]["request"]["generationConfig"] = {"temperature": 0.5}
    lines[1]["vb_id"] = "vb-k1"
    job, rows = lab.run(lines)
    assert len(rows) == 6
    assert job["completionStats"] == {"successfulCount": "6"}
    for row in rows:
        assert row["status"] == ""
        assert PROCESSED_TIME.match(row["processed_time"])
        datetime.fromisoformat(row["processed_time"])
        assert list(row)[-2:] == ["request", "response"]
        response = genai_types.GenerateContentResponse.model_validate(row["response"])
        assert response.text and response.text.startswith("Local model answer")
    rows_by_key = by_key(rows)
    # Normalisation: fields of other lines appear as null, keys sorted, casing as written.
    assert rows_by_key["k0"]["request"]["generationConfig"] == {"temperature": 0.5}
    assert rows_by_key["k2"]["request"]["generationConfig"] is None
    assert list(rows_by_key["k2"]["request"]) == ["contents", "generationConfig", "labels"]
    # Sibling keys are echoed, null where a line lacked them.
    assert rows_by_key["k1"]["vb_id"] == "vb-k1" and rows_by_key["k3"]["vb_id"] is None
    # Output order is never input order.
    assert [by_key([r]).popitem()[0] for r in rows] != [f"k{i}" for i in range(6)]


def test_claude_rows_line_by_line(lab: Any) -> None:
    """Each Claude row echoes custom_id and request, and holds an Anthropic Message."""
    lines = [lab.claude_line(f"question {i}", f"id-{i}") for i in range(4)]
    lines[3]["request"]["system"] = "be brief"
    job, rows = lab.run(lines, model=lab.CLAUDE)
    assert job["completionStats"] == {"successfulCount": "4"}
    rows_by_key = by_key(rows)
    assert set(rows_by_key) == {f"id-{i}" for i in range(4)}
    for key, row in rows_by_key.items():
        assert row["status"] == "" and PROCESSED_TIME.match(row["processed_time"])
        message = anthropic.types.Message.model_validate(row["response"])
        assert message.model == "claude-sonnet-4-5" and message.stop_reason == "end_turn"
        assert row["request"]["messages"][0]["content"] == f"question {key[-1]}"
    assert rows_by_key["id-0"]["request"]["system"] is None
    assert rows_by_key["id-3"]["request"]["system"] == "be brief"


def test_directives_through_a_job(lab: Any) -> None:
    """Directive outcomes land in the rows; errors count as failed, drops as nothing."""
    texts = {
        "ok": "plain",
        "refuse": "[[vb:refuse]]",
        "error": "[[vb:error 503]]",
        "drop": "[[vb:drop]]",
        "trunc": "[[vb:truncate]]",
        "think": "[[vb:think]] [[vb:cached 7]]",
    }
    lines = [lab.gemini_line(text, key) for key, text in texts.items()]
    job, rows = lab.run(lines)
    assert job["completionStats"] == {"successfulCount": "4", "failedCount": "1"}
    rows_by_key = by_key(rows)
    assert "drop" not in rows_by_key and len(rows) == 5
    error = rows_by_key["error"]
    assert "response" not in error
    assert error["status"] == (
        'Service Unavailable: {"error": {"code": 503, "message": "The service is currently '
        'unavailable.", "status": "UNAVAILABLE"}}'
    )
    assert rows_by_key["refuse"]["response"]["promptFeedback"]["blockReason"] == "SAFETY"
    assert rows_by_key["trunc"]["response"]["candidates"][0]["finishReason"] == "MAX_TOKENS"
    usage = rows_by_key["think"]["response"]["usageMetadata"]
    assert usage["thoughtsTokenCount"] > 0 and usage["cachedContentTokenCount"] == 7


def test_shuffle_is_seeded_and_can_be_switched_off(lab: Any) -> None:
    """Two rows never come back in input order; shuffle=False keeps input order."""
    lines = [lab.gemini_line("a", "k0"), lab.gemini_line("b", "k1")]
    _, rows = lab.run(lines, display_name="two-rows")
    assert [by_key([r]).popitem()[0] for r in rows] == ["k1", "k0"]
    many = [lab.gemini_line(f"q{i}", f"k{i}") for i in range(20)]
    _, first = lab.run(many, display_name="same-name")
    _, second = lab.run(many, display_name="same-name")
    order = [by_key([r]).popitem()[0] for r in first]
    assert order == [by_key([r]).popitem()[0] for r in second]  # same seed, same order
    lab.stack.set_job_options(JobOptions(shuffle=False))
    _, ordered = lab.run(many)
    assert [by_key([r]).popitem()[0] for r in ordered] == [f"k{i}" for i in range(20)]


def test_echo_labels_off(lab: Any) -> None:
    """echo_labels=False removes labels from the echoed Gemini request (per display name)."""
    lab.stack.set_job_options(JobOptions(echo_labels=False), display_name="no-labels")
    _, rows = lab.run([lab.gemini_line("x", "k0")], display_name="no-labels")
    assert "labels" not in rows[0]["request"]
    _, rows = lab.run([lab.gemini_line("x", "k0")], display_name="with-labels")
    assert rows[0]["request"]["labels"] == {"vb_id": "k0"}


@pytest.mark.parametrize("shape", ["object", "string", "body"])
def test_claude_success_shapes(lab: Any, shape: str) -> None:
    """claude_success_shape writes the Message as an object, a JSON string or under body."""
    lab.stack.set_job_options(JobOptions(claude_success_shape=shape))  # type: ignore[arg-type]
    _, rows = lab.run([lab.claude_line("hello", "k")], model=lab.CLAUDE)
    response = rows[0]["response"]
    message = {
        "object": lambda: response,
        "string": lambda: json.loads(response),
        "body": lambda: response["body"],
    }[shape]()
    anthropic.types.Message.model_validate(message)
    assert isinstance(response, str) == (shape == "string")


@pytest.mark.parametrize(
    ("shape", "check"),
    [
        (
            "status_string",
            lambda row: (
                row["status"].startswith('Too Many Requests: {"error": {"code": 429')
                and "response" not in row
            ),
        ),
        (
            "status_object",
            lambda row: (
                row["status"]["code"] == 429 and row["status"]["message"] and "response" not in row
            ),
        ),
        (
            "error_envelope",
            lambda row: (
                row["status"] == "Too Many Requests"
                and row["response"]["type"] == "error"
                and row["response"]["error"]["type"] == "rate_limit_error"
            ),
        ),
    ],
)
def test_claude_error_shapes(lab: Any, shape: str, check: Any) -> None:
    """claude_error_shape writes per-line errors in each plausible shape; a directive overrides."""
    lab.stack.set_job_options(JobOptions(claude_error_shape=shape))  # type: ignore[arg-type]
    lines = [
        lab.claude_line("[[vb:error 429]]", "job-shape"),
        lab.claude_line("[[vb:error 529 shape=error_envelope]]", "line-shape"),
    ]
    job, rows = lab.run(lines, model=lab.CLAUDE)
    assert job["completionStats"] == {"failedCount": "2"}
    rows_by_key = by_key(rows)
    assert check(rows_by_key["job-shape"])
    assert rows_by_key["line-shape"]["response"]["error"]["type"] == "overloaded_error"


@pytest.mark.parametrize(
    "content",
    [
        '{"request": {"contents": []}}\n{not json}\n',
        '{"request": {"contents": [{"role": "user", "parts": [{"text": "x"}]}], "tools": [{}]}}\n',
        '{"request": {"$schema": 1}}\n',
        '{"request": {"a b": 1}}\n',
        '{"request": {}}\n',
        json.dumps({"request": nested(16)}) + "\n",
        json.dumps({"request": {"a": json.loads("[" * 15 + "1" + "]" * 15)}}) + "\n",
        '{"request": {"stop_sequences": ["a", null]}}\n',
        '{"request": {"system": "s"}}\n{"request": {"system": [{"type": "text"}]}}\n',
        '{"request": {"n": 1}}\n{"request": {"n": "one"}}\n',
    ],
    ids=[
        "not-json",
        "empty-object",
        "dollar-key",
        "space-key",
        "empty-request",
        "deep-objects",
        "deep-lists",
        "null-in-list",
        "string-then-list",
        "number-then-string",
    ],
)
def test_import_failures_fail_the_job_with_code_3(lab: Any, content: str) -> None:
    """Bad input fails the whole job: FAILED, code 3, outputInfo set, no output written."""
    uri = f"gs://{lab.bucket}/bad.jsonl"
    lab.gcs.bucket(lab.bucket).blob("bad.jsonl").upload_from_string(
        content, content_type="application/jsonl"
    )
    job = lab.create(uris=[uri])
    done = lab.stack.wait_job(job.name)
    assert done["state"] == "JOB_STATE_FAILED"
    assert done["error"]["code"] == 3
    assert done["error"]["message"].startswith(
        "Failed to import data. Please check 'Prepare input'"
    )
    assert "outputInfo" in done and "completionStats" not in done
    assert lab.names("out") == []


def test_missing_input_object_fails_with_code_3(lab: Any) -> None:
    """An input object that does not exist fails the job with code 3."""
    job = lab.create(uris=[f"gs://{lab.bucket}/nope.jsonl"])
    done = lab.stack.wait_job(job.name)
    assert (done["state"], done["error"]["code"]) == ("JOB_STATE_FAILED", 3)


def test_missing_input_bucket_fails_with_code_9(lab: Any) -> None:
    """An input bucket that does not exist: create is accepted, then the job fails with code 9
    ("Failed to get GCS bucket location"), before any object is read."""
    missing = f"no-such-bucket-{lab.bucket}"
    job = lab.create(uris=[lab.upload([lab.gemini_line("a")]), f"gs://{missing}/x.jsonl"])
    assert job.state.name == "JOB_STATE_PENDING"
    done = lab.stack.wait_job(job.name)
    assert (done["state"], done["error"]["code"]) == ("JOB_STATE_FAILED", 9)
    assert done["error"]["message"] == f"Failed to get GCS bucket location for gs://{missing}."
    assert "completionStats" not in done and lab.names("out") == []


def test_several_input_files_and_blank_lines(lab: Any) -> None:
    """Rows of every input URI run; blank lines are ignored."""
    first = lab.upload([lab.gemini_line("a", "k0"), "", "   ", lab.gemini_line("b", "k1")])
    second = lab.upload([lab.gemini_line("c", "k2")])
    job = lab.create(uris=[first, second])
    done = lab.stack.wait_job(job.name)
    assert done["completionStats"] == {"successfulCount": "3"}
    assert set(by_key(lab.read_rows(done))) == {"k0", "k1", "k2"}


def test_missing_output_bucket_fails_the_job(lab: Any) -> None:
    """An output bucket that does not exist fails the job (code 9) after create succeeded."""
    job = lab.create(output_prefix=f"gs://missing-{lab.bucket}/out")
    done = lab.stack.wait_job(job.name)
    assert (done["state"], done["error"]["code"]) == ("JOB_STATE_FAILED", 9)


def test_per_line_errors_do_not_fail_the_job(lab: Any) -> None:
    """Invalid requests are per-line 400s; the job still SUCCEEDS."""
    lines = [lab.claude_line("ok", "good"), {"custom_id": "bad", "request": {"messages": []}}]
    job, rows = lab.run(lines, model=lab.CLAUDE)
    assert job["completionStats"] == {"successfulCount": "1", "failedCount": "1"}
    assert by_key(rows)["bad"]["status"].startswith("Bad Request: ")


def test_output_prefix_with_trailing_slash(lab: Any) -> None:
    """A trailing slash on the prefix does not double up in the output directory."""
    job = lab.create(output_prefix=f"gs://{lab.bucket}/out/")
    done = lab.stack.wait_job(job.name)
    assert "/out/prediction-model-" in done["outputInfo"]["gcsOutputDirectory"]
    assert "//prediction" not in done["outputInfo"]["gcsOutputDirectory"]


# Stacks with their own timing.


@pytest.fixture
def paced(lab_factory: Any) -> Iterator[Any]:
    """A stack whose rows take 20 ms each and that writes a shard every 2 rows."""
    with LocalStack(timing=Timing(row_seconds=0.02, incremental_every=2)) as local:
        local.create_bucket("paced-bucket")
        yield lab_factory(local, "paced-bucket")


def successful_at_least(count: int) -> Any:
    return lambda job: int(job.get("completionStats", {}).get("successfulCount", "0")) >= count


@pytest.mark.processes
def test_incremental_shards_and_final_file(paced: Any) -> None:
    """incremental_every=2 writes shards of new rows while RUNNING; the final file has all rows."""
    job, rows = paced.run([paced.gemini_line(f"q{i}", f"k{i}") for i in range(5)])
    names = paced.output_names(job)
    assert names == [
        "incremental_predictions/predictions_1.jsonl",
        "incremental_predictions/predictions_2.jsonl",
        "predictions.jsonl",
    ]
    shards = [paced.read_rows(job, name) for name in names[:2]]
    assert [len(s) for s in shards] == [2, 2]
    assert len(rows) == 5
    shard_keys = {k for s in shards for k in by_key(s)}
    assert shard_keys < set(by_key(rows))


@pytest.mark.processes
def test_cancel_keeps_finished_rows(paced: Any) -> None:
    """A cancelled RUNNING job writes the rows it finished and counts the rest incomplete."""
    # 1,000 rows take 20 s: the job is still running when it is cancelled, however slow the host.
    job = paced.create([paced.gemini_line(f"q{i}", f"k{i}") for i in range(1000)])
    running = paced.stack.wait_job(job.name, until=successful_at_least(3))
    assert running["state"] == "JOB_STATE_RUNNING"
    assert "startTime" in running and "outputInfo" in running
    paced.jobs.cancel_batch_prediction_job(name=job.name)
    done = paced.stack.wait_job(job.name)
    assert done["state"] == "JOB_STATE_CANCELLED"
    assert done["error"] == {"code": 1, "message": "CANCELED"}
    stats = done["completionStats"]
    finished = int(stats["successfulCount"])
    assert finished >= 3 and int(stats["incompleteCount"]) == 1000 - finished
    assert len(paced.read_rows(done)) == finished


@pytest.mark.processes
def test_expiry_keeps_finished_rows(lab_factory: Any) -> None:
    """A job not terminal by expire_seconds ends EXPIRED with its finished rows written."""
    with LocalStack(timing=Timing(expire_seconds=1.0)) as local:
        local.create_bucket("expiry-bucket")
        lab = lab_factory(local, "expiry-bucket")
        local.faults.hold("slow", state="RUNNING", after_rows=3)
        local.faults.hold("stuck", state="PENDING")
        lines = [lab.gemini_line(f"q{i}", f"k{i}") for i in range(10)]
        running = lab.create(lines, display_name="slow")
        pending = lab.create(display_name="stuck")
        done = local.wait_job(running.name, timeout=10)
        assert done["state"] == "JOB_STATE_EXPIRED", done
        assert done["completionStats"] == {"successfulCount": "3", "incompleteCount": "7"}
        assert "error" not in done and "endTime" in done
        assert len(lab.read_rows(done)) == 3
        expired = local.wait_job(pending.name, timeout=10)
        assert expired["state"] == "JOB_STATE_EXPIRED" and "completionStats" not in expired


@pytest.mark.processes
def test_pending_seconds(lab_factory: Any) -> None:
    """pending_seconds keeps a job PENDING for a while before it runs."""
    with LocalStack(timing=Timing(pending_seconds=0.2)) as local:
        local.create_bucket("pending-bucket")
        lab = lab_factory(local, "pending-bucket")
        job = lab.create()
        done = local.wait_job(job.name, timeout=10)
        assert done["state"] == "JOB_STATE_SUCCEEDED"
        started = datetime.fromisoformat(done["startTime"].replace("Z", "+00:00"))
        created = datetime.fromisoformat(done["createTime"].replace("Z", "+00:00"))
        assert (started - created).total_seconds() >= 0.2
