"""What real Vertex does that a first local run would not show, each driven through the real
clients against the local stack configured to do it (issue 12).

Per-line status formats, rows that carry no id or echo their request as a string, a job that
fails with counts and no output, importer rejections of a whole job, the states and endings of
a job, the output directory's own timestamp, and the model catalogue.
"""

from __future__ import annotations

import json

import pytest

import vertexbatch as vb
from tests.helpers import CLAUDE, GEMINI, bucket_names, claude_request, results_by_key
from vertexbatch._rows.failures import STATUS_WORDS, line_error_for
from vertexbatch.emulator import JobOptions, LocalStack

# --- 1. Per-line status formats ----------------------------------------------------------------

# key: (directive, outcome when the status is a plain sentence, outcome as a {code, message})
STATUS_CASES: dict[str, tuple[str, str, str]] = {
    "timeout": ("[[vb:error 504]]", "retryable", "retryable"),
    "quota": ("[[vb:error 429]]", "retryable", "retryable"),
    "overloaded": ("[[vb:error 529]]", "retryable", "retryable"),
    "internal": ("[[vb:error 500]]", "retryable", "retryable"),
    "unavailable": ("[[vb:error 503]]", "retryable", "retryable"),
    "invalid": ("[[vb:error 400]]", "failed", "failed"),
    "denied": ("[[vb:error 403]]", "failed", "failed"),
    # A sentence nobody recognises is retryable; the same failure with a code is not.
    "odd": ("[[vb:error 418 text=Something_odd_happened_upstream]]", "retryable", "failed"),
    "fine": ("", "ok", "ok"),
}


@pytest.mark.parametrize("provider", ["anthropic", "google"])
@pytest.mark.parametrize("shape", ["status_text", "status_object"])
def test_per_line_status_formats(
    client: vb.Client, stack: LocalStack, provider: str, shape: str
) -> None:
    """A status with no JSON is read by its words, a {code, message} object by its code; an
    unrecognised sentence is retryable, and no status text reaches the error."""
    name = f"status-{provider}-{shape}".replace("_", "-")
    stack.set_job_options(
        JobOptions(claude_error_shape=shape, gemini_error_shape=shape),  # type: ignore[arg-type]
        display_name=name,
    )
    texts = {key: f"Question {key}. {directive}" for key, (directive, _, _) in STATUS_CASES.items()}
    if provider == "anthropic":
        job = client.submit_claude(name, CLAUDE, [claude_request(k, t) for k, t in texts.items()])
    else:
        job = client.submit_gemini(name, GEMINI, [vb.GeminiRequest(k, t) for k, t in texts.items()])
    results = results_by_key(stack, client, job)
    column = 1 if shape == "status_text" else 2
    assert {k: r.outcome for k, r in results.items()} == {
        k: case[column] for k, case in STATUS_CASES.items()
    }
    for key, result in results.items():
        if result.outcome in ("retryable", "failed"):
            error = result.error
            assert isinstance(error, vb.LineError)
            assert vb.is_retryable(error) == (result.outcome == "retryable")
            for word in ("timed", "Quota", "overloaded", "odd", "denied", "invalid"):
                assert word not in str(error), (key, str(error))
    if shape == "status_text":
        timeout = results["timeout"].error
        assert isinstance(timeout, vb.LineError)
        assert (timeout.code, timeout.status) == (0, "DEADLINE_EXCEEDED")
        odd = results["odd"].error
        assert isinstance(odd, vb.LineError) and (odd.code, odd.status) == (0, "")
    else:
        timeout = results["timeout"].error
        assert isinstance(timeout, vb.LineError) and timeout.code == 504


def test_status_words_agree_with_their_names() -> None:
    """Each row of the words table gives a name whose transience is the one the table says."""
    for _, name, transient in STATUS_WORDS:
        assert line_error_for("k", code=0, status=name).transient is transient, name


# --- 2. Rows with no id, and requests echoed as JSON strings -----------------------------------


@pytest.mark.parametrize("echo", ["object", "string"])
def test_claude_rows_without_custom_id(client: vb.Client, stack: LocalStack, echo: str) -> None:
    """Claude rows with no custom_id are matched by their echoed request, object or JSON string;
    identical requests each get one row, and a row in both an incremental and the final file
    counts once."""
    name = f"no-custom-id-{echo}"
    stack.set_job_options(
        JobOptions(echo_siblings=False, request_echo=echo),  # type: ignore[arg-type]
        display_name=name,
    )
    requests = [
        claude_request("a", "Summarise the first report."),
        claude_request("b", "Summarise the second report. [[vb:truncate]]"),
        claude_request("twin-1", "The same question."),
        claude_request("twin-2", "The same question."),
        claude_request("busy", "Later [[vb:error 429]]"),
    ]
    stack.faults.hold(display_name=name, state="RUNNING", after_rows=3)
    job = client.submit_claude(name, CLAUDE, requests)
    stack.wait_job(
        job.name, until=lambda j: sum(map(int, j.get("completionStats", {}).values())) == 3
    )
    early = list(client.results(job))
    assert len(early) == len({r.key for r in early}) == 3
    stack.faults.release(display_name=name)
    done = stack.wait_job(job.name)
    rows = _rows_of(stack, done)
    assert rows and all("custom_id" not in row for row in rows)
    assert all(isinstance(row["request"], str if echo == "string" else dict) for row in rows)
    results = results_by_key(stack, client, job)
    assert {k: r.outcome for k, r in results.items()} == {
        "a": "ok",
        "b": "truncated",
        "twin-1": "ok",
        "twin-2": "ok",
        "busy": "retryable",
    }
    assert results["twin-1"].text == results["twin-2"].text != ""


def test_gemini_rows_with_no_id_at_all(client: vb.Client, stack: LocalStack) -> None:
    """Gemini rows with no sibling id, no labels and a string echo still find their keys."""
    name = "gemini-no-id"
    stack.set_job_options(
        JobOptions(echo_siblings=False, echo_labels=False, request_echo="string"),
        display_name=name,
    )
    requests = [vb.GeminiRequest(f"k{i}", f"Ticket {i}") for i in range(4)]
    requests.append(vb.GeminiRequest("busy", "Ticket [[vb:error 503 shape=status_text]]"))
    job = client.submit_gemini(name, GEMINI, requests)
    results = results_by_key(stack, client, job)
    assert {k: r.outcome for k, r in results.items()} == {
        **{f"k{i}": "ok" for i in range(4)},
        "busy": "retryable",
    }


def _rows_of(stack: LocalStack, job: dict[str, object]) -> list[dict[str, object]]:
    """The rows of a finished job's predictions.jsonl, read straight from GCS."""
    import json

    directory = job["outputInfo"]["gcsOutputDirectory"]  # type: ignore[index]
    bucket, _, path = str(directory).removeprefix("gs://").partition("/")
    blob = stack.storage_client().bucket(bucket).blob(f"{path}/predictions.jsonl")
    return [json.loads(line) for line in blob.download_as_text().splitlines() if line.strip()]


def test_echo_as_json_string_is_matched_within_bounds() -> None:
    """A string echo is read as the request it holds (normalised or not); one that is not JSON,
    or nests deeper than any request, matches nothing."""
    import json

    from vertexbatch._requests.digests import canonical_digest, key_digest
    from vertexbatch._requests.keymap import KeyMap

    request = {"max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "text"}]}]}
    keys = KeyMap()
    keys.add("k", key_digest("k"), canonical_digest(request))
    normalised = {"max_tokens": 5.0, "system": None, "messages": request["messages"]}
    assert keys.match_echo({"request": json.dumps(normalised)}) == 0
    assert keys.match_echo({"request": json.dumps(normalised)}, taken={0}) is None
    assert keys.match_echo({"request": "not json"}) is None
    assert keys.match_echo({"request": "[" * 1000}) is None
    assert keys.match_echo({"request": json.dumps([request])}) is None


# --- 3. FAILED with completion counts and no output --------------------------------------------

AGENT_CANNOT_WRITE = (
    "The service account service-123456789012@gcp-sa-aiplatform.iam.gserviceaccount.com does "
    "not have storage.objects.create access to the Google Cloud Storage object. Permission "
    "'storage.objects.create' denied on resource (or it may not exist)."
)


def test_failed_with_counts_and_no_output(client: vb.Client, stack: LocalStack) -> None:
    """A job that ran its rows but could not write them (code 7): every key is missing, and each
    MissingError carries the job's code and message, bounded, and survives pickling."""
    import pickle

    name = "agent-cannot-write"
    stack.faults.fail_job(name, code=7, message=AGENT_CANNOT_WRITE, after_rows=99)
    requests = [claude_request(f"k{i}", f"Question {i}") for i in range(3)]
    requests.append(claude_request("bad", "Bad [[vb:error 400]]"))
    job = client.submit_claude(name, CLAUDE, requests)
    done = stack.wait_job(job.name)
    assert done["state"] == "JOB_STATE_FAILED" and done["error"]["code"] == 7
    assert done["completionStats"] == {"successfulCount": "3", "failedCount": "1"}
    status = client.status(job)
    assert (status.succeeded, status.failed, status.error_code) == (3, 1, 7)
    results = list(client.results(job))
    assert [r.key for r in results] == [r.key for r in requests]  # submission order
    for result in results:
        error = result.error
        assert isinstance(error, vb.MissingError) and result.outcome == "missing"
        assert (error.job_error_code, error.job_error_message) == (7, AGENT_CANNOT_WRITE)
        assert "JOB_STATE_FAILED with error 7" in str(error) and "storage.objects.create" in str(
            error
        )
        again = pickle.loads(pickle.dumps(error))
        assert (type(again), again.key, again.job_error_code, again.job_error_message) == (
            vb.MissingError,
            error.key,
            7,
            AGENT_CANNOT_WRITE,
        )
        assert str(again) == str(error)


def test_failed_after_some_rows_and_a_long_job_message(
    client: vb.Client, stack: LocalStack
) -> None:
    """A job failing after 2 of 4 rows shows those in its counts and writes nothing; the job's
    message is kept on one line and cut to MissingError.MAX_JOB_MESSAGE characters."""
    name = "export-fails-midway"
    long_message = "Failed to export data:\n" + "the export step gave up. " * 40
    stack.faults.fail_job(name, code=13, message=long_message, after_rows=2)
    job = client.submit_claude(name, CLAUDE, [claude_request(f"k{i}", f"Q {i}") for i in range(4)])
    done = stack.wait_job(job.name)
    assert done["state"] == "JOB_STATE_FAILED"
    assert done["completionStats"] == {"successfulCount": "2"}
    results = list(client.results(job))
    assert len(results) == 4
    for result in results:
        error = result.error
        assert isinstance(error, vb.MissingError) and error.job_error_code == 13
        assert len(error.job_error_message) == vb.MissingError.MAX_JOB_MESSAGE
        assert error.job_error_message.startswith("Failed to export data: the export step")
        assert error.job_error_message.endswith("…") and "\n" not in str(error)


def test_missing_without_a_job_error_says_so_plainly(client: vb.Client, stack: LocalStack) -> None:
    """A key a succeeded job dropped is missing with no job error attached."""
    job = client.submit_claude("plain-missing", CLAUDE, [claude_request("k", "x [[vb:drop]]")])
    (result,) = results_by_key(stack, client, job).values()
    assert isinstance(result.error, vb.MissingError)
    assert (result.error.job_error_code, result.error.job_error_message) == (0, "")
    assert str(result.error) == "no output line for this key"


# --- 4. Importer rejections that fail a whole job ----------------------------------------------


def _with(request: vb.ClaudeRequest, **params: object) -> vb.ClaudeRequest:
    """The request with more params."""
    return vb.ClaudeRequest(request.key, {**request.params, **params})


def test_claude_string_and_block_shapes_mix_in_one_job(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """system and content as strings on some requests and as blocks on others stage as blocks
    only, so the job runs (the local importer, like Vertex's, fails a job that mixes them); with
    no custom_id echoed, every row still finds its key by the digest of the staged shape."""
    name = "mixed-shapes"
    stack.set_job_options(JobOptions(echo_siblings=False), display_name=name)
    blocks = [{"type": "text", "text": "Review the diff."}]
    tool_use = {"type": "tool_use", "id": "t1", "name": "f", "input": {"q": "x"}}

    def user(content: object) -> dict[str, object]:
        return {"role": "user", "content": content}

    def result(content: object) -> dict[str, object]:
        return {"type": "tool_result", "tool_use_id": "t1", "content": content}

    requests = [
        vb.ClaudeRequest("plain", {"max_tokens": 9, "messages": [user("Hi")]}),
        vb.ClaudeRequest(
            "system-string", {"max_tokens": 9, "system": "Be brief.", "messages": [user(blocks)]}
        ),
        vb.ClaudeRequest(
            "system-blocks",
            {
                "max_tokens": 9,
                "system": [{"type": "text", "text": "Be brief."}],
                "messages": [
                    user("Hi"),
                    {"role": "assistant", "content": [tool_use]},
                    user([result("42")]),
                ],
            },
        ),
        vb.ClaudeRequest(
            "tool-result-blocks", {"max_tokens": 9, "messages": [user([result(blocks)])]}
        ),
    ]
    before = [dict(r.params) for r in requests]
    job = client.submit_claude(name, CLAUDE, requests)
    assert [dict(r.params) for r in requests] == before  # the caller's params are not modified
    results = results_by_key(stack, client, job)
    assert {k: r.outcome for k, r in results.items()} == {r.key: "ok" for r in requests}
    done = stack.wait_job(job.name)
    for row in _rows_of(stack, done):
        request = row["request"]
        assert isinstance(request, dict)
        assert request["system"] is None or isinstance(request["system"], list)
        assert all(isinstance(m["content"], list) for m in request["messages"])


def test_null_inside_a_list_is_refused_before_staging(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """A null in a list would fail the whole job: refused naming the field, nothing staged."""
    request = _with(claude_request("k", "Hi"), stop_sequences=["END", None])
    with pytest.raises(vb.InvalidRequestError) as info:
        client.submit_claude("null-in-list", CLAUDE, [claude_request("a", "x"), request])
    assert "params.stop_sequences[1] is null inside a list" in str(info.value)
    assert "Only optional fields can be set to NULL" in str(info.value)
    assert info.value.field == "params"
    assert bucket_names(stack, bucket) == []


def test_a_field_whose_type_differs_between_lines_is_refused(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """A field that is a string on one line and a number on another is refused with its path,
    both line numbers and both keys; nothing is staged. The same through a run."""
    requests = [
        _with(claude_request("k0", "Hi"), metadata={"user_id": "user-7"}),
        claude_request("k1", "Hi"),
        _with(claude_request("k2", "Hi"), metadata={"user_id": 7}),
    ]
    with pytest.raises(vb.InvalidRequestError) as info:
        client.submit_claude("mixed-types", CLAUDE, requests)
    message = str(info.value)
    assert "params.metadata.user_id is a number on line 3 (request 'k2')" in message
    assert "a string on line 1 (request 'k0')" in message
    assert "user-7" not in message
    assert bucket_names(stack, bucket) == []
    with pytest.raises(vb.InvalidRequestError, match="line 3"):
        client.run_claude("mixed-run", CLAUDE, requests)


def test_gemini_mixed_schema_types_are_refused(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """A JSON schema field that is a string in one request and a list in the next: refused,
    named by documented names and positions (property names are content)."""

    def request(key: str, kind: object) -> vb.GeminiRequest:
        schema = {"type": "object", "properties": {"secret_name": {"type": kind}}}
        return vb.GeminiRequest(key, "Hi", {"response_json_schema": schema})

    with pytest.raises(vb.InvalidRequestError) as info:
        client.submit_gemini(
            "gemini-mixed", GEMINI, [request("a", "string"), request("b", ["string", "null"])]
        )
    message = str(info.value)
    assert "generationConfig.responseJsonSchema.properties.<field 1>.type is a list" in message
    assert "secret_name" not in message and info.value.field == "config"
    assert bucket_names(stack, bucket) == []


# --- 5. States and endings ---------------------------------------------------------------------


def _state(stack: LocalStack, job: vb.Job, state: str) -> dict[str, object]:
    """Wait (no polling) until the job shows `state`."""
    return stack.wait_job(job.name, until=lambda j: j["state"] == state)


def test_queued_before_pending(client: vb.Client, stack: LocalStack) -> None:
    """A job created QUEUED: status says so (not terminal, no counts), results yield nothing
    yet, find returns it; once released it goes PENDING, runs and succeeds."""
    name = "queued"
    stack.faults.hold(display_name=name, state="QUEUED")
    requests = [claude_request(f"k{i}", f"Q {i}") for i in range(3)]
    job = client.submit_claude(name, CLAUDE, requests)
    status = client.status(job)
    assert (status.state, status.terminal, status.succeeded) == ("JOB_STATE_QUEUED", False, -1)
    assert list(client.results(job)) == []
    assert client.find(name) == job
    stack.faults.release(display_name=name)
    assert stack.wait_job(job.name)["state"] == "JOB_STATE_SUCCEEDED"
    assert {r.outcome for r in client.results(job)} == {"ok"}


def test_paused_is_terminal_for_the_client_until_resumed(
    client: vb.Client, stack: LocalStack
) -> None:
    """PAUSED makes no progress on its own: status calls it terminal, results yield the rows
    written and the rest as missing. Resumed, the job runs on, and results read later yield
    lines for keys an earlier read reported missing."""
    name = "paused"
    stack.faults.hold(display_name=name, state="PAUSED", after_rows=2)
    requests = [claude_request(f"k{i}", f"Q {i}") for i in range(4)]
    job = client.submit_claude(name, CLAUDE, requests)
    _state(stack, job, "JOB_STATE_PAUSED")
    status = client.status(job)
    assert (status.state, status.terminal, status.succeeded) == ("JOB_STATE_PAUSED", True, 2)
    early = list(client.results(job))
    assert sorted(r.outcome for r in early) == ["missing", "missing", "ok", "ok"]
    missing = [r.error for r in early if isinstance(r.error, vb.MissingError)]
    assert all(error.job_error_code == 0 for error in missing)
    stack.faults.release(display_name=name)
    assert stack.wait_job(job.name)["state"] == "JOB_STATE_SUCCEEDED"
    assert {r.key: r.outcome for r in client.results(job)} == {r.key: "ok" for r in requests}


def test_a_paused_twin_is_cancelled(client: vb.Client, stack: LocalStack, bucket: str) -> None:
    """A twin that is PAUSED may still be resumed: the identity protocol cancels it too."""
    name = "paused-twin"
    stack.faults.hold(display_name=name, state="PAUSED", after_rows=1)
    requests = [claude_request(f"k{i}", f"Q {i}") for i in range(3)]
    first = client.submit_claude(name, CLAUDE, requests)
    # Forget the record, then make a twin as a submitter that died before recording would.
    stack.storage_client().bucket(bucket).blob(f"jobs/{name}/job.json").delete()
    jobs = stack.jobs_client()
    twin = jobs.create_batch_prediction_job(
        parent=f"projects/{stack.project}/locations/{stack.location}",
        batch_prediction_job=jobs.get_batch_prediction_job(name=first.name),
    )
    _state(stack, first, "JOB_STATE_PAUSED")
    stack.wait_job(twin.name, until=lambda j: j["state"] == "JOB_STATE_PAUSED")
    assert client.submit_claude(name, CLAUDE, requests) == first
    assert stack.wait_job(twin.name)["state"] == "JOB_STATE_CANCELLED"
    assert client.status(first).state == "JOB_STATE_PAUSED"


def test_partially_succeeded(client: vb.Client, stack: LocalStack) -> None:
    """A job ending PARTIALLY_SUCCEEDED is terminal; its rows read as usual."""
    name = "partly"
    stack.set_job_options(JobOptions(partially_succeeded=True), display_name=name)
    requests = [claude_request("ok", "Fine"), claude_request("bad", "x [[vb:error 400]]")]
    job = client.submit_claude(name, CLAUDE, requests)
    assert stack.wait_job(job.name)["state"] == "JOB_STATE_PARTIALLY_SUCCEEDED"
    status = client.status(job)
    assert status.terminal and (status.succeeded, status.failed) == (1, 1)
    assert {k: r.outcome for k, r in results_by_key(stack, client, job).items()} == {
        "ok": "ok",
        "bad": "failed",
    }
    stack.set_job_options(JobOptions(partially_succeeded=True), display_name="all-fine")
    clean = client.submit_claude("all-fine", CLAUDE, [claude_request("ok", "Fine")])
    assert stack.wait_job(clean.name)["state"] == "JOB_STATE_SUCCEEDED"  # no failed row


@pytest.mark.parametrize("ends", ["SUCCEEDED", "FAILED"])
def test_a_cancel_that_came_too_late(client: vb.Client, stack: LocalStack, ends: str) -> None:
    """Cancelled while RUNNING, the job shows CANCELLING (not terminal), then ends SUCCEEDED
    with every row, or FAILED with the rows done so far and the rest missing with its error."""
    name = f"late-cancel-{ends.lower()}"
    stack.faults.late_cancel(name, ends=ends, code=13, message="Internal error encountered.")  # type: ignore[arg-type]
    stack.faults.hold(display_name=name, state="RUNNING", after_rows=2)
    requests = [claude_request(f"k{i}", f"Q {i}") for i in range(4)]
    job = client.submit_claude(name, CLAUDE, requests)
    stack.wait_job(
        job.name, until=lambda j: sum(map(int, j.get("completionStats", {}).values())) == 2
    )
    client.cancel(job)
    status = client.status(job)
    assert (status.state, status.terminal) == ("JOB_STATE_CANCELLING", False)
    assert len(list(client.results(job))) == 2  # not terminal: no missing keys yet
    stack.faults.release(display_name=name)
    done = stack.wait_job(job.name)
    assert done["state"] == f"JOB_STATE_{ends}"
    results = list(client.results(job))
    outcomes = sorted(r.outcome for r in results)
    if ends == "SUCCEEDED":
        assert outcomes == ["ok"] * 4 and "error" not in done
    else:
        assert outcomes == ["missing", "missing", "ok", "ok"]
        assert done["completionStats"] == {"successfulCount": "2", "incompleteCount": "2"}
        for result in results:
            if isinstance(result.error, vb.MissingError):
                assert result.error.job_error_code == 13


def test_an_input_bucket_gone_fails_the_job_with_code_9(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """The bucket is gone by the time the job runs: FAILED with code 9 after a create that was
    accepted; status tells it, and results cannot read the job (its key map is gone too)."""
    name = "bucket-gone"
    stack.faults.hold(display_name=name, state="PENDING")
    job = client.submit_claude(name, CLAUDE, [claude_request("k", "Q")])
    gcs = stack.storage_client()
    for blob in list(gcs.list_blobs(bucket)):
        blob.delete()
    gcs.bucket(bucket).delete()
    stack.faults.release(display_name=name)
    assert stack.wait_job(job.name)["state"] == "JOB_STATE_FAILED"
    status = client.status(job)
    assert (status.error_code, status.terminal) == (9, True)
    assert status.error_message == f"Failed to get GCS bucket location for gs://{bucket}."
    with pytest.raises(vb.JobError):
        list(client.results(job))
    stack.create_bucket(bucket)  # for the fixture's clean-up


def test_an_export_failure_code_13(client: vb.Client, stack: LocalStack) -> None:
    """Every row ran, the export failed: FAILED with counts and code 13, every key missing."""
    name = "export-fails"
    message = "Failed to export data to the output location."
    stack.faults.fail_job(name, code=13, message=message, after_rows=10**6)
    job = client.submit_claude(name, CLAUDE, [claude_request(f"k{i}", f"Q {i}") for i in range(3)])
    done = stack.wait_job(job.name)
    assert done["completionStats"] == {"successfulCount": "3"} and done["error"]["code"] == 13
    results = list(client.results(job))
    assert [r.outcome for r in results] == ["missing"] * 3
    assert all(
        isinstance(r.error, vb.MissingError) and r.error.job_error_message == message
        for r in results
    )


# --- 6. The output directory is not named by createTime -----------------------------------------


def test_output_directory_is_read_from_the_job_not_built(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """The output directory is named about two seconds before createTime; results read the one
    the job names, and a job with none yet reads nothing, even with other output (a twin's)
    under the same prefix."""
    from datetime import datetime

    job = client.submit_claude("out-dir", CLAUDE, [claude_request("k", "Q")])
    done = stack.wait_job(job.name)
    directory = str(done["outputInfo"]["gcsOutputDirectory"])
    named = datetime.fromisoformat(directory.rsplit("prediction-model-", 1)[1])
    created = datetime.fromisoformat(str(done["createTime"]))
    assert 1.0 < (created - named).total_seconds() < 3.0
    assert [r.outcome for r in client.results(job)] == ["ok"]

    stack.faults.hold(display_name="out-dir-held", state="PENDING")
    held = client.submit_claude("out-dir-held", CLAUDE, [claude_request("k", "Q")])
    # What a twin that ran would have left under the id's output prefix, built from createTime.
    created_at = stack.jobs_client().get_batch_prediction_job(name=held.name).create_time
    row = _rows_of(stack, done)[0]
    path = held.output_prefix.removeprefix(f"gs://{bucket}/").rstrip("/")
    stamp = created_at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    stack.storage_client().bucket(bucket).blob(
        f"{path}/prediction-model-{stamp}/predictions.jsonl"
    ).upload_from_string(json.dumps(row) + "\n")
    assert list(client.results(held)) == []
    assert client.status(held).state == "JOB_STATE_PENDING"
    stack.faults.release(display_name="out-dir-held")
    stack.wait_job(held.name)
    assert [r.outcome for r in client.results(held)] == ["ok"]


# --- 7. The model catalogue --------------------------------------------------------------------


def test_a_model_the_catalogue_does_not_hold(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """Create with a model Vertex does not serve: 404 NOT_FOUND from the catalogue, which the
    client turns into InvalidRequestError naming the model and the location; the id stays
    usable, and a model added to the catalogue is served."""
    requests = [claude_request("k", "Q")]
    with pytest.raises(vb.InvalidRequestError) as info:
        client.submit_claude("catalogue", "claude-haiku-5-5@default", requests)
    message = str(info.value)
    assert "'claude-haiku-5-5@default'" in message and f"location '{stack.location}'" in message
    assert "404 NotFound" in message and info.value.field == "model"
    assert all(j["displayName"] != "catalogue" for j in stack.jobs())
    stack.add_model("anthropic", "claude-haiku-5-5")
    assert "claude-haiku-5-5" in stack.models()["anthropic"]
    job = client.submit_claude("catalogue", "claude-haiku-5-5@default", requests)
    assert job.model == "claude-haiku-5-5@default"
    assert [r.outcome for r in results_by_key(stack, client, job).values()] == ["ok"]


def test_the_default_catalogue_and_its_code() -> None:
    """The default catalogue holds the models the project uses, in Vertex's version forms; another
    code may be asked for, and only the publishers the stack serves are taken (anthropic, google,
    the managed open models')."""
    from vertexbatch.emulator import DEFAULT_MODELS
    from vertexbatch.emulator._catalogue import Catalogue
    from vertexbatch.emulator._errors import ApiError

    assert "claude-opus-5-5" in DEFAULT_MODELS["anthropic"]
    assert "gemini-3.8-flash" in DEFAULT_MODELS["google"]
    catalogue = Catalogue(missing_code=400)
    assert catalogue.holds("anthropic", "claude-opus-5-5@default")
    assert catalogue.holds("anthropic", "claude-opus-5-5@20261001")
    assert catalogue.holds("anthropic", "claude-opus-5-5")
    assert not catalogue.holds("anthropic", "claude-opus-5-5@no-such-version")
    assert not catalogue.holds("anthropic", "gemini-3.8-flash")
    with pytest.raises(ApiError) as info:
        catalogue.check("1", "us-central1", "google", "gemini-0.0")
    assert (info.value.code, info.value.status) == (400, "INVALID_ARGUMENT")
    exact = Catalogue({"google": ["gemini-9@001"]})
    assert exact.holds("google", "gemini-9@001") and not exact.holds("google", "gemini-9@002")
    exact.add("meta", "llama-4")  # an open model's publisher (the openmaas lane)
    assert exact.holds("meta", "llama-4")
    with pytest.raises(ValueError):
        exact.add("cohere", "command-r")  # a publisher the stack does not serve
    with pytest.raises(ValueError):
        Catalogue(missing_code=200)


# --- The Claude concurrency cap, as queueing ----------------------------------------------------


@pytest.mark.processes
def test_claude_jobs_over_the_cap_queue_instead_of_failing() -> None:
    """With claude_over_cap="queue", a Claude job past the cap is created and stays PENDING until
    a running one ends; the client sees an ordinary PENDING job."""
    with LocalStack(claude_concurrency=1, claude_over_cap="queue") as stack:
        client = stack.client(bucket="queue-mode", retry=vb.RetryPolicy.no_wait())
        stack.faults.hold(display_name="first", state="RUNNING", after_rows=1)
        first = client.submit_claude(
            "first", CLAUDE, [claude_request(f"k{i}", "Q") for i in range(2)]
        )
        stack.wait_job(
            first.name, until=lambda j: j.get("completionStats") == {"successfulCount": "1"}
        )
        second = client.submit_claude("second", CLAUDE, [claude_request("k", "Q")])
        gemini = client.submit_gemini("gemini", GEMINI, [vb.GeminiRequest("k", "Q")])
        assert stack.wait_job(gemini.name)["state"] == "JOB_STATE_SUCCEEDED"  # not capped
        status = client.status(second)
        assert (status.state, status.terminal) == ("JOB_STATE_PENDING", False)
        stack.faults.release(display_name="first")
        assert stack.wait_job(first.name)["state"] == "JOB_STATE_SUCCEEDED"
        assert stack.wait_job(second.name)["state"] == "JOB_STATE_SUCCEEDED"
        assert [r.outcome for r in client.results(second)] == ["ok"]
    with pytest.raises(ValueError):
        LocalStack(claude_over_cap="wait")  # type: ignore[arg-type]
