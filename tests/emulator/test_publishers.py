"""The lookups doctor makes, through the real aiplatform_v1 and Resource Manager clients."""

from __future__ import annotations

import pytest
from google.api_core import exceptions as gexc
from google.auth.credentials import AnonymousCredentials
from google.cloud import aiplatform_v1, resourcemanager_v3

from vertexbatch.emulator import LocalStack


def garden(stack: LocalStack) -> aiplatform_v1.ModelGardenServiceClient:
    return aiplatform_v1.ModelGardenServiceClient(
        transport="rest",
        credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
        client_options={"api_endpoint": stack.vertex_endpoint},
    )


def test_get_publisher_model_answers_a_catalogue_model(stack: LocalStack) -> None:
    """A catalogue model, with or without @version, is a PublisherModel named without version."""
    model = garden(stack).get_publisher_model(name="publishers/anthropic/models/claude-opus-5-5")
    assert model.name == "publishers/anthropic/models/claude-opus-5-5"
    versioned = garden(stack).get_publisher_model(
        name="publishers/google/models/gemini-3.8-flash@default"
    )
    assert versioned.name == "publishers/google/models/gemini-3.8-flash"
    assert versioned.version_id == "default"
    assert stack.calls()["getPublisherModel"] == 2


def test_get_publisher_model_is_404_for_a_model_not_held(stack: LocalStack) -> None:
    """A model not in the catalogue, or under the other publisher, is NOT_FOUND naming it."""
    for name in (
        "publishers/anthropic/models/claude-nope-1",
        "publishers/google/models/claude-opus-5-5",
    ):
        with pytest.raises(gexc.NotFound) as caught:
            garden(stack).get_publisher_model(name=name)
        assert name in str(caught.value)


def test_an_added_model_is_found(stack: LocalStack) -> None:
    """`add_model` extends what the lookup finds."""
    stack.add_model("anthropic", "claude-haiku-9")
    try:
        found = garden(stack).get_publisher_model(name="publishers/anthropic/models/claude-haiku-9")
        assert found.name.endswith("/claude-haiku-9")
    finally:
        stack.catalogue.remove("anthropic", "claude-haiku-9")


def test_resource_manager_gives_the_project_number(stack: LocalStack) -> None:
    """projects.get by id or number answers the stack's number; another project is 403."""
    projects = resourcemanager_v3.ProjectsClient(
        transport="rest",
        credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
        client_options={"api_endpoint": stack.vertex_endpoint},
    )
    for name in (stack.project, stack.project_number):
        project = projects.get_project(name=f"projects/{name}")
        assert project.name == f"projects/{stack.project_number}"
        assert project.project_id == stack.project
    with pytest.raises(gexc.Forbidden):
        projects.get_project(name="projects/someone-elses")


def test_test_iam_permissions_answers_all_but_denied(stack: LocalStack) -> None:
    """testIamPermissions echoes the permissions asked for, less those `faults.deny` took."""
    projects = resourcemanager_v3.ProjectsClient(
        transport="rest",
        credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
        client_options={"api_endpoint": stack.vertex_endpoint},
    )
    asked = ["aiplatform.batchPredictionJobs.create", "aiplatform.batchPredictionJobs.list"]
    held = projects.test_iam_permissions(resource=f"projects/{stack.project}", permissions=asked)
    assert list(held.permissions) == asked
    stack.faults.deny("aiplatform.batchPredictionJobs.create")
    held = projects.test_iam_permissions(resource=f"projects/{stack.project}", permissions=asked)
    assert list(held.permissions) == ["aiplatform.batchPredictionJobs.list"]
