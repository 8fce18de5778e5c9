"""Lookups besides jobs that `vertexbatch doctor` makes: a publisher model, a project's number.

    GET /v1/publishers/{publisher}/models/{model}    ModelGardenService.GetPublisherModel
    GET /v3/projects/{project}                       Resource Manager projects.get
    POST /v3/projects/{project}:testIamPermissions   Resource Manager projects.testIamPermissions

`ModelGardenServiceClient.get_publisher_model` sends the first over REST with no project or
location in the path (aiplatform 2.7's only URI for it; the location is the host's on real
Vertex). The model is looked up in the stack's catalogue; one it does not hold is 404 NOT_FOUND,
whatever code the catalogue gives creates. The second answers the stack's project (by id or by
its number) with the stack's project number, as Resource Manager does; any other is 403, as
Resource Manager answers for a project that does not exist or that the caller may not see. The
third answers every permission asked for, less those `Faults.deny` took away (the stack lets
anyone do anything).
"""

from __future__ import annotations

from typing import Any

from vertexbatch.emulator._catalogue import Catalogue, missing_hint
from vertexbatch.emulator._errors import ApiError

__all__ = ["held_permissions", "project_resource", "publisher_model"]


def publisher_model(catalogue: Catalogue, publisher: str, model: str) -> dict[str, Any]:
    """The PublisherModel JSON of `publishers/{publisher}/models/{model}`, or a 404 ApiError."""
    if not catalogue.holds(publisher, model):
        raise ApiError(
            404,
            f"Publisher Model `publishers/{publisher}/models/{model}` is not found. "
            + missing_hint(publisher, model),
            "NOT_FOUND",
        )
    bare, _, version = model.partition("@")
    return {
        "name": f"publishers/{publisher}/models/{bare}",
        "versionId": version or "001",
        "openSourceCategory": "PROPRIETARY",
        "launchStage": "GA",
        "versionState": "VERSION_STATE_STABLE",
    }


def project_resource(project: str, project_number: str, requested: str) -> dict[str, Any]:
    """The Resource Manager Project JSON of `requested` (the stack's id or number), or a 403."""
    if requested not in (project, project_number):
        raise ApiError(
            403,
            f"Permission 'resourcemanager.projects.get' denied on resource "
            f"'//cloudresourcemanager.googleapis.com/projects/{requested}' (or it may not exist).",
            "PERMISSION_DENIED",
        )
    return {
        "name": f"projects/{project_number}",
        "parent": "organizations/0",
        "projectId": project,
        "state": "ACTIVE",
        "displayName": project,
    }


def held_permissions(
    project: str, project_number: str, requested: str, body: Any, denied: frozenset[str]
) -> dict[str, Any]:
    """The testIamPermissions answer: the permissions asked for that the caller holds."""
    project_resource(project, project_number, requested)  # the same 403 for another project
    asked = body.get("permissions") if isinstance(body, dict) else None
    if not isinstance(asked, list) or not all(isinstance(p, str) for p in asked):
        raise ApiError(400, "permissions must be a list of strings.", "INVALID_ARGUMENT")
    held = [p for p in asked if p not in denied]
    return {"permissions": held} if held else {}
