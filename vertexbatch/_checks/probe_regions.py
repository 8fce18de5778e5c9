"""``vertexbatch probe --multi-region us``: whether a batch create succeeds on a multi-region.

Google serves ``us`` and ``eu`` at ``aiplatform.{us|eu}.rep.googleapis.com`` (``_hosts``) and
says nowhere we found whether batch jobs are accepted there (issue 40). This asks the user's own
project: for each location given and each provider, one job of one small row (the probe's
``answer`` row, ``_requests.lines`` as ``submit`` stages it) is created at that location's host;
a create that succeeds is cancelled at once (it has answered the question, and would bill for
nothing), one refused is reported with the service's code, status and message. The input lands
under ``gs://BUCKET/PREFIX/probe-regions-<stamp>/`` of the configured bucket.

The report (``vertexbatch_probe_regions``) holds, per location and provider: ``accepted``, the
job's name and state, what its cancel did, or the refusal. No request or response text: the
probe's own rows are the only content sent.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING, Any

from .._config import Config, local_retry, read_config
from .._errors import InvalidRequestError, shorten
from .._hosts import MULTI_REGIONS, vertex_base_url
from .._providers import by_command
from .._retry import RetryPolicy
from .doctor import on_local_stack
from .probe import PROBE_MODELS, error_status, rest_call
from .probe_shape import probe_rows
from .probe_stage import stage_parts

if TYPE_CHECKING:
    import requests

__all__ = ["REGIONS_REPORT_VERSION", "check_regions", "probe_regions"]

REGIONS_REPORT_VERSION = 1


def check_regions(locations: Sequence[str]) -> tuple[str, ...]:
    """The multi-regions to probe, each once, in the order given.

    Raises:
        InvalidRequestError: one is not a multi-region (``us``, ``eu``).
    """
    for location in locations:
        if location not in MULTI_REGIONS:
            raise InvalidRequestError(
                f"multi-region {location!r} is not one of {', '.join(MULTI_REGIONS)}: a region "
                "or 'global' is probed by setting --location",
                field="multi_region",
            )
    return tuple(dict.fromkeys(locations))


def _base(config: Config, location: str) -> str:
    """The Vertex base URL of ``location``: the stack's endpoint, else its host (``_hosts``)."""
    if on_local_stack(config):
        assert config.vertex_endpoint is not None
        return config.vertex_endpoint.rstrip("/")
    return vertex_base_url(location)


def _session(config: Config) -> requests.Session:
    if on_local_stack(config):
        import requests

        return requests.Session()
    import google.auth
    from google.auth.transport.requests import AuthorizedSession

    credentials, _ = google.auth.default(scopes=["https://www.googleapis.com/auth/cloud-platform"])
    return AuthorizedSession(credentials)  # type: ignore[no-untyped-call]


def probe_regions(
    env: Mapping[str, str],
    flags: Mapping[str, str | None] | None = None,
    *,
    locations: Sequence[str] = MULTI_REGIONS,
    models: Mapping[str, str] = PROBE_MODELS,
    progress: Callable[[str], None] = lambda line: None,
    retry: RetryPolicy | None = None,
) -> dict[str, Any]:
    """Create one tiny job per provider on each multi-region in ``locations``, cancel each one
    created, and return the report (a JSON-ready dict).

    Creates are never retried (a lost answer would make a second job); cancels go under
    ``retry`` (default ``RetryPolicy()``; at the local stack a refused connection is final).

    Raises:
        InvalidRequestError: the configuration is incomplete, or a location is no multi-region.
        google.api_core.exceptions.GoogleAPICallError: a cancel was refused (the job is named
            through ``progress`` first).
    """
    from google.api_core import exceptions as api_exceptions

    from .doctor_run import lookups

    wanted = check_regions(locations)
    config = read_config(env, flags if flags is not None else {})
    policy = retry or RetryPolicy()
    if on_local_stack(config):
        policy = local_retry(policy)
    gcs = lookups(config).gcs
    session = _session(config)
    stamp = datetime.now(UTC).strftime("%Y%m%dt%H%M%S") + "-" + secrets.token_hex(3)
    folder = "/".join(p for p in (config.prefix.strip("/"), f"probe-regions-{stamp}") if p)
    results: dict[str, dict[str, Any]] = {}
    for location in wanted:
        base = _base(config, location)
        parent = f"{base}/v1/projects/{config.project}/locations/{location}"
        results[location] = {}
        for name in models:
            where = f"{folder}/{location}/{name}"
            uris = stage_parts(gcs, config.bucket, where, [probe_rows(name, False)], "input")
            body = {
                "displayName": f"vertexbatch-probe-{stamp}-{location}-{name}",
                "model": by_command(name).publisher_path(models[name]),
                "inputConfig": {"instancesFormat": "jsonl", "gcsSource": {"uris": uris}},
                "outputConfig": {
                    "predictionsFormat": "jsonl",
                    "gcsDestination": {"outputUriPrefix": f"gs://{config.bucket}/{where}/out"},
                },
                "labels": {"vertexbatch_probe": stamp},
            }
            try:
                created = rest_call(session, "POST", f"{parent}/batchPredictionJobs", body)
            except api_exceptions.GoogleAPICallError as exc:
                results[location][name] = refused = _refused(exc, models[name])
                said = " ".join(str(v) for v in (refused["code"], refused["status"]) if v)
                progress(f"{location} {name}: create refused ({said})")
                continue
            entry = {
                "model": models[name],
                "accepted": True,
                "job": created.get("name"),
                "state": created.get("state"),
                "cancel": None,
            }
            results[location][name] = entry
            progress(f"{location} {name}: created {entry['job']} ({entry['state']}): cancelling")
            entry["cancel"] = _cancel(session, base, str(created["name"]), policy, progress)
    return {
        "vertexbatch_probe_regions": REGIONS_REPORT_VERSION,
        "configured_location": config.location,
        "local_stack": on_local_stack(config),
        "folder": f"gs://{config.bucket}/{folder}/",
        "locations": results,
    }


def _status(exc: Any) -> str:
    """The Google status of a refused call (``INVALID_ARGUMENT``), ``""`` if it gave none."""
    response = getattr(exc, "response", None)
    return (error_status(response) or "") if response is not None else ""


def _refused(exc: Any, model: str) -> dict[str, Any]:
    """A refused create as the report keeps it: its HTTP code, status and message (the
    service's words about the probe's own job; no user content was sent)."""
    return {
        "model": model,
        "accepted": False,
        "code": exc.code,
        "status": _status(exc),
        "message": shorten(str(exc.message), 300),
    }


def _cancel(
    session: requests.Session,
    base: str,
    name: str,
    policy: RetryPolicy,
    progress: Callable[[str], None],
) -> str:
    """Cancel a created job: ``requested``, or ``already ended``; a refusal is raised after
    naming the job (it must be cancelled by hand)."""
    from google.api_core import exceptions as api_exceptions

    cancel = partial(rest_call, session, "POST", f"{base}/v1/{name}:cancel", {})
    try:
        policy.call("cancel a probe job", cancel)
    except api_exceptions.FailedPrecondition:
        return "already ended"
    except Exception as exc:
        progress(f"cancelling {name} failed ({type(exc).__name__}): cancel it")
        raise
    return "requested"
