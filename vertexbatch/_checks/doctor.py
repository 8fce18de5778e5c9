"""``vertexbatch doctor``: the checks a user runs before their first real job.

Each check is one function returning one ``Check`` (its name, ``ok`` / ``warn`` / ``fail`` /
``skip``, and a detail: for warn and fail, the fix in one sentence), in the order ``run_checks``
runs them:

    configuration    project, location and bucket set (``_config.read_config``)
    location         a region, ``us`` / ``eu`` or ``global``, and the models' catalogue rows
                     (``doctor_location``)
    credentials      application default credentials found and refreshed once, and whose
                     (a refused refresh fails); skipped on the stack
    vertex           one ``list_batch_prediction_jobs`` call (page size 1)
    job-create       Resource Manager ``projects.testIamPermissions`` for
                     ``aiplatform.batchPredictionJobs.create`` on the project: no job is made
    bucket           the bucket exists (``lookup_bucket``); a refused lookup is ``warn``:
                     object roles cannot read bucket metadata, and vertexbatch never does
    bucket-location  the bucket's location is one the job's region can use (``doctor_rules``)
    bucket-objects   create (create-only), read and delete ``PREFIX/.vertexbatch-doctor-<random>``
    service-agent    the bucket's IAM policy grants the Vertex AI service agent read and create
                     (its project number from Resource Manager ``projects.get``, or from a job
                     name the ``vertex`` check listed); "cannot tell"
                     (warn) when the policy or the number is not readable, never a guess
    model            each model exists for its publisher (``ModelGardenServiceClient.
                     get_publisher_model``, aiplatform_v1, without ``@version``: the version
                     is not checked); ``DEFAULT_MODELS`` without --model

A check that needs an earlier one to have passed is skipped, saying which. A check that cannot
tell says so as ``warn``. Nothing here imports a Google SDK at its top: the checks that need
one import it.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from .._config import Config, read_config
from .._errors import BucketNotFoundError, InvalidRequestError, create_bucket_fix, shorten
from .._providers import of_model
from .._rules import check_model as check_model_id

if TYPE_CHECKING:
    from google.cloud import aiplatform_v1

    from .._cloud import Cloud
    from .._values import Provider

__all__ = [
    "brief",
    "fix_for",
    "DEFAULT_MODELS",
    "Check",
    "Outcome",
    "check_bucket",
    "check_bucket_objects",
    "check_configuration",
    "check_credentials",
    "check_model",
    "check_vertex",
    "failed",
    "no_answer",
    "unreachable",
]

Outcome = Literal["ok", "warn", "fail", "skip"]

AIPLATFORM_ROLE = "roles/aiplatform.user"
OBJECT_ROLE = "roles/storage.objectAdmin"
DOCTOR_OBJECT = ".vertexbatch-doctor-"

CLOUD_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
CREATE_PERMISSION = "aiplatform.batchPredictionJobs.create"
LOOKUP_TIMEOUT = 30.0  # seconds for each lookup: one answer, no retries (a warn says why)
DEFAULT_MODELS = ("claude-sonnet-4-5", "gemini-2.5-flash")
"""The models ``model`` looks up when ``--model`` is not given (the demo's and the docs')."""


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


NETWORK_FIX = (
    "check the endpoint and the network (for the local stack: is 'vertexbatch emulator' running?)."
)
"""The fix when a call never reached its service: no role or API is the cause, nor the fix."""


def unreachable(exc: BaseException) -> str | None:
    """Why a call got no answer from its service — ``"timed out"`` or ``"cannot connect"`` —
    or None when the service answered (an HTTP error included). Reads the whole chain of causes:
    google-auth and the Google clients wrap the transport's error in their own."""
    from google.api_core import exceptions as api_exceptions

    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        names = {cls.__name__ for cls in type(current).__mro__}
        # Timeout first: requests' ConnectTimeout is a ConnectionError and a Timeout.
        if isinstance(current, (TimeoutError, api_exceptions.DeadlineExceeded)) or names & {
            "Timeout",
            "ReadTimeout",
            "ConnectTimeout",
            "TimeoutError",
        }:
            return "timed out"
        if "ConnectionError" in names or "NewConnectionError" in names:
            return "cannot connect"  # requests', urllib3's and the builtin's
        current = current.__cause__ or current.__context__
    return None


def no_answer(exc: BaseException, service: str) -> str | None:
    """The detail of a check whose call got no answer from ``service``, with the network fix;
    None when the service answered (then the check's own reading of the error applies)."""
    why = unreachable(exc)
    return None if why is None else f"{service} did not answer ({why}): {NETWORK_FIX}"


def brief(exc: BaseException, limit: int = 160) -> str:
    """The error in one short line: a Google error's code and message, without the URL."""
    from google.api_core import exceptions as api_exceptions

    why = unreachable(exc)
    if why is not None:
        text = why  # the URL says nothing more
    elif isinstance(exc, api_exceptions.GoogleAPICallError):
        text = f"{exc.code or ''} {exc.message}"
    else:
        text = str(exc).strip() or type(exc).__name__
    return shorten(text, limit)


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


def check_credentials(config: Config) -> Check:
    """Application default credentials, refreshed once (so they are known to work, and a GCE or
    Cloud Run account shows its email), and whose: an email or "user credentials"; no secret."""
    if on_local_stack(config):
        return Check("credentials", "skip", "anonymous on the local stack")
    import google.auth
    import google.oauth2.credentials
    from google.auth.exceptions import DefaultCredentialsError, RefreshError
    from google.auth.transport.requests import Request

    login = "run 'gcloud auth application-default login'"
    try:
        credentials, _ = google.auth.default(scopes=[CLOUD_SCOPE])
    except DefaultCredentialsError:
        return Check(
            "credentials",
            "fail",
            f"no application default credentials: {login} or set GOOGLE_APPLICATION_CREDENTIALS "
            "to a key file.",
        )
    try:
        credentials.refresh(Request())  # type: ignore[no-untyped-call]
    except RefreshError as exc:
        return Check(
            "credentials",
            "fail",
            f"the application default credentials were refused ({brief(exc, 100)}): they are "
            f"expired or revoked; {login} again (or check GOOGLE_APPLICATION_CREDENTIALS).",
        )
    except Exception as exc:
        return Check(
            "credentials",
            "warn",
            f"cannot tell whether the credentials work: refreshing them failed "
            f"({brief(exc, 100)}): {fix_for(exc)}",
        )
    # A GCE or Cloud Run account names itself "default" until refreshed: read it after.
    email = getattr(credentials, "service_account_email", None)
    if isinstance(email, str) and "@" in email:
        return Check("credentials", "ok", f"service account {email}")
    if isinstance(credentials, google.oauth2.credentials.Credentials):
        account = getattr(credentials, "account", "") or ""
        who = f" of {account}" if "@" in account else ""
        return Check("credentials", "ok", f"user credentials (ADC){who}")
    return Check("credentials", "ok", f"{type(credentials).__name__} credentials (ADC)")


def check_vertex(cloud: Cloud) -> tuple[Check, str | None]:
    """One list call, page size 1: Vertex answers and the caller may list jobs.

    Also returns the listed job's name, if any: it carries the project number.
    """
    from google.api_core import exceptions as api_exceptions

    try:
        listed = cloud.vertex.list_one()
    except (api_exceptions.PermissionDenied, api_exceptions.Forbidden):  # gRPC and REST
        return Check(
            "vertex",
            "fail",
            f"listing jobs is not allowed: grant the caller {AIPLATFORM_ROLE} on project "
            f"{cloud.project}.",
        ), None
    except Exception as exc:
        return Check("vertex", "fail", f"listing jobs failed ({brief(exc)}): {fix_for(exc)}"), None
    return Check("vertex", "ok", f"listing jobs in {cloud.vertex.parent} is allowed"), listed


def check_bucket(cloud: Cloud, bucket: str) -> Check:
    """The bucket exists; ``warn`` when its metadata is refused (object roles only)."""
    from google.api_core import exceptions as api_exceptions

    try:
        found = cloud.staging.bucket_exists()
    except api_exceptions.Forbidden:
        # Object roles (roles/storage.objectAdmin, the one docs/operations.md grants) carry no
        # storage.buckets.get: the lookup is refused though every object call works.
        return Check(
            "bucket",
            "warn",
            f"cannot see gs://{bucket}'s metadata (no storage.buckets.get): vertexbatch does not "
            "need it, but doctor cannot check its location; bucket-objects checks access.",
        )
    except Exception as exc:
        return Check("bucket", "fail", f"GCS did not answer ({brief(exc)}): {fix_for(exc)}")
    if not found:
        return Check(
            "bucket",
            "fail",
            f"bucket {bucket} does not exist: {create_bucket_fix(bucket)}.",
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
    if isinstance(exc, BucketNotFoundError) or (
        isinstance(exc, api_exceptions.NotFound) and step == "create"
    ):
        return f"bucket {bucket} does not exist: {create_bucket_fix(bucket)}."
    return f"{step} failed ({brief(exc)}): {fix_for(exc)}"


def _model_form(model: str) -> tuple[Provider, str | None]:
    """The model's publisher, and why its id is not well formed (None: it is)."""
    row = of_model(model)
    publisher: Provider = "anthropic" if row is None else row.provider
    if row is None and "/" not in model:
        return publisher, (
            f"model {model!r} is neither a Claude nor a Gemini model id: pass a bare Vertex id "
            "such as claude-sonnet-4-5."
        )
    try:
        check_model_id(model, publisher)
    except InvalidRequestError as exc:
        return publisher, f"{exc}."
    return publisher, None


def check_model(
    config: Config | None,
    models: Sequence[str],
    garden: aiplatform_v1.ModelGardenServiceClient | None = None,
    *,
    timeout: float = LOOKUP_TIMEOUT,
) -> Check:
    """Each model is well formed and exists for its publisher (``get_publisher_model``).

    Every model given is checked, and the line names each one that is not ``ok``: ``fail`` when
    one is malformed or not found, else ``warn`` when a lookup was refused or got no answer
    (the fix is the role, or the network), else ``ok``.

    The lookup names the model without its ``@version`` (GetPublisherModel documents the name
    ``publishers/P/models/M``, no version), so ``ok`` says the version was not checked: Vertex
    checks it at submit. Nor does it name a location: Model Garden answers per publisher.
    Without ``garden`` (no configuration, no credentials) only the form is checked.
    """
    from google.api_core import exceptions as api_exceptions

    found: list[str] = []
    bad: list[str] = []  # malformed or not found: fail
    refused: list[str] = []  # Model Garden answered with another error: cannot tell
    silent: list[str] = []  # no answer at all: the network, not a role
    for model in models:
        publisher, malformed = _model_form(model)
        if malformed is not None:
            bad.append(malformed)
            continue
        if garden is None or config is None:
            continue
        bare = model.partition("@")[0]
        try:
            garden.get_publisher_model(
                name=f"publishers/{publisher}/models/{bare}", retry=None, timeout=timeout
            )
        except api_exceptions.NotFound:
            bad.append(
                f"model {bare} is not found for publisher {publisher} in Model Garden: "
                "check the id there, enable the model, or pass another --model."
            )
            continue
        except Exception as exc:
            why = unreachable(exc)
            if why is None:
                refused.append(f"{bare} ({brief(exc, 80)})")
            else:
                silent.append(f"{bare} ({why})")
            continue
        version = model.partition("@")[2]
        found.append(
            f"{bare} exists for publisher {publisher}"
            + (f" (version {version} not checked)" if version else "")
        )
    unsure = []
    if silent:
        unsure.append(
            f"Model Garden did not answer for {', '.join(silent)}: {NETWORK_FIX.rstrip('.')}."
        )
    if refused:
        unsure.append(
            f"cannot tell whether {', '.join(refused)} exists: grant the caller "
            f"{AIPLATFORM_ROLE}, or check the model in Model Garden."
        )
    tail = "; ".join(found)
    if bad:
        return Check("model", "fail", " ".join([*bad, *unsure, *([tail] if tail else [])]))
    if garden is None or config is None:
        return Check("model", "skip", f"{', '.join(models)}: well formed; lookup needs the above")
    if unsure:
        return Check("model", "warn", " ".join([*unsure, *([tail] if tail else [])]))
    return Check("model", "ok", tail)


def fix_for(exc: BaseException) -> str:
    """The fix for an error a check did not expect, in one sentence."""
    if unreachable(exc) is not None:
        return NETWORK_FIX
    return "check the network and the project, then run doctor again with -v."
