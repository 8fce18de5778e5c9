"""``vertexbatch doctor``: the checks a user runs before their first real job.

Each check is one function returning one ``Check`` (its name, ``ok`` / ``warn`` / ``fail`` /
``skip``, and a detail: for warn and fail, the fix in one sentence), in the order ``run_checks``
runs them:

    configuration    project, location and bucket set (``_config.read_config``)
    location         regional (Claude batch needs one; ``global`` fails for a Claude model)
    credentials      application default credentials found, and whose; skipped on the stack
    vertex           one ``list_batch_prediction_jobs`` call (page size 1)
    bucket           the bucket exists (``lookup_bucket``)
    bucket-objects   create (create-only), read and delete ``PREFIX/.vertexbatch-doctor-<random>``
    model            ``--model``'s id is well formed; whether it exists is checked at submit

and, as ``skip`` lines, what this version does not check (``NOT_CHECKED``). A check that needs
an earlier one to have passed is skipped, saying which. Nothing here imports a Google SDK at
its top: the checks that need one import it.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ._config import Config, build_client, read_config
from ._errors import InvalidRequestError
from ._rules import check_model as check_model_id

if TYPE_CHECKING:
    from ._cloud import Cloud
    from ._models import Provider
    from ._retry import RetryPolicy

__all__ = [
    "NOT_CHECKED",
    "Check",
    "Outcome",
    "check_bucket",
    "check_bucket_objects",
    "check_configuration",
    "check_credentials",
    "check_location",
    "check_model",
    "check_vertex",
    "failed",
    "run_checks",
]

Outcome = Literal["ok", "warn", "fail", "skip"]

AIPLATFORM_ROLE = "roles/aiplatform.user"
OBJECT_ROLE = "roles/storage.objectAdmin"
DOCTOR_OBJECT = ".vertexbatch-doctor-"

NOT_CHECKED = ("job-create", "bucket-location", "service-agent")
"""The issue's other checks, printed as ``skip``: not checked by this version."""


@dataclass(frozen=True, slots=True)
class Check:
    """The result of one check: its name, its outcome and a one-sentence detail."""

    check: str
    result: Outcome
    detail: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"check": self.check, "result": self.result, "detail": self.detail}

    def line(self) -> str:
        """The check as one line: ``ok    name  detail``."""
        return f"{self.result:<5} {self.check:<16} {self.detail}".rstrip()


def failed(checks: list[Check]) -> bool:
    """Whether any check failed."""
    return any(c.result == "fail" for c in checks)


def _short(exc: BaseException, limit: int = 160) -> str:
    """The error in one short line: a Google error's code and message, without the URL."""
    from google.api_core import exceptions as api_exceptions

    if any(cls.__name__ == "ConnectionError" for cls in type(exc).__mro__):
        text = "cannot connect"  # requests' and the builtin's: the URL says nothing more
    elif isinstance(exc, api_exceptions.GoogleAPICallError):
        text = " ".join(f"{exc.code or ''} {exc.message}".split())
    else:
        text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _provider(model: str | None) -> str | None:
    if not model:
        return None
    lowered = model.lower()
    return next((family for family in ("claude", "gemini") if lowered.startswith(family)), None)


def on_local_stack(config: Config) -> bool:
    """Whether the configuration names endpoints (the local stack's): anonymous credentials."""
    return bool(config.vertex_endpoint and config.storage_endpoint)


# -- the checks ---------------------------------------------------------------------------------


def check_configuration(
    env: Mapping[str, str], flags: Mapping[str, str | None] | None
) -> tuple[Check, Config | None]:
    """Project, location and bucket set, endpoints paired: the ``Config``, or a fail naming it."""
    try:
        config = read_config(env, flags if flags is not None else {})
    except InvalidRequestError as exc:
        return Check("configuration", "fail", f"{exc}."), None
    where = f"gs://{config.bucket}/{config.prefix}/"
    detail = f"project {config.project}, location {config.location}, {where}"
    if on_local_stack(config):
        detail += f", local stack at {config.vertex_endpoint}"
    return Check("configuration", "ok", detail), config


def check_location(config: Config, model: str | None = None) -> Check:
    """The location is regional: Claude batch jobs need one (``global`` does not run them)."""
    location = config.location
    if location != "global":
        return Check("location", "ok", f"{location} is regional")
    fix = "set --location (or GOOGLE_CLOUD_LOCATION) to a region such as us-east5."
    provider = _provider(model)
    if provider == "gemini":
        return Check("location", "ok", "global (Gemini batch runs there)")
    if provider == "claude":
        return Check("location", "fail", f"Claude batch needs a regional location: {fix}")
    return Check("location", "warn", f"global cannot run Claude batch jobs: {fix}")


def check_credentials(config: Config) -> Check:
    """Application default credentials, and whose (an email or "user credentials"), no secret."""
    if on_local_stack(config):
        return Check("credentials", "skip", "anonymous on the local stack")
    import google.auth
    from google.auth.exceptions import DefaultCredentialsError

    try:
        credentials, _ = google.auth.default()
    except DefaultCredentialsError:
        return Check(
            "credentials",
            "fail",
            "no application default credentials: run 'gcloud auth application-default login' "
            "or set GOOGLE_APPLICATION_CREDENTIALS to a key file.",
        )
    email = getattr(credentials, "service_account_email", None)
    if isinstance(email, str) and "@" in email:
        return Check("credentials", "ok", f"service account {email}")
    if type(credentials).__module__ == "google.oauth2.credentials":
        return Check("credentials", "ok", "user credentials")
    return Check("credentials", "ok", f"{type(credentials).__name__} credentials")


def check_vertex(cloud: Cloud) -> Check:
    """One list call, page size 1: Vertex answers and the caller may list jobs."""
    from google.api_core import exceptions as api_exceptions

    try:
        cloud.vertex.list_one()
    except (api_exceptions.PermissionDenied, api_exceptions.Forbidden):  # gRPC and REST
        return Check(
            "vertex",
            "fail",
            f"listing jobs is not allowed: grant the caller {AIPLATFORM_ROLE} on project "
            f"{cloud.project}.",
        )
    except Exception as exc:
        return Check("vertex", "fail", f"listing jobs failed ({_short(exc)}): {_fix(exc)}")
    return Check("vertex", "ok", f"listing jobs in {cloud.vertex.parent} is allowed")


def check_bucket(cloud: Cloud, bucket: str) -> Check:
    """The bucket exists."""
    from google.api_core import exceptions as api_exceptions

    try:
        found = cloud.staging.bucket_exists()
    except api_exceptions.Forbidden:
        return Check(
            "bucket",
            "fail",
            f"the caller may not read bucket {bucket}: grant storage.buckets.get on it "
            "(e.g. roles/storage.legacyBucketReader).",
        )
    except Exception as exc:
        return Check("bucket", "fail", f"GCS did not answer ({_short(exc)}): {_fix(exc)}")
    if not found:
        return Check(
            "bucket",
            "fail",
            f"bucket {bucket} does not exist: create it in the job's region "
            f"(gcloud storage buckets create gs://{bucket}) or set --bucket / VERTEXBATCH_BUCKET.",
        )
    return Check("bucket", "ok", f"gs://{bucket} exists")


def check_bucket_objects(cloud: Cloud, bucket: str, prefix: str) -> Check:
    """Create (create-only), read and delete one small object under the prefix; always cleaned."""
    folder = prefix.strip("/")
    leaf = f"{DOCTOR_OBJECT}{secrets.token_hex(8)}"
    name = f"{folder}/{leaf}" if folder else leaf
    content = {"vertexbatch_doctor": secrets.token_hex(8)}
    failure = ""
    step = "create"
    try:
        if not cloud.staging.create_json(name, content):
            failure = f"gs://{bucket}/{name} already existed: run doctor again."
        else:
            step = "read"
            if cloud.staging.read_json(name) != content:
                failure = (
                    f"gs://{bucket}/{name} read back different content: check the bucket's "
                    "object holds and retention policy."
                )
    except Exception as exc:
        failure = _object_failure(exc, step, bucket)
    try:
        cloud.staging.delete(name)  # always, even after a failed create: it may have landed
    except Exception as exc:
        failure = failure or _object_failure(exc, "delete", bucket)
    if failure:
        return Check("bucket-objects", "fail", failure)
    where = f"gs://{bucket}/{folder}/" if folder else f"gs://{bucket}/"
    return Check("bucket-objects", "ok", f"created, read and deleted an object under {where}")


def _object_failure(exc: BaseException, step: str, bucket: str) -> str:
    from google.api_core import exceptions as api_exceptions

    if isinstance(exc, api_exceptions.Forbidden):
        return f"the caller may not {step} objects in gs://{bucket}: grant {OBJECT_ROLE} on it."
    return f"{step} failed ({_short(exc)}): {_fix(exc)}"


def check_model(config: Config | None, model: str | None) -> Check:
    """``--model`` is a well-formed Claude or Gemini id; its existence is checked at submit."""
    if not model:
        return Check("model", "skip", "no --model given")
    publisher: Provider = "google" if _provider(model) == "gemini" else "anthropic"
    if _provider(model) is None and "/" not in model:
        return Check(
            "model",
            "fail",
            f"model {model!r} is neither a Claude nor a Gemini model id: pass a bare Vertex id "
            "such as claude-opus-5-5@default.",
        )
    try:
        check_model_id(model, publisher)
    except InvalidRequestError as exc:
        return Check("model", "fail", f"{exc}.")
    if config is None:
        return Check("model", "skip", f"{model}: checked at submit")
    if on_local_stack(config):
        return Check("model", "skip", f"{model}: checked at submit (the local stack has no lookup)")
    return Check("model", "skip", f"{model}: not checked by this version; checked at submit")


def _fix(exc: BaseException) -> str:
    """The fix for an error a check did not expect, in one sentence."""
    text = _short(exc).lower()
    if "refused" in text or "connect" in text:
        return "check the endpoint and the network (for the local stack: 'vertexbatch emulator')."
    return "check the network and the project, then run doctor again with -v."


# -- all of them --------------------------------------------------------------------------------


def run_checks(
    env: Mapping[str, str],
    flags: Mapping[str, str | None] | None = None,
    *,
    model: str | None = None,
    retry: RetryPolicy | None = None,
) -> list[Check]:
    """Every check in order; one that needs an earlier one's success is skipped, saying why."""
    from ._client import Client, cloud_of
    from ._retry import RetryPolicy

    if retry is None:
        # A check reports what it found: a few quick retries, not the jobs' five minutes.
        retry = RetryPolicy(attempts=3, maximum=5.0, deadline=30.0)

    checks: list[Check] = []
    configuration, config = check_configuration(env, flags)
    checks.append(configuration)
    cloud_checks = ("vertex", "bucket", "bucket-objects")
    if config is None:
        needs = "needs the configuration"
        checks += [Check(name, "skip", needs) for name in ("location", "credentials")]
        checks += [Check(name, "skip", needs) for name in cloud_checks]
        checks.append(check_model(None, model))
    else:
        checks.append(check_location(config, model))
        credentials = check_credentials(config)
        checks.append(credentials)
        if credentials.result == "fail":
            checks += [Check(name, "skip", "needs credentials") for name in cloud_checks]
        else:
            cloud = cloud_of(build_client(Client, env, flags=flags, retry=retry))
            checks.append(check_vertex(cloud))
            bucket = check_bucket(cloud, config.bucket)
            checks.append(bucket)
            if bucket.result == "ok":
                checks.append(check_bucket_objects(cloud, config.bucket, config.prefix))
            else:
                checks.append(Check("bucket-objects", "skip", "needs the bucket"))
        checks.append(check_model(config, model))
    checks += [Check(name, "skip", "not checked by this version") for name in NOT_CHECKED]
    return checks
