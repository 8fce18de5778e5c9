"""Submission identity against the local stack: one id, one set of rows, one live job."""

from __future__ import annotations

import json
import threading
from email.message import Message

import pytest
from google.api_core import exceptions as api_exceptions
from google.cloud import aiplatform_v1

import vertexbatch as vb
from tests.gcs_gate import Spoil, body_gate
from tests.helpers import claude_requests, gemini_requests, jobs_named, local_client
from vertexbatch.emulator import LocalStack

MODEL = "claude-opus-5-5@default"


def _live(jobs: list[dict]) -> list[dict]:
    return [j for j in jobs if j["state"] not in ("JOB_STATE_CANCELLED", "JOB_STATE_CANCELLING")]


def test_submit_twice_returns_the_same_job(client: vb.Client, stack: LocalStack) -> None:
    """The same id and rows submitted twice give one job, and Vertex holds one job."""
    first = client.submit_claude("same-twice", MODEL, claude_requests(3))
    second = client.submit_claude("same-twice", MODEL, claude_requests(3))
    assert first == second
    assert first.keys == 3 and first.provider == "anthropic" and first.model == MODEL
    assert [j["name"] for j in jobs_named(stack, client.bucket, "same-twice")] == [first.name]


def test_staging_layout(client: vb.Client, stack: LocalStack, bucket: str) -> None:
    """Input, key map, manifest and record sit under PREFIX/ID/, and the job reads that input."""
    stack.faults.hold("layout")  # no output yet: the folder holds what submit staged, only that
    job = client.submit_gemini("layout", "gemini-3.8-flash", gemini_requests(2))
    names = sorted(b.name for b in stack.storage_client().list_blobs(bucket, prefix="jobs/layout/"))
    assert names == [
        "jobs/layout/input.jsonl",
        "jobs/layout/job.json",
        "jobs/layout/keys.jsonl",
        "jobs/layout/manifest.json",
    ]
    assert job.input_uri == f"gs://{bucket}/jobs/layout/input.jsonl"
    assert job.output_prefix == f"gs://{bucket}/jobs/layout/output"
    record = json.loads(
        stack.storage_client().bucket(bucket).blob("jobs/layout/job.json").download_as_bytes()
    )
    assert record["name"] == job.name
    vertex_job = stack.jobs_client().get_batch_prediction_job(name=job.name)
    assert vertex_job.model.endswith("publishers/google/models/gemini-3.8-flash")
    assert vertex_job.labels["vertexbatch_id"] == "layout"
    assert list(vertex_job.input_config.gcs_source.uris) == [job.input_uri]


def test_job_round_trips_through_json(client: vb.Client) -> None:
    """A Job persisted as JSON rebuilds to the same value, usable for status."""
    job = client.submit_claude("persist", MODEL, claude_requests(1))
    again = vb.Job.from_dict(json.loads(json.dumps(job.to_dict())))
    assert again == job
    assert client.status(again).state.startswith("JOB_STATE_")


def test_job_from_dict_names_bad_field() -> None:
    """A damaged job dict is refused, naming the field."""
    with pytest.raises(vb.InvalidRequestError, match="'keys' must be int"):
        vb.Job.from_dict(
            {
                "id": "a",
                "name": "n",
                "provider": "google",
                "model": "m",
                "input_uri": "gs://b/i",
                "output_prefix": "gs://b/o",
                "keys": "3",
            }
        )


def test_find(client: vb.Client) -> None:
    """find returns the submitted job, and None for an id never submitted."""
    assert client.find("never-submitted") is None
    job = client.submit_claude("findable", MODEL, claude_requests(2))
    assert client.find("findable") == job


def test_generator_input(client: vb.Client) -> None:
    """Requests may come from a generator."""
    job = client.submit_claude("from-gen", MODEL, (r for r in claude_requests(5)))
    assert job.keys == 5


def test_different_rows_under_claimed_id(client: vb.Client, stack: LocalStack, bucket: str) -> None:
    """Other rows under an id already claimed are refused; staged objects stay byte-identical."""
    client.submit_claude("claimed", MODEL, claude_requests(3))
    blobs = {
        b.name: b.download_as_bytes()
        for b in stack.storage_client().list_blobs(bucket, prefix="jobs/claimed/")
        if "/output/" not in b.name
    }
    with pytest.raises(vb.InvalidRequestError, match="already claimed for other rows"):
        client.submit_claude("claimed", MODEL, claude_requests(3, text="Other {i}"))
    with pytest.raises(vb.InvalidRequestError, match="already claimed"):
        client.submit_claude("claimed", "claude-sonnet-5", claude_requests(3))
    after = {
        b.name: b.download_as_bytes()
        for b in stack.storage_client().list_blobs(bucket, prefix="jobs/claimed/")
        if "/output/" not in b.name
    }
    assert after == blobs
    assert len(jobs_named(stack, client.bucket, "claimed")) == 1


@pytest.mark.parametrize(
    ("requests", "message"),
    [
        ([], "no requests"),
        (claude_requests(1) + claude_requests(1), "'key-0' appears twice"),
        ([vb.ClaudeRequest("", {"max_tokens": 1, "messages": []})], "must not be empty"),
        ([vb.GeminiRequest("a", "x")], "expected ClaudeRequest items, got GeminiRequest"),
    ],
)
def test_bad_input_makes_no_cloud_call(
    client: vb.Client, stack: LocalStack, bucket: str, requests: list, message: str
) -> None:
    """Bad request sets fail with a clear error, and nothing is staged or created."""
    with pytest.raises(vb.InvalidRequestError, match=message):
        client.submit_claude("bad-input", MODEL, requests)
    assert list(stack.storage_client().list_blobs(bucket)) == []
    assert stack.calls()["create"] == 0


def test_bad_line_midway_leaves_nothing(client: vb.Client, stack: LocalStack, bucket: str) -> None:
    """A bad request after good ones aborts staging: no object exists, so a retry can proceed."""
    requests = [*claude_requests(3), vb.ClaudeRequest("key-0", {"max_tokens": 1, "messages": []})]
    with pytest.raises(vb.InvalidRequestError, match="appears twice"):
        client.submit_claude("midway", MODEL, iter(requests))
    assert list(stack.storage_client().list_blobs(bucket)) == []
    job = client.submit_claude("midway", MODEL, claude_requests(3))
    assert job.keys == 3


def test_bad_id_and_model(client: vb.Client, stack: LocalStack) -> None:
    """Bad ids and prefixed models fail before any cloud call."""
    with pytest.raises(vb.InvalidRequestError, match="'Bad Id'"):
        client.submit_claude("Bad Id", MODEL, claude_requests(1))
    with pytest.raises(vb.InvalidRequestError, match="bare Vertex model id"):
        client.submit_gemini(
            "ok-id", "publishers/google/models/gemini-3.8-flash", gemini_requests(1)
        )
    assert sum(stack.calls().values()) == 0


def test_foreign_output_job_is_refused(client: vb.Client, stack: LocalStack, bucket: str) -> None:
    """A job with the id's name and input but another output is an error, not adopted."""
    job = client.submit_claude("foreign", MODEL, claude_requests(1))
    stack.jobs_client().create_batch_prediction_job(
        parent=f"projects/{stack.project}/locations/{stack.location}",
        batch_prediction_job=aiplatform_v1.BatchPredictionJob(
            display_name="foreign",
            model=f"publishers/anthropic/models/{MODEL}",
            input_config={"instances_format": "jsonl", "gcs_source": {"uris": [job.input_uri]}},
            output_config={
                "predictions_format": "jsonl",
                "gcs_destination": {"output_uri_prefix": f"gs://{bucket}/elsewhere"},
            },
            labels={"vertexbatch_id": "foreign"},
        ),
    )
    stack.storage_client().bucket(bucket).blob("jobs/foreign/job.json").delete()
    with pytest.raises(vb.InvalidRequestError, match=r"writes to 'gs://.*/elsewhere'"):
        client.submit_claude("foreign", MODEL, claude_requests(1))


def test_record_naming_missing_job(client: vb.Client, stack: LocalStack, bucket: str) -> None:
    """A record naming a job that does not exist is an error naming the record and job."""
    client.submit_claude("bad-record", MODEL, claude_requests(1))
    blob = stack.storage_client().bucket(bucket).blob("jobs/bad-record/job.json")
    blob.delete()
    parent = f"projects/{stack.project}/locations/{stack.location}"
    ghost = f"{parent}/batchPredictionJobs/1234567890123456789"
    blob.upload_from_string(json.dumps({"name": ghost}), content_type="application/json")
    with pytest.raises(vb.InvalidRequestError, match="1234567890123456789, which does not exist"):
        client.submit_claude("bad-record", MODEL, claude_requests(1))
    with pytest.raises(vb.InvalidRequestError, match="does not exist"):
        client.find("bad-record")


def test_a_job_made_while_another_recorded_a_ghost_is_cancelled(
    client: vb.Client, stack: LocalStack
) -> None:
    """This caller creates a job, but another submitter's record (naming a job that no longer
    exists) is there first: the error names the record, and the job made is cancelled, not left
    running with nothing naming it."""
    stack.faults.hold(display_name="ghost", state="PENDING")
    parent = f"projects/{stack.project}/locations/{stack.location}"
    ghost = f"{parent}/batchPredictionJobs/1234567890123456789"
    record = stack.storage_client().bucket(client.bucket).blob(f"{client.prefix}/ghost/job.json")
    other = json.dumps({"name": ghost, "id": "ghost"}, sort_keys=True, indent=1)
    raced: list[str] = []

    def other_records_first(method: str, path: str, headers: Message, body: bytes) -> Spoil | None:
        if not raced and method == "POST" and b'/ghost/job.json"' in body:
            raced.append(path)  # just before this one's record reaches GCS, the other's does
            record.upload_from_string(other, content_type="application/json", if_generation_match=0)
        return None

    with body_gate(stack.storage_endpoint, other_records_first) as url:
        gated = local_client(stack, client.bucket, storage_endpoint=url, prefix=client.prefix)
        with pytest.raises(
            vb.InvalidRequestError, match="1234567890123456789, which does not exist"
        ):
            gated.submit_claude("ghost", MODEL, claude_requests(1))
    assert raced
    jobs = jobs_named(stack, client.bucket, "ghost")
    assert len(jobs) == 1 and _live(jobs) == []


def test_lost_create_response_is_adopted(client: vb.Client, stack: LocalStack) -> None:
    """A create that took effect but answered 503 is found by the next attempt's list: one job."""
    stack.faults.lose_response("create", times=1)
    job = client.submit_claude("lost-create", MODEL, claude_requests(2))
    jobs = jobs_named(stack, client.bucket, "lost-create")
    assert [j["name"] for j in jobs] == [job.name]
    assert stack.calls()["create"] == 1


def test_a_lost_create_of_a_submitter_that_adopts_anothers_record_is_cancelled(
    client: vb.Client, stack: LocalStack
) -> None:
    """B's create takes effect but its answer is lost, and B's job lags in list; meanwhile A
    creates and records its own job. B's retry adopts A's recorded job, and keeps listing until
    its own lost job shows, then cancels it: one live job."""
    stack.faults.hold(display_name="lost-b", state="PENDING")  # twins stay live, as real ones do
    requests = claude_requests(2)
    stack.faults.fail("create", status=403)  # stage first: both go straight to list and create
    with pytest.raises(api_exceptions.Forbidden):
        client.submit_claude("lost-b", MODEL, requests)
    stack.faults.list_lag(lists=5)  # B's job will lag in list
    stack.faults.block("create", when="after")
    out: dict[str, object] = {}

    def submit_b() -> None:
        try:
            out["b"] = client.submit_claude("lost-b", MODEL, requests)
        except Exception as exc:  # reported by the assertion below
            out["b"] = exc

    b = threading.Thread(target=submit_b)
    b.start()
    stack.faults.wait_blocked("create")  # B's job exists; B has no answer yet
    stack.faults.list_lag(lists=0)  # A's job shows at once
    a = client.submit_claude("lost-b", MODEL, requests)  # A creates and records its job
    stack.faults.unblock("create", drop=True)  # B's create answer is lost (503)
    b.join()
    assert out["b"] == a
    assert [j["name"] for j in _live(jobs_named(stack, client.bucket, "lost-b"))] == [a.name]


def test_storms_and_list_lag_leave_one_live_job(client: vb.Client, stack: LocalStack) -> None:
    """503/429 storms on list and create, list lag: the call returns, no duplicate survives."""
    stack.faults.hold(display_name="storm", state="PENDING")  # twins stay live, as real ones do
    stack.faults.list_lag(lists=2)
    stack.faults.fail("list", status=503, times=3)
    stack.faults.lose_response("create", times=1)
    stack.faults.fail("create", status=429, times=2)
    job = client.submit_claude("storm", MODEL, claude_requests(2))
    live = _live(jobs_named(stack, client.bucket, "storm"))
    assert [j["name"] for j in live] == [job.name]
    assert client.find("storm") == job


def test_crash_between_create_and_record(client: vb.Client, stack: LocalStack, bucket: str) -> None:
    """Jobs with no record: find returns the earliest; submit records it and cancels the rest."""
    stack.faults.hold(display_name="crashy", state="PENDING")
    requests = claude_requests(2)
    first = client.submit_claude("crashy", MODEL, requests)
    # Forget the record, then create a twin as a submitter that died before recording would:
    # the same display name, label, input and output.
    stack.storage_client().bucket(bucket).blob("jobs/crashy/job.json").delete()
    jobs = stack.jobs_client()
    twin = jobs.create_batch_prediction_job(
        parent=f"projects/{stack.project}/locations/{stack.location}",
        batch_prediction_job=jobs.get_batch_prediction_job(name=first.name),
    )
    assert client.find("crashy") == first
    assert client.submit_claude("crashy", MODEL, requests) == first
    assert stack.wait_job(twin.name)["state"] == "JOB_STATE_CANCELLED"
    assert stack.jobs_client().get_batch_prediction_job(name=first.name).state.name == (
        "JOB_STATE_PENDING"
    )
    assert client.find("crashy") == first


def test_crash_after_input_before_key_map(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """A submitter died after the input, before the key map: the retry completes the staging."""
    requests = claude_requests(3)
    client.submit_claude("half-staged", MODEL, requests)
    store = stack.storage_client().bucket(bucket)
    for leaf in ("keys.jsonl", "manifest.json", "job.json"):
        store.blob(f"jobs/half-staged/{leaf}").delete()
    job = client.submit_claude("half-staged", MODEL, requests)
    assert store.blob("jobs/half-staged/keys.jsonl").exists()
    stack.wait_job(job.name)
    assert sorted(r.key for r in client.results(job)) == sorted(r.key for r in requests)
