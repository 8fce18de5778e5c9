"""``vertexbatch doctor``'s checks that need Resource Manager and the bucket's IAM policy.

``job-create`` (``projects.testIamPermissions``), ``bucket-location`` and ``service-agent`` (the
project number from ``projects.get`` or a listed job's name, then the bucket's policy): each one
``Check``, as ``doctor``'s are, each run by ``doctor_run.run_checks`` with its own clients.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .doctor import (
    AIPLATFORM_ROLE,
    CREATE_PERMISSION,
    LOOKUP_TIMEOUT,
    Check,
    brief,
    no_answer,
)
from .doctor_rules import (
    AGENT_ROLE,
    agent_grants,
    bucket_location_fit,
    service_agent,
)

if TYPE_CHECKING:
    from google.cloud import resourcemanager_v3, storage


__all__ = ["check_bucket_location", "check_job_create", "check_service_agent"]


def check_job_create(projects: resourcemanager_v3.ProjectsClient, project: str) -> Check:
    """The caller holds ``aiplatform.batchPredictionJobs.create`` on the project, asked of
    Resource Manager's ``testIamPermissions`` (no job is created)."""
    try:
        held = projects.test_iam_permissions(
            resource=f"projects/{project}",
            permissions=[CREATE_PERMISSION],
            retry=None,
            timeout=LOOKUP_TIMEOUT,
        )
    except Exception as exc:
        silent = no_answer(exc, "Resource Manager")
        if silent is not None:
            return Check("job-create", "warn", f"cannot tell: {silent}")
        return Check(
            "job-create",
            "warn",
            f"cannot tell: Resource Manager testIamPermissions failed ({brief(exc, 100)}); "
            "enable cloudresourcemanager.googleapis.com to let doctor ask.",
        )
    if CREATE_PERMISSION in held.permissions:
        return Check("job-create", "ok", f"the caller may create jobs in project {project}")
    return Check(
        "job-create",
        "fail",
        f"the caller lacks {CREATE_PERMISSION}: grant it {AIPLATFORM_ROLE} on project {project}.",
    )


def check_bucket_location(gcs: storage.Client, bucket: str, location: str) -> Check:
    """The bucket's location is the job's region or a multi- or dual-region holding it."""
    try:
        found = gcs.get_bucket(bucket, timeout=LOOKUP_TIMEOUT)
    except Exception as exc:
        silent = no_answer(exc, "GCS")
        return Check("bucket-location", "warn", f"cannot tell: {silent or brief(exc, 100)}")
    where = found.location or ""
    if not where:
        return Check("bucket-location", "warn", f"cannot tell: gs://{bucket} shows no location")
    fit, why = bucket_location_fit(
        location, where, found.location_type or "", list(found.data_locations or ())
    )
    if fit == "ok":
        return Check("bucket-location", "ok", why)
    if fit == "warn":
        return Check("bucket-location", "warn", f"cannot tell: {why}.")
    return Check(
        "bucket-location",
        "fail",
        f"{why}: use a bucket in {location} (or a multi-region holding it) for jobs there.",
    )


def project_number(
    projects: resourcemanager_v3.ProjectsClient, project: str, listed: str | None = None
) -> str:
    """The project's number: the project itself when it is one, else Resource Manager's, else
    the number in a listed job's name (Vertex names jobs ``projects/NUMBER/...``).

    Raises:
        Exception: Resource Manager's error, when no listed job names the number either.
    """
    if project.isdigit():
        return project
    try:
        name = projects.get_project(
            name=f"projects/{project}", retry=None, timeout=LOOKUP_TIMEOUT
        ).name
    except Exception:
        parts = (listed or "").split("/")
        if len(parts) > 1 and parts[0] == "projects" and parts[1].isdigit():
            return parts[1]
        raise
    number = name.rpartition("/")[2]
    if not number.isdigit():
        raise ValueError(f"Resource Manager named the project {name!r}, not by its number")
    return number


def check_service_agent(
    gcs: storage.Client,
    projects: resourcemanager_v3.ProjectsClient,
    project: str,
    bucket: str,
    listed: str | None = None,
) -> Check:
    """The bucket's IAM policy grants the Vertex AI service agent read and create on objects.

    ``listed``: a job name the ``vertex`` check listed, a second source of the project number.
    """
    try:
        number = project_number(projects, project, listed)
    except Exception as exc:
        silent = no_answer(exc, "Resource Manager")
        if silent is not None:
            return Check("service-agent", "warn", f"cannot tell: {silent}")
        return Check(
            "service-agent",
            "warn",
            f"cannot tell: the project number of {project} is not readable ({brief(exc, 100)}); "
            "grant the caller resourcemanager.projects.get or pass --project as the number.",
        )
    agent = service_agent(number)
    from google.api_core import exceptions as api_exceptions

    try:
        policy = gcs.bucket(bucket).get_iam_policy(
            requested_policy_version=3, timeout=LOOKUP_TIMEOUT
        )
    except api_exceptions.NotFound:
        # The bucket was found a moment ago: this server has no IAM (fake-gcs-server has none).
        return Check(
            "service-agent",
            "warn",
            f"cannot tell whether {agent} may use gs://{bucket}: this GCS server serves no "
            "bucket IAM policy (the local stack's does not).",
        )
    except Exception as exc:
        silent = no_answer(exc, "GCS")
        if silent is not None:
            return Check("service-agent", "warn", f"cannot tell: {silent}")
        return Check(
            "service-agent",
            "warn",
            f"cannot tell whether {agent} may use gs://{bucket}: its IAM policy is not readable "
            f"({brief(exc, 100)}); grant the caller storage.buckets.getIamPolicy to let doctor "
            "look.",
        )
    grants = agent_grants(policy.bindings, agent)
    if grants.read and grants.create:
        return Check("service-agent", "ok", f"{agent} may read and create objects in gs://{bucket}")
    lacking = " and ".join(
        word for word, held in (("read", grants.read), ("create", grants.create)) if not held
    )
    unclear = grants.unknown_roles + grants.conditional_roles
    also = f" (roles doctor cannot read: {', '.join(unclear)})" if unclear else ""
    return Check(
        "service-agent",
        "warn",
        f"gs://{bucket}'s policy does not show {agent} may {lacking} objects{also}, and project "
        f"roles are not visible here: if jobs fail with code 7, grant it {AGENT_ROLE} on the "
        "bucket.",
    )
