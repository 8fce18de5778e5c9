"""Configuration: the one way a ``Client`` is built from the environment and the command's flags.

``Client.from_env`` and the ``vertexbatch`` command read the same settings, each from its
environment variable or (the command only) a flag, which wins::

    setting           flag                 variable
    project           --project            GOOGLE_CLOUD_PROJECT
    location          --location           GOOGLE_CLOUD_LOCATION
    bucket            --bucket             VERTEXBATCH_BUCKET
    prefix            --prefix             VERTEXBATCH_PREFIX            (default "vertexbatch")
    vertex_endpoint   --vertex-endpoint    VERTEXBATCH_VERTEX_ENDPOINT   (the local stack: both
    storage_endpoint  --storage-endpoint   STORAGE_EMULATOR_HOST          endpoints, or neither)

With both endpoints, ``VERTEXBATCH_BIGQUERY_STORAGE_HOST`` (a plaintext gRPC ``host:port``, as
``LocalStack.environment`` writes it) is where a BigQuery sink's table is read.

``client_keywords`` turns them into the keywords a ``Client`` is built with (``Client.from_env``,
the command, ``vertexbatch doctor``): of ``Client(...)``, on Google Cloud with application default
credentials, or, when both endpoints are set, of ``Client.for_endpoints``, on those endpoints with
anonymous credentials. When both endpoints are on this machine (the local stack), a refused
connection is not retried: it fails at once, saying to start ``vertexbatch emulator``.
``LocalStack.environment`` writes the same variables, and ``LocalStack.client`` uses the same
default prefix, so what one makes the others find.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ._errors import InvalidRequestError
from ._rules import is_loopback

if TYPE_CHECKING:
    from ._retry import RetryPolicy

__all__ = [
    "BIGQUERY_STORAGE_HOST",
    "BUCKET",
    "DEFAULT_PREFIX",
    "ENDPOINTS",
    "ENV_REQUIRED",
    "LOCATION",
    "PREFIX",
    "PROJECT",
    "REQUIRED",
    "SETTINGS",
    "STORAGE_ENDPOINT",
    "VERTEX_ENDPOINT",
    "Config",
    "Setting",
    "client_keywords",
    "local_retry",
    "read_config",
]

BIGQUERY_STORAGE_HOST = "VERTEXBATCH_BIGQUERY_STORAGE_HOST"
"""The local stack's Storage Read API endpoint (``host:port``, plaintext gRPC)."""
DEFAULT_PREFIX = "vertexbatch"
"""The folder in the bucket when none is given: each id gets ``vertexbatch/ID/``."""


@dataclass(frozen=True, slots=True)
class Setting:
    """One configuration value: its name (a ``Config`` field), its variable and its flag."""

    name: str
    variable: str
    flag: str


PROJECT = Setting("project", "GOOGLE_CLOUD_PROJECT", "--project")
LOCATION = Setting("location", "GOOGLE_CLOUD_LOCATION", "--location")
BUCKET = Setting("bucket", "VERTEXBATCH_BUCKET", "--bucket")
PREFIX = Setting("prefix", "VERTEXBATCH_PREFIX", "--prefix")
VERTEX_ENDPOINT = Setting("vertex_endpoint", "VERTEXBATCH_VERTEX_ENDPOINT", "--vertex-endpoint")
STORAGE_ENDPOINT = Setting("storage_endpoint", "STORAGE_EMULATOR_HOST", "--storage-endpoint")

SETTINGS = (PROJECT, LOCATION, BUCKET, PREFIX, VERTEX_ENDPOINT, STORAGE_ENDPOINT)
"""Every setting, in the order the command lists its flags."""
REQUIRED = (PROJECT, LOCATION, BUCKET)
ENDPOINTS = (VERTEX_ENDPOINT, STORAGE_ENDPOINT)
ENV_REQUIRED = tuple(setting.variable for setting in REQUIRED)
"""The variables ``Client.from_env`` cannot do without."""


@dataclass(frozen=True, slots=True)
class Config:
    """The settings of one client, checked: nothing required missing, both endpoints or none."""

    project: str
    location: str
    bucket: str
    prefix: str = DEFAULT_PREFIX
    vertex_endpoint: str | None = None
    storage_endpoint: str | None = None


def read_config(env: Mapping[str, str], flags: Mapping[str, str | None] | None = None) -> Config:
    """The settings ``flags`` (by setting name) and ``env`` give, a flag winning; pure.

    An empty value counts as unset. The messages name the variable, and the flag too when
    ``flags`` is given (the command passes them; ``Client.from_env`` does not).

    Raises:
        InvalidRequestError: a required setting is missing, only one endpoint is set, or an
            endpoint is not an ``http(s)://`` URL; ``field`` is the setting's variable.
    """
    given = flags or {}

    def value(setting: Setting) -> str | None:
        return given.get(setting.name) or env.get(setting.variable) or None

    command = flags is not None
    for setting in REQUIRED:
        if not value(setting):
            raise _missing(setting, command=command)
    endpoints = [value(setting) for setting in ENDPOINTS]
    if any(endpoints):
        for setting, endpoint in zip(ENDPOINTS, endpoints, strict=True):
            if not endpoint:
                raise _unpaired(setting, command=command)
            if not endpoint.startswith(("http://", "https://")):
                # Without a scheme the clients speak https, and the local stack answers a TLS
                # handshake with an error that names neither the setting nor the fix.
                named = f"{setting.flag} ({setting.variable})" if command else setting.variable
                raise InvalidRequestError(
                    f"{named} must be a URL such as http://127.0.0.1:PORT, got {endpoint!r}",
                    field=setting.variable,
                )
    project, location, bucket = (value(setting) or "" for setting in REQUIRED)
    return Config(
        project=project,
        location=location,
        bucket=bucket,
        prefix=value(PREFIX) or DEFAULT_PREFIX,
        vertex_endpoint=endpoints[0],
        storage_endpoint=endpoints[1],
    )


def client_keywords(
    env: Mapping[str, str],
    flags: Mapping[str, str | None] | None,
    retry: RetryPolicy | None,
) -> tuple[dict[str, Any], bool]:
    """The keywords of the client the environment and the command's ``flags`` name (by setting
    name, each winning over its variable), and whether they are ``Client.for_endpoints``'s (both
    endpoints set: anonymous credentials, a refused connection final when both are on this
    machine) or ``Client(...)``'s (Google Cloud, application default credentials).

    Raises:
        InvalidRequestError: the configuration is incomplete or wrong (see ``read_config``).
    """
    config = read_config(env, flags)
    given: dict[str, Any] = {
        "project": config.project,
        "location": config.location,
        "bucket": config.bucket,
        "prefix": config.prefix,
        "retry": retry,
    }
    if not (config.vertex_endpoint and config.storage_endpoint):
        return given, False
    if is_loopback(config.vertex_endpoint) and is_loopback(config.storage_endpoint):
        given["retry"] = local_retry(retry)
    given["vertex_endpoint"] = config.vertex_endpoint
    given["storage_endpoint"] = config.storage_endpoint
    given["bigquery_storage_endpoint"] = env.get(BIGQUERY_STORAGE_HOST) or None
    return given, True


def local_retry(retry: RetryPolicy | None) -> RetryPolicy:
    """``retry`` (default ``RetryPolicy()``) for a local stack: a refused connection is final.

    On this machine a refused connection means the stack is not running: retrying it would
    only delay the error (about a minute with the default policy) and its hint.
    """
    from ._retry import RetryPolicy  # not at the top: reading configuration needs none of it

    return replace(retry or RetryPolicy(), retry_refused=False)


def _missing(setting: Setting, *, command: bool) -> InvalidRequestError:
    if command:
        message = f"missing {setting.flag} (or set {setting.variable})"
    else:
        message = (
            f"environment variable {setting.variable} is not set: vertexbatch needs "
            f"{', '.join(ENV_REQUIRED)}"
        )
    return InvalidRequestError(message, field=setting.variable)


def _unpaired(setting: Setting, *, command: bool) -> InvalidRequestError:
    if command:
        message = (
            f"missing {setting.flag} (or set {setting.variable}): the local stack needs both "
            "endpoints"
        )
    else:
        message = (
            f"{' and '.join(s.variable for s in ENDPOINTS)} must be set together (both point at "
            "the local stack)"
        )
    return InvalidRequestError(message, field=setting.variable)
