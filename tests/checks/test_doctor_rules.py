"""doctor's pure rules: bucket locations and bucket IAM policies, as Google returns them."""

from __future__ import annotations

from typing import Any

import pytest
from google.api_core.iam import Policy
from google.auth.credentials import AnonymousCredentials
from google.cloud import resourcemanager_v3

from vertexbatch._checks.doctor_access import check_service_agent
from vertexbatch._checks.doctor_rules import agent_grants, bucket_location_fit, service_agent
from vertexbatch.emulator import LocalStack

AGENT = service_agent("123456789012")


@pytest.mark.parametrize(
    ("region", "location", "kind", "placed", "fit"),
    [
        ("us-central1", "US-CENTRAL1", "region", (), "ok"),
        ("us-east5", "US", "multi-region", (), "ok"),
        ("us-central1", "us", "multi-region", (), "ok"),
        ("europe-west4", "EU", "multi-region", (), "ok"),
        ("europe-west2", "EU", "multi-region", (), "fail"),  # London is outside the EU
        ("asia-northeast1", "ASIA", "multi-region", (), "ok"),
        ("europe-west4", "US", "multi-region", (), "fail"),
        ("us-central1", "NAM4", "dual-region", (), "ok"),
        ("us-east5", "NAM4", "dual-region", (), "fail"),
        ("us-east1", "US", "dual-region", ("US-CENTRAL1", "US-EAST1"), "ok"),
        ("us-west1", "US", "dual-region", ("US-CENTRAL1", "US-EAST1"), "warn"),
        ("europe-west4", "US", "dual-region", ("US-CENTRAL1", "US-EAST1"), "fail"),
        ("us-east5", "US-CENTRAL1", "region", (), "fail"),
        ("us-central1", "EUROPE-WEST4", "region", (), "fail"),
        ("global", "US", "multi-region", (), "warn"),
        ("us-central1", "MARS1", "", (), "warn"),
        ("africa-south1", "EU", "multi-region", (), "warn"),
    ],
)
def test_bucket_location_fit(
    region: str, location: str, kind: str, placed: tuple[str, ...], fit: str
) -> None:
    got, why = bucket_location_fit(region, location, kind, placed)
    assert got == fit, why
    assert location in why


# Bindings as google-cloud-storage's Bucket.get_iam_policy(requested_policy_version=3) gives them.
REAL_POLICY: dict[str, Any] = {
    "version": 3,
    "etag": "CAE=",
    "bindings": [
        {
            "role": "roles/storage.legacyBucketOwner",
            "members": ["projectEditor:my-proj", "projectOwner:my-proj"],
        },
        {"role": "roles/storage.legacyBucketReader", "members": ["projectViewer:my-proj"]},
    ],
}


def policy(*bindings: dict[str, Any]) -> Policy:
    body = dict(REAL_POLICY, bindings=REAL_POLICY["bindings"] + list(bindings))
    return Policy.from_api_repr(body)


def sa(email: str) -> list[str]:
    return [f"serviceAccount:{email}"]


@pytest.mark.parametrize(
    ("bindings", "read", "create"),
    [
        ([], False, False),
        ([{"role": "roles/storage.objectUser", "members": sa(AGENT)}], True, True),
        ([{"role": "roles/storage.objectAdmin", "members": sa(AGENT)}], True, True),
        ([{"role": "roles/storage.legacyBucketWriter", "members": sa(AGENT)}], False, True),
        (
            [
                {"role": "roles/storage.objectViewer", "members": sa(AGENT)},
                {"role": "roles/storage.objectCreator", "members": sa(AGENT)},
            ],
            True,
            True,
        ),
        ([{"role": "roles/storage.objectViewer", "members": ["allUsers"]}], True, False),
        ([{"role": "roles/storage.admin", "members": sa("other@x.iam.gserviceaccount.com")}], 0, 0),
        (
            [
                {
                    "role": "roles/storage.objectUser",
                    "members": sa(AGENT),
                    "condition": {"title": "t", "expression": "request.time < x"},
                }
            ],
            False,
            False,
        ),
        ([{"role": "projects/p/roles/custom", "members": sa(AGENT)}], False, False),
    ],
)
def test_agent_grants_from_a_real_policy_shape(
    bindings: list[dict[str, Any]], read: bool, create: bool
) -> None:
    grants = agent_grants(policy(*bindings).bindings, AGENT)
    assert (grants.read, grants.create) == (bool(read), bool(create))


def test_conditional_and_custom_roles_are_reported_not_assumed() -> None:
    grants = agent_grants(
        policy(
            {"role": "projects/p/roles/custom", "members": sa(AGENT)},
            {"role": "roles/storage.objectUser", "members": sa(AGENT), "condition": {"t": 1}},
        ).bindings,
        AGENT,
    )
    assert grants.unknown_roles == ("projects/p/roles/custom",)
    assert grants.conditional_roles == ("roles/storage.objectUser",)


class _Bucket:
    """A bucket whose IAM policy is given: fake-gcs-server serves none (the one stand-in)."""

    def __init__(self, found: Policy) -> None:
        self.found = found

    def get_iam_policy(self, requested_policy_version: int, timeout: float) -> Policy:
        assert requested_policy_version == 3
        return self.found


class _Gcs:
    def __init__(self, found: Policy) -> None:
        self.found = found

    def bucket(self, name: str) -> _Bucket:
        return _Bucket(self.found)


def test_service_agent_check_reads_the_number_then_the_policy(stack: LocalStack) -> None:
    """The number comes from Resource Manager (the stack's); the policy decides ok or warn."""
    projects = resourcemanager_v3.ProjectsClient(
        transport="rest",
        credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
        client_options={"api_endpoint": stack.vertex_endpoint},
    )
    granted = _Gcs(policy({"role": "roles/storage.objectUser", "members": sa(AGENT)}))
    check = check_service_agent(granted, projects, stack.project, "b")  # type: ignore[arg-type]
    assert check.result == "ok" and AGENT in check.detail
    reader = _Gcs(policy({"role": "roles/storage.objectViewer", "members": sa(AGENT)}))
    check = check_service_agent(reader, projects, stack.project, "b")  # type: ignore[arg-type]
    assert check.result == "warn" and "may create objects" in check.detail
    assert "roles/storage.objectViewer and roles/storage.objectCreator" in check.detail
    unknown = check_service_agent(granted, projects, "someone-else", "b")  # type: ignore[arg-type]
    assert unknown.result == "warn" and "project number of someone-else" in unknown.detail


def test_the_number_comes_from_a_listed_job_when_resource_manager_refuses(
    stack: LocalStack,
) -> None:
    """Resource Manager refused (403): a job name the vertex check listed gives the number."""
    projects = resourcemanager_v3.ProjectsClient(
        transport="rest",
        credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
        client_options={"api_endpoint": stack.vertex_endpoint},
    )
    granted = _Gcs(policy({"role": "roles/storage.objectUser", "members": sa(AGENT)}))
    listed = "projects/123456789012/locations/us-central1/batchPredictionJobs/1"
    stack.faults.fail("getProject", status=403)
    check = check_service_agent(granted, projects, "p", "b", listed)  # type: ignore[arg-type]
    assert check.result == "ok" and AGENT in check.detail
    stack.faults.fail("getProject", status=403)
    blind = check_service_agent(granted, projects, "p", "b", None)  # type: ignore[arg-type]
    assert blind.result == "warn" and "project number of p" in blind.detail
