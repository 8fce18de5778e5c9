"""``vertexbatch doctor``'s run: the clients its checks use (``lookups``), every check in order.

A check that needs an earlier one to have passed is skipped, saying which; an error a check did
not expect becomes its ``fail``, with a fix in one sentence (``fix_for``). The checks are
``doctor``'s and ``doctor_access``'s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .._config import Config, client_keywords, read_config
from .._hosts import vertex_host
from .._providers import of_model
from .doctor import (
    CLOUD_SCOPE,
    DEFAULT_MODELS,
    Check,
    check_bucket,
    check_bucket_objects,
    check_configuration,
    check_credentials,
    check_model,
    check_vertex,
    on_local_stack,
)
from .doctor_access import (
    check_bucket_location,
    check_job_create,
    check_service_agent,
    project_number,
)
from .doctor_bigquery import dest_checks
from .doctor_controls import Session, check_kms_key, check_service_account
from .doctor_location import check_location

if TYPE_CHECKING:
    from google.cloud import aiplatform_v1, resourcemanager_v3, storage

    from .._retry import RetryPolicy

__all__ = ["Lookups", "lookups", "run_checks"]


@dataclass(frozen=True, slots=True)
class Lookups:
    """The clients doctor's lookups use besides a ``Client``'s: GCS, Model Garden, Resource
    Manager, all at the local stack's Vertex endpoint when the configuration names one."""

    gcs: storage.Client
    garden: aiplatform_v1.ModelGardenServiceClient
    projects: resourcemanager_v3.ProjectsClient


def lookups(config: Config) -> Lookups:
    """The clients for ``config``: anonymous at its endpoints, or with application default
    credentials on Google Cloud (Model Garden at the location's Vertex host, ``_hosts``)."""
    from google.cloud import aiplatform_v1, resourcemanager_v3
    from google.cloud import storage as gcs

    if on_local_stack(config):
        from google.auth.credentials import AnonymousCredentials

        anonymous = AnonymousCredentials()  # type: ignore[no-untyped-call]
        vertex = {"api_endpoint": config.vertex_endpoint}
        return Lookups(
            gcs.Client(
                project=config.project,
                credentials=anonymous,
                client_options={"api_endpoint": config.storage_endpoint},
            ),
            aiplatform_v1.ModelGardenServiceClient(
                transport="rest", credentials=anonymous, client_options=vertex
            ),
            resourcemanager_v3.ProjectsClient(
                transport="rest", credentials=anonymous, client_options=vertex
            ),
        )
    return Lookups(
        gcs.Client(project=config.project),
        aiplatform_v1.ModelGardenServiceClient(
            transport="rest", client_options={"api_endpoint": vertex_host(config.location)}
        ),
        resourcemanager_v3.ProjectsClient(transport="rest"),
    )


def _projects(config: Config) -> resourcemanager_v3.ProjectsClient:
    return lookups(config).projects


# -- all of them --------------------------------------------------------------------------------


def run_checks(
    env: Mapping[str, str],
    flags: Mapping[str, str | None] | None = None,
    *,
    models: Sequence[str] = (),
    retry: RetryPolicy | None = None,
    kms_key: str | None = None,
    service_account: str | None = None,
    session: Session | None = None,
    dest: str | None = None,
    source: str | None = None,
) -> list[Check]:
    """Every check in order; one that needs an earlier one's success is skipped, saying why.

    ``models``: the models the ``model`` check looks up (``DEFAULT_MODELS`` when empty).
    ``kms_key``, ``service_account``: the job controls to check too (``kms-key``,
    ``service-account``, last), through ``session`` (by default an ``AuthorizedSession`` with
    application default credentials; none on the local stack, which serves neither API).
    ``dest``: a BigQuery sink's dataset to check (``dest-*``, after the bucket's and models');
    ``source``: a source table to check the same way (``source-*``: it exists, read access).
    """
    checks = _run_checks(env, flags, models, retry)
    if dest is not None:  # a BigQuery sink's dataset (``doctor_bigquery``)
        checks += dest_checks(env, flags, checks, dest, service_account, _projects)
    if source is not None:  # a BigQuery source's table, the same checks read-side
        checks += dest_checks(env, flags, checks, source, service_account, _projects, "source")
    controls = [
        (name, value)
        for name, value in (("kms-key", kms_key), ("service-account", service_account))
        if value is not None
    ]
    if not controls:
        return checks
    by_name = {check.check: check for check in checks}
    if by_name["configuration"].result == "fail" or by_name["credentials"].result == "fail":
        why = "needs the configuration" if by_name["configuration"].result == "fail" else None
        return checks + [Check(name, "skip", why or "needs credentials") for name, _ in controls]
    config = read_config(env, flags)
    if session is None and not on_local_stack(config):
        import google.auth
        from google.auth.transport.requests import AuthorizedSession

        credentials, _ = google.auth.default(scopes=[CLOUD_SCOPE])
        session = AuthorizedSession(credentials)  # type: ignore[no-untyped-call]
    if kms_key is not None:
        number = None
        if session is not None:
            try:
                number = project_number(lookups(config).projects, config.project)
            except Exception:  # the check says it cannot tell
                number = None
        checks.append(check_kms_key(session, kms_key, config.location, number))
    if service_account is not None:
        checks.append(check_service_account(session, service_account))
    return checks


def _run_checks(
    env: Mapping[str, str],
    flags: Mapping[str, str | None] | None,
    models: Sequence[str],
    retry: RetryPolicy | None,
) -> list[Check]:
    from .._client import Client
    from .._retry import RetryPolicy

    if retry is None:
        # A check reports what it found: a few quick retries, not the jobs' five minutes.
        retry = RetryPolicy(attempts=3, maximum=5.0, deadline=30.0)
    named = tuple(models)  # the models named (--model): checked against the catalogue
    models = named or DEFAULT_MODELS
    # The location check's provider: one only when every model is of one family.
    families = {of_model(model) for model in models}
    single = models[0] if len(families) == 1 else None

    checks: list[Check] = []
    configuration, config = check_configuration(env, flags)
    checks.append(configuration)
    cloud_checks = (
        "vertex",
        "job-create",
        "bucket",
        "bucket-location",
        "bucket-objects",
        "service-agent",
    )
    if config is None:
        needs = "needs the configuration"
        checks += [Check(name, "skip", needs) for name in ("location", "credentials")]
        checks += [Check(name, "skip", needs) for name in cloud_checks]
        checks.append(check_model(None, models))
        return checks
    checks.append(check_location(config, single, models=named))
    credentials = check_credentials(config)
    checks.append(credentials)
    if credentials.result == "fail":
        checks += [Check(name, "skip", "needs credentials") for name in cloud_checks]
        checks.append(check_model(config, models))
        return checks
    given, endpoints = client_keywords(env, flags, retry)
    cloud = (Client.for_endpoints if endpoints else Client)(**given)._cloud
    found = lookups(config)
    vertex, listed = check_vertex(cloud)
    checks.append(vertex)
    checks.append(check_job_create(found.projects, config.project))
    bucket = check_bucket(cloud, config.bucket)
    checks.append(bucket)
    if bucket.result == "ok":
        checks.append(check_bucket_location(found.gcs, config.bucket, config.location))
        checks.append(check_bucket_objects(cloud, config.bucket, config.prefix))
        checks.append(
            check_service_agent(found.gcs, found.projects, config.project, config.bucket, listed)
        )
    elif bucket.result == "warn":
        # The metadata was refused: the object round trip is what shows the bucket is usable.
        checks.append(Check("bucket-location", "skip", "needs the bucket's metadata"))
        objects = check_bucket_objects(cloud, config.bucket, config.prefix)
        checks.append(objects)
        if objects.result == "ok":
            checks.append(
                check_service_agent(
                    found.gcs, found.projects, config.project, config.bucket, listed
                )
            )
        else:
            checks.append(Check("service-agent", "skip", "needs bucket-objects"))
    else:
        for name in ("bucket-location", "bucket-objects", "service-agent"):
            checks.append(Check(name, "skip", "needs the bucket"))
    checks.append(check_model(config, models, found.garden))
    return checks
