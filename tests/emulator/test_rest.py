"""The batchPredictionJobs REST surface, through aiplatform_v1 and plain HTTP."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

import pytest
from google.api_core import exceptions as gexc
from google.cloud import aiplatform_v1

from vertexbatch.emulator import Faults, LocalStack, Timing
from vertexbatch.emulator._errors import ApiError
from vertexbatch.emulator._jobs import JobStore
from vertexbatch.emulator._spec import parse_create_body

RFC3339_US = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
TERMINAL = {"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED"}


def jobs_path(stack: LocalStack, version: str = "v1", project: str | None = None) -> str:
    project = project or stack.project
    return f"/{version}/projects/{project}/locations/{stack.location}/batchPredictionJobs"


def assert_envelope(body: Any, code: int, status: str) -> str:
    """The Google error envelope with exactly code, message and status (no details)."""
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message", "status"}
    assert body["error"]["code"] == code and body["error"]["status"] == status
    message: str = body["error"]["message"]
    assert message
    return message


def test_create_returns_pending_job_json(lab: Any) -> None:
    """Create answers 200 with a PENDING job: 19-digit id, µs timestamps, echoes, no stats yet."""
    lab.stack.faults.hold(state="PENDING")
    body = lab.job_body(labels={"vb_id": "abc", "team": "x"})
    status, job = lab.raw("POST", jobs_path(lab.stack) + "?%24alt=json%3Benum-encoding%3Dint", body)
    assert status == 200
    assert job["state"] == "JOB_STATE_PENDING"
    match = re.fullmatch(
        r"projects/(\d+)/locations/us-central1/batchPredictionJobs/(\d{19})", job["name"]
    )
    assert match and match.group(1) == lab.stack.project_number
    assert RFC3339_US.match(job["createTime"]) and RFC3339_US.match(job["updateTime"])
    assert job["modelVersionId"] == "1"
    assert job["displayName"] == body["displayName"] and job["model"] == body["model"]
    assert job["inputConfig"] == body["inputConfig"]
    assert job["outputConfig"] == body["outputConfig"]
    assert job["labels"] == {"vb_id": "abc", "team": "x"}
    for absent in ("completionStats", "outputInfo", "startTime", "endTime", "error"):
        assert absent not in job
    lab.stack.faults.release()
    done = lab.stack.wait_job(job["name"])
    assert done["state"] == "JOB_STATE_SUCCEEDED"
    assert RFC3339_US.match(done["startTime"]) and RFC3339_US.match(done["endTime"])
    assert done["createTime"] <= done["startTime"] <= done["endTime"] == done["updateTime"]
    assert done["completionStats"] == {"successfulCount": "1"}
    prefix = body["outputConfig"]["gcsDestination"]["outputUriPrefix"]
    # Named by a moment about two seconds before createTime, as real Vertex names it.
    created = datetime.fromisoformat(done["createTime"])
    named = created - timedelta(seconds=1.886)
    directory = f"{prefix}/prediction-model-{named.strftime('%Y-%m-%dT%H:%M:%S.%fZ')}"
    assert done["outputInfo"] == {"gcsOutputDirectory": directory}


def test_aiplatform_client_round_trip(lab: Any) -> None:
    """The real aiplatform_v1 client creates, gets and lists, with labels intact."""
    job = lab.create(labels={"vb_id": "k1"})
    assert job.state == aiplatform_v1.JobState.JOB_STATE_PENDING
    done = lab.stack.wait_job(job.name)
    fetched = lab.jobs.get_batch_prediction_job(name=job.name)
    assert fetched.state == aiplatform_v1.JobState.JOB_STATE_SUCCEEDED
    assert fetched.labels["vb_id"] == "k1"
    assert fetched.completion_stats.successful_count == 1
    assert fetched.output_info.gcs_output_directory == done["outputInfo"]["gcsOutputDirectory"]
    assert fetched.model_version_id == "1"
    listed = list(
        lab.jobs.list_batch_prediction_jobs(
            request={"parent": lab.parent, "filter": f'display_name="{job.display_name}"'}
        )
    )
    assert [j.name for j in listed] == [job.name]


def test_v1beta1_project_number_and_alt_are_accepted(lab: Any) -> None:
    """/v1beta1 works, any project number means the stack's project, and $alt is ignored."""
    status, job = lab.raw(
        "POST", jobs_path(lab.stack, "v1beta1", "987654321") + "?$alt=json", lab.job_body()
    )
    assert status == 200
    job_id = job["name"].rsplit("/", 1)[1]
    for version, project in (("v1", lab.stack.project), ("v1beta1", lab.stack.project_number)):
        path = (
            f"{jobs_path(lab.stack, version, project)}/{job_id}?%24alt=json%3Benum-encoding%3Dint"
        )
        status, got = lab.raw("GET", path)
        assert status == 200 and isinstance(got["state"], str) and got["name"] == job["name"]


def test_other_project_id_is_denied(lab: Any) -> None:
    """A project id that is not the stack's gets 403 PERMISSION_DENIED."""
    status, body = lab.raw("GET", jobs_path(lab.stack, project="someone-else"))
    assert status == 403
    assert_envelope(body, 403, "PERMISSION_DENIED")


def test_uris_as_a_string_are_accepted(lab: Any) -> None:
    """gcsSource.uris may be a bare string; it is echoed as a list."""
    uri = lab.upload([lab.gemini_line("hello")])
    body = lab.job_body()
    body["inputConfig"]["gcsSource"]["uris"] = uri
    status, job = lab.raw("POST", jobs_path(lab.stack), body)
    assert status == 200 and job["inputConfig"]["gcsSource"]["uris"] == [uri]
    assert lab.stack.wait_job(job["name"])["state"] == "JOB_STATE_SUCCEEDED"


def test_full_model_resource_name_is_accepted(lab: Any) -> None:
    """model may be the full projects/.../publishers/... form."""
    model = f"projects/{lab.stack.project}/locations/us-central1/{lab.CLAUDE}"
    job = lab.create([lab.claude_line("hi")], model=model)
    assert lab.stack.wait_job(job.name)["state"] == "JOB_STATE_SUCCEEDED"


@pytest.mark.parametrize(
    "model",
    [
        "publishers/google/models/gemini-does-not-exist-but-starts-wrong".replace(
            "gemini", "gemma"
        ),
        "publishers/anthropic/models/gemini-2.5-flash",
        "publishers/google/models/claude-sonnet-4-5",
        "publishers/nobody/models/llama-4",
    ],
)
def test_unknown_model_is_404(lab: Any, model: str) -> None:
    """Unknown models (and a model under the other publisher) get 404 with Vertex's message."""
    with pytest.raises(gexc.NotFound) as info:
        lab.create(model=model)
    publisher, model_id = model.split("/")[1], model.split("/")[3]
    assert (
        f"The PublisherModel projects/{lab.stack.project_number}/locations/us-central1/"
        f"publishers/{publisher}/models/{model_id} does not exist. (Local stack: "
        in info.value.message
    )


def test_claude_on_global_is_refused_gemini_is_not(lab: Any) -> None:
    """Claude batch jobs on locations/global get 400; Gemini ones run there."""
    parent = f"projects/{lab.stack.project}/locations/global"
    with pytest.raises(gexc.BadRequest):
        lab.create([lab.claude_line("x")], model=lab.CLAUDE, parent=parent)
    job = lab.create(parent=parent)
    assert "/locations/global/" in job.name
    assert lab.stack.wait_job(job.name)["state"] == "JOB_STATE_SUCCEEDED"
    with pytest.raises(gexc.NotFound):  # a job lives in its own location only
        lab.jobs.get_batch_prediction_job(name=job.name.replace("/global/", "/us-central1/"))


def test_claude_concurrency_cap(lab: Any) -> None:
    """A fifth non-terminal Claude job gets 429 RESOURCE_EXHAUSTED; Gemini jobs are not capped."""
    lab.stack.faults.hold(state="PENDING")
    held = [lab.create([lab.claude_line("x")], model=lab.CLAUDE) for _ in range(4)]
    status, body = lab.raw("POST", jobs_path(lab.stack), lab.job_body(model=lab.CLAUDE))
    assert status == 429
    assert_envelope(body, 429, "RESOURCE_EXHAUSTED")
    gemini = lab.create()
    lab.jobs.cancel_batch_prediction_job(name=held[0].name)
    assert lab.stack.wait_job(held[0].name)["state"] == "JOB_STATE_CANCELLED"
    again = lab.create([lab.claude_line("x")], model=lab.CLAUDE)
    for job in [*held[1:], again, gemini]:
        lab.jobs.cancel_batch_prediction_job(name=job.name)
        assert lab.stack.wait_job(job.name)["state"] == "JOB_STATE_CANCELLED"


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"displayName": None}, "display_name"),
        ({"displayName": ""}, "display_name"),
        ({"model": None}, "model"),
        ({"inputConfig": None}, "input_config"),
        ({"inputConfig": {"instancesFormat": "jsonl", "gcsSource": {"uris": []}}}, "uris"),
        ({"inputConfig": {"instancesFormat": "jsonl", "gcsSource": {"uris": ["/tmp/x"]}}}, "gs://"),
        (
            {"inputConfig": {"instancesFormat": "bigquery", "gcsSource": {"uris": ["gs://a/b"]}}},
            "bigquery_source",
        ),
        ({"inputConfig": {"instancesFormat": "csv", "gcsSource": {"uris": ["gs://a/b"]}}}, "jsonl"),
        ({"outputConfig": None}, "output_uri_prefix"),
        ({"outputConfig": {"gcsDestination": {}}}, "output_uri_prefix"),
        ({"labels": {"Bad": "x"}}, "Label"),
        ({"labels": {"k": "x" * 64}}, "Label"),
        ({"labels": {"k": 1}}, "labels"),
        ({"model": "gemini-2.5-flash"}, "publisher model"),
    ],
)
def test_invalid_create_bodies_are_400(lab: Any, change: dict[str, Any], fragment: str) -> None:
    """Missing or malformed fields get 400 INVALID_ARGUMENT and create nothing."""
    body = lab.job_body()
    for key, value in change.items():
        if value is None:
            del body[key]
        else:
            body[key] = value
    before = len(lab.stack.jobs())
    status, answer = lab.raw("POST", jobs_path(lab.stack), body)
    assert status == 400
    assert fragment in assert_envelope(answer, 400, "INVALID_ARGUMENT")
    assert len(lab.stack.jobs()) == before


@pytest.mark.parametrize(
    ("method", "suffix", "data", "code", "status"),
    [
        ("POST", "", b"{not json", 400, "INVALID_ARGUMENT"),
        ("POST", "", b"", 400, "INVALID_ARGUMENT"),
        ("POST", "", b"[1, 2]", 400, "INVALID_ARGUMENT"),
        ("GET", "/123", None, 404, "NOT_FOUND"),
        ("GET", "/1234567890123456789", None, 404, "NOT_FOUND"),
        ("GET", "/not-a-number", None, 400, "INVALID_ARGUMENT"),
        ("POST", "/1234567890123456789:cancel", b"{}", 404, "NOT_FOUND"),
        ("POST", "/1234567890123456789:cancel", b"{oops", 400, "INVALID_ARGUMENT"),
        ("DELETE", "/1234567890123456789", None, 404, "NOT_FOUND"),
        ("GET", "?pageSize=abc", None, 400, "INVALID_ARGUMENT"),
        ("GET", "?pageSize=-1", None, 400, "INVALID_ARGUMENT"),
        ("GET", "?pageToken=garbage", None, 400, "INVALID_ARGUMENT"),
        ("GET", "?filter=state%3DBOGUS", None, 400, "INVALID_ARGUMENT"),
        ("PUT", "", b"{}", 404, "NOT_FOUND"),
        ("GET", "/1/extra/segments", None, 404, "NOT_FOUND"),
    ],
)
def test_bad_requests_get_the_envelope_and_the_service_keeps_serving(
    lab: Any, method: str, suffix: str, data: bytes | None, code: int, status: str
) -> None:
    """Each bad request gets Vertex's error envelope; the next request is served normally."""
    got, body = lab.raw(method, jobs_path(lab.stack) + suffix, data=data)
    assert got == code
    assert_envelope(body, code, status)
    ok, _ = lab.raw("GET", jobs_path(lab.stack) + "?pageSize=1")
    assert ok == 200


def test_unknown_paths_are_404(lab: Any) -> None:
    """Paths outside the surface get 404 in the envelope."""
    for path in ("/", "/v2/projects/p/locations/l/batchPredictionJobs", "/v1/projects/p"):
        status, body = lab.raw("GET", path)
        assert status == 404
        assert_envelope(body, 404, "NOT_FOUND")


def test_aiplatform_raises_the_mapped_exceptions(lab: Any) -> None:
    """aiplatform maps the envelopes to NotFound and BadRequest."""
    missing = f"{lab.parent}/batchPredictionJobs/1234567890123456789"
    with pytest.raises(gexc.NotFound):
        lab.jobs.get_batch_prediction_job(name=missing)
    with pytest.raises(gexc.BadRequest):
        list(lab.jobs.list_batch_prediction_jobs(request={"parent": lab.parent, "filter": "(("}))


def test_cancel_pending_job(lab: Any) -> None:
    """Cancel answers {} and the job goes CANCELLING → CANCELLED with error code 1."""
    lab.stack.faults.hold(state="PENDING")
    job = lab.create()
    path = f"/v1/{job.name}:cancel"
    status, body = lab.raw("POST", path, data=b"")  # google-genai sends no body
    assert (status, body) == (200, {})
    done = lab.stack.wait_job(job.name)
    assert done["state"] == "JOB_STATE_CANCELLED"
    assert done["error"] == {"code": 1, "message": "CANCELED"}
    assert "completionStats" not in done and "startTime" not in done
    assert RFC3339_US.match(done["endTime"])
    assert lab.names("out") == []
    with pytest.raises(gexc.BadRequest) as info:
        lab.jobs.cancel_batch_prediction_job(name=job.name)
    assert "FAILED_PRECONDITION" in str(info.value.response.json())


def test_cancel_shows_cancelling_until_the_runner_finishes() -> None:
    """Cancel moves a job to CANCELLING at once; the runner later ends it CANCELLED."""
    store = JobStore(
        project="p",
        project_number="1",
        timing=Timing(),
        seed=0,
        claude_concurrency=4,
        faults=Faults(),
        runner=lambda store, job: None,  # no lifecycle: the job stays where cancel puts it
    )
    spec = parse_create_body(
        {
            "displayName": "d",
            "model": "publishers/google/models/gemini-2.5-flash",
            "inputConfig": {"gcsSource": {"uris": "gs://b/i.jsonl"}},
            "outputConfig": {"gcsDestination": {"outputUriPrefix": "gs://b/o"}},
        },
        project="p",
        project_number="1",
        location="l",
    )
    job = store.create("l", spec)
    job_id = job["name"].rsplit("/", 1)[1]
    assert store.cancel("l", job_id) == {}
    assert store.get("l", job_id)["state"] == "JOB_STATE_CANCELLING"
    assert store.cancel("l", job_id) == {}  # a second cancel is accepted
    with pytest.raises(ApiError) as info:
        store.delete("l", job_id)
    assert info.value.status == "FAILED_PRECONDITION"


def test_delete(lab: Any) -> None:
    """Delete of a finished job returns a done Operation and removes it; of a running one, 400."""
    lab.stack.faults.hold(state="PENDING")
    job = lab.create()
    with pytest.raises(gexc.BadRequest):
        lab.jobs.delete_batch_prediction_job(name=job.name)
    lab.stack.faults.release()
    lab.stack.wait_job(job.name)
    operation = lab.jobs.delete_batch_prediction_job(name=job.name)
    assert operation.done()
    operation.result(timeout=5)
    with pytest.raises(gexc.NotFound):
        lab.jobs.get_batch_prediction_job(name=job.name)
    second = lab.create()
    lab.stack.wait_job(second.name)
    status, body = lab.raw("DELETE", f"/v1beta1/{second.name}")
    assert status == 200 and body["done"] is True
    assert body["metadata"]["@type"].endswith("aiplatform.v1beta1.DeleteOperationMetadata")
    status, again = lab.raw("GET", f"/v1beta1/{body['name']}")
    assert (status, again) == (200, body)


def test_list_empty_is_an_empty_object(lab: Any) -> None:
    """A list with no match answers {}."""
    status, body = lab.raw(
        "GET", jobs_path(lab.stack) + "?filter=display_name%3D%22nothing-here%22"
    )
    assert (status, body) == (200, {})


def test_list_filtering_and_paging_over_hundreds_of_jobs(lab: Any) -> None:
    """300 jobs: filters select the right ones and pages walk them in creation order."""
    uri = lab.upload([lab.gemini_line("hi")])
    tag = lab.bucket[-12:].replace("-", "x")
    created = []
    for i in range(300):
        team = "even" if i % 2 == 0 else "odd"
        created.append(
            lab.create(
                uris=[uri],
                display_name=f"{tag}-list-{i:03d}",
                labels={"run": tag, "team": team, **({"vip": "1"} if i % 50 == 0 else {})},
            ).name
        )
    for name in created:
        lab.stack.wait_job(name)

    def names(filter_text: str, page_size: int = 0) -> list[str]:
        request: dict[str, Any] = {"parent": lab.parent, "filter": filter_text}
        if page_size:
            request["page_size"] = page_size
        return [j.name for j in lab.jobs.list_batch_prediction_jobs(request=request)]

    run = f'labels.run="{tag}"'
    assert names(run, page_size=7) == created
    assert names(run) == created  # default page size 50, several pages
    assert names(f"{run} AND labels.team=odd") == created[1::2]
    assert names(f"{run} AND labels.vip:*") == created[::50]
    assert names(f'{run} AND NOT labels.team="even"') == created[1::2]
    assert names(f'display_name:"{tag}-list-00*"') == created[:10]
    assert names(f'display_name="{tag}-list-042" OR display_name="{tag}-list-007"') == [
        created[7],
        created[42],
    ]
    assert names(f"{run} AND state=JOB_STATE_SUCCEEDED") == created
    assert names(f"{run} AND state!=JOB_STATE_SUCCEEDED") == []
    jobs = {j["name"]: j for j in lab.stack.jobs()}
    pivot = jobs[created[100]]["createTime"]
    assert names(f'{run} AND create_time>"{pivot}"') == created[101:]
    assert names(f'{run} AND create_time<="{pivot}"') == created[:101]

    status, page = lab.raw(
        "GET", jobs_path(lab.stack) + f"?pageSize=2000&filter=labels.run%3D{tag}"
    )
    assert status == 200 and len(page["batchPredictionJobs"]) == 300
    assert "nextPageToken" not in page
    status, first = lab.raw(
        "GET", jobs_path(lab.stack) + f"?pageSize=100&filter=labels.run%3D{tag}"
    )
    assert len(first["batchPredictionJobs"]) == 100 and first["nextPageToken"]
    status, body = lab.raw(
        "GET",
        jobs_path(lab.stack)
        + f"?pageSize=100&pageToken={first['nextPageToken']}&filter=state%3DJOB_STATE_FAILED",
    )
    assert status == 400  # a token belongs to its filter
    assert_envelope(body, 400, "INVALID_ARGUMENT")


def test_error_envelopes_have_no_details(lab: Any) -> None:
    """Errors carry code, message and status only (google-genai rejects object details)."""
    status, body = lab.raw("GET", jobs_path(lab.stack) + "/1234567890123456789")
    assert status == 404
    assert "details" not in body["error"]


def test_enums_are_strings_even_when_ints_are_asked_for(lab: Any) -> None:
    """State is always a string enum, whatever $alt asks."""
    job = lab.create()
    lab.stack.wait_job(job.name)
    status, body = lab.raw("GET", f"/v1/{job.name}?%24alt=json%3Benum-encoding%3Dint")
    assert status == 200 and body["state"] == "JOB_STATE_SUCCEEDED"
