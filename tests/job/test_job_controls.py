"""Job controls (labels, CMEK key, service account) through the real clients and the local stack:
on the job, in the id's identity, kept by resubmits and runs, refused creates."""

from __future__ import annotations

from typing import Any

import pytest
from google.api_core import exceptions as api_exceptions
from google.cloud import aiplatform_v1

import vertexbatch as vb
from tests.helpers import (
    claude_request,
    claude_requests,
    jobs_in,
    jobs_named,
    raw_job,
    run_docs_example,
    task,
)
from vertexbatch.emulator import LocalStack

MODEL = "claude-opus-5-5@default"
ACCOUNT = "runner@local-project.iam.gserviceaccount.com"
LABELS = {"team": "search", "cost-center": "cc-42"}


def key_of(stack: LocalStack, name: str = "key") -> str:
    return f"projects/{stack.project}/locations/{stack.location}/keyRings/ring/cryptoKeys/{name}"


def controls(stack: LocalStack, **changes: Any) -> dict[str, Any]:
    return {"labels": LABELS, "kms_key": key_of(stack), "service_account": ACCOUNT, **changes}


def _assert_controlled(job: aiplatform_v1.BatchPredictionJob, stack: LocalStack) -> None:
    assert {k: job.labels[k] for k in LABELS} == LABELS
    assert job.labels["vertexbatch_id"] == job.display_name.replace(".", "_")
    assert job.encryption_spec.kms_key_name == key_of(stack)
    assert job.service_account == ACCOUNT


def test_the_controls_go_on_the_job_as_get_and_list_show(
    client: vb.Client, stack: LocalStack
) -> None:
    """labels, encryptionSpec.kmsKeyName and serviceAccount are on the job Vertex holds."""
    job = client.submit_claude("ctl-on-job", MODEL, claude_requests(2), **controls(stack))
    jobs = stack.jobs_client()
    _assert_controlled(jobs.get_batch_prediction_job(name=job.name), stack)
    listed = jobs.list_batch_prediction_jobs(
        request={
            "parent": f"projects/{stack.project}/locations/{stack.location}",
            "filter": 'display_name="ctl-on-job" AND labels.team="search"',
        }
    )
    mine = [j for j in listed if j.name == job.name]  # the stack is shared by every test
    assert len(mine) == 1
    _assert_controlled(mine[0], stack)


def test_the_same_id_with_the_same_controls_is_the_same_job(
    client: vb.Client, stack: LocalStack
) -> None:
    first = client.submit_claude("ctl-same", MODEL, claude_requests(2), **controls(stack))
    again = client.submit_claude("ctl-same", MODEL, claude_requests(2), **controls(stack))
    assert again == first
    assert len(jobs_named(stack, client.bucket, "ctl-same")) == 1


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"labels": {"team": "ads"}}, "other labels"),
        ({"labels": None}, "other labels"),
        ({"kms_key": None}, "kms_key projects/"),
        ({"service_account": "other@local-project.iam.gserviceaccount.com"}, "service_account"),
    ],
)
def test_the_same_id_with_other_controls_is_refused_naming_which(
    client: vb.Client, stack: LocalStack, bucket: str, change: dict[str, Any], said: str
) -> None:
    """Other controls are refused as other rows are, naming the control, never a label value;
    nothing staged changes and no second job is made."""
    client.submit_claude("ctl-other", MODEL, claude_requests(2), **controls(stack))
    manifest = stack.storage_client().bucket(bucket).blob("jobs/ctl-other/manifest.json")
    before = manifest.download_as_bytes()
    with pytest.raises(vb.InvalidRequestError, match="already claimed") as caught:
        client.submit_claude("ctl-other", MODEL, claude_requests(2), **controls(stack, **change))
    assert said in str(caught.value) and caught.value.field == "id"
    assert "search" not in str(caught.value) and "ads" not in str(caught.value)
    assert manifest.download_as_bytes() == before
    assert len(jobs_named(stack, bucket, "ctl-other")) == 1


def test_bad_controls_are_refused_before_any_cloud_call(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """A bad label, a key of another region, a non-account: refused by submit, plan and run,
    and nothing is staged."""
    other_region = "projects/p/locations/europe-west4/keyRings/r/cryptoKeys/k"
    for bad, field in (
        ({"labels": {"vertexbatch_run": "x"}}, "labels"),
        ({"kms_key": other_region}, "kms_key"),
        ({"service_account": "someone@example.com"}, "service_account"),
    ):
        for call in (client.submit_claude, client.plan_claude, client.run_claude):
            with pytest.raises(vb.InvalidRequestError) as caught:
                call("ctl-bad", MODEL, claude_requests(1), **bad)
            assert caught.value.field == field
    assert not list(stack.storage_client().list_blobs(bucket, prefix="jobs/ctl-bad"))
    assert not +stack.calls()  # no Vertex call at all


def test_a_plan_takes_the_controls_and_sees_the_id_held_with_others(
    client: vb.Client, stack: LocalStack
) -> None:
    job = client.submit_claude("ctl-plan", MODEL, claude_requests(2), **controls(stack))
    plan = client.plan_claude("ctl-plan", MODEL, claude_requests(2), **controls(stack))
    assert plan.submitted == job.name
    with pytest.raises(vb.InvalidRequestError, match="other labels"):
        client.plan_claude("ctl-plan", MODEL, claude_requests(2), labels={"team": "ads"})


def _listed_job_of(stack: LocalStack, bucket: str, submission_id: str, **fields: Any) -> str:
    """A job of the id as another configuration would make it: the id's input and output."""
    return raw_job(stack, bucket, submission_id, MODEL, LABELS, **fields)


def test_a_listed_job_of_the_id_with_other_controls_is_refused_not_adopted(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """Adoption needs the controls to match: a job reading the id's input and writing its output
    with another service account is refused like a job writing elsewhere."""
    stack.faults.fail("create", status=400)  # the rows are staged, no job made
    with pytest.raises(vb.InvalidRequestError, match="Vertex refused"):
        client.submit_claude("ctl-listed", MODEL, claude_requests(2), **controls(stack))
    other = _listed_job_of(
        stack,
        bucket,
        "ctl-listed",
        encryption_spec={"kms_key_name": key_of(stack)},
        service_account="other@local-project.iam.gserviceaccount.com",
    )
    with pytest.raises(vb.InvalidRequestError, match="service_account other@") as caught:
        client.submit_claude("ctl-listed", MODEL, claude_requests(2), **controls(stack))
    assert other in str(caught.value)
    assert [j["name"] for j in jobs_named(stack, bucket, "ctl-listed")] == [other]


def test_a_listed_job_with_the_same_controls_is_adopted(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    stack.faults.fail("create", status=400)
    with pytest.raises(vb.InvalidRequestError):
        client.submit_claude("ctl-adopt", MODEL, claude_requests(2), **controls(stack))
    made = _listed_job_of(
        stack,
        bucket,
        "ctl-adopt",
        encryption_spec={"kms_key_name": key_of(stack)},
        service_account=ACCOUNT,
    )
    job = client.submit_claude("ctl-adopt", MODEL, claude_requests(2), **controls(stack))
    assert job.name == made
    assert len(jobs_named(stack, bucket, "ctl-adopt")) == 1


def test_a_lost_create_with_controls_is_adopted_once(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """The create's answer is lost: the retry lists, finds the job with the controls, adopts it."""
    stack.faults.lose_response("create")
    job = client.submit_claude("ctl-lost", MODEL, claude_requests(2), **controls(stack))
    jobs = jobs_named(stack, bucket, "ctl-lost")
    assert [j["name"] for j in jobs] == [job.name]
    _assert_controlled(stack.jobs_client().get_batch_prediction_job(name=job.name), stack)


@pytest.mark.parametrize(
    ("refuse", "field", "status"),
    [("key", "kms_key", "400 BadRequest"), ("account", "service_account", "403 Forbidden")],
)
def test_a_refused_key_or_account_is_an_invalid_request_and_the_id_stays_usable(
    client: vb.Client, stack: LocalStack, bucket: str, refuse: str, field: str, status: str
) -> None:
    """Vertex refusing the key (400) or the account (403): ``InvalidRequestError`` naming it, no
    job; the same rows under the id with another key or account then go through."""
    if refuse == "key":
        stack.faults.refuse_key(key_of(stack))
        fixed = {"kms_key": key_of(stack, "other")}
    else:
        stack.faults.refuse_account(ACCOUNT)
        fixed = {"service_account": "fixed@local-project.iam.gserviceaccount.com"}
    with pytest.raises(vb.InvalidRequestError, match=status) as caught:
        client.submit_claude("ctl-refused", MODEL, claude_requests(2), **controls(stack))
    assert caught.value.field == field
    assert "no job was made" in str(caught.value)
    assert not jobs_named(stack, bucket, "ctl-refused")
    job = client.submit_claude("ctl-refused", MODEL, claude_requests(2), **controls(stack, **fixed))
    assert [j["name"] for j in jobs_named(stack, bucket, "ctl-refused")] == [job.name]


def test_a_403_without_controls_still_passes_through(client: vb.Client, stack: LocalStack) -> None:
    """Without a key or an account a 403 is the caller's own permission: unchanged."""
    stack.faults.fail("create", status=403)
    with pytest.raises(api_exceptions.Forbidden):
        client.submit_claude("ctl-403", MODEL, claude_requests(1), labels=LABELS)


def test_resubmit_keeps_the_jobs_controls(client: vb.Client, stack: LocalStack) -> None:
    requests = [claude_request("ok", "fine"), claude_request("busy", "busy [[vb:error 429]]")]
    job = client.submit_claude("ctl-resub", MODEL, requests, **controls(stack))
    stack.wait_job(job.name)
    retry = client.resubmit(job)
    assert retry.id == "ctl-resub.r1"
    _assert_controlled(stack.jobs_client().get_batch_prediction_job(name=retry.name), stack)


def test_every_attempt_of_a_run_carries_the_controls_and_a_rejoin_must_match(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    requests = [task(i) for i in range(3)] + [task(3, "[[vb:error 503]]")]
    run = client.run_claude("ctl-run", MODEL, requests, max_attempts=2, **controls(stack))
    for _ in range(6):
        stack.settle()
        if run.advance().done:
            break
    names = sorted(j["displayName"] for j in jobs_in(stack, bucket))
    assert names == ["ctl-run.s0", "ctl-run.s0.r1"]
    for listed in jobs_in(stack, bucket):
        _assert_controlled(stack.jobs_client().get_batch_prediction_job(name=listed["name"]), stack)
    ledger = stack.storage_client().bucket(bucket).blob("jobs/ctl-run/run.json")
    assert b'"kms_key"' in ledger.download_as_bytes()
    assert client.run_claude("ctl-run", MODEL, requests, max_attempts=2, **controls(stack)).id
    with pytest.raises(vb.InvalidRequestError, match="started with other labels"):
        client.run_claude("ctl-run", MODEL, requests, max_attempts=2, labels={"team": "ads"})


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_client_aio_takes_the_controls(
    client: vb.Client, stack: LocalStack, anyio_backend: str
) -> None:
    job = await client.aio.submit_claude("ctl-aio", MODEL, claude_requests(1), **controls(stack))
    _assert_controlled(stack.jobs_client().get_batch_prediction_job(name=job.name), stack)
    with pytest.raises(vb.InvalidRequestError, match="other labels"):
        await client.aio.submit_claude("ctl-aio", MODEL, claude_requests(1), labels={"a": "b"})


@pytest.mark.timeout(120)
def test_the_docs_example_runs_as_written(stack: LocalStack, bucket: str) -> None:
    """docs/examples/job_controls.py runs as `python FILE` with the stack's environment."""
    stdout = run_docs_example(stack, bucket, "job_controls.py")
    assert stdout.splitlines() == [
        "refused: id",
        "refused: labels",
        "controls-1 JOB_STATE_SUCCEEDED",
    ]
    (job,) = [j for j in jobs_in(stack, bucket) if j["displayName"] == "controls-1"]
    assert job["labels"]["team"] == "search" and "kmsKeyName" in job["encryptionSpec"]
