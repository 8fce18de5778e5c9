"""The local stack's job controls: `encryptionSpec.kmsKeyName` and `serviceAccount` validated as
Vertex validates them, echoed on GET and LIST, and refused on demand (`refuse_key`,
`refuse_account`)."""

from __future__ import annotations

from typing import Any

import pytest
from google.api_core import exceptions as gexc
from google.cloud import aiplatform_v1

from tests.emulator.test_rest import assert_envelope, jobs_path

ACCOUNT = "runner@local-project.iam.gserviceaccount.com"


def key_of(lab: Any, location: str | None = None, name: str = "key") -> str:
    where = location or lab.stack.location
    return f"projects/{lab.stack.project}/locations/{where}/keyRings/ring/cryptoKeys/{name}"


def test_the_controls_are_echoed_on_get_and_list(lab: Any) -> None:
    """Through aiplatform's client: the key, the account and the labels come back as sent."""
    body = lab.job_body(
        labels={"team": "search"},
        encryptionSpec={"kmsKeyName": key_of(lab)},
        serviceAccount=ACCOUNT,
    )
    status, created = lab.raw("POST", jobs_path(lab.stack), body)
    assert status == 200, created
    assert created["encryptionSpec"] == {"kmsKeyName": key_of(lab)}
    assert created["serviceAccount"] == ACCOUNT
    got = lab.jobs.get_batch_prediction_job(name=created["name"])
    assert got.encryption_spec.kms_key_name == key_of(lab)
    assert got.service_account == ACCOUNT and got.labels["team"] == "search"
    listed = list(
        lab.jobs.list_batch_prediction_jobs(
            request={
                "parent": lab.parent,
                "filter": f'display_name="{body["displayName"]}" AND labels.team="search"',
            }
        )
    )
    assert [j.name for j in listed] == [created["name"]]
    assert listed[0].encryption_spec.kms_key_name == key_of(lab)
    assert listed[0].service_account == ACCOUNT


def test_a_job_without_controls_shows_none(lab: Any) -> None:
    status, created = lab.raw("POST", jobs_path(lab.stack), lab.job_body())
    assert status == 200
    assert "encryptionSpec" not in created and "serviceAccount" not in created


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"encryptionSpec": {"kmsKeyName": "my-key"}}, "Invalid KMS key name"),
        ({"encryptionSpec": {"kmsKeyName": 3}}, "kms_key_name must be a string"),
        ({"encryptionSpec": "key"}, "kms_key_name must be a string"),
        ({"encryptionSpec": {"kmsKeyName": "OTHER"}}, "same region"),
        ({"serviceAccount": "someone@example.com"}, "not a valid service account"),
        ({"serviceAccount": 7}, "not a valid service account"),
    ],
)
def test_bad_controls_are_400_invalid_argument(
    lab: Any, change: dict[str, Any], fragment: str
) -> None:
    body = lab.job_body()
    if change.get("encryptionSpec") == {"kmsKeyName": "OTHER"}:
        change = {"encryptionSpec": {"kmsKeyName": key_of(lab, "europe-west4")}}
    body.update(change)
    before = len(lab.stack.jobs())
    status, answer = lab.raw("POST", jobs_path(lab.stack), body)
    assert status == 400
    assert fragment in assert_envelope(answer, 400, "INVALID_ARGUMENT")
    assert len(lab.stack.jobs()) == before


def test_a_refused_key_fails_the_create_naming_it(lab: Any) -> None:
    """`refuse_key`: 400 FAILED_PRECONDITION naming the key, no job; another key is served."""
    lab.stack.faults.refuse_key(key_of(lab))
    body = lab.job_body(encryptionSpec={"kmsKeyName": key_of(lab)})
    status, answer = lab.raw("POST", jobs_path(lab.stack), body)
    assert status == 400
    assert key_of(lab) in assert_envelope(answer, 400, "FAILED_PRECONDITION")
    other = lab.job_body(encryptionSpec={"kmsKeyName": key_of(lab, name="other")})
    assert lab.raw("POST", jobs_path(lab.stack), other)[0] == 200


def test_a_refused_account_fails_the_create_naming_it(lab: Any) -> None:
    """`refuse_account`: 403 PERMISSION_DENIED naming the account (aiplatform: Forbidden)."""
    lab.stack.faults.refuse_account(ACCOUNT)
    status, answer = lab.raw("POST", jobs_path(lab.stack), lab.job_body(serviceAccount=ACCOUNT))
    assert status == 403
    assert "iam.serviceAccounts.actAs" in assert_envelope(answer, 403, "PERMISSION_DENIED")
    with pytest.raises(gexc.Forbidden, match=ACCOUNT):
        lab.jobs.create_batch_prediction_job(
            parent=lab.parent,
            batch_prediction_job=aiplatform_v1.BatchPredictionJob(
                display_name="x",
                model="publishers/google/models/gemini-3.8-flash",
                input_config={"instances_format": "jsonl", "gcs_source": {"uris": ["gs://a/b"]}},
                output_config={
                    "predictions_format": "jsonl",
                    "gcs_destination": {"output_uri_prefix": "gs://a/o"},
                },
                service_account=ACCOUNT,
            ),
        )
    lab.stack.faults.reset()
    assert lab.raw("POST", jobs_path(lab.stack), lab.job_body(serviceAccount=ACCOUNT))[0] == 200


def test_a_refusal_can_take_another_code(lab: Any) -> None:
    lab.stack.faults.refuse_account(ACCOUNT, status=400)
    status, answer = lab.raw("POST", jobs_path(lab.stack), lab.job_body(serviceAccount=ACCOUNT))
    assert status == 400
    assert_envelope(answer, 400, "FAILED_PRECONDITION")
